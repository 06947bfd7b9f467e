//! `fill(x) OVER (ORDER BY k)` (DuckDB): each NULL `x` replaced by the value the line through
//! the nearest known points gives at its `k`. A known point is a row whose `x` and `k` are both
//! set and finite; the line runs through the known points just before and just after the row,
//! or, at either end of the partition, the two nearest on the one side (one point alone is a
//! constant). Rows whose `k` is NULL or not finite are left as they are.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::compute::{cast, is_not_null, kernels::zip::zip};
use arrow::datatypes::{DataType, Float64Type};

use super::Layout;
use crate::Result;

/// The filled values of `values` for every sorted row, along the single key `order`: the
/// window's own (the rows' order) or, with `reorder`, a key of the call's own, along which
/// each partition's rows are first sorted.
pub(super) fn values(
    values: &ArrayRef,
    order: &ArrayRef,
    layout: &Layout,
    reorder: bool,
) -> Result<ArrayRef> {
    if values.null_count() == 0 {
        return Ok(values.clone());
    }
    let x = as_numbers(values)?;
    let k = as_numbers(order)?;
    let x = x.as_primitive::<Float64Type>();
    let k = k.as_primitive::<Float64Type>();
    let point = |row: usize| -> Option<(f64, f64)> {
        let (key, value) = (
            k.is_valid(row).then(|| k.value(row))?,
            x.is_valid(row).then(|| x.value(row))?,
        );
        (key.is_finite() && value.is_finite()).then_some((key, value))
    };
    let mut filled: Vec<Option<f64>> = vec![None; layout.rows()];
    for partition in &layout.partitions {
        let mut sequence: Vec<usize> = partition.clone().collect();
        if reorder {
            // Rows without a key are not filled, and go last.
            let key = |row: usize| match k.is_valid(row) {
                true => k.value(row),
                false => f64::NAN,
            };
            sequence.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
        }
        // Positions in `sequence` of the known points.
        let known: Vec<usize> = (0..sequence.len())
            .filter(|&at| point(sequence[at]).is_some())
            .collect();
        // The index in `known` of the first known point after the row being filled.
        let mut next = 0;
        for (at, &row) in sequence.iter().enumerate() {
            while next < known.len() && known[next] <= at {
                next += 1;
            }
            if x.is_valid(row) || k.is_null(row) || !k.value(row).is_finite() {
                continue;
            }
            let around = match (next, known.len() - next) {
                (0, 0) => None,
                (0, 1) | (1, 0) => known.get(next.saturating_sub(1)).map(|&a| (a, a)),
                (0, _) => Some((known[0], known[1])),
                (before, 0) => Some((known[before - 2], known[before - 1])),
                (before, _) => Some((known[before - 1], known[before])),
            };
            filled[row] = around.map(|(a, b)| {
                let (a, b) = (sequence[a], sequence[b]);
                let (a, b) = (point(a).expect("known"), point(b).expect("known"));
                on_line(a, b, k.value(row))
            });
        }
    }
    let filled: ArrayRef = Arc::new(Float64Array::from(filled));
    let filled = back_to(&filled, values.data_type())?;
    Ok(zip(&is_not_null(values)?, values, &filled)?)
}

/// The value at `key` on the line through points `a` and `b` (`a` itself when the two share a
/// key).
fn on_line((key_a, value_a): (f64, f64), (key_b, value_b): (f64, f64), key: f64) -> f64 {
    if key_a == key_b {
        return value_a;
    }
    // Halved first, so that keys across most of a DOUBLE's range do not overflow.
    let share = (key / 2.0 - key_a / 2.0) / (key_b / 2.0 - key_a / 2.0);
    value_a + (value_b / 2.0 - value_a / 2.0) * 2.0 * share
}

/// Values or keys as DOUBLEs: numbers as they are, dates as days and timestamps as their
/// ticks.
fn as_numbers(array: &ArrayRef) -> Result<ArrayRef> {
    let ticks = match array.data_type() {
        DataType::Date32 => cast(array, &DataType::Int32)?,
        DataType::Timestamp(_, _) => cast(array, &DataType::Int64)?,
        _ => array.clone(),
    };
    Ok(cast(&ticks, &DataType::Float64)?)
}

/// Filled DOUBLEs in the values' type, rounded to whole numbers for integers as a cast rounds;
/// a value the type cannot hold stays NULL.
fn back_to(filled: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    let through = match data_type {
        DataType::Date32 => Some(DataType::Int32),
        DataType::Timestamp(_, _) => Some(DataType::Int64),
        _ => None,
    };
    Ok(match through {
        Some(ticks) => cast(&crate::casts::cast(filled, &ticks, true)?, data_type)?,
        None => crate::casts::cast(filled, data_type, true)?,
    })
}
