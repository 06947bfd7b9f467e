//! DuckDB's `regexp_extract(s, pattern, names)` and `regexp_extract_all(s, pattern, names)`:
//! a pattern's groups 1, 2, ... as the fields of a struct named by `names` (ADR 0063).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, StringArray, StructArray};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Fields};

use crate::functions::Patterns;
use crate::{ExecError, Result};

/// The groups of the first match of each row (`all` false: a struct, '' for a group that took
/// no part, all '' without a match) or of every match (`all`: a list of structs, NULL for a
/// group that took no part).
pub fn regexp_groups(
    args: &[ArrayRef],
    data_type: &DataType,
    all: bool,
    insensitive: bool,
) -> Result<ArrayRef> {
    let fields = struct_fields(data_type, all);
    let (texts, patterns) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut compiled = Patterns::new(insensitive);
    let mut columns: Vec<Vec<Option<String>>> = vec![Vec::new(); fields.len()];
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(texts.len());
    for row in 0..texts.len() {
        if texts.is_null(row) || patterns.is_null(row) {
            valid.push(false);
            if !all {
                columns.iter_mut().for_each(|c| c.push(None));
            }
            offsets.push(*offsets.last().expect("starts at 0"));
            continue;
        }
        valid.push(true);
        let regex = compiled.get(patterns.value(row))?;
        if regex.captures_len() <= fields.len() {
            return Err(ExecError::Execution(format!(
                "regexp_extract: the pattern has {} groups, fewer than the {} names",
                regex.captures_len() - 1,
                fields.len()
            )));
        }
        let text = texts.value(row);
        if all {
            for captures in regex.captures_iter(text) {
                for (i, column) in columns.iter_mut().enumerate() {
                    column.push(captures.get(i + 1).map(|m| m.as_str().to_string()));
                }
            }
            let count = columns.first().map_or(0, Vec::len);
            offsets.push(i32::try_from(count).map_err(|_| too_large())?);
        } else {
            let captures = regex.captures(text);
            for (i, column) in columns.iter_mut().enumerate() {
                let group = captures.as_ref().and_then(|c| c.get(i + 1));
                column.push(Some(group.map_or("", |m| m.as_str()).to_string()));
            }
        }
    }
    let length = columns.first().map_or(0, Vec::len);
    let columns: Vec<ArrayRef> = columns
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    let nulls = Some(NullBuffer::from(valid));
    if !all {
        return Ok(Arc::new(StructArray::try_new(
            fields.clone(),
            columns,
            nulls,
        )?));
    }
    let records = StructArray::try_new_with_length(fields.clone(), columns, None, length)?;
    let DataType::List(item) = data_type else {
        unreachable!("checked by struct_fields")
    };
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        OffsetBuffer::new(offsets.into()),
        Arc::new(records),
        nulls,
    )?))
}

fn struct_fields(data_type: &DataType, all: bool) -> &Fields {
    let record = match (data_type, all) {
        (DataType::List(item), true) => item.data_type(),
        (record, _) => record,
    };
    match record {
        DataType::Struct(fields) => fields,
        other => unreachable!("regexp groups are a struct, not {other}"),
    }
}

fn too_large() -> ExecError {
    ExecError::Execution("regexp_extract_all: the matches are too many for a list".into())
}
