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

/// The schema Pondra reads a Parquet file with, and the file's row count and row groups.
/// String columns of any Arrow layout are read as plain UTF-8 strings.
pub fn parquet_file_info(path: &std::path::Path) -> Result<ParquetFileInfo> {
    let file = std::fs::File::open(path).map_err(|e| crate::StorageError::Folder {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let fields: Vec<arrow::datatypes::Field> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let data_type = match f.data_type() {
                arrow::datatypes::DataType::Utf8View | arrow::datatypes::DataType::LargeUtf8 => {
                    arrow::datatypes::DataType::Utf8
                }
                other => other.clone(),
            };
            arrow::datatypes::Field::new(f.name(), data_type, f.is_nullable())
        })
        .collect();
    let metadata = builder.metadata();
    Ok(ParquetFileInfo {
        schema: std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
        rows: metadata.file_metadata().num_rows().max(0) as u64,
        row_groups: metadata.num_row_groups(),
    })
}

/// What [`parquet_file_info`] learns from a file's footer.
#[derive(Clone, Debug)]
pub struct ParquetFileInfo {
    pub schema: SchemaRef,
    pub rows: u64,
    pub row_groups: usize,
}

/// Reads one row group of a local Parquet file as batches of `schema` (which may name plain
/// strings where the file stores another string layout).
pub fn read_parquet_row_group(
    path: &std::path::Path,
    row_group: usize,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let file = std::fs::File::open(path).map_err(|e| crate::StorageError::Folder {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let options =
        parquet::arrow::arrow_reader::ArrowReaderOptions::new().with_schema(schema.clone());
    let reader = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)?
        .with_row_groups(vec![row_group])
        .with_batch_size(8192)
        .build()?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(batches)
}

/// The columns of a CSV file with a header row, their types inferred from its first rows:
/// whole numbers BIGINT, other numbers DOUBLE, true/false BOOLEAN, dates DATE, timestamps
/// TIMESTAMP, anything else VARCHAR.
pub fn csv_file_schema(path: &std::path::Path) -> Result<SchemaRef> {
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    let file = std::fs::File::open(path).map_err(|e| crate::StorageError::Folder {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let (schema, _) = arrow::csv::reader::Format::default()
        .with_header(true)
        .infer_schema(file, Some(10_000))?;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let data_type = match f.data_type() {
                DataType::Int64 | DataType::Float64 | DataType::Boolean | DataType::Date32 => {
                    f.data_type().clone()
                }
                DataType::Timestamp(..) => DataType::Timestamp(TimeUnit::Microsecond, None),
                _ => DataType::Utf8,
            };
            Field::new(f.name(), data_type, true)
        })
        .collect();
    Ok(std::sync::Arc::new(Schema::new(fields)))
}

/// Every row of a CSV file with a header row, as batches of `schema`.
pub fn read_csv_file(path: &std::path::Path, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    let file = std::fs::File::open(path).map_err(|e| crate::StorageError::Folder {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let reader = arrow::csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .with_batch_size(8192)
        .build(file)?;
    Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
}
