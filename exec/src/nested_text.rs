//! Text read as lists, structs and maps, in DuckDB's forms (`[1, [2]]`, `{a: 1, b: x}`,
//! `(1, x)`, `{a=1}`) and, for lists, Postgres's (`{1,2}`). Items end at a comma outside quotes and brackets; a
//! struct's key ends at its colon. Inside single or double quotes a backslash escapes the
//! next character; outside them it escapes only a quote. An unquoted NULL is NULL, and the
//! whitespace around an item is not part of it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanBufferBuilder, ListArray, StringArray, StructArray};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Fields};

use crate::{ExecError, Result};

/// Texts read as lists of `to`'s element type; with `safe`, a text that cannot be read is
/// NULL and so is an element that cannot be cast.
pub fn parse_list(texts: &StringArray, to: &DataType, safe: bool) -> Result<ArrayRef> {
    let DataType::List(field) = to else {
        unreachable!("parse_list reads lists, not {to}")
    };
    let mut items: Vec<Option<String>> = Vec::new();
    let mut offsets = vec![0i32];
    let mut valid = BooleanBufferBuilder::new(texts.len());
    for text in texts.iter() {
        let read = text.map(|text| match text.trim_start().starts_with('{') {
            true => crate::arrays::parse_one(text),
            false => list_items(text).ok_or_else(|| malformed(text, to)),
        });
        match read.transpose() {
            Ok(Some(row)) => {
                items.extend(row);
                valid.append(true);
            }
            Ok(None) => valid.append(false),
            Err(_) if safe => valid.append(false),
            Err(e) => return Err(e),
        }
        offsets.push(i32::try_from(items.len()).map_err(|_| too_many())?);
    }
    let items: ArrayRef = Arc::new(StringArray::from(items));
    let values = match field.data_type() {
        // `[]` is a list of NULLs; any elements it had would be NULL.
        DataType::Null => arrow::array::new_null_array(&DataType::Null, items.len()),
        item => crate::expr::cast_value(&items, item, safe)?,
    };
    Ok(Arc::new(ListArray::try_new(
        field.clone(),
        OffsetBuffer::new(offsets.into()),
        values,
        Some(NullBuffer::new(valid.finish())),
    )?))
}

/// Texts read as structs of `fields`, by name (`{a: 1}`) or by position (`(1, x)`); fields
/// the text leaves out are NULL.
pub fn parse_struct(
    texts: &StringArray,
    fields: &Fields,
    to: &DataType,
    safe: bool,
) -> Result<ArrayRef> {
    let mut columns: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(texts.len()); fields.len()];
    let mut valid = BooleanBufferBuilder::new(texts.len());
    for text in texts.iter() {
        let read = match text {
            Some(text) => struct_values(text, fields)
                .map(Some)
                .ok_or_else(|| malformed(text, to)),
            None => Ok(None),
        };
        let values = match read {
            Ok(values) => values,
            Err(_) if safe => None,
            Err(e) => return Err(e),
        };
        valid.append(values.is_some());
        let values = values.unwrap_or_else(|| vec![None; fields.len()]);
        for (column, value) in columns.iter_mut().zip(values) {
            column.push(value);
        }
    }
    let nulls = Some(NullBuffer::new(valid.finish()));
    if fields.is_empty() {
        return Ok(Arc::new(StructArray::new_empty_fields(texts.len(), nulls)));
    }
    let columns = columns
        .into_iter()
        .zip(fields.iter())
        .map(|(values, field)| {
            let values: ArrayRef = Arc::new(StringArray::from(values));
            crate::expr::cast_value(&values, field.data_type(), safe)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        columns,
        nulls,
    )?))
}

/// Texts in DuckDB's map form, `{a=1, b=2}`, read as maps of `to`.
pub fn parse_map(texts: &StringArray, to: &DataType, safe: bool) -> Result<ArrayRef> {
    let mut keys: Vec<Option<String>> = Vec::new();
    let mut values: Vec<Option<String>> = Vec::new();
    let mut lengths = Vec::with_capacity(texts.len());
    let mut valid = BooleanBufferBuilder::new(texts.len());
    for text in texts.iter() {
        let read = text.map(|t| map_entries(t).ok_or_else(|| malformed(t, to)));
        let entries = match read.transpose() {
            Ok(entries) => entries,
            Err(_) if safe => None,
            Err(e) => return Err(e),
        };
        valid.append(entries.is_some());
        let entries = entries.unwrap_or_default();
        lengths.push(entries.len());
        for (key, value) in entries {
            keys.push(key);
            values.push(value);
        }
    }
    let (key_type, value_type) = match to {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) => (fields[0].data_type(), fields[1].data_type()),
            other => unreachable!("a map's entries are structs, not {other}"),
        },
        other => unreachable!("parse_map reads maps, not {other}"),
    };
    let keys: ArrayRef = Arc::new(StringArray::from(keys));
    let values: ArrayRef = Arc::new(StringArray::from(values));
    crate::maps::build(
        to,
        OffsetBuffer::from_lengths(lengths),
        crate::expr::cast_value(&keys, key_type, safe)?,
        crate::expr::cast_value(&values, value_type, safe)?,
        Some(NullBuffer::new(valid.finish())),
    )
}

/// The entries of `{k=v, ...}`; `None` when the text is not one map.
fn map_entries(text: &str) -> Option<Vec<(Option<String>, Option<String>)>> {
    let mut rest = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut entries = Vec::new();
    while !rest.trim().is_empty() {
        let (key, stop, after) = take_until(rest, &['='])?;
        stop?;
        let (value, stop, after) = take_until(after, &[','])?;
        entries.push((item(key)?, item(value)?));
        rest = after;
        if stop.is_some() && rest.trim().is_empty() {
            return None;
        }
    }
    Some(entries)
}

fn malformed(text: &str, to: &DataType) -> ExecError {
    let type_name = pondra_catalog::SqlType::from_arrow(to)
        .map(|t| t.to_string())
        .unwrap_or_else(|| to.to_string());
    ExecError::Execution(format!(
        "conversion failed: the text '{text}' can't be cast to the destination type {type_name}"
    ))
}

fn too_many() -> ExecError {
    ExecError::Execution("a batch of lists holds more than 2^31 elements".into())
}

/// The elements of `[a, b, ...]`; `None` when the text is not one list.
fn list_items(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    let mut items = Vec::new();
    let mut rest = inner;
    loop {
        let (raw, stop, after) = take_until(rest, &[','])?;
        items.push(item(raw)?);
        match stop {
            Some(_) => rest = after,
            None => return Some(items),
        }
    }
}

/// One struct's field values in `fields`' order; `None` when the text is not one struct of
/// those fields.
fn struct_values(text: &str, fields: &Fields) -> Option<Vec<Option<String>>> {
    let text = text.trim();
    let mut values = vec![None; fields.len()];
    if let Some(inner) = text.strip_prefix('(') {
        let inner = inner.strip_suffix(')')?;
        // A one-field tuple is written `(1,)`.
        let inner = match fields.len() {
            1 => inner.trim_end().strip_suffix(',').unwrap_or(inner),
            _ => inner,
        };
        let items = list_items(&format!("[{inner}]"))?;
        return (items.len() == fields.len()).then_some(items);
    }
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut rest = inner;
    let mut seen = vec![false; fields.len()];
    while !rest.trim().is_empty() {
        let (key, stop, after) = take_until(rest, &[':'])?;
        stop?;
        let key = item(key)??;
        let slot = fields
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(&key))?;
        if std::mem::replace(&mut seen[slot], true) {
            return None;
        }
        let (raw, stop, after) = take_until(after, &[','])?;
        values[slot] = item(raw)?;
        rest = after;
        if stop.is_some() && rest.trim().is_empty() {
            return None;
        }
    }
    Some(values)
}

/// `text` up to the first of `stops` outside quotes and brackets: what comes before, the stop
/// found (`None` at the end), and what follows it. `None` when quotes or brackets do not
/// balance.
fn take_until<'a>(text: &'a str, stops: &[char]) -> Option<(&'a str, Option<char>, &'a str)> {
    let (mut depth, mut quote) = (0i32, None::<char>);
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next()?;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\\') => {
                // Outside quotes a backslash escapes a quote only.
                if matches!(text[i + 1..].chars().next(), Some('\'' | '"')) {
                    chars.next();
                }
            }
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '{' | '(') => depth += 1,
            (None, ']' | '}' | ')') => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            (None, c) if depth == 0 && stops.contains(&c) => {
                return Some((&text[..i], Some(c), &text[i + c.len_utf8()..]));
            }
            _ => {}
        }
    }
    (depth == 0 && quote.is_none()).then_some((text, None, ""))
}

/// An item's value: `None` for an unquoted NULL, else the text with its quotes and escapes
/// resolved. The outer `None` is for a quote left open.
fn item(raw: &str) -> Option<Option<String>> {
    let raw = raw.trim();
    if raw.eq_ignore_ascii_case("null") {
        return Some(None);
    }
    let mut out = String::with_capacity(raw.len());
    let mut quote = None::<char>;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => out.push(chars.next()?),
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => out.push(c),
            (None, '\\') if matches!(chars.peek(), Some('\'' | '"')) => {
                out.push(chars.next()?);
            }
            (None, '\'' | '"') => quote = Some(c),
            (None, c) => out.push(c),
        }
    }
    quote.is_none().then_some(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_resolve_quotes_and_escapes() {
        let items = |t: &str| list_items(t).expect("a list");
        let some = |s: &str| Some(s.to_string());
        assert_eq!(items("[1, 2 ,3]"), vec![some("1"), some("2"), some("3")]);
        assert_eq!(items("[NULL, , x]"), vec![None, some(""), some("x")]);
        assert_eq!(items(r#"["a\,b", c]"#), vec![some("a,b"), some("c")]);
        assert_eq!(items(r"[a\,b]"), vec![some(r"a\"), some("b")]);
        assert_eq!(items(r#"[nested"["bracket]"#), vec![some("nested[bracket")]);
        assert_eq!(items("[[1, 2], [3]]"), vec![some("[1, 2]"), some("[3]")]);
        assert_eq!(items("[]"), Vec::<Option<String>>::new());
        assert!(list_items("[nested[bracket, x]").is_none());
        assert!(list_items("1, 2").is_none());
    }
}
