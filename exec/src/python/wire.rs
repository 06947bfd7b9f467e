//! The frames between the server and a Python worker (ADR 0081): a 4-byte little-endian
//! length and a JSON header, then an 8-byte little-endian length and that many bytes of
//! payload (JSON text, or nothing); or, in place of the length, [`ARROW_FOLLOWS`] and an Arrow
//! IPC stream, read to its end-of-stream marker. Arrow streams go straight through the pipe,
//! with no copy into a buffer of their own on either side.

use std::io::{self, Read, Write};

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;

use crate::{ExecError, Result};

/// The largest header a worker may send: headers hold messages and tracebacks, not data.
const MAX_HEADER: u32 = 16 << 20;

/// The largest byte payload a worker may send back: one batch's result as JSON.
const MAX_PAYLOAD: u64 = 4 << 30;

/// The payload length that says an Arrow IPC stream follows.
const ARROW_FOLLOWS: u64 = u64::MAX;

/// What follows a header.
pub(super) enum Payload {
    Bytes(Vec<u8>),
    Arrow(RecordBatch),
}

/// One frame: its header and payload.
pub(super) struct Frame {
    pub header: serde_json::Value,
    pub payload: Payload,
}

pub(super) fn write_frame(
    to: &mut impl Write,
    header: &serde_json::Value,
    payload: &Payload,
) -> io::Result<()> {
    let header = serde_json::to_vec(header)?;
    to.write_all(&(header.len() as u32).to_le_bytes())?;
    to.write_all(&header)?;
    match payload {
        Payload::Bytes(bytes) => {
            to.write_all(&(bytes.len() as u64).to_le_bytes())?;
            to.write_all(bytes)?;
        }
        Payload::Arrow(batch) => {
            to.write_all(&ARROW_FOLLOWS.to_le_bytes())?;
            let mut writer =
                StreamWriter::try_new(&mut *to, &batch.schema()).map_err(io::Error::other)?;
            writer.write(batch).map_err(io::Error::other)?;
            writer.finish().map_err(io::Error::other)?;
        }
    }
    to.flush()
}

pub(super) fn read_frame(from: &mut impl Read) -> io::Result<Frame> {
    let mut length = [0u8; 4];
    from.read_exact(&mut length)?;
    let length = u32::from_le_bytes(length);
    if length > MAX_HEADER {
        return Err(io::Error::other(format!("a header of {length} bytes")));
    }
    let mut header = vec![0u8; length as usize];
    from.read_exact(&mut header)?;
    let header = serde_json::from_slice(&header)?;
    let mut length = [0u8; 8];
    from.read_exact(&mut length)?;
    let payload = match u64::from_le_bytes(length) {
        ARROW_FOLLOWS => Payload::Arrow(read_stream(from)?),
        length if length > MAX_PAYLOAD => {
            return Err(io::Error::other(format!("a payload of {length} bytes")));
        }
        length => {
            let mut payload = vec![0u8; length as usize];
            from.read_exact(&mut payload)?;
            Payload::Bytes(payload)
        }
    };
    Ok(Frame { header, payload })
}

/// One Arrow IPC stream, read to its end, as one batch.
fn read_stream(from: &mut impl Read) -> io::Result<RecordBatch> {
    let reader = StreamReader::try_new(from, None).map_err(io::Error::other)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(io::Error::other)?;
    match batches.len() {
        1 => Ok(batches.into_iter().next().expect("one batch")),
        _ => arrow::compute::concat_batches(&schema, &batches).map_err(io::Error::other),
    }
}

/// The arguments of one call as JSON, for a worker without pyarrow: a list per parameter.
pub(super) fn arguments_as_json(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut rows = Vec::new();
    let mut writer = arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow::json::writer::JsonArray>(&mut rows);
    writer.write(batch)?;
    writer.finish()?;
    drop(writer);
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = match rows.is_empty() {
        true => Vec::new(),
        false => serde_json::from_slice(&rows).map_err(|e| ExecError::Execution(e.to_string()))?,
    };
    let columns: Vec<Vec<serde_json::Value>> = batch
        .schema()
        .fields()
        .iter()
        .map(|field| {
            rows.iter()
                .map(|row| row.get(field.name()).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    serde_json::to_vec(&columns).map_err(|e| ExecError::Execution(e.to_string()))
}

/// The result column of a reply in Arrow form.
pub(super) fn result_column(batch: &RecordBatch) -> Result<ArrayRef> {
    if batch.num_columns() != 1 {
        return Err(ExecError::Execution(
            "the worker sent a result of many columns".into(),
        ));
    }
    Ok(batch.column(0).clone())
}

/// The result of a reply in JSON form (a list of values), read as the type JSON gives them
/// (numbers, text, booleans, lists): the caller casts them to the function's type, as for a
/// pyarrow result.
pub(super) fn result_from_json(payload: &[u8]) -> Result<ArrayRef> {
    let values: Vec<serde_json::Value> = serde_json::from_slice(payload)
        .map_err(|e| ExecError::Execution(format!("the function's result is not a list: {e}")))?;
    let rows: Vec<serde_json::Value> = values
        .into_iter()
        .map(|value| serde_json::json!({ "result": value }))
        .collect();
    let schema = arrow::json::reader::infer_json_schema_from_iterator(rows.iter().map(Ok))?;
    let field = schema.field_with_name("result")?;
    if *field.data_type() == DataType::Null {
        return Ok(arrow::array::new_null_array(&DataType::Null, rows.len()));
    }
    let schema = std::sync::Arc::new(Schema::new(vec![Field::new(
        "result",
        field.data_type().clone(),
        true,
    )]));
    let mut decoder = arrow::json::ReaderBuilder::new(schema.clone())
        .with_batch_size(rows.len().max(1))
        .build_decoder()?;
    decoder.serialize(&rows)?;
    let batch = decoder
        .flush()?
        .unwrap_or_else(|| RecordBatch::new_empty(schema));
    Ok(batch.column(0).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Float64Array, Int64Array};
    use std::sync::Arc;

    #[test]
    fn a_frame_reads_back_as_written() {
        let mut bytes = Vec::new();
        let header = serde_json::json!({"op": "call", "id": 7});
        write_frame(&mut bytes, &header, &Payload::Bytes(b"payload".to_vec())).unwrap();
        let batch = RecordBatch::try_from_iter([(
            "x",
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
        )])
        .unwrap();
        write_frame(&mut bytes, &header, &Payload::Arrow(batch.clone())).unwrap();
        let mut from = bytes.as_slice();
        let frame = read_frame(&mut from).unwrap();
        assert_eq!(frame.header, header);
        assert!(matches!(frame.payload, Payload::Bytes(b) if b == b"payload"));
        let frame = read_frame(&mut from).unwrap();
        assert!(matches!(frame.payload, Payload::Arrow(b) if b == batch));
        assert!(
            from.is_empty(),
            "the stream is read to its end and no further"
        );
        let mut truncated = &bytes[..bytes.len() - 1];
        read_frame(&mut truncated).unwrap();
        assert!(
            read_frame(&mut truncated).is_err(),
            "a stream cut short is an error"
        );
    }

    #[test]
    fn json_arguments_are_a_list_per_parameter_and_results_take_the_return_type() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Float64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None])),
                Arc::new(Float64Array::from(vec![0.5, 2.0])),
            ],
        )
        .unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&arguments_as_json(&batch).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!([[1, null], [0.5, 2.0]]));
        let result = result_from_json(b"[1.5, null, 3]").unwrap();
        assert_eq!(result.data_type(), &DataType::Float64);
        assert_eq!(result.len(), 3);
        assert!(result.is_null(1));
        let result = result_from_json(b"[null, null]").unwrap();
        assert_eq!(result.len(), 2);
        assert!(result_from_json(b"{}").is_err());
    }
}
