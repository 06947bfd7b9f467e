//! Bulk loading: rows written straight into Parquet files and committed in one commit, for
//! loads too large to pass through the log tail (TPC-H generation, large COPYs).

use arrow::array::RecordBatch;
use arrow::compute::cast;
use pondra_catalog::{Change, DataFile, gather_statistics};
use pondra_storage::write_parquet_bytes;

use crate::node::Node;
use crate::object_names::unique_name;
use crate::{NodeError, Result};

/// Rows per Parquet file written by a bulk load.
const ROWS_PER_FILE: usize = 1 << 20;

impl Node {
    /// Appends every batch of `batches` to `table` as Parquet files, in one commit at the end:
    /// the load is all or nothing. Returns the number of rows loaded.
    pub async fn bulk_load(
        &self,
        table: &str,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<u64> {
        let snapshot = self.snapshot();
        let def = snapshot
            .table(table)
            .cloned()
            .ok_or_else(|| pondra_catalog::CatalogError::TableNotFound(table.to_string()))?;
        if def.is_materialized_view() || !snapshot.views_over(table).is_empty() {
            return Err(NodeError::Other(format!(
                "not supported yet: bulk loading {table}, which is or feeds a materialized view"
            )));
        }
        let schema = def.arrow_schema();
        let mut files = Vec::new();
        let mut pending: Vec<RecordBatch> = Vec::new();
        let mut pending_rows = 0;
        let mut total = 0u64;
        let mut batches = batches.peekable();
        while let Some(batch) = batches.next() {
            let batch = batch?;
            let columns = batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| cast(c, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            let batch = RecordBatch::try_new(schema.clone(), columns)?;
            pending_rows += batch.num_rows();
            pending.push(batch);
            if pending_rows >= ROWS_PER_FILE || batches.peek().is_none() {
                let rows = pending_rows as u64;
                let batches = std::mem::take(&mut pending);
                let bytes = write_parquet_bytes(&schema, &batches)?;
                let columns = gather_statistics(&batches);
                pending_rows = 0;
                let path = format!("data/{}/{}.parquet", def.name, unique_name());
                let size_bytes = bytes.len() as u64;
                self.lake.put(&path, bytes).await?;
                files.push(DataFile {
                    table_id: def.id,
                    path,
                    rows,
                    size_bytes,
                    columns,
                    commit: 0,
                    committed_at_ms: 0,
                    column_ids: def.stored_column_ids(),
                    // The commit gives the file's rows their offsets (ADR 0077).
                    offsets: None,
                });
                total += rows;
            }
        }
        let _guard = self.write_lock.write().await;
        self.catalog
            .commit(vec![Change::Replace {
                table_id: def.id,
                segments: vec![],
                files: vec![],
                added: files,
                deleted: 0,
            }])
            .await?;
        Ok(total)
    }
}
