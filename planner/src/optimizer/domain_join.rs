//! LATERAL joins, decorrelated over the domain of their outer columns (ADR 0070).
//!
//! A lateral subquery may read the outer row anywhere: in its select list, its aggregates'
//! arguments, under a LIMIT or an `unnest`. Rather than pull predicates out of it (`pull_up`),
//! the subquery is rewritten to run once for every distinct combination of the outer columns
//! it reads (the domain): every node gains the domain's columns in front of its own and reads
//! them where it read outer columns. The outer rows are then joined to its rows on the domain
//! columns.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::expr::{
    AggregateCall, AggregateFunction, BinaryOp, Expr, FrameBound, JoinKind, ScalarFunction,
    SortKey, WindowExpr, WindowFunction,
};
use crate::logical::LogicalPlan;
use crate::optimizer::pull_up::null_safe_key;
use crate::scalar::ScalarValue;
use crate::tree::PlanNode;
use crate::tree::TreeNode;
use crate::{Result, unsupported};

/// `input` joined to `subquery` run for each of its rows, under `on` (over the input's
/// columns, then the subquery's). Output: the input's columns, then the subquery's (but for
/// semi and anti joins). Lateral joins are inner or left; a scalar subquery that `pull_up`
/// cannot decorrelate is a `Single` join this way, and EXISTS or IN a semi or anti join.
pub fn join_over_domain(
    input: LogicalPlan,
    subquery: LogicalPlan,
    join: JoinKind,
    on: Option<Expr>,
) -> Result<LogicalPlan> {
    assert!(matches!(
        join,
        JoinKind::Inner | JoinKind::Left | JoinKind::Single | JoinKind::Semi | JoinKind::Anti
    ));
    let width = input.schema().fields().len();
    if !subquery.has_outer() {
        let (keys, filter) = split_keys(on, width);
        return Ok(LogicalPlan::join(input, subquery, join, keys, filter));
    }
    let domain = Domain::of(&input, &subquery);
    let k = domain.width();
    let rewritten = with_domain(subquery, &domain)?;
    let rewritten_schema = rewritten.schema();
    let input_schema = input.schema();
    let mut keys = Vec::new();
    for (i, outer) in domain.outer.iter().enumerate() {
        keys.extend(null_safe_key(
            column_of(&input_schema, *outer, 0),
            column_of(&rewritten_schema, i, 0),
        ));
    }
    let filter = on.map(|e| e.remap_columns(&|c| if c < width { c } else { c + k }));
    let joined = LogicalPlan::join(input, rewritten, join, keys, filter);
    let joined_schema = joined.schema();
    let kept = (0..width).chain(width + k..joined_schema.fields().len());
    Ok(keep_columns(joined, kept.collect()))
}

/// `EXISTS` (no probe) or `probe IN (subquery)` as a value, for a correlated subquery: for
/// every input row, over the subquery's rows for it, true when one matches, NULL when none
/// does but a NULL might (a NULL value, or a NULL probe over some rows), else false. The
/// probe joins the domain, and each domain row counts its matches and NULLs. Output: the
/// input's columns, then the mark.
pub fn mark_over_domain(
    input: LogicalPlan,
    subquery: LogicalPlan,
    probe: Option<Expr>,
) -> Result<LogicalPlan> {
    let width = input.schema().fields().len();
    let input_schema = input.schema();
    let mut exprs: Vec<Expr> = (0..width).map(|c| column_of(&input_schema, c, 0)).collect();
    let mut names: Vec<String> = input_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if let Some(probe) = &probe {
        exprs.push(probe.clone());
        names.push("probe".into());
    }
    // The probe, a column of the input, is an outer column the subquery reads too.
    let input = input.project(exprs, names);
    let mut domain = Domain::of(&input, &subquery);
    if probe.is_some() && !domain.outer.contains(&width) {
        domain = Domain::with_columns(&input, {
            let mut outer = domain.outer.clone();
            outer.push(width);
            outer
        });
    }
    let k = domain.width();
    let rewritten = with_domain(subquery, &domain)?;
    let rewritten_schema = rewritten.schema();
    let count = AggregateCall::new(AggregateFunction::CountStar, None);
    let mut aggregates = vec![count];
    if probe.is_some() {
        let probe_position = domain.outer.binary_search(&width).expect("added");
        let value = column_of(&rewritten_schema, k, 0);
        let probe_value = column_of(&rewritten_schema, probe_position, 0);
        let equal = Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(value.clone()),
            right: Box::new(probe_value),
        };
        // bool_or: the maximum of the booleans.
        aggregates.push(AggregateCall::new(AggregateFunction::Max, Some(equal)));
        let null_value = Expr::IsNull(Box::new(value));
        aggregates.push(AggregateCall::new(AggregateFunction::Max, Some(null_value)));
    }
    let mut fields = domain.fields();
    fields.extend(
        aggregates
            .iter()
            .enumerate()
            .map(|(i, a)| Field::new(format!("m{i}"), a.data_type.clone(), true)),
    );
    let counted = LogicalPlan::Aggregate {
        input: Box::new(rewritten),
        group: domain.columns(),
        aggregates,
        schema: Arc::new(Schema::new(fields)),
    };
    let counted_schema = counted.schema();
    let mut keys = Vec::new();
    for (i, outer) in domain.outer.iter().enumerate() {
        keys.extend(null_safe_key(
            column_of(&input.schema(), *outer, 0),
            column_of(&counted_schema, i, 0),
        ));
    }
    let input_width = input.schema().fields().len();
    let joined = LogicalPlan::join(input, counted, JoinKind::Left, keys, None);
    let joined_schema = joined.schema();
    let at = |i: usize| column_of(&joined_schema, input_width + k + i, 0);
    let literal = |b: bool| Expr::Literal(ScalarValue::Boolean(b));
    let some_rows = Expr::Binary {
        op: BinaryOp::Gt,
        left: Box::new(zero_when_null(at(0))),
        right: Box::new(Expr::Literal(ScalarValue::Int64(0))),
    };
    let mark = match &probe {
        None => some_rows,
        Some(_) => {
            let probe_is_null = Expr::IsNull(Box::new(column_of(&joined_schema, width, 0)));
            let maybe = Expr::Binary {
                op: BinaryOp::Or,
                left: Box::new(Expr::Binary {
                    op: BinaryOp::Eq,
                    left: Box::new(at(2)),
                    right: Box::new(literal(true)),
                }),
                right: Box::new(probe_is_null),
            };
            Expr::Case {
                branches: vec![
                    (Expr::Not(Box::new(some_rows)), literal(false)),
                    (
                        Expr::Binary {
                            op: BinaryOp::Eq,
                            left: Box::new(at(1)),
                            right: Box::new(literal(true)),
                        },
                        literal(true),
                    ),
                    (
                        maybe,
                        Expr::Literal(ScalarValue::Null).cast(&DataType::Boolean),
                    ),
                ],
                otherwise: Some(Box::new(literal(false))),
                data_type: DataType::Boolean,
            }
        }
    };
    let mut exprs: Vec<Expr> = (0..width)
        .map(|c| column_of(&joined_schema, c, 0))
        .collect();
    let mut names: Vec<String> = joined_schema.fields()[..width]
        .iter()
        .map(|f| f.name().clone())
        .collect();
    exprs.push(mark);
    names.push("mark".into());
    Ok(joined.project(exprs, names))
}

/// The distinct combinations of the outer columns a subquery reads, and where each is.
struct Domain {
    plan: LogicalPlan,
    /// The outer columns, ascending; domain column `i` holds `outer[i]`.
    outer: Vec<usize>,
    /// The recursive CTEs being rewritten around the node: their working tables' rows carry
    /// the domain columns in front, so a step reading them needs no cross product.
    recursive: Vec<usize>,
}

impl Domain {
    fn of(input: &LogicalPlan, subquery: &LogicalPlan) -> Domain {
        let mut outer = Vec::new();
        subquery.any_expr(&mut |e| {
            if let Expr::OuterColumn { index, .. } = e {
                outer.push(*index);
            }
            false
        });
        Domain::with_columns(input, outer)
    }

    /// The domain of the input's columns `outer`.
    fn with_columns(input: &LogicalPlan, mut outer: Vec<usize>) -> Domain {
        outer.sort_unstable();
        outer.dedup();
        let schema = input.schema();
        let fields: Vec<Field> = outer
            .iter()
            .map(|c| schema.field(*c).as_ref().clone().with_nullable(true))
            .collect();
        let plan = LogicalPlan::Aggregate {
            input: Box::new(input.clone()),
            group: outer.iter().map(|c| column_of(&schema, *c, 0)).collect(),
            aggregates: vec![],
            schema: Arc::new(Schema::new(fields)),
        };
        Domain {
            plan,
            outer,
            recursive: Vec::new(),
        }
    }

    /// Whether `plan` must be rewritten to carry the domain rather than crossed with it: it
    /// reads an outer column, or a working table whose rows carry the domain.
    fn needed_by(&self, plan: &LogicalPlan) -> bool {
        plan.has_outer()
            || !self.recursive.is_empty()
                && plan.exists(&mut |n| {
                    matches!(n, LogicalPlan::WorkingTable { id, .. } if self.recursive.contains(id))
                })
    }

    /// The domain for the step of recursive CTE `id`, whose working tables carry it.
    fn inside_recursive(&self, id: usize) -> Domain {
        let mut recursive = self.recursive.clone();
        recursive.push(id);
        Domain {
            plan: self.plan.clone(),
            outer: self.outer.clone(),
            recursive,
        }
    }

    fn width(&self) -> usize {
        self.outer.len()
    }

    fn fields(&self) -> Vec<Field> {
        let schema = self.plan.schema();
        schema.fields().iter().map(|f| f.as_ref().clone()).collect()
    }

    /// The domain's columns at the front of a row.
    fn columns(&self) -> Vec<Expr> {
        let schema = self.plan.schema();
        (0..self.width())
            .map(|i| column_of(&schema, i, 0))
            .collect()
    }

    /// `expr` over a row whose own columns now start at `shift`, outer columns read from
    /// the domain columns in front.
    fn shifted(&self, expr: &Expr, shift: usize) -> Expr {
        match expr {
            Expr::OuterColumn {
                index,
                name,
                data_type,
            } => {
                let position = self.outer.binary_search(index).expect("collected");
                Expr::column(position, name.clone(), data_type.clone())
            }
            Expr::Column {
                index,
                name,
                data_type,
            } => Expr::column(index + shift, name.clone(), data_type.clone()),
            other => other.map_children(&mut |e| self.shifted(e, shift)),
        }
    }

    /// `schema` with the domain's fields in front.
    fn in_front_of(&self, schema: &SchemaRef) -> SchemaRef {
        let mut fields = self.fields();
        fields.extend(schema.fields().iter().map(|f| f.as_ref().clone()));
        Arc::new(Schema::new(fields))
    }
}

/// `plan` run for every domain row at once: the domain's columns, then `plan`'s.
fn with_domain(plan: LogicalPlan, domain: &Domain) -> Result<LogicalPlan> {
    let k = domain.width();
    if !domain.needed_by(&plan) {
        return Ok(LogicalPlan::join(
            domain.plan.clone(),
            plan,
            JoinKind::Inner,
            vec![],
            None,
        ));
    }
    match plan {
        LogicalPlan::Filter { input, predicate } => {
            let input = with_domain(*input, domain)?;
            Ok(filter_over(input, domain.shifted(&predicate, k)))
        }
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => {
            let input = with_domain(*input, domain)?;
            let mut projected = domain.columns();
            projected.extend(exprs.iter().map(|e| domain.shifted(e, k)));
            Ok(LogicalPlan::Project {
                input: Box::new(input),
                exprs: projected,
                schema: domain.in_front_of(&schema),
            })
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => aggregate_with_domain(*input, group, aggregates, schema, domain),
        LogicalPlan::Sort { input, keys, fetch } => {
            let input = with_domain(*input, domain)?;
            let keys = shifted_keys(&keys, domain);
            match fetch {
                None => Ok(LogicalPlan::Sort {
                    input: Box::new(input),
                    keys,
                    fetch,
                }),
                Some(fetch) => Ok(first_per_domain(input, keys, 0, Some(fetch), domain)),
            }
        }
        LogicalPlan::Limit { input, skip, fetch } => {
            // `LIMIT` over a projection of sorted rows (`ORDER BY` a column not selected):
            // the projection is taken after the limit, so that the numbering below sees the
            // sort's keys. Row by row, it gives the same rows either way.
            if is_projection_over_sort(&input) {
                let LogicalPlan::Project {
                    input: sorted,
                    exprs,
                    schema,
                } = *input
                else {
                    unreachable!("a projection")
                };
                let limited = LogicalPlan::Limit {
                    input: sorted,
                    skip,
                    fetch,
                };
                return with_domain(
                    LogicalPlan::Project {
                        input: Box::new(limited),
                        exprs,
                        schema,
                    },
                    domain,
                );
            }
            let (input, keys, fetch) = match *input {
                LogicalPlan::Sort {
                    input,
                    keys,
                    fetch: sorted_fetch,
                } => {
                    // The sort's own fetch first, then this limit's rows of those.
                    let fetch = match (fetch, sorted_fetch) {
                        (fetch, None) => fetch,
                        (None, Some(f)) => Some(f.saturating_sub(skip)),
                        (Some(n), Some(f)) => Some(n.min(f.saturating_sub(skip))),
                    };
                    let keys = shifted_keys(&keys, domain);
                    (with_domain(*input, domain)?, keys, fetch)
                }
                other => (with_domain(other, domain)?, vec![], fetch),
            };
            Ok(first_per_domain(input, keys, skip, fetch, domain))
        }
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let input = with_domain(*input, domain)?;
            let exprs = exprs
                .iter()
                .map(|w| {
                    let mut partition_by = domain.columns();
                    partition_by.extend(w.partition_by.iter().map(|e| domain.shifted(e, k)));
                    WindowExpr {
                        func: w.func,
                        args: w.args.iter().map(|e| domain.shifted(e, k)).collect(),
                        partition_by,
                        order_by: shifted_keys(&w.order_by, domain),
                        frame: w.frame.clone(),
                        data_type: w.data_type.clone(),
                        ignore_nulls: w.ignore_nulls,
                    }
                })
                .collect();
            Ok(LogicalPlan::Window {
                input: Box::new(input),
                exprs,
                schema: domain.in_front_of(&schema),
            })
        }
        LogicalPlan::Unnest {
            input,
            array,
            schema,
        } => Ok(LogicalPlan::Unnest {
            input: Box::new(with_domain(*input, domain)?),
            array: domain.shifted(&array, k),
            schema: domain.in_front_of(&schema),
        }),
        LogicalPlan::Union { inputs, schema } => {
            let inputs = inputs
                .into_iter()
                .map(|i| with_domain(i, domain))
                .collect::<Result<Vec<_>>>()?;
            Ok(LogicalPlan::Union {
                inputs,
                schema: domain.in_front_of(&schema),
            })
        }
        LogicalPlan::Values { rows, schema } => {
            // Each row is a projection of the domain: its values may read the outer columns.
            let branches: Vec<LogicalPlan> = rows
                .iter()
                .map(|row| {
                    let mut exprs = domain.columns();
                    exprs.extend(row.iter().map(|e| domain.shifted(e, k)));
                    LogicalPlan::Project {
                        input: Box::new(domain.plan.clone()),
                        exprs,
                        schema: domain.in_front_of(&schema),
                    }
                })
                .collect();
            Ok(match <[LogicalPlan; 1]>::try_from(branches) {
                Ok([one]) => one,
                Err(branches) => LogicalPlan::Union {
                    inputs: branches,
                    schema: domain.in_front_of(&schema),
                },
            })
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            ..
        } => join_with_domain(*left, *right, kind, on, filter, domain),
        // Each domain row's recursion runs apart: its rows carry the domain columns, which
        // the step reads from the working table (and UNION, a key, tell rows apart by).
        LogicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
            key,
            finalize: None,
        } => {
            // A step reading the CTE more than once (a self-join, a subquery over it) is not
            // rewritten yet: each read would have to join the others on the domain.
            let mut reads = 0;
            step.exists(&mut |n| {
                reads +=
                    usize::from(matches!(n, LogicalPlan::WorkingTable { id: i, .. } if *i == id));
                false
            });
            if reads > 1 {
                return Err(unsupported!(
                    "a recursive CTE reading the outer row in a LATERAL subquery, whose step reads the CTE more than once"
                ));
            }
            let anchor = with_domain(*anchor, domain)?;
            let step = with_domain(*step, &domain.inside_recursive(id))?;
            let key = key.map(|key| (0..k).chain(key.iter().map(|c| c + k)).collect());
            Ok(LogicalPlan::RecursiveCte {
                anchor: Box::new(anchor),
                step: Box::new(step),
                id,
                distinct,
                key,
                finalize: None,
            })
        }
        LogicalPlan::WorkingTable { id, schema, rows } if domain.recursive.contains(&id) => {
            Ok(LogicalPlan::WorkingTable {
                id,
                schema: domain.in_front_of(&schema),
                rows,
            })
        }
        other => Err(unsupported!(
            "{} reading the outer row in a LATERAL subquery",
            node_name(&other)
        )),
    }
}

/// Whether `plan` projects (perhaps through further projections) the rows of a sort.
fn is_projection_over_sort(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Project { input, .. } => {
            matches!(input.as_ref(), LogicalPlan::Sort { .. }) || is_projection_over_sort(input)
        }
        _ => false,
    }
}

fn node_name(plan: &LogicalPlan) -> &'static str {
    match plan {
        LogicalPlan::RecursiveCte { .. } | LogicalPlan::WorkingTable { .. } => "a recursive CTE",
        LogicalPlan::ChangeRecords { .. } => "table_changes",
        _ => "this operator",
    }
}

/// A filter over `input`; conjuncts that equate a column of each side of an inner join
/// below become its keys, so that the domain's cross products join on them instead.
fn filter_over(input: LogicalPlan, predicate: Expr) -> LogicalPlan {
    let LogicalPlan::Join {
        left,
        right,
        kind: JoinKind::Inner,
        mut on,
        filter,
        ..
    } = input
    else {
        return LogicalPlan::Filter {
            input: Box::new(input),
            predicate,
        };
    };
    let left_width = left.schema().fields().len();
    let mut rest: Vec<Expr> = filter.map(|f| f.conjuncts()).unwrap_or_default();
    for conjunct in predicate.conjuncts() {
        match equi_key(&conjunct, left_width) {
            Some(key) => on.push(key),
            None => rest.push(conjunct),
        }
    }
    LogicalPlan::join(*left, *right, JoinKind::Inner, on, Expr::and_all(rest))
}

/// `(left side, right side)` of an equality between an expression over the left input only
/// and one over the right only, the right side in the right input's own columns.
pub(crate) fn equi_key(predicate: &Expr, left_width: usize) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
    } = predicate
    else {
        return None;
    };
    let side = |e: &Expr| {
        let columns = e.column_indices();
        if columns.is_empty() || e.has_outer() {
            None
        } else if columns.iter().all(|c| *c < left_width) {
            Some(true)
        } else if columns.iter().all(|c| *c >= left_width) {
            Some(false)
        } else {
            None
        }
    };
    let to_right = |e: &Expr| e.remap_columns(&|c| c - left_width);
    match (side(left), side(right)) {
        (Some(true), Some(false)) => Some(((**left).clone(), to_right(right))),
        (Some(false), Some(true)) => Some(((**right).clone(), to_right(left))),
        _ => None,
    }
}

/// A join's `on` condition over (left, right) columns as keys and a residual filter.
fn split_keys(on: Option<Expr>, left_width: usize) -> (Vec<(Expr, Expr)>, Option<Expr>) {
    let mut keys = Vec::new();
    let mut rest = Vec::new();
    for conjunct in on.map(|e| e.conjuncts()).unwrap_or_default() {
        match equi_key(&conjunct, left_width) {
            Some(key) => keys.push(key),
            None => rest.push(conjunct),
        }
    }
    (keys, Expr::and_all(rest))
}

fn shifted_keys(keys: &[SortKey], domain: &Domain) -> Vec<SortKey> {
    keys.iter()
        .map(|key| SortKey {
            expr: domain.shifted(&key.expr, domain.width()),
            ..key.clone()
        })
        .collect()
}

/// An aggregate grouped by the domain too. Without GROUP BY it gives a row for every domain
/// row, as the original gives one row for every outer row: the domain left-joined to it, the
/// counts of domain rows without input 0.
fn aggregate_with_domain(
    input: LogicalPlan,
    group: Vec<Expr>,
    aggregates: Vec<crate::expr::AggregateCall>,
    schema: SchemaRef,
    domain: &Domain,
) -> Result<LogicalPlan> {
    let k = domain.width();
    let input = with_domain(input, domain)?;
    let scalar = group.is_empty();
    let mut grouped = domain.columns();
    grouped.extend(group.iter().map(|e| domain.shifted(e, k)));
    let aggregates: Vec<_> = aggregates
        .iter()
        .map(|a| a.map_exprs(&mut |e| domain.shifted(e, k)))
        .collect();
    let counts: Vec<bool> = aggregates
        .iter()
        .map(|a| {
            matches!(
                a.func,
                AggregateFunction::Count
                    | AggregateFunction::CountStar
                    | AggregateFunction::CountDistinct
            )
        })
        .collect();
    let aggregate = LogicalPlan::Aggregate {
        input: Box::new(input),
        group: grouped,
        aggregates,
        schema: domain.in_front_of(&schema),
    };
    if !scalar {
        return Ok(aggregate);
    }
    let aggregate_schema = aggregate.schema();
    let domain_schema = domain.plan.schema();
    let keys = (0..k)
        .flat_map(|i| {
            null_safe_key(
                column_of(&domain_schema, i, 0),
                column_of(&aggregate_schema, i, 0),
            )
        })
        .collect();
    let joined = LogicalPlan::join(domain.plan.clone(), aggregate, JoinKind::Left, keys, None);
    let joined_schema = joined.schema();
    let mut exprs = domain.columns();
    for (i, count) in counts.into_iter().enumerate() {
        let value = column_of(&joined_schema, 2 * k + i, 0);
        exprs.push(match count {
            true => zero_when_null(value),
            false => value,
        });
    }
    let names = aggregate_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    Ok(joined.project(exprs, names))
}

fn zero_when_null(value: Expr) -> Expr {
    let data_type = value.data_type();
    Expr::Function {
        func: ScalarFunction::Coalesce,
        args: vec![value, Expr::Literal(ScalarValue::Int64(0)).cast(&data_type)],
        data_type,
    }
}

/// LIMIT / OFFSET for every domain row: the rows numbered in `keys`' order within their
/// domain row, those from `skip` on, `fetch` of them.
fn first_per_domain(
    input: LogicalPlan,
    keys: Vec<SortKey>,
    skip: usize,
    fetch: Option<usize>,
    domain: &Domain,
) -> LogicalPlan {
    let width = input.schema().fields().len();
    let number = WindowExpr {
        func: WindowFunction::RowNumber,
        args: vec![],
        partition_by: domain.columns(),
        order_by: keys.clone(),
        frame: crate::expr::Frame::rows(
            FrameBound::UnboundedPreceding,
            FrameBound::UnboundedFollowing,
        ),
        data_type: DataType::Int64,
        ignore_nulls: false,
    };
    let field = Field::new("lateral_row", DataType::Int64, true);
    let numbered = LogicalPlan::Window {
        schema: crate::types::schema_with(&input.schema(), vec![field]),
        input: Box::new(input),
        exprs: vec![number],
    };
    let row = Expr::column(width, "lateral_row", DataType::Int64);
    let bound = |op: BinaryOp, n: usize| Expr::Binary {
        op,
        left: Box::new(row.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int64(n as i64))),
    };
    let mut conditions = vec![bound(BinaryOp::Gt, skip)];
    if let Some(fetch) = fetch {
        conditions.push(bound(BinaryOp::LtEq, skip.saturating_add(fetch)));
    }
    let kept = LogicalPlan::Filter {
        input: Box::new(numbered),
        predicate: Expr::and_all(conditions).expect("a condition"),
    };
    let ordered = match keys.is_empty() {
        true => kept,
        false => LogicalPlan::Sort {
            input: Box::new(kept),
            keys,
            fetch: None,
        },
    };
    keep_columns(ordered, (0..width).collect())
}

/// A join inside the subquery. A side that reads no outer column and whose unmatched rows
/// the join does not keep needs no domain; otherwise both sides carry it and join on it.
fn join_with_domain(
    left: LogicalPlan,
    right: LogicalPlan,
    kind: JoinKind,
    on: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
    domain: &Domain,
) -> Result<LogicalPlan> {
    let k = domain.width();
    let left_width = left.schema().fields().len();
    let keeps_left_rows_only = !matches!(kind, JoinKind::Right | JoinKind::Full);
    let right_reads_outer = domain.needed_by(&right) || on.iter().any(|(_, r)| r.has_outer());
    if keeps_left_rows_only && !right_reads_outer {
        let left = with_domain(left, domain)?;
        let on = on
            .iter()
            .map(|(l, r)| (domain.shifted(l, k), r.clone()))
            .collect();
        let filter = filter.map(|f| domain.shifted(&f, k));
        return Ok(LogicalPlan::join(left, right, kind, on, filter));
    }
    // Both sides carry the domain: (d, left, d, right) joined on d.
    let left = with_domain(left, domain)?;
    let right = with_domain(right, domain)?;
    let right_start = k + left_width;
    let mut keys = Vec::new();
    let (left_schema, right_schema) = (left.schema(), right.schema());
    for i in 0..k {
        keys.extend(null_safe_key(
            column_of(&left_schema, i, 0),
            column_of(&right_schema, i, 0),
        ));
    }
    for (l, r) in &on {
        keys.push((domain.shifted(l, k), domain.shifted(r, k)));
    }
    let filter = filter.map(|f| {
        let over_joined = f.remap_columns(&|c| if c < left_width { c } else { c + k });
        domain.shifted(&over_joined, k)
    });
    let joined = LogicalPlan::join(left, right, kind, keys, filter);
    let joined_schema = joined.schema();
    let mut exprs: Vec<Expr> = (0..k)
        .map(|i| {
            let from_left = column_of(&joined_schema, i, 0);
            match kind {
                JoinKind::Right => column_of(&joined_schema, right_start + i, 0),
                JoinKind::Full => Expr::Function {
                    func: ScalarFunction::Coalesce,
                    data_type: from_left.data_type(),
                    args: vec![from_left, column_of(&joined_schema, right_start + i, 0)],
                },
                _ => from_left,
            }
        })
        .collect();
    // Semi, anti and mark joins give the left side's columns only (and the mark).
    let width = joined_schema.fields().len();
    let gives_right = width == right_start + right_schema.fields().len();
    let right_domain = right_start..right_start + k;
    let kept: Vec<usize> = (k..width)
        .filter(|c| !gives_right || !right_domain.contains(c))
        .collect();
    exprs.extend(kept.iter().map(|c| column_of(&joined_schema, *c, 0)));
    let names = domain
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .chain(kept.iter().map(|c| joined_schema.field(*c).name().clone()))
        .collect();
    Ok(joined.project(exprs, names))
}

/// Column `index` of `schema`, read at `index + shift`.
fn column_of(schema: &SchemaRef, index: usize, shift: usize) -> Expr {
    let field = schema.field(index);
    Expr::column(index + shift, field.name(), field.data_type().clone())
}

/// The columns `kept` of `plan`, in that order, under their names.
fn keep_columns(plan: LogicalPlan, kept: Vec<usize>) -> LogicalPlan {
    let schema = plan.schema();
    let (exprs, names) = kept
        .into_iter()
        .map(|c| (column_of(&schema, c, 0), schema.field(c).name().clone()))
        .unzip();
    plan.project(exprs, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(name: &str) -> LogicalPlan {
        LogicalPlan::Values {
            schema: Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, true)])),
            rows: Vec::new(),
        }
    }

    fn outer_x() -> Expr {
        Expr::OuterColumn {
            index: 0,
            name: "x".into(),
            data_type: DataType::Int64,
        }
    }

    fn y_equals_outer_x() -> LogicalPlan {
        LogicalPlan::Filter {
            input: Box::new(values("y")),
            predicate: Expr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(Expr::column(0, "y", DataType::Int64)),
                right: Box::new(outer_x()),
            },
        }
    }

    #[test]
    fn a_subquery_reading_no_outer_column_is_a_plain_join() {
        let joined = join_over_domain(values("x"), values("y"), JoinKind::Inner, None).unwrap();
        assert_eq!(
            joined.to_string(),
            "Join Inner: on=[]\n  Values: 0 rows\n  Values: 0 rows\n"
        );
    }

    #[test]
    fn an_outer_equality_joins_the_domain_on_it_rather_than_crossing_it() {
        let joined =
            join_over_domain(values("x"), y_equals_outer_x(), JoinKind::Inner, None).unwrap();
        let text = joined.to_string();
        assert!(text.contains("Join Inner: on=[x#0 = y#0]"), "{text}");
        assert!(!text.contains("Filter"), "{text}");
        assert_eq!(joined.schema().fields().len(), 2);
    }

    #[test]
    fn a_count_without_group_by_gives_every_domain_row_a_row() {
        let count = LogicalPlan::Aggregate {
            input: Box::new(y_equals_outer_x()),
            group: vec![],
            aggregates: vec![AggregateCall::new(AggregateFunction::CountStar, None)],
            schema: Arc::new(Schema::new(vec![Field::new("c", DataType::Int64, true)])),
        };
        let joined = join_over_domain(values("x"), count, JoinKind::Inner, None).unwrap();
        let text = joined.to_string();
        assert!(text.contains("Join Left"), "{text}");
        assert!(text.contains("coalesce"), "{text}");
        assert_eq!(joined.schema().fields().len(), 2);
    }

    #[test]
    fn a_limit_numbers_the_rows_of_each_domain_row() {
        let limited = LogicalPlan::Limit {
            input: Box::new(y_equals_outer_x()),
            skip: 1,
            fetch: Some(2),
        };
        let joined = join_over_domain(values("x"), limited, JoinKind::Left, None).unwrap();
        let text = joined.to_string();
        assert!(text.contains("Window: 1 functions"), "{text}");
        assert!(text.contains("lateral_row#2 > 1"), "{text}");
        assert!(text.contains("lateral_row#2 <= 3"), "{text}");
    }
}
