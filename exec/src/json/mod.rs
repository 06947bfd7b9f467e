//! JSON held as text: `->` and `->>` (PostgreSQL), `json_extract` and `json_extract_string`
//! (DuckDB), `CAST(text AS JSON)`, which checks the text is JSON, and the JSON functions
//! (`functions`), which write documents as `render` does. A document that is not JSON is an
//! error, as in both anchors; a path that leads nowhere gives NULL.

mod functions;
mod render;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{DataType, Int64Type};
use serde_json::Value;

pub use functions::json_function;

use crate::{ExecError, Result};

/// One step of a path into a document: an object's key or an array's index, or (PostgreSQL's
/// path of texts) a key that is also a number, an index into an array.
enum Step {
    Key(String),
    Index(i64),
    KeyOrIndex(String, i64),
}

/// Where `steps` lead in `document`, if anywhere; an index from the end when negative.
fn follow<'a>(document: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps
        .iter()
        .try_fold(document, |value, step| match (step, value) {
            (Step::Key(key) | Step::KeyOrIndex(key, _), Value::Object(members)) => members.get(key),
            (Step::Index(i) | Step::KeyOrIndex(_, i), Value::Array(items)) => {
                let index = if *i < 0 { items.len() as i64 + i } else { *i };
                items.get(usize::try_from(index).ok()?)
            }
            _ => None,
        })
}

/// Per row, the value `args[1]` (a key, an index or a `$.a.b[0]` path) leads to in the
/// document `args[0]`: as JSON text, or with `text` a string's contents and other values'
/// JSON (NULL for JSON's null).
pub fn json_get(args: &[ArrayRef], text: bool) -> Result<ArrayRef> {
    let documents = args[0].as_string::<i32>();
    let paths: Vec<Option<Vec<Step>>> = match args[1].data_type() {
        DataType::Int64 => {
            let indexes = args[1].as_primitive::<Int64Type>();
            indexes
                .iter()
                .map(|i| i.map(|i| vec![Step::Index(i)]))
                .collect()
        }
        _ => {
            let names = args[1].as_string::<i32>();
            names
                .iter()
                .map(|p| p.map(parse_path).transpose())
                .collect::<Result<_>>()?
        }
    };
    let mut out = Vec::with_capacity(documents.len());
    for (row, path) in paths.iter().enumerate() {
        let (Some(path), true) = (path, documents.is_valid(row)) else {
            out.push(None);
            continue;
        };
        let document = parse(documents.value(row))?;
        let found = follow(&document, path);
        out.push(match (found, text) {
            (None, _) | (Some(Value::Null), true) => None,
            (Some(Value::String(s)), true) => Some(s.clone()),
            (Some(value), _) => Some(value.to_string()),
        });
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// `CAST(text AS JSON)`: the text, once it is known to be JSON.
pub fn json_check(value: &ArrayRef) -> Result<ArrayRef> {
    let texts = value.as_string::<i32>();
    for text in texts.iter().flatten() {
        parse(text)?;
    }
    Ok(value.clone())
}

fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| ExecError::Execution(format!("invalid input syntax for type json: {e}")))
}

/// A path as DuckDB writes it (`$.a.b[0]`, `$."a b"`, `$[1]`), or a plain key.
fn parse_path(path: &str) -> Result<Vec<Step>> {
    let Some(mut rest) = path.strip_prefix('$') else {
        return Ok(vec![Step::Key(path.to_string())]);
    };
    let bad = || ExecError::Execution(format!("JSON path {path} is not valid"));
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let (key, tail) = match after.strip_prefix('"') {
                Some(quoted) => {
                    let end = quoted.find('"').ok_or_else(bad)?;
                    (&quoted[..end], &quoted[end + 1..])
                }
                None => {
                    let end = after.find(['.', '[']).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            steps.push(Step::Key(key.to_string()));
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or_else(bad)?;
            let index = after[..end].trim();
            let index = match index.strip_prefix("#-") {
                Some(back) => -back.trim().parse::<i64>().map_err(|_| bad())?,
                None => index.parse::<i64>().map_err(|_| bad())?,
            };
            steps.push(Step::Index(index));
            rest = &after[end + 1..];
        } else {
            return Err(bad());
        }
    }
    Ok(steps)
}
