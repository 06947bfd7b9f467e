//! A correlated scalar subquery correlated by equality becomes an aggregate grouped by its
//! correlation keys, left-joined to the outer rows. The aggregate computes every group, though
//! the join looks up only the keys outer rows hold. When those keys come from a filtered table
//! (or one a semi join filters), far fewer than the groups, the aggregate's input is first
//! semi-joined to that table's keys: a magic set. TPC-H q2, q17 and q20 then aggregate the rows
//! of a few thousand parts, not of all of them.

use pondra_catalog::Snapshot;

use crate::cardinality::estimate;
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::optimizer::semi_pushdown::push_down_semi_join;

/// The restriction pays when the keys are this many times fewer than the groups.
const MARGIN: f64 = 4.0;

/// `subquery` (the decorrelated aggregate, to be joined to `outer` on `keys`: an expression
/// over `outer`, one over `subquery`) with its aggregate's input restricted to the keys of the
/// outer rows, where that is estimated to pay.
pub fn restrict_to_outer_keys(
    outer: &LogicalPlan,
    subquery: LogicalPlan,
    keys: &[(Expr, Expr)],
    snapshot: &Snapshot,
) -> LogicalPlan {
    let groups = estimate(&subquery, snapshot).rows;
    let best = keys
        .iter()
        .filter_map(|(outer_key, inner_key)| {
            let Expr::Column { index, .. } = outer_key else {
                return None;
            };
            let Expr::Column { index: inner, .. } = inner_key else {
                return None;
            };
            let (domain, column) = narrowest_domain(outer, *index, snapshot)?;
            let rows = estimate(&domain, snapshot).rows;
            Some((rows, domain, column, *inner))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((rows, domain, column, inner)) if rows * MARGIN < groups => {
            restrict(subquery, inner, domain, column, snapshot)
        }
        _ => subquery,
    }
}

/// The smallest plan found under `plan` whose column `column` holds every value `plan`'s
/// column `column` does: a filtered table, or the keys a semi join keeps. `None` when the
/// column comes from an unfiltered table or a computed value.
fn narrowest_domain(
    plan: &LogicalPlan,
    column: usize,
    snapshot: &Snapshot,
) -> Option<(LogicalPlan, usize)> {
    let mut candidates = Vec::new();
    domains(plan, column, &mut candidates);
    candidates
        .into_iter()
        .map(|(domain, column)| (estimate(&domain, snapshot).rows, domain, column))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, domain, column)| (domain, column))
}

/// Collects the plans whose column holds every value of `plan`'s column `column`, and that
/// filter something (a superset without a filter is no restriction).
fn domains(plan: &LogicalPlan, column: usize, out: &mut Vec<(LogicalPlan, usize)>) {
    match plan {
        LogicalPlan::Filter { input, .. } => {
            if is_table(input) {
                out.push((plan.clone(), column));
            } else {
                domains(input, column, out);
            }
        }
        LogicalPlan::Project { input, exprs, .. } => {
            if let Some(Expr::Column { index, .. }) = exprs.get(column) {
                domains(input, *index, out);
            }
        }
        LogicalPlan::Sort { input, .. } | LogicalPlan::Limit { input, .. } => {
            domains(input, column, out);
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            ..
        } => {
            let left_width = left.schema().fields().len();
            match kind {
                JoinKind::RightSemi | JoinKind::RightAnti => {
                    // A right semi join keeps only the right keys the left side has.
                    if *kind == JoinKind::RightSemi {
                        for (l, r) in column_keys(on) {
                            if r == column {
                                domains(left, l, out);
                            }
                        }
                    }
                    domains(right, column, out);
                }
                _ if column < left_width => {
                    // A semi (or inner) join keeps only the left keys the right side has.
                    if matches!(kind, JoinKind::Semi | JoinKind::Inner) {
                        for (l, r) in column_keys(on) {
                            if l == column {
                                domains(right, r, out);
                            }
                        }
                    }
                    domains(left, column, out);
                }
                JoinKind::Inner | JoinKind::Left | JoinKind::Full | JoinKind::Right => {
                    domains(right, column - left_width, out);
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// The join keys that are plain columns on both sides, as (left column, right column).
fn column_keys(on: &[(Expr, Expr)]) -> impl Iterator<Item = (usize, usize)> + '_ {
    on.iter().filter_map(|key| match key {
        (Expr::Column { index: l, .. }, Expr::Column { index: r, .. }) => Some((*l, *r)),
        _ => None,
    })
}

/// A table read whole, with at most some of its columns projected.
pub(crate) fn is_table(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Scan { .. } | LogicalPlan::ParquetScan { .. } => true,
        LogicalPlan::Project { input, exprs, .. } => {
            exprs.iter().all(|e| matches!(e, Expr::Column { .. })) && is_table(input)
        }
        _ => false,
    }
}

/// The subquery with the input of its aggregate semi-joined to `domain`'s column `column` on
/// the group key its output column `inner` is; unchanged if `inner` is not a group key.
fn restrict(
    subquery: LogicalPlan,
    inner: usize,
    domain: LogicalPlan,
    column: usize,
    snapshot: &Snapshot,
) -> LogicalPlan {
    match subquery {
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => match exprs.get(inner) {
            Some(Expr::Column { index, .. }) => LogicalPlan::Project {
                input: Box::new(restrict(*input, *index, domain, column, snapshot)),
                exprs,
                schema,
            },
            _ => LogicalPlan::Project {
                input,
                exprs,
                schema,
            },
        },
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } if inner < group.len() => {
            let key = group[inner].clone();
            let domain_schema = domain.schema();
            let field = domain_schema.field(column);
            if key.data_type() != *field.data_type() {
                return LogicalPlan::Aggregate {
                    input,
                    group,
                    aggregates,
                    schema,
                };
            }
            let value = Expr::column(column, field.name(), field.data_type().clone());
            let keys = domain.project(vec![value], vec![field.name().clone()]);
            let on = vec![(
                key,
                Expr::column(0, field.name(), field.data_type().clone()),
            )];
            let restricted = LogicalPlan::join(*input, keys, JoinKind::Semi, on, None);
            LogicalPlan::Aggregate {
                input: Box::new(push_down_semi_join(restricted, snapshot)),
                group,
                aggregates,
                schema,
            }
        }
        other => other,
    }
}
