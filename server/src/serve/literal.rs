//! Values bound to a statement's parameters, written as SQL literals in its place-holders:
//! Arrow values (the Postgres and Flight doors) and JSON values (the HTTP door).

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// `text` as a SQL string literal.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The value at `row` of `column` as a SQL literal of its type.
pub fn arrow_literal(column: &ArrayRef, row: usize) -> Result<String, String> {
    if column.is_null(row) {
        return Ok("NULL".into());
    }
    let options = FormatOptions::default();
    let formatter =
        ArrayFormatter::try_new(column.as_ref(), &options).map_err(|e| e.to_string())?;
    let text = formatter.value(row).to_string();
    Ok(match column.data_type() {
        DataType::Boolean => text.to_uppercase(),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Decimal64(..)
        | DataType::Decimal128(..) => text,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            format!("CAST({} AS DOUBLE)", quote_literal(&text))
        }
        DataType::Date32 | DataType::Date64 => format!("DATE {}", quote_literal(&text)),
        DataType::Timestamp(..) => format!("TIMESTAMP {}", quote_literal(&text.replace('T', " "))),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => quote_literal(&text),
        other => return Err(format!("a parameter of type {other} is not supported yet")),
    })
}

/// The types a JSON parameter may name (`{"type": "DATE", "value": "2024-01-01"}`), for values
/// JSON has no literal of.
const NAMED_TYPES: [&str; 7] = [
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMPTZ",
    "DECIMAL",
    "INTERVAL",
    "UUID",
];

/// A JSON parameter as a SQL literal: null, booleans, numbers (a fraction as DOUBLE), strings,
/// arrays as lists, and `{"type": T, "value": text}` as a typed value.
pub fn json_literal(value: &serde_json::Value) -> Result<String, String> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string().to_uppercase(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => format!("CAST({} AS DOUBLE)", quote_literal(&n.to_string())),
        Value::String(text) => quote_literal(text),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(json_literal)
                .collect::<Result<Vec<_>, _>>()?;
            format!("[{}]", items.join(", "))
        }
        Value::Object(typed) => {
            let (Some(Value::String(name)), Some(Value::String(text))) =
                (typed.get("type"), typed.get("value"))
            else {
                return Err("a parameter object is {\"type\": ..., \"value\": \"text\"}".into());
            };
            let name = name.to_uppercase();
            if !NAMED_TYPES.contains(&name.as_str()) {
                return Err(format!(
                    "a parameter of type {name} is not supported (types: {})",
                    NAMED_TYPES.join(", ")
                ));
            }
            format!("CAST({} AS {name})", quote_literal(text))
        }
    })
}
