//! `min` and `max` of any orderable type, and the variance family, over frames. Neither can
//! take a row out of its state, so they grow over running frames and come from a segment
//! tree over sliding ones.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, UInt32Array};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Float64Type};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_planner::AggregateFunction;

use super::states::{FrameAggregate, Mergeable};
use crate::Result;

/// `min(x)` or `max(x)`: the state is the best row so far, compared in Arrow's
/// order-preserving row format, which orders every type the way SQL does.
pub(super) struct Extreme {
    values: ArrayRef,
    rows: Rows,
    nulls: Option<NullBuffer>,
    max: bool,
}

impl Extreme {
    pub fn new(values: &ArrayRef, max: bool) -> Result<Extreme> {
        let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
        Ok(Extreme {
            rows: converter.convert_columns(std::slice::from_ref(values))?,
            values: values.clone(),
            nulls: values.logical_nulls(),
            max,
        })
    }

    /// Whether row `candidate` beats row `best`.
    fn beats(&self, candidate: u32, best: u32) -> bool {
        let (candidate, best) = (
            self.rows.row(candidate as usize),
            self.rows.row(best as usize),
        );
        match self.max {
            true => candidate > best,
            false => candidate < best,
        }
    }

    fn keep_better(&self, best: &mut Option<u32>, candidate: Option<u32>) {
        if let Some(candidate) = candidate
            && best.is_none_or(|b| self.beats(candidate, b))
        {
            *best = Some(candidate);
        }
    }
}

impl FrameAggregate for Extreme {
    type State = Option<u32>;
    type Value = u32;

    fn empty(&self) -> Option<u32> {
        None
    }

    fn add(&self, best: &mut Option<u32>, row: usize) -> Result<()> {
        if self.nulls.as_ref().is_none_or(|n| n.is_valid(row)) {
            self.keep_better(best, Some(row as u32));
        }
        Ok(())
    }

    fn value(&self, best: &Option<u32>) -> Result<Option<u32>> {
        Ok(*best)
    }

    fn array(&self, values: Vec<Option<u32>>) -> Result<ArrayRef> {
        Ok(take(&self.values, &UInt32Array::from(values), None)?)
    }
}

impl Mergeable for Extreme {
    fn merge(&self, best: &mut Option<u32>, other: &Option<u32>) -> Result<()> {
        self.keep_better(best, *other);
        Ok(())
    }
}

/// `var_pop`, `var_samp`, `stddev_pop`, `stddev_samp`: the count, the mean and the sum of
/// squared differences from it, grown by Welford's update and combined by Chan's.
pub(super) struct Moments {
    values: ScalarBuffer<f64>,
    nulls: Option<NullBuffer>,
    func: AggregateFunction,
}

#[derive(Clone, Copy, Default)]
pub(super) struct MomentState {
    count: i64,
    mean: f64,
    squares: f64,
}

impl Moments {
    pub fn new(values: &ArrayRef, func: AggregateFunction) -> Result<Moments> {
        let doubles = cast(values, &DataType::Float64)?;
        Ok(Moments {
            values: doubles.as_primitive::<Float64Type>().values().clone(),
            nulls: doubles.logical_nulls(),
            func,
        })
    }
}

impl FrameAggregate for Moments {
    type State = MomentState;
    type Value = f64;

    fn empty(&self) -> MomentState {
        MomentState::default()
    }

    fn add(&self, state: &mut MomentState, row: usize) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            return Ok(());
        }
        let x = self.values[row];
        state.count += 1;
        let delta = x - state.mean;
        state.mean += delta / state.count as f64;
        state.squares += delta * (x - state.mean);
        Ok(())
    }

    fn value(&self, state: &MomentState) -> Result<Option<f64>> {
        let n = state.count as f64;
        let m2 = state.squares;
        Ok(match self.func {
            AggregateFunction::VarPop if n >= 1.0 => Some(m2 / n),
            AggregateFunction::StddevPop if n >= 1.0 => Some((m2 / n).sqrt()),
            AggregateFunction::VarSamp if n >= 2.0 => Some(m2 / (n - 1.0)),
            AggregateFunction::StddevSamp if n >= 2.0 => Some((m2 / (n - 1.0)).sqrt()),
            _ => None,
        })
    }

    fn array(&self, values: Vec<Option<f64>>) -> Result<ArrayRef> {
        Ok(Arc::new(Float64Array::from(values)))
    }
}

impl Mergeable for Moments {
    fn merge(&self, state: &mut MomentState, other: &MomentState) -> Result<()> {
        if other.count == 0 {
            return Ok(());
        }
        let (n_a, n_b) = (state.count as f64, other.count as f64);
        let n = n_a + n_b;
        let delta = other.mean - state.mean;
        state.mean += delta * n_b / n;
        state.squares += other.squares + delta * delta * n_a * n_b / n;
        state.count += other.count;
        Ok(())
    }
}
