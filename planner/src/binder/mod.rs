//! The binder: parsed statements to bound plans over one catalog snapshot. As DuckDB's, it is
//! split by kind: a file per statement, clause and FROM item (`query.rs`, `select.rs`,
//! `from.rs`, `where_clause.rs`, ...), and the expressions in `expr/`, a file per kind.

mod all_types;
mod alter;
mod arrays;
mod asof;
mod assign;
mod blobs;
mod catalog_functions;
mod changes;
mod clock;
pub use clock::statement_micros as now_micros;
mod columns_expression;
mod composed_aggregates;
mod date_functions;
mod distinct_on;
mod duckdb_functions;
mod expr;
mod from;
mod functions;
mod group_by;
mod interval_ops;
mod join_subqueries;
mod json_functions;
mod lambdas;
mod lateral;
mod list_picks;
mod macros;
mod maps;
mod math_functions;
mod merge;
mod names;
mod order_by;
mod ordered_set;
mod pg_format;
mod procedures;
mod query;
mod query_state;
mod recursive;
mod samples;
mod schemas;
mod scope;
mod secrets;
mod select;
mod set_ops;
mod sql_functions;
mod star;
mod statements;
mod statistics;
mod structs;
mod subqueries;
mod table_functions;
mod table_options;
mod table_refs;
mod text_functions;
mod ties;
pub(crate) mod time_windows;
mod top_n_aggregates;
mod vectors;
mod where_aliases;
mod where_clause;
mod window;
mod with_writes;

pub(crate) use expr::aggregate_function;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
pub(crate) use table_options::interval_micros;

use arrow::datatypes::DataType;
use pondra_catalog::Snapshot;
use pondra_parser::{ParsedStatement, Statement, ast};

pub use expr::type_name;
use names::first_words;
pub use names::{interval_from_text, object_name};
pub use procedures::procedure_for_call;
use scope::Scope;
pub use scope::normalize;
use statements::describe_columns;
pub use table_functions::table_changes;

use crate::expr::{Expr, WindowExpr};
use crate::external::ExternalTable;
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::optimizer::{OptimizerSettings, optimize_traced, optimize_with};
use crate::plan::Plan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// Binds statements against one catalog snapshot.
pub struct Binder<'a> {
    snapshot: &'a Snapshot,
    /// Parquet tables registered for the session, read in place.
    external: Option<&'a HashMap<String, Arc<ExternalTable>>>,
    /// Common table expressions in scope, innermost last.
    ctes: RefCell<Vec<(String, LogicalPlan)>>,
    /// The scopes of the queries around the subquery being bound, innermost last.
    outer: RefCell<Vec<Scope>>,
    /// Per SELECT being bound, the subqueries in its expressions that become joins, in order of
    /// appearance; each adds one column.
    correlated: RefCell<Vec<Vec<(LogicalPlan, SubqueryKind)>>>,
    /// Per SELECT being bound, its window functions, in order of appearance.
    windows: RefCell<Vec<Vec<WindowExpr>>>,
    /// Per SELECT being bound, its `WINDOW name AS (...)` definitions.
    named_windows: RefCell<Vec<Vec<ast::NamedWindowDefinition>>>,
    /// Per SELECT being bound, the arrays its select list's set-returning functions unnest.
    set_functions: RefCell<Vec<Vec<Expr>>>,
    /// The name the client knows the lake by (`current_database()`, `pg_database`).
    database: &'a str,
    /// How many views this binder's query is inside: each is bound by a binder of its own.
    view_depth: usize,
    /// The session's temporary tables, as the catalog tables list them (their rows are read
    /// through `external`).
    temporary: &'a [Arc<pondra_catalog::TableDef>],
    /// The session's zone (ADR 0067): instants are typed with it, so that casts to and from
    /// them, and their text, use its rules.
    time_zone: &'a str,
    /// When the statement was bound, in microseconds since the epoch: what `now()` gives.
    statement_micros: i64,
    /// The table whose scans carry the hidden row address: the one an UPDATE, DELETE or MERGE
    /// being bound changes (ADR 0048).
    addressed: Option<u64>,
    /// Whether scans of tables carry the hidden system columns: only when the statement
    /// names one, so that the plans of other statements stay as they were.
    system_columns: bool,
    /// Whether scans of tables carry the hidden row number `rowid`: likewise only when the
    /// statement names it (ADR 0075).
    row_ids: bool,
    /// Whether scans of tables carry each row's offset `_offset`: likewise only when the
    /// statement names it (ADR 0077).
    offsets: bool,
    /// Whether a materialized view is read as a leaf (a scan of its rows as a query sees them)
    /// rather than through its read plan: how a view over views is planned (ADR 0054).
    views_as_leaves: bool,
    /// What the session turned off in the optimizer (`SET disabled_optimizers`); none when
    /// `None`.
    optimizer: Option<&'a OptimizerSettings>,
    /// The session's variables (`SET VARIABLE`), which `getvariable(name)` reads.
    variables: Option<&'a HashMap<String, ScalarValue>>,
}

/// How deep views may read views. A view that comes to read itself (a table it read dropped
/// and made again as a view of it) reaches this instead of recursing without end.
const MAX_VIEW_DEPTH: usize = 64;

impl<'a> Binder<'a> {
    /// The table or view of the snapshot named `name`.
    pub(crate) fn snapshot_table(&self, name: &str) -> Option<Arc<pondra_catalog::TableDef>> {
        self.snapshot.table(name).cloned()
    }

    pub fn new(snapshot: &'a Snapshot) -> Binder<'a> {
        Binder {
            snapshot,
            external: None,
            ctes: RefCell::new(Vec::new()),
            outer: RefCell::new(Vec::new()),
            correlated: RefCell::new(Vec::new()),
            windows: RefCell::new(Vec::new()),
            named_windows: RefCell::new(Vec::new()),
            set_functions: RefCell::new(Vec::new()),
            database: crate::system_tables::CATALOG,
            view_depth: 0,
            temporary: &[],
            time_zone: "UTC",
            statement_micros: clock::statement_micros(),
            addressed: None,
            system_columns: false,
            row_ids: false,
            offsets: false,
            optimizer: None,
            views_as_leaves: false,
            variables: None,
        }
    }

    /// A binder for the query of a materialized view: the materialized views it reads are
    /// leaves, whose changes feed it (ADR 0054).
    pub fn for_view(snapshot: &'a Snapshot) -> Binder<'a> {
        Binder {
            views_as_leaves: true,
            ..Binder::new(snapshot)
        }
    }

    /// A binder for the query of a statement that changes `table`'s rows: its scans of the
    /// table carry the hidden row address, and the system columns its change record keeps.
    pub(super) fn addressing(&self, table: &pondra_catalog::TableDef) -> Binder<'a> {
        Binder {
            addressed: Some(table.id),
            system_columns: true,
            row_ids: self.row_ids,
            offsets: self.offsets,
            ..self.sharing_session()
        }
    }

    /// The same binder, for a session whose zone is `time_zone` (a name the zone database
    /// knows, or `UTC`).
    pub fn with_time_zone(self, time_zone: &'a str) -> Binder<'a> {
        Binder { time_zone, ..self }
    }

    /// The same binder, for a statement that runs at `micros` (microseconds since the epoch):
    /// what `now()` gives. Every node running a part of a spread query binds it at the
    /// coordinator's moment (ADR 0076).
    pub fn at_time(self, micros: i64) -> Binder<'a> {
        Binder {
            statement_micros: micros,
            ..self
        }
    }

    /// A fresh binder for another statement of the same session: its tables, zone, clock
    /// and variables, none of this statement's scopes.
    pub(super) fn sharing_session(&self) -> Binder<'a> {
        Binder {
            external: self.external,
            database: self.database,
            view_depth: self.view_depth,
            temporary: self.temporary,
            time_zone: self.time_zone,
            statement_micros: self.statement_micros,
            variables: self.variables,
            optimizer: self.optimizer,
            ..Binder::new(self.snapshot)
        }
    }

    /// The same binder, for a session that turned off some of the optimizer.
    pub fn with_optimizer_settings(self, settings: &'a OptimizerSettings) -> Binder<'a> {
        Binder {
            optimizer: Some(settings),
            ..self
        }
    }

    fn optimizer_settings(&self) -> OptimizerSettings {
        self.optimizer.cloned().unwrap_or_default()
    }

    /// The same binder, for a session with `variables` set.
    pub fn with_variables(self, variables: &'a HashMap<String, ScalarValue>) -> Binder<'a> {
        Binder {
            variables: Some(variables),
            ..self
        }
    }

    /// The value of the session's variable `name`: NULL when it is not set, as in DuckDB.
    pub(crate) fn variable(&self, name: &str) -> ScalarValue {
        self.variables
            .and_then(|v| v.get(name))
            .cloned()
            .unwrap_or(ScalarValue::Null)
    }

    /// The session's zone.
    pub(crate) fn time_zone(&self) -> &str {
        self.time_zone
    }

    /// When the statement was bound, in microseconds since the epoch.
    pub(crate) fn statement_micros(&self) -> i64 {
        self.statement_micros
    }

    /// Whether this binds a materialized view's query, whose rows may not depend on when
    /// they are computed.
    pub(crate) fn binds_materialized_view(&self) -> bool {
        self.views_as_leaves
    }

    /// The type of instants in the session's zone.
    pub(crate) fn instant_type(&self) -> DataType {
        DataType::Timestamp(
            arrow::datatypes::TimeUnit::Microsecond,
            Some(self.time_zone.into()),
        )
    }

    /// The same binder, listing a session's temporary tables in the catalog tables.
    pub fn with_temporary(self, temporary: &'a [Arc<pondra_catalog::TableDef>]) -> Binder<'a> {
        Binder { temporary, ..self }
    }

    /// The same binder, for a lake the client knows as `database`.
    pub fn in_database(self, database: &'a str) -> Binder<'a> {
        Binder { database, ..self }
    }

    /// The name the client knows the lake by.
    pub(crate) fn database(&self) -> &str {
        self.database
    }

    /// A binder that also sees the session's external Parquet tables.
    pub fn with_external(
        snapshot: &'a Snapshot,
        external: &'a HashMap<String, Arc<ExternalTable>>,
    ) -> Binder<'a> {
        let mut binder = Binder::new(snapshot);
        binder.external = Some(external);
        binder
    }

    /// Binds one parsed statement and optimizes the plans it runs.
    pub fn bind_statement(&self, parsed: &ParsedStatement) -> Result<Plan> {
        let text = parsed.text.to_ascii_lowercase();
        // Row addresses are positions in one snapshot's files, which only the statements that
        // change rows read, in queries the binder writes itself (ADR 0048).
        if text.contains(pondra_catalog::ROW_ADDRESS) {
            return Err(bind_err!(
                "column \"{}\" is internal to UPDATE, DELETE and MERGE",
                pondra_catalog::ROW_ADDRESS
            ));
        }
        let binder = Binder {
            system_columns: text.contains("_commit_"),
            row_ids: text.contains(pondra_catalog::ROW_ID),
            offsets: text.contains(pondra_catalog::OFFSET),
            ..self.sharing_session()
        };
        // Calls of macros become their bodies before anything is bound (ADR 0068), and
        // DuckDB's aggregates of the first n values the list aggregates they are.
        let expanded = rewritten(parsed, |sql| match sql {
            ast::Statement::CreateMacro { .. } => Ok(None),
            sql => macros::expand_macros(self.snapshot, sql),
        })?;
        let parsed = expanded.as_ref().unwrap_or(parsed);
        let aggregates = rewritten(parsed, top_n_aggregates::rewrite_top_n)?;
        let parsed = aggregates.as_ref().unwrap_or(parsed);
        let mut plan = binder.bind_unoptimized(parsed)?;
        for logical in plan.logical_plans_mut() {
            let bound = std::mem::replace(logical, LogicalPlan::empty());
            *logical = optimize_with(bound, self.snapshot, &self.optimizer_settings())?;
        }
        Ok(plan)
    }

    /// Binds one parsed statement; the plans in it are as bound.
    fn bind_unoptimized(&self, parsed: &ParsedStatement) -> Result<Plan> {
        let statement = match &parsed.statement {
            Statement::Checkpoint => return Ok(Plan::Checkpoint),
            Statement::CreateProcedure(create) => return self.bind_create_procedure(create),
            Statement::Task(_) => {
                return Err(bind_err!(
                    "a task statement runs in a session, not in a query"
                ));
            }
            Statement::Subscribe { relation, .. } => {
                return Err(bind_err!(
                    "SUBSCRIBE streams changes where a door can stream them: run COPY (SUBSCRIBE TO \
                     {relation}) TO STDOUT on the Postgres door, or GET /views/{relation}/changes \
                     over HTTP"
                ));
            }
            Statement::SetVariable { name, value } => {
                let value = value.as_ref().map(|q| self.bind_query(q)).transpose()?;
                if let Some(value) = &value
                    && value.schema().fields().len() != 1
                {
                    return Err(bind_err!("SET VARIABLE {name} takes one value"));
                }
                return Ok(Plan::SetVariable {
                    name: name.clone(),
                    value,
                });
            }
            Statement::Sql(statement) => statement.as_ref(),
        };
        match statement {
            ast::Statement::Query(query) if pondra_parser::writes(query) => {
                self.bind_with_writes(query)
            }
            ast::Statement::Query(query) => Ok(Plan::Query(self.bind_query(query)?)),
            ast::Statement::CreateTable(create) => self.bind_create_table(create),
            ast::Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => match (object_type, names.as_slice()) {
                (ast::ObjectType::Schema, [name]) => {
                    self.bind_drop_schema(name, *if_exists, *cascade)
                }
                _ => self.bind_drop(*object_type, *if_exists, names, *cascade),
            },
            ast::Statement::AlterTable(alter) => self.bind_alter_table(alter),
            ast::Statement::Vacuum(vacuum) => self.bind_vacuum(vacuum),
            ast::Statement::CreateSchema {
                schema_name: ast::SchemaName::Simple(name),
                if_not_exists,
                ..
            } => self.bind_create_schema(name, *if_not_exists),
            ast::Statement::LISTEN { .. } | ast::Statement::NOTIFY { .. } => Err(unsupported!(
                "LISTEN and NOTIFY (notifications are not built)"
            )),
            ast::Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists,
            } => self.bind_comment(*object_type, object_name, comment.clone(), *if_exists),
            ast::Statement::AlterView(alter) => self.bind_alter_view(alter),
            ast::Statement::Insert(insert) => self.bind_insert(insert),
            ast::Statement::Copy {
                source, to, target, ..
            } => self.bind_copy(source, *to, target),
            ast::Statement::CreateView(create) => {
                if !create.materialized {
                    return self.bind_create_view(create);
                }
                let name = object_name(&create.name)?;
                if let Some(statements) = crate::sub_views::nested_view_statements(create, &name)? {
                    return Ok(Plan::CreateNestedView {
                        name,
                        statements,
                        if_not_exists: create.if_not_exists,
                    });
                }
                let view = crate::view::plan_created_view(self.snapshot, create)?;
                Ok(Plan::CreateMaterializedView {
                    name,
                    sql: parsed.text.trim().to_string(),
                    view: Box::new(view),
                    if_not_exists: create.if_not_exists,
                })
            }
            ast::Statement::CreateIndex(create) => self.bind_create_index(create),
            ast::Statement::CreateSecret { .. } | ast::Statement::DropSecret { .. } => {
                self.bind_secret_statement(statement)
            }
            ast::Statement::CreateMacro {
                or_replace,
                temporary,
                name,
                args,
                definition,
            } => self.bind_create_macro(*or_replace, *temporary, name, args.as_deref(), definition),
            ast::Statement::DropFunction(drop) => self.bind_drop_macro(drop),
            ast::Statement::CreateFunction(create) => self.bind_create_function(create),
            ast::Statement::Update(update) => self.bind_update(update),
            ast::Statement::Delete(delete) => self.bind_delete(delete),
            ast::Statement::Truncate(truncate) => self.bind_truncate(truncate),
            ast::Statement::Merge(merge) => self.bind_merge(merge),
            ast::Statement::ShowTables { .. } => Ok(Plan::Query(self.show_tables())),
            ast::Statement::ExplainTable { table_name, .. } => {
                Ok(Plan::Query(self.describe(&object_name(table_name)?)?))
            }
            ast::Statement::Explain {
                statement,
                analyze,
                verbose,
                options,
                describe_alias,
                ..
            } => {
                let ast::Statement::Query(query) = statement.as_ref() else {
                    return Err(unsupported!("EXPLAIN of statements other than queries"));
                };
                let plan = self.bind_query(query)?;
                // DuckDB's `DESCRIBE SELECT ...` lists the query's columns, as for a table.
                if !matches!(describe_alias, ast::DescribeAlias::Explain) {
                    return Ok(Plan::Query(describe_columns(&plan.schema(), |_| None)));
                }
                if *analyze || explain_option(options.as_deref(), "ANALYZE") {
                    return Ok(Plan::ExplainAnalyze(plan));
                }
                if !*verbose && !explain_option(options.as_deref(), "VERBOSE") {
                    let settings = self.optimizer_settings();
                    let plan = optimize_with(plan, self.snapshot, &settings)?;
                    return Ok(Plan::Explain(plan.to_string()));
                }
                let (plan, trace) =
                    optimize_traced(plan, self.snapshot, &self.optimizer_settings())?;
                let mut steps: Vec<String> = trace
                    .into_iter()
                    .map(|(step, text)| format!("{step}:\n{text}"))
                    .collect();
                // What runs: the operators, and what physical planning decided for them.
                let physical = crate::physical::create_physical_plan(&plan);
                steps.push(format!("physical:\n{physical}"));
                Ok(Plan::Explain(steps.join("\n")))
            }
            ast::Statement::DropProcedure {
                if_exists,
                proc_desc,
                ..
            } => self.bind_drop_procedure(proc_desc, *if_exists),
            ast::Statement::Call(_) => Err(bind_err!(
                "CALL runs in a session, where the procedure's statements run"
            )),
            other => Err(unsupported!("the statement {}", first_words(other))),
        }
    }

    fn table(&self, name: &str) -> Result<&Arc<pondra_catalog::TableDef>> {
        self.snapshot
            .table(name)
            .ok_or_else(|| bind_err!("table {name} does not exist"))
    }
}

/// `parsed` with its SQL statement rewritten by `rewrite`; `None` when `rewrite` leaves it as
/// it is (or it is one of Pondra's own statements).
fn rewritten(
    parsed: &ParsedStatement,
    rewrite: impl Fn(&ast::Statement) -> Result<Option<ast::Statement>>,
) -> Result<Option<ParsedStatement>> {
    let Statement::Sql(sql) = &parsed.statement else {
        return Ok(None);
    };
    Ok(rewrite(sql)?.map(|statement| ParsedStatement {
        text: parsed.text.clone(),
        statement: Statement::Sql(Box::new(statement)),
    }))
}

/// Whether Postgres-style EXPLAIN options (`EXPLAIN (VERBOSE, ANALYZE false)`) turn `name` on.
fn explain_option(options: Option<&[ast::UtilityOption]>, name: &str) -> bool {
    options.into_iter().flatten().any(|option| {
        option.name.value.eq_ignore_ascii_case(name)
            && match &option.arg {
                None => true,
                Some(arg) => !matches!(
                    arg.to_string().to_ascii_lowercase().as_str(),
                    "false" | "off" | "0"
                ),
            }
    })
}
