//! `skewness`, `kurtosis` and `kurtosis_pop` (DuckDB) from a group's count and its sums of
//! x, x², x³ and x⁴, by DuckDB's formulas, so that both give the same figures.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use pondra_planner::Moment;

use crate::{ExecError, Result};

/// Per row, `moment` from `args`: the count, then the sums of the first four powers.
pub fn moment_statistic(args: &[ArrayRef], moment: Moment) -> Result<ArrayRef> {
    assert_eq!(args.len(), 5, "a count and four sums");
    let columns = args
        .iter()
        .map(|a| cast(a, &DataType::Float64))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let columns: Vec<&Float64Array> = columns.iter().map(|c| c.as_primitive()).collect();
    let mut out = Vec::with_capacity(args[0].len());
    for row in 0..args[0].len() {
        let value = match columns.iter().all(|c| c.is_valid(row)) {
            true => {
                let [n, s1, s2, s3, s4] = std::array::from_fn(|i| columns[i].value(row));
                statistic(moment, n, [s1, s2, s3, s4])?
            }
            false => None,
        };
        out.push(value);
    }
    Ok(Arc::new(Float64Array::from(out)))
}

fn statistic(moment: Moment, n: f64, [s1, s2, s3, s4]: [f64; 4]) -> Result<Option<f64>> {
    let fewest = match moment {
        Moment::Skewness => 3.0,
        Moment::Kurtosis => 4.0,
        Moment::KurtosisPop => 2.0,
    };
    if n < fewest {
        return Ok(None);
    }
    let inverse = 1.0 / n;
    // The second central moment: no spread, no shape.
    let m2 = inverse * (s2 - s1 * s1 * inverse);
    if m2 <= 0.0 {
        return Ok(None);
    }
    // Term for term as DuckDB writes them, so that both round alike.
    let value = match moment {
        Moment::Skewness => {
            let spread = m2.powf(3.0).sqrt();
            let adjustment = (n * (n - 1.0)).sqrt() / (n - 2.0);
            adjustment
                * inverse
                * (s3 - 3.0 * s2 * s1 * inverse + 2.0 * s1.powf(3.0) * inverse * inverse)
                / spread
        }
        Moment::Kurtosis | Moment::KurtosisPop => {
            let m4 = inverse
                * (s4 - 4.0 * s3 * s1 * inverse + 6.0 * s2 * s1 * s1 * inverse * inverse
                    - 3.0 * s1.powf(4.0) * inverse.powf(3.0));
            match moment {
                Moment::KurtosisPop => m4 / (m2 * m2) - 3.0,
                _ => {
                    (n - 1.0) * ((n + 1.0) * m4 / (m2 * m2) - 3.0 * (n - 1.0))
                        / ((n - 2.0) * (n - 3.0))
                }
            }
        }
    };
    if !value.is_finite() {
        return Err(ExecError::Execution(format!(
            "{} is out of range: the values' powers overflow a DOUBLE",
            moment.name()
        )));
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(values: &[f64]) -> (f64, [f64; 4]) {
        let power = |k: i32| values.iter().map(|x| x.powi(k)).sum();
        (
            values.len() as f64,
            [power(1), power(2), power(3), power(4)],
        )
    }

    #[test]
    fn kurtosis_of_two_values_is_minus_two() {
        let (n, s) = sums(&[1.0, 2.0]);
        assert_eq!(statistic(Moment::KurtosisPop, n, s).unwrap(), Some(-2.0));
        assert_eq!(statistic(Moment::Kurtosis, n, s).unwrap(), None);
    }

    #[test]
    fn symmetric_values_have_no_skew_and_equal_values_no_shape() {
        let (n, s) = sums(&[1.0, 2.0, 3.0]);
        assert_eq!(statistic(Moment::Skewness, n, s).unwrap(), Some(0.0));
        let (n, s) = sums(&[5.0; 6]);
        assert_eq!(statistic(Moment::Kurtosis, n, s).unwrap(), None);
    }

    #[test]
    fn overflowing_powers_are_an_error() {
        let (n, s) = sums(&[2e304, 2e305, 2e306, 2e307]);
        assert!(statistic(Moment::Kurtosis, n, s).is_err());
    }
}
