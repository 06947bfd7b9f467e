//! Decorrelation: a subquery that reads columns of its enclosing query becomes a join.
//!
//! The predicates that mention outer columns are pulled up out of the subquery's plan (through
//! filters, projections, inner joins and aggregates, which gain the correlated columns as group
//! keys), leaving a plan that runs once for all outer rows. The pulled predicates become the
//! join's keys and filter. A subquery is never run per outer row.

use crate::expr::{AggregateFunction, BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::{Result, unsupported};

/// How a subquery is used by the query around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubqueryUse {
    /// `EXISTS` / `IN` and their negations: a semi or anti join.
    Filter,
    /// A scalar subquery: a left join that adds its value.
    Scalar,
}

/// The subquery without outer references, and the predicates pulled out of it (over its output
/// columns and the outer query's columns).
pub fn pull_up(plan: LogicalPlan, usage: SubqueryUse) -> Result<(LogicalPlan, Vec<Expr>)> {
    match plan {
        LogicalPlan::Scan { .. } | LogicalPlan::ParquetScan { .. } | LogicalPlan::Input { .. } => {
            Ok((plan, vec![]))
        }
        LogicalPlan::Values { ref rows, .. } => {
            if rows.iter().flatten().any(Expr::has_outer) {
                return Err(unsupported!("outer columns in VALUES"));
            }
            Ok((plan, vec![]))
        }
        LogicalPlan::Window { .. } | LogicalPlan::Union { .. } => {
            if plan.has_outer() {
                return Err(unsupported!("set operations in a correlated subquery"));
            }
            Ok((plan, vec![]))
        }
        LogicalPlan::Filter { input, predicate } => {
            let (input, mut pulled) = pull_up(*input, usage)?;
            let (outer, local): (Vec<Expr>, Vec<Expr>) =
                predicate.conjuncts().into_iter().partition(Expr::has_outer);
            pulled.extend(outer);
            let plan = match Expr::and_all(local) {
                Some(predicate) => LogicalPlan::Filter {
                    input: Box::new(input),
                    predicate,
                },
                None => input,
            };
            Ok((plan, pulled))
        }
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => {
            if exprs.iter().any(Expr::has_outer) {
                return Err(unsupported!("outer columns in a subquery's select list"));
            }
            let (input, pulled) = pull_up(*input, usage)?;
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            if pulled.is_empty() {
                return Ok((input.project(exprs, names), pulled));
            }
            let (exprs, names, pulled) = expose_columns(&input, exprs, names, pulled);
            Ok((input.project(exprs, names), pulled))
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            ..
        } => {
            if filter.as_ref().is_some_and(Expr::has_outer)
                || on.iter().any(|(l, r)| l.has_outer() || r.has_outer())
            {
                return Err(unsupported!(
                    "outer columns in a join condition of a subquery"
                ));
            }
            let left_width = left.schema().fields().len();
            let (left, mut pulled) = pull_up(*left, usage)?;
            let (right, right_pulled) = pull_up(*right, usage)?;
            if !right_pulled.is_empty() && kind != JoinKind::Inner {
                return Err(unsupported!(
                    "outer columns under an outer join in a subquery"
                ));
            }
            if !pulled.is_empty() && !matches!(kind, JoinKind::Inner | JoinKind::Left) {
                return Err(unsupported!("outer columns under this join in a subquery"));
            }
            pulled.extend(
                right_pulled
                    .into_iter()
                    .map(|p| p.remap_columns(&|c| c + left_width)),
            );
            Ok((LogicalPlan::join(left, right, kind, on, filter), pulled))
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            let (input, pulled) = pull_up(*input, usage)?;
            if pulled.is_empty() {
                return Ok((
                    LogicalPlan::Aggregate {
                        input: Box::new(input),
                        group,
                        aggregates,
                        schema,
                    },
                    pulled,
                ));
            }
            if usage == SubqueryUse::Scalar
                && aggregates.iter().any(|a| {
                    matches!(
                        a.func,
                        AggregateFunction::Count
                            | AggregateFunction::CountStar
                            | AggregateFunction::CountDistinct
                    )
                })
            {
                return Err(unsupported!("correlated scalar subqueries that count"));
            }
            aggregate_with_keys(input, group, aggregates, pulled)
        }
        LogicalPlan::Sort { input, keys } => {
            let (input, pulled) = pull_up(*input, usage)?;
            if !pulled.is_empty() {
                return Err(unsupported!("ORDER BY in a correlated subquery"));
            }
            Ok((
                LogicalPlan::Sort {
                    input: Box::new(input),
                    keys,
                },
                pulled,
            ))
        }
        LogicalPlan::Limit { input, skip, fetch } => {
            let (input, pulled) = pull_up(*input, usage)?;
            if !pulled.is_empty() {
                return Err(unsupported!("LIMIT in a correlated subquery"));
            }
            Ok((
                LogicalPlan::Limit {
                    input: Box::new(input),
                    skip,
                    fetch,
                },
                pulled,
            ))
        }
    }
}

/// Adds the input columns that pulled predicates read to a projection, and points the
/// predicates at the projection's output.
fn expose_columns(
    input: &LogicalPlan,
    mut exprs: Vec<Expr>,
    mut names: Vec<String>,
    pulled: Vec<Expr>,
) -> (Vec<Expr>, Vec<String>, Vec<Expr>) {
    let schema = input.schema();
    let mut wanted: Vec<usize> = pulled.iter().flat_map(Expr::column_indices).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut positions = std::collections::HashMap::new();
    for column in wanted {
        let field = schema.field(column);
        let as_expr = Expr::column(column, field.name(), field.data_type().clone());
        let position = match exprs.iter().position(|e| *e == as_expr) {
            Some(p) => p,
            None => {
                exprs.push(as_expr);
                names.push(format!("corr_{column}"));
                exprs.len() - 1
            }
        };
        positions.insert(column, position);
    }
    let pulled = pulled
        .into_iter()
        .map(|p| p.remap_columns(&|c| positions[&c]))
        .collect();
    (exprs, names, pulled)
}

/// An aggregate whose pulled predicates are `outer = inner`: the inner sides become extra group
/// keys, exposed after the original outputs, and the predicates compare against them.
fn aggregate_with_keys(
    input: LogicalPlan,
    mut group: Vec<Expr>,
    aggregates: Vec<crate::expr::AggregateCall>,
    pulled: Vec<Expr>,
) -> Result<(LogicalPlan, Vec<Expr>)> {
    let original_groups = group.len();
    let mut rewritten = Vec::new();
    let mut key_positions = Vec::new();
    for predicate in pulled {
        let Some((outer, inner)) = split_equality(&predicate) else {
            return Err(unsupported!(
                "a correlated condition other than equality under an aggregate"
            ));
        };
        let position = match group.iter().position(|g| *g == inner) {
            Some(p) => p,
            None => {
                group.push(inner);
                group.len() - 1
            }
        };
        key_positions.push(position);
        rewritten.push(outer);
    }
    let mut fields: Vec<arrow::datatypes::Field> = group
        .iter()
        .enumerate()
        .map(|(i, g)| arrow::datatypes::Field::new(format!("g{i}"), g.data_type(), true))
        .collect();
    fields.extend(
        aggregates
            .iter()
            .enumerate()
            .map(|(i, a)| arrow::datatypes::Field::new(format!("a{i}"), a.data_type.clone(), true)),
    );
    let groups = group.len();
    let aggregate = LogicalPlan::Aggregate {
        input: Box::new(input),
        group,
        aggregates: aggregates.clone(),
        schema: std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
    };
    // Back to the original layout (groups, aggregates), then the correlation keys.
    let schema = aggregate.schema();
    let column = |i: usize| {
        Expr::column(
            i,
            schema.field(i).name(),
            schema.field(i).data_type().clone(),
        )
    };
    let mut exprs: Vec<Expr> = (0..original_groups).map(column).collect();
    exprs.extend((0..aggregates.len()).map(|i| column(groups + i)));
    let mut predicates = Vec::new();
    for (outer, position) in rewritten.into_iter().zip(key_positions) {
        let inner = if position < original_groups {
            column(position)
        } else {
            exprs.push(column(position));
            Expr::column(
                exprs.len() - 1,
                "key",
                schema.field(position).data_type().clone(),
            )
        };
        predicates.push(Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(outer),
            right: Box::new(inner),
        });
    }
    let names = (0..exprs.len()).map(|i| format!("c{i}")).collect();
    Ok((aggregate.project(exprs, names), predicates))
}

/// `(outer side, inner side)` of an equality between outer columns and subquery columns.
fn split_equality(predicate: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
    } = predicate
    else {
        return None;
    };
    let only_outer = |e: &Expr| e.has_outer() && e.column_indices().is_empty();
    let only_inner = |e: &Expr| !e.has_outer() && !e.column_indices().is_empty();
    if only_outer(left) && only_inner(right) {
        Some(((**left).clone(), (**right).clone()))
    } else if only_outer(right) && only_inner(left) {
        Some(((**right).clone(), (**left).clone()))
    } else {
        None
    }
}

/// Puts pulled predicates in the join's terms (outer columns first, then the subquery's) and
/// splits them into equal keys and a residual filter.
pub fn join_condition(outer_width: usize, pulled: Vec<Expr>) -> (Vec<(Expr, Expr)>, Option<Expr>) {
    let mut keys = Vec::new();
    let mut rest = Vec::new();
    for predicate in pulled {
        if let Some((outer, inner)) = split_equality(&predicate) {
            keys.push((to_left(&outer), inner));
            continue;
        }
        rest.push(to_joined(&predicate, outer_width));
    }
    (keys, Expr::and_all(rest))
}

/// An expression over outer columns only, as one over the join's left input.
fn to_left(expr: &Expr) -> Expr {
    match expr {
        Expr::OuterColumn {
            index,
            name,
            data_type,
        } => Expr::column(*index, name.clone(), data_type.clone()),
        other => other.map_children(&mut |e| to_left(e)),
    }
}

/// An expression over outer and subquery columns, as one over the joined row.
fn to_joined(expr: &Expr, outer_width: usize) -> Expr {
    match expr {
        Expr::OuterColumn {
            index,
            name,
            data_type,
        } => Expr::column(*index, name.clone(), data_type.clone()),
        Expr::Column {
            index,
            name,
            data_type,
        } => Expr::column(index + outer_width, name.clone(), data_type.clone()),
        other => other.map_children(&mut |e| to_joined(e, outer_width)),
    }
}
