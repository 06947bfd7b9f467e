//! Set operations (UNION, INTERSECT, EXCEPT), DISTINCT, and GROUPING SETS / ROLLUP / CUBE.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_parser::ast;

use super::type_name;
use crate::expr::{
    AggregateCall, AggregateFunction, BinaryOp, Expr, Frame, FrameBound, WindowExpr, WindowFunction,
};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::common_numeric_type;
use crate::{Result, bind_err, unsupported};

/// GROUP BY with ROLLUP, CUBE or GROUPING SETS: every grouping expression once, in order, and
/// the sets (lists of those expressions) to group by; `None` for a plain GROUP BY.
#[allow(clippy::type_complexity)]
pub(super) fn grouping_sets(
    exprs: &[ast::Expr],
) -> Result<(Vec<ast::Expr>, Option<Vec<Vec<ast::Expr>>>)> {
    let mut sets: Vec<Vec<ast::Expr>> = vec![vec![]];
    let mut any = false;
    for expr in exprs {
        let options: Vec<Vec<ast::Expr>> = match expr {
            ast::Expr::Rollup(items) => {
                any = true;
                (0..=items.len())
                    .rev()
                    .map(|n| items[..n].iter().flatten().cloned().collect())
                    .collect()
            }
            ast::Expr::Cube(items) => {
                any = true;
                if items.len() > 12 {
                    return Err(unsupported!("CUBE of more than 12 expressions"));
                }
                (0..(1usize << items.len()))
                    .rev()
                    .map(|mask| {
                        items
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| mask & (1 << (items.len() - 1 - i)) != 0)
                            .flat_map(|(_, item)| item.iter().cloned())
                            .collect()
                    })
                    .collect()
            }
            ast::Expr::GroupingSets(items) => {
                any = true;
                items.clone()
            }
            // `()`: the empty grouping set, all rows one group.
            ast::Expr::Tuple(items) if items.is_empty() => vec![vec![]],
            plain => vec![vec![plain.clone()]],
        };
        sets = sets
            .iter()
            .flat_map(|set| {
                options.iter().map(move |option| {
                    let mut combined = set.clone();
                    combined.extend(option.iter().cloned());
                    combined
                })
            })
            .collect();
    }
    let mut all: Vec<ast::Expr> = Vec::new();
    for set in &sets {
        for e in set {
            if !all.contains(e) {
                all.push(e.clone());
            }
        }
    }
    if any {
        Ok((all, Some(sets)))
    } else {
        let plain = exprs.iter().filter(|e| !is_empty_set(e)).cloned();
        Ok((plain.collect(), None))
    }
}

/// Whether a GROUP BY item is `()`, the empty grouping set.
pub(super) fn is_empty_set(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Tuple(items) if items.is_empty())
}

/// One aggregation per grouping set, each with NULL for the keys it does not group by, in one
/// union shaped like a plain aggregation over every key.
pub(super) fn union_of_groupings(
    input: LogicalPlan,
    group: &[Expr],
    aggregates: &[AggregateCall],
    sets: &[Vec<usize>],
    schema: SchemaRef,
) -> LogicalPlan {
    let mut inputs = Vec::new();
    for set in sets {
        let set_group: Vec<Expr> = set.iter().map(|i| group[*i].clone()).collect();
        let mut fields: Vec<Field> = set.iter().map(|i| schema.field(*i).clone()).collect();
        fields.extend(
            schema.fields()[group.len()..]
                .iter()
                .map(|f| f.as_ref().clone()),
        );
        let aggregate = LogicalPlan::Aggregate {
            input: Box::new(input.clone()),
            group: set_group,
            aggregates: aggregates.to_vec(),
            schema: Arc::new(Schema::new(fields)),
        };
        let inner = aggregate.schema();
        let mut exprs = Vec::new();
        for (i, g) in group.iter().enumerate() {
            exprs.push(match set.iter().position(|s| *s == i) {
                Some(p) => Expr::column(p, inner.field(p).name(), g.data_type()),
                None => Expr::Literal(ScalarValue::Null).cast(&g.data_type()),
            });
        }
        let grouping_id: i64 = (0..group.len())
            .filter(|k| !set.contains(k))
            .map(|k| 1 << k)
            .sum();
        for (a, call) in aggregates.iter().enumerate() {
            let p = set.len() + a;
            exprs.push(if call.func == AggregateFunction::GroupingId {
                Expr::Literal(ScalarValue::Int64(grouping_id))
            } else {
                Expr::column(p, inner.field(p).name(), inner.field(p).data_type().clone())
            });
        }
        let names = schema.fields().iter().map(|f| f.name().clone()).collect();
        inputs.push(aggregate.project(exprs, names));
    }
    LogicalPlan::Union { inputs, schema }
}

/// The type a column of both sides of a set operation takes: the same type, the other's for
/// an untyped NULL, the wider number, a list of the elements' common type.
fn union_type(left: &DataType, right: &DataType) -> Option<DataType> {
    match (left, right) {
        (l, r) if l == r => Some(l.clone()),
        (l, DataType::Null) => Some(l.clone()),
        (DataType::Null, r) => Some(r.clone()),
        (DataType::List(l), DataType::List(r)) => {
            union_type(l.data_type(), r.data_type()).map(crate::types::list_of)
        }
        // Numbers meet at the wider; dates and timestamps, structs and maps as CASE's
        // branches meet.
        (l, r) => common_numeric_type(l, r)
            .or_else(|| super::expr::common_type(&[l.clone(), r.clone()]).ok()),
    }
}

/// `UNION [ALL] BY NAME` (DuckDB): both sides with the columns of either, matched by name
/// (case aside), the left's first; a side without a column gives NULLs for it.
fn matched_by_name(left: LogicalPlan, right: LogicalPlan) -> (LogicalPlan, LogicalPlan) {
    let (ls, rs) = (left.schema(), right.schema());
    let mut names: Vec<String> = Vec::new();
    for field in ls.fields().iter().chain(rs.fields()) {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(field.name())) {
            names.push(field.name().clone());
        }
    }
    let side = |plan: LogicalPlan| {
        let schema = plan.schema();
        let exprs = names
            .iter()
            .map(|name| {
                let found = schema
                    .fields()
                    .iter()
                    .position(|f| f.name().eq_ignore_ascii_case(name));
                match found {
                    Some(i) => {
                        let f = schema.field(i);
                        Expr::column(i, f.name(), f.data_type().clone())
                    }
                    None => Expr::Literal(ScalarValue::Null),
                }
            })
            .collect();
        plan.project(exprs, names.clone())
    };
    (side(left), side(right))
}

/// UNION, INTERSECT and EXCEPT. Both inputs are brought to common column types; INTERSECT and
/// EXCEPT count each distinct row's appearances on either side (so NULLs compare equal, as
/// set operations require).
pub(super) fn set_operation(
    left: LogicalPlan,
    op: ast::SetOperator,
    quantifier: ast::SetQuantifier,
    right: LogicalPlan,
) -> Result<LogicalPlan> {
    let by_name = match quantifier {
        ast::SetQuantifier::ByName | ast::SetQuantifier::DistinctByName => {
            Some(ast::SetQuantifier::Distinct)
        }
        ast::SetQuantifier::AllByName => Some(ast::SetQuantifier::All),
        _ => None,
    };
    if let Some(quantifier) = by_name {
        if op != ast::SetOperator::Union {
            return Err(unsupported!("{op} BY NAME"));
        }
        let (left, right) = matched_by_name(left, right);
        return set_operation(left, op, quantifier, right);
    }
    let (ls, rs) = (left.schema(), right.schema());
    if ls.fields().len() != rs.fields().len() {
        return Err(bind_err!(
            "each {op} query must have the same number of columns ({} and {})",
            ls.fields().len(),
            rs.fields().len()
        ));
    }
    let mut types = Vec::new();
    for (l, r) in ls.fields().iter().zip(rs.fields()) {
        let (lt, rt) = (l.data_type(), r.data_type());
        let Some(t) = union_type(lt, rt) else {
            return Err(bind_err!(
                "{op} types {} and {} cannot be matched",
                type_name(lt),
                type_name(rt)
            ));
        };
        types.push(t);
    }
    let names: Vec<String> = ls.fields().iter().map(|f| f.name().clone()).collect();
    let all = match quantifier {
        ast::SetQuantifier::All => true,
        ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
        other => return Err(unsupported!("{op} {other}")),
    };
    // Each side cast to the common types, with flags saying which side a row came from.
    let side = |plan: LogicalPlan, flags: Option<(i32, i32)>| {
        let schema = plan.schema();
        let mut exprs: Vec<Expr> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let f = schema.field(i);
                Expr::column(i, f.name(), f.data_type().clone()).cast(t)
            })
            .collect();
        let mut names = names.clone();
        if let Some((l, r)) = flags {
            exprs.push(Expr::Literal(ScalarValue::Int32(l)));
            exprs.push(Expr::Literal(ScalarValue::Int32(r)));
            names.push("in_left".into());
            names.push("in_right".into());
        }
        plan.project(exprs, names)
    };
    let union = |l: LogicalPlan, r: LogicalPlan| {
        let schema = l.schema();
        LogicalPlan::Union {
            inputs: vec![l, r],
            schema,
        }
    };
    match op {
        ast::SetOperator::Union => {
            let plan = union(side(left, None), side(right, None));
            Ok(if all { plan } else { distinct_rows(plan) })
        }
        ast::SetOperator::Intersect | ast::SetOperator::Except | ast::SetOperator::Minus if all => {
            // The n-th copy of a row on one side meets the n-th copy on the other: numbering
            // each row among its equals makes every copy distinct.
            let left = number_duplicates(side(left, None));
            let right = number_duplicates(side(right, None));
            let plan = set_operation(left, op, ast::SetQuantifier::Distinct, right)?;
            let exprs = (0..types.len())
                .map(|i| Expr::column(i, &names[i], types[i].clone()))
                .collect();
            Ok(plan.project(exprs, names))
        }
        ast::SetOperator::Intersect | ast::SetOperator::Except | ast::SetOperator::Minus => {
            let width = types.len();
            let plan = union(side(left, Some((1, 0))), side(right, Some((0, 1))));
            let schema = plan.schema();
            let column = |i: usize| {
                let f = schema.field(i);
                Expr::column(i, f.name(), f.data_type().clone())
            };
            let group: Vec<Expr> = (0..width).map(column).collect();
            let aggregates: Vec<AggregateCall> = [width, width + 1]
                .into_iter()
                .map(|i| AggregateCall {
                    func: AggregateFunction::Max,
                    arg: Some(column(i)),
                    data_type: DataType::Int32,
                    separator: None,
                    order: Vec::new(),
                    filter: None,
                })
                .collect();
            let mut fields: Vec<Field> = schema.fields()[..width]
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new("in_left", DataType::Int32, true));
            fields.push(Field::new("in_right", DataType::Int32, true));
            let counted = LogicalPlan::Aggregate {
                input: Box::new(plan),
                group,
                aggregates,
                schema: Arc::new(Schema::new(fields)),
            };
            let flag = |i: usize, value: i32| Expr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(Expr::column(i, "flag", DataType::Int32)),
                right: Box::new(Expr::Literal(ScalarValue::Int32(value))),
            };
            let want_right = i32::from(op == ast::SetOperator::Intersect);
            let predicate = Expr::and_all(vec![flag(width, 1), flag(width + 1, want_right)])
                .expect("two conditions");
            let kept = LogicalPlan::Filter {
                input: Box::new(counted),
                predicate,
            };
            let exprs = (0..width)
                .map(|i| Expr::column(i, &names[i], types[i].clone()))
                .collect();
            Ok(kept.project(exprs, names))
        }
    }
}

/// `plan` with one more column: each row's number among the rows equal to it.
fn number_duplicates(plan: LogicalPlan) -> LogicalPlan {
    let schema = plan.schema();
    let partition_by = Expr::columns_of(&schema);
    let number = WindowExpr {
        func: WindowFunction::RowNumber,
        args: Vec::new(),
        partition_by,
        order_by: Vec::new(),
        frame: Frame::rows(FrameBound::UnboundedPreceding, FrameBound::CurrentRow),
        data_type: DataType::Int64,
        ignore_nulls: false,
    };
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("copy", DataType::Int64, true));
    LogicalPlan::Window {
        input: Box::new(plan),
        exprs: vec![number],
        schema: Arc::new(Schema::new(fields)),
    }
}

/// Rows of `plan` with duplicates removed: an aggregation on every column.
pub(super) fn distinct_rows(plan: LogicalPlan) -> LogicalPlan {
    let schema = plan.schema();
    let group = Expr::columns_of(&schema);
    LogicalPlan::Aggregate {
        input: Box::new(plan),
        group,
        aggregates: Vec::new(),
        schema,
    }
}
