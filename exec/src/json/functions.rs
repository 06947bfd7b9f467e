//! The JSON functions (`ScalarFunction::Json`), row by row over JSON held as text. Every
//! argument comes as an array of the batch's length (a constant call's, of one row).

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListBuilder, StringBuilder, StructBuilder,
};
use arrow::datatypes::{DataType, Fields};
use pondra_planner::{JsonOp, JsonStyle};
use serde_json::{Map, Value};

use super::render::{rendered, write_array, write_arrow_value, write_object, write_string};
use super::{Step, follow, parse, parse_path};
use crate::{ExecError, Result};

/// `op` over `args`, giving `data_type`, for `rows` rows.
pub fn json_function(
    op: JsonOp,
    args: &[ArrayRef],
    data_type: &DataType,
    rows: usize,
) -> Result<ArrayRef> {
    match op {
        JsonOp::ToJson(style) => texts(rows, |row| {
            let mut out = String::new();
            write_arrow_value(&mut out, args[0].as_ref(), row, style)?;
            Ok(Some(out))
        }),
        JsonOp::Restyle(style) => {
            per_document(args, |document| Ok(Some(rendered(&document, style))))
        }
        JsonOp::Object(style) => texts(rows, |row| object(args, row, style).map(Some)),
        JsonOp::Array(style) => texts(rows, |row| {
            let items = args.iter().map(|a| json_at(a, row));
            let items: Vec<&str> = items.collect();
            let mut out = String::new();
            write_array(&mut out, items.into_iter(), style);
            Ok(Some(out))
        }),
        JsonOp::ArrayOfList(style) => array_of_list(&args[0], style),
        JsonOp::ObjectOfEntries(style) => object_of_entries(&args[0], style),
        JsonOp::ObjectOfTexts => texts(rows, |row| object_of_texts(args, row)),
        JsonOp::ArrayLength { strict } => array_length(args, strict),
        JsonOp::TypeOf { duckdb } => with_path(args, |value| Ok(Some(type_name(value, duckdb)))),
        JsonOp::Keys => keys(args),
        JsonOp::Valid => {
            let documents = args[0].as_string::<i32>();
            let valid: BooleanArray = documents
                .iter()
                .map(|d| d.map(|d| serde_json::from_str::<Value>(d).is_ok()))
                .collect();
            Ok(Arc::new(valid))
        }
        JsonOp::Exists => booleans(args, |document, path| {
            Ok(follow(&document, &parse_path(path)?).is_some())
        }),
        JsonOp::Contains => booleans(args, |haystack, needle| {
            Ok(contains(&haystack, &parse(needle)?))
        }),
        JsonOp::MergePatch => merge_patch(args, rows),
        JsonOp::StripNulls(style) => per_document(args, |mut document| {
            strip_nulls(&mut document);
            Ok(Some(rendered(&document, style)))
        }),
        JsonOp::Pretty => per_document(args, |document| Ok(Some(pretty(&document)))),
        JsonOp::Set => set(args, rows),
        JsonOp::Value => with_path(args, |value| {
            Ok(match value {
                Value::Array(_) | Value::Object(_) => None,
                scalar => Some(scalar.to_string()),
            })
        }),
        JsonOp::ExtractPath { text } => extract_path(args, text),
        JsonOp::Elements { text } => elements(&args[0], text),
        JsonOp::Entries { text } => entries(&args[0], text, data_type),
    }
}

/// Text made per row; `None` for NULL.
fn texts(rows: usize, mut make: impl FnMut(usize) -> Result<Option<String>>) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(rows, rows * 16);
    for row in 0..rows {
        out.append_option(make(row)?);
        if row % 1024 == 1023 {
            crate::control::check_current()?;
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Text made per document of `args[0]`, parsed; NULL for a NULL document.
fn per_document(
    args: &[ArrayRef],
    mut make: impl FnMut(Value) -> Result<Option<String>>,
) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    texts(documents.len(), |row| match documents.is_valid(row) {
        true => make(parse(documents.value(row))?),
        false => Ok(None),
    })
}

/// Per row, the value the document leads to along the optional path of `args[1]`, handed
/// to `make`; NULL where the document or path is NULL or the path leads nowhere.
fn with_path(
    args: &[ArrayRef],
    mut make: impl FnMut(&Value) -> Result<Option<String>>,
) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    let paths = args.get(1).map(|p| p.as_string::<i32>());
    texts(documents.len(), |row| {
        if documents.is_null(row) || paths.is_some_and(|p| p.is_null(row)) {
            return Ok(None);
        }
        let document = parse(documents.value(row))?;
        let steps = match paths {
            Some(paths) => parse_path(paths.value(row))?,
            None => Vec::new(),
        };
        match follow(&document, &steps) {
            Some(value) => make(value),
            None => Ok(None),
        }
    })
}

/// Per row, a truth about two texts (a document and a path or another document).
fn booleans(
    args: &[ArrayRef],
    mut test: impl FnMut(Value, &str) -> Result<bool>,
) -> Result<ArrayRef> {
    let (documents, others) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut out = Vec::with_capacity(documents.len());
    for row in 0..documents.len() {
        out.push(match documents.is_valid(row) && others.is_valid(row) {
            true => Some(test(parse(documents.value(row))?, others.value(row))?),
            false => None,
        });
    }
    Ok(Arc::new(BooleanArray::from(out)))
}

/// The JSON text of row `row` of a JSON-valued argument: `null` for NULL.
fn json_at(array: &ArrayRef, row: usize) -> &str {
    let texts = array.as_string::<i32>();
    match texts.is_valid(row) {
        true => texts.value(row),
        false => "null",
    }
}

/// `json_object(k, v, ...)`: keys (text, never NULL) and JSON values alternating.
fn object(args: &[ArrayRef], row: usize, style: JsonStyle) -> Result<String> {
    let mut members = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        let keys = pair[0].as_string::<i32>();
        if keys.is_null(row) {
            return Err(ExecError::Execution("JSON key cannot be NULL".into()));
        }
        members.push((keys.value(row), json_at(&pair[1], row)));
    }
    let mut out = String::new();
    write_object(&mut out, members.into_iter(), style);
    Ok(out)
}

/// A list of JSON texts per row as one array; NULL for a NULL list.
fn array_of_list(lists: &ArrayRef, style: JsonStyle) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    texts(lists.len(), |row| {
        if lists.is_null(row) {
            return Ok(None);
        }
        let items = lists.value(row);
        let items: Vec<&str> = (0..items.len()).map(|i| json_at(&items, i)).collect();
        let mut out = String::new();
        write_array(&mut out, items.into_iter(), style);
        Ok(Some(out))
    })
}

/// A list of `{key, value}` per row as one object; a NULL key is an error, as in PostgreSQL.
fn object_of_entries(lists: &ArrayRef, style: JsonStyle) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    texts(lists.len(), |row| {
        if lists.is_null(row) {
            return Ok(None);
        }
        let entries = lists.value(row);
        let entries = entries.as_struct();
        let (keys, values) = (entries.column(0).as_string::<i32>(), entries.column(1));
        let mut members = Vec::with_capacity(entries.len());
        for entry in 0..entries.len() {
            if keys.is_null(entry) {
                return Err(ExecError::Execution("field name must not be null".into()));
            }
            members.push((keys.value(entry), json_at(values, entry)));
        }
        let mut out = String::new();
        write_object(&mut out, members.into_iter(), style);
        Ok(Some(out))
    })
}

/// PostgreSQL's `json_object(text[])` (keys and values alternating) and
/// `json_object(keys, values)`: values are text, NULL ones `null`.
fn object_of_texts(args: &[ArrayRef], row: usize) -> Result<Option<String>> {
    let list = |a: &ArrayRef| -> Option<ArrayRef> {
        let lists = a.as_list::<i32>();
        lists.is_valid(row).then(|| lists.value(row))
    };
    let (keys, values): (Vec<Option<String>>, Vec<Option<String>>) = match args {
        [pairs] => {
            let Some(pairs) = list(pairs) else {
                return Ok(None);
            };
            let pairs = pairs.as_string::<i32>();
            if pairs.len() % 2 != 0 {
                return Err(ExecError::Execution(
                    "array must have even number of elements".into(),
                ));
            }
            let items: Vec<Option<String>> = pairs.iter().map(|p| p.map(str::to_string)).collect();
            let keys = items.iter().step_by(2).cloned().collect();
            let values = items.iter().skip(1).step_by(2).cloned().collect();
            (keys, values)
        }
        [keys, values] => {
            let (Some(keys), Some(values)) = (list(keys), list(values)) else {
                return Ok(None);
            };
            let strings = |a: ArrayRef| -> Vec<Option<String>> {
                a.as_string::<i32>()
                    .iter()
                    .map(|p| p.map(str::to_string))
                    .collect()
            };
            let (keys, values) = (strings(keys), strings(values));
            if keys.len() != values.len() {
                return Err(ExecError::Execution("mismatched array dimensions".into()));
            }
            (keys, values)
        }
        _ => unreachable!("one or two lists"),
    };
    let mut members = Vec::with_capacity(keys.len());
    for (key, value) in keys.into_iter().zip(values) {
        let key = key
            .ok_or_else(|| ExecError::Execution("null value not allowed for object key".into()))?;
        let value = match value {
            Some(value) => {
                let mut text = String::new();
                write_string(&mut text, &value);
                text
            }
            None => "null".to_string(),
        };
        members.push((key, value));
    }
    let mut out = String::new();
    write_object(
        &mut out,
        members.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        JsonStyle::PgJson,
    );
    Ok(Some(out))
}

fn array_length(args: &[ArrayRef], strict: bool) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    let paths = args.get(1).map(|p| p.as_string::<i32>());
    let mut out = Vec::with_capacity(documents.len());
    for row in 0..documents.len() {
        if documents.is_null(row) || paths.is_some_and(|p| p.is_null(row)) {
            out.push(None);
            continue;
        }
        let document = parse(documents.value(row))?;
        let steps = match paths {
            Some(paths) => parse_path(paths.value(row))?,
            None => Vec::new(),
        };
        out.push(match follow(&document, &steps) {
            None => None,
            Some(Value::Array(items)) => Some(items.len() as i64),
            Some(other) if strict => {
                let what = match other {
                    Value::Object(_) => "a non-array",
                    _ => "a scalar",
                };
                return Err(ExecError::Execution(format!(
                    "cannot get array length of {what}"
                )));
            }
            Some(_) => Some(0),
        });
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// A value's type as PostgreSQL's `json_typeof` or DuckDB's `json_type` names it.
fn type_name(value: &Value, duckdb: bool) -> String {
    let name = match (value, duckdb) {
        (Value::Object(_), false) => "object",
        (Value::Array(_), false) => "array",
        (Value::String(_), false) => "string",
        (Value::Number(_), false) => "number",
        (Value::Bool(_), false) => "boolean",
        (Value::Null, false) => "null",
        (Value::Object(_), true) => "OBJECT",
        (Value::Array(_), true) => "ARRAY",
        (Value::String(_), true) => "VARCHAR",
        // DuckDB reads a whole number that is not negative as unsigned.
        (Value::Number(n), true) if n.is_u64() => "UBIGINT",
        (Value::Number(n), true) if n.is_i64() => "BIGINT",
        (Value::Number(_), true) => "DOUBLE",
        (Value::Bool(_), true) => "BOOLEAN",
        (Value::Null, true) => "NULL",
    };
    name.to_string()
}

/// An object's keys, as a list per row; NULL for what is not an object.
fn keys(args: &[ArrayRef]) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    let paths = args.get(1).map(|p| p.as_string::<i32>());
    let mut out = ListBuilder::new(StringBuilder::new());
    for row in 0..documents.len() {
        if documents.is_null(row) || paths.is_some_and(|p| p.is_null(row)) {
            out.append_null();
            continue;
        }
        let document = parse(documents.value(row))?;
        let steps = match paths {
            Some(paths) => parse_path(paths.value(row))?,
            None => Vec::new(),
        };
        match follow(&document, &steps) {
            Some(Value::Object(members)) => {
                for key in members.keys() {
                    out.values().append_value(key);
                }
                out.append(true);
            }
            _ => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Whether `needle` is in `haystack` as PostgreSQL's `@>` has it: an object holds an
/// object whose members it holds; an array an array whose elements each are in one of its
/// elements (or a scalar it has); a scalar an equal one.
fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (Value::Array(h), Value::Array(n)) => n.iter().all(|v| h.iter().any(|hv| contains(hv, v))),
        (Value::Array(h), scalar) if !scalar.is_object() => h.iter().any(|hv| hv == scalar),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// `json_merge_patch(a, b, ...)`: each document patched by the next (RFC 7396); NULL when
/// any is NULL.
fn merge_patch(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let documents: Vec<_> = args.iter().map(|a| a.as_string::<i32>()).collect();
    texts(rows, |row| {
        if documents.iter().any(|d| d.is_null(row)) {
            return Ok(None);
        }
        let mut merged = parse(documents[0].value(row))?;
        for patch in &documents[1..] {
            apply_patch(&mut merged, parse(patch.value(row))?);
        }
        Ok(Some(rendered(&merged, JsonStyle::Compact)))
    })
}

fn apply_patch(target: &mut Value, patch: Value) {
    let Value::Object(patch) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(members) = target else {
        unreachable!("made an object")
    };
    for (key, value) in patch {
        match value {
            Value::Null => {
                members.remove(&key);
            }
            value => apply_patch(members.entry(key).or_insert(Value::Null), value),
        }
    }
}

fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, v| !v.is_null());
            members.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// A document indented by four spaces, as `jsonb_pretty` and DuckDB's `json_pretty` write it.
fn pretty(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).expect("a value serializes");
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// `jsonb_set(target, path, value, create_missing)`: the value put at the path (its last key
/// added to an object when missing and `create_missing`; an array place past either end adds
/// the value at that end); the target as it was where the path leads nowhere.
fn set(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let targets = args[0].as_string::<i32>();
    let paths = args[1].as_list::<i32>();
    let values = args[2].as_string::<i32>();
    let create = args[3].as_boolean();
    texts(rows, |row| {
        if targets.is_null(row) || paths.is_null(row) || values.is_null(row) {
            return Ok(None);
        }
        let mut target = parse(targets.value(row))?;
        let path = paths.value(row);
        let keys: Vec<&str> = path
            .as_string::<i32>()
            .iter()
            .map(|k| k.unwrap_or(""))
            .collect();
        let value = parse(values.value(row))?;
        let create = create.is_valid(row) && create.value(row);
        put(&mut target, &keys, value, create);
        Ok(Some(rendered(&target, JsonStyle::Jsonb)))
    })
}

fn put(target: &mut Value, keys: &[&str], value: Value, create: bool) {
    let Some((key, rest)) = keys.split_first() else {
        *target = value;
        return;
    };
    match target {
        Value::Object(members) => match members.get_mut(*key) {
            Some(inner) => put(inner, rest, value, create),
            None if rest.is_empty() && create => {
                members.insert(key.to_string(), value);
            }
            None => {}
        },
        Value::Array(items) => {
            let Ok(index) = key.parse::<i64>() else {
                return;
            };
            let len = items.len() as i64;
            let place = if index < 0 { len + index } else { index };
            match usize::try_from(place).ok().filter(|p| (*p as i64) < len) {
                Some(place) => put(&mut items[place], rest, value, create),
                None if rest.is_empty() && create => match place < 0 {
                    true => items.insert(0, value),
                    false => items.push(value),
                },
                None => {}
            }
        }
        _ => {}
    }
}

/// `json_extract_path(j, keys)`: each key of the list in turn, a number standing for an
/// array's place.
fn extract_path(args: &[ArrayRef], text: bool) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    let paths = args[1].as_list::<i32>();
    texts(documents.len(), |row| {
        if documents.is_null(row) || paths.is_null(row) {
            return Ok(None);
        }
        let path = paths.value(row);
        let path = path.as_string::<i32>();
        if path.null_count() > 0 {
            return Ok(None);
        }
        let steps: Vec<Step> = path
            .iter()
            .flatten()
            .map(|key| match key.parse::<i64>() {
                Ok(index) => Step::KeyOrIndex(key.to_string(), index),
                Err(_) => Step::Key(key.to_string()),
            })
            .collect();
        let document = parse(documents.value(row))?;
        Ok(follow(&document, &steps).and_then(|value| as_text(value, text)))
    })
}

/// A value as JSON, or with `text` as text: a string's contents, NULL for JSON's null.
fn as_text(value: &Value, text: bool) -> Option<String> {
    match (value, text) {
        (Value::Null, true) => None,
        (Value::String(s), true) => Some(s.clone()),
        (value, _) => Some(value.to_string()),
    }
}

/// An array's elements as a list per row (empty for what is not an array, as for an empty one).
fn elements(documents: &ArrayRef, text: bool) -> Result<ArrayRef> {
    let documents = documents.as_string::<i32>();
    let mut out = ListBuilder::new(StringBuilder::new());
    for row in 0..documents.len() {
        if documents.is_null(row) {
            out.append_null();
            continue;
        }
        match parse(documents.value(row))? {
            Value::Array(items) => {
                for item in &items {
                    out.values().append_option(as_text(item, text));
                }
                out.append(true);
            }
            _ => {
                return Err(ExecError::Execution(
                    "cannot extract elements from a scalar or an object".into(),
                ));
            }
        }
    }
    Ok(Arc::new(out.finish()))
}

/// An object's members as a list of `{key, value}` per row.
fn entries(documents: &ArrayRef, text: bool, data_type: &DataType) -> Result<ArrayRef> {
    let DataType::List(item) = data_type else {
        unreachable!("json_each gives a list")
    };
    let DataType::Struct(fields) = item.data_type() else {
        unreachable!("of structs")
    };
    let documents = documents.as_string::<i32>();
    let entry = StructBuilder::from_fields(Fields::clone(fields), 0);
    let mut out = ListBuilder::new(entry).with_field(item.clone());
    for row in 0..documents.len() {
        if documents.is_null(row) {
            out.append_null();
            continue;
        }
        let Value::Object(members) = parse(documents.value(row))? else {
            return Err(ExecError::Execution(
                "cannot deconstruct an array or a scalar as an object".into(),
            ));
        };
        let entries = out.values();
        for (key, value) in &members {
            entries
                .field_builder::<StringBuilder>(0)
                .expect("a key")
                .append_value(key);
            entries
                .field_builder::<StringBuilder>(1)
                .expect("a value")
                .append_option(as_text(value, text));
            entries.append(true);
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::StringArray;

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    fn text_of(array: &ArrayRef) -> Vec<Option<String>> {
        array
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn objects_are_written_in_each_style() {
        let keys = strings(&[Some("a")]);
        let values = strings(&[Some("[1,2]")]);
        let args = [keys, values];
        let written = |style| {
            let made = json_function(JsonOp::Object(style), &args, &DataType::Utf8, 1).unwrap();
            text_of(&made)[0].clone().unwrap()
        };
        assert_eq!(written(JsonStyle::Compact), r#"{"a":[1,2]}"#);
        assert_eq!(written(JsonStyle::PgJson), r#"{"a" : [1,2]}"#);
        assert_eq!(written(JsonStyle::PgJsonAgg), r#"{ "a" : [1,2] }"#);
    }

    #[test]
    fn patches_strip_and_set() {
        let a = strings(&[Some(r#"{"a":1,"b":{"c":2,"d":null}}"#)]);
        let b = strings(&[Some(r#"{"a":null,"b":{"c":3},"e":[1]}"#)]);
        let merged =
            json_function(JsonOp::MergePatch, &[a.clone(), b], &DataType::Utf8, 1).unwrap();
        assert_eq!(
            text_of(&merged)[0].as_deref(),
            Some(r#"{"b":{"c":3,"d":null},"e":[1]}"#)
        );
        let stripped = json_function(
            JsonOp::StripNulls(JsonStyle::Compact),
            &[a],
            &DataType::Utf8,
            1,
        )
        .unwrap();
        assert_eq!(
            text_of(&stripped)[0].as_deref(),
            Some(r#"{"a":1,"b":{"c":2}}"#)
        );
        let mut target = serde_json::json!({"a": [1, 2]});
        put(&mut target, &["a", "5"], serde_json::json!(9), true);
        put(&mut target, &["b"], serde_json::json!(true), true);
        put(&mut target, &["c", "d"], serde_json::json!(0), true);
        assert_eq!(target.to_string(), r#"{"a":[1,2,9],"b":true}"#);
    }

    #[test]
    fn containment_follows_postgres() {
        let doc = serde_json::json!({"a": [1, 2, {"b": 3}], "c": "x"});
        assert!(contains(&doc, &serde_json::json!({"a": [2]})));
        assert!(contains(&doc, &serde_json::json!({"a": [{"b": 3}]})));
        assert!(!contains(&doc, &serde_json::json!({"c": "y"})));
        assert!(contains(&serde_json::json!([1, 2]), &serde_json::json!(1)));
    }
}
