//! Subqueries inside expressions: a scalar subquery as a value, `EXISTS` and `IN (subquery)` as
//! a mark column, and whether an expression holds a subquery at all.

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator};

use super::aggregates::Aggregation;
use super::function_calls::function_args;
use super::{Context, GROUPED_SUBQUERY_BASE, bind_expr};
use crate::binder::Binder;
use crate::binder::scope::Scope;
use crate::expr::Expr;
use crate::logical::SubqueryKind;
use crate::{Result, bind_err, unsupported};

/// True when `expr` holds a subquery anywhere.
pub fn contains_subquery(expr: &ast::Expr) -> bool {
    use ast::Expr as E;
    match expr {
        E::Subquery(_) | E::Exists { .. } => true,
        E::In {
            target: ast::InTarget::Subquery(_),
            ..
        } => true,
        E::In {
            expr,
            target: ast::InTarget::List(list),
            ..
        } => contains_subquery(expr) || list.iter().any(contains_subquery),
        E::BinaryOp { left, right, .. }
        | E::IsDistinctFrom(left, right)
        | E::IsNotDistinctFrom(left, right) => contains_subquery(left) || contains_subquery(right),
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::Cast { expr, .. } => contains_subquery(expr),
        E::Between {
            expr, low, high, ..
        } => contains_subquery(expr) || contains_subquery(low) || contains_subquery(high),
        E::Function(f) => {
            matches!(f.args, ast::FunctionArguments::Subquery(_))
                || function_args(f).iter().any(|a| contains_subquery(a))
        }
        E::AnyOp { left, right, .. } | E::AllOp { left, right, .. } => {
            contains_subquery(left) || contains_subquery(right)
        }
        E::Array(array) => array.elem.iter().any(contains_subquery),
        E::CompoundFieldAccess { root, .. } => contains_subquery(root),
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_subquery)
                || conditions
                    .iter()
                    .any(|c| contains_subquery(&c.condition) || contains_subquery(&c.result))
                || else_result.as_deref().is_some_and(contains_subquery)
        }
        _ => false,
    }
}

impl Aggregation {
    /// The aggregation's output as an enclosing scope: grouped plain columns keep their names,
    /// so a subquery can name them; nothing else can be named.
    fn output_scope(&self) -> Scope {
        let columns = self
            .group
            .iter()
            .map(|g| match g {
                Expr::Column { index, .. } => self.input.columns[*index].clone(),
                other => crate::binder::scope::ScopeColumn {
                    qualifier: None,
                    name: String::new(),
                    data_type: other.data_type(),
                    hidden: false,
                    merged: false,
                },
            })
            .collect();
        let ungrouped = (0..self.input.columns.len())
            .filter(|i| {
                !self
                    .group
                    .iter()
                    .any(|g| matches!(g, Expr::Column { index, .. } if index == i))
            })
            .map(|i| self.input.columns[i].clone())
            .collect();
        Scope { columns, ungrouped }
    }
}

/// Where the subqueries of `ctx` bind: the scope around them, the clause, the binder, and the
/// column number of the first subquery value.
fn subquery_place<'c>(ctx: &'c Context<'_>) -> Option<(Scope, &'c str, &'c Binder<'c>, usize)> {
    match ctx {
        Context::Plain {
            scope,
            clause,
            binder: Some(binder),
        } => Some(((*scope).clone(), *clause, *binder, scope.columns.len())),
        Context::Aggregated(agg, Some(binder)) => {
            Some((agg.output_scope(), "SELECT", *binder, GROUPED_SUBQUERY_BASE))
        }
        _ => None,
    }
}

/// A subquery used as a value. An uncorrelated one is computed once before the query runs; a
/// correlated one (in WHERE) becomes a join, and its value a column after the scope's.
pub(crate) fn bind_scalar_subquery(query: &ast::Query, ctx: &mut Context<'_>) -> Result<Expr> {
    scalar_subquery_of(query, ctx, Ok)
}

/// A subquery as a value: `shape` makes its bound plan into one of a single row and column.
pub(crate) fn scalar_subquery_of(
    query: &ast::Query,
    ctx: &mut Context<'_>,
    shape: impl FnOnce(crate::logical::LogicalPlan) -> Result<crate::logical::LogicalPlan>,
) -> Result<Expr> {
    let Some((scope, clause, binder, base)) = subquery_place(ctx) else {
        return Err(unsupported!("a subquery here"));
    };
    let plan = shape(binder.bind_subquery(query, &scope)?)?;
    if !plan.has_any_outer() {
        return scalar_value(plan);
    }
    if clause != "WHERE" && clause != "SELECT" {
        return Err(unsupported!("correlated subqueries in {clause}"));
    }
    let data_type = single_column(&plan)?;
    let index = binder.add_pending(plan, SubqueryKind::Scalar)?;
    Ok(Expr::column(base + index, "subquery", data_type))
}

/// `EXISTS (...)` or `probe IN (...)` inside an expression: a mark join adds whether each row
/// matches as a column after the scope's.
pub(crate) fn bind_mark(
    query: &ast::Query,
    probe: Option<&ast::Expr>,
    negated: bool,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let probe = probe.map(|p| bind_expr(p, ctx)).transpose()?;
    let Some((scope, clause, binder, base)) = subquery_place(ctx) else {
        return Err(unsupported!("EXISTS and IN (subquery) here"));
    };
    if clause != "WHERE" && clause != "SELECT" {
        return Err(unsupported!("EXISTS and IN (subquery) in {clause}"));
    }
    let plan = binder.bind_subquery(query, &scope)?;
    // A correlated NOT IN, or IN as a value, has no join that keeps its NULL semantics here:
    // it compares with the subquery's values gathered for each row instead.
    // A row value IN a subquery of as many columns compares rows the same way.
    let row_probe = probe
        .as_ref()
        .is_some_and(crate::binder::arrays::is_row_value);
    if let Some(probe) = &probe
        && (plan.has_any_outer() && (negated || clause == "SELECT") || row_probe)
    {
        let (op, all) = match negated {
            true => (BinaryOperator::NotEq, true),
            false => (BinaryOperator::Eq, false),
        };
        return crate::binder::arrays::quantified_subquery(probe.clone(), &op, all, query, ctx);
    }
    let (probe, plan) = match probe {
        Some(probe) => {
            let (probe, plan) = crate::binder::subqueries::in_subquery(probe, plan)?;
            (Some(probe), plan)
        }
        None => (None, plan),
    };
    let index = binder.add_pending(plan, SubqueryKind::Mark { probe })?;
    let mark = Expr::column(base + index, "mark", DataType::Boolean);
    Ok(if negated {
        Expr::Not(Box::new(mark))
    } else {
        mark
    })
}

pub(crate) fn single_column(plan: &crate::logical::LogicalPlan) -> Result<DataType> {
    let schema = plan.schema();
    if schema.fields().len() != 1 {
        return Err(bind_err!(
            "a subquery used as a value must return one column, not {}",
            schema.fields().len()
        ));
    }
    Ok(schema.field(0).data_type().clone())
}

pub(super) fn scalar_value(plan: crate::logical::LogicalPlan) -> Result<Expr> {
    single_column(&plan)?;
    Ok(Expr::ScalarSubquery(crate::expr::Subquery::new(plan)))
}
