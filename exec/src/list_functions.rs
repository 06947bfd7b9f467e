//! DuckDB's list functions over list arrays: `list_concat`, `list_contains`, `list_position`,
//! `list_reverse`, `list_sort` and `list_distinct`. Each reshaping one picks, per row, the
//! indexes of the elements it keeps, and takes them; values are compared in Arrow's row format,
//! so every element type (lists of lists included) works alike.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{SortOptions, concat, take};
use arrow::datatypes::{DataType, FieldRef};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_planner::ListOp;

use crate::{ExecError, Result};

pub(crate) fn item_field(list: &ArrayRef) -> Result<FieldRef> {
    match list.data_type() {
        DataType::List(field) => Ok(field.clone()),
        other => Err(ExecError::Execution(format!(
            "a list function over {other}"
        ))),
    }
}

pub(crate) fn bounds(list: &ListArray, row: usize) -> std::ops::Range<usize> {
    let offsets = list.value_offsets();
    offsets[row] as usize..offsets[row + 1] as usize
}

/// The lists made of `picks[row]` (indexes into `values`) for each valid row.
pub(crate) fn build(
    field: FieldRef,
    values: &ArrayRef,
    picks: Vec<Option<Vec<u32>>>,
) -> Result<ArrayRef> {
    let mut offsets = Vec::with_capacity(picks.len() + 1);
    offsets.push(0i32);
    let mut indexes = Vec::new();
    let mut valid = Vec::with_capacity(picks.len());
    for pick in picks {
        valid.push(pick.is_some());
        indexes.extend(pick.unwrap_or_default());
        let end = i32::try_from(indexes.len())
            .map_err(|_| ExecError::Execution("a list result is too large".into()))?;
        offsets.push(end);
    }
    let values = take(values, &UInt32Array::from(indexes), None)?;
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

fn rows_of(values: &ArrayRef, options: SortOptions) -> Result<Rows> {
    let field = SortField::new_with_options(values.data_type().clone(), options);
    let converter = RowConverter::new(vec![field])?;
    Ok(converter.convert_columns(std::slice::from_ref(values))?)
}

/// `op` over the argument arrays (lists first).
pub fn list_function(op: ListOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    match op {
        ListOp::Concat => list_concat(&args[0], &args[1]),
        ListOp::Contains | ListOp::Position => find(op, &args[0], &args[1]),
        ListOp::Reverse => reshape(&args[0], SortOptions::default(), |range, _| {
            range.rev().map(|i| i as u32).collect()
        }),
        ListOp::Sort {
            descending,
            nulls_first,
        } => {
            let options = SortOptions {
                descending,
                nulls_first,
            };
            reshape(&args[0], options, |range, rows| {
                let mut picked: Vec<u32> = range.map(|i| i as u32).collect();
                picked.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
                picked
            })
        }
        ListOp::Slice => crate::list_picks::slice(args),
        ListOp::Select => crate::list_picks::select_or_where(args, false),
        ListOp::Where => crate::list_picks::select_or_where(args, true),
        ListOp::Resize => crate::list_picks::resize(args),
        ListOp::Flatten => crate::list_picks::flatten(&args[0]),
        ListOp::HasAny => crate::list_picks::has(args, false),
        ListOp::HasAll => crate::list_picks::has(args, true),
        ListOp::Intersect => crate::list_picks::intersect(args),
        ListOp::Zip => crate::list_picks::zip(args),
        // Each value once, where it first comes; NULLs left out, as in DuckDB.
        ListOp::Distinct => {
            let valid = args[0].as_list::<i32>().values().logical_nulls();
            reshape(&args[0], SortOptions::default(), |range, rows| {
                let mut seen = std::collections::HashSet::new();
                range
                    .filter(|&i| valid.as_ref().is_none_or(|nulls| nulls.is_valid(i)))
                    .filter(|&i| seen.insert(rows.row(i).as_ref().to_vec()))
                    .map(|i| i as u32)
                    .collect()
            })
        }
    }
}

/// Each list's elements, picked in `pick`'s order from their range, given their rows.
fn reshape(
    lists: &ArrayRef,
    options: SortOptions,
    pick: impl Fn(std::ops::Range<usize>, &Rows) -> Vec<u32>,
) -> Result<ArrayRef> {
    let field = item_field(lists)?;
    let list = lists.as_list::<i32>();
    let values = list.values();
    let rows = rows_of(values, options)?;
    let picks = (0..list.len())
        .map(|row| list.is_valid(row).then(|| pick(bounds(list, row), &rows)))
        .collect();
    build(field, values, picks)
}

/// `list_concat(a, b)`: a NULL list counts as empty; NULL when both are.
fn list_concat(left: &ArrayRef, right: &ArrayRef) -> Result<ArrayRef> {
    let field = item_field(left)?;
    let (a, b) = (left.as_list::<i32>(), right.as_list::<i32>());
    let values = concat(&[a.values().as_ref(), b.values().as_ref()])?;
    let shift = a.values().len();
    let picks = (0..a.len())
        .map(|row| {
            if a.is_null(row) && b.is_null(row) {
                return None;
            }
            let mut picked: Vec<u32> = Vec::new();
            if a.is_valid(row) {
                picked.extend(bounds(a, row).map(|i| i as u32));
            }
            if b.is_valid(row) {
                picked.extend(bounds(b, row).map(|i| (i + shift) as u32));
            }
            Some(picked)
        })
        .collect();
    build(field, &values, picks)
}

/// `list_contains(l, x)`: whether an element equals `x`; `list_position(l, x)`: the first
/// such element's place from 1, NULL when none does. NULL for a NULL list or `x`.
fn find(op: ListOp, lists: &ArrayRef, needles: &ArrayRef) -> Result<ArrayRef> {
    let list = lists.as_list::<i32>();
    let values = list.values();
    let field = SortField::new(values.data_type().clone());
    let converter = RowConverter::new(vec![field])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let needle_rows = converter.convert_columns(std::slice::from_ref(needles))?;
    let found = (0..list.len()).map(|row| {
        if list.is_null(row) || needles.is_null(row) {
            return None;
        }
        let needle = needle_rows.row(row);
        let range = bounds(list, row);
        let start = range.start;
        Some(
            range
                .filter(|&i| values.is_valid(i))
                .find(|&i| rows.row(i) == needle)
                .map(|i| i - start),
        )
    });
    Ok(match op {
        ListOp::Contains => Arc::new(
            found
                .map(|f| f.map(|at| at.is_some()))
                .collect::<BooleanArray>(),
        ),
        _ => Arc::new(
            found
                .map(|f| f.flatten().map(|at| at as i64 + 1))
                .collect::<Int64Array>(),
        ),
    })
}
