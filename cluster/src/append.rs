//! Appends of rows that arrive as Arrow batches (HTTP, Flight SQL ingest, COPY FROM STDIN),
//! optionally exactly once per producer and sequence number.

use std::sync::Arc;

use arrow::array::{RecordBatch, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use pondra_catalog::{Change, TableKind};

use crate::node::Node;
use crate::{NodeError, Result};

/// What became of an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The rows were committed.
    Appended(usize),
    /// The producer had already appended this sequence number (or a later one): a retry,
    /// dropped.
    Duplicate,
}

impl Node {
    /// Appends `batches` to `table`. Columns are matched by name and cast to the table's
    /// types; columns the batches lack are NULL. With a producer and sequence number, the
    /// append happens at most once: the producer's last sequence number is committed with the
    /// rows, and an append whose number is not above it is dropped.
    pub async fn append(
        &self,
        table: &str,
        batches: &[RecordBatch],
        producer: Option<(&str, u64)>,
    ) -> Result<AppendOutcome> {
        let _guard = self.write_lock.lock().await;
        let snapshot = self.snapshot();
        let table = snapshot
            .table(table)
            .ok_or_else(|| pondra_catalog::CatalogError::TableNotFound(table.to_string()))?
            .clone();
        if !matches!(table.kind, TableKind::Table) {
            return Err(NodeError::Other(format!(
                "cannot append to {}: it is a view",
                table.name
            )));
        }
        let mut extra = Vec::new();
        if let Some((producer, sequence)) = producer {
            if producer.is_empty() {
                return Err(NodeError::Other("a producer needs a name".into()));
            }
            if snapshot
                .producers
                .get(producer)
                .is_some_and(|last| *last >= sequence)
            {
                return Ok(AppendOutcome::Duplicate);
            }
            extra.push(Change::ProducerSequence {
                producer: producer.to_string(),
                sequence,
            });
        }
        let schema = table.arrow_schema();
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        let mut conformed = Vec::with_capacity(batches.len());
        for batch in batches {
            for field in batch.schema().fields() {
                if schema.field_with_name(field.name()).is_err() {
                    return Err(NodeError::Other(format!(
                        "table {} has no column named {}",
                        table.name,
                        field.name()
                    )));
                }
            }
            let columns = schema
                .fields()
                .iter()
                .map(|field| match batch.column_by_name(field.name()) {
                    Some(column) => cast_with_options(column, field.data_type(), &options)
                        .map_err(|e| NodeError::Other(format!("column {}: {e}", field.name()))),
                    None => Ok(new_null_array(field.data_type(), batch.num_rows())),
                })
                .collect::<Result<Vec<_>>>()?;
            conformed.push(RecordBatch::try_new(schema.clone(), columns)?);
        }
        let rows = self
            .insert_batches(&Arc::clone(&table), &conformed, extra)
            .await?;
        Ok(AppendOutcome::Appended(rows))
    }
}
