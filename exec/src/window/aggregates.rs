//! Aggregates over frames: each function and argument type goes to the cheapest driver its
//! state allows (`drivers.rs`), `array_agg` gathers its lists directly, and any aggregate
//! without a frame state here is recomputed by the hash aggregation per distinct frame.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, new_null_array};
use arrow::compute::{concat, take};
use arrow::datatypes::{DataType, Field, Schema};
use pondra_planner::{AggregateCall, AggregateFunction, Expr};

use super::drivers::{running, sliding, tree};
use super::extremes::{Extreme, Moments};
use super::frames::Frames;
use super::states::{Counting, DistinctCount, Mergeable};
use super::sums::{ExactSum, FloatSum};
use super::values::frame_lists;
use crate::Result;
use crate::aggregate::HashAggregateSink;

/// The aggregate `func` of `arg` (none for `count(*)`) over every sorted row's frame.
pub(super) fn values(
    func: AggregateFunction,
    arg: Option<&ArrayRef>,
    data_type: &DataType,
    frames: &Frames<'_>,
) -> Result<ArrayRef> {
    use AggregateFunction as F;
    let Some(values) = arg else {
        return match func {
            F::CountStar => sliding(&Counting::rows(), frames),
            _ => recomputed(func, arg, data_type, frames),
        };
    };
    match func {
        F::CountStar => sliding(&Counting::rows(), frames),
        F::Count => sliding(&Counting::values(values), frames),
        F::Sum | F::Avg => {
            if let Some(sum) = ExactSum::new(func, values, data_type)? {
                return sliding(&sum, frames);
            }
            match FloatSum::new(func, values, data_type) {
                Some(sum) => growing_or_tree(&sum, frames),
                None => recomputed(func, arg, data_type, frames),
            }
        }
        F::Min | F::Max if values.data_type() == data_type => {
            growing_or_tree(&Extreme::new(values, func == F::Max)?, frames)
        }
        F::VarPop | F::VarSamp | F::StddevPop | F::StddevSamp
            if data_type == &DataType::Float64 =>
        {
            growing_or_tree(&Moments::new(values, func)?, frames)
        }
        F::CountDistinct => sliding(&DistinctCount::new(values)?, frames),
        F::ArrayAgg => frame_lists(values, frames, data_type),
        _ => recomputed(func, arg, data_type, frames),
    }
}

/// An aggregate no row can be taken out of: grown along running frames, else from a tree.
fn growing_or_tree<A: Mergeable>(agg: &A, frames: &Frames<'_>) -> Result<ArrayRef> {
    match frames.starts_at_partition && frames.excludes_nothing() {
        true => running(agg, frames),
        false => tree(agg, frames),
    }
}

/// Any other aggregate: the hash aggregation over each row's frame, reused while frames
/// repeat (as they do for peers, and over whole partitions). Costs each distinct frame's
/// rows, so a running frame is quadratic; the aggregates above avoid this.
fn recomputed(
    func: AggregateFunction,
    arg: Option<&ArrayRef>,
    data_type: &DataType,
    frames: &Frames<'_>,
) -> Result<ArrayRef> {
    let mut values: Vec<ArrayRef> = Vec::with_capacity(frames.rows());
    let mut last: Option<([Range<usize>; 3], ArrayRef)> = None;
    for row in 0..frames.rows() {
        if row % 1024 == 1023 {
            crate::control::check_current()?;
        }
        let pieces = frames.pieces(row);
        let value = match &last {
            Some((previous, value)) if *previous == pieces => value.clone(),
            _ => aggregate_rows(func, arg, &pieces, data_type)?,
        };
        last = Some((pieces, value.clone()));
        values.push(value);
    }
    let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
    Ok(concat(&refs)?)
}

/// An aggregate over the rows `pieces` of the sorted argument, as a one-row array.
fn aggregate_rows(
    func: AggregateFunction,
    arg: Option<&ArrayRef>,
    pieces: &[Range<usize>; 3],
    data_type: &DataType,
) -> Result<ArrayRef> {
    let rows: Vec<u32> = pieces
        .iter()
        .flat_map(|p| p.start as u32..p.end as u32)
        .collect();
    let (schema, columns, arg_expr) = match arg {
        Some(arg) => {
            let field = Field::new("arg", arg.data_type().clone(), true);
            let column = take(arg, &UInt32Array::from(rows.clone()), None)?;
            let expr = Expr::column(0, "arg", arg.data_type().clone());
            (Schema::new(vec![field]), vec![column], Some(expr))
        }
        None => (Schema::empty(), Vec::new(), None),
    };
    let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    let batch = RecordBatch::try_new_with_options(Arc::new(schema), columns, &options)?;
    let call = AggregateCall {
        func,
        arg: arg_expr,
        data_type: data_type.clone(),
        separator: None,
        order: Vec::new(),
        filter: None,
    };
    let out_schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        data_type.clone(),
        true,
    )]));
    let mut sink = HashAggregateSink::new(&[], &[call], out_schema)?;
    if !rows.is_empty() {
        sink.sink(&batch)?;
    }
    // Ungrouped: one batch of one row.
    let value = match sink.finish()?.into_iter().next() {
        Some(result) => result.column(0).clone(),
        None => return Ok(new_null_array(data_type, 1)),
    };
    if value.is_empty() {
        return Ok(new_null_array(data_type, 1));
    }
    Ok(value)
}
