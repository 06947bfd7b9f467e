//! UPDATE and DELETE: a table's rows are rewritten whole into one new Parquet file, replacing
//! all of its files and log segments in one commit (copy on write; ADR 0005).

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::{filter_record_batch, not};
use pondra_catalog::{Change, Snapshot, TableDef};
use pondra_planner::{LogicalPlan, RewriteKind, load_view};

use crate::keyed::{check_not_null, check_unique};
use crate::node::Node;
use crate::{NodeError, Result};

impl Node {
    /// Rewrites `table` from `input` (its rows as they will be, plus whether each was touched)
    /// and recomputes the materialized views over it; returns the number of rows touched.
    pub(crate) async fn rewrite(
        &self,
        table: &Arc<TableDef>,
        input: LogicalPlan,
        kind: RewriteKind,
    ) -> Result<usize> {
        // Tiering replaces log segments by files; it must not replace what this replaces.
        let _tiering = self.tier_lock.lock().await;
        let snapshot = self.snapshot();
        if snapshot.table(&table.name).map(|t| t.id) != Some(table.id) {
            return Err(NodeError::Other(format!(
                "table {} was dropped or replaced while the statement was planned",
                table.name
            )));
        }
        let schema = table.arrow_schema();
        let width = table.columns.len();
        let mut rows = Vec::new();
        let mut touched = 0;
        for batch in self.run_query(input, snapshot.clone(), Vec::new()).await? {
            let flags = batch.column(width).as_boolean().clone();
            touched += flags.true_count();
            let columns = batch.columns()[..width].to_vec();
            let batch = RecordBatch::try_new(schema.clone(), columns)?;
            rows.push(match kind {
                RewriteKind::Update => batch,
                RewriteKind::Delete => filter_record_batch(&batch, &not(&flags)?)?,
            });
        }
        if touched == 0 {
            return Ok(0);
        }
        for batch in &rows {
            check_not_null(table, batch)?;
        }
        check_unique(table, &rows)?;
        self.commit_rows(&snapshot, table, rows, Vec::new()).await?;
        Ok(touched)
    }

    /// Commits `rows` as the whole content of `table`, with the materialized views over it
    /// computed again from them, and `extra` changes. The caller holds the tiering lock.
    pub(crate) async fn commit_rows(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &TableDef,
        rows: Vec<RecordBatch>,
        extra: Vec<Change>,
    ) -> Result<()> {
        let mut changes = extra;
        changes.push(self.replace_rows(snapshot, table, &rows).await?);
        for view in snapshot.views_over(&table.name) {
            let plan = load_view(snapshot, &view)?;
            let state = self
                .run_query(plan.maintain, snapshot.clone(), rows.clone())
                .await?;
            changes.push(self.replace_rows(snapshot, &view, &state).await?);
        }
        self.catalog.commit(changes).await?;
        Ok(())
    }

    /// The change that makes `rows` the whole content of `table`.
    async fn replace_rows(
        &self,
        snapshot: &Snapshot,
        table: &TableDef,
        rows: &[RecordBatch],
    ) -> Result<Change> {
        Ok(Change::Replace {
            table_id: table.id,
            segments: snapshot
                .segments(table.id)
                .iter()
                .map(|s| (s.commit, s.index))
                .collect(),
            files: snapshot
                .files(table.id)
                .iter()
                .map(|f| f.path.clone())
                .collect(),
            added: self.write_data_file(table, rows).await?,
        })
    }
}
