//! Change records (ADR 0048): a commit that updates or deletes rows of a table records them,
//! each with its change type, for `table_changes`. A row a commit only inserted is not
//! recorded: its `_commit_version` names the commit, and the record of whichever later commit
//! deletes it keeps it, with that version, so that the feed still finds its insertion.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray, new_null_array};
use arrow::datatypes::{DataType, TimeUnit};
use pondra_catalog::{Change, SegmentPayload, TableDef, TableKind};
use pondra_storage::{decode_log_segment, encode_log_segment};

use crate::Result;
use crate::node::Node;
use crate::object_names::{INLINE_SEGMENT_LIMIT, unique_name};

/// The rows a statement changed, gathered for its change record.
#[derive(Default)]
pub(crate) struct ChangedRows {
    batches: Vec<RecordBatch>,
}

impl ChangedRows {
    /// Adds rows the statement removed: `columns` are the table's, then each row's commit
    /// version and time.
    pub fn removed(&mut self, table: &TableDef, columns: &[ArrayRef], kind: &str) -> Result<()> {
        let width = table.columns.len();
        assert_eq!(columns.len(), width + 2, "a removed row has its commit");
        let rows = columns.first().map_or(0, |c| c.len());
        let mut columns = columns.to_vec();
        columns.insert(width, labels(kind, rows));
        self.push(table, columns)
    }

    /// Adds rows the statement added: `columns` are the table's.
    pub fn added(&mut self, table: &TableDef, columns: &[ArrayRef], kind: &str) -> Result<()> {
        assert_eq!(
            columns.len(),
            table.columns.len(),
            "an added row is the table's"
        );
        let rows = columns.first().map_or(0, |c| c.len());
        let mut columns = columns.to_vec();
        columns.push(labels(kind, rows));
        columns.push(new_null_array(&DataType::Int64, rows));
        let time = DataType::Timestamp(TimeUnit::Microsecond, None);
        columns.push(new_null_array(&time, rows));
        self.push(table, columns)
    }

    fn push(&mut self, table: &TableDef, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(table.change_record_schema(), columns)?;
        if batch.num_rows() > 0 {
            self.batches.push(batch);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }
}

fn labels(kind: &str, rows: usize) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        kind, rows,
    )))
}

impl Node {
    /// The change that records `changed` for `table`'s feed; none for a view, or when nothing
    /// changed.
    pub(crate) async fn record_changes(
        &self,
        table: &TableDef,
        changed: ChangedRows,
    ) -> Result<Option<Change>> {
        if changed.is_empty() || !matches!(table.kind, TableKind::Table) {
            return Ok(None);
        }
        let schema = table.change_record_schema();
        let rows: usize = changed.batches.iter().map(|b| b.num_rows()).sum();
        let bytes = encode_log_segment(&schema, &changed.batches)?;
        let payload = match bytes.len() < INLINE_SEGMENT_LIMIT {
            true => SegmentPayload::Inline(bytes),
            false => {
                let path = format!("log/{}/{}.changes.arrows", table.name, unique_name());
                self.lake.put(&path, bytes).await?;
                SegmentPayload::Object(path)
            }
        };
        Ok(Some(Change::RecordChanges {
            table_id: table.id,
            rows: rows as u64,
            payload,
            column_ids: table.stored_column_ids(),
        }))
    }

    /// Records `appends` (a transaction's plain inserts into tables its other statements
    /// recorded changes to) as inserts, so that every change of its commit to such a table is
    /// in the commit's records.
    pub(crate) async fn record_plain_inserts(&self, appends: Vec<Change>) -> Result<Vec<Change>> {
        let mut records = Vec::new();
        for append in appends {
            let Change::AppendSegment {
                table_id,
                payload,
                column_ids,
                ..
            } = append
            else {
                unreachable!("only appends are recorded as inserts");
            };
            let Some(table) = self.snapshot().table_by_id(table_id).cloned() else {
                continue;
            };
            if column_ids != table.stored_column_ids() {
                return Err(crate::NodeError::Other(format!(
                    "table {} was altered while the transaction ran",
                    table.name
                )));
            }
            let bytes = match payload {
                SegmentPayload::Inline(bytes) => bytes,
                SegmentPayload::Object(path) => self.lake.get(&path).await?,
            };
            let mut inserted = ChangedRows::default();
            for batch in decode_log_segment(&bytes)? {
                inserted.added(&table, batch.columns(), "insert")?;
            }
            records.extend(self.record_changes(&table, inserted).await?);
        }
        Ok(records)
    }
}
