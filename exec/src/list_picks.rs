//! DuckDB's list functions that pick elements by place or by another list: `list_slice`
//! (also over text), `list_select`, `list_where`, `list_resize`, `flatten`, `list_has_any`,
//! `list_has_all` and `list_intersect`.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, ListArray, StringArray, StructArray, UInt32Array,
};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{concat, take};
use arrow::datatypes::{DataType, Field, Int64Type};
use arrow::row::{RowConverter, Rows, SortField};

use crate::list_functions::{bounds, build, item_field};
use crate::{ExecError, Result};

fn fail(message: impl Into<String>) -> ExecError {
    ExecError::Execution(message.into())
}

/// The places (from 0) `list_slice(x, begin, end, step)` takes from a value of `length`
/// elements: begin and end count from 1, inclusive, negative ones from the end (-1 the
/// last); a negative step walks from `begin` down to `end`.
pub fn slice_places(length: usize, begin: i64, end: i64, step: i64) -> Result<Vec<usize>> {
    if step == 0 {
        return Err(fail("Slice step cannot be zero"));
    }
    let length = length as i64;
    let from_end = |place: i64| if place < 0 { length + place + 1 } else { place };
    let (begin, end) = (from_end(begin), from_end(end));
    let places: Vec<i64> = match step > 0 {
        true => (begin.max(1)..=end.min(length))
            .step_by(step as usize)
            .collect(),
        false => (end.max(1)..=begin.min(length))
            .rev()
            .step_by(step.unsigned_abs() as usize)
            .collect(),
    };
    Ok(places.into_iter().map(|p| (p - 1) as usize).collect())
}

/// `list_slice(x, begin, end, step)` over lists or text; NULL where any argument is.
pub fn slice(args: &[ArrayRef]) -> Result<ArrayRef> {
    let [value, begin, end, step] = args else {
        return Err(fail("list_slice takes a value, a begin, an end and a step"));
    };
    let (begin, end, step) = (
        begin.as_primitive::<Int64Type>(),
        end.as_primitive::<Int64Type>(),
        step.as_primitive::<Int64Type>(),
    );
    let places = |row: usize, length: usize| -> Result<Option<Vec<usize>>> {
        if value.is_null(row) || begin.is_null(row) || end.is_null(row) || step.is_null(row) {
            return Ok(None);
        }
        let (b, e, s) = (begin.value(row), end.value(row), step.value(row));
        slice_places(length, b, e, s).map(Some)
    };
    if let DataType::Utf8 = value.data_type() {
        let text = value.as_string::<i32>();
        let mut out = Vec::with_capacity(text.len());
        for row in 0..text.len() {
            let chars: Vec<char> = text.value(row).chars().collect();
            out.push(
                places(row, chars.len())?.map(|p| p.iter().map(|&i| chars[i]).collect::<String>()),
            );
        }
        return Ok(Arc::new(StringArray::from(out)));
    }
    let list = value.as_list::<i32>();
    let mut picks = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        let range = bounds(list, row);
        let picked = places(row, range.len())?;
        picks.push(picked.map(|p| p.iter().map(|&i| (range.start + i) as u32).collect()));
    }
    build(item_field(value)?, list.values(), picks)
}

/// `list_select(l, places)`: the elements at the places (from 1), NULL for a place outside
/// the list. `list_where(l, mask)`: the elements whose mask is true, and a NULL for each true
/// past the list's end.
pub fn select_or_where(args: &[ArrayRef], by_mask: bool) -> Result<ArrayRef> {
    let list = args[0].as_list::<i32>();
    let chosen = args[1].as_list::<i32>();
    // The list's values, then one NULL to pick for places outside it.
    let values = concat(&[
        list.values().as_ref(),
        arrow::array::new_null_array(list.values().data_type(), 1).as_ref(),
    ])?;
    let null_place = list.values().len() as u32;
    let mut picks = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        if list.is_null(row) || chosen.is_null(row) {
            picks.push(None);
            continue;
        }
        let range = bounds(list, row);
        let choices = chosen.value(row);
        if choices.null_count() > 0 {
            return Err(fail(
                "NULLs are not allowed as list elements in the second input parameter.",
            ));
        }
        let place = |i: usize| match i < range.len() {
            true => (range.start + i) as u32,
            false => null_place,
        };
        let picked: Vec<u32> = match by_mask {
            true => {
                let mask = choices.as_boolean();
                (0..mask.len())
                    .filter(|&i| mask.value(i))
                    .map(place)
                    .collect()
            }
            false => {
                let places = choices.as_primitive::<Int64Type>();
                places
                    .values()
                    .iter()
                    .map(|&p| match p >= 1 {
                        true => place(p as usize - 1),
                        false => null_place,
                    })
                    .collect()
            }
        };
        picks.push(Some(picked));
    }
    build(item_field(&args[0])?, &values, picks)
}

/// `list_resize(l, size [, fill])`: cut to `size` elements or filled up with `fill` (NULL by
/// default); a NULL size makes an empty list.
pub fn resize(args: &[ArrayRef]) -> Result<ArrayRef> {
    let list = args[0].as_list::<i32>();
    let sizes = args[1].as_primitive::<Int64Type>();
    let fill = &args[2];
    let values = concat(&[list.values().as_ref(), fill.as_ref()])?;
    let fill_start = list.values().len();
    let mut picks = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        if list.is_null(row) {
            picks.push(None);
            continue;
        }
        let size = match sizes.is_valid(row) {
            true => usize::try_from(sizes.value(row))
                .map_err(|_| fail(format!("list_resize to {} elements", sizes.value(row))))?,
            false => 0,
        };
        if size > 1 << 24 {
            return Err(fail(format!(
                "list_resize to {size} elements: at most {} are supported",
                1 << 24
            )));
        }
        let range = bounds(list, row);
        let mut picked: Vec<u32> = range.clone().take(size).map(|i| i as u32).collect();
        picked.resize(size, (fill_start + row) as u32);
        picks.push(Some(picked));
    }
    build(item_field(&args[0])?, &values, picks)
}

/// `flatten(l)`: a list of lists made one list, NULL inner lists passed over.
pub fn flatten(lists: &ArrayRef) -> Result<ArrayRef> {
    let outer = lists.as_list::<i32>();
    let inner = outer.values().as_list::<i32>();
    let mut picks = Vec::with_capacity(outer.len());
    for row in 0..outer.len() {
        if outer.is_null(row) {
            picks.push(None);
            continue;
        }
        let mut picked = Vec::new();
        for i in bounds(outer, row).filter(|&i| inner.is_valid(i)) {
            picked.extend(bounds(inner, i).map(|j| j as u32));
        }
        picks.push(Some(picked));
    }
    build(item_field(outer.values())?, inner.values(), picks)
}

/// The two lists' values, encoded so equal values have equal bytes.
fn shared_rows(a: &ListArray, b: &ListArray) -> Result<(Rows, usize)> {
    let converter = RowConverter::new(vec![SortField::new(a.values().data_type().clone())])?;
    let both = concat(&[a.values().as_ref(), b.values().as_ref()])?;
    Ok((converter.convert_columns(&[both])?, a.values().len()))
}

/// `list_has_any(a, b)`: whether a non-NULL element of `b` is in `a`; `list_has_all`: whether
/// every one is.
pub fn has(args: &[ArrayRef], all: bool) -> Result<ArrayRef> {
    let (a, b) = (args[0].as_list::<i32>(), args[1].as_list::<i32>());
    let (rows, shift) = shared_rows(a, b)?;
    let (a_values, b_values) = (a.values(), b.values());
    let out: BooleanArray = (0..a.len())
        .map(|row| {
            if a.is_null(row) || b.is_null(row) {
                return None;
            }
            let in_a: HashSet<&[u8]> = bounds(a, row)
                .filter(|&i| a_values.is_valid(i))
                .map(|i| rows.row(i).data())
                .collect();
            let mut wanted = bounds(b, row)
                .filter(|&j| b_values.is_valid(j))
                .map(|j| in_a.contains(rows.row(shift + j).data()));
            Some(match all {
                true => wanted.all(|found| found),
                false => wanted.any(|found| found),
            })
        })
        .collect();
    Ok(Arc::new(out))
}

/// `list_intersect(a, b)`: the non-NULL elements of `a` that `b` has, each once, in `a`'s
/// order.
pub fn intersect(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (a, b) = (args[0].as_list::<i32>(), args[1].as_list::<i32>());
    let (rows, shift) = shared_rows(a, b)?;
    let a_values = a.values();
    let picks = (0..a.len())
        .map(|row| {
            if a.is_null(row) || b.is_null(row) {
                return None;
            }
            let in_b: HashSet<&[u8]> = bounds(b, row).map(|j| rows.row(shift + j).data()).collect();
            let mut seen = HashSet::new();
            Some(
                bounds(a, row)
                    .filter(|&i| a_values.is_valid(i))
                    .filter(|&i| {
                        let key = rows.row(i).data();
                        in_b.contains(key) && seen.insert(key)
                    })
                    .map(|i| i as u32)
                    .collect(),
            )
        })
        .collect();
    build(item_field(&args[0])?, a_values, picks)
}

/// `list_zip(l1, ..., truncate)`: per row, as many unnamed structs as the longest list has
/// elements (the shortest's with `truncate`), each of the lists' elements at its place or NULL
/// past a list's end; a NULL list has none.
pub fn zip(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (truncate, lists) = args.split_last().expect("lists, then truncate");
    let truncate = truncate.as_boolean();
    let lists: Vec<&ListArray> = lists.iter().map(|l| l.as_list::<i32>()).collect();
    let rows = truncate.len();
    let mut picks: Vec<Vec<Option<u32>>> = vec![Vec::new(); lists.len()];
    let mut offsets = vec![0i32];
    for row in 0..rows {
        let ranges: Vec<std::ops::Range<usize>> = lists
            .iter()
            .map(|l| match l.is_valid(row) {
                true => bounds(l, row),
                false => 0..0,
            })
            .collect();
        let lengths = ranges.iter().map(|r| r.len());
        let length = match truncate.is_valid(row) && truncate.value(row) {
            true => lengths.min().unwrap_or(0),
            false => lengths.max().unwrap_or(0),
        };
        for (list_picks, range) in picks.iter_mut().zip(&ranges) {
            list_picks
                .extend((0..length).map(|i| (i < range.len()).then(|| (range.start + i) as u32)));
        }
        let end = offsets.last().copied().unwrap_or(0) as usize + length;
        offsets.push(i32::try_from(end).map_err(|_| too_large())?);
    }
    let columns = lists
        .iter()
        .zip(picks)
        .map(|(list, picks)| Ok(take(list.values(), &UInt32Array::from(picks), None)?))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let fields: Vec<Field> = columns
        .iter()
        .map(|c| Field::new("", c.data_type().clone(), true))
        .collect();
    let length = *offsets.last().expect("offsets start at 0") as usize;
    let records = StructArray::try_new_with_length(fields.into(), columns, None, length)?;
    let item = Arc::new(Field::new("item", records.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(
        item,
        OffsetBuffer::new(offsets.into()),
        Arc::new(records),
        None,
    )?))
}

fn too_large() -> ExecError {
    ExecError::Execution("a list result is too large".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_count_from_one_and_from_the_end() {
        assert_eq!(slice_places(5, 2, 4, 1).unwrap(), vec![1, 2, 3]);
        assert_eq!(slice_places(5, -2, 5, 1).unwrap(), vec![3, 4]);
        assert_eq!(slice_places(5, 0, 2, 1).unwrap(), vec![0, 1]);
        assert_eq!(slice_places(5, 1, 5, 2).unwrap(), vec![0, 2, 4]);
        assert_eq!(slice_places(3, 3, 1, 1).unwrap(), Vec::<usize>::new());
        assert_eq!(slice_places(5, -10, 2, 1).unwrap(), vec![0, 1]);
        assert_eq!(slice_places(5, 5, 1, -1).unwrap(), vec![4, 3, 2, 1, 0]);
        assert_eq!(slice_places(5, -1, -3, -1).unwrap(), vec![4, 3, 2]);
        assert_eq!(slice_places(4, 2, -1, 1).unwrap(), vec![1, 2, 3]);
        assert!(slice_places(3, 1, 3, 0).is_err());
    }
}
