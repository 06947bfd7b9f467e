//! `sum` and `avg` over frames. Integers and decimals are summed exactly in 128 bits, so a
//! row leaves a sum as exactly as it came in and frames slide; doubles are not (taking a
//! large value out again loses what small ones added), so their sums only grow, or come
//! from a segment tree.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Float64Array, Int64Array};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use pondra_planner::AggregateFunction;

use super::states::{FrameAggregate, Mergeable, Removable};
use crate::{ExecError, Result};

/// What an exact sum stands for.
enum ExactResult {
    /// `sum` of integers: a BIGINT.
    Bigint,
    /// `sum` of decimals: a decimal of the sum's precision and the values' scale.
    Decimal { precision: u8, scale: i8 },
    /// `avg` of integers or decimals (`unit` is 10 to the scale): a double.
    Average { unit: f64 },
}

/// `sum` or `avg` of integers or decimals, as unscaled 128-bit values.
pub(super) struct ExactSum {
    values: Vec<i128>,
    nulls: Option<NullBuffer>,
    result: ExactResult,
}

impl ExactSum {
    /// The exact sum `func` of `values` makes of type `data_type`, if it is one.
    pub fn new(
        func: AggregateFunction,
        values: &ArrayRef,
        data_type: &DataType,
    ) -> Result<Option<ExactSum>> {
        let integers = matches!(values.data_type(), DataType::Int32 | DataType::Int64);
        let scale = match values.data_type() {
            DataType::Decimal64(_, scale) | DataType::Decimal128(_, scale) => Some(*scale),
            _ => None,
        };
        let result = match (func, data_type, scale) {
            (AggregateFunction::Sum, DataType::Int64, None) if integers => ExactResult::Bigint,
            (AggregateFunction::Sum, DataType::Decimal128(precision, s), Some(scale))
                if *s == scale =>
            {
                ExactResult::Decimal {
                    precision: *precision,
                    scale,
                }
            }
            (AggregateFunction::Avg, DataType::Float64, None) if integers => {
                ExactResult::Average { unit: 1.0 }
            }
            (AggregateFunction::Avg, DataType::Float64, Some(scale)) => ExactResult::Average {
                unit: 10f64.powi(scale.into()),
            },
            _ => return Ok(None),
        };
        let unscaled: Vec<i128> = match scale {
            None => {
                let wide = cast(values, &DataType::Int64)?;
                let wide = wide.as_primitive::<Int64Type>();
                wide.values().iter().map(|v| i128::from(*v)).collect()
            }
            Some(scale) => {
                let wide = cast(values, &DataType::Decimal128(38, scale))?;
                wide.as_primitive::<Decimal128Type>().values().to_vec()
            }
        };
        Ok(Some(ExactSum {
            values: unscaled,
            nulls: values.logical_nulls(),
            result,
        }))
    }

    fn value_at(&self, row: usize) -> Option<i128> {
        match &self.nulls {
            Some(nulls) if nulls.is_null(row) => None,
            _ => Some(self.values[row]),
        }
    }
}

fn sum_overflow() -> ExecError {
    ExecError::Execution("numeric overflow: decimal sum".into())
}

/// The sum of the values added and how many there are.
type SumAndCount = (i128, i64);

impl FrameAggregate for ExactSum {
    type State = SumAndCount;
    type Value = SumAndCount;

    fn empty(&self) -> SumAndCount {
        (0, 0)
    }

    fn add(&self, (sum, count): &mut SumAndCount, row: usize) -> Result<()> {
        if let Some(value) = self.value_at(row) {
            *sum = sum.checked_add(value).ok_or_else(sum_overflow)?;
            *count += 1;
        }
        Ok(())
    }

    fn value(&self, state: &SumAndCount) -> Result<Option<SumAndCount>> {
        Ok((state.1 > 0).then_some(*state))
    }

    fn array(&self, values: Vec<Option<SumAndCount>>) -> Result<ArrayRef> {
        let sums = values.iter().map(|v| v.map(|(sum, _)| sum));
        Ok(match self.result {
            ExactResult::Bigint => {
                let bigints = sums
                    .map(|sum| sum.map(i64::try_from).transpose())
                    .collect::<Result<Int64Array, _>>()
                    .map_err(|_| {
                        ExecError::Execution("numeric overflow: sum out of BIGINT range".into())
                    })?;
                Arc::new(bigints)
            }
            ExactResult::Decimal { precision, scale } => {
                let limit = 10i128.checked_pow(precision.into()).unwrap_or(i128::MAX);
                if sums
                    .clone()
                    .flatten()
                    .any(|sum| sum.unsigned_abs() >= limit.unsigned_abs())
                {
                    return Err(sum_overflow());
                }
                let decimals = Decimal128Array::from(sums.collect::<Vec<_>>());
                Arc::new(decimals.with_precision_and_scale(precision, scale)?)
            }
            ExactResult::Average { unit } => {
                let averages = values
                    .iter()
                    .map(|v| v.map(|(sum, count)| sum as f64 / unit / count as f64));
                Arc::new(averages.collect::<Float64Array>())
            }
        })
    }
}

impl Removable for ExactSum {
    fn remove(&self, (sum, count): &mut SumAndCount, row: usize) -> Result<()> {
        if let Some(value) = self.value_at(row) {
            *sum = sum.checked_sub(value).ok_or_else(sum_overflow)?;
            *count -= 1;
        }
        Ok(())
    }
}

/// `sum` or `avg` of doubles.
pub(super) struct FloatSum {
    values: ScalarBuffer<f64>,
    nulls: Option<NullBuffer>,
    average: bool,
}

impl FloatSum {
    /// The double sum `func` of `values` makes of type `data_type`, if it is one.
    pub fn new(
        func: AggregateFunction,
        values: &ArrayRef,
        data_type: &DataType,
    ) -> Option<FloatSum> {
        if values.data_type() != &DataType::Float64 || data_type != &DataType::Float64 {
            return None;
        }
        let average = match func {
            AggregateFunction::Sum => false,
            AggregateFunction::Avg => true,
            _ => return None,
        };
        Some(FloatSum {
            values: values.as_primitive::<Float64Type>().values().clone(),
            nulls: values.logical_nulls(),
            average,
        })
    }
}

impl FrameAggregate for FloatSum {
    type State = (f64, i64);
    type Value = f64;

    fn empty(&self) -> (f64, i64) {
        (0.0, 0)
    }

    fn add(&self, (sum, count): &mut (f64, i64), row: usize) -> Result<()> {
        if self.nulls.as_ref().is_none_or(|n| n.is_valid(row)) {
            *sum += self.values[row];
            *count += 1;
        }
        Ok(())
    }

    fn value(&self, &(sum, count): &(f64, i64)) -> Result<Option<f64>> {
        Ok(match (count, self.average) {
            (0, _) => None,
            (_, false) => Some(sum),
            (count, true) => Some(sum / count as f64),
        })
    }

    fn array(&self, values: Vec<Option<f64>>) -> Result<ArrayRef> {
        Ok(Arc::new(Float64Array::from(values)))
    }
}

impl Mergeable for FloatSum {
    fn merge(&self, (sum, count): &mut (f64, i64), other: &(f64, i64)) -> Result<()> {
        *sum += other.0;
        *count += other.1;
        Ok(())
    }
}
