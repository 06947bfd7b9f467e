//! Structs (SQL `STRUCT(...)`, Arrow structs; ADR 0063): building them, taking their
//! fields, casting them to structs and to text in DuckDB's form `{'a': 1, 'b': x}`.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, StringArray, StructArray, new_null_array,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Fields};
use pondra_planner::BinaryOp;

use crate::{ExecError, Result};

/// `{'a': x, 'b': y}`, `struct_pack`, `row`: one struct per row of the fields' values, which
/// are never NULL themselves.
pub fn make(values: &[ArrayRef], data_type: &DataType, rows: usize) -> Result<ArrayRef> {
    let DataType::Struct(fields) = data_type else {
        unreachable!("a struct is built with a struct type, not {data_type}")
    };
    assert_eq!(fields.len(), values.len(), "one value per field");
    if values.is_empty() {
        return Ok(Arc::new(StructArray::new_empty_fields(rows, None)));
    }
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        values.to_vec(),
        None,
    )?))
}

/// `(record).field`: the field at `index`, NULL where the record is.
pub fn field(records: &ArrayRef, index: usize) -> Result<ArrayRef> {
    let records = records.as_struct();
    let column = records.column(index);
    if records.null_count() == 0 || column.data_type() == &DataType::Null {
        return Ok(column.clone());
    }
    let nulls = NullBuffer::union(records.nulls(), column.nulls());
    Ok(arrow::array::make_array(
        column.to_data().into_builder().nulls(nulls).build()?,
    ))
}

/// A struct cast to another struct type, as DuckDB casts: an unnamed struct by position, a
/// named one by name (fields the target names and the source lacks are NULL; at least one
/// must match). Each field casts by the engine's own rules.
pub fn cast(value: &ArrayRef, to: &Fields, safe: bool) -> Result<ArrayRef> {
    let records = value.as_struct();
    let from = records.fields();
    let by_position = from.iter().all(|f| f.name().is_empty())
        || to.iter().all(|f| f.name().is_empty())
        || from.len() == to.len()
            && from
                .iter()
                .zip(to.iter())
                .all(|(a, b)| a.name() == b.name());
    if by_position && from.len() != to.len() {
        return Err(ExecError::Execution(format!(
            "Mismatch Type Error: Cannot cast STRUCTs of different size ({} and {} fields)",
            from.len(),
            to.len()
        )));
    }
    let matching = |f: &arrow::datatypes::FieldRef| {
        from.iter().any(|s| s.name().eq_ignore_ascii_case(f.name()))
    };
    if !by_position && !to.iter().any(matching) {
        return Err(ExecError::Execution(
            "STRUCT to STRUCT cast must have at least one matching member".into(),
        ));
    }
    let columns = to
        .iter()
        .enumerate()
        .map(|(i, target)| {
            let source = if by_position {
                Some(i)
            } else {
                from.iter()
                    .position(|f| f.name().eq_ignore_ascii_case(target.name()))
            };
            match source {
                Some(source) => {
                    crate::expr::cast_value(records.column(source), target.data_type(), safe)
                }
                None => Ok(new_null_array(target.data_type(), records.len())),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    if to.is_empty() {
        return Ok(Arc::new(StructArray::new_empty_fields(
            records.len(),
            records.nulls().cloned(),
        )));
    }
    Ok(Arc::new(StructArray::try_new(
        to.clone(),
        columns,
        records.nulls().cloned(),
    )?))
}

/// Row values compared as SQL compares rows: `=` holds where every field is equal, fails
/// where one differs, and is NULL otherwise; an ordering is decided by the first field that is
/// not equal (NULL if that field is NULL), equal rows being `<=` and `>=`.
pub fn compare_rows(op: BinaryOp, left: &ArrayRef, right: &ArrayRef) -> Result<ArrayRef> {
    let (left, right) = (left.as_struct(), right.as_struct());
    assert_eq!(left.num_columns(), right.num_columns(), "rows of one width");
    let pairs = left.columns().iter().zip(right.columns());
    let equal = pairs
        .clone()
        .map(|(l, r)| crate::expr::compare(BinaryOp::Eq, l, r))
        .collect::<Result<Vec<_>>>()?;
    let strict = match op {
        BinaryOp::Lt | BinaryOp::LtEq => Some(BinaryOp::Lt),
        BinaryOp::Gt | BinaryOp::GtEq => Some(BinaryOp::Gt),
        _ => None,
    };
    let ordered = match strict {
        Some(strict) => pairs
            .map(|(l, r)| crate::expr::compare(strict, l, r))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let out: BooleanArray = (0..left.len())
        .map(|row| {
            if left.is_null(row) || right.is_null(row) {
                return None;
            }
            let field = |column: &ArrayRef| {
                let column = column.as_boolean();
                column.is_valid(row).then(|| column.value(row))
            };
            match op {
                BinaryOp::Eq | BinaryOp::NotEq => {
                    let mut unknown = false;
                    for column in &equal {
                        match field(column) {
                            Some(false) => return Some(op == BinaryOp::NotEq),
                            None => unknown = true,
                            Some(true) => {}
                        }
                    }
                    (!unknown).then_some(op == BinaryOp::Eq)
                }
                _ => {
                    for (eq, order) in equal.iter().zip(&ordered) {
                        match field(eq)? {
                            true => continue,
                            false => return field(order),
                        }
                    }
                    Some(matches!(op, BinaryOp::LtEq | BinaryOp::GtEq))
                }
            }
        })
        .collect();
    Ok(Arc::new(out))
}

/// Values in DuckDB's text form: a struct as `{'a': 1, 'b': x}` (an unnamed one as
/// `(1, x)`), a map as `{a=1}`, a list inside either as `[1, 2]`.
pub fn to_text(value: &ArrayRef) -> Result<ArrayRef> {
    let texts = nested_text(value)?;
    let nulls = value.logical_nulls();
    let out: StringArray = (0..value.len())
        .map(|row| {
            let valid = nulls.as_ref().is_none_or(|n| n.is_valid(row));
            valid.then(|| texts[row].clone())
        })
        .collect();
    Ok(Arc::new(out))
}

/// Each row's text, "NULL" for a NULL.
fn nested_text(value: &ArrayRef) -> Result<Vec<String>> {
    let nulls = value.logical_nulls();
    let is_null = |row: usize| nulls.as_ref().is_some_and(|n| n.is_null(row));
    let mut out = Vec::with_capacity(value.len());
    match value.data_type() {
        DataType::Struct(fields) => {
            let records = value.as_struct();
            let columns = records
                .columns()
                .iter()
                .map(nested_text)
                .collect::<Result<Vec<_>>>()?;
            let unnamed = !fields.is_empty() && fields.iter().all(|f| f.name().is_empty());
            for row in 0..value.len() {
                if is_null(row) {
                    out.push("NULL".to_string());
                    continue;
                }
                let parts: Vec<String> = fields
                    .iter()
                    .zip(&columns)
                    .map(|(f, c)| match unnamed {
                        true => c[row].clone(),
                        false => format!("'{}': {}", f.name().replace('\'', "''"), c[row]),
                    })
                    .collect();
                // A one-field tuple is written `(1,)`, as DuckDB does.
                out.push(match (unnamed, parts.len()) {
                    (true, 1) => format!("({},)", parts[0]),
                    (true, _) => format!("({})", parts.join(", ")),
                    (false, _) => format!("{{{}}}", parts.join(", ")),
                });
            }
        }
        DataType::Map(..) => {
            let map = value.as_map();
            let keys = nested_text(map.keys())?;
            let values = nested_text(map.values())?;
            for row in 0..value.len() {
                if is_null(row) {
                    out.push("NULL".to_string());
                    continue;
                }
                let offsets = map.value_offsets();
                let range = offsets[row] as usize..offsets[row + 1] as usize;
                let entries: Vec<String> = range
                    .map(|i| format!("{}={}", keys[i], values[i]))
                    .collect();
                out.push(format!("{{{}}}", entries.join(", ")));
            }
        }
        DataType::List(_) => {
            let lists = value.as_list::<i32>();
            let items = nested_text(lists.values())?;
            let offsets = lists.value_offsets();
            for row in 0..value.len() {
                if is_null(row) {
                    out.push("NULL".to_string());
                    continue;
                }
                let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
                out.push(format!("[{}]", items[start..end].join(", ")));
            }
        }
        DataType::Utf8 => {
            let texts = value.as_string::<i32>();
            for row in 0..value.len() {
                out.push(match is_null(row) {
                    true => "NULL".to_string(),
                    false => nested_string(texts.value(row)).into_owned(),
                });
            }
        }
        _ => {
            // Other values by the same rule: a time, with its colons, is quoted.
            let texts = crate::casts::cast(value, &DataType::Utf8, false)?;
            let texts = texts.as_string::<i32>();
            for row in 0..value.len() {
                out.push(match is_null(row) {
                    true => "NULL".to_string(),
                    false => nested_string(texts.value(row)).into_owned(),
                });
            }
        }
    }
    Ok(out)
}

/// A string inside a list or struct as DuckDB writes it: bare, unless it is empty, says
/// NULL, has space at an end, or holds a character that delimits nested values (brackets,
/// quotes, commas, and a struct's `:` or a map's `=`); then in
/// single quotes, with its quotes and backslashes escaped.
pub fn nested_string(text: &str) -> std::borrow::Cow<'_, str> {
    let delimits = |c: char| {
        matches!(
            c,
            ',' | '[' | ']' | '{' | '}' | '(' | ')' | '\'' | '"' | ':' | '='
        )
    };
    let quoted = text.is_empty()
        || text.eq_ignore_ascii_case("null")
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
        || text.contains(delimits);
    if !quoted {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if matches!(c, '\'' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    std::borrow::Cow::Owned(out)
}
