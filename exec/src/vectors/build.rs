//! The graph of one data file's vectors (ADR 0082), built where the file is read: its live,
//! non-NULL rows, each named by its ordinal in the file.

use arrow::array::Array;
use pondra_catalog::{DataFile, DeletionVector, SqlType, TableDef, VectorIndex};
use pondra_storage::{FileSource, ParquetFooter, read_parquet_row_group};

use super::distance::{as_vectors, vector_at};
use super::hnsw::{BuildSettings, Graph};
use crate::{ExecError, Result};

/// Builds the graph of column `column` of `file`, a data file of `table`, for `index`; rows
/// `deleted` marks are left out.
pub fn build_file_graph(
    (source, footer): (&FileSource, &ParquetFooter),
    (table, file, column): (&TableDef, &DataFile, usize),
    index: VectorIndex,
    deleted: Option<&DeletionVector>,
) -> Result<Graph> {
    let Some(SqlType::Vector(dimensions)) = table.columns.get(column).map(|c| &c.sql_type) else {
        return Err(ExecError::Execution(format!(
            "an HNSW index of {} is on a column that is not a vector",
            table.name
        )));
    };
    let dimensions = *dimensions as usize;
    let settings = BuildSettings {
        metric: index.metric,
        m: index.m as usize,
        ef_construction: index.ef_construction as usize,
    };
    let stored = match table.layout_of(&file.column_ids) {
        None => Some(column),
        Some(layout) => layout.columns.get(column).copied().flatten(),
    };
    let Some(stored) = stored else {
        // The file predates the column: every row holds NULL.
        return Ok(Graph::build(settings, dimensions, Vec::new()));
    };
    let mut rows = Vec::new();
    let mut ordinal = 0u32;
    for row_group in 0..footer.row_groups() {
        let batches =
            read_parquet_row_group(source, footer, (row_group, None), Some(&[stored]), &[])?;
        for batch in batches {
            let vectors = as_vectors(batch.column(0))?;
            for row in 0..vectors.len() {
                let live = !deleted.is_some_and(|d| d.contains(ordinal));
                if let (true, Some(vector)) = (live, vector_at(&vectors, row)?) {
                    if vector.len() != dimensions {
                        return Err(ExecError::Execution(format!(
                            "row {ordinal} of {} holds a vector of {} dimensions, not {dimensions}",
                            file.path,
                            vector.len()
                        )));
                    }
                    rows.push((ordinal, vector.to_vec()));
                }
                ordinal += 1;
            }
        }
    }
    Ok(Graph::build(settings, dimensions, rows))
}
