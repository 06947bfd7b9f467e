use std::io::Cursor;

use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;

use crate::Result;

/// Encodes batches as one Arrow IPC stream with zstd-compressed buffers: the log tail's format.
pub fn encode_log_segment(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    let options = IpcWriteOptions::default().try_with_compression(Some(CompressionType::ZSTD))?;
    let mut writer = StreamWriter::try_new_with_options(Vec::new(), schema, options)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()?;
    Ok(Bytes::from(writer.into_inner()?))
}

/// Decodes a log segment written by [`encode_log_segment`].
pub fn decode_log_segment(bytes: &Bytes) -> Result<Vec<RecordBatch>> {
    let reader = StreamReader::try_new(Cursor::new(bytes.as_ref()), None)?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn round_trips_batches() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("user", DataType::Utf8, true),
            Field::new("amount", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("ann"), None])),
                Arc::new(Int64Array::from(vec![Some(5), Some(7)])),
            ],
        )
        .unwrap();
        let bytes = encode_log_segment(&schema, std::slice::from_ref(&batch)).unwrap();
        let decoded = decode_log_segment(&bytes).unwrap();
        assert_eq!(decoded, vec![batch]);
    }
}
