//! The window functions that pick rows of the frame: `first_value`, `last_value`,
//! `nth_value`, and `array_agg`, which takes them all. Each row's picks are found from its
//! frame's runs of rows, then taken from the value column at once.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Field, Int64Type};

use super::frames::Frames;
use crate::{ExecError, Result};

/// Every row's frame's first row's value (NULL for an empty frame).
pub(super) fn first_values(values: &ArrayRef, frames: &Frames<'_>) -> Result<ArrayRef> {
    pick(values, frames, |row| {
        let pieces = frames.pieces(row);
        Ok(pieces.into_iter().find(|p| !p.is_empty()).map(|p| p.start))
    })
}

/// Every row's frame's last row's value.
pub(super) fn last_values(values: &ArrayRef, frames: &Frames<'_>) -> Result<ArrayRef> {
    pick(values, frames, |row| {
        let pieces = frames.pieces(row);
        Ok(pieces
            .into_iter()
            .rev()
            .find(|p| !p.is_empty())
            .map(|p| p.end - 1))
    })
}

/// Every row's frame's `n`th row's value, `n` read at each row; NULL where the frame is
/// shorter, or `n` is NULL.
pub(super) fn nth_values(values: &ArrayRef, n: &ArrayRef, frames: &Frames<'_>) -> Result<ArrayRef> {
    let n = cast(n, &DataType::Int64)?;
    let n = n.as_primitive::<Int64Type>();
    pick(values, frames, |row| {
        let Some(mut left) = nth_index(n, row)? else {
            return Ok(None);
        };
        for piece in frames.pieces(row) {
            if left < piece.len() {
                return Ok(Some(piece.start + left));
            }
            left -= piece.len();
        }
        Ok(None)
    })
}

/// Where a column's non-NULL values are, for the picks that pass over NULLs (`IGNORE NULLS`).
pub(super) struct Present {
    /// The rows holding a value, in order.
    rows: Vec<usize>,
    /// For each row `r` (and one past the last), how many of `rows` lie before `r`.
    before: Vec<usize>,
}

impl Present {
    pub(super) fn new(values: &ArrayRef) -> Present {
        let mut rows = Vec::new();
        let mut before = Vec::with_capacity(values.len() + 1);
        for row in 0..values.len() {
            before.push(rows.len());
            if values.is_valid(row) {
                rows.push(row);
            }
        }
        before.push(rows.len());
        Present { rows, before }
    }

    /// The `n`th (from 0) row with a value in `start..end`, if there is one.
    fn nth_in(&self, start: usize, end: usize, n: usize) -> Option<usize> {
        let at = self.before[start].checked_add(n)?;
        (at < self.before[end]).then(|| self.rows[at])
    }

    /// The last row with a value in `start..end`, if any.
    fn last_in(&self, start: usize, end: usize) -> Option<usize> {
        (self.before[end] > self.before[start]).then(|| self.rows[self.before[end] - 1])
    }

    /// The row `step` rows with a value away from `row` (before it when negative), within
    /// `bounds`; `row` itself for a step of 0.
    pub(super) fn stepped(
        &self,
        row: usize,
        step: i64,
        bounds: &std::ops::Range<usize>,
    ) -> Option<usize> {
        let found = match step {
            0 => Some(row),
            s if s < 0 => {
                let back = usize::try_from(s.unsigned_abs()).ok()?;
                self.before[row].checked_sub(back).map(|at| self.rows[at])
            }
            s => {
                let ahead = usize::try_from(s).ok()?;
                let at = self.before[row + 1].checked_add(ahead - 1)?;
                self.rows.get(at).copied()
            }
        };
        found.filter(|r| bounds.contains(r))
    }
}

/// `first_value(x IGNORE NULLS)`: every row's frame's first value that is not NULL.
pub(super) fn first_present(values: &ArrayRef, frames: &Frames<'_>) -> Result<ArrayRef> {
    let present = Present::new(values);
    pick(values, frames, |row| {
        Ok(frames
            .pieces(row)
            .into_iter()
            .find_map(|p| present.nth_in(p.start, p.end, 0)))
    })
}

/// `last_value(x IGNORE NULLS)`: every row's frame's last value that is not NULL.
pub(super) fn last_present(values: &ArrayRef, frames: &Frames<'_>) -> Result<ArrayRef> {
    let present = Present::new(values);
    pick(values, frames, |row| {
        Ok(frames
            .pieces(row)
            .into_iter()
            .rev()
            .find_map(|p| present.last_in(p.start, p.end)))
    })
}

/// `nth_value(x, n IGNORE NULLS)`: every row's frame's `n`th value that is not NULL.
pub(super) fn nth_present(
    values: &ArrayRef,
    n: &ArrayRef,
    frames: &Frames<'_>,
) -> Result<ArrayRef> {
    let present = Present::new(values);
    let n = cast(n, &DataType::Int64)?;
    let n = n.as_primitive::<Int64Type>();
    pick(values, frames, |row| {
        let Some(mut left) = nth_index(n, row)? else {
            return Ok(None);
        };
        for piece in frames.pieces(row) {
            let held = present.before[piece.end] - present.before[piece.start];
            if left < held {
                return Ok(present.nth_in(piece.start, piece.end, left));
            }
            left -= held;
        }
        Ok(None)
    })
}

/// `nth_value`'s `n` at `row`, counted from 0; `None` for a NULL `n`.
fn nth_index(n: &arrow::array::Int64Array, row: usize) -> Result<Option<usize>> {
    if n.is_null(row) {
        return Ok(None);
    }
    let wanted = n.value(row);
    if wanted <= 0 {
        return Err(ExecError::Execution(
            "argument of nth_value must be greater than zero".into(),
        ));
    }
    Ok(Some(usize::try_from(wanted - 1).unwrap_or(usize::MAX)))
}

/// The value at the row `chosen` picks for each row, NULL where it picks none.
fn pick(
    values: &ArrayRef,
    frames: &Frames<'_>,
    chosen: impl Fn(usize) -> Result<Option<usize>>,
) -> Result<ArrayRef> {
    let mut picks = Vec::with_capacity(frames.rows());
    for row in 0..frames.rows() {
        if row % 4096 == 4095 {
            crate::control::check_current()?;
        }
        picks.push(chosen(row)?.map(|p| p as u32));
    }
    Ok(take(values, &UInt32Array::from(picks), None)?)
}

/// `array_agg`: each row's frame's values, NULLs included, as a list; NULL for an empty
/// frame. The lists hold as many values as the frames do in all, so this is as fast as its
/// output allows.
pub(super) fn frame_lists(
    values: &ArrayRef,
    frames: &Frames<'_>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let DataType::List(item) = data_type else {
        return Err(ExecError::Execution(format!(
            "array_agg gives a list, not {data_type}"
        )));
    };
    // The lists hold every frame's values: refused when they would not fit in the
    // statement's memory (a median over a 100-row frame of 10 million rows is a billion).
    let mut held = 0usize;
    for row in 0..frames.rows() {
        held = frames
            .pieces(row)
            .iter()
            .fold(held, |held, piece| held.saturating_add(piece.len()));
    }
    // An index and the value, and the copies the list functions over it make (a median
    // filters and sorts each list).
    let per_value = 4 + 3 * item.data_type().primitive_width().unwrap_or(16);
    crate::control::check_allocation(held.saturating_mul(per_value))?;
    let mut indices: Vec<u32> = Vec::new();
    let mut lengths = Vec::with_capacity(frames.rows());
    let mut present = Vec::with_capacity(frames.rows());
    for row in 0..frames.rows() {
        if row % 1024 == 1023 {
            crate::control::check_current()?;
        }
        let before = indices.len();
        for piece in frames.pieces(row) {
            indices.extend(piece.start as u32..piece.end as u32);
        }
        if indices.len() > i32::MAX as usize {
            return Err(ExecError::Execution(
                "array_agg over these frames would hold more than 2^31 values".into(),
            ));
        }
        lengths.push(indices.len() - before);
        present.push(indices.len() > before);
    }
    let items = take(values, &UInt32Array::from(indices), None)?;
    let items = cast(&items, item.data_type())?;
    let field = Arc::new(Field::new(item.name(), item.data_type().clone(), true));
    let list = ListArray::try_new(
        field,
        OffsetBuffer::from_lengths(lengths),
        items,
        Some(NullBuffer::from(present)),
    )?;
    Ok(Arc::new(list))
}
