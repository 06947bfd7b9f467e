//! A produced batch's records as the rows they write to a table (ADR 0077): a raw table's key,
//! value and timestamp; a table's columns from each value's JSON object; a keyed table's
//! upserts and tombstones, or Debezium's change events, folded to the last record per key.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringBuilder, TimestampMillisecondBuilder};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use kafka_protocol::records::Record;
use pondra_cluster::{KafkaFormat, ParsedStatement, TableDef};
use serde_json::{Map, Value};

use pondra_cluster::quoted_name;

use super::super::literal::quote_literal;
use super::topics::is_raw;

/// What one batch of records writes to its table.
pub(super) struct Writes {
    /// Rows appended, or upserted into a keyed table.
    pub rows: Vec<RecordBatch>,
    /// A keyed table's rows deleted by the batch's tombstones and delete events.
    pub delete: Option<ParsedStatement>,
}

/// A record the table cannot take: the batch is refused whole.
#[derive(Debug)]
pub(super) struct BadRecord {
    /// The record's position in its batch.
    pub index: usize,
    pub message: String,
}

impl BadRecord {
    fn at(index: usize, message: impl Into<String>) -> BadRecord {
        BadRecord {
            index,
            message: message.into(),
        }
    }
}

/// What `records` write to `table`.
pub(super) fn writes(table: &TableDef, records: &[Record]) -> Result<Writes, BadRecord> {
    if is_raw(table) {
        return Ok(Writes {
            rows: vec![raw_rows(records)?],
            delete: None,
        });
    }
    if table.key.is_empty() {
        return Ok(Writes {
            rows: plain_rows(table, records)?,
            delete: None,
        });
    }
    keyed_writes(table, records)
}

/// A plain table's rows: the records' JSON values decoded straight into the table's columns,
/// one object a record. When they do not decode as one, each is tried alone to name the
/// first that fails.
fn plain_rows(table: &TableDef, records: &[Record]) -> Result<Vec<RecordBatch>, BadRecord> {
    let mut text = Vec::with_capacity(
        records
            .iter()
            .map(|r| r.value.as_ref().map_or(0, |v| v.len() + 1))
            .sum(),
    );
    for (index, record) in records.iter().enumerate() {
        let Some(value) = &record.value else {
            return Err(BadRecord::at(
                index,
                format!(
                    "a null value deletes only from a keyed table, and {} has no key",
                    table.name
                ),
            ));
        };
        text.extend_from_slice(value);
        text.push(b'\n');
    }
    let decode = || -> Result<Vec<RecordBatch>, String> {
        let mut decoder = json_decoder(table, records.len())?;
        let mut rest = &text[..];
        while !rest.is_empty() {
            let read = decoder.decode(rest).map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("the values do not decode".into());
            }
            rest = &rest[read..];
        }
        let batch = decoder.flush().map_err(|e| e.to_string())?;
        Ok(batch.into_iter().collect())
    };
    match decode() {
        Ok(rows) if rows.iter().map(RecordBatch::num_rows).sum::<usize>() == records.len() => {
            Ok(rows)
        }
        // Not one row a record (a value that is not one object, or does not convert): each
        // alone, through the checks that name what is wrong.
        _ => {
            let values = records
                .iter()
                .enumerate()
                .map(|(index, record)| {
                    json_object(index, record.value.as_deref().unwrap_or_default())
                })
                .collect::<Result<Vec<_>, _>>()?;
            decoded(table, &values)
        }
    }
}

/// A raw table's rows: each record's key and value as text, and its timestamp.
fn raw_rows(records: &[Record]) -> Result<RecordBatch, BadRecord> {
    let mut keys = StringBuilder::new();
    let mut values = StringBuilder::new();
    let mut timestamps = TimestampMillisecondBuilder::new();
    for (index, record) in records.iter().enumerate() {
        for (builder, bytes, what) in [
            (&mut keys, &record.key, "key"),
            (&mut values, &record.value, "value"),
        ] {
            match bytes {
                Some(bytes) => {
                    builder.append_value(std::str::from_utf8(bytes).map_err(|_| {
                        BadRecord::at(index, format!("the {what} is not UTF-8 text"))
                    })?)
                }
                None => builder.append_null(),
            }
        }
        timestamps.append_value(record.timestamp);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Utf8, true),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(keys.finish()),
        Arc::new(values.finish()),
        Arc::new(timestamps.finish()),
    ];
    RecordBatch::try_new(schema, columns).map_err(|e| BadRecord::at(0, e.to_string()))
}

/// What a record does to a keyed table's row of its key.
enum KeyedWrite {
    Upsert(Map<String, Value>),
    /// The key's values, in the order of the table's key columns.
    Delete(Vec<Value>),
}

/// A keyed table's writes: each record an upsert or a delete, folded to the last per key.
fn keyed_writes(table: &TableDef, records: &[Record]) -> Result<Writes, BadRecord> {
    let mut last_per_key: HashMap<String, (usize, KeyedWrite)> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        // A tombstone deletes the record key's row, in either format.
        let write = match (&record.value, table.kafka_format) {
            (None, _) => KeyedWrite::Delete(record_key(table, index, record)?),
            (Some(value), KafkaFormat::Json) => {
                json_write(table, index, record, json_map(index, value)?)?
            }
            (Some(value), KafkaFormat::Debezium) => {
                debezium_write(table, index, record, json_map(index, value)?)?
            }
        };
        let key = key_text(&match &write {
            KeyedWrite::Upsert(row) => key_of(table, index, row)?,
            KeyedWrite::Delete(key) => key.clone(),
        });
        last_per_key.insert(key, (index, write));
    }
    let mut writes: Vec<(usize, KeyedWrite)> = last_per_key.into_values().collect();
    writes.sort_by_key(|(index, _)| *index);
    let (mut upserts, mut deletes) = (Vec::new(), Vec::new());
    for (_, write) in writes {
        match write {
            KeyedWrite::Upsert(row) => upserts.push(Value::Object(row)),
            KeyedWrite::Delete(key) => deletes.push(key),
        }
    }
    Ok(Writes {
        rows: decoded(table, &upserts)?,
        delete: match deletes.is_empty() {
            true => None,
            false => Some(delete_statement(table, &deletes)?),
        },
    })
}

/// A keyed table's row from a record's JSON value, upserted: key columns it lacks are taken
/// from the record key.
fn json_write(
    table: &TableDef,
    index: usize,
    record: &Record,
    mut row: Map<String, Value>,
) -> Result<KeyedWrite, BadRecord> {
    if table.key.iter().any(|column| !row.contains_key(column)) {
        let key = record_key(table, index, record)?;
        for (column, value) in table.key.iter().zip(key) {
            row.entry(column.clone()).or_insert(value);
        }
    }
    Ok(KeyedWrite::Upsert(row))
}

/// A Debezium change event (with or without the schema envelope): `c`, `r` and `u` upsert
/// `after`, `d` deletes `before`'s key (or the record key's, when `before` lacks it).
fn debezium_write(
    table: &TableDef,
    index: usize,
    record: &Record,
    event: Map<String, Value>,
) -> Result<KeyedWrite, BadRecord> {
    let event = without_envelope(event);
    let image = |name: &str| match event.get(name) {
        Some(Value::Object(row)) => Ok(row.clone()),
        _ => Err(BadRecord::at(
            index,
            format!(
                "a Debezium event whose op is {:?} needs an object `{name}`",
                event.get("op")
            ),
        )),
    };
    match event.get("op").and_then(Value::as_str) {
        Some("c" | "r" | "u") => Ok(KeyedWrite::Upsert(image("after")?)),
        Some("d") => {
            let before = image("before")?;
            let key = match key_of(table, index, &before) {
                Ok(key) => key,
                Err(_) => record_key(table, index, record)?,
            };
            Ok(KeyedWrite::Delete(key))
        }
        Some(op) => Err(BadRecord::at(
            index,
            format!("the Debezium op {op:?} is not taken: c, r, u and d are"),
        )),
        None => Err(BadRecord::at(
            index,
            "not a Debezium change event: it has no `op`",
        )),
    }
}

/// A JSON object without Kafka Connect's schema envelope (`{"schema": ..., "payload": ...}`).
fn without_envelope(object: Map<String, Value>) -> Map<String, Value> {
    if object.len() == 2
        && object.contains_key("schema")
        && let Some(Value::Object(payload)) = object.get("payload")
    {
        return payload.clone();
    }
    object
}

/// A record's value as a JSON object's fields.
fn json_map(index: usize, value: &[u8]) -> Result<Map<String, Value>, BadRecord> {
    match json_object(index, value)? {
        Value::Object(fields) => Ok(fields),
        _ => unreachable!("json_object gives objects"),
    }
}

/// A record's value as a JSON object.
fn json_object(index: usize, value: &[u8]) -> Result<Value, BadRecord> {
    match serde_json::from_slice::<Value>(value) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(_) => Err(BadRecord::at(
            index,
            "the value is JSON but not an object of columns",
        )),
        Err(e) => Err(BadRecord::at(index, format!("the value is not JSON: {e}"))),
    }
}

/// The key columns' values in `row`.
fn key_of(
    table: &TableDef,
    index: usize,
    row: &Map<String, Value>,
) -> Result<Vec<Value>, BadRecord> {
    table
        .key
        .iter()
        .map(|column| match row.get(column) {
            Some(Value::Null) | None => Err(BadRecord::at(
                index,
                format!("the row has no value for the key column {column}"),
            )),
            Some(value) => Ok(value.clone()),
        })
        .collect()
}

/// The key columns' values from a record's key: a JSON object by column names (with or
/// without the schema envelope), or for a one-column key a JSON scalar or plain text.
fn record_key(table: &TableDef, index: usize, record: &Record) -> Result<Vec<Value>, BadRecord> {
    let Some(bytes) = &record.key else {
        return Err(BadRecord::at(
            index,
            "a record without its key columns needs a key",
        ));
    };
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => key_of(table, index, &without_envelope(object)),
        Ok(scalar) if table.key.len() == 1 && !scalar.is_null() => Ok(vec![scalar]),
        _ if table.key.len() == 1 => match std::str::from_utf8(bytes) {
            Ok(text) => Ok(vec![Value::String(text.to_string())]),
            Err(_) => Err(BadRecord::at(index, "the key is not UTF-8 text")),
        },
        _ => Err(BadRecord::at(
            index,
            format!(
                "the key is not a JSON object of the key columns {}",
                table.key.join(", ")
            ),
        )),
    }
}

/// A key's values as one text, to tell keys apart (a number and its text are one key).
fn key_text(key: &[Value]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    parts.join("\u{0}")
}

/// JSON objects as rows of `table`: fields by column name, coerced to the columns' types.
fn decoded(table: &TableDef, values: &[Value]) -> Result<Vec<RecordBatch>, BadRecord> {
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let decode = |values: &[Value]| -> Result<Option<RecordBatch>, String> {
        let mut decoder = json_decoder(table, values.len())?;
        decoder.serialize(values).map_err(|e| e.to_string())?;
        decoder.flush().map_err(|e| e.to_string())
    };
    match decode(values) {
        Ok(batch) => Ok(batch.into_iter().collect()),
        // Which record: each alone, to name the first that fails.
        Err(whole) => {
            for (index, value) in values.iter().enumerate() {
                if let Err(message) = decode(std::slice::from_ref(value)) {
                    return Err(BadRecord::at(index, message));
                }
            }
            Err(BadRecord::at(0, whole))
        }
    }
}

/// A decoder of JSON objects into `rows` rows of `table`: fields by column name, none the
/// table lacks, numbers and booleans taken into text columns as their text.
fn json_decoder(table: &TableDef, rows: usize) -> Result<arrow::json::reader::Decoder, String> {
    arrow::json::ReaderBuilder::new(table.arrow_schema())
        .with_strict_mode(true)
        .with_coerce_primitive(true)
        .with_batch_size(rows.max(1))
        .build_decoder()
        .map_err(|e| e.to_string())
}

/// `DELETE FROM table WHERE (key columns) IN (VALUES ...)` for the keys given.
fn delete_statement(table: &TableDef, keys: &[Vec<Value>]) -> Result<ParsedStatement, BadRecord> {
    let types: Vec<String> = table
        .key
        .iter()
        .map(|name| {
            let column = table.columns.iter().find(|c| &c.name == name);
            column.map_or("VARCHAR".into(), |c| c.sql_type.to_string())
        })
        .collect();
    let rows: Vec<String> = keys
        .iter()
        .map(|key| {
            let literals: Vec<String> = key
                .iter()
                .zip(&types)
                .map(|(value, sql_type)| format!("CAST({} AS {sql_type})", literal(value)))
                .collect();
            format!("({})", literals.join(", "))
        })
        .collect();
    let columns: Vec<String> = table.key.iter().map(|c| quoted_name(c)).collect();
    let sql = format!(
        "DELETE FROM {} WHERE ({}) IN (VALUES {})",
        quoted_name(&table.name),
        columns.join(", "),
        rows.join(", ")
    );
    let mut statements = pondra_cluster::parse_sql(&sql)
        .map_err(|e| BadRecord::at(0, format!("cannot delete the keys: {e}")))?;
    assert_eq!(statements.len(), 1, "one DELETE statement");
    Ok(statements.remove(0))
}

/// A JSON scalar as a SQL literal.
fn literal(value: &Value) -> String {
    match value {
        Value::String(text) => quote_literal(text),
        Value::Null => "NULL".into(),
        other => quote_literal(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_numbers_and_their_text_are_one_key() {
        assert_eq!(key_text(&[Value::from(7)]), key_text(&[Value::from("7")]));
        assert_ne!(
            key_text(&[Value::from("a"), Value::from("b")]),
            key_text(&[Value::from("ab")])
        );
    }

    #[test]
    fn the_schema_envelope_is_taken_off() {
        let event = serde_json::json!({"schema": {}, "payload": {"op": "c"}});
        let Value::Object(event) = event else {
            unreachable!()
        };
        assert_eq!(without_envelope(event).get("op"), Some(&Value::from("c")));
    }

    #[test]
    fn literals_are_quoted() {
        assert_eq!(literal(&Value::from("it's")), "'it''s'");
        assert_eq!(literal(&Value::from(3)), "'3'");
    }
}
