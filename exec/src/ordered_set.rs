//! The picks of ordered-set aggregates (`median`, `percentile_cont`, `percentile_disc`,
//! `mode`, `entropy`, `mad`) from each group's sorted non-NULL values, which an ordered `array_agg` gathered,
//! and `array_agg(DISTINCT ...)`'s pass over its sorted values.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Float64Type};
use arrow::row::{RowConverter, SortField};

use crate::Result;

/// Per row, the value at `fraction` of the sorted list: interpolated when `continuous`, else
/// the first whose place is at least the fraction; NULL for an empty or NULL list.
pub fn quantile(lists: &ArrayRef, fractions: &ArrayRef, continuous: bool) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let fractions = fractions.as_primitive::<Float64Type>();
    let bounds = |row: usize| {
        let offsets = lists.value_offsets();
        (offsets[row] as usize, offsets[row + 1] as usize)
    };
    if continuous {
        let values = cast(lists.values(), &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        let picked: Float64Array = (0..lists.len())
            .map(|row| {
                let (start, end) = bounds(row);
                if lists.is_null(row) || start == end || fractions.is_null(row) {
                    return None;
                }
                let place = fractions.value(row) * (end - start - 1) as f64;
                let (below, above) = (place.floor() as usize, place.ceil() as usize);
                let (low, high) = (values.value(start + below), values.value(start + above));
                Some(low + (high - low) * (place - below as f64))
            })
            .collect();
        return Ok(Arc::new(picked));
    }
    let indices: UInt32Array = (0..lists.len())
        .map(|row| {
            let (start, end) = bounds(row);
            if lists.is_null(row) || start == end || fractions.is_null(row) {
                return None;
            }
            let count = end - start;
            let place = (fractions.value(row) * count as f64).ceil() as usize;
            Some((start + place.clamp(1, count) - 1) as u32)
        })
        .collect();
    Ok(take(lists.values(), &indices, None)?)
}

/// Per row, the most frequent value of the sorted list (the first of equally frequent ones).
pub fn mode(lists: &ArrayRef) -> Result<ArrayRef> {
    pick_per_list(lists, |range, rows| {
        let (mut best, mut best_count) = (range.start, 0);
        let mut run_start = range.start;
        for i in range.clone() {
            if i + 1 == range.end || rows.row(i + 1) != rows.row(run_start) {
                if i + 1 - run_start > best_count {
                    (best, best_count) = (run_start, i + 1 - run_start);
                }
                run_start = i + 1;
            }
        }
        best
    })
}

/// Per row, the most frequent value of the list, of equally frequent ones the first in it;
/// NULL for a NULL or empty list.
pub fn mode_in_order(lists: &ArrayRef) -> Result<ArrayRef> {
    pick_per_list(lists, |range, rows| {
        // Each distinct value's count and first place.
        let mut seen: hashbrown::HashMap<&[u8], (usize, usize)> = hashbrown::HashMap::new();
        for i in range {
            seen.entry(rows.row(i).data()).or_insert((0, i)).0 += 1;
        }
        let (_, first) = seen
            .values()
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .expect("a value");
        *first
    })
}

/// Per row, the value of the list that `pick` chooses by its place among the list's values
/// (given as their rows, to compare); NULL for a NULL or empty list.
fn pick_per_list(
    lists: &ArrayRef,
    pick: impl Fn(std::ops::Range<usize>, &arrow::row::Rows) -> usize,
) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let values = lists.values();
    let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let offsets = lists.value_offsets();
    let indices: UInt32Array = (0..lists.len())
        .map(|row| {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if lists.is_null(row) || start == end {
                return None;
            }
            let chosen = pick(start..end, &rows);
            debug_assert!((start..end).contains(&chosen), "a value of the list");
            Some(chosen as u32)
        })
        .collect();
    Ok(take(values.as_ref(), &indices, None)?)
}

/// Per row, the `k` most frequent values of the sorted list (see `ScalarFunction::SortedTopK`),
/// as a list; NULL for a NULL or empty list.
pub fn top_k(lists: &ArrayRef, k: &ArrayRef) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let values = lists.values();
    let k = k.as_primitive::<arrow::datatypes::Int64Type>();
    let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let offsets = lists.value_offsets();
    let (mut picks, mut lengths, mut valid) = (Vec::new(), Vec::new(), Vec::new());
    for row in 0..lists.len() {
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        let wanted = if k.len() == 1 {
            k.value(0)
        } else {
            k.value(row)
        };
        if lists.is_null(row) || start == end {
            lengths.push(0);
            valid.push(false);
            continue;
        }
        // Runs of equal values, as (first index, length); sorted by length, longest first,
        // and stably, so equally frequent ones stay in value order.
        let mut runs = Vec::new();
        let mut run_start = start;
        for i in start + 1..=end {
            if i == end || rows.row(i) != rows.row(run_start) {
                runs.push((run_start, i - run_start));
                run_start = i;
            }
        }
        runs.sort_by_key(|run| std::cmp::Reverse(run.1));
        let kept = runs.len().min(wanted.max(0) as usize);
        picks.extend(runs[..kept].iter().map(|&(first, _)| first as u32));
        lengths.push(kept);
        valid.push(true);
    }
    let items = take(values.as_ref(), &UInt32Array::from(picks), None)?;
    let field = Arc::new(arrow::datatypes::Field::new(
        "item",
        values.data_type().clone(),
        true,
    ));
    Ok(Arc::new(arrow::array::ListArray::try_new(
        field,
        arrow::buffer::OffsetBuffer::from_lengths(lengths),
        items,
        Some(arrow::buffer::NullBuffer::from(valid)),
    )?))
}

/// Per row, the base-2 entropy of how often each value of the sorted list occurs: 0 for an
/// empty list, NULL for a NULL one.
pub fn entropy(lists: &ArrayRef) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let values = lists.values();
    let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let offsets = lists.value_offsets();
    let entropies: Float64Array = (0..lists.len())
        .map(|row| {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if lists.is_null(row) {
                return None;
            }
            let total = (end - start) as f64;
            let (mut entropy, mut run_start) = (0.0, start);
            for i in start..=end {
                if i == end || rows.row(i) != rows.row(run_start) {
                    if i > run_start {
                        let share = (i - run_start) as f64 / total;
                        entropy -= share * share.log2();
                    }
                    run_start = i;
                }
            }
            Some(entropy)
        })
        .collect();
    Ok(Arc::new(entropies))
}

/// Per row, the median absolute deviation of the sorted list of numbers: the median of the
/// distances from its median; NULL for an empty or NULL list.
pub fn median_absolute_deviation(lists: &ArrayRef) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let values = cast(lists.values(), &DataType::Float64)?;
    let values = values.as_primitive::<Float64Type>();
    let offsets = lists.value_offsets();
    let median = |sorted: &[f64]| {
        let middle = sorted.len() / 2;
        match sorted.len() % 2 {
            1 => sorted[middle],
            _ => sorted[middle - 1] + (sorted[middle] - sorted[middle - 1]) / 2.0,
        }
    };
    let mut distances = Vec::new();
    let deviations: Float64Array = (0..lists.len())
        .map(|row| {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if lists.is_null(row) || start == end {
                return None;
            }
            let sorted = &values.values()[start..end];
            let center = median(sorted);
            distances.clear();
            distances.extend(sorted.iter().map(|x| (x - center).abs()));
            distances.sort_unstable_by(f64::total_cmp);
            Some(median(&distances))
        })
        .collect();
    Ok(Arc::new(deviations))
}

/// Per row, the list with each run of equal elements (NULLs included) kept once.
pub fn distinct_runs(lists: &ArrayRef) -> Result<ArrayRef> {
    use arrow::array::ListArray;
    use arrow::buffer::OffsetBuffer;
    let list = lists.as_list::<i32>();
    let values = list.values();
    let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let offsets = list.value_offsets();
    let (mut kept, mut lengths) = (Vec::new(), Vec::with_capacity(list.len()));
    for row in 0..list.len() {
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        let before = kept.len();
        for i in start..end {
            if i == start || rows.row(i) != rows.row(i - 1) {
                kept.push(i as u32);
            }
        }
        lengths.push(kept.len() - before);
    }
    let items = take(values.as_ref(), &UInt32Array::from(kept), None)?;
    let field = match list.data_type() {
        DataType::List(field) => field.clone(),
        other => unreachable!("a list, not {other}"),
    };
    let offsets = OffsetBuffer::from_lengths(lengths);
    Ok(Arc::new(ListArray::try_new(
        field,
        offsets,
        items,
        list.nulls().cloned(),
    )?))
}
