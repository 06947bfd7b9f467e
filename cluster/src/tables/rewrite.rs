//! UPDATE, DELETE, MERGE and INSERT ... ON CONFLICT (ADR 0048): the rows a statement changes
//! are marked deleted in their containers' deletion vectors, by address, and their new
//! versions are appended to the log tail, in one commit. No file is rewritten.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{and, is_not_null, not};
use arrow::datatypes::Int64Type;
use pondra_catalog::{Change, Snapshot, TableDef, split_row_address};
use pondra_planner::{LogicalPlan, RewriteKind};
use roaring::RoaringBitmap;

use crate::node::Node;
use crate::tables::change_records::ChangedRows;
use crate::tables::keyed::check_not_null;
use crate::{NodeError, Result};

/// What a statement changes: the addresses of the rows it deletes, and the rows it appends.
#[derive(Default)]
struct Changed {
    deleted: Vec<i64>,
    /// The rows deleted, in the table's columns (for the views over it).
    removed: Vec<RecordBatch>,
    appended: Vec<RecordBatch>,
    touched: usize,
    /// What the commit's change record says.
    record: ChangedRows,
}

impl Node {
    /// The changes that apply the rewrite `input` plans (see [`RewriteKind`]) to `table` of
    /// `snapshot` and keep the materialized views over it; and the number of rows touched.
    pub(crate) async fn rewrite(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        input: LogicalPlan,
        kind: RewriteKind,
    ) -> Result<(usize, Vec<Change>, Vec<RecordBatch>)> {
        if snapshot.table(&table.name).map(|t| t.id) != Some(table.id) {
            return Err(NodeError::Other(format!(
                "table {} was dropped or replaced while the statement was planned",
                table.name
            )));
        }
        let mut changed = Changed::default();
        for result in self.run_query(input, snapshot.clone(), Vec::new()).await? {
            changed.add(table, &result, kind)?;
        }
        if changed.touched == 0 {
            return Ok((0, Vec::new(), Vec::new()));
        }
        let mut changes = deletion_changes(snapshot, table, &changed.deleted);
        let appended = changed
            .appended
            .into_iter()
            .map(|batch| crate::tables::keyed::checked_text(table, batch))
            .collect::<Result<Vec<_>>>()?;
        let removed = changed.removed;
        // What RETURNING reads (ADR 0072): an UPDATE's new rows, a DELETE's old ones.
        let written = match kind {
            RewriteKind::Delete => removed.clone(),
            _ => appended.clone(),
        };
        if appended.iter().any(|b| b.num_rows() > 0) {
            for batch in &appended {
                check_not_null(table, batch)?;
            }
            if crate::tables::keyed::is_constrained(table) {
                let after =
                    self.catalog
                        .with_changes(snapshot, changes.clone(), snapshot.commit + 1)?;
                self.check_constraints(&Arc::new(after), table, &appended)
                    .await?;
            }
            changes.push(self.append_change(table, &appended).await?);
            let rewritten = crate::tables::event_time::Written::Rewritten;
            let event_time = crate::tables::event_time::event_time_change(
                snapshot, table, &appended, rewritten,
            )?;
            changes.extend(event_time);
        }
        changes.extend(self.record_changes(table, changed.record).await?);
        let views = self
            .maintain_views(snapshot, table, &appended, &removed, &changes)
            .await?;
        changes.extend(views);
        Ok((changed.touched, changes, written))
    }
}

impl Changed {
    /// Keeps the table's columns of rows the statement removes.
    fn remove(&mut self, table: &TableDef, columns: &[ArrayRef]) -> Result<()> {
        let batch = table_part(table, columns)?;
        if batch.num_rows() > 0 {
            self.removed.push(batch);
        }
        Ok(())
    }
}

impl Changed {
    /// Adds what one batch of a rewrite's rows says (see [`RewriteKind`] for their columns).
    fn add(&mut self, table: &TableDef, result: &RecordBatch, kind: RewriteKind) -> Result<()> {
        let width = table.columns.len();
        let columns = |from: usize, count: usize, keep: Option<&BooleanArray>| {
            result.columns()[from..from + count]
                .iter()
                .map(|c| match keep {
                    Some(keep) => Ok(arrow::compute::filter(c, keep)?),
                    None => Ok(c.clone()),
                })
                .collect::<Result<Vec<ArrayRef>>>()
        };
        let addresses = |column: usize, keep: Option<&BooleanArray>| {
            let addresses = result.column(column).as_primitive::<Int64Type>();
            let kept = (0..addresses.len()).filter(move |&i| keep.is_none_or(|k| k.value(i)));
            kept.filter(|&i| addresses.is_valid(i))
                .map(|i| addresses.value(i))
                .collect::<Vec<_>>()
        };
        match kind {
            RewriteKind::Delete => {
                self.touched += result.num_rows();
                self.deleted.extend(addresses(width + 2, None));
                let old = columns(0, width + 2, None)?;
                self.remove(table, &old)?;
                self.record.removed(table, &old, "delete")?;
            }
            RewriteKind::Update => {
                self.touched += result.num_rows();
                self.deleted.extend(addresses(width, None));
                let new = columns(0, width, None)?;
                let old = columns(width + 1, width + 2, None)?;
                self.remove(table, &old)?;
                self.record.removed(table, &old, "update_preimage")?;
                self.record.added(table, &new, "update_postimage")?;
                let batch = RecordBatch::try_new(table.arrow_schema(), new)?;
                self.appended.push(batch);
            }
            RewriteKind::Merge | RewriteKind::Upsert => {
                let flag = |i: usize| result.column(width + i).as_boolean().clone();
                if flag(2).true_count() > 0 {
                    let statement = match kind {
                        RewriteKind::Upsert => "ON CONFLICT DO UPDATE",
                        _ => "MERGE",
                    };
                    return Err(NodeError::Other(format!(
                        "{statement} command cannot affect row a second time: a target \
                         row matched more than one source row"
                    )));
                }
                let (touched, kept) = (flag(0), flag(1));
                let target = is_not_null(result.column(width + 3))?;
                self.touched += touched.true_count();
                self.deleted.extend(addresses(width + 3, Some(&touched)));
                let updated = and(&and(&touched, &kept)?, &target)?;
                let deleted = and(&and(&touched, &not(&kept)?)?, &target)?;
                let inserted = and(&and(&touched, &kept)?, &not(&target)?)?;
                let old = |keep| columns(width + 4, width + 2, Some(keep));
                let (updated_old, deleted_old) = (old(&updated)?, old(&deleted)?);
                self.remove(table, &updated_old)?;
                self.remove(table, &deleted_old)?;
                self.record
                    .removed(table, &updated_old, "update_preimage")?;
                self.record.removed(table, &deleted_old, "delete")?;
                let new = |keep| columns(0, width, Some(keep));
                self.record
                    .added(table, &new(&updated)?, "update_postimage")?;
                self.record.added(table, &new(&inserted)?, "insert")?;
                let appended = new(&and(&touched, &kept)?)?;
                self.appended
                    .push(RecordBatch::try_new(table.arrow_schema(), appended)?);
            }
        }
        Ok(())
    }
}

/// A removed row's columns (the table's, then its commit) as a batch of the table's columns.
pub(crate) fn table_part(table: &TableDef, columns: &[ArrayRef]) -> Result<RecordBatch> {
    let width = table.columns.len();
    Ok(RecordBatch::try_new(
        table.arrow_schema(),
        columns[..width].to_vec(),
    )?)
}

/// The changes that mark the rows at `addresses` (of `table` in `snapshot`) deleted: one per
/// container.
pub(crate) fn deletion_changes(
    snapshot: &Snapshot,
    table: &TableDef,
    addresses: &[i64],
) -> Vec<Change> {
    let containers = snapshot.containers(table.id);
    let mut deleted: BTreeMap<usize, RoaringBitmap> = BTreeMap::new();
    for &address in addresses {
        let (position, ordinal) = split_row_address(address);
        deleted.entry(position).or_default().insert(ordinal);
    }
    deleted
        .into_iter()
        .map(|(position, rows)| Change::DeleteRows {
            table_id: table.id,
            container: containers[position].clone(),
            rows,
        })
        .collect()
}

/// The row addresses of a batch read with its addresses: its last column.
pub(crate) fn address_column(batch: &RecordBatch) -> &arrow::array::PrimitiveArray<Int64Type> {
    batch
        .column(batch.num_columns() - 1)
        .as_primitive::<Int64Type>()
}
