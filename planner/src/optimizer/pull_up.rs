//! Pulling a correlated subquery's outer conditions out of its plan, for the `decorrelate`
//! pass. The predicates that mention outer columns are pulled up (through filters,
//! projections, inner joins and aggregates, which gain the correlated columns as group keys),
//! leaving a plan that runs once for all outer rows. The pulled predicates become the join's
//! keys and filter. Scalar subqueries correlated other than by equality join over the domain of
//! their outer columns instead (`join_scalar_by_domain`).

use crate::expr::{AggregateFunction, BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::tree::TreeNode;
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
        LogicalPlan::JoinBlock { .. } | LogicalPlan::Subquery { .. } => {
            unreachable!("join blocks and subqueries are planned from the leaves up")
        }
        LogicalPlan::Window { .. }
        | LogicalPlan::Union { .. }
        | LogicalPlan::RecursiveCte { .. }
        | LogicalPlan::Unnest { .. }
        | LogicalPlan::WorkingTable { .. }
        | LogicalPlan::ChangeRecords { .. } => {
            if plan.has_outer() {
                return Err(unsupported!(
                    "set operations, windows, recursive CTEs and set-returning functions in a correlated subquery"
                ));
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
            // Conditions pulled up from the side an outer join keeps whole still hold above it;
            // from the other side they would no longer drop its unmatched rows.
            let (left_ok, right_ok) = match kind {
                JoinKind::Inner => (true, true),
                JoinKind::Left => (true, false),
                JoinKind::Right => (false, true),
                _ => (false, false),
            };
            if !right_pulled.is_empty() && !right_ok {
                return Err(unsupported!(
                    "outer columns under an outer join in a subquery"
                ));
            }
            if !pulled.is_empty() && !left_ok {
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
            if group.iter().any(Expr::has_outer)
                || aggregates.iter().any(|a| a.exprs().any(Expr::has_outer))
            {
                return Err(unsupported!(
                    "outer columns in a subquery's grouping or aggregates"
                ));
            }
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
        LogicalPlan::Sort { .. } | LogicalPlan::Limit { .. } => {
            let clause = match plan {
                LogicalPlan::Sort { .. } => "ORDER BY",
                _ => "LIMIT",
            };
            let mut plan = plan;
            let input = plan.children_mut().pop().expect("one input");
            let (pulled_up, pulled) =
                pull_up(std::mem::replace(input, LogicalPlan::empty()), usage)?;
            if !pulled.is_empty() {
                return Err(unsupported!("{clause} in a correlated subquery"));
            }
            *input = pulled_up;
            Ok((plan, pulled))
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
    let column = |i: usize| Expr::column_of(&schema, i);
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
pub(crate) fn to_joined(expr: &Expr, outer_width: usize) -> Expr {
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

/// A correlated scalar subquery of the form `SELECT f(aggregates) FROM ... WHERE <any
/// correlation>`, joined to `outer` (of `width` columns) as column `width`.
///
/// The subquery is evaluated once per distinct combination of the outer columns it reads (the
/// domain): the domain is left-joined to the subquery's rows under the correlated conditions,
/// aggregated per domain value (a marker column makes `count(*)` count only real matches), and
/// joined back to the outer rows.
pub fn join_scalar_by_domain(
    outer: LogicalPlan,
    subquery: LogicalPlan,
    width: usize,
) -> Result<LogicalPlan> {
    let LogicalPlan::Project {
        input: aggregate,
        exprs: finals,
        schema: final_schema,
    } = subquery
    else {
        return Err(unsupported!("this correlated scalar subquery"));
    };
    let LogicalPlan::Aggregate {
        input,
        group,
        aggregates,
        ..
    } = *aggregate
    else {
        return Err(unsupported!(
            "a correlated scalar subquery without an aggregate"
        ));
    };
    if !group.is_empty()
        || finals.iter().any(Expr::has_outer)
        || aggregates.iter().any(|a| a.exprs().any(Expr::has_outer))
    {
        return Err(unsupported!("this correlated scalar subquery"));
    }
    let (inner, pulled) = pull_up(*input, SubqueryUse::Filter)?;
    let mut outer_columns: Vec<usize> = Vec::new();
    for p in &pulled {
        collect_outer(p, &mut outer_columns);
    }
    outer_columns.sort_unstable();
    outer_columns.dedup();
    let domain_width = outer_columns.len();
    let outer_schema = outer.schema();
    let outer_column = |i: usize| {
        let f = outer_schema.field(i);
        Expr::column(i, f.name(), f.data_type().clone())
    };
    let domain_group: Vec<Expr> = outer_columns.iter().map(|c| outer_column(*c)).collect();
    let domain_fields: Vec<arrow::datatypes::Field> = outer_columns
        .iter()
        .map(|c| outer_schema.field(*c).as_ref().clone().with_nullable(true))
        .collect();
    let domain = LogicalPlan::Aggregate {
        input: Box::new(outer.clone()),
        group: domain_group,
        aggregates: vec![],
        schema: std::sync::Arc::new(arrow::datatypes::Schema::new(domain_fields)),
    };
    // The subquery's rows, with a marker that is never NULL.
    let inner_schema = inner.schema();
    let inner_width = inner_schema.fields().len();
    let mut exprs: Vec<Expr> = (0..inner_width)
        .map(|i| {
            let f = inner_schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        })
        .collect();
    let mut names: Vec<String> = inner_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    exprs.push(Expr::Literal(crate::scalar::ScalarValue::Int32(1)));
    names.push("matched".into());
    let marked = inner.project(exprs, names);
    // Correlated conditions over (domain columns, subquery columns).
    let position = |o: usize| {
        outer_columns
            .iter()
            .position(|c| *c == o)
            .expect("collected")
    };
    let mut keys = Vec::new();
    let mut rest = Vec::new();
    for p in pulled {
        let joined = to_domain_space(&p, &position, domain_width);
        if let Some(key) = crate::optimizer::domain_join::equi_key(&joined, domain_width) {
            keys.push(key);
            continue;
        }
        rest.push(joined);
    }
    let joined = LogicalPlan::join(domain, marked, JoinKind::Left, keys, Expr::and_all(rest));
    let joined_schema = joined.schema();
    let shifted: Vec<crate::expr::AggregateCall> = aggregates
        .iter()
        .map(|a| match &a.arg {
            Some(_) => {
                let mut shifted = a.map_exprs(&mut |e| e.remap_columns(&|c| c + domain_width));
                // Domain values without a match have one joined row of NULLs, which array_agg
                // would keep: only matched rows count.
                if a.func == AggregateFunction::ArrayAgg {
                    let matched = Expr::IsNotNull(Box::new(Expr::column(
                        domain_width + inner_width,
                        "matched",
                        arrow::datatypes::DataType::Int32,
                    )));
                    shifted.filter =
                        Expr::and_all(shifted.filter.into_iter().chain([matched]).collect());
                }
                shifted
            }
            None => crate::expr::AggregateCall {
                func: AggregateFunction::Count,
                arg: Some(Expr::column(
                    domain_width + inner_width,
                    "matched",
                    arrow::datatypes::DataType::Int32,
                )),
                data_type: a.data_type.clone(),
                separator: None,
                order: Vec::new(),
                filter: None,
            },
        })
        .collect();
    let mut fields: Vec<arrow::datatypes::Field> = joined_schema.fields()[..domain_width]
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(
        shifted.iter().enumerate().map(|(i, a)| {
            arrow::datatypes::Field::new(format!("agg_{i}"), a.data_type.clone(), true)
        }),
    );
    let per_domain = LogicalPlan::Aggregate {
        input: Box::new(joined),
        group: (0..domain_width)
            .map(|i| {
                let f = joined_schema.field(i);
                Expr::column(i, f.name(), f.data_type().clone())
            })
            .collect(),
        aggregates: shifted,
        schema: std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
    };
    let per_schema = per_domain.schema();
    let mut values: Vec<Expr> = (0..domain_width)
        .map(|i| {
            let f = per_schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        })
        .collect();
    values.push(finals[0].remap_columns(&|c| c + domain_width));
    let mut value_names: Vec<String> = (0..domain_width).map(|i| format!("d{i}")).collect();
    value_names.push(final_schema.field(0).name().clone());
    let per_domain = per_domain.project(values, value_names);
    // NULL outer values form a domain value of their own, so the keys compare NULLs as equal.
    let keys = outer_columns
        .iter()
        .enumerate()
        .flat_map(|(k, o)| {
            let f = per_schema.field(k);
            null_safe_key(
                outer_column(*o),
                Expr::column(k, f.name(), f.data_type().clone()),
            )
        })
        .collect();
    let result = LogicalPlan::join(outer, per_domain, JoinKind::Left, keys, None);
    let schema = result.schema();
    let (exprs, names): (Vec<Expr>, Vec<String>) = (0..width)
        .chain([width + domain_width])
        .map(|i| {
            let f = schema.field(i);
            (
                Expr::column(i, f.name(), f.data_type().clone()),
                f.name().clone(),
            )
        })
        .unzip();
    Ok(result.project(exprs, names))
}

/// Two key pairs that match when both sides are equal or both are NULL: whether each is NULL,
/// and each with NULL replaced by a fixed value of its type.
pub(crate) fn null_safe_key(left: Expr, right: Expr) -> Vec<(Expr, Expr)> {
    use crate::scalar::ScalarValue as V;
    use arrow::datatypes::DataType as T;
    let data_type = left.data_type();
    let fixed = match &data_type {
        T::Boolean => V::Boolean(false),
        T::Int32 => V::Int32(0),
        T::Int64 => V::Int64(0),
        T::Float64 => V::Float64(0.0),
        T::Utf8 => V::Utf8(String::new()),
        T::Date32 => V::Date32(0),
        T::Timestamp(..) => V::TimestampMicros(0),
        T::Decimal64(p, s) | T::Decimal128(p, s) => V::Decimal {
            value: 0,
            precision: *p,
            scale: *s,
        },
        _ => return vec![(left, right)],
    };
    let filled = |e: Expr| Expr::Function {
        func: crate::expr::ScalarFunction::Coalesce,
        args: vec![e, Expr::Literal(fixed.clone()).cast(&data_type)],
        data_type: data_type.clone(),
    };
    vec![
        (
            Expr::IsNull(Box::new(left.clone())),
            Expr::IsNull(Box::new(right.clone())),
        ),
        (filled(left), filled(right)),
    ]
}

fn collect_outer(expr: &Expr, out: &mut Vec<usize>) {
    if let Expr::OuterColumn { index, .. } = expr {
        out.push(*index);
        return;
    }
    expr.map_children(&mut |e| {
        collect_outer(e, out);
        e.clone()
    });
}

/// An expression over outer and subquery columns, as one over (domain, subquery) columns.
fn to_domain_space(expr: &Expr, position: &dyn Fn(usize) -> usize, domain_width: usize) -> Expr {
    match expr {
        Expr::OuterColumn {
            index,
            name,
            data_type,
        } => Expr::column(position(*index), name.clone(), data_type.clone()),
        Expr::Column {
            index,
            name,
            data_type,
        } => Expr::column(index + domain_width, name.clone(), data_type.clone()),
        other => other.map_children(&mut |e| to_domain_space(e, position, domain_width)),
    }
}
