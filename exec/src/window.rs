//! Window functions: all input rows are gathered, sorted by partition and order keys, and each
//! function is computed partition by partition; values go back to the rows they belong to.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, UInt32Array, new_empty_array,
    new_null_array,
};
use arrow::compute::{SortColumn, SortOptions, concat, concat_batches, lexsort_to_indices, take};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_planner::{
    AggregateCall, AggregateFunction, Expr, FrameBound, WindowExpr, WindowFunction,
};

use crate::Result;
use crate::aggregate::HashAggregateSink;
use crate::expr::{evaluate, evaluate_all};

/// The input rows with one column per window function appended.
pub fn compute_windows(
    input_schema: &SchemaRef,
    batches: &[RecordBatch],
    exprs: &[WindowExpr],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let all = concat_batches(input_schema, batches)?;
    let mut columns = all.columns().to_vec();
    for window in exprs {
        columns.push(compute(&all, window)?);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(all.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Encodes key columns so rows compare by bytes.
fn keys(columns: &[ArrayRef]) -> Result<Option<Rows>> {
    if columns.is_empty() {
        return Ok(None);
    }
    let fields = columns
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    Ok(Some(RowConverter::new(fields)?.convert_columns(columns)?))
}

fn same(rows: &Option<Rows>, a: usize, b: usize) -> bool {
    rows.as_ref().is_none_or(|r| r.row(a) == r.row(b))
}

fn compute(all: &RecordBatch, window: &WindowExpr) -> Result<ArrayRef> {
    let n = all.num_rows();
    if n == 0 {
        return Ok(new_empty_array(&window.data_type));
    }
    let partition = evaluate_all(&window.partition_by, all)?;
    let order = window
        .order_by
        .iter()
        .map(|k| evaluate(&k.expr, all))
        .collect::<Result<Vec<_>>>()?;
    let mut sort_columns: Vec<SortColumn> = partition
        .iter()
        .map(|values| SortColumn {
            values: values.clone(),
            options: Some(SortOptions::default()),
        })
        .collect();
    for (values, key) in order.iter().zip(&window.order_by) {
        sort_columns.push(SortColumn {
            values: values.clone(),
            options: Some(SortOptions {
                descending: key.descending,
                nulls_first: key.nulls_first,
            }),
        });
    }
    let indices = if sort_columns.is_empty() {
        UInt32Array::from_iter_values(0..n as u32)
    } else {
        lexsort_to_indices(&sort_columns, None)?
    };
    let sorted = |columns: &[ArrayRef]| -> Result<Vec<ArrayRef>> {
        Ok(columns
            .iter()
            .map(|c| take(c, &indices, None))
            .collect::<Result<Vec<_>, _>>()?)
    };
    let partition_rows = keys(&sorted(&partition)?)?;
    let order_rows = keys(&sorted(&order)?)?;
    let args = evaluate_all(&window.args, all)?;
    let args = sorted(&args)?;

    // Results in sorted order, one array piece per partition.
    let mut pieces: Vec<ArrayRef> = Vec::new();
    let mut start = 0;
    while start < n {
        crate::control::check_current()?;
        let mut end = start + 1;
        while end < n && same(&partition_rows, start, end) {
            end += 1;
        }
        pieces.push(partition_values(window, &args, &order_rows, start, end)?);
        start = end;
    }
    let refs: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
    let in_sorted_order = concat(&refs)?;
    // Back to input order: the value at sorted position i belongs to input row indices[i].
    let mut inverse = vec![0u32; n];
    for (position, row) in indices.values().iter().enumerate() {
        inverse[*row as usize] = position as u32;
    }
    Ok(take(&in_sorted_order, &UInt32Array::from(inverse), None)?)
}

/// One partition's values, rows `start..end` of the sorted input.
fn partition_values(
    window: &WindowExpr,
    args: &[ArrayRef],
    order: &Option<Rows>,
    start: usize,
    end: usize,
) -> Result<ArrayRef> {
    let len = end - start;
    // The first position of each row's peer group, and the number of groups so far.
    let mut peer_start = vec![0usize; len];
    let mut peer_end = vec![0usize; len];
    let mut dense = vec![0i64; len];
    let mut group_first = start;
    let mut groups = 0;
    for p in start..end {
        if p == start || !same(order, p - 1, p) {
            group_first = p;
            groups += 1;
        }
        peer_start[p - start] = group_first;
        dense[p - start] = groups;
    }
    let mut group_last = end;
    for p in (start..end).rev() {
        if p + 1 < end && !same(order, p, p + 1) {
            group_last = p + 1;
        }
        peer_end[p - start] = group_last;
    }
    match window.func {
        WindowFunction::RowNumber => Ok(Arc::new(Int64Array::from_iter_values(1..=len as i64))),
        WindowFunction::Rank => Ok(Arc::new(Int64Array::from_iter_values(
            peer_start.iter().map(|s| (s - start + 1) as i64),
        ))),
        WindowFunction::DenseRank => Ok(Arc::new(Int64Array::from(dense))),
        WindowFunction::Lag | WindowFunction::Lead => {
            let values = &args[0];
            let offset = args[1]
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("offset is BIGINT")
                .value(0) as usize;
            let default = &args[2];
            // Index into `values`, or into `default` (shifted past `values`) when out of range.
            let combined = concat(&[values.as_ref(), default.as_ref()])?;
            let n = values.len();
            let picks: UInt32Array = (start..end)
                .map(|p| {
                    let source = if window.func == WindowFunction::Lag {
                        p.checked_sub(offset).filter(|s| *s >= start)
                    } else {
                        Some(p + offset).filter(|s| *s < end)
                    };
                    Some(source.unwrap_or(n + p) as u32)
                })
                .collect();
            Ok(take(&combined, &picks, None)?)
        }
        WindowFunction::Aggregate(func) => {
            let mut values = Vec::with_capacity(len);
            let mut last: Option<((usize, usize), ArrayRef)> = None;
            for p in start..end {
                // Frames are recomputed per row: a long partition is a long loop.
                if (p - start) % 1024 == 1023 {
                    crate::control::check_current()?;
                }
                let frame = frame_of(
                    window,
                    p,
                    start,
                    end,
                    peer_start[p - start],
                    peer_end[p - start],
                );
                let value = match &last {
                    Some((f, v)) if *f == frame => v.clone(),
                    _ => aggregate(func, args.first(), frame, &window.data_type)?,
                };
                last = Some((frame, value.clone()));
                values.push(value);
            }
            let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
            Ok(concat(&refs)?)
        }
    }
}

/// The rows `[from, to)` the frame of row `p` covers.
fn frame_of(
    window: &WindowExpr,
    p: usize,
    start: usize,
    end: usize,
    peers_from: usize,
    peers_to: usize,
) -> (usize, usize) {
    let frame = window.frame;
    let from = match frame.start {
        FrameBound::UnboundedPreceding => start,
        FrameBound::Preceding(k) => p.saturating_sub(k as usize).max(start),
        FrameBound::CurrentRow if frame.rows => p,
        FrameBound::CurrentRow => peers_from,
        FrameBound::Following(k) => (p + k as usize).min(end),
        FrameBound::UnboundedFollowing => end,
    };
    let to = match frame.end {
        FrameBound::UnboundedPreceding => start,
        FrameBound::Preceding(k) => (p + 1).saturating_sub(k as usize).max(start),
        FrameBound::CurrentRow if frame.rows => p + 1,
        FrameBound::CurrentRow => peers_to,
        FrameBound::Following(k) => (p + 1 + k as usize).min(end),
        FrameBound::UnboundedFollowing => end,
    };
    (from, to.max(from))
}

/// An aggregate over rows `[from, to)` of the sorted argument, as a one-row array.
fn aggregate(
    func: AggregateFunction,
    arg: Option<&ArrayRef>,
    (from, to): (usize, usize),
    data_type: &arrow::datatypes::DataType,
) -> Result<ArrayRef> {
    let (call, batch) = match arg {
        Some(arg) => {
            let schema = Arc::new(Schema::new(vec![Field::new(
                "arg",
                arg.data_type().clone(),
                true,
            )]));
            let call = AggregateCall {
                func,
                arg: Some(Expr::column(0, "arg", arg.data_type().clone())),
                data_type: data_type.clone(),
                separator: None,
                order: Vec::new(),
                filter: None,
            };
            let batch = RecordBatch::try_new(schema, vec![arg.slice(from, to - from)])?;
            (call, batch)
        }
        None => {
            let schema = Arc::new(Schema::empty());
            let call = AggregateCall {
                func,
                arg: None,
                data_type: data_type.clone(),
                separator: None,
                order: Vec::new(),
                filter: None,
            };
            let options = RecordBatchOptions::new().with_row_count(Some(to - from));
            let batch = RecordBatch::try_new_with_options(schema, vec![], &options)?;
            (call, batch)
        }
    };
    let out_schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        data_type.clone(),
        true,
    )]));
    let mut sink = HashAggregateSink::new(&[], &[call], out_schema)?;
    if to > from {
        sink.sink(&batch)?;
    }
    // Ungrouped: one batch of one row.
    let result = sink.finish()?.remove(0);
    let value = result.column(0).clone();
    if value.is_empty() {
        return Ok(new_null_array(data_type, 1));
    }
    Ok(value)
}
