use std::cell::RefCell;
use std::io::Cursor;

use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{
    DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions, write_message,
};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;

use crate::Result;

thread_local! {
    /// The zstd context (and flatbuffer builder) of this thread's segment encodings. A log
    /// segment is often one small batch, and a fresh context costs more than compressing it.
    static WRITE_CONTEXT: RefCell<IpcWriteContext> = RefCell::new(IpcWriteContext::default());
}

/// zstd's fastest level: a segment is written on every append and lives until compaction
/// rewrites its rows into Parquet, so encoding time matters more than its size. The level is
/// fixed: the thread's context keeps the level it was made with.
const ZSTD_LEVEL: i32 = 1;

/// The end-of-stream marker of the IPC stream format: a continuation and a zero length.
const END_OF_STREAM: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

/// Encodes batches as one Arrow IPC stream with zstd-compressed buffers: the log tail's format.
pub fn encode_log_segment(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    let options = IpcWriteOptions::default()
        .try_with_compression(Some(CompressionType::ZSTD))?
        .try_with_compression_level(Some(ZSTD_LEVEL))?;
    let generator = IpcDataGenerator::default();
    let mut dictionaries = DictionaryTracker::new(false);
    let mut out = Vec::new();
    let schema_message =
        generator.schema_to_bytes_with_dictionary_tracker(schema, &mut dictionaries, &options);
    write_message(&mut out, schema_message, &options)?;
    WRITE_CONTEXT.with_borrow_mut(|context| -> Result<()> {
        for batch in batches {
            debug_assert_eq!(batch.schema().fields(), schema.fields());
            let (dictionary_messages, batch_message) =
                generator.encode(batch, &mut dictionaries, &options, context)?;
            for message in dictionary_messages {
                write_message(&mut out, message, &options)?;
            }
            write_message(&mut out, batch_message, &options)?;
        }
        Ok(())
    })?;
    out.extend_from_slice(&END_OF_STREAM);
    Ok(Bytes::from(out))
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

    use arrow::array::{DictionaryArray, Int64Array, StringArray};
    use arrow::datatypes::Int32Type;
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

    #[test]
    fn round_trips_no_batches_several_batches_and_dictionaries() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "kind",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        )]));
        let empty = encode_log_segment(&schema, &[]).unwrap();
        assert!(decode_log_segment(&empty).unwrap().is_empty());
        let batches: Vec<RecordBatch> = [vec!["a", "b", "a"], vec!["c"], vec!["a", "c"]]
            .into_iter()
            .map(|values| {
                let array: DictionaryArray<Int32Type> = values.into_iter().collect();
                RecordBatch::try_new(schema.clone(), vec![Arc::new(array)]).unwrap()
            })
            .collect();
        // Twice on this thread: the reused context must not carry state between segments.
        for _ in 0..2 {
            let bytes = encode_log_segment(&schema, &batches).unwrap();
            assert_eq!(decode_log_segment(&bytes).unwrap(), batches);
        }
    }
}
