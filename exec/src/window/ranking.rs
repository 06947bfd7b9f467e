//! The window functions that see the whole partition rather than a frame: numbering and
//! ranking rows, splitting them into buckets, and reading the rows `offset` away.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, UInt32Array};
use arrow::compute::{cast, concat, take};
use arrow::datatypes::{DataType, Int64Type};
use pondra_planner::WindowFunction;

use super::Layout;
use crate::{ExecError, Result};

/// The values of `func` for every sorted row.
pub(super) fn values(
    func: WindowFunction,
    args: &[ArrayRef],
    layout: &Layout,
    ignore_nulls: bool,
) -> Result<ArrayRef> {
    let per_row = |value: &dyn Fn(usize, &std::ops::Range<usize>) -> i64| {
        let mut out = Vec::with_capacity(layout.rows());
        for partition in &layout.partitions {
            out.extend(partition.clone().map(|row| value(row, partition)));
        }
        Arc::new(Int64Array::from(out)) as ArrayRef
    };
    let fractions = |value: &dyn Fn(usize, &std::ops::Range<usize>) -> f64| {
        let mut out = Vec::with_capacity(layout.rows());
        for partition in &layout.partitions {
            out.extend(partition.clone().map(|row| value(row, partition)));
        }
        Arc::new(Float64Array::from(out)) as ArrayRef
    };
    let rank = |row: usize, partition: &std::ops::Range<usize>| {
        layout.peers(row).start - partition.start + 1
    };
    Ok(match func {
        WindowFunction::RowNumber => per_row(&|row, partition| (row - partition.start + 1) as i64),
        WindowFunction::Rank => per_row(&|row, partition| rank(row, partition) as i64),
        WindowFunction::DenseRank => per_row(&|row, partition| {
            (layout.group(row) - layout.group(partition.start) + 1) as i64
        }),
        WindowFunction::PercentRank => fractions(&|row, partition| match partition.len() {
            1 => 0.0,
            rows => (rank(row, partition) - 1) as f64 / (rows - 1) as f64,
        }),
        WindowFunction::CumeDist => fractions(&|row, partition| {
            (layout.peers(row).end - partition.start) as f64 / partition.len() as f64
        }),
        WindowFunction::Ntile => buckets(argument(args, 0)?, layout)?,
        WindowFunction::Lag | WindowFunction::Lead => {
            offset_values(func, args, layout, ignore_nulls)?
        }
        other => {
            return Err(ExecError::Execution(format!("{other:?} reads a frame")));
        }
    })
}

fn argument(args: &[ArrayRef], index: usize) -> Result<&ArrayRef> {
    args.get(index)
        .ok_or_else(|| ExecError::Execution(format!("a window function lacks argument {index}")))
}

/// `ntile(n)`: each partition's rows in `n` buckets as even as can be, the larger first. As
/// in PostgreSQL, `n` is read at the partition's first row.
fn buckets(count: &ArrayRef, layout: &Layout) -> Result<ArrayRef> {
    let count = cast(count, &DataType::Int64)?;
    let count = count.as_primitive::<Int64Type>();
    let mut out: Vec<Option<i64>> = Vec::with_capacity(layout.rows());
    for partition in &layout.partitions {
        let rows = partition.len() as i64;
        if count.is_null(partition.start) {
            out.extend(partition.clone().map(|_| None));
            continue;
        }
        let buckets = count.value(partition.start);
        if buckets <= 0 {
            return Err(ExecError::Execution(
                "argument of ntile must be greater than zero".into(),
            ));
        }
        // The first `larger` buckets hold one row more than the others.
        let (size, larger) = (rows / buckets, rows % buckets);
        let in_larger = larger * (size + 1);
        out.extend((0..rows).map(|i| {
            Some(match i < in_larger {
                true => i / (size + 1) + 1,
                false => larger + (i - in_larger) / size + 1,
            })
        }));
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// `lag(x, offset, default)` and `lead`: the value `offset` rows before or after in the
/// partition (a negative offset looks the other way), the row's default where there is no
/// such row, and NULL where the offset is NULL. The offset may differ by row.
fn offset_values(
    func: WindowFunction,
    args: &[ArrayRef],
    layout: &Layout,
    ignore_nulls: bool,
) -> Result<ArrayRef> {
    let values = argument(args, 0)?;
    let offsets = cast(argument(args, 1)?, &DataType::Int64)?;
    let offsets = offsets.as_primitive::<Int64Type>();
    let n = values.len();
    if offsets.len() != n && offsets.len() != 1 {
        return Err(ExecError::Execution(format!(
            "{func:?} needs an offset per row"
        )));
    }
    let offset_at = |row: usize| match offsets.len() {
        1 => offsets.is_valid(0).then(|| offsets.value(0)),
        _ => offsets.is_valid(row).then(|| offsets.value(row)),
    };
    let default = argument(args, 2)?;
    // Index into `values`, into `default` (shifted past `values`) when out of range, or at
    // the NULL after both for a NULL offset.
    let null = arrow::array::new_null_array(values.data_type(), 1);
    let combined = concat(&[values.as_ref(), default.as_ref(), null.as_ref()])?;
    let null_pick = (n + default.len()) as u32;
    // With IGNORE NULLS the offset counts only the rows holding a value.
    let present = ignore_nulls.then(|| super::values::Present::new(values));
    let mut picks = Vec::with_capacity(n);
    for partition in &layout.partitions {
        for row in partition.clone() {
            let Some(offset) = offset_at(row) else {
                picks.push(null_pick);
                continue;
            };
            let step = match func {
                WindowFunction::Lag => offset.checked_neg(),
                _ => Some(offset),
            };
            let source = match (&present, step) {
                (Some(present), Some(step)) => present.stepped(row, step, partition),
                _ => step
                    .and_then(|step| (row as i64).checked_add(step))
                    .and_then(|source| usize::try_from(source).ok())
                    .filter(|source| partition.contains(source)),
            };
            let fallback = match default.len() {
                1 => n,
                _ => n + row,
            };
            picks.push(source.unwrap_or(fallback) as u32);
        }
    }
    Ok(take(&combined, &UInt32Array::from(picks), None)?)
}
