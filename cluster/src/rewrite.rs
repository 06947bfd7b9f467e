//! UPDATE, DELETE and MERGE: a table's rows are rewritten whole into one new Parquet file, replacing
//! all of its files and log segments in one commit (copy on write; ADR 0005). The change is a
//! `ReplaceAll`, so tiering in between does not make it wrong.

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::{filter_record_batch, not};
use pondra_catalog::{Change, Snapshot, TableDef};
use pondra_planner::{LogicalPlan, RewriteKind, load_view};

use crate::keyed::{check_not_null, check_unique};
use crate::node::Node;
use crate::{NodeError, Result};

impl Node {
    /// The changes that rewrite `table` of `snapshot` from `input` (its rows as they will be,
    /// plus whether each was touched) and recompute the materialized views over it; and the
    /// number of rows touched.
    pub(crate) async fn rewrite(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        input: LogicalPlan,
        kind: RewriteKind,
    ) -> Result<(usize, Vec<Change>)> {
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
        for result in self.run_query(input, snapshot.clone(), Vec::new()).await? {
            let flag = |i: usize| result.column(width + i).as_boolean().clone();
            touched += flag(0).true_count();
            let columns = result.columns()[..width].to_vec();
            let batch = RecordBatch::try_new(schema.clone(), columns)?;
            rows.push(match kind {
                RewriteKind::Update => batch,
                RewriteKind::Delete => filter_record_batch(&batch, &not(&flag(0))?)?,
                RewriteKind::Merge | RewriteKind::Upsert => {
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
                    filter_record_batch(&batch, &flag(1))?
                }
            });
        }
        if touched == 0 {
            return Ok((0, Vec::new()));
        }
        for batch in &rows {
            check_not_null(table, batch)?;
        }
        check_unique(table, &rows)?;
        let changes = self
            .rewrite_changes(snapshot, table, rows, Vec::new())
            .await?;
        Ok((touched, changes))
    }

    /// The changes that make `rows` the whole content of `table`, with the materialized views
    /// over it computed again from them, after `extra` changes.
    pub(crate) async fn rewrite_changes(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &TableDef,
        rows: Vec<RecordBatch>,
        extra: Vec<Change>,
    ) -> Result<Vec<Change>> {
        let mut changes = extra;
        changes.push(self.replace_rows(table, &rows).await?);
        for view in snapshot.views_over(&table.name) {
            let plan = load_view(snapshot, &view)?;
            let state = self
                .run_query(plan.maintain, snapshot.clone(), rows.clone())
                .await?;
            changes.push(self.replace_rows(&view, &state).await?);
        }
        Ok(changes)
    }

    /// The change that makes `rows` the whole content of `table`.
    async fn replace_rows(&self, table: &TableDef, rows: &[RecordBatch]) -> Result<Change> {
        Ok(Change::ReplaceAll {
            table_id: table.id,
            added: self.write_data_file(table, rows).await?,
        })
    }
}
