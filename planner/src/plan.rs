use std::sync::Arc;

use pondra_catalog::{Column, Index, TableDef};

use crate::logical::LogicalPlan;
use crate::view::ViewPlan;

/// A bound statement, ready to run.
#[derive(Debug)]
pub enum Plan {
    /// A query whose rows go back to the client.
    Query(LogicalPlan),
    CreateTable {
        name: String,
        columns: Vec<Column>,
        /// The PRIMARY KEY's columns, if it has one.
        key: Vec<String>,
        /// The column sets of its UNIQUE constraints.
        unique: Vec<Vec<String>>,
        /// `WITH (ttl = ..., ttl_column = ...)`.
        ttl: Option<pondra_catalog::Ttl>,
        /// `WATERMARK FOR ...` (ADR 0055).
        watermark: Option<pondra_catalog::Watermark>,
        /// `WITH (merge = '...')`: a merge table's folds (ADR 0050).
        folds: std::collections::BTreeMap<String, pondra_catalog::Fold>,
        /// `WITH (publish = '...')`: the formats it is published in (ADR 0058).
        publish: Vec<pondra_catalog::TableFormat>,
        /// `WITH (kafka_format = '...')` (ADR 0077).
        kafka_format: pondra_catalog::KafkaFormat,
        /// `WITH (partitions = N)`: its Kafka partitions (ADR 0079).
        partitions: u16,
        /// Each column's `DEFAULT`, as SQL text (ADR 0073).
        defaults: std::collections::BTreeMap<String, String>,
        if_not_exists: bool,
        /// `CREATE OR REPLACE TABLE`: a table of the name is dropped in the same commit.
        or_replace: bool,
    },
    DropTable {
        name: String,
        if_exists: bool,
        /// The materialized views over it, dropped with it (DROP ... CASCADE).
        dependents: Vec<String>,
    },
    /// `CREATE SCHEMA name`.
    CreateSchema {
        name: String,
    },
    /// `DROP SCHEMA name [CASCADE]`: its tables (and the materialized views reading them,
    /// first) go with it.
    DropSchema {
        name: String,
        tables: Vec<String>,
    },
    /// A statement with nothing to do (`CREATE SCHEMA IF NOT EXISTS public`), and its tag.
    Nothing {
        tag: &'static str,
    },
    /// `COMMENT ON TABLE | VIEW | COLUMN`: the table's definition with its comments changed.
    Comment {
        table: TableDef,
    },
    /// `ALTER TABLE t RENAME COLUMN | ADD COLUMN | DROP COLUMN`: the table's definition with its
    /// columns changed. Data files and log segments name columns by id, so none is rewritten.
    AlterColumns {
        table: TableDef,
    },
    /// `ALTER TABLE | VIEW from RENAME TO to`.
    RenameTable {
        from: String,
        to: String,
        if_exists: bool,
    },
    /// Appends the rows of `input` (already in the table's column order and types).
    Insert {
        table: Arc<TableDef>,
        input: LogicalPlan,
        /// `INSERT OR REPLACE`: a merge table's rows are replaced, not folded.
        replace: bool,
    },
    /// `CREATE TABLE ... AS SELECT`: the table and its first rows in one commit.
    CreateTableAs {
        name: String,
        columns: Vec<Column>,
        input: LogicalPlan,
        if_not_exists: bool,
        /// `CREATE TEMPORARY TABLE`: the session's own, gone with it.
        temporary: bool,
        /// `CREATE OR REPLACE TABLE ... AS`: a table of the name is dropped in the same commit.
        or_replace: bool,
    },
    /// `COPY ... TO 'file'`: the rows of `input` written to a local Parquet or CSV file.
    CopyTo {
        input: LogicalPlan,
        path: String,
    },
    CreateMaterializedView {
        name: String,
        sql: String,
        view: Box<ViewPlan>,
        if_not_exists: bool,
    },
    /// A materialized view that nests aggregates (ADR 0057): `statements` create its
    /// sub-views, then the view `name` over them (each a name and a CREATE MATERIALIZED VIEW),
    /// each planned against the catalog the ones before it make.
    CreateNestedView {
        name: String,
        statements: Vec<(String, String)>,
        if_not_exists: bool,
    },
    /// Records an index on a table (ADR 0005: no index structure is built).
    CreateIndex {
        table: String,
        index: Index,
        if_not_exists: bool,
    },
    DropIndex {
        name: String,
        if_exists: bool,
    },
    /// A view that stores nothing (its `id` is assigned by the commit). `or_replace` replaces
    /// a view of the name in the same commit.
    CreateView {
        view: TableDef,
        if_not_exists: bool,
        or_replace: bool,
    },
    /// UPDATE, DELETE, MERGE and INSERT ... ON CONFLICT: `input` yields what changes (see
    /// [`RewriteKind`]); each row it deletes is named by its address (ADR 0048).
    Rewrite {
        table: Arc<TableDef>,
        input: LogicalPlan,
        kind: RewriteKind,
    },
    /// Moves every waiting row of the log tail into Parquet.
    Checkpoint,
    /// `VACUUM [FULL] [table]`: compacts the table's data files (every table's) now, by the
    /// compactor's policy, or with FULL each table's files into one.
    Vacuum {
        table: Option<String>,
        full: bool,
    },
    /// Prints the plan of a query: the plan's text (with `EXPLAIN (VERBOSE)`, the plan as
    /// bound and after each optimizer pass that changed it).
    Explain(String),
    /// Runs a query and prints its plan with the rows and time of each operator.
    ExplainAnalyze(LogicalPlan),
    /// A write with RETURNING (ADR 0072): `write` (an `Insert` or `Rewrite`), then `returning`
    /// over an `Input` leaf of the rows it wrote, in the table's columns.
    Returning {
        write: Box<Plan>,
        returning: LogicalPlan,
    },
    /// A statement whose top-level WITH holds writes (ADR 0074): each write with the number
    /// of the `Returned` working table its CTE's name reads, then the statement's own query or
    /// write, all on one snapshot and in one commit.
    WithWrites {
        writes: Vec<(usize, Plan)>,
        query: Box<Plan>,
    },
    /// `SET VARIABLE name = expr`: `value` gives one row of one column, the variable's value;
    /// without one, `RESET VARIABLE name`.
    SetVariable {
        name: String,
        value: Option<LogicalPlan>,
    },
    /// `CREATE [OR REPLACE] [PERSISTENT] SECRET name (TYPE t, NAME 'value', ...)` (ADR 0082):
    /// the options are sealed as the statement runs, and kept under `e/<name>`.
    CreateSecret {
        name: String,
        options: pondra_catalog::SecretOptions,
        or_replace: bool,
        if_not_exists: bool,
    },
    /// `DROP [PERSISTENT] SECRET [IF EXISTS] name`.
    DropSecret {
        name: String,
        if_exists: bool,
    },
}

impl Plan {
    /// The logical plans the statement runs, to optimize.
    pub(crate) fn logical_plans_mut(&mut self) -> Vec<&mut LogicalPlan> {
        match self {
            Plan::Query(plan) | Plan::ExplainAnalyze(plan) => vec![plan],
            Plan::Insert { input, .. }
            | Plan::CreateTableAs { input, .. }
            | Plan::CopyTo { input, .. }
            | Plan::Rewrite { input, .. } => vec![input],
            Plan::SetVariable { value, .. } => value.iter_mut().collect(),
            Plan::Returning { write, returning } => {
                let mut plans = write.logical_plans_mut();
                plans.push(returning);
                plans
            }
            Plan::WithWrites { writes, query } => {
                let mut plans: Vec<&mut LogicalPlan> = writes
                    .iter_mut()
                    .flat_map(|(_, write)| write.logical_plans_mut())
                    .collect();
                plans.extend(query.logical_plans_mut());
                plans
            }
            _ => Vec::new(),
        }
    }
}

/// What a rewrite does with the rows it touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteKind {
    /// `input` yields the new version of each row changed, in the table's columns, then the
    /// address of the old version, the old version, and its commit version and time.
    Update,
    /// `input` yields each row deleted, its commit version and time, and its address.
    Delete,
    /// MERGE INTO: `input` yields the target's rows and the source rows it inserts, in the
    /// table's columns as they will be, then whether the statement touched the row, whether
    /// it stays, whether it is a target row that several source rows matched with an action
    /// (an error), the target row's address (NULL for a source row), and the target row as it
    /// was, with its commit version and time.
    Merge,
    /// INSERT ... ON CONFLICT: a MERGE, reported as an INSERT.
    Upsert,
}
