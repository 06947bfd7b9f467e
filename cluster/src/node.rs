use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_catalog::{Catalog, Snapshot};
use pondra_exec::{ExecContext, MemoryPool};
use pondra_parser::ParsedStatement;
use pondra_planner::{Binder, ExternalTable, LogicalPlan, Plan, create_physical_plan};
use pondra_storage::Lake;

use crate::leader::{Term, take_lead};
use crate::{NodeError, Result};

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
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            tier_after: Duration::from_secs(10),
            retain: Duration::from_secs(60),
            database: None,
            memory: MemoryPool::with_default_limit(),
        }
    }
}

/// What one statement produced.
#[derive(Debug)]
pub enum StatementResult {
    /// Rows for the client.
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// A statement that returns no rows, with its command tag (`INSERT 0 3`, `CREATE TABLE`).
    Done { tag: String },
}

/// A running Pondra process on one lake: it leads, holds the catalog and runs statements.
pub struct Node {
    pub(crate) lake: Lake,
    pub(crate) catalog: Catalog,
    pub(crate) options: NodeOptions,
    term: Term,
    started: Instant,
    /// Serializes writes, so that each one plans against the commit it follows.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    /// Serializes tiering passes.
    pub(crate) tier_lock: tokio::sync::Mutex<()>,
    /// Parquet files registered as tables for this process, read in place.
    external: std::sync::RwLock<HashMap<String, Arc<ExternalTable>>>,
}

impl Node {
    /// Opens the lake in a folder (created if missing) and takes its lead.
    pub async fn open_folder(dir: &Path, options: NodeOptions) -> Result<Arc<Node>> {
        let lake = Lake::open_folder(dir)?;
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
        let node_name = format!("pid-{}", std::process::id());
        let term = take_lead(&lake, &node_name).await?;
        let catalog = Catalog::open(&lake, options.retain).await?;
        Ok(Arc::new(Node {
            lake,
            catalog,
            options,
            term,
            started: Instant::now(),
            write_lock: tokio::sync::Mutex::new(()),
            tier_lock: tokio::sync::Mutex::new(()),
            external: std::sync::RwLock::new(HashMap::new()),
        }))
    }

    pub fn term(&self) -> &Term {
        &self.term
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
    ) -> Binder<'a> {
        let binder = Binder::with_external(snapshot, external);
        match &self.options.database {
            Some(name) => binder.in_database(name),
            None => binder,
        }
    }

    /// Runs every statement in `sql`, stopping at the first error.
    pub async fn execute(&self, sql: &str) -> Result<Vec<StatementResult>> {
        let mut results = Vec::new();
        for statement in pondra_parser::parse_sql(sql)? {
            results.push(self.execute_statement(&statement).await?);
        }
        Ok(results)
    }

    /// The columns the rows of `sql`'s last statement would have, found by binding it without
    /// running it; `None` when that statement returns no rows.
    pub fn result_schema(&self, sql: &str) -> Result<Option<SchemaRef>> {
        let statements = pondra_parser::parse_sql(sql)?;
        let Some(statement) = statements.last() else {
            return Ok(None);
        };
        let snapshot = self.snapshot();
        let external = self.external.read().expect("external tables lock").clone();
        let plan = self
            .binder(&snapshot, &external)
            .bind_statement(statement)?;
        Ok(match plan {
            Plan::Query(plan) => Some(plan.schema()),
            Plan::Explain(_) | Plan::ExplainAnalyze(_) => Some(plan_schema()),
            _ => None,
        })
    }

    /// Runs one parsed statement.
    pub async fn execute_statement(&self, statement: &ParsedStatement) -> Result<StatementResult> {
        if let pondra_parser::Statement::Sql(sql) = &statement.statement
            && crate::settings::is_process_setting(sql)
        {
            return crate::settings::run_setting(sql, &self.options.memory);
        }
        let snapshot = self.snapshot();
        let external = self.external.read().expect("external tables lock").clone();
        let plan = self
            .binder(&snapshot, &external)
            .bind_statement(statement)?;
        match plan {
            Plan::Query(plan) => {
                let schema = plan.schema();
                let batches = self.run_query(plan, snapshot, Vec::new()).await?;
                Ok(StatementResult::Rows { schema, batches })
            }
            Plan::Explain(plan) => Ok(explain_result(&plan.to_string())),
            Plan::ExplainAnalyze(plan) => {
                let started = Instant::now();
                let (batches, profile) = self.run_profiled(plan, snapshot).await?;
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let total = started.elapsed().as_secs_f64() * 1e3;
                let header = format!("Total: {rows} rows in {total:.3} ms\n");
                Ok(explain_result(&(header + &profile)))
            }
            Plan::CopyTo { input, path } => {
                let schema = input.schema();
                let batches = self.run_query(input, snapshot, Vec::new()).await?;
                let rows = crate::copy::write_file(&path, &schema, &batches)?;
                Ok(done(format!("COPY {rows}")))
            }
            Plan::Checkpoint => {
                self.checkpoint().await?;
                Ok(done("CHECKPOINT"))
            }
            write => self.execute_write(write).await,
        }
    }

    /// Runs a query plan on an executor thread and returns its rows.
    pub(crate) async fn run_query(
        &self,
        plan: LogicalPlan,
        snapshot: Arc<Snapshot>,
        input: Vec<RecordBatch>,
    ) -> Result<Vec<RecordBatch>> {
        let physical = create_physical_plan(&plan);
        let ctx = ExecContext::new(
            self.lake.clone(),
            snapshot,
            tokio::runtime::Handle::current(),
            input,
            self.options.memory.clone(),
        );
        let batches = tokio::task::spawn_blocking(move || pondra_exec::execute(&physical, &ctx))
            .await
            .map_err(|e| NodeError::Other(format!("query thread failed: {e}")))??;
        Ok(batches)
    }

    /// Runs a query plan with a profile; returns its rows and the plan with each operator's
    /// rows and time.
    async fn run_profiled(
        &self,
        plan: LogicalPlan,
        snapshot: Arc<Snapshot>,
    ) -> Result<(Vec<RecordBatch>, String)> {
        let physical = create_physical_plan(&plan);
        let mut ctx = ExecContext::new(
            self.lake.clone(),
            snapshot,
            tokio::runtime::Handle::current(),
            Vec::new(),
            self.options.memory.clone(),
        );
        ctx.profile = Some(pondra_exec::Profile::default());
        let run = move || pondra_exec::execute_profiled(&physical, &ctx);
        Ok(tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| NodeError::Other(format!("query thread failed: {e}")))??)
    }

    /// Moves every row waiting in the log tail into Parquet now, and deletes expired objects.
    pub async fn checkpoint(&self) -> Result<()> {
        self.tier(Duration::ZERO).await?;
        self.collect_garbage().await
    }

    /// Runs tiering and garbage collection every `period` until the node is dropped.
    pub fn spawn_background(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let node = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let Some(node) = node.upgrade() else { break };
                let tier_after = node.options.tier_after;
                if let Err(e) = node.tier(tier_after).await {
                    eprintln!("background tiering failed: {e}");
                }
                if let Err(e) = node.collect_garbage().await {
                    eprintln!("background cleanup failed: {e}");
                }
            }
        })
    }

    /// Closes the catalog; nothing acknowledged is lost (every commit was already durable).
    pub async fn close(&self) -> Result<()> {
        self.catalog.close().await?;
        Ok(())
    }
}

pub(crate) fn done(tag: impl Into<String>) -> StatementResult {
    StatementResult::Done { tag: tag.into() }
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
