//! Parts of dates and timestamps: `EXTRACT(part FROM x)` / `date_part`, and DuckDB's
//! `date_sub(part, a, b)`, the whole parts elapsed between two times.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array};
use arrow::compute::kernels::temporal::{DatePart as P, date_part as arrow_part};
use arrow::datatypes::{DataType, Int64Type, IntervalMonthDayNano, TimestampMicrosecondType};
use chrono::{Datelike, NaiveDateTime};
use pondra_planner::DatePart;

use crate::Result;
use crate::functions::stamp;

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// `part` of each date or timestamp in `value`, as a BIGINT.
pub fn date_part(value: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    let value = &crate::infinite_times::finite_only(value);
    let simple = |p: P| -> Result<ArrayRef> {
        let part = arrow_part(value, p)?;
        Ok(arrow::compute::cast(&part, &DataType::Int64)?)
    };
    let years = |map: fn(i64) -> i64| -> Result<ArrayRef> {
        let years = simple(P::Year)?;
        let out: Int64Array = years.as_primitive::<Int64Type>().unary(map);
        Ok(Arc::new(out))
    };
    match part {
        DatePart::Year => simple(P::Year),
        DatePart::Quarter => simple(P::Quarter),
        DatePart::Month => simple(P::Month),
        DatePart::Week => simple(P::WeekISO),
        DatePart::Day => simple(P::Day),
        DatePart::DayOfWeek => simple(P::DayOfWeekSunday0),
        DatePart::DayOfYear => simple(P::DayOfYear),
        DatePart::Hour => simple(P::Hour),
        DatePart::Minute => simple(P::Minute),
        DatePart::Second => simple(P::Second),
        DatePart::IsoYear => simple(P::YearISO),
        DatePart::IsoDayOfWeek => {
            let monday0 = simple(P::DayOfWeekMonday0)?;
            let out: Int64Array = monday0.as_primitive::<Int64Type>().unary(|d| d + 1);
            Ok(Arc::new(out))
        }
        DatePart::Decade => years(|y| y.div_euclid(10)),
        // Years 1 to 100 are the first century; there is no year 0 before them.
        DatePart::Century => years(|y| {
            if y > 0 {
                (y - 1) / 100 + 1
            } else {
                y / 100 - 1
            }
        }),
        DatePart::Millennium => years(|y| {
            if y > 0 {
                (y - 1) / 1000 + 1
            } else {
                y / 1000 - 1
            }
        }),
        DatePart::Millisecond | DatePart::Microsecond => {
            let seconds = simple(P::Second)?;
            let nanos = simple(P::Nanosecond)?;
            let (per_second, nanos_per) = match part {
                DatePart::Millisecond => (1_000, 1_000_000),
                _ => (1_000_000, 1_000),
            };
            let out: Int64Array = arrow::compute::binary(
                seconds.as_primitive::<Int64Type>(),
                nanos.as_primitive::<Int64Type>(),
                |s, n| s * per_second + (n % 1_000_000_000) / nanos_per,
            )?;
            Ok(Arc::new(out))
        }
    }
}

/// Whole months from `start` to `end` (`start <= end`), as DuckDB counts them: a month is
/// complete when the day and time of day come round again, or the end is the last day of a
/// month shorter than the start's day.
fn whole_months(start: NaiveDateTime, end: NaiveDateTime) -> i64 {
    debug_assert!(start <= end);
    let mut months =
        (end.year() as i64 - start.year() as i64) * 12 + end.month() as i64 - start.month() as i64;
    let end_is_month_end = (end.date() + chrono::Duration::days(1)).month() != end.month();
    let start_key = (start.day(), start.time());
    let end_key = (end.day(), end.time());
    let start_day_beyond = end_is_month_end && start.day() >= end.day();
    let short = match start_day_beyond {
        true => start.time() > end.time(),
        false => start_key > end_key,
    };
    if short {
        months -= 1;
    }
    months
}

fn whole_parts(start: i64, end: i64, part: DatePart) -> Result<i64> {
    if start > end {
        return Ok(-whole_parts(end, start, part)?);
    }
    let months_per_part = match part {
        DatePart::Year | DatePart::IsoYear => Some(12),
        DatePart::Quarter => Some(3),
        DatePart::Month => Some(1),
        DatePart::Decade => Some(120),
        DatePart::Century => Some(1200),
        DatePart::Millennium => Some(12000),
        _ => None,
    };
    if let Some(per_part) = months_per_part {
        return Ok(whole_months(stamp(start)?, stamp(end)?) / per_part);
    }
    let elapsed = end - start;
    Ok(match part {
        DatePart::Year
        | DatePart::IsoYear
        | DatePart::Quarter
        | DatePart::Month
        | DatePart::Decade
        | DatePart::Century
        | DatePart::Millennium => unreachable!("counted in months above"),
        DatePart::Week => elapsed / (7 * MICROS_PER_DAY),
        DatePart::Day | DatePart::DayOfWeek | DatePart::IsoDayOfWeek | DatePart::DayOfYear => {
            elapsed / MICROS_PER_DAY
        }
        DatePart::Hour => elapsed / (3600 * MICROS_PER_SECOND),
        DatePart::Minute => elapsed / (60 * MICROS_PER_SECOND),
        DatePart::Second => elapsed / MICROS_PER_SECOND,
        DatePart::Millisecond => elapsed / 1000,
        DatePart::Microsecond => elapsed,
    })
}

/// `date_sub(part, a, b)`: whole `part`s from `a` to `b`, both timestamps in microseconds.
pub fn date_sub(a: &ArrayRef, b: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    let (a, b) = (
        &crate::infinite_times::finite_only(a),
        &crate::infinite_times::finite_only(b),
    );
    let (a, b) = (
        a.as_primitive::<TimestampMicrosecondType>(),
        b.as_primitive::<TimestampMicrosecondType>(),
    );
    let out = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => whole_parts(x, y, part).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<Int64Array>>()?;
    Ok(Arc::new(out))
}

/// `time_bucket(width, t [, origin])`: the start of `t`'s bucket, as a timestamp.
pub fn time_bucket(args: &[ArrayRef]) -> Result<ArrayRef> {
    use arrow::array::Array;
    use arrow::datatypes::IntervalMonthDayNanoType;
    let widths = args[0].as_primitive::<IntervalMonthDayNanoType>();
    let times = args[1].as_primitive::<TimestampMicrosecondType>();
    let origins = args
        .get(2)
        .map(|o| o.as_primitive::<TimestampMicrosecondType>());
    let fail = |message: &str| crate::ExecError::Execution(format!("time_bucket: {message}"));
    let mut out = Vec::with_capacity(times.len());
    for row in 0..times.len() {
        let origin = match origins {
            Some(origins) if origins.is_null(row) => None,
            Some(origins) => Some(Some(origins.value(row))),
            None => Some(None),
        };
        let (Some(origin), true, true) = (origin, widths.is_valid(row), times.is_valid(row)) else {
            out.push(None);
            continue;
        };
        let (width, time) = (widths.value(row), times.value(row));
        let micros = i64::from(width.days) * MICROS_PER_DAY + width.nanoseconds / 1000;
        let bucket = match (width.months, micros) {
            (0, m) if m > 0 => {
                // Days and less from a Monday, 2000-01-03.
                let origin = origin.unwrap_or(946_857_600_000_000);
                let from = time as i128 - origin as i128;
                let start = origin as i128 + from.div_euclid(m as i128) * m as i128;
                i64::try_from(start).map_err(|_| fail("the bucket is out of range"))?
            }
            (months, 0) if months > 0 => {
                // Months from 2000-01-01.
                let origin = stamp(origin.unwrap_or(946_684_800_000_000))?;
                let at = stamp(time)?;
                let month = |t: &NaiveDateTime| t.year() as i64 * 12 + t.month0() as i64;
                let mut from = month(&at) - month(&origin);
                // A time before the origin's day and time in its month is in the month before.
                if (at.day(), at.time()) < (origin.day(), origin.time()) {
                    from -= 1;
                }
                let shift = from.div_euclid(i64::from(months)) * i64::from(months);
                let shifted = match shift >= 0 {
                    true => origin.checked_add_months(chrono::Months::new(shift as u32)),
                    false => origin.checked_sub_months(chrono::Months::new((-shift) as u32)),
                };
                let shifted = shifted.ok_or_else(|| fail("the bucket is out of range"))?;
                shifted.and_utc().timestamp_micros()
            }
            (0, _) => return Err(fail("the bucket width must be positive")),
            _ => return Err(fail("a bucket width cannot mix months with days or time")),
        };
        out.push(Some(bucket));
    }
    Ok(Arc::new(arrow::array::TimestampMicrosecondArray::from(out)))
}

/// The most values one series may have.
const MAX_SERIES: usize = 1 << 28;

/// `t + months, days and microseconds`, months first as calendars add them (the day clamped to
/// the month's last).
fn add_interval(micros: i64, step: IntervalMonthDayNano) -> Result<i64> {
    let time = stamp(micros)?;
    let months = chrono::Months::new(step.months.unsigned_abs());
    let moved = match step.months >= 0 {
        true => time.checked_add_months(months),
        false => time.checked_sub_months(months),
    };
    let out_of_range = || crate::ExecError::Execution("a series went out of range".into());
    let moved = moved.ok_or_else(out_of_range)?.and_utc().timestamp_micros();
    let rest = i64::from(step.days)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|days| days.checked_add(step.nanoseconds / 1000))
        .ok_or_else(out_of_range)?;
    moved.checked_add(rest).ok_or_else(out_of_range)
}

/// `generate_series(start, stop, interval)` (stop included) or `range` (stop excluded) over
/// timestamps: one list per row.
pub fn time_series(args: &[ArrayRef], inclusive: bool) -> Result<ArrayRef> {
    use arrow::array::{Array, ListBuilder, TimestampMicrosecondBuilder};
    use arrow::datatypes::IntervalMonthDayNanoType;
    let starts = args[0].as_primitive::<TimestampMicrosecondType>();
    let stops = args[1].as_primitive::<TimestampMicrosecondType>();
    let steps = args[2].as_primitive::<IntervalMonthDayNanoType>();
    let mut out = ListBuilder::new(TimestampMicrosecondBuilder::new());
    let mut made = 0usize;
    for row in 0..starts.len() {
        if starts.is_null(row) || stops.is_null(row) || steps.is_null(row) {
            out.append(false);
            continue;
        }
        let (start, stop, step) = (starts.value(row), stops.value(row), steps.value(row));
        let forward = match (step.months, step.days, step.nanoseconds) {
            (0, 0, 0) => {
                return Err(crate::ExecError::Execution(
                    "step size cannot equal zero".into(),
                ));
            }
            (m, d, n) => m >= 0 && d >= 0 && n >= 0,
        };
        let within = |t: i64| match (forward, inclusive) {
            (true, true) => t <= stop,
            (true, false) => t < stop,
            (false, true) => t >= stop,
            (false, false) => t > stop,
        };
        let mut value = start;
        while within(value) {
            made += 1;
            if made > MAX_SERIES {
                return Err(crate::ExecError::Execution(format!(
                    "a series of more than {MAX_SERIES} values is not supported yet"
                )));
            }
            out.values().append_value(value);
            let next = add_interval(value, step)?;
            if next == value {
                break;
            }
            value = next;
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
            .expect("a timestamp")
            .and_utc()
            .timestamp_micros()
    }

    #[test]
    fn months_are_whole_when_the_day_comes_round() {
        let months = |a, b| whole_parts(at(a), at(b), DatePart::Month).expect("in range");
        assert_eq!(months("2020-01-15 00:00:00", "2020-02-14 23:59:59"), 0);
        assert_eq!(months("2020-01-15 00:00:00", "2020-02-15 00:00:00"), 1);
        // The end of a shorter month completes a month begun on a later day.
        assert_eq!(months("2020-01-31 00:00:00", "2020-02-29 00:00:00"), 1);
        assert_eq!(months("2020-02-15 00:00:00", "2020-01-15 00:00:00"), -1);
        let years = whole_parts(
            at("2019-06-01 00:00:00"),
            at("2021-05-31 00:00:00"),
            DatePart::Year,
        );
        assert_eq!(years.expect("in range"), 1);
    }

    #[test]
    fn finer_parts_truncate_toward_zero() {
        let hours = |a, b| whole_parts(at(a), at(b), DatePart::Hour).expect("in range");
        assert_eq!(hours("2020-01-01 00:30:00", "2020-01-01 02:29:59"), 1);
        assert_eq!(hours("2020-01-01 02:29:59", "2020-01-01 00:30:00"), -1);
    }
}
