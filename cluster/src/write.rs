//! The write path: every statement that changes the lake becomes one durable catalog commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use pondra_catalog::{Change, SegmentPayload, TableDef, TableKind};
use pondra_planner::{LogicalPlan, Plan, ViewPlan, load_view};
use pondra_storage::encode_log_segment;

use crate::keyed::{check_not_null, is_constrained};
use crate::node::{Node, StatementResult, done};
use crate::{NodeError, Result};

/// Log segments smaller than this ride inside the catalog commit; larger ones become objects.
pub const INLINE_SEGMENT_LIMIT: usize = 64 * 1024;

static OBJECT_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// A name no other object of this lake has: time, process and a per-process sequence.
pub(crate) fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let sequence = OBJECT_SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}-{:x}-{sequence:x}", std::process::id())
}

impl Node {
    /// Runs a statement that writes; returns once its commit is durable.
    pub(crate) async fn execute_write(&self, plan: Plan) -> Result<StatementResult> {
        let _guard = self.write_lock.lock().await;
        match plan {
            Plan::CreateTable {
                name,
                columns,
                key,
                unique,
                if_not_exists,
            } => {
                if self.snapshot().table(&name).is_some() && if_not_exists {
                    return Ok(done("CREATE TABLE"));
                }
                let def = TableDef {
                    id: 0,
                    name,
                    columns,
                    kind: TableKind::Table,
                    indexes: Vec::new(),
                    key,
                    unique,
                };
                self.catalog
                    .commit(vec![Change::CreateTable { def, initial: None }])
                    .await?;
                Ok(done("CREATE TABLE"))
            }
            Plan::DropTable { name, if_exists } => {
                let snapshot = self.snapshot();
                let Some(table) = snapshot.table(&name) else {
                    if if_exists {
                        return Ok(done("DROP TABLE"));
                    }
                    return Err(pondra_catalog::CatalogError::TableNotFound(name).into());
                };
                let tag = match table.kind {
                    TableKind::Table => "DROP TABLE",
                    TableKind::View { .. } => "DROP VIEW",
                    TableKind::MaterializedView { .. } => "DROP MATERIALIZED VIEW",
                };
                self.catalog
                    .commit(vec![Change::DropTable { name }])
                    .await?;
                Ok(done(tag))
            }
            Plan::Insert { table, input } => {
                let rows = self.insert(&table, input).await?;
                Ok(done(format!("INSERT 0 {rows}")))
            }
            Plan::CreateMaterializedView {
                name,
                sql,
                view,
                if_not_exists,
            } => {
                if self.snapshot().table(&name).is_some() {
                    if if_not_exists {
                        return Ok(done("CREATE MATERIALIZED VIEW"));
                    }
                    return Err(pondra_catalog::CatalogError::TableExists(name).into());
                }
                self.create_view(name, sql, &view).await?;
                Ok(done("CREATE MATERIALIZED VIEW"))
            }
            Plan::CreateTableAs {
                name,
                columns,
                input,
                if_not_exists,
            } => {
                if self.snapshot().table(&name).is_some() {
                    if if_not_exists {
                        return Ok(done("CREATE TABLE"));
                    }
                    return Err(pondra_catalog::CatalogError::TableExists(name).into());
                }
                let def = TableDef {
                    id: 0,
                    name,
                    columns,
                    kind: TableKind::Table,
                    indexes: Vec::new(),
                    key: Vec::new(),
                    unique: Vec::new(),
                };
                let rows = self.run_query(input, self.snapshot(), Vec::new()).await?;
                let count: usize = rows.iter().map(|b| b.num_rows()).sum();
                let initial = if count > 0 {
                    Some(self.segment(&def, &rows).await?)
                } else {
                    None
                };
                self.catalog
                    .commit(vec![Change::CreateTable { def, initial }])
                    .await?;
                Ok(done(format!("SELECT {count}")))
            }
            Plan::CreateView {
                view,
                if_not_exists,
            } => {
                if self.snapshot().table(&view.name).is_some() {
                    if if_not_exists {
                        return Ok(done("CREATE VIEW"));
                    }
                    return Err(pondra_catalog::CatalogError::TableExists(view.name).into());
                }
                self.catalog
                    .commit(vec![Change::CreateTable {
                        def: view,
                        initial: None,
                    }])
                    .await?;
                Ok(done("CREATE VIEW"))
            }
            Plan::CreateIndex {
                table,
                index,
                if_not_exists,
            } => {
                let snapshot = self.snapshot();
                if snapshot.table_with_index(&index.name).is_some() {
                    if if_not_exists {
                        return Ok(done("CREATE INDEX"));
                    }
                    return Err(NodeError::Other(format!(
                        "index {} already exists",
                        index.name
                    )));
                }
                let mut def = snapshot
                    .table(&table)
                    .ok_or(pondra_catalog::CatalogError::TableNotFound(table))?
                    .as_ref()
                    .clone();
                def.indexes.push(index);
                self.catalog
                    .commit(vec![Change::AlterTable { def }])
                    .await?;
                Ok(done("CREATE INDEX"))
            }
            Plan::DropIndex { name, if_exists } => {
                let snapshot = self.snapshot();
                let Some(table) = snapshot.table_with_index(&name) else {
                    if if_exists {
                        return Ok(done("DROP INDEX"));
                    }
                    return Err(NodeError::Other(format!("index {name} does not exist")));
                };
                let mut def = table.as_ref().clone();
                def.indexes.retain(|i| i.name != name);
                self.catalog
                    .commit(vec![Change::AlterTable { def }])
                    .await?;
                Ok(done("DROP INDEX"))
            }
            Plan::Rewrite { table, input, kind } => {
                let rows = self.rewrite(&table, input, kind).await?;
                let verb = match kind {
                    pondra_planner::RewriteKind::Update => "UPDATE",
                    pondra_planner::RewriteKind::Delete => "DELETE",
                };
                Ok(done(format!("{verb} {rows}")))
            }
            Plan::Query(_)
            | Plan::Explain(_)
            | Plan::ExplainAnalyze(_)
            | Plan::Checkpoint
            | Plan::CopyTo { .. } => {
                unreachable!("not a write")
            }
        }
    }

    /// Appends the rows of `input` to `table` and to every view over it, in one commit.
    async fn insert(&self, table: &Arc<TableDef>, input: LogicalPlan) -> Result<usize> {
        let rows = self.run_query(input, self.snapshot(), Vec::new()).await?;
        self.insert_batches(table, &rows, Vec::new()).await
    }

    /// Appends `batches` (in the table's columns) to `table` and to every view over it, with
    /// `extra` changes, in one commit. The caller holds the write lock.
    pub(crate) async fn insert_batches(
        &self,
        table: &Arc<TableDef>,
        batches: &[RecordBatch],
        extra: Vec<Change>,
    ) -> Result<usize> {
        // An insert into a constrained table reads it; tiering must not change it before the commit.
        let _tiering = if is_constrained(table) {
            Some(self.tier_lock.lock().await)
        } else {
            None
        };
        let snapshot = self.snapshot();
        if snapshot.table(&table.name).map(|t| t.id) != Some(table.id) {
            return Err(NodeError::Other(format!(
                "table {} was dropped or replaced while the INSERT was planned",
                table.name
            )));
        }
        let schema = table.arrow_schema();
        let batch = concat_batches(&schema, batches)?;
        let batch = RecordBatch::try_new(schema, batch.columns().to_vec())?;
        let rows = batch.num_rows();
        if rows == 0 {
            if !extra.is_empty() {
                self.catalog.commit(extra).await?;
            }
            return Ok(0);
        }
        check_not_null(table, &batch)?;
        let batch = if !is_constrained(table) {
            batch
        } else {
            match self.constrained_rows(table, batch).await? {
                (_, Some(all_rows)) => {
                    self.commit_rows(&snapshot, table, all_rows, extra).await?;
                    return Ok(rows);
                }
                (batch, None) => batch,
            }
        };
        let mut changes = extra;
        changes.push(
            self.append_change(table, std::slice::from_ref(&batch))
                .await?,
        );
        for view in snapshot.views_over(&table.name) {
            let plan = load_view(&snapshot, &view)?;
            let state = self
                .run_query(plan.maintain, snapshot.clone(), vec![batch.clone()])
                .await?;
            changes.push(self.append_change(&view, &state).await?);
        }
        self.catalog.commit(changes).await?;
        Ok(rows)
    }

    /// Creates a view and fills it from the rows its table already holds, in one commit.
    async fn create_view(&self, name: String, sql: String, view: &ViewPlan) -> Result<()> {
        let snapshot = self.snapshot();
        let base = &view.base_table;
        if snapshot.table(&base.name).map(|t| t.id) != Some(base.id) {
            return Err(NodeError::Other(format!(
                "table {} changed while the view was planned",
                base.name
            )));
        }
        let existing = {
            let scan = LogicalPlan::Scan {
                table: base.clone(),
                schema: base.arrow_schema(),
            };
            self.run_query(scan, snapshot.clone(), Vec::new()).await?
        };
        let def = TableDef {
            id: 0,
            name,
            columns: view.state_columns.clone(),
            kind: TableKind::MaterializedView {
                sql,
                base_table: base.name.clone(),
            },
            indexes: Vec::new(),
            key: Vec::new(),
            unique: Vec::new(),
        };
        let state = self
            .run_query(view.maintain.clone(), snapshot, existing)
            .await?;
        let state_rows: usize = state.iter().map(|b| b.num_rows()).sum();
        let initial = if state_rows > 0 {
            let (rows, payload) = self.segment(&def, &state).await?;
            Some((rows, payload))
        } else {
            None
        };
        self.catalog
            .commit(vec![Change::CreateTable { def, initial }])
            .await?;
        Ok(())
    }

    async fn append_change(&self, table: &TableDef, batches: &[RecordBatch]) -> Result<Change> {
        let (rows, payload) = self.segment(table, batches).await?;
        Ok(Change::AppendSegment {
            table_id: table.id,
            rows,
            payload,
        })
    }

    /// Encodes rows as a log segment; a large one is written to `log/` before the commit.
    pub(crate) async fn segment(
        &self,
        table: &TableDef,
        batches: &[RecordBatch],
    ) -> Result<(u64, SegmentPayload)> {
        let schema = table.arrow_schema();
        let batches = batches
            .iter()
            .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let bytes = encode_log_segment(&schema, &batches)?;
        if bytes.len() < INLINE_SEGMENT_LIMIT {
            return Ok((rows as u64, SegmentPayload::Inline(bytes)));
        }
        let path = format!("log/{}/{}.arrows", table.name, unique_name());
        self.lake.put(&path, bytes).await?;
        Ok((rows as u64, SegmentPayload::Object(path)))
    }
}
