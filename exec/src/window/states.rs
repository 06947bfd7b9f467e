//! What the frame drivers (`drivers.rs`) ask of an aggregate: a state that rows of the
//! sorted input are added to by position, and for some aggregates taken out of again
//! (`Removable`) or combined with the state of an adjacent run of rows (`Mergeable`).
//! Counts live here; sums, extremes and moments in their own files.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array};
use arrow::buffer::NullBuffer;
use arrow::row::{RowConverter, SortField};

use crate::Result;

/// An aggregate over rows of one window's sorted input, by position.
pub(super) trait FrameAggregate {
    type State;
    /// One row's result, collected into an array by `array`.
    type Value;
    fn empty(&self) -> Self::State;
    fn add(&self, state: &mut Self::State, row: usize) -> Result<()>;
    /// The aggregate's value over the rows added; `None` for NULL.
    fn value(&self, state: &Self::State) -> Result<Option<Self::Value>>;
    fn array(&self, values: Vec<Option<Self::Value>>) -> Result<ArrayRef>;
}

/// An aggregate a row can be taken out of exactly, so a frame can slide.
pub(super) trait Removable: FrameAggregate {
    fn remove(&self, state: &mut Self::State, row: usize) -> Result<()>;
}

/// An aggregate whose states over adjacent runs of rows combine into the state over both,
/// so a segment tree can hold them.
pub(super) trait Mergeable: FrameAggregate<State: Clone> {
    /// Folds `other`, the state of the rows just after `into`'s, into `into`.
    fn merge(&self, into: &mut Self::State, other: &Self::State) -> Result<()>;
}

/// `count(*)` (no NULLs to skip) and `count(x)`.
pub(super) struct Counting {
    nulls: Option<NullBuffer>,
}

impl Counting {
    pub fn rows() -> Counting {
        Counting { nulls: None }
    }

    pub fn values(values: &ArrayRef) -> Counting {
        Counting {
            nulls: values.logical_nulls(),
        }
    }

    fn counts(&self, row: usize) -> bool {
        self.nulls.as_ref().is_none_or(|n| n.is_valid(row))
    }
}

impl FrameAggregate for Counting {
    type State = i64;
    type Value = i64;

    fn empty(&self) -> i64 {
        0
    }

    fn add(&self, state: &mut i64, row: usize) -> Result<()> {
        *state += i64::from(self.counts(row));
        Ok(())
    }

    fn value(&self, state: &i64) -> Result<Option<i64>> {
        Ok(Some(*state))
    }

    fn array(&self, values: Vec<Option<i64>>) -> Result<ArrayRef> {
        Ok(Arc::new(Int64Array::from(values)))
    }
}

impl Removable for Counting {
    fn remove(&self, state: &mut i64, row: usize) -> Result<()> {
        *state -= i64::from(self.counts(row));
        Ok(())
    }
}

/// `approx_count_distinct(x)` (exact, as it is for GROUP BY): each value's number of rows
/// in the frame, so a row can leave it.
pub(super) struct DistinctCount {
    /// Each row's value as a number shared by equal values; `None` for NULL.
    ids: Vec<Option<u32>>,
}

impl DistinctCount {
    pub fn new(values: &ArrayRef) -> Result<DistinctCount> {
        let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
        let rows = converter.convert_columns(std::slice::from_ref(values))?;
        let nulls = values.logical_nulls();
        let mut seen: HashMap<&[u8], u32> = HashMap::new();
        let ids = (0..values.len())
            .map(|row| {
                if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                    return None;
                }
                let next = seen.len() as u32;
                Some(*seen.entry(rows.row(row).data()).or_insert(next))
            })
            .collect();
        Ok(DistinctCount { ids })
    }
}

/// The rows in the frame of each value, and how many values have some.
#[derive(Default)]
pub(super) struct ValueCounts {
    rows: HashMap<u32, u32>,
    distinct: i64,
}

impl FrameAggregate for DistinctCount {
    type State = ValueCounts;
    type Value = i64;

    fn empty(&self) -> ValueCounts {
        ValueCounts::default()
    }

    fn add(&self, state: &mut ValueCounts, row: usize) -> Result<()> {
        if let Some(id) = self.ids[row] {
            let rows = state.rows.entry(id).or_insert(0);
            *rows += 1;
            if *rows == 1 {
                state.distinct += 1;
            }
        }
        Ok(())
    }

    fn value(&self, state: &ValueCounts) -> Result<Option<i64>> {
        Ok(Some(state.distinct))
    }

    fn array(&self, values: Vec<Option<i64>>) -> Result<ArrayRef> {
        Ok(Arc::new(Int64Array::from(values)))
    }
}

impl Removable for DistinctCount {
    fn remove(&self, state: &mut ValueCounts, row: usize) -> Result<()> {
        let Some(id) = self.ids[row] else {
            return Ok(());
        };
        if let Some(rows) = state.rows.get_mut(&id) {
            *rows -= 1;
            if *rows == 0 {
                state.rows.remove(&id);
                state.distinct -= 1;
            }
        }
        Ok(())
    }
}
