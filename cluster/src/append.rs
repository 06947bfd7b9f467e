//! Appends of rows that arrive as Arrow batches (HTTP, Flight SQL ingest, COPY FROM STDIN),
//! optionally exactly once per producer and sequence number.

use arrow::array::{RecordBatch, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use std::sync::Arc;

use pondra_catalog::{Change, Snapshot, TableDef, TableKind};

use crate::node::Node;
use crate::session::Session;
use crate::transaction::Transaction;
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
        let table = appendable(&snapshot, table)?;
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
        let conformed = conform(&table, batches)?;
        let (rows, changes) = self
            .insert_changes(&snapshot, &table, &conformed, extra)
            .await?;
        self.commit_changes(&snapshot, changes).await?;
        Ok(AppendOutcome::Appended(rows))
    }

    /// Appends `batches` to `table` as `append` does, in the session's transaction when one is
    /// open (COPY FROM STDIN inside BEGIN ... COMMIT); returns the rows appended.
    pub async fn append_in(
        &self,
        session: &Session,
        table: &str,
        batches: &[RecordBatch],
    ) -> Result<usize> {
        let Some(mut transaction) = session.take_transaction() else {
            return match self.append(table, batches, None).await? {
                AppendOutcome::Appended(rows) => Ok(rows),
                AppendOutcome::Duplicate => Ok(0),
            };
        };
        let appended = match transaction.is_aborted() {
            true => Err(NodeError::Aborted),
            false => self.append_to(&mut transaction, table, batches).await,
        };
        if appended.is_err() {
            transaction.abort();
        }
        session.put_transaction(Some(transaction));
        appended
    }

    async fn append_to(
        &self,
        transaction: &mut Transaction,
        table: &str,
        batches: &[RecordBatch],
    ) -> Result<usize> {
        let snapshot = transaction.view().clone();
        let table = appendable(&snapshot, table)?;
        let conformed = conform(&table, batches)?;
        let (rows, changes) = self
            .insert_changes(&snapshot, &table, &conformed, Vec::new())
            .await?;
        let view = self.catalog.with_changes(&snapshot, changes.clone())?;
        transaction.add(changes, view);
        Ok(rows)
    }
}

/// The table named `name` of `snapshot`, if rows can be appended to it.
fn appendable(snapshot: &Snapshot, name: &str) -> Result<Arc<TableDef>> {
    let table = snapshot
        .table(name)
        .ok_or_else(|| pondra_catalog::CatalogError::TableNotFound(name.to_string()))?
        .clone();
    if !matches!(table.kind, TableKind::Table) {
        return Err(NodeError::Other(format!(
            "cannot append to {}: it is a view",
            table.name
        )));
    }
    Ok(table)
}

/// `batches` in the columns and types of `table`, matched by name.
fn conform(table: &TableDef, batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
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
    Ok(conformed)
}
