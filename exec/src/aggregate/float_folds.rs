//! DuckDB's DOUBLE folds: `product(x)`, and `fsum(x)` / `kahan_sum` / `sumKahan`, a sum
//! with Kahan-Babuška compensation, so that adding many small values to a large one loses
//! none of them. Both take their argument as DOUBLE (the binder casts it) and are NULL over
//! no values.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};

use crate::Result;

/// Which fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FloatFold {
    Product,
    CompensatedSum,
}

/// Per group: the running value, the compensation a compensated sum carries (the low-order
/// part its running value lost), and whether the group has had a value.
pub(super) struct FloatFolds {
    fold: FloatFold,
    values: Vec<f64>,
    compensation: Vec<f64>,
    seen: Vec<bool>,
}

impl FloatFolds {
    pub(super) fn new(fold: FloatFold) -> FloatFolds {
        FloatFolds {
            fold,
            values: Vec::new(),
            compensation: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn identity(&self) -> f64 {
        match self.fold {
            FloatFold::Product => 1.0,
            FloatFold::CompensatedSum => 0.0,
        }
    }

    pub(super) fn resize(&mut self, groups: usize) {
        let identity = self.identity();
        self.values.resize(groups, identity);
        self.compensation.resize(groups, 0.0);
        self.seen.resize(groups, false);
    }

    #[inline]
    fn add(&mut self, group: usize, x: f64, compensation: f64) {
        self.seen[group] = true;
        let value = &mut self.values[group];
        match self.fold {
            FloatFold::Product => *value *= x,
            FloatFold::CompensatedSum => {
                // Neumaier's variant: whichever of the two is larger keeps its low bits.
                let sum = *value + x;
                let lost = if value.abs() >= x.abs() {
                    (*value - sum) + x
                } else {
                    (x - sum) + *value
                };
                *value = sum;
                self.compensation[group] += lost + compensation;
            }
        }
    }

    /// Folds in `values` (numbers, taken as DOUBLE), row i into group `groups[i]`; NULLs are
    /// skipped.
    pub(super) fn update(&mut self, values: &ArrayRef, groups: &[usize]) -> Result<()> {
        // A window's frame passes its argument as it is; a grouping's binder cast it already.
        let values = cast(values, &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        debug_assert_eq!(values.len(), groups.len());
        for (row, &group) in groups.iter().enumerate() {
            if values.is_valid(row) {
                self.add(group, values.value(row), 0.0);
            }
        }
        Ok(())
    }

    /// Folds in the groups `from` of `other`, a state of the same fold over other rows: its
    /// group `from[i]` is this one's group `map[i]`.
    pub(super) fn merge_groups(&mut self, other: &FloatFolds, from: &[u32], map: &[usize]) {
        debug_assert_eq!(self.fold, other.fold);
        for (&g, &to) in from.iter().zip(map) {
            let g = g as usize;
            if other.seen[g] {
                self.add(to, other.values[g], other.compensation[g]);
            }
        }
    }

    pub(super) fn finish(self) -> ArrayRef {
        let values = self.values.iter().zip(&self.compensation).zip(&self.seen);
        let folded: Float64Array = values
            .map(|((value, compensation), seen)| seen.then_some(value + compensation))
            .collect();
        Arc::new(folded)
    }
}
