//! WHERE: its conditions put into the FROM clause's join block, its EXISTS and IN subqueries
//! asked of the rows as semi and anti joins; and the check that a condition is a boolean.

use arrow::datatypes::DataType;
use pondra_parser::ast;

use super::expr::{Context, bind_expr, type_name};
use super::scope::Scope;
use super::subqueries::{in_subquery, split_and};
use super::{Binder, arrays};
use crate::expr::{Expr, JoinKind};
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::{PlanError, Result, bind_err};

impl<'a> Binder<'a> {
    /// FROM and WHERE together: the join block with WHERE's conditions in it, then the
    /// subqueries WHERE asks of its rows.
    pub(super) fn bind_where(
        &self,
        relations: Vec<LogicalPlan>,
        mut predicates: Vec<Expr>,
        scope: &Scope,
        selection: Option<&ast::Expr>,
    ) -> Result<LogicalPlan> {
        let width = scope.columns.len();
        let mut filters: Vec<(LogicalPlan, SubqueryKind)> = Vec::new();
        self.correlated.borrow_mut().push(Vec::new());
        let bound = (|| {
            for conjunct in selection.map(split_and).unwrap_or_default() {
                match conjunct {
                    ast::Expr::Exists { subquery, negated } => {
                        let plan = self.bind_subquery(subquery, scope)?;
                        let join = if *negated {
                            JoinKind::Anti
                        } else {
                            JoinKind::Semi
                        };
                        filters.push((plan, SubqueryKind::Filter { join, probe: None }));
                    }
                    ast::Expr::In {
                        expr,
                        target: ast::InTarget::Subquery(subquery),
                        negated,
                        ..
                    } => {
                        let probe = self.bind_scalar(expr, scope, "WHERE")?;
                        let plan = self.bind_subquery(subquery, scope)?;
                        if *negated && plan.has_any_outer() || arrays::is_row_value(&probe) {
                            // No anti join keeps a correlated NOT IN's NULL semantics, nor a
                            // join on one key a row value's: it is a comparison with the
                            // subquery's values, row by row.
                            let predicate = self.bind_scalar(conjunct, scope, "WHERE")?;
                            predicates.extend(filter_predicate(predicate, "WHERE")?.conjuncts());
                            continue;
                        }
                        let (probe, plan) = in_subquery(probe, plan)?;
                        let join = if *negated {
                            JoinKind::NullAwareAnti
                        } else {
                            JoinKind::Semi
                        };
                        let probe = Some(probe);
                        filters.push((plan, SubqueryKind::Filter { join, probe }));
                    }
                    other => {
                        let predicate = self.bind_scalar(other, scope, "WHERE")?;
                        predicates.extend(filter_predicate(predicate, "WHERE")?.conjuncts());
                    }
                }
            }
            Ok::<_, PlanError>(())
        })();
        let correlated = self.correlated.borrow_mut().pop().unwrap_or_default();
        bound?;
        // Conditions on correlated subqueries' values wait until those values are joined in.
        let (late, early): (Vec<Expr>, Vec<Expr>) = predicates
            .into_iter()
            .partition(|p| p.column_indices().iter().any(|c| *c >= width));
        // EXISTS and IN filter first: the correlated subqueries' values are then computed for
        // the rows that remain (and only for their keys: `key_domain`).
        let filtered = add_subqueries(LogicalPlan::join_block(relations, early), filters);
        let mut plan = add_subqueries(filtered, correlated);
        if let Some(predicate) = Expr::and_all(late) {
            plan = LogicalPlan::Filter {
                input: Box::new(plan),
                predicate,
            };
        }
        if plan.schema().fields().len() > width {
            plan = plan.first_columns(width);
        }
        Ok(plan)
    }

    /// Binds an expression over a scope, outside any aggregation.
    pub(super) fn bind_scalar(
        &self,
        expr: &ast::Expr,
        scope: &Scope,
        clause: &str,
    ) -> Result<Expr> {
        bind_expr(
            expr,
            &mut Context::Plain {
                scope,
                clause,
                binder: Some(self),
            },
        )
    }
}

/// `plan` with `subqueries` asked of its rows, in order (each a filter, or a column after the
/// plan's own).
pub(super) fn add_subqueries(
    plan: LogicalPlan,
    subqueries: Vec<(LogicalPlan, SubqueryKind)>,
) -> LogicalPlan {
    subqueries
        .into_iter()
        .fold(plan, |plan, (subquery, kind)| plan.subquery(subquery, kind))
}

/// A predicate checked to be boolean (a NULL literal counts as an unknown boolean).
pub(super) fn filter_predicate(predicate: Expr, clause: &str) -> Result<Expr> {
    match predicate.data_type() {
        DataType::Boolean => Ok(predicate),
        DataType::Null => Ok(predicate.cast(&DataType::Boolean)),
        other => Err(bind_err!(
            "argument of {clause} must be BOOLEAN, not {}",
            type_name(&other)
        )),
    }
}

pub(super) fn filter(plan: LogicalPlan, predicate: Expr, clause: &str) -> Result<LogicalPlan> {
    let predicate = match predicate.data_type() {
        DataType::Boolean => predicate,
        DataType::Null => predicate.cast(&DataType::Boolean),
        other => {
            return Err(bind_err!(
                "argument of {clause} must be BOOLEAN, not {}",
                type_name(&other)
            ));
        }
    };
    Ok(LogicalPlan::Filter {
        input: Box::new(plan),
        predicate,
    })
}
