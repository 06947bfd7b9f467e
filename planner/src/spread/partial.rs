//! An aggregation split into a partial aggregation per slice and a final one over the gathered
//! partials (ADR 0076): counts and sums summed, mins and maxes taken again, an average as the
//! sum of its sums over the sum of its counts.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};

use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr};
use crate::physical::PhysicalPlan;
use crate::scalar::ScalarValue;

/// Splits the hash aggregate `node` in place into a final aggregate (under a projection when
/// an average needs its division) over a partial one, its input the partial's. False, and
/// `node` unchanged, when one of its aggregates does not split.
pub(super) fn split_aggregate(node: &mut PhysicalPlan) -> bool {
    let PhysicalPlan::HashAggregate {
        input,
        group,
        aggregates,
        schema,
        ..
    } = node
    else {
        return false;
    };
    if !aggregates.iter().all(splits) {
        return false;
    }
    let group_count = group.len();
    let mut partial_calls = Vec::new();
    let mut partial_fields: Vec<Field> = schema.fields()[..group_count]
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    for call in aggregates.iter() {
        for partial in partial_of(call) {
            let name = format!("partial_{}", partial_fields.len());
            partial_fields.push(Field::new(name, partial.data_type.clone(), true));
            partial_calls.push(partial);
        }
    }
    let partial_schema = Arc::new(Schema::new(partial_fields));
    let column = |i: usize| {
        let field = partial_schema.field(i);
        Expr::column(i, field.name(), field.data_type().clone())
    };
    let partial = PhysicalPlan::HashAggregate {
        input: std::mem::replace(input, Box::new(super::cut::placeholder())),
        group: group.clone(),
        aggregates: partial_calls,
        schema: partial_schema.clone(),
        shared: None,
    };
    // The final aggregate: its groups the partial's, each partial merged.
    let final_group: Vec<Expr> = (0..group_count).map(column).collect();
    let mut merges = Vec::new();
    let mut answers = Vec::new();
    let mut next = group_count;
    for call in aggregates.iter() {
        let merged_at = group_count + merges.len();
        match call.func {
            AggregateFunction::Avg => {
                merges.push(merge(AggregateFunction::Sum, column(next), None));
                merges.push(merge(AggregateFunction::Sum, column(next + 1), None));
                answers.push(Answer::Average {
                    sum: merged_at,
                    count: merged_at + 1,
                });
                next += 2;
            }
            func => {
                let again = match func {
                    AggregateFunction::Min | AggregateFunction::Max => func,
                    _ => AggregateFunction::Sum,
                };
                merges.push(merge(again, column(next), Some(&call.data_type)));
                answers.push(Answer::Merged(merged_at));
                next += 1;
            }
        }
    }
    let original_schema = schema.clone();
    let needs_division = answers.iter().any(|a| matches!(a, Answer::Average { .. }));
    let final_schema = match needs_division {
        false => original_schema.clone(),
        true => {
            let mut fields: Vec<Field> = partial_schema.fields()[..group_count]
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            for (i, call) in merges.iter().enumerate() {
                fields.push(Field::new(
                    format!("merged_{i}"),
                    call.data_type.clone(),
                    true,
                ));
            }
            Arc::new(Schema::new(fields))
        }
    };
    let final_aggregate = PhysicalPlan::HashAggregate {
        input: Box::new(partial),
        group: final_group,
        aggregates: merges,
        schema: final_schema.clone(),
        shared: None,
    };
    *node = match needs_division {
        false => final_aggregate,
        true => {
            let merged = |i: usize| {
                let field = final_schema.field(i);
                Expr::column(i, field.name(), field.data_type().clone())
            };
            let mut exprs: Vec<Expr> = (0..group_count).map(merged).collect();
            for answer in answers {
                exprs.push(match answer {
                    Answer::Merged(i) => merged(i),
                    Answer::Average { sum, count } => average(merged(sum), merged(count)),
                });
            }
            PhysicalPlan::Projection {
                input: Box::new(final_aggregate),
                exprs,
                schema: original_schema,
            }
        }
    };
    true
}

/// What one of the original aggregates is over the final aggregate's columns.
enum Answer {
    Merged(usize),
    Average { sum: usize, count: usize },
}

/// Whether `call` splits into partials that merge to its answer.
fn splits(call: &AggregateCall) -> bool {
    if !call.order.is_empty() || call.separator.is_some() {
        return false;
    }
    let numeric = |call: &AggregateCall| {
        call.arg.as_ref().is_some_and(|arg| {
            let t = arg.data_type();
            t.is_integer()
                || t.is_floating()
                || matches!(t, DataType::Decimal64(..) | DataType::Decimal128(..))
        })
    };
    match call.func {
        AggregateFunction::CountStar
        | AggregateFunction::Count
        | AggregateFunction::Min
        | AggregateFunction::Max => true,
        AggregateFunction::Sum | AggregateFunction::Avg => numeric(call),
        _ => false,
    }
}

/// The partial aggregates `call` is computed from, over the aggregation's input rows.
fn partial_of(call: &AggregateCall) -> Vec<AggregateCall> {
    match call.func {
        AggregateFunction::Avg => {
            let arg = call.arg.clone().expect("avg has an argument");
            let sum = AggregateCall {
                filter: call.filter.clone(),
                ..AggregateCall::new(AggregateFunction::Sum, Some(arg.clone()))
            };
            let count = AggregateCall {
                filter: call.filter.clone(),
                ..AggregateCall::new(AggregateFunction::Count, Some(arg))
            };
            vec![sum, count]
        }
        _ => vec![call.clone()],
    }
}

/// `func` over a partial column; typed as `answer` says when given (the original call's type).
fn merge(func: AggregateFunction, arg: Expr, answer: Option<&DataType>) -> AggregateCall {
    let mut call = AggregateCall::new(func, Some(arg));
    if let Some(answer) = answer {
        call.data_type = answer.clone();
    }
    call
}

/// An average from its merged sum and count, divided as the one-node average divides: the sum
/// as a DOUBLE (a decimal's unscaled value over its unit), over the count; NULL over no values.
fn average(sum: Expr, count: Expr) -> Expr {
    let has_values = Expr::Binary {
        op: BinaryOp::Gt,
        left: Box::new(count.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int64(0))),
    };
    let quotient = Expr::Binary {
        op: BinaryOp::Divide,
        left: Box::new(sum.cast(&DataType::Float64)),
        right: Box::new(count.cast(&DataType::Float64)),
    };
    Expr::Case {
        branches: vec![(has_values, quotient)],
        otherwise: None,
        data_type: DataType::Float64,
    }
}
