use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_catalog::{Catalog, CatalogError, Snapshot};
use pondra_exec::{ExecContext, MemoryPool, StatementControl, StopReason};
use pondra_parser::ParsedStatement;
use pondra_planner::{
    Binder, ExternalTable, LogicalPlan, PhysicalPlan, Plan, create_physical_plan,
};
use pondra_storage::{Lake, ObjectCache};

use crate::lead::leader::{Term, take_lead};
use crate::sessions::session::Session;
use crate::sessions::temporary::TemporaryTables;
use crate::sessions::transaction::Transaction;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

tokio::task_local! {
    /// The control of the statement the current task runs (`Node::execute_in`).
    pub(crate) static CONTROL: Arc<StatementControl>;
    /// The rows the writes in the running statement's WITH returned, by the number of the
    /// working table that reads them (ADR 0074): every query the statement runs sees them.
    pub(crate) static RETURNED: Arc<Vec<(usize, Vec<RecordBatch>)>>;
}

/// How a node tiers and cleans up.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Rows wait this long in the log tail before background tiering moves them into Parquet.
    pub tier_after: Duration,
    /// Replaced objects are deleted this long after the commit that replaced them.
    pub retain: Duration,
    /// The database name clients know the lake by (`current_database()`); Pondra's default
    /// when `None`.
    pub database: Option<String>,
    /// The memory queries may hold before sorts, joins and aggregations spill to disk. Nodes
    /// of one process share it.
    pub memory: Arc<MemoryPool>,
    /// Local copies of a remote lake's immutable objects (ADR 0046); none for a folder.
    pub cache: Option<Arc<ObjectCache>>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            tier_after: Duration::from_secs(10),
            retain: Duration::from_secs(60),
            database: None,
            memory: MemoryPool::with_default_limit(),
            cache: None,
        }
    }
}

/// A running Pondra process on one lake: it leads (or hands its commits to the process that
/// does), holds the catalog and runs statements.
pub struct Node {
    pub(crate) lake: Lake,
    pub(crate) catalog: Catalog,
    pub(crate) options: NodeOptions,
    /// The term this node leads, or whose leader it follows.
    pub(crate) term: std::sync::atomic::AtomicU64,
    started: Instant,
    /// Held by every write until its commit is durable (`writes/commit.rs` `lock_for_append`): shared
    /// by appends to plain tables, which prepare in parallel and are grouped into one catalog
    /// commit (ADR 0046); exclusive for every other write, which plans against the commit it
    /// follows.
    pub(crate) write_lock: tokio::sync::RwLock<()>,
    /// Serializes tiering passes.
    pub(crate) tier_lock: tokio::sync::Mutex<()>,
    /// Parquet files registered as tables for this process, read in place.
    external: std::sync::RwLock<HashMap<String, Arc<ExternalTable>>>,
    /// What the publisher last wrote of each published table's formats (ADR 0058).
    pub(crate) published: crate::publishing::publish::PublishedVersions,
    /// Its peers for spread queries, its default and its measures (ADR 0076).
    pub(crate) spread: crate::spread::SpreadState,
    /// Producers' appends in flight, in line (ADR 0078).
    pub(crate) lines: Arc<crate::writes::producer_lines::ProducerLines>,
    /// Where Python procedures run, on a serving node (ADR 0081).
    pub(crate) python:
        std::sync::RwLock<Option<Arc<dyn crate::sessions::procedures::PythonRunner>>>,
}

impl Node {
    /// Opens the lake in a folder (created if missing) and takes its lead.
    pub async fn open_folder(dir: &Path, options: NodeOptions) -> Result<Arc<Node>> {
        let lake = Lake::open_folder(dir)?;
        Node::open(lake, options).await
    }

    /// Opens the lake at a path or a URL (`s3://bucket/prefix`, `gs://`, `az://`, `file://`)
    /// and takes its lead.
    pub async fn open_at(location: &str, options: NodeOptions) -> Result<Arc<Node>> {
        let lake = Lake::open(location, options.cache.clone()).await?;
        Node::open(lake, options).await
    }

    /// A node on a lake held in memory, gone when the process ends: for work that reads only
    /// files outside any lake.
    pub async fn open_in_memory(options: NodeOptions) -> Result<Arc<Node>> {
        let store = Arc::new(object_store::memory::InMemory::new());
        Node::open(Lake::from_store(store, "memory"), options).await
    }

    /// Opens a lake and takes its lead: any earlier writer is fenced.
    pub async fn open(lake: Lake, options: NodeOptions) -> Result<Arc<Node>> {
        Node::open_leading(lake, options, false).await
    }

    /// Opens a lake and takes its lead for a server, which beats for its term (ADR 0053).
    pub async fn open_to_beat(lake: Lake, options: NodeOptions) -> Result<Arc<Node>> {
        Node::open_leading(lake, options, true).await
    }

    async fn open_leading(lake: Lake, options: NodeOptions, beats: bool) -> Result<Arc<Node>> {
        let term = take_lead(&lake, &node_name(), beats).await?;
        let catalog = Catalog::open(&lake, options.retain).await?;
        Ok(Node::assemble(lake, catalog, options, term))
    }

    /// Opens a lake another process leads (ADR 0053): the catalog is read without fencing
    /// anyone, and every commit is handed to `leader`, the leader of term `term` (none: every
    /// commit is refused, on a node that only reads).
    pub async fn open_following(
        lake: Lake,
        options: NodeOptions,
        leader: Option<Arc<dyn pondra_catalog::Leader>>,
        term: u64,
    ) -> Result<Arc<Node>> {
        let catalog =
            Catalog::open_forwarding(&lake, leader, producer_name(), options.retain).await?;
        Ok(Node::assemble(
            lake,
            catalog,
            options,
            Term { number: term },
        ))
    }

    fn assemble(lake: Lake, catalog: Catalog, options: NodeOptions, term: Term) -> Arc<Node> {
        Arc::new(Node {
            lake,
            catalog,
            options,
            term: term.number.into(),
            started: Instant::now(),
            write_lock: tokio::sync::RwLock::new(()),
            tier_lock: tokio::sync::Mutex::new(()),
            external: std::sync::RwLock::new(HashMap::new()),
            published: Default::default(),
            spread: Default::default(),
            lines: Default::default(),
            python: Default::default(),
        })
    }

    /// Whether this process leads the lake (else it hands its commits to the leader).
    pub fn leads(&self) -> bool {
        self.catalog.leads()
    }

    /// The lake this node runs on.
    pub fn lake(&self) -> &Lake {
        &self.lake
    }

    pub fn term(&self) -> Term {
        Term {
            number: self.term.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The latest committed state of the catalog.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.catalog.snapshot()
    }

    /// Registers Parquet files (a path or a glob) as a table for this process, read in place.
    pub fn register_parquet(&self, name: &str, pattern: &str) -> Result<()> {
        let table = ExternalTable::open(name, pattern)?;
        self.external
            .write()
            .expect("external tables lock")
            .insert(name.to_string(), table);
        Ok(())
    }

    /// A binder over `snapshot` that sees the session's external tables and the lake's name.
    fn binder<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        external: &'a HashMap<String, Arc<ExternalTable>>,
        temporary: &'a [Arc<pondra_catalog::TableDef>],
    ) -> Binder<'a> {
        let binder = Binder::with_external(snapshot, external).with_temporary(temporary);
        match &self.options.database {
            Some(name) => binder.in_database(name),
            None => binder,
        }
    }

    /// Runs every statement in `sql` in a session of its own, stopping at the first error.
    pub async fn execute(self: &Arc<Self>, sql: &str) -> Result<Vec<StatementResult>> {
        let session = Session::new(None);
        let mut results = Vec::new();
        for statement in pondra_parser::parse_sql(sql)? {
            results.push(self.execute_in(&session, statement).await?);
        }
        Ok(results)
    }

    /// Runs one statement for a client's session: under the session's timeout, stoppable
    /// through the session, in a task of its own. Dropping the returned future (the client
    /// went away) stops the statement at its next check; a write whose commit has begun
    /// still completes, so that the lake never holds half a statement. A panic while running
    /// comes back as an internal error and is logged with the statement.
    pub async fn execute_in(
        self: &Arc<Self>,
        session: &Arc<Session>,
        mut statement: ParsedStatement,
    ) -> Result<StatementResult> {
        if let pondra_parser::Statement::Sql(sql) = &mut statement.statement {
            if let Some(result) = session.run_setting(sql) {
                return result;
            }
            if crate::sessions::prepared::is_prepared_statement(sql) {
                return self.run_prepared_statement(session, sql).await;
            }
            if let Some(order) = session.null_order() {
                pondra_parser::apply_null_order(sql, order);
            }
            if let Some(control) = crate::sessions::transaction::control_of(sql) {
                return self.run_transaction_control(session, control).await;
            }
            if let Some(call) = crate::sessions::procedures::call_of(sql) {
                let call = call.clone();
                return Box::pin(self.call_procedure(session, &call, 0)).await;
            }
        }
        if let pondra_parser::Statement::Task(task) = &statement.statement {
            let task = task.clone();
            return Box::pin(self.run_task_statement(session, &task)).await;
        }
        // The statement runs in the session's transaction, if one is open, and gives it back.
        let transaction = session.take_transaction();
        if transaction.as_ref().is_some_and(Transaction::is_aborted) {
            session.put_transaction(transaction);
            return Err(NodeError::Aborted);
        }
        let kept = transaction.clone();
        let control = session.begin(self.options.memory.clone());
        self.give_models(&control, session);
        let answered = control.clone();
        let running = Running {
            session,
            control: control.clone(),
            finished: false,
        };
        let node = self.clone();
        let text = statement.text.clone();
        let task_session = session.clone();
        let run = async move {
            let mut transaction = transaction;
            let result = node
                .execute_statement_in(&statement, transaction.as_mut(), Some(&task_session))
                .await;
            node.keep_model_answers(&answered).await;
            (result, transaction)
        };
        let outcome = tokio::spawn(CONTROL.scope(control, run)).await;
        running.finish();
        let (result, mut transaction) = match outcome {
            Ok(outcome) => outcome,
            Err(e) if e.is_panic() => (Err(internal_error(&text, e.into_panic())), kept),
            Err(e) => (
                Err(NodeError::Other(format!(
                    "the statement's task failed: {e}"
                ))),
                kept,
            ),
        };
        if result.is_err()
            && let Some(transaction) = &mut transaction
        {
            transaction.abort();
        }
        session.put_transaction(transaction);
        result.map_err(bounded)
    }

    /// The control of the statement the current task runs; one nothing stops for work that
    /// no client asked for (tiering, a node's own queries).
    pub(crate) fn control(&self) -> Arc<StatementControl> {
        CONTROL
            .try_with(Arc::clone)
            .unwrap_or_else(|_| StatementControl::unbounded(self.options.memory.clone()))
    }

    /// The columns the rows of `sql`'s last statement would have, found by binding it without
    /// running it; `None` when that statement returns no rows.
    pub fn result_schema(&self, sql: &str) -> Result<Option<SchemaRef>> {
        self.result_schema_in(None, sql)
    }

    /// `result_schema` as `session` sees the lake: in its transaction's snapshot, when one is
    /// open (a table created earlier in the transaction is there).
    pub fn result_schema_in(
        &self,
        session: Option<&Session>,
        sql: &str,
    ) -> Result<Option<SchemaRef>> {
        let statements = pondra_parser::parse_sql(sql)?;
        let Some(statement) = statements.last() else {
            return Ok(None);
        };
        // CALL and task statements run in a session and return no rows (ADR 0081).
        match &statement.statement {
            pondra_parser::Statement::Task(_) => return Ok(None),
            pondra_parser::Statement::Sql(sql)
                if crate::sessions::procedures::call_of(sql).is_some() =>
            {
                return Ok(None);
            }
            _ => {}
        }
        if let pondra_parser::Statement::Sql(sql) = &statement.statement {
            if crate::sessions::time_zone::is_time_zone_setting(sql) {
                return Ok(crate::sessions::time_zone::result_schema(sql));
            }
            if crate::sessions::session::is_session_setting(sql)
                || crate::sessions::settings::is_process_setting(sql)
            {
                return Ok(crate::sessions::session::setting_schema(sql));
            }
        }
        let snapshot = session
            .and_then(Session::transaction_view)
            .unwrap_or_else(|| self.snapshot());
        let plan = self.bind_in(&snapshot, session, statement, pondra_planner::now_micros())?;
        Ok(answer_schema(&plan))
    }

    /// Binds `statement` over `snapshot` at the moment `micros`, seeing the process's external
    /// tables and the session's temporary ones.
    pub(crate) fn bind_in(
        &self,
        snapshot: &Snapshot,
        session: Option<&Session>,
        statement: &ParsedStatement,
        micros: i64,
    ) -> Result<Plan> {
        let mut external = self.external.read().expect("external tables lock").clone();
        let temporary = match session {
            Some(session) => session.with_temporary(|t| {
                external.extend(t.tables());
                t.definitions()
            }),
            None => Vec::new(),
        };
        let zone = session.map_or_else(|| "UTC".to_string(), Session::time_zone);
        let variables = session.map(Session::variables).unwrap_or_default();
        let optimizer = session.map(Session::optimizer_settings).unwrap_or_default();
        Ok(self
            .binder(snapshot, &external, &temporary)
            .with_time_zone(&zone)
            .at_time(micros)
            .with_variables(&variables)
            .with_optimizer_settings(&optimizer)
            .bind_statement(statement)?)
    }

    /// Runs one parsed statement.
    pub async fn execute_statement(&self, statement: &ParsedStatement) -> Result<StatementResult> {
        let result = self.execute_statement_in(statement, None, None).await;
        result.map_err(bounded)
    }

    /// Runs one parsed statement, in `transaction` when one is given: it then reads the
    /// transaction's snapshot, and a write adds its changes to the transaction instead of
    /// committing them.
    ///
    /// A statement outside a transaction whose rows tiering moved before it committed (ADR
    /// 0048) is run again, a few times; one that loses to a concurrent change fails as a
    /// serialization failure (SQLSTATE 40001).
    async fn execute_statement_in(
        &self,
        statement: &ParsedStatement,
        mut transaction: Option<&mut Transaction>,
        session: Option<&Session>,
    ) -> Result<StatementResult> {
        const ATTEMPTS: usize = 5;
        let outside = transaction.is_none();
        for attempt in 1.. {
            let outcome = self
                .execute_statement_once(statement, transaction.as_deref_mut(), session)
                .await;
            return match outcome {
                Err(NodeError::Catalog(CatalogError::RowsMoved(_)))
                    if outside && attempt < ATTEMPTS =>
                {
                    continue;
                }
                Err(NodeError::Catalog(
                    CatalogError::RowsMoved(_) | CatalogError::DeletedConcurrently(_),
                )) => Err(NodeError::SerializationFailure),
                other => other,
            };
        }
        unreachable!("the attempts end by returning")
    }

    async fn execute_statement_once(
        &self,
        statement: &ParsedStatement,
        transaction: Option<&mut Transaction>,
        session: Option<&Session>,
    ) -> Result<StatementResult> {
        if let pondra_parser::Statement::Sql(sql) = &statement.statement {
            if crate::sessions::settings::is_process_setting(sql) {
                return crate::sessions::settings::run_setting(sql, &self.options.memory);
            }
            if let Some(session) = session
                && let Some(result) = crate::sessions::temporary::drop_temporary(session, sql)
            {
                return result;
            }
        }
        let snapshot = match &transaction {
            Some(transaction) => transaction.view().clone(),
            None => self.snapshot(),
        };
        let micros = pondra_planner::now_micros();
        let plan = self.bind_in(&snapshot, session, statement, micros)?;
        match plan {
            Plan::Query(plan) => {
                let schema = plan.schema();
                let physical = create_physical_plan(&plan);
                let decided = self.decide_spread(physical, &snapshot, session, statement, micros);
                let gatherer = decided
                    .gatherer
                    .map(|g| g as Arc<dyn pondra_exec::Gatherer>);
                let batches = self
                    .run_physical(decided.plan, snapshot, Vec::new(), gatherer, None)
                    .await?;
                Ok(StatementResult::Rows { schema, batches })
            }
            Plan::Explain(text) => {
                let spread = self.explain_spread(&snapshot, session, statement, micros)?;
                Ok(explain_result(&(text + &spread)))
            }
            Plan::ExplainAnalyze(plan) => {
                let started = Instant::now();
                let physical = create_physical_plan(&plan);
                let decided = match crate::spread::inner_query(statement) {
                    Some(query) => self.decide_spread(physical, &snapshot, session, &query, micros),
                    None => crate::spread::Decided::alone(physical),
                };
                let parts = decided.gatherer.clone();
                let (batches, profile) = self
                    .run_profiled(decided.plan, snapshot, decided.gatherer.map(|g| g as _))
                    .await?;
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let total = started.elapsed().as_secs_f64() * 1e3;
                let header = format!("Total: {rows} rows in {total:.3} ms\n");
                let parts = parts.map_or_else(String::new, |g| g.report_text());
                Ok(explain_result(&(header + &profile + &parts)))
            }
            Plan::CopyTo { input, path } => {
                let schema = input.schema();
                let batches = self.run_query(input, snapshot, Vec::new()).await?;
                let rows = crate::writes::copy::write_file(&path, &schema, &batches)?;
                Ok(done(format!("COPY {rows}")))
            }
            Plan::Checkpoint => {
                self.checkpoint().await?;
                Ok(done("CHECKPOINT"))
            }
            Plan::Vacuum { table, full } => {
                self.compact(table.as_deref(), full).await?;
                Ok(done("VACUUM"))
            }
            Plan::Nothing { tag } => Ok(done(tag)),
            Plan::WithWrites { writes, query } => {
                self.run_with_writes(writes, *query, transaction, snapshot)
                    .await
            }
            Plan::SetVariable { name, value } => {
                let session = session.ok_or_else(|| {
                    NodeError::Other("a variable needs a session to belong to".into())
                })?;
                let tag = if value.is_some() { "SET" } else { "RESET" };
                let value = match value {
                    Some(plan) => Some(self.variable_value(&name, plan, snapshot).await?),
                    None => None,
                };
                session.set_variable(name, value);
                Ok(done(tag))
            }
            Plan::CreateTableAs {
                name,
                input,
                if_not_exists,
                temporary: true,
                ..
            } => {
                let session = session.ok_or_else(|| {
                    NodeError::Other("a temporary table needs a session to belong to".into())
                })?;
                self.create_temporary(session, name, input, if_not_exists, snapshot)
                    .await
            }
            Plan::Insert { table, input, .. } if TemporaryTables::is_temporary(table.id) => {
                let session = session.ok_or_else(|| {
                    NodeError::Other("a temporary table needs a session to belong to".into())
                })?;
                self.insert_temporary(session, &table.name, input, snapshot)
                    .await
            }
            Plan::Returning { write, returning } => {
                let schema = returning.schema();
                let batches = match transaction {
                    None => self.write_returning(*write, Some(returning)).await?.1,
                    Some(transaction) => {
                        let mut prepared = self.prepare_write(*write, &snapshot).await?;
                        let batches = self
                            .returned_rows(returning, &snapshot, &mut prepared)
                            .await?;
                        let pending = transaction.base().commit + 1;
                        let view = self.catalog.with_changes(
                            &snapshot,
                            prepared.changes.clone(),
                            pending,
                        )?;
                        transaction.add(prepared.changes, view);
                        batches
                    }
                };
                Ok(StatementResult::Rows { schema, batches })
            }
            write => match transaction {
                None => self.execute_write(write).await,
                Some(transaction) => {
                    let prepared = self.prepare_write(write, &snapshot).await?;
                    let pending = transaction.base().commit + 1;
                    let view =
                        self.catalog
                            .with_changes(&snapshot, prepared.changes.clone(), pending)?;
                    transaction.add(prepared.changes, view);
                    Ok(done(prepared.tag))
                }
            },
        }
    }

    /// Runs a query plan on an executor thread and returns its rows.
    /// The value `SET VARIABLE name = ...` gives the variable: the one value of `plan`.
    async fn variable_value(
        &self,
        name: &str,
        plan: LogicalPlan,
        snapshot: Arc<Snapshot>,
    ) -> Result<pondra_planner::ScalarValue> {
        let batches = self.run_query(plan, snapshot, Vec::new()).await?;
        let mut rows = batches.iter().filter(|b| b.num_rows() > 0);
        match (rows.next(), rows.next()) {
            (Some(batch), None) if batch.num_rows() == 1 => {
                Ok(pondra_planner::ScalarValue::at(batch.column(0).as_ref(), 0))
            }
            _ => Err(NodeError::Other(format!(
                "SET VARIABLE {name} takes one value, not a query of several rows"
            ))),
        }
    }

    pub(crate) async fn run_query(
        &self,
        plan: LogicalPlan,
        snapshot: Arc<Snapshot>,
        input: Vec<RecordBatch>,
    ) -> Result<Vec<RecordBatch>> {
        let physical = create_physical_plan(&plan);
        self.run_physical(physical, snapshot, input, None, None)
            .await
    }

    /// Runs a physical plan on an executor thread and returns its rows; a spread plan's
    /// Gather takes its rows from `gatherer`.
    pub(crate) async fn run_physical(
        &self,
        physical: PhysicalPlan,
        snapshot: Arc<Snapshot>,
        input: Vec<RecordBatch>,
        gatherer: Option<Arc<dyn pondra_exec::Gatherer>>,
        exchanger: Option<Arc<dyn pondra_exec::Exchanger>>,
    ) -> Result<Vec<RecordBatch>> {
        let control = self.control();
        let mut ctx = ExecContext::new(
            self.lake.clone(),
            snapshot,
            tokio::runtime::Handle::current(),
            input,
            control.clone(),
        );
        ctx.gatherer = gatherer;
        ctx.exchanger = exchanger;
        let _ = RETURNED.try_with(|returned| {
            for (id, rows) in returned.iter() {
                ctx.hand_rows(*id, rows.clone());
            }
        });
        let run = move || {
            let _entered = control.enter();
            pondra_exec::execute(&physical, &ctx)
        };
        Ok(on_query_thread(run).await??)
    }

    /// Runs a query plan with a profile; returns its rows and the plan with each operator's
    /// rows and time.
    async fn run_profiled(
        &self,
        physical: PhysicalPlan,
        snapshot: Arc<Snapshot>,
        gatherer: Option<Arc<dyn pondra_exec::Gatherer>>,
    ) -> Result<(Vec<RecordBatch>, String)> {
        let control = self.control();
        let mut ctx = ExecContext::new(
            self.lake.clone(),
            snapshot,
            tokio::runtime::Handle::current(),
            Vec::new(),
            control.clone(),
        );
        ctx.profile = Some(pondra_exec::Profile::default());
        ctx.gatherer = gatherer;
        let run = move || {
            let _entered = control.enter();
            pondra_exec::execute_profiled(&physical, &ctx)
        };
        Ok(on_query_thread(run).await??)
    }

    /// Moves every row waiting in the log tail into Parquet now, publishes the published
    /// tables (ADR 0058), and deletes expired objects.
    pub async fn checkpoint(&self) -> Result<()> {
        self.tier(Duration::ZERO).await?;
        self.index_files().await?;
        self.publish().await?;
        self.collect_garbage().await
    }

    /// Runs tiering and garbage collection every `period` until the node is dropped.
    pub fn spawn_background(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let node = Arc::downgrade(self);
        // The leader's task clock (ADR 0081) runs beside, and stops with, the background work.
        let clock = Node::run_task_clock(node.clone());
        tokio::spawn(async move {
            let clock = tokio::spawn(clock);
            let _stop_clock = AbortOnDrop(clock);
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let Some(node) = node.upgrade() else { break };
                // The leader does the background work (ADR 0053).
                if !node.leads() {
                    continue;
                }
                let tier_after = node.options.tier_after;
                if let Err(e) = node.tier(tier_after).await {
                    eprintln!("background tiering failed: {e}");
                }
                if let Err(e) = node.compact(None, false).await {
                    eprintln!("background compaction failed: {e}");
                }
                if let Err(e) = node.index_files().await {
                    eprintln!("background indexing failed: {e}");
                }
                if let Err(e) = node.publish().await {
                    eprintln!("background publishing failed: {e}");
                }
                if let Err(e) = node.collect_garbage().await {
                    eprintln!("background cleanup failed: {e}");
                }
            }
        })
    }

    /// Closes the catalog; nothing acknowledged is lost (every commit was already durable).
    /// A node that leads marks its term ended, so that the next process leads at once.
    pub async fn close(&self) -> Result<()> {
        let leads = self.leads();
        self.catalog.close().await?;
        if leads {
            crate::lead::leader::end_term(&self.lake, self.term().number).await?;
        }
        Ok(())
    }
}

/// Aborts a task when dropped: with the task that holds it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The name this process gives itself in the lake's terms.
pub(crate) fn node_name() -> String {
    format!("pid-{}", std::process::id())
}

/// A name for this process's commits handed to a leader, unique to this process and this
/// spell of following: a retry of one of them names it again, and the leader commits it once.
pub(crate) fn producer_name() -> String {
    format!("{}-{}", node_name(), crate::object_names::unique_name())
}

/// The columns of the rows `plan` answers with, if it answers with rows.
fn answer_schema(plan: &Plan) -> Option<SchemaRef> {
    match plan {
        Plan::Query(plan)
        | Plan::Returning {
            returning: plan, ..
        } => Some(plan.schema()),
        Plan::Explain(_) | Plan::ExplainAnalyze(_) => Some(plan_schema()),
        Plan::WithWrites { query, .. } => answer_schema(query),
        _ => None,
    }
}

/// Runs `work` on a blocking thread; a panic there becomes the panic of the awaiting task,
/// which `Node::execute_in` turns into an error.
async fn on_query_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(NodeError::Other(format!("query thread failed: {e}"))),
    }
}

/// A statement running for a session. Dropped before it finished (its caller stopped waiting:
/// the client went away), it stops the statement; either way the session forgets it.
struct Running<'s> {
    session: &'s Session,
    control: Arc<StatementControl>,
    finished: bool,
}

impl Running<'_> {
    /// The caller saw the statement end.
    fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.control.stop(StopReason::ClientGone);
        }
        self.session.end(&self.control);
    }
}

/// The error a panic inside a statement becomes; the panic is logged with the statement.
fn internal_error(statement: &str, panic: Box<dyn std::any::Any + Send>) -> NodeError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into());
    let shown: String = statement.chars().take(500).collect();
    eprintln!("internal error: a statement panicked: {message}; statement: {shown}");
    NodeError::Internal(message)
}

/// The one column EXPLAIN returns.
fn plan_schema() -> SchemaRef {
    Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("plan", arrow::datatypes::DataType::Utf8, false),
    ]))
}

fn explain_result(plan: &str) -> StatementResult {
    let schema = plan_schema();
    let column = arrow::array::StringArray::from(vec![plan.trim_end().to_string()]);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).expect("plan batch");
    StatementResult::Rows {
        schema,
        batches: vec![batch],
    }
}

/// `error` with its message cut when it is too long: a message quoting a client's input
/// (a value, a pattern, a statement) never carries all of it back (`bounded_message`).
fn bounded(error: NodeError) -> NodeError {
    let message = error.to_string();
    if message.len() <= pondra_exec::MESSAGE_CHARS {
        return error;
    }
    NodeError::Other(pondra_exec::bounded_message(message))
}
