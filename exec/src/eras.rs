//! Dates before the year 1 as PostgreSQL and DuckDB write them: `0044-03-15 (BC)` (DuckDB)
//! or `0044-03-15 BC` (PostgreSQL) is the year -43 of the proleptic Gregorian calendar,
//! as there is no year 0 in either's text.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Date32Type, TimestampMicrosecondType};
use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime};

use crate::{ExecError, Result};

/// Texts cast to a DATE or TIMESTAMP when some of them end in an era (`(BC)`): those read
/// here, the others by `cast`. `None` when none does.
pub fn cast_with_eras(texts: &StringArray, to: &DataType, safe: bool) -> Option<Result<ArrayRef>> {
    if !texts.iter().flatten().any(|t| era_body(t).is_some()) {
        return None;
    }
    Some(cast_eras(texts, to, safe))
}

fn cast_eras(texts: &StringArray, to: &DataType, safe: bool) -> Result<ArrayRef> {
    let others: StringArray = texts
        .iter()
        .map(|t| t.filter(|t| era_body(t).is_none()))
        .collect();
    let others = crate::casts::cast(&(Arc::new(others) as ArrayRef), to, safe)?;
    let mut values: Vec<Option<i64>> = Vec::with_capacity(texts.len());
    for (row, text) in texts.iter().enumerate() {
        let Some(body) = text.and_then(era_body) else {
            values.push(others.is_valid(row).then(|| match to {
                DataType::Date32 => others.as_primitive::<Date32Type>().value(row) as i64,
                _ => others.as_primitive::<TimestampMicrosecondType>().value(row),
            }));
            continue;
        };
        match before_christ(body) {
            Some(moment) if *to == DataType::Date32 => {
                values.push(Some(
                    moment.date().num_days_from_ce() as i64 - UNIX_EPOCH_DAYS,
                ));
            }
            Some(moment) => values.push(Some(moment.and_utc().timestamp_micros())),
            None if safe => values.push(None),
            None => {
                return Err(ExecError::Execution(format!(
                    "conversion failed: Cannot cast string '{}' to value of {to} type",
                    text.unwrap_or_default()
                )));
            }
        }
    }
    Ok(match to {
        DataType::Date32 => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|d| d as i32))
                .collect::<Date32Array>(),
        ),
        _ => Arc::new(TimestampMicrosecondArray::from(values).with_data_type(to.clone())),
    })
}

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAYS: i64 = 719_163;

/// The text before a trailing `(BC)` or ` BC`, any case.
fn era_body(text: &str) -> Option<&str> {
    let text = text.trim_end();
    let cut = |suffix: &str| {
        let at = text.len().checked_sub(suffix.len())?;
        let tail = text.get(at..)?;
        tail.eq_ignore_ascii_case(suffix)
            .then(|| text[..at].trim_end())
    };
    cut("(BC)").or_else(|| cut(" BC"))
}

/// `0044-03-15` or `44-03-15 10:00:00.5` before Christ: the year 1 - 44.
fn before_christ(body: &str) -> Option<NaiveDateTime> {
    let body = body.trim();
    let (date, time) = match body.split_once([' ', 'T']) {
        Some((date, time)) => (date, Some(time.trim())),
        None => (body, None),
    };
    let mut parts = date.splitn(3, '-');
    let year: i32 = parts.next()?.parse().ok().filter(|y| *y >= 1)?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let date = NaiveDate::from_ymd_opt(1 - year, month, day)?;
    let time = match time {
        Some(time) => NaiveTime::parse_from_str(time, "%H:%M:%S%.f")
            .or_else(|_| NaiveTime::parse_from_str(time, "%H:%M"))
            .ok()?,
        None => NaiveTime::MIN,
    };
    Some(date.and_time(time))
}

/// `datetime` as text by `format` (which leaves out the year), the year first: as it is
/// from the year 1, else counted back from it with `(BC)` after.
pub fn with_era(datetime: &impl Datelike, rest: impl std::fmt::Display) -> String {
    match datetime.year() {
        year if year >= 1 => format!("{year:04}-{rest}"),
        year => format!("{:04}-{rest} (BC)", 1 - year),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn years_before_one_read_and_write_with_their_era() {
        let texts = StringArray::from(vec![
            Some("044-03-15 (BC)"),
            Some("0001-01-01 bc"),
            Some("1992-01-01"),
            None,
        ]);
        let dates = cast_with_eras(&texts, &DataType::Date32, false)
            .unwrap()
            .unwrap();
        let dates = dates.as_primitive::<Date32Type>();
        let day = |y, m, d| {
            let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
            date.num_days_from_ce() - UNIX_EPOCH_DAYS as i32
        };
        assert_eq!(dates.value(0), day(-43, 3, 15));
        assert_eq!(dates.value(1), day(0, 1, 1));
        assert_eq!(dates.value(2), day(1992, 1, 1));
        assert!(dates.is_null(3));
        let stamp = StringArray::from(vec!["0010-02-03 04:05:06.5 (BC)"]);
        let to = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
        assert!(cast_with_eras(&stamp, &to, false).unwrap().is_ok());
        let bad = StringArray::from(vec!["0010-13-03 (BC)"]);
        assert!(
            cast_with_eras(&bad, &DataType::Date32, false)
                .unwrap()
                .is_err()
        );
        let date = NaiveDate::from_ymd_opt(-43, 3, 15).unwrap();
        assert_eq!(with_era(&date, date.format("%m-%d")), "0044-03-15 (BC)");
        let date = NaiveDate::from_ymd_opt(1992, 3, 15).unwrap();
        assert_eq!(with_era(&date, date.format("%m-%d")), "1992-03-15");
    }
}
