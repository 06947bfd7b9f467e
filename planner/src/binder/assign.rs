//! Assignment: which values a column of a type may be given by INSERT, UPDATE and MERGE.

use arrow::datatypes::DataType;

use super::expr::type_name;
use crate::{Result, bind_err};

/// Whether values of type `from` may be stored as type `to`: the same type, NULL, text
/// (parsed), a number as a number, a date or timestamp as a timestamp of either kind (ADR
/// 0067), a list as a list of elements
/// that may be, and a struct as a struct.
fn assignable(from: &DataType, to: &DataType) -> bool {
    // A vector's elements are 4-byte floats (ADR 0082), which any number may become.
    let numeric = |t: &DataType| crate::types::is_numeric(t) || *t == DataType::Float32;
    match (from, to) {
        (DataType::List(from), DataType::List(to)) => assignable(from.data_type(), to.data_type()),
        // Field by field, by name or position, as a cast (ADR 0063); a map key by key.
        (DataType::Struct(_), DataType::Struct(_)) | (DataType::Map(..), DataType::Map(..)) => true,
        _ => {
            from == to
                || *from == DataType::Null
                || *from == DataType::Utf8
                || (numeric(from) && numeric(to))
                || (matches!(from, DataType::Date32 | DataType::Timestamp(..))
                    && matches!(to, DataType::Timestamp(..)))
                // A timestamp stored in a DATE column keeps its date, as PostgreSQL's
                // assignment cast and DuckDB do (`DATE '2024-01-01' + INTERVAL 1 DAY`).
                || (matches!(from, DataType::Timestamp(..)) && *to == DataType::Date32)
        }
    }
}

/// Whether a value of type `from` may be stored in a column of type `to`.
pub(super) fn check_assignable(from: &DataType, to: &DataType, column: &str) -> Result<()> {
    if assignable(from, to) {
        Ok(())
    } else {
        Err(bind_err!(
            "column {column} is of type {} but the value is of type {}",
            type_name(to),
            type_name(from)
        ))
    }
}
