//! Arrow values as Postgres sends them (type OIDs, text and binary formats), and parameters
//! as SQL literals.

use pondra_cluster::{
    DATE_INFINITY, TIMESTAMP_INFINITY, date_text, instant_text, offset_in, time_text,
    timestamp_text,
};
use std::error::Error;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal64Type, Decimal128Type, Float32Type, Float64Type, Int32Type,
    Int64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, Time64MicrosecondType,
    TimeUnit, TimestampMicrosecondType,
};
use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, ToSql, to_sql_checked};

use crate::serve::literal::quote_literal;

/// Days from 1970-01-01 to 2000-01-01, Postgres's epoch for binary dates and timestamps.
const PG_EPOCH_DAYS: i64 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400_000_000;

/// The Postgres type of an Arrow column.
pub fn pg_type(data_type: &DataType) -> Type {
    match data_type {
        DataType::Boolean => Type::BOOL,
        DataType::Int32 => Type::INT4,
        DataType::Int64 => Type::INT8,
        DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Decimal64(..) | DataType::Decimal128(..) => Type::NUMERIC,
        DataType::Date32 => Type::DATE,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Timestamp(..) => Type::TIMESTAMP,
        DataType::Time64(_) => Type::TIME,
        DataType::Binary => Type::BYTEA,
        DataType::Interval(_) => Type::INTERVAL,
        DataType::List(item) => match pg_type(item.data_type()) {
            Type::BOOL => Type::BOOL_ARRAY,
            Type::INT4 => Type::INT4_ARRAY,
            Type::INT8 => Type::INT8_ARRAY,
            Type::FLOAT4 => Type::FLOAT4_ARRAY,
            Type::FLOAT8 => Type::FLOAT8_ARRAY,
            Type::NUMERIC => Type::NUMERIC_ARRAY,
            Type::DATE => Type::DATE_ARRAY,
            Type::TIMESTAMP => Type::TIMESTAMP_ARRAY,
            Type::TIMESTAMPTZ => Type::TIMESTAMPTZ_ARRAY,
            Type::BYTEA => Type::BYTEA_ARRAY,
            Type::INTERVAL => Type::INTERVAL_ARRAY,
            _ => Type::VARCHAR_ARRAY,
        },
        DataType::Struct(_) => Type::RECORD,
        _ => Type::VARCHAR,
    }
}

/// One value of a result row.
#[derive(Debug)]
pub enum PgValue {
    Null,
    Bool(bool),
    Int4(i32),
    Int8(i64),
    /// A vector's element (ADR 0082).
    Float4(f32),
    Float8(f64),
    Numeric {
        value: i128,
        scale: i8,
    },
    Text(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01.
    Timestamp(i64),
    /// Microseconds since 1970-01-01 UTC, and the zone's offset then, in seconds.
    Instant(i64, i32),
    /// Microseconds since midnight.
    Time(i64),
    Interval(IntervalMonthDayNano),
    /// A one-dimensional array and the type of its elements.
    Array(Vec<PgValue>, Type),
    /// A record's fields, each with its type.
    Record(Vec<(PgValue, Type)>),
}

impl PgValue {
    /// The value at `row` of `column`.
    pub fn at(column: &ArrayRef, row: usize) -> PgValue {
        // A column of the NULL type has no null buffer: every value of it is NULL.
        if column.is_null(row) || *column.data_type() == DataType::Null {
            return PgValue::Null;
        }
        match column.data_type() {
            DataType::Boolean => PgValue::Bool(column.as_boolean().value(row)),
            DataType::Int32 => PgValue::Int4(column.as_primitive::<Int32Type>().value(row)),
            DataType::Int64 => PgValue::Int8(column.as_primitive::<Int64Type>().value(row)),
            DataType::Float32 => PgValue::Float4(column.as_primitive::<Float32Type>().value(row)),
            DataType::Float64 => PgValue::Float8(column.as_primitive::<Float64Type>().value(row)),
            DataType::Decimal64(_, scale) => PgValue::Numeric {
                value: column.as_primitive::<Decimal64Type>().value(row).into(),
                scale: *scale,
            },
            DataType::Decimal128(_, scale) => PgValue::Numeric {
                value: column.as_primitive::<Decimal128Type>().value(row),
                scale: *scale,
            },
            DataType::Utf8 => PgValue::Text(column.as_string::<i32>().value(row).to_string()),
            DataType::Binary => PgValue::Bytes(column.as_binary::<i32>().value(row).to_vec()),
            DataType::Date32 => PgValue::Date(column.as_primitive::<Date32Type>().value(row)),
            DataType::Timestamp(TimeUnit::Microsecond, Some(zone)) => {
                let micros = column.as_primitive::<TimestampMicrosecondType>().value(row);
                PgValue::Instant(micros, offset_in(zone, micros))
            }
            DataType::Timestamp(TimeUnit::Microsecond, None) => {
                PgValue::Timestamp(column.as_primitive::<TimestampMicrosecondType>().value(row))
            }
            DataType::Time64(TimeUnit::Microsecond) => {
                PgValue::Time(column.as_primitive::<Time64MicrosecondType>().value(row))
            }
            DataType::Interval(IntervalUnit::MonthDayNano) => {
                PgValue::Interval(column.as_primitive::<IntervalMonthDayNanoType>().value(row))
            }
            DataType::List(item) => {
                let items = column.as_list::<i32>().value(row);
                let items = (0..items.len()).map(|i| PgValue::at(&items, i)).collect();
                PgValue::Array(items, pg_type(item.data_type()))
            }
            DataType::Struct(fields) => {
                let record = column.as_struct();
                let values = fields
                    .iter()
                    .zip(record.columns())
                    .map(|(f, c)| (PgValue::at(c, row), pg_type(f.data_type())))
                    .collect();
                PgValue::Record(values)
            }
            // A map as its text in DuckDB's form, `{a=1}` (ADR 0064).
            DataType::Map(..) => match pondra_cluster::nested_as_text(&column.slice(row, 1)) {
                Ok(text) => PgValue::Text(text.as_string::<i32>().value(0).to_string()),
                Err(_) => PgValue::Null,
            },
            _ => {
                let options = arrow::util::display::FormatOptions::default();
                match arrow::util::display::ArrayFormatter::try_new(column.as_ref(), &options) {
                    Ok(f) => PgValue::Text(f.value(row).to_string()),
                    Err(_) => PgValue::Null,
                }
            }
        }
    }

    pub fn text(&self) -> Option<String> {
        Some(match self {
            PgValue::Null => return None,
            PgValue::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
            PgValue::Int4(v) => v.to_string(),
            PgValue::Int8(v) => v.to_string(),
            PgValue::Float4(v) if v.is_finite() => v.to_string(),
            PgValue::Float4(v) => float_text(f64::from(*v)),
            PgValue::Float8(v) => float_text(*v),
            PgValue::Numeric { value, scale } => decimal_text(*value, *scale),
            PgValue::Text(s) => s.clone(),
            // Postgres's `bytea_output = hex`, which every client decodes.
            PgValue::Bytes(bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("\\x{hex}")
            }
            PgValue::Date(days) => date_text(*days),
            PgValue::Timestamp(micros) => timestamp_text(*micros),
            PgValue::Instant(micros, offset) => instant_text(*micros, *offset),
            PgValue::Time(micros) => time_text(*micros),
            PgValue::Interval(i) => interval_text(i),
            PgValue::Array(items, _) => array_text(items),
            PgValue::Record(fields) => record_text(fields),
        })
    }
}

/// Postgres's text form of an array: `{1,NULL,"a b"}`.
fn array_text(items: &[PgValue]) -> String {
    let mut text = String::from("{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let Some(item) = item.text() else {
            text.push_str("NULL");
            continue;
        };
        pondra_cluster::push_array_item(&mut text, &item);
    }
    text.push('}');
    text
}

/// Postgres's text form of a record: `(1,,"a b")`, a NULL field empty.
fn record_text(fields: &[(PgValue, Type)]) -> String {
    let mut text = String::from("(");
    for (i, (field, _)) in fields.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let Some(field) = field.text() else { continue };
        let needs_quotes = field.is_empty()
            || field
                .chars()
                .any(|c| matches!(c, '(' | ')' | ',' | '"' | '\\') || c.is_whitespace());
        if !needs_quotes {
            text.push_str(&field);
            continue;
        }
        text.push('"');
        for c in field.chars() {
            if matches!(c, '"' | '\\') {
                text.push(c);
            }
            text.push(c);
        }
        text.push('"');
    }
    text.push(')');
    text
}

fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        (if v > 0.0 { "Infinity" } else { "-Infinity" }).into()
    } else {
        v.to_string()
    }
}

pub fn decimal_text(value: i128, scale: i8) -> String {
    if scale <= 0 {
        return (value * 10i128.pow((-scale) as u32)).to_string();
    }
    let scale = scale as usize;
    let digits = value.unsigned_abs().to_string();
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = digits.split_at(digits.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{whole}.{fraction}")
}

/// An interval as Postgres writes it (`1 year 2 mons 3 days 01:02:03`).
fn interval_text(i: &IntervalMonthDayNano) -> String {
    pondra_cluster::interval_text(*i, "mon")
}

impl ToSqlText for PgValue {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format_options: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self.text() {
            None => Ok(IsNull::Yes),
            Some(text) => {
                out.put_slice(text.as_bytes());
                Ok(IsNull::No)
            }
        }
    }
}

impl ToSql for PgValue {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            PgValue::Null => return Ok(IsNull::Yes),
            PgValue::Bool(b) => out.put_u8(u8::from(*b)),
            PgValue::Int4(v) => out.put_i32(*v),
            PgValue::Int8(v) => out.put_i64(*v),
            PgValue::Float4(v) => out.put_f32(*v),
            PgValue::Float8(v) => out.put_f64(*v),
            PgValue::Numeric { value, scale } => numeric_binary(*value, *scale, out),
            PgValue::Text(s) => out.put_slice(s.as_bytes()),
            PgValue::Bytes(bytes) => out.put_slice(bytes),
            // Infinities as PostgreSQL's own sentinels (ADR 0062).
            PgValue::Date(DATE_INFINITY) => out.put_i32(i32::MAX),
            PgValue::Date(days) if *days == -DATE_INFINITY => out.put_i32(i32::MIN),
            PgValue::Date(days) => out.put_i32((*days as i64 - PG_EPOCH_DAYS) as i32),
            PgValue::Timestamp(TIMESTAMP_INFINITY) | PgValue::Instant(TIMESTAMP_INFINITY, _) => {
                out.put_i64(i64::MAX)
            }
            PgValue::Timestamp(micros) | PgValue::Instant(micros, _)
                if *micros == -TIMESTAMP_INFINITY =>
            {
                out.put_i64(i64::MIN)
            }
            PgValue::Timestamp(micros) | PgValue::Instant(micros, _) => {
                out.put_i64(micros - PG_EPOCH_MICROS)
            }
            PgValue::Time(micros) => out.put_i64(*micros),
            PgValue::Interval(i) => {
                out.put_i64(i.nanoseconds / 1000);
                out.put_i32(i.days);
                out.put_i32(i.months);
            }
            PgValue::Array(items, item_type) => array_binary(items, item_type, out)?,
            PgValue::Record(fields) => {
                out.put_i32(fields.len() as i32);
                for (field, field_type) in fields {
                    out.put_u32(field_type.oid());
                    put_sized(field, field_type, out)?;
                }
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Postgres's binary array: dimensions, a has-NULLs flag, the element type, each dimension's
/// length and lower bound (1), then each element as a length (-1 for NULL) and its bytes.
fn array_binary(
    items: &[PgValue],
    item_type: &Type,
    out: &mut BytesMut,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    out.put_i32(i32::from(!items.is_empty()));
    out.put_i32(i32::from(items.iter().any(|i| matches!(i, PgValue::Null))));
    out.put_u32(item_type.oid());
    if items.is_empty() {
        return Ok(());
    }
    out.put_i32(items.len() as i32);
    out.put_i32(1);
    for item in items {
        put_sized(item, item_type, out)?;
    }
    Ok(())
}

/// A value in binary as arrays and records hold one: its length (-1 for NULL), then its bytes.
fn put_sized(
    value: &PgValue,
    value_type: &Type,
    out: &mut BytesMut,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    let length_at = out.len();
    out.put_i32(0);
    let length = match value.to_sql(value_type, out)? {
        IsNull::Yes => -1,
        IsNull::No => (out.len() - length_at - 4) as i32,
    };
    out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
    Ok(())
}

/// Postgres's binary NUMERIC: base-10000 digits with a weight, a sign and a display scale.
fn numeric_binary(value: i128, scale: i8, out: &mut BytesMut) {
    let scale = scale.max(0) as usize;
    let text = decimal_text(value, scale as i8);
    let unsigned = text.trim_start_matches('-');
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let whole = whole.trim_start_matches('0');
    // Whole digits padded on the left, fraction digits on the right, to groups of four.
    let whole_padded = format!("{}{whole}", "0".repeat((4 - whole.len() % 4) % 4));
    let fraction_padded = format!("{fraction}{}", "0".repeat((4 - fraction.len() % 4) % 4));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap_or("0").parse().unwrap_or(0))
            .collect()
    };
    let mut digits = group(&whole_padded);
    let mut weight = digits.len() as i16 - 1;
    digits.extend(group(&fraction_padded));
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    out.put_i16(digits.len() as i16);
    out.put_i16(weight);
    out.put_u16(if value < 0 && !digits.is_empty() {
        0x4000
    } else {
        0
    });
    out.put_u16(scale as u16);
    for d in digits {
        out.put_i16(d);
    }
}

/// A binary NUMERIC as decimal text (NaN and infinities are not numbers Pondra holds).
fn numeric_from_binary(raw: &[u8]) -> Option<String> {
    let word =
        |i: usize| -> Option<i16> { Some(i16::from_be_bytes(raw.get(i..i + 2)?.try_into().ok()?)) };
    let (ndigits, weight, sign, dscale) = (word(0)?, word(2)?, word(4)? as u16, word(6)?);
    if sign != 0 && sign != 0x4000 {
        return None;
    }
    let digits: Vec<i16> = (0..ndigits as usize)
        .map(|i| word(8 + 2 * i))
        .collect::<Option<_>>()?;
    // Digit k is worth 10000^(weight - k).
    let mut whole = String::new();
    for k in 0..=weight.max(-1) {
        let d = digits.get(k as usize).copied().unwrap_or(0);
        if whole.is_empty() {
            if d != 0 {
                whole = d.to_string();
            }
        } else {
            whole.push_str(&format!("{d:04}"));
        }
    }
    if whole.is_empty() {
        whole.push('0');
    }
    let mut fraction = String::new();
    for k in (weight + 1).max(0)..ndigits {
        let position = k - weight - 1;
        if position < 0 {
            continue;
        }
        fraction.push_str(&format!("{:04}", digits[k as usize]));
    }
    // Leading fraction groups skipped by a negative weight are zeros.
    if weight < -1 {
        fraction = "0000".repeat((-weight - 1) as usize) + &fraction;
    }
    let scale = dscale.max(0) as usize;
    fraction.truncate(scale);
    while fraction.len() < scale {
        fraction.push('0');
    }
    let sign = if sign == 0x4000 { "-" } else { "" };
    Some(if scale == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    })
}

/// Parameter `index` of a portal as a SQL literal, by the type the client gave it.
pub fn parameter_literal<S: Clone>(portal: &Portal<S>, index: usize) -> PgWireResult<String> {
    let declared = portal
        .statement
        .parameter_types
        .get(index)
        .cloned()
        .flatten()
        .unwrap_or(Type::UNKNOWN);
    let binary = portal.parameter_format.is_binary(index);
    let Some(Some(raw)) = portal.parameters.get(index) else {
        return Ok("NULL".into());
    };
    let unsupported = |what: &str| {
        PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
            "ERROR".into(),
            "0A000".into(),
            format!(
                "parameter ${} of type {what} in binary format is not supported yet",
                index + 1
            ),
        )))
    };
    if binary {
        let value = match declared {
            Type::BOOL => portal
                .parameter::<bool>(index, &declared)?
                .map(|b| b.to_string()),
            Type::INT2 => portal
                .parameter::<i16>(index, &declared)?
                .map(|v| v.to_string()),
            Type::INT4 => portal
                .parameter::<i32>(index, &declared)?
                .map(|v| v.to_string()),
            Type::INT8 => portal
                .parameter::<i64>(index, &declared)?
                .map(|v| v.to_string()),
            Type::FLOAT4 => portal
                .parameter::<f32>(index, &declared)?
                .map(|v| format!("CAST('{}' AS DOUBLE)", float_text(v as f64))),
            Type::FLOAT8 => portal
                .parameter::<f64>(index, &declared)?
                .map(|v| format!("CAST('{}' AS DOUBLE)", float_text(v))),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => portal
                .parameter::<String>(index, &declared)?
                .map(|s: String| quote_literal(&s)),
            Type::DATE if raw.len() == 4 => {
                let days = i32::from_be_bytes(raw[..4].try_into().expect("4 bytes"));
                Some(format!(
                    "DATE '{}'",
                    date_text((days as i64 + PG_EPOCH_DAYS) as i32)
                ))
            }
            Type::TIMESTAMP if raw.len() == 8 => {
                let micros = i64::from_be_bytes(raw[..8].try_into().expect("8 bytes"));
                Some(format!(
                    "TIMESTAMP '{}'",
                    timestamp_text(micros + PG_EPOCH_MICROS)
                ))
            }
            Type::TIMESTAMPTZ if raw.len() == 8 => {
                let micros = i64::from_be_bytes(raw[..8].try_into().expect("8 bytes"));
                Some(format!(
                    "TIMESTAMPTZ '{}'",
                    instant_text(micros + PG_EPOCH_MICROS, 0)
                ))
            }
            Type::NUMERIC => Some(numeric_from_binary(raw).ok_or_else(|| unsupported("numeric"))?),
            Type::BYTEA => Some(blob_literal(raw)),
            other => return Err(unsupported(other.name())),
        };
        return Ok(value.unwrap_or_else(|| "NULL".into()));
    }
    let text = std::str::from_utf8(raw).map_err(|e| PgWireError::ApiError(Box::new(e)))?;
    Ok(match declared {
        Type::INT2 | Type::INT4 | Type::INT8 if text.trim().parse::<i64>().is_ok() => {
            text.trim().to_string()
        }
        Type::NUMERIC if text.trim().parse::<f64>().is_ok_and(f64::is_finite) => {
            text.trim().to_string()
        }
        Type::FLOAT4 | Type::FLOAT8 => format!("CAST({} AS DOUBLE)", quote_literal(text)),
        Type::BOOL => format!("CAST({} AS BOOLEAN)", quote_literal(text)),
        Type::DATE => format!("DATE {}", quote_literal(text)),
        Type::TIMESTAMP => format!("TIMESTAMP {}", quote_literal(text)),
        Type::TIMESTAMPTZ => format!("TIMESTAMPTZ {}", quote_literal(text)),
        Type::BYTEA => match text.strip_prefix("\\x").and_then(hex_bytes) {
            Some(bytes) => blob_literal(&bytes),
            None => return Err(unsupported_text("bytea other than Postgres's hex form")),
        },
        _ => quote_literal(text),
    })
}

/// Bytes as a BLOB literal, each byte escaped (ADR 0066).
fn blob_literal(bytes: &[u8]) -> String {
    let escaped: String = bytes.iter().map(|b| format!("\\x{b:02X}")).collect();
    format!("CAST('{escaped}' AS BLOB)")
}

/// Hex digits, two to a byte.
fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

fn unsupported_text(what: &str) -> PgWireError {
    PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
        "ERROR".into(),
        "0A000".into(),
        format!("a parameter of type {what} is not supported yet"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_binary_matches_postgres() {
        let mut out = BytesMut::new();
        numeric_binary(-123_456_789, 2, &mut out);
        // -1234567.89: digits 123 4567 8900, weight 1, negative, scale 2.
        let expected: Vec<u8> = [3i16, 1]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .chain(0x4000u16.to_be_bytes())
            .chain(2u16.to_be_bytes())
            .chain([123i16, 4567, 8900].iter().flat_map(|v| v.to_be_bytes()))
            .collect();
        assert_eq!(out.to_vec(), expected);
        assert_eq!(decimal_text(5, 2), "0.05");
        assert_eq!(numeric_from_binary(&out).as_deref(), Some("-1234567.89"));
        let mut small = BytesMut::new();
        numeric_binary(5, 4, &mut small);
        assert_eq!(numeric_from_binary(&small).as_deref(), Some("0.0005"));
        assert_eq!(decimal_text(-150, 2), "-1.50");
    }

    #[test]
    fn dates_and_times_read_as_postgres_writes_them() {
        assert_eq!(date_text(19_724), "2024-01-02");
        assert_eq!(
            timestamp_text(1_704_153_600_500_000),
            "2024-01-02 00:00:00.5"
        );
        let interval = IntervalMonthDayNano::new(14, 3, 3_723_000_000_000);
        assert_eq!(interval_text(&interval), "1 year 2 mons 3 days 01:02:03");
    }
}
