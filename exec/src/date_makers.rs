//! Dates and timestamps made from their parts (`make_date`, `make_timestamp`), and `age`,
//! the difference of two timestamps in years, months, days and time, as PostgreSQL counts it.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, IntervalMonthDayNanoArray, PrimitiveArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{Float64Type, Int64Type, IntervalMonthDayNano, TimestampMicrosecondType};
use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use pondra_planner::DatePart;

use crate::{ExecError, Result};

const MICROS_PER_DAY: i64 = 86_400_000_000;

fn date_of(year: i64, month: i64, day: i64) -> Result<NaiveDate> {
    let valid = |v: i64| u32::try_from(v).ok();
    i32::try_from(year)
        .ok()
        .zip(valid(month))
        .zip(valid(day))
        .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(|| ExecError::Execution(format!("date out of range: {year}-{month}-{day}")))
}

/// The date the first three of `parts` (year, month, day) give at `row`.
fn date_at(parts: &[&PrimitiveArray<Int64Type>], row: usize) -> Result<NaiveDate> {
    date_of(
        parts[0].value(row),
        parts[1].value(row),
        parts[2].value(row),
    )
}

/// `make_date(year, month, day)`.
pub fn make_date(args: &[ArrayRef]) -> Result<ArrayRef> {
    let parts: Vec<_> = args.iter().map(|a| a.as_primitive::<Int64Type>()).collect();
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date");
    let mut out = Vec::with_capacity(args[0].len());
    for row in 0..args[0].len() {
        if parts.iter().any(|p| p.is_null(row)) {
            out.push(None);
            continue;
        }
        let date = date_at(&parts, row)?;
        out.push(Some((date - epoch).num_days() as i32));
    }
    Ok(Arc::new(Date32Array::from(out)))
}

/// `make_timestamp(year, month, day, hour, minute, seconds)`, the seconds with a fraction.
pub fn make_timestamp(args: &[ArrayRef]) -> Result<ArrayRef> {
    let parts: Vec<_> = args[..5]
        .iter()
        .map(|a| a.as_primitive::<Int64Type>())
        .collect();
    let seconds = args[5].as_primitive::<Float64Type>();
    let mut out = Vec::with_capacity(args[0].len());
    for row in 0..args[0].len() {
        if parts.iter().any(|p| p.is_null(row)) || seconds.is_null(row) {
            out.push(None);
            continue;
        }
        let date = date_at(&parts, row)?;
        let (hour, minute, second) = (parts[3].value(row), parts[4].value(row), seconds.value(row));
        if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0.0..60.0).contains(&second)
        {
            return Err(ExecError::Execution(format!(
                "time out of range: {hour}:{minute}:{second}"
            )));
        }
        let micros = (hour * 3600 + minute * 60) * 1_000_000 + (second * 1e6).round() as i64;
        let midnight = date.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
        out.push(Some(midnight.timestamp_micros() + micros));
    }
    Ok(Arc::new(TimestampMicrosecondArray::from(out)))
}

/// `age(a, b)`: `a - b` as years and months, days, and time, each part subtracted on its own
/// and borrowed from the next larger (a month borrowed has the days of the earlier
/// timestamp's month), as PostgreSQL computes it.
pub fn age(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (a, b) = (
        crate::infinite_times::finite_only(&args[0]),
        crate::infinite_times::finite_only(&args[1]),
    );
    let (a, b) = (
        a.as_primitive::<TimestampMicrosecondType>(),
        b.as_primitive::<TimestampMicrosecondType>(),
    );
    let stamp = |micros: i64| {
        chrono::DateTime::from_timestamp_micros(micros)
            .map(|t| t.naive_utc())
            .ok_or_else(|| ExecError::Execution(format!("timestamp out of range: {micros}")))
    };
    let mut out = Vec::with_capacity(a.len());
    for row in 0..a.len() {
        if a.is_null(row) || b.is_null(row) {
            out.push(None);
            continue;
        }
        out.push(Some(between(stamp(a.value(row))?, stamp(b.value(row))?)));
    }
    Ok(Arc::new(IntervalMonthDayNanoArray::from(out)))
}

fn between(a: NaiveDateTime, b: NaiveDateTime) -> IntervalMonthDayNano {
    if a < b {
        let IntervalMonthDayNano {
            months,
            days,
            nanoseconds,
        } = between(b, a);
        return IntervalMonthDayNano::new(-months, -days, -nanoseconds);
    }
    let time = |t: NaiveDateTime| {
        t.num_seconds_from_midnight() as i64 * 1_000_000 + (t.nanosecond() / 1000) as i64
    };
    let mut micros = time(a) - time(b);
    let mut days = a.day() as i64 - b.day() as i64;
    let mut months = (a.year() as i64 - b.year() as i64) * 12 + a.month() as i64 - b.month() as i64;
    if micros < 0 {
        micros += MICROS_PER_DAY;
        days -= 1;
    }
    if days < 0 {
        days += days_in_month(b.year(), b.month());
        months -= 1;
    }
    debug_assert!(months >= 0 && days >= 0 && micros >= 0);
    IntervalMonthDayNano::new(months as i32, days as i32, micros * 1000)
}

/// `last_day(d)`: the last day of the month of a date or a timestamp, as a date.
pub fn last_day(value: &ArrayRef) -> Result<ArrayRef> {
    let days = arrow::compute::cast(value, &arrow::datatypes::DataType::Date32)?;
    let days = days.as_primitive::<arrow::datatypes::Date32Type>();
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date");
    let out: Date32Array = days
        .iter()
        .map(|day| {
            let date = epoch.checked_add_signed(chrono::Duration::days(day? as i64))?;
            let last = days_in_month(date.year(), date.month()) as u32;
            let end = date.with_day(last)?;
            Some((end - epoch).num_days() as i32)
        })
        .collect();
    Ok(Arc::new(out))
}

/// An interval of each row's count of `part`s (whole for the parts above seconds).
pub fn interval_of(counts: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    let (months, days, nanos): (i64, i64, i64) = match part {
        DatePart::Millennium => (12_000, 0, 0),
        DatePart::Century => (1_200, 0, 0),
        DatePart::Decade => (120, 0, 0),
        DatePart::Year => (12, 0, 0),
        DatePart::Quarter => (3, 0, 0),
        DatePart::Month => (1, 0, 0),
        DatePart::Week => (0, 7, 0),
        DatePart::Day => (0, 1, 0),
        DatePart::Hour => (0, 0, 3_600_000_000_000),
        DatePart::Minute => (0, 0, 60_000_000_000),
        DatePart::Second => (0, 0, 1_000_000_000),
        DatePart::Millisecond => (0, 0, 1_000_000),
        DatePart::Microsecond => (0, 0, 1_000),
        other => {
            return Err(ExecError::Execution(format!(
                "an interval cannot be counted in {other:?}"
            )));
        }
    };
    let overflow = || ExecError::Execution(format!("an interval of {part:?}s out of range"));
    let whole = |n: i64| -> Result<IntervalMonthDayNano> {
        let months = i32::try_from(n.checked_mul(months).ok_or_else(overflow)?);
        let days = i32::try_from(n.checked_mul(days).ok_or_else(overflow)?);
        let nanos = n.checked_mul(nanos).ok_or_else(overflow)?;
        Ok(IntervalMonthDayNano::new(
            months.map_err(|_| overflow())?,
            days.map_err(|_| overflow())?,
            nanos,
        ))
    };
    let mut out = Vec::with_capacity(counts.len());
    if let Some(fractions) = counts.as_primitive_opt::<Float64Type>() {
        for n in fractions.iter() {
            out.push(match n {
                Some(n) => {
                    let total = (n * nanos as f64).round();
                    if !total.is_finite() || total.abs() > i64::MAX as f64 {
                        return Err(overflow());
                    }
                    Some(IntervalMonthDayNano::new(0, 0, total as i64))
                }
                None => None,
            });
        }
    } else {
        for n in counts.as_primitive::<Int64Type>().iter() {
            out.push(n.map(whole).transpose()?);
        }
    }
    Ok(Arc::new(IntervalMonthDayNanoArray::from(out)))
}

fn days_in_month(year: i32, month: u32) -> i64 {
    let first = NaiveDate::from_ymd_opt(year, month, 1).expect("a valid month");
    let next = match month {
        12 => NaiveDate::from_ymd_opt(year + 1, 1, 1),
        _ => NaiveDate::from_ymd_opt(year, month + 1, 1),
    };
    next.map_or(31, |next| (next - first).num_days())
}

/// `time ± interval` and `time - time` (ADR 0065): a time of day moved by an interval's time
/// part (its days and months are whole days, which leave a time of day where it is) wraps
/// around midnight; the difference of two times is an interval of microseconds.
pub fn time_arithmetic(time: &ArrayRef, other: &ArrayRef, subtract: bool) -> Result<ArrayRef> {
    use arrow::datatypes::{IntervalMonthDayNanoType, Time64MicrosecondType};
    const MICROS_PER_DAY: i64 = 86_400_000_000;
    if let arrow::datatypes::DataType::Timestamp(..) = time.data_type() {
        return timestamp_difference(time, other);
    }
    let times = time.as_primitive::<Time64MicrosecondType>();
    let sign = if subtract { -1 } else { 1 };
    Ok(match other.data_type() {
        arrow::datatypes::DataType::Interval(_) => {
            let intervals = other.as_primitive::<IntervalMonthDayNanoType>();
            let moved: arrow::array::Time64MicrosecondArray =
                arrow::compute::binary(times, intervals, |t, i| {
                    let shift = (i.nanoseconds / 1_000).rem_euclid(MICROS_PER_DAY);
                    (t + sign * shift).rem_euclid(MICROS_PER_DAY)
                })?;
            Arc::new(moved)
        }
        _ => {
            let others = other.as_primitive::<Time64MicrosecondType>();
            let between: arrow::array::IntervalMonthDayNanoArray =
                arrow::compute::binary(times, others, |a, b| {
                    arrow::datatypes::IntervalMonthDayNano::new(0, 0, (a - b) * 1_000)
                })?;
            Arc::new(between)
        }
    })
}

/// `a - b` of two wall times: whole days and the time left over, as both anchors give it.
fn timestamp_difference(a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    const MICROS_PER_DAY: i64 = 86_400_000_000;
    let infinity = crate::infinite_times::TIMESTAMP_INFINITY;
    let (a, b) = (
        a.as_primitive::<TimestampMicrosecondType>(),
        b.as_primitive::<TimestampMicrosecondType>(),
    );
    let mut out = Vec::with_capacity(a.len());
    for (a, b) in a.iter().zip(b) {
        let (Some(a), Some(b)) = (a, b) else {
            out.push(None);
            continue;
        };
        if a.abs() == infinity || b.abs() == infinity {
            return Err(ExecError::Execution(
                "cannot subtract infinite timestamps".into(),
            ));
        }
        let micros = a - b;
        let days = micros / MICROS_PER_DAY;
        let rest = micros % MICROS_PER_DAY;
        out.push(Some(IntervalMonthDayNano::new(
            0,
            days as i32,
            rest * 1_000,
        )));
    }
    Ok(Arc::new(IntervalMonthDayNanoArray::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn age_borrows_as_postgres_does() {
        // SELECT age('2001-04-10', '1957-06-13') is 43 years 9 mons 27 days in PostgreSQL.
        let age = between(at("2001-04-10 00:00:00"), at("1957-06-13 00:00:00"));
        assert_eq!(
            (age.months, age.days, age.nanoseconds),
            (43 * 12 + 9, 27, 0)
        );
        let back = between(at("1957-06-13 00:00:00"), at("2001-04-10 00:00:00"));
        assert_eq!((back.months, back.days), (-(43 * 12 + 9), -27));
        let hours = between(at("2020-03-01 01:00:00"), at("2020-02-28 23:00:00"));
        assert_eq!(
            (hours.months, hours.days, hours.nanoseconds),
            (0, 1, 2 * 3600 * 1_000_000_000)
        );
    }
}
