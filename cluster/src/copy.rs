//! `COPY ... TO 'file'`: query results written to a local file, Parquet or CSV by extension.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_storage::write_parquet_bytes;

use crate::{NodeError, Result};

/// Writes `batches` to `path` (`.parquet`, or `.csv` with a header row); returns the row count.
pub fn write_file(path: &str, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<usize> {
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    let failed = |e: &dyn std::fmt::Display| NodeError::Other(format!("cannot write {path}: {e}"));
    if path.ends_with(".parquet") {
        let bytes = write_parquet_bytes(schema, batches)?;
        std::fs::write(path, bytes).map_err(|e| failed(&e))?;
    } else if path.ends_with(".csv") {
        let file = std::fs::File::create(path).map_err(|e| failed(&e))?;
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(file);
        for batch in batches {
            writer.write(batch).map_err(|e| failed(&e))?;
        }
    } else {
        return Err(NodeError::Other(format!(
            "not supported yet: COPY TO {path} (the file name must end in .parquet or .csv)"
        )));
    }
    Ok(rows)
}
