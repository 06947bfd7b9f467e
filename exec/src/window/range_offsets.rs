//! RANGE frames with offsets: a bound `d PRECEDING` or `d FOLLOWING` is the first row whose
//! ORDER BY key reaches the current row's key less or plus `d`. Keys are read as exact
//! integers (integers, decimals in units of their scale, dates and timestamps in
//! microseconds) or as doubles, and each bound is found by binary search in the partition.
//! A NULL key is a peer of NULL keys only: a row with one has its peer group for the bound,
//! and NULLs lie outside every other row's offsets, before or after all values as they sort.

use std::cmp::Ordering;
use std::ops::Range;

use arrow::array::timezone::Tz;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::buffer::NullBuffer;
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Decimal128Type, Float64Type, Int64Type, IntervalMonthDayNano, TimeUnit,
    TimestampMicrosecondType,
};
use pondra_planner::{ScalarValue, SortKey};

use crate::{ExecError, Result};

const MICROS_PER_DAY: i128 = 86_400_000_000;

/// The one ORDER BY key of a window with RANGE offsets, in sorted order.
pub(super) struct RangeKeys {
    values: KeyValues,
    /// What a key counts in, to read offsets in the same units.
    unit: KeyUnit,
    nulls: Option<NullBuffer>,
    descending: bool,
    nulls_first: bool,
    /// The zone months are counted in: timestamps without a zone are read as UTC.
    utc: Tz,
}

enum KeyValues {
    Exact(Vec<i128>),
    Float(Vec<f64>),
}

#[derive(Clone, Copy)]
enum KeyUnit {
    Integer,
    /// A decimal's unscaled value.
    Decimal {
        scale: i8,
    },
    Double,
    Microseconds,
}

/// A count of key units, and whether a fraction of one more follows. Exact keys are whole
/// units, so which fraction does not matter: only whether a key can reach it.
#[derive(Clone, Copy)]
pub(super) struct Units {
    whole: i128,
    fraction: bool,
}

impl Units {
    fn whole(whole: i128) -> Units {
        Units {
            whole,
            fraction: false,
        }
    }

    /// A non-negative double in whole units and a fraction.
    fn of_double(value: f64) -> Units {
        Units {
            whole: value.floor() as i128,
            fraction: value.fract() != 0.0,
        }
    }
}

/// A RANGE offset in its key's terms.
pub(super) enum Distance {
    Exact(Units),
    Float(f64),
    /// An interval with months, whose length depends on the date it is added to.
    Calendar(IntervalMonthDayNano),
}

/// How far a bound reaches: a key value in the same terms as the keys.
enum Target {
    Exact(Units),
    Float(f64),
}

impl RangeKeys {
    pub fn new(key: &ArrayRef, sort: &SortKey) -> Result<RangeKeys> {
        let exact = |array: ArrayRef, unit| -> Result<(KeyValues, KeyUnit)> {
            let values = match unit {
                KeyUnit::Decimal { .. } => array
                    .as_primitive::<Decimal128Type>()
                    .values()
                    .iter()
                    .copied()
                    .collect(),
                _ => array
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .map(|v| i128::from(*v))
                    .collect(),
            };
            Ok((KeyValues::Exact(values), unit))
        };
        let (values, unit) = match key.data_type() {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                exact(cast(key, &DataType::Int64)?, KeyUnit::Integer)?
            }
            DataType::Decimal32(_, scale)
            | DataType::Decimal64(_, scale)
            | DataType::Decimal128(_, scale) => exact(
                cast(key, &DataType::Decimal128(38, *scale))?,
                KeyUnit::Decimal { scale: *scale },
            )?,
            DataType::Float32 | DataType::Float64 => {
                let values = cast(key, &DataType::Float64)?;
                let values = values.as_primitive::<Float64Type>().values().to_vec();
                (KeyValues::Float(values), KeyUnit::Double)
            }
            DataType::Date32 | DataType::Timestamp(_, None) => {
                let micros = cast(key, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
                let micros = cast(&micros, &DataType::Int64)?;
                exact(micros, KeyUnit::Microseconds)?
            }
            other => {
                return Err(ExecError::Execution(format!(
                    "not supported yet: RANGE offsets over {other}"
                )));
            }
        };
        Ok(RangeKeys {
            values,
            unit,
            nulls: key.logical_nulls(),
            descending: sort.descending,
            nulls_first: sort.nulls_first,
            utc: "+00:00".parse()?,
        })
    }

    /// An offset (a constant the binder checked is not negative) in the keys' terms.
    pub fn distance(&self, offset: &ScalarValue) -> Result<Distance> {
        let number = match offset {
            ScalarValue::Int32(n) => Some((i128::from(*n), 0)),
            ScalarValue::Int64(n) => Some((i128::from(*n), 0)),
            ScalarValue::Decimal { value, scale, .. } => Some((*value, *scale)),
            _ => None,
        };
        Ok(match (self.unit, number, offset) {
            (KeyUnit::Integer, Some((value, scale)), _) => {
                Distance::Exact(rescale(value, scale, 0))
            }
            (KeyUnit::Decimal { scale: to }, Some((value, scale)), _) => {
                Distance::Exact(rescale(value, scale, to))
            }
            (KeyUnit::Integer, None, ScalarValue::Float64(f)) => {
                Distance::Exact(Units::of_double(*f))
            }
            (KeyUnit::Decimal { scale }, None, ScalarValue::Float64(f)) => {
                Distance::Exact(Units::of_double(f * 10f64.powi(scale.into())))
            }
            (KeyUnit::Double, Some((value, scale)), _) => {
                Distance::Float(value as f64 / 10f64.powi(scale.into()))
            }
            (KeyUnit::Double, None, ScalarValue::Float64(f)) => Distance::Float(*f),
            (
                KeyUnit::Microseconds,
                _,
                ScalarValue::Interval {
                    months,
                    days,
                    nanos,
                },
            ) => match months {
                0 => Distance::Exact(Units {
                    whole: i128::from(*days) * MICROS_PER_DAY + i128::from(nanos.div_euclid(1000)),
                    fraction: nanos.rem_euclid(1000) != 0,
                }),
                _ => Distance::Calendar(IntervalMonthDayNano::new(*months, *days, *nanos)),
            },
            _ => {
                return Err(ExecError::Execution(format!(
                    "a RANGE offset of {offset:?} over keys counted as {:?}",
                    self.unit_name()
                )));
            }
        })
    }

    fn unit_name(&self) -> &'static str {
        match self.unit {
            KeyUnit::Integer => "integers",
            KeyUnit::Decimal { .. } => "decimals",
            KeyUnit::Double => "doubles",
            KeyUnit::Microseconds => "times",
        }
    }

    /// The first row of `partition` at or past the bound `distance` before or after row
    /// `row`'s key; `None` when that key is NULL.
    pub fn start(
        &self,
        partition: Range<usize>,
        row: usize,
        distance: &Distance,
        before: bool,
    ) -> Option<usize> {
        self.search(partition, row, distance, before, false)
    }

    /// One past the last row of `partition` at or before the bound; `None` for a NULL key.
    pub fn end(
        &self,
        partition: Range<usize>,
        row: usize,
        distance: &Distance,
        before: bool,
    ) -> Option<usize> {
        self.search(partition, row, distance, before, true)
    }

    /// The first row of `partition` not before the target (`inclusive`: not at or before
    /// it), in the window's order.
    fn search(
        &self,
        partition: Range<usize>,
        row: usize,
        distance: &Distance,
        before: bool,
        inclusive: bool,
    ) -> Option<usize> {
        if self.is_null(row) {
            return None;
        }
        // Before the current row in the window's order is toward smaller keys ascending.
        let target = self.shifted(row, distance, before != self.descending);
        let precedes = |q: usize| {
            if self.is_null(q) {
                return self.nulls_first;
            }
            let ordering = self.compare(q, &target);
            let ordering = if self.descending {
                ordering.reverse()
            } else {
                ordering
            };
            ordering == Ordering::Less || (inclusive && ordering == Ordering::Equal)
        };
        Some(partition_point(partition, precedes))
    }

    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }

    /// Row `row`'s key less (`subtract`) or plus `distance`; past the ends of the keys'
    /// domain it saturates, which lies beyond every key all the same.
    fn shifted(&self, row: usize, distance: &Distance, subtract: bool) -> Target {
        match &self.values {
            KeyValues::Exact(values) => {
                let key = values[row];
                Target::Exact(match distance {
                    Distance::Exact(d) => shift_units(key, *d, subtract),
                    Distance::Float(d) => shift_units(key, Units::of_double(*d), subtract),
                    Distance::Calendar(interval) => {
                        Units::whole(calendar_shift(key, *interval, subtract, self.utc))
                    }
                })
            }
            KeyValues::Float(values) => {
                let d = match distance {
                    Distance::Float(d) => *d,
                    Distance::Exact(d) => d.whole as f64,
                    Distance::Calendar(_) => f64::INFINITY,
                };
                let key = values[row];
                Target::Float(if subtract { key - d } else { key + d })
            }
        }
    }

    /// Row `row`'s key against `target`, ascending.
    fn compare(&self, row: usize, target: &Target) -> Ordering {
        match (&self.values, target) {
            // A target with a fraction lies between two whole keys.
            (KeyValues::Exact(values), Target::Exact(t)) => match values[row].cmp(&t.whole) {
                Ordering::Equal if t.fraction => Ordering::Less,
                ordering => ordering,
            },
            (KeyValues::Float(values), Target::Float(t)) => values[row].total_cmp(t),
            (KeyValues::Exact(values), Target::Float(t)) => (values[row] as f64).total_cmp(t),
            (KeyValues::Float(values), Target::Exact(t)) => {
                values[row].total_cmp(&(t.whole as f64))
            }
        }
    }
}

/// `key` less (`subtract`) or plus `distance`, saturating.
fn shift_units(key: i128, distance: Units, subtract: bool) -> Units {
    match (subtract, distance.fraction) {
        // key - (w + f) = (key - w - 1) + (1 - f)
        (true, true) => Units {
            whole: key.saturating_sub(distance.whole).saturating_sub(1),
            fraction: true,
        },
        (true, false) => Units::whole(key.saturating_sub(distance.whole)),
        (false, fraction) => Units {
            whole: key.saturating_add(distance.whole),
            fraction,
        },
    }
}

/// A timestamp in microseconds moved by an interval with months, as a calendar moves it.
fn calendar_shift(micros: i128, interval: IntervalMonthDayNano, subtract: bool, utc: Tz) -> i128 {
    let moved = i64::try_from(micros)
        .ok()
        .and_then(|micros| match subtract {
            true => TimestampMicrosecondType::subtract_month_day_nano(micros, interval, utc),
            false => TimestampMicrosecondType::add_month_day_nano(micros, interval, utc),
        });
    match (moved, subtract) {
        (Some(moved), _) => i128::from(moved),
        (None, true) => i128::MIN,
        (None, false) => i128::MAX,
    }
}

/// A non-negative `value` at `scale` digits after the point as units of scale `to`.
fn rescale(value: i128, scale: i8, to: i8) -> Units {
    let shift = i32::from(to) - i32::from(scale);
    let power = 10i128.checked_pow(shift.unsigned_abs());
    match (shift >= 0, power) {
        (true, Some(power)) => Units::whole(value.saturating_mul(power)),
        (true, None) if value == 0 => Units::whole(0),
        (true, None) => Units::whole(i128::MAX),
        (false, Some(power)) => Units {
            whole: value.div_euclid(power),
            fraction: value.rem_euclid(power) != 0,
        },
        (false, None) => Units {
            whole: 0,
            fraction: value != 0,
        },
    }
}

/// The first position of `rows` where `precedes` turns false (it is true, then false).
fn partition_point(rows: Range<usize>, precedes: impl Fn(usize) -> bool) -> usize {
    let (mut low, mut high) = (rows.start, rows.end);
    while low < high {
        let middle = low + (high - low) / 2;
        if precedes(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Decimal128Array;
    use pondra_planner::Expr;

    use super::*;

    fn ascending() -> SortKey {
        SortKey {
            expr: Expr::Literal(ScalarValue::Null),
            descending: false,
            nulls_first: false,
        }
    }

    #[test]
    fn an_offset_finer_than_the_keys_reaches_between_them() {
        // 1.00, 1.01, 1.02: 0.001 before 1.01 lies between 1.00 and 1.01.
        let keys = Decimal128Array::from(vec![100, 101, 102])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let keys = RangeKeys::new(&(Arc::new(keys) as ArrayRef), &ascending()).unwrap();
        let offset = ScalarValue::Decimal {
            value: 1,
            precision: 1,
            scale: 3,
        };
        let distance = keys.distance(&offset).unwrap();
        // UNBOUNDED PRECEDING AND 0.001 PRECEDING: the keys below 1.01.
        assert_eq!(keys.end(0..3, 1, &distance, true), Some(1));
        // 0.001 PRECEDING AND ...: from the key 1.01 itself.
        assert_eq!(keys.start(0..3, 1, &distance, true), Some(1));
        // 0.001 FOLLOWING AND ...: from the key after 1.01.
        assert_eq!(keys.start(0..3, 1, &distance, false), Some(2));
        // ... AND 0.001 FOLLOWING: through the key 1.01.
        assert_eq!(keys.end(0..3, 1, &distance, false), Some(2));
    }
}
