//! `strptime(text, format)` and `try_strptime` (DuckDB): text read as a timestamp by a C
//! `strptime` format, or by the first of a list of formats that reads it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, TimestampMicrosecondArray};
use chrono::NaiveDateTime;

use crate::{ExecError, Result};

/// The timestamp `text` is in `format`, as DuckDB reads it: fields the format leaves out are
/// those of 1900-01-01 00:00:00, a weekday is read but not checked against the date, and `%-d`
/// is `%d` (numbers are read with or without their padding).
fn parse(text: &str, format: &str) -> Option<i64> {
    // A fraction after a point is read as chrono reads `%.f`, any number of digits; an
    // offset with or without its minutes (`+02`, `+0215`, `+02:15`).
    let format = format
        .replace(".%f", "%.f")
        .replace("%f", "%6f")
        .replace("%-", "%")
        .replace("%z", "%#z");
    let mut parsed = chrono::format::Parsed::new();
    chrono::format::parse(
        &mut parsed,
        text,
        chrono::format::StrftimeItems::new(&format),
    )
    .ok()?;
    // chrono takes a second of 60 for a leap second, and an hour of 13 to 23 beside AM or PM;
    // DuckDB reads neither.
    if parsed.second == Some(60) {
        return None;
    }
    let half_day = format.contains("%p") || format.contains("%P");
    if half_day && parsed.hour_div_12 == Some(1) && parsed.hour_mod_12.is_some_and(|h| h > 0) {
        let hour_format = format.contains("%H") || format.contains("%k");
        if hour_format {
            return None;
        }
    }
    // A full date wins over a week number, which DuckDB then reads but does not check.
    if parsed.month.is_some() && parsed.day.is_some() || parsed.ordinal.is_some() {
        parsed.week_from_sun = None;
        parsed.week_from_mon = None;
        parsed.isoweek = None;
    }
    let weeks = parsed.week_from_sun.is_some()
        || parsed.week_from_mon.is_some()
        || parsed.isoweek.is_some();
    if !weeks {
        parsed.weekday = None;
    } else if parsed.weekday.is_none() {
        // A week without its day is its first: Sunday for `%U`, Monday for `%W` and `%V`.
        parsed.weekday = Some(match parsed.week_from_sun {
            Some(_) => chrono::Weekday::Sun,
            None => chrono::Weekday::Mon,
        });
    }
    if parsed.isoweek.is_some() && parsed.isoyear.is_none() && parsed.isoyear_mod_100.is_none() {
        parsed.isoyear = Some(parsed.year.unwrap_or(1900));
    }
    let has_year = parsed.year.is_some()
        || parsed.year_mod_100.is_some()
        || parsed.isoyear.is_some()
        || parsed.isoyear_mod_100.is_some();
    if !has_year {
        parsed.year = Some(1900);
    }
    if parsed.month.is_none() && parsed.ordinal.is_none() && !weeks {
        parsed.month = Some(1);
    }
    if parsed.day.is_none() && parsed.ordinal.is_none() && !weeks {
        parsed.day = Some(1);
    }
    parsed.hour_div_12 = parsed.hour_div_12.or(Some(0));
    parsed.hour_mod_12 = parsed.hour_mod_12.or(Some(0));
    parsed.minute = parsed.minute.or(Some(0));
    let date = parsed.to_naive_date().ok()?;
    let time = parsed.to_naive_time().ok()?;
    let micros = NaiveDateTime::new(date, time).and_utc().timestamp_micros();
    // With an offset the text names an instant: the wall time less its offset from UTC.
    let offset = i64::from(parsed.offset.unwrap_or(0));
    micros.checked_sub(offset.checked_mul(1_000_000)?)
}

/// `strptime(texts, formats)`: the formats are one per row (text), or one list of formats per
/// row, the first that reads the text winning. A text no format reads is an error, or NULL
/// when `lenient` (`try_strptime`).
pub fn strptime(args: &[ArrayRef], lenient: bool, zoned: bool) -> Result<ArrayRef> {
    let texts = args[0].as_string::<i32>();
    let formats_of = |row: usize| -> Vec<String> {
        match args[1].as_list_opt::<i32>() {
            Some(lists) if lists.is_valid(row) => {
                let list = lists.value(row);
                let list = list.as_string::<i32>();
                list.iter().flatten().map(str::to_string).collect()
            }
            Some(_) => Vec::new(),
            None => {
                let formats = args[1].as_string::<i32>();
                match formats.is_valid(row) {
                    true => vec![formats.value(row).to_string()],
                    false => Vec::new(),
                }
            }
        }
    };
    let mut out = Vec::with_capacity(texts.len());
    for row in 0..texts.len() {
        let formats = formats_of(row);
        if texts.is_null(row) || formats.is_empty() {
            out.push(None);
            continue;
        }
        let text = texts.value(row);
        let parsed = formats.iter().find_map(|format| parse(text, format));
        match (parsed, lenient) {
            (Some(micros), _) => out.push(Some(micros)),
            (None, true) => out.push(None),
            (None, false) => {
                return Err(ExecError::Execution(format!(
                    "strptime: could not parse {text:?} with the format {}",
                    formats.join(" or ")
                )));
            }
        }
    }
    let stamps = TimestampMicrosecondArray::from(out);
    Ok(match zoned {
        true => Arc::new(stamps.with_timezone("UTC")),
        false => Arc::new(stamps),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dates_and_times() {
        assert_eq!(parse("2020-01-02", "%Y-%m-%d"), Some(1_577_923_200_000_000));
        assert_eq!(
            parse("02/01/2020 10:00:00.5", "%d/%m/%Y %H:%M:%S.%f"),
            Some(1_577_959_200_500_000)
        );
        assert_eq!(parse("nope", "%Y-%m-%d"), None);
        assert_eq!(parse("2000-10-01 23:59:60", "%Y-%m-%d %H:%M:%S"), None);
        assert_eq!(parse("20:03 PM", "%H:%M %p"), None);
        let day = |y, m, d| {
            chrono::NaiveDate::from_ymd_opt(y, m, d)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc()
                .timestamp_micros()
        };
        // Week numbers, as DuckDB reads them.
        assert_eq!(parse("1", "%W"), Some(day(1900, 1, 1)));
        assert_eq!(parse("1", "%U"), Some(day(1900, 1, 7)));
        assert_eq!(parse("1", "%V"), Some(day(1900, 1, 1)));
        assert_eq!(parse("30", "%U"), Some(day(1900, 7, 29)));
        assert_eq!(parse("1-4", "%U-%w"), Some(day(1900, 1, 11)));
        assert_eq!(
            parse("2021-05-12 19-4", "%Y-%m-%d %U-%w"),
            Some(day(2021, 5, 12))
        );
        assert_eq!(
            parse("08:03 PM", "%I:%M %p"),
            Some(72_180_000_000 - 2_208_988_800_000_000)
        );
    }
}
