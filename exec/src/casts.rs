//! Casts as PostgreSQL and DuckDB make them where Arrow's differ: a decimal to an integer
//! rounds half away from zero and a DOUBLE to an integer half to even (Arrow truncates both),
//! text to an integer reads a fraction and an exponent and rounds as DuckDB does,
//! and a timestamp becomes text as `1996-01-03 12:00:00.25` (Arrow writes ISO 8601's `T`
//! and a fixed count of digits).

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, RecordBatch, StringArray,
};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Decimal128Type, Field, Float32Type, Float64Type, Schema};
use arrow::datatypes::{IntervalUnit, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType};
use arrow::util::display::FormatOptions;

use pondra_planner::IntegerDomain;

use crate::{ExecError, Result};

/// `value` cast to `to`; with `safe`, a value that does not convert becomes NULL
/// (`TRY_CAST`) rather than an error.
pub fn cast(value: &ArrayRef, to: &DataType, safe: bool) -> Result<ArrayRef> {
    if let Some(cast) = crate::zoned_times::cast_zoned(value, to, safe) {
        return cast;
    }
    let options = CastOptions {
        safe,
        format_options: FormatOptions::new(),
    };
    if let (DataType::Utf8, DataType::Interval(IntervalUnit::MonthDayNano)) =
        (value.data_type(), to)
    {
        return intervals_from_text(value, safe);
    }
    if let (DataType::Utf8, DataType::Timestamp(TimeUnit::Microsecond, None)) =
        (value.data_type(), to)
    {
        // A wall time ignores an offset written after it, as in both anchors.
        if let Some(walls) = crate::zoned_times::without_offsets(value.as_string::<i32>()) {
            return cast(&walls, to, safe);
        }
        if let Some(completed) = with_seconds(value.as_string::<i32>()) {
            return cast(&completed, to, safe);
        }
    }
    if let (DataType::Utf8, DataType::Date32 | DataType::Timestamp(TimeUnit::Microsecond, _)) =
        (value.data_type(), to)
        && let Some(cast) = crate::eras::cast_with_eras(value.as_string::<i32>(), to, safe)
    {
        return cast;
    }
    if let Some(cast) = crate::infinite_times::cast_infinite(value, to, &options) {
        return cast;
    }
    let from = value.data_type();
    if let (DataType::Struct(_), DataType::Map(..)) = (from, to) {
        return crate::maps::from_struct(value, to, safe);
    }
    let rounded = match (from, to) {
        // A decimal is true when it is not zero, as an integer is.
        (DataType::Decimal64(_, scale) | DataType::Decimal128(_, scale), DataType::Boolean) => {
            let wide = cast_with_options(value, &DataType::Decimal128(38, *scale), &options)?;
            let wide = wide.as_primitive::<Decimal128Type>();
            let truth: BooleanArray = wide.iter().map(|v| v.map(|v| v != 0)).collect();
            return Ok(Arc::new(truth));
        }
        (DataType::Binary, DataType::Utf8) => return Ok(crate::blobs::to_text(value)),
        (DataType::Utf8, DataType::Binary) => return crate::blobs::from_text(value, safe),
        (DataType::Binary, _) | (_, DataType::Binary) if *from != DataType::Null => {
            return Err(crate::ExecError::Execution(format!(
                "conversion failed: cannot cast {} to {}",
                sql_name(from),
                sql_name(to)
            )));
        }
        (DataType::Timestamp(TimeUnit::Microsecond, None), DataType::Utf8) => {
            return Ok(timestamps_as_text(value));
        }
        (DataType::Interval(IntervalUnit::MonthDayNano), DataType::Utf8) => {
            let intervals = value.as_primitive::<arrow::datatypes::IntervalMonthDayNanoType>();
            let texts: StringArray = intervals
                .iter()
                .map(|i| i.map(|i| interval_text(i, "month")))
                .collect();
            return Ok(Arc::new(texts));
        }
        (DataType::Time64(TimeUnit::Microsecond), DataType::Utf8) => {
            let times = value.as_primitive::<Time64MicrosecondType>();
            let texts: StringArray = times.iter().map(|t| t.map(time_text)).collect();
            return Ok(Arc::new(texts));
        }
        (DataType::Decimal64(_, s) | DataType::Decimal128(_, s), t) if is_integer(t) && *s > 0 => {
            decimals_rounded(value, *s)?
        }
        (DataType::Float64, t) if is_integer(t) || is_whole_decimal(t) => {
            let values = value.as_primitive::<Float64Type>();
            Arc::new(values.unary::<_, Float64Type>(f64::round_ties_even)) as ArrayRef
        }
        (DataType::Utf8, t) if is_integer(t) || is_whole_decimal(t) => {
            texts_rounded(value.as_string::<i32>(), to, safe)?
        }
        (DataType::Float32, t) if is_integer(t) => {
            let values = value.as_primitive::<Float32Type>();
            Arc::new(values.unary::<_, Float32Type>(f32::round_ties_even)) as ArrayRef
        }
        _ => value.clone(),
    };
    Ok(cast_with_options(&rounded, to, &options)?)
}

/// Timestamps written to the minute (`2021-01-01 10:00`), which both anchors read, with
/// their seconds added for Arrow's reader; `None` when no text needs them.
fn with_seconds(texts: &StringArray) -> Option<ArrayRef> {
    let to_the_minute = |text: &str| {
        let text = text.trim();
        let Some((date, time)) = text.split_once([' ', 'T']) else {
            return false;
        };
        let (hours, minutes) = time.split_once(':').unwrap_or(("", ""));
        date.contains('-')
            && (1..=2).contains(&hours.len())
            && minutes.len() == 2
            && hours
                .bytes()
                .chain(minutes.bytes())
                .all(|b| b.is_ascii_digit())
    };
    if !texts.iter().flatten().any(to_the_minute) {
        return None;
    }
    let completed: StringArray = texts
        .iter()
        .map(|t| {
            t.map(|t| match to_the_minute(t) {
                true => format!("{}:00", t.trim()),
                false => t.to_string(),
            })
        })
        .collect();
    Some(Arc::new(completed))
}

/// Text read as intervals: Arrow's reader, then for what it refuses the forms both anchors
/// also write (`3 days 12:30:00`, `2 days ago`).
fn intervals_from_text(value: &ArrayRef, safe: bool) -> Result<ArrayRef> {
    let to = DataType::Interval(IntervalUnit::MonthDayNano);
    let lenient = CastOptions {
        safe: true,
        format_options: FormatOptions::new(),
    };
    let read = cast_with_options(value, &to, &lenient)?;
    let texts = value.as_string::<i32>();
    if (0..texts.len()).all(|row| read.is_valid(row) || texts.is_null(row)) {
        return Ok(read);
    }
    let read = read.as_primitive::<arrow::datatypes::IntervalMonthDayNanoType>();
    let mut intervals = Vec::with_capacity(texts.len());
    for (row, text) in texts.iter().enumerate() {
        intervals.push(match text {
            None => None,
            Some(_) if read.is_valid(row) => Some(read.value(row)),
            Some(text) => match pondra_planner::interval_from_text(text) {
                Some((months, days, nanos)) => Some(arrow::datatypes::IntervalMonthDayNano::new(
                    months, days, nanos,
                )),
                None if safe => None,
                None => {
                    return Err(crate::ExecError::Execution(format!(
                        "conversion failed: invalid interval '{text}'"
                    )));
                }
            },
        });
    }
    Ok(Arc::new(arrow::array::IntervalMonthDayNanoArray::from(
        intervals,
    )))
}

/// The SQL name of a value's type, for errors.
pub(crate) fn sql_name(data_type: &DataType) -> String {
    pondra_catalog::SqlType::from_arrow(data_type)
        .map_or_else(|| data_type.to_string(), |t| t.to_string())
}

/// DECIMAL(p, 0): where the wide integer names keep their values (ADR 0060).
fn is_whole_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(_, 0))
}

/// `value`, cast to where `domain` keeps its values, checked to lie in the domain's range:
/// values outside are an error, or NULL when `lenient`.
pub fn integer_range(value: &ArrayRef, domain: IntegerDomain, lenient: bool) -> Result<ArrayRef> {
    let (low, high) = domain.bounds();
    let wide = cast_with_options(value, &DataType::Decimal128(38, 0), &CastOptions::default())?;
    let wide = wide.as_primitive::<Decimal128Type>();
    let outside = |v: &i128| *v < low || *v > high;
    let Some(first) = wide.iter().flatten().find(outside) else {
        return Ok(value.clone());
    };
    if !lenient {
        return Err(ExecError::Execution(format!(
            "Conversion Error: {first} is out of range for {}",
            domain.name()
        )));
    }
    let kept = BooleanArray::from_unary(wide, |v| !outside(&v));
    Ok(arrow::compute::nullif(value, &arrow::compute::not(&kept)?)?)
}

fn is_integer(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

/// Decimals of `scale` rounded to whole numbers, half away from zero, as decimals of scale 0.
fn decimals_rounded(value: &ArrayRef, scale: i8) -> Result<ArrayRef> {
    let wide = cast_with_options(
        value,
        &DataType::Decimal128(38, scale),
        &CastOptions::default(),
    )?;
    let unit = 10i128.pow(scale as u32);
    let rounded: Decimal128Array = wide.as_primitive::<Decimal128Type>().unary(|v| {
        let (whole, rest) = (v / unit, v % unit);
        match rest.abs() * 2 >= unit {
            true => whole + v.signum(),
            false => whole,
        }
    });
    Ok(Arc::new(rounded.with_precision_and_scale(38, 0)?))
}

/// Numbers written as text (`7`, `-1.5`, `1.235e2`) rounded to whole numbers, half away from
/// zero as DuckDB reads them into an integer, as decimals of scale 0. Text that is no number,
/// or one past DECIMAL(38,0), is an error, or NULL when `safe`.
fn texts_rounded(texts: &StringArray, to: &DataType, safe: bool) -> Result<ArrayRef> {
    let mut wholes = Vec::with_capacity(texts.len());
    for text in texts.iter() {
        wholes.push(match text.map(|t| (t, whole_number(t))) {
            None => None,
            Some((_, Some(whole))) => Some(whole),
            Some(_) if safe => None,
            Some((text, None)) => {
                return Err(ExecError::Execution(format!(
                    "conversion failed: Cannot cast string '{text}' to value of {to} type"
                )));
            }
        });
    }
    let wholes = Decimal128Array::from(wholes).with_precision_and_scale(38, 0)?;
    Ok(Arc::new(wholes))
}

/// A number written in decimal, with an optional sign, fraction and exponent, rounded half
/// away from zero, or in binary or hex; `None` when the text is not one or its magnitude
/// passes 38 digits.
fn whole_number(text: &str) -> Option<i128> {
    let text = text.trim();
    if let Ok(whole) = text.parse::<i128>() {
        return Some(whole);
    }
    if let Some(prefixed) = prefixed_whole(text) {
        return prefixed;
    }
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i32>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let is_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !is_digits(whole) || !is_digits(fraction) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0');
    // Where the decimal point falls among the significant digits.
    let point = whole.len() as i64 - (digits.len() - significant.len()) as i64 + exponent as i64;
    if significant.is_empty() || point < 0 {
        return Some(0);
    }
    if point > 38 {
        return None;
    }
    let point = point as usize;
    let kept = &significant[..point.min(significant.len())];
    let mut value: i128 = if kept.is_empty() {
        0
    } else {
        kept.parse().ok()?
    };
    value = value.checked_mul(10i128.pow(point.saturating_sub(significant.len()) as u32))?;
    if significant
        .as_bytes()
        .get(point)
        .is_some_and(|d| *d >= b'5')
    {
        value += 1;
    }
    Some(if negative { -value } else { value })
}

/// A whole number DuckDB writes in binary (`0b1010`) or hex (`0xFF`), digits optionally
/// grouped by single underscores between them; unsigned. `None` when `text` has neither
/// prefix, `Some(None)` when what follows the prefix is not such a number.
fn prefixed_whole(text: &str) -> Option<Option<i128>> {
    let radix = match text.get(..2)? {
        "0b" | "0B" => 2,
        "0x" | "0X" => 16,
        _ => return None,
    };
    let digits = &text[2..];
    let grouped = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__");
    if !grouped {
        return Some(None);
    }
    let digits = digits.replace('_', "");
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return Some(None);
    }
    Some(
        u128::from_str_radix(&digits, radix)
            .ok()
            .and_then(|v| i128::try_from(v).ok()),
    )
}

/// A timestamp as PostgreSQL and DuckDB write it: `YYYY-MM-DD HH:MM:SS`, then the fraction of
/// a second without its trailing zeros, if any.
pub fn timestamp_text(micros: i64) -> String {
    let infinity = crate::infinite_times::TIMESTAMP_INFINITY;
    if let Some(word) = crate::infinite_times::infinity_text(micros, infinity) {
        return word.to_string();
    }
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(time) => {
            let text = time.format("%m-%d %H:%M:%S%.6f").to_string();
            let text = text.trim_end_matches('0').trim_end_matches('.');
            crate::eras::with_era(&time, text)
        }
        None => micros.to_string(),
    }
}

/// An interval as both anchors write it, `month` being DuckDB's word for a month and `mon`
/// Postgres's: `1 year 2 months 3 days 01:02:03`; the time part as `HH:MM:SS` and its
/// fraction, shown when not zero or when nothing else is.
pub fn interval_text(i: arrow::datatypes::IntervalMonthDayNano, month: &str) -> String {
    let mut parts = Vec::new();
    let (years, months) = (i.months / 12, i.months % 12);
    if years != 0 {
        parts.push(format!(
            "{years} year{}",
            if years.abs() == 1 { "" } else { "s" }
        ));
    }
    if months != 0 {
        parts.push(format!(
            "{months} {month}{}",
            if months.abs() == 1 { "" } else { "s" }
        ));
    }
    if i.days != 0 {
        parts.push(format!(
            "{} day{}",
            i.days,
            if i.days.abs() == 1 { "" } else { "s" }
        ));
    }
    let micros = i.nanoseconds / 1000;
    if micros != 0 || parts.is_empty() {
        let sign = if micros < 0 { "-" } else { "" };
        let m = micros.unsigned_abs();
        let (h, rest) = (m / 3_600_000_000, m % 3_600_000_000);
        let (min, rest) = (rest / 60_000_000, rest % 60_000_000);
        let (s, us) = (rest / 1_000_000, rest % 1_000_000);
        let mut time = format!("{sign}{h:02}:{min:02}:{s:02}");
        if us != 0 {
            time.push_str(format!(".{us:06}").trim_end_matches('0'));
        }
        parts.push(time);
    }
    parts.join(" ")
}

/// A time of day (ADR 0065) as both anchors write it: `HH:MM:SS`, then the fraction of a
/// second without its trailing zeros, if any.
pub fn time_text(micros: i64) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let fraction = micros.rem_euclid(1_000_000);
    let mut text = format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text
}

/// Timestamps (microseconds, no zone) as text.
pub fn timestamps_as_text(value: &ArrayRef) -> ArrayRef {
    if let DataType::Timestamp(_, Some(_)) = value.data_type() {
        return crate::zoned_times::instants_as_text(value);
    }
    let values = value.as_primitive::<TimestampMicrosecondType>();
    let texts: StringArray = values.iter().map(|v| v.map(timestamp_text)).collect();
    Arc::new(texts)
}

/// `batch` with its timestamp columns as text, for printers that would write them their own
/// way (ISO 8601's `T`).
pub fn with_timestamps_as_text(batch: &RecordBatch) -> Result<RecordBatch> {
    with_columns_as_text(batch, false)
}

/// `batch` with its timestamp and array columns as text (arrays as PostgreSQL writes them),
/// for tables and CSV, which have no form of their own for arrays.
pub fn with_text_for_tables(batch: &RecordBatch) -> Result<RecordBatch> {
    with_columns_as_text(batch, true)
}

fn holds_struct(data_type: &DataType) -> bool {
    match data_type {
        DataType::Struct(_) | DataType::Map(..) => true,
        DataType::List(item) => holds_struct(item.data_type()),
        _ => false,
    }
}

fn with_columns_as_text(batch: &RecordBatch, arrays: bool) -> Result<RecordBatch> {
    let is_timestamp = |t: &DataType| matches!(t, DataType::Timestamp(TimeUnit::Microsecond, _));
    // Dates too, for their infinities (ADR 0062), which Arrow's printers cannot write.
    // Structs and maps, and lists holding them, in DuckDB's text form (ADRs 0063 and 0064)
    // for every printer.
    let as_text = |t: &DataType| {
        is_timestamp(t)
            || *t == DataType::Date32
            || *t == DataType::Time64(TimeUnit::Microsecond)
            || *t == DataType::Binary
            || *t == DataType::Interval(IntervalUnit::MonthDayNano)
            || holds_struct(t)
            || (arrays && matches!(t, DataType::List(_)))
    };
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| as_text(f.data_type()))
    {
        return Ok(batch.clone());
    }
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        match as_text(field.data_type()) {
            true => {
                fields.push(Field::new(field.name(), DataType::Utf8, true));
                columns.push(match field.data_type() {
                    t if is_timestamp(t) => timestamps_as_text(column),
                    DataType::Date32
                    | DataType::Time64(_)
                    | DataType::Binary
                    | DataType::Interval(_) => cast(column, &DataType::Utf8, false)?,
                    t if holds_struct(t) => crate::structs::to_text(column)?,
                    _ => crate::arrays::to_text(column)?,
                });
            }
            false => {
                fields.push(field.as_ref().clone());
                columns.push(column.clone());
            }
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Decimal64Array, Float64Array, Int32Array};

    use super::*;

    #[test]
    fn text_reads_fractions_and_exponents_into_integers() {
        let cases = [
            ("7", Some(7)),
            (" -12 ", Some(-12)),
            ("0.5", Some(1)),
            ("-0.5", Some(-1)),
            ("0.000005", Some(0)),
            ("1.235e2", Some(124)),
            ("1.234E2", Some(123)),
            ("1214.235e-2", Some(12)),
            ("1e-2", Some(0)),
            ("+3.", Some(3)),
            (".7", Some(1)),
            ("1e40", None),
            ("1.2.3", None),
            ("e5", None),
            ("x", None),
        ];
        for (text, expected) in cases {
            assert_eq!(whole_number(text), expected, "{text}");
        }
        let texts: ArrayRef = Arc::new(StringArray::from(vec![Some("2.5"), None, Some("x")]));
        assert!(cast(&texts, &DataType::Int32, false).is_err());
        let lenient = cast(&texts, &DataType::Int32, true).unwrap();
        let expected: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), None, None]));
        assert_eq!(&lenient, &expected);
    }

    #[test]
    fn decimals_round_half_away_from_zero_and_doubles_half_to_even() {
        let decimals: ArrayRef = Arc::new(
            Decimal64Array::from(vec![125, -125, 124, 25, -25, 0])
                .with_precision_and_scale(5, 1)
                .unwrap(),
        );
        let cast_decimals = cast(&decimals, &DataType::Int32, false).unwrap();
        let expected: ArrayRef = Arc::new(Int32Array::from(vec![13, -13, 12, 3, -3, 0]));
        assert_eq!(&cast_decimals, &expected);
        let doubles: ArrayRef = Arc::new(Float64Array::from(vec![2.5, 3.5, -2.5, 0.5, 12.6]));
        let cast_doubles = cast(&doubles, &DataType::Int32, false).unwrap();
        let expected: ArrayRef = Arc::new(Int32Array::from(vec![2, 4, -2, 0, 13]));
        assert_eq!(&cast_doubles, &expected);
        let huge: ArrayRef = Arc::new(Float64Array::from(vec![1e10]));
        assert!(cast(&huge, &DataType::Int32, false).is_err());
        assert!(cast(&huge, &DataType::Int32, true).unwrap().is_null(0));
    }

    #[test]
    fn timestamps_read_as_the_anchors_write_them() {
        assert_eq!(timestamp_text(820_670_400_000_000), "1996-01-03 12:00:00");
        assert_eq!(
            timestamp_text(820_670_400_250_000),
            "1996-01-03 12:00:00.25"
        );
        assert_eq!(
            timestamp_text(820_670_400_000_001),
            "1996-01-03 12:00:00.000001"
        );
    }
}
