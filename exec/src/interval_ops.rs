//! Functions of intervals, as DuckDB computes them: a field (years and months from the
//! months, days, hours down to microseconds from the time part), the whole as seconds,
//! truncation to a field, and scaling by a number, where a fraction of a month becomes days
//! (30 to the month) and a fraction of a day becomes time (24 hours to the day).

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Float64Array, Int64Array, IntervalMonthDayNanoArray};
use arrow::datatypes::{Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType};
use pondra_planner::{DatePart, IntervalOp};

use crate::{ExecError, Result};

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;
const DAYS_PER_MONTH: i64 = 30;

/// One of the interval functions.
pub fn function(op: IntervalOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    let intervals = args[0].as_primitive::<IntervalMonthDayNanoType>();
    Ok(match op {
        IntervalOp::Part(part) => {
            let parts: Int64Array = intervals
                .iter()
                .map(|i| i.map(|i| field(i, part)))
                .collect();
            Arc::new(parts)
        }
        IntervalOp::Epoch => {
            let seconds: Float64Array = intervals.iter().map(|i| i.map(epoch_seconds)).collect();
            Arc::new(seconds)
        }
        IntervalOp::EpochUnits { per_second } => {
            let units = intervals
                .iter()
                .map(|i| i.map(|i| epoch_units(i, per_second)).transpose())
                .collect::<Result<Int64Array>>()?;
            Arc::new(units)
        }
        IntervalOp::Nanosecond => {
            let nanos: Int64Array = intervals
                .iter()
                .map(|i| i.map(|i| micros(i) % MICROS_PER_MINUTE * 1_000))
                .collect();
            Arc::new(nanos)
        }
        IntervalOp::Trunc(part) => {
            let truncated: IntervalMonthDayNanoArray = intervals
                .iter()
                .map(|i| i.map(|i| trunc(i, part)))
                .collect();
            Arc::new(truncated)
        }
        IntervalOp::Scale { divide } => scale(intervals, args[1].as_primitive(), divide)?,
    })
}

fn micros(i: IntervalMonthDayNano) -> i64 {
    i.nanoseconds / 1_000
}

fn field(i: IntervalMonthDayNano, part: DatePart) -> i64 {
    let (months, days, micros) = (i64::from(i.months), i64::from(i.days), micros(i));
    match part {
        DatePart::Year => months / 12,
        DatePart::Month => months % 12,
        DatePart::Quarter => months % 12 / 3 + 1,
        DatePart::Decade => months / 120,
        DatePart::Century => months / 1_200,
        DatePart::Millennium => months / 12_000,
        DatePart::Day => days,
        DatePart::Hour => micros / MICROS_PER_HOUR,
        DatePart::Minute => micros % MICROS_PER_HOUR / MICROS_PER_MINUTE,
        DatePart::Second => micros % MICROS_PER_MINUTE / MICROS_PER_SECOND,
        DatePart::Millisecond => micros % MICROS_PER_MINUTE / 1_000,
        DatePart::Microsecond => micros % MICROS_PER_MINUTE,
        other => unreachable!("the binder refuses the interval part {other:?}"),
    }
}

/// The whole interval in microseconds: a year of 365.25 days, a month of 30.
fn epoch_micros(i: IntervalMonthDayNano) -> i128 {
    let months = i128::from(i.months);
    let years = months / 12;
    let per_day = i128::from(MICROS_PER_DAY);
    let days = years * 36_525 / 100 + months % 12 * i128::from(DAYS_PER_MONTH) + i128::from(i.days);
    let quarter_days = years * 36_525 % 100 * per_day / 100;
    days * per_day + quarter_days + i128::from(micros(i))
}

/// The whole interval as a count of `per_second` units, which must fit a BIGINT. Unlike the
/// epoch in seconds, DuckDB counts every month here as 30 days, a year as 360.
fn epoch_units(i: IntervalMonthDayNano, per_second: i64) -> Result<i64> {
    let days = i128::from(i.months) * i128::from(DAYS_PER_MONTH) + i128::from(i.days);
    let micros = days * i128::from(MICROS_PER_DAY) + i128::from(micros(i));
    let units = micros * i128::from(per_second) / 1_000_000;
    i64::try_from(units).map_err(|_| {
        ExecError::Execution(format!(
            "interval out of range: {} in units of 1/{per_second} s",
            crate::casts::interval_text(i, "month")
        ))
    })
}

fn epoch_seconds(i: IntervalMonthDayNano) -> f64 {
    epoch_micros(i) as f64 / MICROS_PER_SECOND as f64
}

fn trunc(i: IntervalMonthDayNano, part: DatePart) -> IntervalMonthDayNano {
    let months = |per: i32| IntervalMonthDayNano::new(i.months / per * per, 0, 0);
    let time = |per: i64| {
        let micros = micros(i) / per * per;
        IntervalMonthDayNano::new(i.months, i.days, micros * 1_000)
    };
    match part {
        DatePart::Millennium => months(12_000),
        DatePart::Century => months(1_200),
        DatePart::Decade => months(120),
        DatePart::Year => months(12),
        DatePart::Quarter => months(3),
        DatePart::Month => months(1),
        DatePart::Week => IntervalMonthDayNano::new(i.months, i.days / 7 * 7, 0),
        DatePart::Day => IntervalMonthDayNano::new(i.months, i.days, 0),
        DatePart::Hour => time(MICROS_PER_HOUR),
        DatePart::Minute => time(MICROS_PER_MINUTE),
        DatePart::Second => time(MICROS_PER_SECOND),
        DatePart::Millisecond => time(1_000),
        _ => i,
    }
}

/// Each interval times (or divided by) a number: whole months stay months, a fraction of one
/// becomes days, a fraction of a day becomes time.
fn scale(
    intervals: &arrow::array::PrimitiveArray<IntervalMonthDayNanoType>,
    factors: &arrow::array::PrimitiveArray<Float64Type>,
    divide: bool,
) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(intervals.len());
    for (interval, factor) in intervals.iter().zip(factors) {
        let (Some(i), Some(factor)) = (interval, factor) else {
            out.push(None);
            continue;
        };
        if divide && factor == 0.0 {
            return Err(ExecError::Execution("division by zero".into()));
        }
        // A whole multiplier scales exactly; anything else goes through doubles.
        let scaled = match !divide && factor.fract() == 0.0 && factor.abs() < 1e15 {
            true => multiplied(i, factor as i64),
            false => as_postgres(i, factor, divide),
        };
        out.push(Some(scaled.ok_or_else(|| {
            ExecError::Execution(format!(
                "interval out of range: {} scaled by {factor}",
                crate::casts::interval_text(i, "month")
            ))
        })?));
    }
    Ok(Arc::new(IntervalMonthDayNanoArray::from(out)))
}

fn multiplied(i: IntervalMonthDayNano, n: i64) -> Option<IntervalMonthDayNano> {
    let months = i32::try_from(i64::from(i.months).checked_mul(n)?).ok()?;
    let days = i32::try_from(i64::from(i.days).checked_mul(n)?).ok()?;
    Some(IntervalMonthDayNano::new(
        months,
        days,
        i.nanoseconds.checked_mul(n)?,
    ))
}

/// PostgreSQL's `interval_mul` / `interval_div`, which DuckDB follows: the months and days
/// scaled and truncated, the fraction of a month carried to days (30 to the month) and the
/// fraction of a day to time, each rounded to the microsecond so that float noise does not
/// leave `23 days 24:00:00` where `24 days` is meant.
fn as_postgres(i: IntervalMonthDayNano, factor: f64, divide: bool) -> Option<IntervalMonthDayNano> {
    let apply = |v: f64| if divide { v / factor } else { v * factor };
    let to_micro = |v: f64| (v * 1e6).round_ties_even() / 1e6;
    let whole = |v: f64| (v.is_finite() && v.abs() < i32::MAX as f64).then_some(v.trunc() as i32);
    let (months, days) = (apply(f64::from(i.months)), apply(f64::from(i.days)));
    let (whole_months, mut whole_days) = (whole(months)?, whole(days)?);
    let month_days = to_micro((months - f64::from(whole_months)) * DAYS_PER_MONTH as f64);
    let seconds_per_day = (MICROS_PER_DAY / MICROS_PER_SECOND) as f64;
    let mut seconds = to_micro(
        (days - f64::from(whole_days) + month_days - month_days.trunc()) * seconds_per_day,
    );
    if seconds.abs() >= seconds_per_day {
        let carried = (seconds / seconds_per_day).trunc();
        whole_days = whole_days.checked_add(carried as i32)?;
        seconds -= carried * seconds_per_day;
    }
    whole_days = whole_days.checked_add(month_days.trunc() as i32)?;
    let micros = (apply(micros(i) as f64) + seconds * MICROS_PER_SECOND as f64).round_ties_even();
    if !micros.is_finite() || micros.abs() >= (i64::MAX / 1_000) as f64 {
        return None;
    }
    Some(IntervalMonthDayNano::new(
        whole_months,
        whole_days,
        micros as i64 * 1_000,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(months: i32, days: i32, micros: i64) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(months, days, micros * 1_000)
    }

    #[test]
    fn fields_and_epoch_as_duckdb_has_them() {
        let i = interval(
            14,
            40,
            25 * MICROS_PER_HOUR + 59 * MICROS_PER_MINUTE + 58_123_456,
        );
        let fields = [
            (DatePart::Year, 1),
            (DatePart::Month, 2),
            (DatePart::Quarter, 1),
            (DatePart::Day, 40),
            (DatePart::Hour, 25),
            (DatePart::Minute, 59),
            (DatePart::Second, 58),
            (DatePart::Millisecond, 58_123),
            (DatePart::Microsecond, 58_123_456),
        ];
        for (part, expected) in fields {
            assert_eq!(field(i, part), expected, "{part:?}");
        }
        assert_eq!(epoch_seconds(i), 40_291_198.123456);
        let negative = interval(-14, -40, -(25 * MICROS_PER_HOUR));
        assert_eq!(field(negative, DatePart::Year), -1);
        assert_eq!(field(negative, DatePart::Quarter), 1);
        assert_eq!(field(negative, DatePart::Hour), -25);
    }

    #[test]
    fn scaling_carries_fractions_down() {
        let scaled = |i, factor| as_postgres(i, factor, false);
        assert_eq!(scaled(interval(1, 0, 0), 1.5), Some(interval(1, 15, 0)));
        assert_eq!(
            scaled(interval(1, 1, 0), 0.5),
            Some(interval(0, 15, 12 * MICROS_PER_HOUR))
        );
        assert_eq!(
            as_postgres(interval(1, 1, 0), 3.0, true),
            Some(interval(0, 10, 8 * MICROS_PER_HOUR))
        );
        // 4 months * 8.2 is 32.8 months: 32 months and 24 days, not 23 days 24:00:00.
        assert_eq!(scaled(interval(4, 0, 0), 8.2), Some(interval(32, 24, 0)));
        assert_eq!(multiplied(interval(1, 2, 3), 2), Some(interval(2, 4, 6)));
        assert_eq!(multiplied(interval(i32::MAX, 0, 0), 2), None);
    }
}
