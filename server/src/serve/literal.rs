//! Values bound to a statement's parameters, written as SQL literals in its place-holders.

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
