//! Arrow values written as DuckDB's test runner writes them, so that a result compares with
//! the files' expected lines: `NULL`, `(empty)`, `true`/`false`, `[1, 2]`, `{'a': 1}`,
//! `{k=v}`, `2024-01-01 10:00:00.5`, `1 year 2 days 03:00:00`, `\xAA` in blobs.

use std::fmt::Write;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    IntervalDayTimeType, IntervalMonthDayNanoType, IntervalUnit, IntervalYearMonthType,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// How a column's values compare with the expected text, as DuckDB's runner compares them
/// by the column's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueKind {
    /// Compared as numbers; floats within DuckDB's tolerance.
    Number { float: bool },
    /// `true`/`false` or `1`/`0`.
    Boolean,
    /// Compared as text.
    Text,
}

pub fn value_kind(data_type: &DataType) -> ValueKind {
    use DataType::*;
    match data_type {
        Float16 | Float32 | Float64 => ValueKind::Number { float: true },
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => {
            ValueKind::Number { float: false }
        }
        Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => {
            ValueKind::Number { float: false }
        }
        Boolean => ValueKind::Boolean,
        _ => ValueKind::Text,
    }
}

/// One value of a result as the runner compares it: `NULL`, `(empty)` for an empty string.
pub fn cell_text(column: &dyn Array, row: usize) -> String {
    let mut text = String::new();
    write_value(&mut text, column, row);
    if text.is_empty() {
        text.push_str("(empty)");
    }
    text
}

/// Writes one value; values nested in lists, structs and maps are written the same way,
/// but for strings, which DuckDB quotes there when they hold a delimiter.
fn write_value(out: &mut String, array: &dyn Array, row: usize) {
    use DataType::*;
    if array.is_null(row) || *array.data_type() == DataType::Null {
        out.push_str("NULL");
        return;
    }
    match array.data_type() {
        Boolean => out.push_str(if array.as_boolean().value(row) {
            "true"
        } else {
            "false"
        }),
        Int8 => push(out, array.as_primitive::<Int8Type>().value(row)),
        Int16 => push(out, array.as_primitive::<Int16Type>().value(row)),
        Int32 => push(out, array.as_primitive::<Int32Type>().value(row)),
        Int64 => push(out, array.as_primitive::<Int64Type>().value(row)),
        UInt8 => push(out, array.as_primitive::<UInt8Type>().value(row)),
        UInt16 => push(out, array.as_primitive::<UInt16Type>().value(row)),
        UInt32 => push(out, array.as_primitive::<UInt32Type>().value(row)),
        UInt64 => push(out, array.as_primitive::<UInt64Type>().value(row)),
        Float16 => {
            let value = array.as_primitive::<Float16Type>().value(row).to_f32();
            out.push_str(&float_text(format!("{value:?}"), value.is_nan()));
        }
        Float32 => {
            let value = array.as_primitive::<Float32Type>().value(row);
            out.push_str(&float_text(format!("{value:?}"), value.is_nan()));
        }
        Float64 => {
            let value = array.as_primitive::<Float64Type>().value(row);
            out.push_str(&float_text(format!("{value:?}"), value.is_nan()));
        }
        Utf8 => out.push_str(array.as_string::<i32>().value(row)),
        LargeUtf8 => out.push_str(array.as_string::<i64>().value(row)),
        Utf8View => out.push_str(array.as_string_view().value(row)),
        Binary => write_blob(out, array.as_binary::<i32>().value(row)),
        LargeBinary => write_blob(out, array.as_binary::<i64>().value(row)),
        BinaryView => write_blob(out, array.as_binary_view().value(row)),
        FixedSizeBinary(_) => write_blob(out, array.as_fixed_size_binary().value(row)),
        Time32(_) | Time64(_) => write_time(out, time_nanos(array, row)),
        Date32 => out.push_str(&pondra_cluster::date_text(
            array
                .as_primitive::<arrow::datatypes::Date32Type>()
                .value(row),
        )),
        // Infinities as their words (ADR 0062), years before 1 with their era; other
        // microsecond timestamps below.
        Timestamp(arrow::datatypes::TimeUnit::Microsecond, _) if special_micros(array, row) => {
            let micros = array.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
            out.push_str(&pondra_cluster::timestamp_text(micros.value(row)));
        }
        Timestamp(unit, zone) => write_timestamp(out, timestamp_nanos(array, *unit, row), zone),
        Interval(unit) => write_interval(out, interval_parts(array, *unit, row)),
        List(_) => write_list(out, array.as_list::<i32>().value(row).as_ref()),
        LargeList(_) => write_list(out, array.as_list::<i64>().value(row).as_ref()),
        FixedSizeList(..) => write_list(out, array.as_fixed_size_list().value(row).as_ref()),
        Struct(fields) => {
            // An unnamed struct (a TUPLE) prints as `(1, 2)`, or `(1,)` with one field.
            let columns = array.as_struct().columns();
            let unnamed = !fields.is_empty() && fields.iter().all(|f| f.name().is_empty());
            out.push(if unnamed { '(' } else { '{' });
            for (i, (field, column)) in fields.iter().zip(columns).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if !unnamed {
                    let _ = write!(out, "'{}': ", field.name());
                }
                write_nested(out, column.as_ref(), row);
            }
            if unnamed && fields.len() == 1 {
                out.push(',');
            }
            out.push(if unnamed { ')' } else { '}' });
        }
        Map(..) => {
            let entries = array.as_map().value(row);
            out.push('{');
            for i in 0..entries.len() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_nested(out, entries.column(0).as_ref(), i);
                out.push('=');
                write_nested(out, entries.column(1).as_ref(), i);
            }
            out.push('}');
        }
        Dictionary(..) => {
            let dictionary = array.as_any_dictionary();
            let key = dictionary.normalized_keys()[row];
            write_value(out, dictionary.values().as_ref(), key);
        }
        // Dates and decimals: Arrow writes them as DuckDB does.
        _ => {
            let formatter = ArrayFormatter::try_new(array, &FormatOptions::default())
                .expect("a displayable column");
            let _ = write!(out, "{}", formatter.value(row));
        }
    }
}

/// An infinite timestamp, or one before the year 1 (written with its era, `(BC)`).
fn special_micros(array: &dyn Array, row: usize) -> bool {
    const YEAR_ONE_MICROS: i64 = -62_135_596_800_000_000;
    let micros = array.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
    let value = micros.value(row);
    value.unsigned_abs() == pondra_cluster::TIMESTAMP_INFINITY.unsigned_abs()
        || value < YEAR_ONE_MICROS
}

fn push(out: &mut String, value: impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// A float as DuckDB prints it, from Rust's shortest round-trip text (`{:?}`): `inf`, `nan`,
/// `2.0`, and exponents signed with at least two digits (`1e+16`, `1.5e-07`).
fn float_text(debug: String, is_nan: bool) -> String {
    if is_nan {
        return "nan".into();
    }
    match debug.split_once('e') {
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(digits) => ('-', digits),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => debug,
    }
}

/// A blob as DuckDB prints it: printable ASCII as itself, other bytes (and quotes and
/// backslashes) as `\xHH`.
fn write_blob(out: &mut String, bytes: &[u8]) {
    for &byte in bytes {
        if (32..=126).contains(&byte) && !matches!(byte, b'\\' | b'\'' | b'"') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "\\x{byte:02X}");
        }
    }
}

fn write_list(out: &mut String, items: &dyn Array) {
    out.push('[');
    for i in 0..items.len() {
        if i > 0 {
            out.push_str(", ");
        }
        write_nested(out, items, i);
    }
    out.push(']');
}

/// A value inside a list, struct or map.
fn write_nested(out: &mut String, array: &dyn Array, row: usize) {
    match array.data_type() {
        DataType::Utf8 if array.is_valid(row) => out.push_str(&pondra_cluster::nested_string(
            array.as_string::<i32>().value(row),
        )),
        // Times and intervals are text there too, quoted when they hold a space or a colon.
        DataType::Date32
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Timestamp(..)
        | DataType::Interval(_)
            if array.is_valid(row) =>
        {
            let mut text = String::new();
            write_value(&mut text, array, row);
            out.push_str(&pondra_cluster::nested_string(&text));
        }
        _ => write_value(out, array, row),
    }
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

fn time_nanos(array: &dyn Array, row: usize) -> i64 {
    match array.data_type() {
        DataType::Time32(TimeUnit::Second) => {
            array.as_primitive::<Time32SecondType>().value(row) as i64 * NANOS_PER_SECOND
        }
        DataType::Time32(_) => {
            array.as_primitive::<Time32MillisecondType>().value(row) as i64 * 1_000_000
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            array.as_primitive::<Time64MicrosecondType>().value(row) * 1_000
        }
        _ => array.as_primitive::<Time64NanosecondType>().value(row),
    }
}

/// `HH:MM:SS`, then the fraction of a second without trailing zeros, as DuckDB writes times.
fn write_time(out: &mut String, nanos: i64) {
    let seconds = nanos.div_euclid(NANOS_PER_SECOND);
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    write_fraction(out, nanos.rem_euclid(NANOS_PER_SECOND));
}

fn write_fraction(out: &mut String, nanos: i64) {
    if nanos != 0 {
        let digits = format!("{nanos:09}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
}

fn timestamp_nanos(array: &dyn Array, unit: TimeUnit, row: usize) -> i128 {
    let value = |scale: i128, v: i64| v as i128 * scale;
    match unit {
        TimeUnit::Second => value(
            1_000_000_000,
            array.as_primitive::<TimestampSecondType>().value(row),
        ),
        TimeUnit::Millisecond => value(
            1_000_000,
            array.as_primitive::<TimestampMillisecondType>().value(row),
        ),
        TimeUnit::Microsecond => value(
            1_000,
            array.as_primitive::<TimestampMicrosecondType>().value(row),
        ),
        TimeUnit::Nanosecond => value(
            1,
            array.as_primitive::<TimestampNanosecondType>().value(row),
        ),
    }
}

/// `2024-01-01 10:00:00`, a fraction without trailing zeros, and `+00` for a timestamp with a
/// time zone (shown in UTC, DuckDB's zone without ICU).
fn write_timestamp(out: &mut String, nanos: i128, zone: &Option<std::sync::Arc<str>>) {
    let nanos_per_second = NANOS_PER_SECOND as i128;
    let seconds = nanos.div_euclid(nanos_per_second) as i64;
    match arrow::temporal_conversions::timestamp_s_to_datetime(seconds) {
        Some(datetime) => {
            let _ = write!(out, "{}", datetime.format("%Y-%m-%d %H:%M:%S"));
        }
        None => {
            let _ = write!(out, "timestamp of {seconds} seconds");
        }
    }
    write_fraction(out, nanos.rem_euclid(nanos_per_second) as i64);
    if zone.is_some() {
        out.push_str("+00");
    }
}

/// An interval as months, days and nanoseconds.
fn interval_parts(array: &dyn Array, unit: IntervalUnit, row: usize) -> (i64, i64, i64) {
    match unit {
        IntervalUnit::YearMonth => {
            let months = array.as_primitive::<IntervalYearMonthType>().value(row);
            (months as i64, 0, 0)
        }
        IntervalUnit::DayTime => {
            let value = array.as_primitive::<IntervalDayTimeType>().value(row);
            (0, value.days as i64, value.milliseconds as i64 * 1_000_000)
        }
        IntervalUnit::MonthDayNano => {
            let value = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            (value.months as i64, value.days as i64, value.nanoseconds)
        }
    }
}

/// `1 year 2 months 3 days 04:05:06.5`, each part only when it is not zero, `00:00:00` for
/// the empty interval, as DuckDB writes intervals.
fn write_interval(out: &mut String, (months, days, nanos): (i64, i64, i64)) {
    let mut parts = Vec::new();
    let mut count = |n: i64, unit: &str| {
        if n != 0 {
            let plural = if n.abs() == 1 { "" } else { "s" };
            parts.push(format!("{n} {unit}{plural}"));
        }
    };
    count(months / 12, "year");
    count(months % 12, "month");
    count(days, "day");
    if nanos != 0 || parts.is_empty() {
        let mut time = String::new();
        if nanos < 0 {
            time.push('-');
        }
        write_time(&mut time, nanos.unsigned_abs() as i64);
        parts.push(time);
    }
    out.push_str(&parts.join(" "));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BinaryArray, Float64Array, Int32Array, IntervalMonthDayNanoArray, ListArray,
        StringArray, StructArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::{Field, IntervalMonthDayNano};

    use super::*;

    fn texts(array: &dyn Array) -> Vec<String> {
        (0..array.len()).map(|row| cell_text(array, row)).collect()
    }

    #[test]
    fn scalars_print_as_duckdb_prints_them() {
        let floats = Float64Array::from(vec![2.0, 0.1, 1e16, 1.5e-7, f64::INFINITY, f64::NAN]);
        assert_eq!(
            texts(&floats),
            ["2.0", "0.1", "1e+16", "1.5e-07", "inf", "nan"]
        );
        let strings = StringArray::from(vec![Some(""), None, Some("a b")]);
        assert_eq!(texts(&strings), ["(empty)", "NULL", "a b"]);
        let blobs = BinaryArray::from(vec![&b"a\x00\xff'"[..]]);
        assert_eq!(texts(&blobs), ["a\\x00\\xFF\\x27"]);
        let timestamps =
            TimestampMicrosecondArray::from(vec![1_700_000_000_500_000, -1]).with_timezone("UTC");
        assert_eq!(
            texts(&timestamps),
            ["2023-11-14 22:13:20.5+00", "1969-12-31 23:59:59.999999+00"]
        );
        let intervals = IntervalMonthDayNanoArray::from(vec![
            IntervalMonthDayNano::new(14, 1, 3_600_000_000_000),
            IntervalMonthDayNano::new(0, 0, 0),
            IntervalMonthDayNano::new(0, -2, -1_500_000_000),
        ]);
        assert_eq!(
            texts(&intervals),
            [
                "1 year 2 months 1 day 01:00:00",
                "00:00:00",
                "-2 days -00:00:01.5"
            ]
        );
    }

    #[test]
    fn nested_values_print_as_duckdb_prints_them() {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
            Some(vec![]),
        ]);
        assert_eq!(texts(&list), ["[1, NULL]", "[]"]);
        let fields = vec![
            Arc::new(Field::new("a", DataType::Int32, true)),
            Arc::new(Field::new("b", DataType::Utf8, true)),
        ];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["x y"])),
        ];
        let structs = StructArray::new(fields.into(), columns, None);
        assert_eq!(texts(&structs), ["{'a': 1, 'b': x y}"]);
    }
}
