//! The write path: every statement that changes the lake becomes one durable catalog commit.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use pondra_catalog::{Change, SegmentPayload, Snapshot, TableDef, TableKind};
use pondra_planner::{LogicalPlan, Plan, ViewPlan, load_view};
use pondra_storage::encode_log_segment;

use crate::node::Node;
use crate::object_names::{INLINE_SEGMENT_LIMIT, unique_name};
use crate::statement_result::{StatementResult, done};
use crate::tables::event_time::{Written, event_time_change};
use crate::tables::keyed::{check_not_null, is_constrained};
use crate::{NodeError, Result};

/// `Node::write_lock` as a write holds it until its commit is durable.
pub(crate) enum WriteGuard<'a> {
    /// With other appends to plain tables.
    Shared {
        _held: tokio::sync::RwLockReadGuard<'a, ()>,
    },
    /// Alone.
    Exclusive {
        _held: tokio::sync::RwLockWriteGuard<'a, ()>,
    },
}

/// Whether every write to the table `name` of `snapshot` that adds rows only appends them: a
/// table (not a view) with no key and no UNIQUE column, whose writes never read its rows.
///
/// Nor a watermarked table with views: appends prepared side by side would judge their rows
/// by one watermark, and one could change a window the other closed (ADR 0055).
fn appends_only(snapshot: &Snapshot, name: &str) -> bool {
    snapshot.table(name).is_some_and(|table| {
        matches!(table.kind, TableKind::Table)
            && !is_constrained(table)
            && (table.watermark.is_none() || snapshot.views_over(name).is_empty())
    })
}

/// A writing statement made ready to commit: its catalog changes and its command tag. The
/// objects its changes name (large log segments, data files) are already written.
pub(crate) struct Prepared {
    pub changes: Vec<Change>,
    pub tag: String,
    /// The rows it writes, in the table's columns, for RETURNING (ADR 0072): an INSERT's rows,
    /// an UPDATE's new versions, a DELETE's deleted rows; none for other statements.
    pub rows: Vec<RecordBatch>,
}

impl Prepared {
    pub(crate) fn new(changes: Vec<Change>, tag: impl Into<String>) -> Prepared {
        Prepared {
            changes,
            tag: tag.into(),
            rows: Vec::new(),
        }
    }

    fn with_rows(self, rows: Vec<RecordBatch>) -> Prepared {
        Prepared { rows, ..self }
    }
}

impl Node {
    /// Runs a statement that writes, outside a transaction: its changes are prepared against
    /// the latest snapshot and committed, durably, before it returns.
    pub(crate) async fn execute_write(&self, plan: Plan) -> Result<StatementResult> {
        let (tag, _) = self.write_returning(plan, None).await?;
        Ok(done(tag))
    }

    /// As [`execute_write`](Self::execute_write), with RETURNING (ADR 0072): `returning` runs
    /// over the rows the statement writes before it commits, so that a RETURNING that fails
    /// fails the write. Returns the command tag and the rows `returning` gives.
    pub(crate) async fn write_returning(
        &self,
        plan: Plan,
        returning: Option<LogicalPlan>,
    ) -> Result<(String, Vec<RecordBatch>)> {
        let (_guard, snapshot) = match &plan {
            Plan::Insert { table, .. } => self.lock_for_append(&table.name).await,
            _ => self.lock_exclusive().await,
        };
        let mut prepared = self.prepare_write(plan, &snapshot).await?;
        let returned = match returning {
            Some(returning) => {
                self.returned_rows(returning, &snapshot, &mut prepared)
                    .await?
            }
            None => Vec::new(),
        };
        self.commit_changes(&snapshot, prepared.changes).await?;
        Ok((prepared.tag, returned))
    }

    /// The rows `returning` gives over what `prepared` wrote; when it fails, the write will
    /// not commit, and the objects it wrote for the commit are deleted.
    pub(crate) async fn returned_rows(
        &self,
        returning: LogicalPlan,
        snapshot: &Arc<Snapshot>,
        prepared: &mut Prepared,
    ) -> Result<Vec<RecordBatch>> {
        let rows = std::mem::take(&mut prepared.rows);
        match self.run_query(returning, snapshot.clone(), rows).await {
            Ok(returned) => Ok(returned),
            Err(e) => {
                let objects = crate::sessions::transaction::objects_named(&prepared.changes);
                self.delete_objects(objects).await;
                Err(e)
            }
        }
    }

    /// Takes the write lock for a write that appends rows to the table named `table`, and the
    /// latest snapshot under it. The lock is shared when the table is plain (no key, no UNIQUE
    /// column: appends to it never read its rows), so that appends prepare in parallel and the
    /// catalog groups their commits (ADR 0046); else it is exclusive.
    ///
    /// A plain table's materialized views are kept with it: each append adds the views' state
    /// for its own rows, which reads are built to merge.
    pub(crate) async fn lock_for_append(&self, table: &str) -> (WriteGuard<'_>, Arc<Snapshot>) {
        if appends_only(&self.snapshot(), table) {
            let guard = self.write_lock.read().await;
            let snapshot = self.snapshot();
            // An exclusive writer may have redefined the table before the lock was taken; no
            // one can while it is held.
            if appends_only(&snapshot, table) {
                return (WriteGuard::Shared { _held: guard }, snapshot);
            }
        }
        self.lock_exclusive().await
    }

    /// Takes the write lock alone, and the latest snapshot under it: nothing else commits a
    /// write until it is released.
    pub(crate) async fn lock_exclusive(&self) -> (WriteGuard<'_>, Arc<Snapshot>) {
        let guard = self.write_lock.write().await;
        (WriteGuard::Exclusive { _held: guard }, self.snapshot())
    }

    /// The changes `plan` makes to `snapshot` (the latest, or a transaction's view), with the
    /// objects they name written; nothing is committed.
    pub(crate) async fn prepare_write(
        &self,
        plan: Plan,
        snapshot: &Arc<Snapshot>,
    ) -> Result<Prepared> {
        match plan {
            Plan::CreateSchema { name } => Ok(Prepared::new(
                vec![Change::CreateSchema { name }],
                "CREATE SCHEMA",
            )),
            Plan::DropSchema { name, tables } => {
                let mut drops = drops_with_state(snapshot, tables);
                drops.push(Change::DropSchema { name });
                Ok(Prepared::new(drops, "DROP SCHEMA"))
            }
            Plan::CreateTable {
                name,
                columns,
                key,
                unique,
                ttl,
                watermark,
                folds,
                publish,
                kafka_format,
                partitions,
                defaults,
                if_not_exists,
                or_replace,
            } => {
                if snapshot.table(&name).is_some() && if_not_exists {
                    return Ok(Prepared::new(Vec::new(), "CREATE TABLE"));
                }
                let mut changes = replaced(snapshot, &name, or_replace);
                let def = TableDef {
                    key,
                    unique,
                    ttl,
                    watermark,
                    folds,
                    publish,
                    kafka_format,
                    partitions,
                    defaults,
                    ..TableDef::new(name, columns, TableKind::Table)
                };
                changes.push(Change::CreateTable { def, initial: None });
                Ok(Prepared::new(changes, "CREATE TABLE"))
            }
            Plan::DropTable {
                name,
                if_exists,
                dependents,
            } => {
                // A macro is hidden from `table` (ADR 0068); the binder named what it drops.
                let Some(table) = snapshot.table(&name).or_else(|| {
                    snapshot.tables.get(&name).filter(|t| {
                        matches!(
                            t.kind,
                            TableKind::Macro { .. } | TableKind::Procedure { .. }
                        )
                    })
                }) else {
                    if if_exists {
                        return Ok(Prepared::new(Vec::new(), "DROP TABLE"));
                    }
                    return Err(pondra_catalog::CatalogError::TableNotFound(name).into());
                };
                let tag = match table.kind {
                    TableKind::Table
                    | TableKind::ValueCounts { .. }
                    | TableKind::JoinState { .. } => "DROP TABLE",
                    TableKind::View { .. } => "DROP VIEW",
                    TableKind::MaterializedView { .. } => "DROP MATERIALIZED VIEW",
                    TableKind::Macro {
                        signature: Some(_), ..
                    } => "DROP FUNCTION",
                    TableKind::Macro { .. } => "DROP MACRO",
                    TableKind::Procedure { .. } => "DROP PROCEDURE",
                };
                let names = dependents.into_iter().chain([name]);
                Ok(Prepared::new(drops_with_state(snapshot, names), tag))
            }
            Plan::Comment { table } => {
                let def = table;
                Ok(Prepared::new(vec![Change::AlterTable { def }], "COMMENT"))
            }
            Plan::AlterColumns { table } => {
                let def = table;
                Ok(Prepared::new(
                    vec![Change::AlterTable { def }],
                    "ALTER TABLE",
                ))
            }
            Plan::RenameTable {
                from,
                to,
                if_exists,
            } => {
                let Some(table) = snapshot.table(&from) else {
                    if if_exists {
                        return Ok(Prepared::new(Vec::new(), "ALTER TABLE"));
                    }
                    return Err(pondra_catalog::CatalogError::TableNotFound(from).into());
                };
                let tag = match table.kind {
                    TableKind::Table => "ALTER TABLE",
                    _ => "ALTER VIEW",
                };
                if !sub_views_of(snapshot, &from).is_empty() {
                    return Err(NodeError::Other(format!(
                        "renaming {from} is not supported yet: its definition reads its sub-views ({from}$sub_1, ...) by name; drop it and create it under the new name"
                    )));
                }
                let mut changes = Vec::new();
                let hidden = snapshot.value_counts_of(&from).into_iter().enumerate();
                let hidden = hidden.map(|(p, t)| (p, t, false)).chain(
                    snapshot
                        .join_states_of(&from)
                        .into_iter()
                        .enumerate()
                        .map(|(p, t)| (p, t, true)),
                );
                for (position, state, is_join) in hidden {
                    let view = to.clone();
                    let (renamed, kind) = match is_join {
                        false => (
                            pondra_catalog::value_counts_name(&to, position),
                            TableKind::ValueCounts { view, position },
                        ),
                        true => (
                            pondra_catalog::join_state_name(&to, position),
                            TableKind::JoinState { view, position },
                        ),
                    };
                    changes.push(Change::RenameTable {
                        from: state.name.clone(),
                        to: renamed.clone(),
                    });
                    let def = TableDef {
                        name: renamed,
                        kind,
                        ..state.as_ref().clone()
                    };
                    changes.push(Change::AlterTable { def });
                }
                changes.push(Change::RenameTable { from, to });
                Ok(Prepared::new(changes, tag))
            }
            Plan::Insert {
                table,
                input,
                replace,
            } => {
                let rows = self.run_query(input, snapshot.clone(), Vec::new()).await?;
                let (count, changes) = self
                    .insert_changes(snapshot, &table, &rows, Vec::new(), replace)
                    .await?;
                Ok(Prepared::new(changes, format!("INSERT 0 {count}")).with_rows(rows))
            }
            Plan::CreateMaterializedView {
                name,
                sql,
                view,
                if_not_exists,
            } => {
                if view_exists(snapshot, &name, if_not_exists)? {
                    return Ok(Prepared::new(Vec::new(), "CREATE MATERIALIZED VIEW"));
                }
                let creates = self.create_view(snapshot, name, sql, &view).await?;
                Ok(Prepared::new(creates, "CREATE MATERIALIZED VIEW"))
            }
            Plan::CreateNestedView {
                name,
                statements,
                if_not_exists,
            } => {
                if view_exists(snapshot, &name, if_not_exists)? {
                    return Ok(Prepared::new(Vec::new(), "CREATE MATERIALIZED VIEW"));
                }
                let mut creates = Vec::new();
                let mut current = snapshot.clone();
                for (view_name, sql) in statements {
                    if current.tables.contains_key(&view_name) {
                        return Err(pondra_catalog::CatalogError::TableExists(view_name).into());
                    }
                    let view = pondra_planner::plan_view_statement(&current, &sql)?;
                    creates.extend(self.create_view(&current, view_name, sql, &view).await?);
                    current = self.after(snapshot, &creates)?;
                }
                Ok(Prepared::new(creates, "CREATE MATERIALIZED VIEW"))
            }
            Plan::CreateTableAs {
                name,
                columns,
                input,
                if_not_exists,
                temporary,
                or_replace,
            } => {
                debug_assert!(
                    !temporary,
                    "temporary tables are the session's, not the lake's"
                );
                if snapshot.table(&name).is_some() && !or_replace {
                    if if_not_exists {
                        return Ok(Prepared::new(Vec::new(), "CREATE TABLE"));
                    }
                    return Err(pondra_catalog::CatalogError::TableExists(name).into());
                }
                let mut changes = replaced(snapshot, &name, or_replace);
                let def = TableDef::new(name, columns, TableKind::Table);
                let rows = self.run_query(input, snapshot.clone(), Vec::new()).await?;
                let count: usize = rows.iter().map(|b| b.num_rows()).sum();
                let initial = if count > 0 {
                    Some(self.segment(&def, &rows).await?)
                } else {
                    None
                };
                changes.push(Change::CreateTable { def, initial });
                Ok(Prepared::new(changes, format!("SELECT {count}")))
            }
            Plan::CreateView {
                view,
                if_not_exists,
                or_replace,
            } => {
                // A macro (ADR 0068) is committed as a view is.
                let (what, tag) = match &view.kind {
                    TableKind::Macro {
                        signature: Some(_), ..
                    } => ("function", "CREATE FUNCTION"),
                    TableKind::Macro { .. } => ("macro", "CREATE MACRO"),
                    TableKind::Procedure { .. } => ("procedure", "CREATE PROCEDURE"),
                    _ => ("view", "CREATE VIEW"),
                };
                let mut changes = Vec::new();
                // `tables`, not `table`: a macro is hidden from the names of tables.
                if let Some(existing) = snapshot.tables.get(&view.name) {
                    let same_kind = std::mem::discriminant(&existing.kind)
                        == std::mem::discriminant(&view.kind);
                    if or_replace && same_kind {
                        changes.push(Change::DropTable {
                            name: view.name.clone(),
                        });
                    } else if or_replace {
                        return Err(NodeError::Other(format!(
                            "{} is not a {what}: CREATE OR REPLACE cannot replace it",
                            view.name
                        )));
                    } else if if_not_exists {
                        return Ok(Prepared::new(Vec::new(), tag));
                    } else if what == "macro" || what == "function" {
                        let name = view.name.trim_end_matches("$macro");
                        let name = name.trim_end_matches(pondra_catalog::FUNCTION_SUFFIX);
                        return Err(NodeError::Other(format!("{what} {name} already exists")));
                    } else {
                        return Err(pondra_catalog::CatalogError::TableExists(view.name).into());
                    }
                }
                changes.push(Change::CreateTable {
                    def: view,
                    initial: None,
                });
                Ok(Prepared::new(changes, tag))
            }
            Plan::CreateIndex {
                table,
                index,
                if_not_exists,
            } => {
                if snapshot.table_with_index(&index.name).is_some() {
                    if if_not_exists {
                        return Ok(Prepared::new(Vec::new(), "CREATE INDEX"));
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
                // A vector index's graphs of the files there now commit with it (ADR 0082).
                let graphs = match index.vector {
                    Some(_) => self.graphs_of_new_index(snapshot, &def, &index).await?,
                    None => Vec::new(),
                };
                def.indexes.push(index);
                let mut changes = vec![Change::AlterTable { def }];
                changes.extend(graphs);
                Ok(Prepared::new(changes, "CREATE INDEX"))
            }
            Plan::DropIndex { name, if_exists } => {
                let Some(table) = snapshot.table_with_index(&name) else {
                    if if_exists {
                        return Ok(Prepared::new(Vec::new(), "DROP INDEX"));
                    }
                    return Err(NodeError::Other(format!("index {name} does not exist")));
                };
                let mut def = table.as_ref().clone();
                def.indexes.retain(|i| i.name != name);
                Ok(Prepared::new(
                    vec![Change::AlterTable { def }],
                    "DROP INDEX",
                ))
            }
            Plan::Rewrite { table, input, kind } => {
                let (rows, changes, written) = self.rewrite(snapshot, &table, input, kind).await?;
                let verb = match kind {
                    pondra_planner::RewriteKind::Update => "UPDATE",
                    pondra_planner::RewriteKind::Delete => "DELETE",
                    pondra_planner::RewriteKind::Merge => "MERGE",
                    pondra_planner::RewriteKind::Upsert => "INSERT 0",
                };
                Ok(Prepared::new(changes, format!("{verb} {rows}")).with_rows(written))
            }
            Plan::CreateSecret {
                name,
                options,
                or_replace,
                if_not_exists,
            } => {
                self.prepare_create_secret(snapshot, name, options, or_replace, if_not_exists)
                    .await
            }
            Plan::DropSecret { name, if_exists } => {
                crate::models::secrets::prepare_drop_secret(snapshot, name, if_exists)
            }
            Plan::Query(_)
            | Plan::Returning { .. }
            | Plan::Nothing { .. }
            | Plan::Explain(_)
            | Plan::ExplainAnalyze(_)
            | Plan::Checkpoint
            | Plan::SetVariable { .. }
            | Plan::WithWrites { .. }
            | Plan::Vacuum { .. }
            | Plan::CopyTo { .. } => {
                unreachable!("not a write")
            }
        }
    }

    /// Commits `changes`, prepared against `base`, if nothing committed since conflicts with
    /// them (ADR 0045); returns the commit number. Changes that are never committed leave the
    /// objects they name unreferenced: those are deleted.
    pub(crate) async fn commit_changes(
        &self,
        base: &Arc<Snapshot>,
        changes: Vec<Change>,
    ) -> Result<u64> {
        if changes.is_empty() {
            return Ok(base.commit);
        }
        let objects = crate::sessions::transaction::objects_named(&changes);
        let base = base.clone();
        self.commit_or_delete(objects, move |latest| {
            crate::sessions::transaction::rebase(&base, latest, changes)
        })
        .await
    }

    /// Commits the changes `prepare` makes for the latest snapshot (`Catalog::commit_with`);
    /// when it refuses or the commit fails, deletes `objects`, which only those changes name.
    pub(crate) async fn commit_or_delete<E>(
        &self,
        objects: Vec<String>,
        prepare: impl FnOnce(&Snapshot) -> Result<Vec<Change>, E> + Send + 'static,
    ) -> Result<u64, E>
    where
        E: From<pondra_catalog::CatalogError> + Send + 'static,
    {
        self.commit_or_delete_in_line(objects, prepare, None).await
    }

    /// As `commit_or_delete`, for an append in its producer's line (ADR 0078): handed to the
    /// committer once the append before it in line has been.
    pub(crate) async fn commit_or_delete_in_line<E>(
        &self,
        objects: Vec<String>,
        prepare: impl FnOnce(&Snapshot) -> Result<Vec<Change>, E> + Send + 'static,
        place: Option<&crate::writes::producer_lines::LinePlace>,
    ) -> Result<u64, E>
    where
        E: From<pondra_catalog::CatalogError> + Send + 'static,
    {
        use crate::writes::producer_lines::Stage;
        let committed = match place {
            None => self.catalog.commit_with(prepare).await,
            Some(place) => {
                let turn = place.wait_before(Stage::Handed);
                let handed = || place.handed();
                self.catalog.commit_in_turn(prepare, turn, handed).await
            }
        };
        if committed.is_err() {
            self.delete_objects(objects).await;
        }
        committed
    }

    /// Deletes objects no commit names (a rolled-back transaction's), as far as it can.
    pub(crate) async fn delete_objects(&self, paths: Vec<String>) {
        for path in paths {
            if let Err(e) = self.lake.delete(&path).await {
                eprintln!("could not delete the unreferenced object {path}: {e}");
            }
        }
    }

    /// The changes that append `batches` (in the table's columns) to `table` of `snapshot`
    /// and to every view over it, after `extra` changes; and the rows written. Rows of keys a
    /// merge table holds are folded into its rows, unless `replace` (ADR 0050).
    pub(crate) async fn insert_changes(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        batches: &[RecordBatch],
        extra: Vec<Change>,
        replace: bool,
    ) -> Result<(usize, Vec<Change>)> {
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
            return Ok((0, extra));
        }
        check_not_null(table, &batch)?;
        let batch = crate::tables::keyed::checked_text(table, batch)?;
        let mut extra = extra;
        let arrived = std::slice::from_ref(&batch);
        extra.extend(event_time_change(
            snapshot,
            table,
            arrived,
            Written::Arrived,
        )?);
        let (batch, replaced) = match is_constrained(table) {
            false => (batch, Default::default()),
            true => {
                let fold = !replace && !table.folds.is_empty();
                self.constrained_rows(snapshot, table, batch, fold).await?
            }
        };
        let mut changes = extra;
        if !replaced.addresses.is_empty() {
            // An upsert that replaced rows: recorded for the change feed, and retracted from
            // the views over the table.
            let addresses = &replaced.addresses;
            let mut own = crate::tables::rewrite::deletion_changes(snapshot, table, addresses);
            own.push(
                self.append_change(table, std::slice::from_ref(&batch))
                    .await?,
            );
            let mut record = crate::tables::change_records::ChangedRows::default();
            for columns in &replaced.rows {
                record.removed(table, columns, "update_preimage")?;
            }
            let updates = replaced.replaced_by(table, &batch)?;
            let inserts = arrow::compute::not(&updates)?;
            for (keep, kind) in [(&updates, "update_postimage"), (&inserts, "insert")] {
                let rows = arrow::compute::filter_record_batch(&batch, keep)?;
                record.added(table, rows.columns(), kind)?;
            }
            own.extend(self.record_changes(table, record).await?);
            let removed = replaced
                .rows
                .iter()
                .map(|columns| crate::tables::rewrite::table_part(table, columns))
                .collect::<Result<Vec<_>>>()?;
            let added = std::slice::from_ref(&batch);
            let views = self
                .maintain_views(snapshot, table, added, &removed, &own)
                .await?;
            changes.extend(own);
            changes.extend(views);
            return Ok((rows, changes));
        }
        changes.push(
            self.append_change(table, std::slice::from_ref(&batch))
                .await?,
        );
        let mut followed = Vec::new();
        for view in snapshot.views_over(&table.name) {
            let plan = load_view(snapshot, &view)?;
            let added = std::slice::from_ref(&batch);
            // A view over joins derives its change from its plan, a count(DISTINCT) from its
            // counts, and a view that views read passes its change on to them (ADR 0054,
            // 0057); a view that emits on window close drops closed windows' changes (ADR
            // 0055).
            let direct =
                plan.stream.is_none() && plan.distincts.is_empty() && plan.window_close.is_none();
            if !direct || !snapshot.views_over(&view.name).is_empty() {
                followed.push(view);
                continue;
            }
            if let Some(counts) = self
                .count_values(snapshot, &view, &plan, (added, &[]), None)
                .await?
            {
                changes.extend(self.counts_changes(snapshot, &counts).await?);
            }
            let state = self
                .run_query(plan.maintain, snapshot.clone(), vec![batch.clone()])
                .await?;
            changes.push(self.append_change(&view, &state).await?);
        }
        if !followed.is_empty() {
            let input = crate::views::view_changes::InputChange {
                table: table.clone(),
                added: vec![batch],
                removed: Vec::new(),
            };
            let own = changes.clone();
            let kept = self
                .maintain_reached(snapshot, followed, input, &own)
                .await?;
            changes.extend(kept);
        }
        Ok((rows, changes))
    }

    /// The changes that create a materialized view, and the count tables of its mins and
    /// maxes (ADR 0052), filled from the rows its table holds in `snapshot`.
    async fn create_view(
        &self,
        snapshot: &Arc<Snapshot>,
        name: String,
        sql: String,
        view: &ViewPlan,
    ) -> Result<Vec<Change>> {
        let tables = view.tables();
        for table in &tables {
            if snapshot.table(&table.name).map(|t| t.id) != Some(table.id) {
                return Err(NodeError::Other(format!(
                    "table {} changed while the view was planned",
                    table.name
                )));
            }
        }
        let rows = view.rows_plan(snapshot)?;
        let existing = self.run_query(rows, snapshot.clone(), Vec::new()).await?;
        let mut changes = self
            .create_value_counts(snapshot, &name, view, &existing)
            .await?;
        if let Some(stream) = &view.stream {
            changes.extend(self.create_join_states(snapshot, &name, stream).await?);
        }
        let kind = TableKind::MaterializedView {
            sql,
            base_table: tables[0].name.clone(),
            also_reads: tables[1..].iter().map(|t| t.name.clone()).collect(),
        };
        let def = TableDef::new(name, view.state_columns.clone(), kind);
        let state = self
            .run_query(view.initial_plan(), snapshot.clone(), existing)
            .await?;
        let state_rows: usize = state.iter().map(|b| b.num_rows()).sum();
        let initial = if state_rows > 0 {
            let (rows, payload) = self.segment(&def, &state).await?;
            Some((rows, payload))
        } else {
            None
        };
        changes.push(Change::CreateTable { def, initial });
        Ok(changes)
    }

    pub(crate) async fn append_change(
        &self,
        table: &TableDef,
        batches: &[RecordBatch],
    ) -> Result<Change> {
        let (rows, payload) = self.segment(table, batches).await?;
        Ok(Change::AppendSegment {
            table_id: table.id,
            rows,
            payload,
            ranges: pondra_catalog::column_ranges(batches),
            column_ids: table.stored_column_ids(),
            partition: 0,
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

/// The changes dropping the tables and views `names`, with the count tables (ADR 0052) and
/// join states (ADR 0054) of each view first, and each view's sub-views after it (ADR 0057).
/// What `CREATE OR REPLACE` drops first: the table of the name, if there is one (the binder
/// checked it is a table no view reads).
fn replaced(snapshot: &Snapshot, name: &str, or_replace: bool) -> Vec<Change> {
    match or_replace && snapshot.table(name).is_some() {
        true => drops_with_state(snapshot, [name.to_string()]),
        false => Vec::new(),
    }
}

fn drops_with_state(snapshot: &Snapshot, names: impl IntoIterator<Item = String>) -> Vec<Change> {
    let mut drops = Vec::new();
    let mut dropped = std::collections::HashSet::new();
    for name in names {
        let subs = sub_views_of(snapshot, &name);
        for name in std::iter::once(name).chain(subs) {
            if !dropped.insert(name.clone()) {
                continue;
            }
            let hidden = snapshot.value_counts_of(&name).into_iter();
            for state in hidden.chain(snapshot.join_states_of(&name)) {
                drops.push(Change::DropTable {
                    name: state.name.clone(),
                });
            }
            drops.push(Change::DropTable { name });
        }
    }
    drops
}

/// Whether a view to create as `name` exists, and `IF NOT EXISTS` lets the statement do
/// nothing; an error when it exists without.
fn view_exists(snapshot: &Snapshot, name: &str, if_not_exists: bool) -> Result<bool> {
    match (snapshot.table(name).is_some(), if_not_exists) {
        (false, _) => Ok(false),
        (true, true) => Ok(true),
        (true, false) => Err(pondra_catalog::CatalogError::TableExists(name.to_string()).into()),
    }
}

/// The sub-views of materialized view `view` (ADR 0057): the views named `<view>$sub_<n>`.
fn sub_views_of(snapshot: &Snapshot, view: &str) -> Vec<String> {
    let prefix = format!("{view}$sub_");
    let is_sub_view = |name: &str, table: &TableDef| {
        let number = name.strip_prefix(&prefix);
        let numbered =
            number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        numbered && table.is_materialized_view()
    };
    let found = snapshot.tables.iter().filter(|(n, t)| is_sub_view(n, t));
    found.map(|(n, _)| n.clone()).collect()
}
