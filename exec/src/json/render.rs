//! JSON written as text: parsed documents in a style, documents assembled from the JSON text
//! of their parts, and Arrow values as JSON (`to_json`).

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use pondra_planner::JsonStyle;
use serde_json::Value;

use crate::{ExecError, Result};

/// What a style writes between items, between a key and its value, and inside an object's
/// braces.
struct Separators {
    item: &'static str,
    key: &'static str,
    padded: bool,
}

fn separators(style: JsonStyle) -> Separators {
    let (item, key, padded) = match style {
        JsonStyle::Compact => (",", ":", false),
        JsonStyle::Jsonb => (", ", ": ", false),
        JsonStyle::PgJson => (", ", " : ", false),
        JsonStyle::PgJsonAgg => (", ", " : ", true),
    };
    Separators { item, key, padded }
}

/// `value` written in `style`, at every depth.
pub(crate) fn write_value(out: &mut String, value: &Value, style: JsonStyle) {
    match value {
        Value::Array(items) => {
            let texts: Vec<String> = items.iter().map(|v| rendered(v, style)).collect();
            write_array(out, texts.iter().map(String::as_str), style);
        }
        Value::Object(members) => {
            let texts: Vec<(&str, String)> = members
                .iter()
                .map(|(k, v)| (k.as_str(), rendered(v, style)))
                .collect();
            write_object(out, texts.iter().map(|(k, v)| (*k, v.as_str())), style);
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `value` written in `style`.
pub(crate) fn rendered(value: &Value, style: JsonStyle) -> String {
    let mut out = String::new();
    write_value(&mut out, value, style);
    out
}

/// An array of items already written as JSON.
pub(crate) fn write_array<'a>(
    out: &mut String,
    items: impl Iterator<Item = &'a str>,
    style: JsonStyle,
) {
    let separators = separators(style);
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(separators.item);
        }
        out.push_str(item);
    }
    out.push(']');
}

/// An object of keys and values already written as JSON, in their order.
pub(crate) fn write_object<'a>(
    out: &mut String,
    members: impl Iterator<Item = (&'a str, &'a str)>,
    style: JsonStyle,
) {
    let separators = separators(style);
    out.push('{');
    let mut empty = true;
    for (i, (key, value)) in members.enumerate() {
        out.push_str(match (i, separators.padded) {
            (0, true) => " ",
            (0, false) => "",
            _ => separators.item,
        });
        write_string(out, key);
        out.push_str(separators.key);
        out.push_str(value);
        empty = false;
    }
    if separators.padded && !empty {
        out.push(' ');
    }
    out.push('}');
}

/// `text` as a JSON string.
pub(crate) fn write_string(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).expect("a string serializes"));
}

/// Row `row` of `array` as JSON text in `style`: NULL as `null`, numbers and booleans bare,
/// lists as arrays, structs and maps as objects, any other value as the string of its text.
pub(crate) fn write_arrow_value(
    out: &mut String,
    array: &dyn Array,
    row: usize,
    style: JsonStyle,
) -> Result<()> {
    if array.is_null(row) {
        out.push_str("null");
        return Ok(());
    }
    macro_rules! integer {
        ($t:ty) => {
            out.push_str(&array.as_primitive::<$t>().value(row).to_string())
        };
    }
    match array.data_type() {
        DataType::Null => out.push_str("null"),
        DataType::Boolean => out.push_str(match array.as_boolean().value(row) {
            true => "true",
            false => "false",
        }),
        DataType::Int8 => integer!(Int8Type),
        DataType::Int16 => integer!(Int16Type),
        DataType::Int32 => integer!(Int32Type),
        DataType::Int64 => integer!(Int64Type),
        DataType::UInt8 => integer!(UInt8Type),
        DataType::UInt16 => integer!(UInt16Type),
        DataType::UInt32 => integer!(UInt32Type),
        DataType::UInt64 => integer!(UInt64Type),
        DataType::Float32 => {
            write_float(out, array.as_primitive::<Float32Type>().value(row) as f64)
        }
        DataType::Float64 => write_float(out, array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => out.push_str(&display(array, row)?),
        DataType::Utf8 => write_string(out, array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => write_string(out, array.as_string::<i64>().value(row)),
        DataType::Utf8View => write_string(out, array.as_string_view().value(row)),
        DataType::List(_) => {
            let items = array.as_list::<i32>().value(row);
            write_items(out, items.as_ref(), style)?;
        }
        DataType::LargeList(_) => {
            let items = array.as_list::<i64>().value(row);
            write_items(out, items.as_ref(), style)?;
        }
        DataType::FixedSizeList(..) => {
            let items = array.as_fixed_size_list().value(row);
            write_items(out, items.as_ref(), style)?;
        }
        DataType::Struct(fields) => {
            let record = array.as_struct();
            let mut values = Vec::with_capacity(fields.len());
            for column in record.columns() {
                let mut value = String::new();
                write_arrow_value(&mut value, column.as_ref(), row, style)?;
                values.push(value);
            }
            let members = fields
                .iter()
                .map(|f| f.name().as_str())
                .zip(values.iter().map(String::as_str));
            write_object(out, members, value_style(style));
        }
        DataType::Map(..) => {
            let entries = array.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let mut members = Vec::with_capacity(entries.len());
            for entry in 0..entries.len() {
                let mut value = String::new();
                write_arrow_value(&mut value, values.as_ref(), entry, style)?;
                members.push((display(keys.as_ref(), entry)?, value));
            }
            let members = members.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            write_object(out, members, value_style(style));
        }
        DataType::Timestamp(..) => write_string(out, &display(array, row)?.replacen('T', " ", 1)),
        _ => write_string(out, &display(array, row)?),
    }
    Ok(())
}

/// The style nested objects are written in: a padded aggregate's members are not padded.
fn value_style(style: JsonStyle) -> JsonStyle {
    match style {
        JsonStyle::PgJsonAgg | JsonStyle::PgJson => JsonStyle::Compact,
        other => other,
    }
}

fn write_items(out: &mut String, items: &dyn Array, style: JsonStyle) -> Result<()> {
    let mut texts = Vec::with_capacity(items.len());
    for item in 0..items.len() {
        let mut text = String::new();
        write_arrow_value(&mut text, items, item, style)?;
        texts.push(text);
    }
    write_array(out, texts.iter().map(String::as_str), value_style(style));
    Ok(())
}

/// A double as JSON writes numbers (`1.0`, `0.5`); NaN and the infinities, which JSON has no
/// numbers for, as strings.
fn write_float(out: &mut String, value: f64) {
    match serde_json::Number::from_f64(value) {
        Some(number) => out.push_str(&number.to_string()),
        None if value.is_nan() => out.push_str("\"NaN\""),
        None if value > 0.0 => out.push_str("\"Infinity\""),
        None => out.push_str("\"-Infinity\""),
    }
}

fn display(array: &dyn Array, row: usize) -> Result<String> {
    let formatter = ArrayFormatter::try_new(array, &FormatOptions::default())
        .map_err(|e| ExecError::Execution(format!("to_json: {e}")))?;
    Ok(formatter.value(row).to_string())
}
