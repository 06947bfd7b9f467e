use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::Result;

/// Rows per Parquet row group: one row group is one morsel for the scan.
const ROW_GROUP_ROWS: usize = 122_880;

/// Writes batches as one Parquet file (zstd, statistics on) held in memory.
pub fn write_parquet_bytes(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(properties))?;
    for batch in batches {
        writer.write(batch)?;
    }
    let bytes = writer.into_inner()?;
    Ok(Bytes::from(bytes))
}

/// Reads every row of a Parquet file held in memory.
pub fn read_parquet_bytes(bytes: Bytes) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)?
        .with_batch_size(8192)
        .build()?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(batches)
}
