//! `COPY ... TO 'file'`: query results written to a local file or a URL (ADR 0046), Parquet,
//! CSV or newline-delimited JSON by extension.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_storage::{is_json_file, write_parquet_bytes};

use crate::{NodeError, Result};

/// Writes `batches` to `path` (`.parquet`, `.csv` with a header row, or `.json` / `.ndjson` /
/// `.jsonl` with one object per line); returns the row count.
pub fn write_file(path: &str, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<usize> {
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    let failed = |e: &dyn std::fmt::Display| NodeError::Other(format!("cannot write {path}: {e}"));
    let bytes = if path.ends_with(".parquet") {
        write_parquet_bytes(schema, batches)?
    } else if path.ends_with(".csv") {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(Vec::new());
        for batch in batches {
            writer.write(batch).map_err(|e| failed(&e))?;
        }
        writer.into_inner().into()
    } else if is_json_file(path) {
        let mut writer = arrow::json::LineDelimitedWriter::new(Vec::new());
        for batch in batches {
            writer.write(batch).map_err(|e| failed(&e))?;
        }
        writer.finish().map_err(|e| failed(&e))?;
        writer.into_inner().into()
    } else {
        return Err(NodeError::Other(format!(
            "not supported yet: COPY TO {path} (the file name must end in .parquet, .csv or .json)"
        )));
    };
    pondra_storage::write_file(path, bytes).map_err(|e| failed(&e))?;
    Ok(rows)
}
