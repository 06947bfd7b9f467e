//! The binder: parsed statements to bound plans over one catalog snapshot.

mod all_types;
mod alter;
mod arrays;
mod asof;
mod blobs;
mod changes;
mod clock;
mod columns_expression;
mod composed_aggregates;
mod date_functions;
mod duckdb_functions;
mod expr;
mod from;
mod functions;
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
mod ordered_set;
mod pg_format;
mod recursive;
mod samples;
mod schemas;
mod scope;
mod set_ops;
mod star;
mod statements;
mod statistics;
mod structs;
mod subqueries;
mod table_functions;
mod table_options;
mod text_functions;
mod ties;
pub(crate) mod time_windows;
mod top_n_aggregates;
mod where_aliases;
mod window;
mod with_writes;

pub(crate) use expr::aggregate_function;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
pub(crate) use table_options::interval_micros;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Snapshot, TableKind};
use pondra_parser::{ParsedStatement, Statement, ast};

pub use expr::type_name;
use expr::{
    Aggregation, Context, GROUPED_SUBQUERY_BASE, SET_FUNCTION_BASE, WINDOW_BASE, bind_expr,
    contains_aggregate,
};
use from::{outer_join, rename_columns};
use scope::Scope;
pub use scope::normalize;
use set_ops::{distinct_rows, grouping_sets, set_operation, union_of_groupings};
use statements::describe_columns;
use subqueries::{in_subquery, split_and};

use crate::expr::{Expr, JoinKind, SortKey, WindowExpr};
use crate::external::ExternalTable;
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::optimizer::{OptimizerSettings, optimize_traced, optimize_with};
use crate::plan::Plan;
use crate::scalar::ScalarValue;
use crate::{PlanError, Result, bind_err, unsupported};

/// `plan` with `subqueries` asked of its rows, in order (each a filter, or a column after the
/// plan's own).
fn add_subqueries(plan: LogicalPlan, subqueries: Vec<(LogicalPlan, SubqueryKind)>) -> LogicalPlan {
    subqueries
        .into_iter()
        .fold(plan, |plan, (subquery, kind)| plan.subquery(subquery, kind))
}

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

    /// The bytes of Parquet data of the table whose oid `oid` is (its log tail uncounted), 0
    /// for a view, NULL for an oid that is no table.
    pub(crate) fn relation_sizes(&self, oid: Expr) -> Expr {
        let sizes = self.snapshot.visible_tables().map(|table| {
            let bytes: u64 = self
                .snapshot
                .files(table.id)
                .iter()
                .map(|f| f.size_bytes)
                .sum();
            (
                crate::system_tables::table_oid(table),
                None,
                ScalarValue::Int64(bytes as i64),
            )
        });
        by_oid(oid, sizes, DataType::Int64)
    }

    /// `obj_description(oid)` (no column) or `col_description(oid, column)`: the comment
    /// `COMMENT ON` gave the table or its column numbered from 1; NULL where there is none.
    pub(crate) fn comments(&self, oid: Expr, column: Option<Expr>) -> Expr {
        let column = column.map(|c| c.cast(&DataType::Int32));
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables().chain(self.temporary) {
            let oid = crate::system_tables::table_oid(table);
            for (name, text) in &table.comments {
                let text = ScalarValue::Utf8(text.clone());
                match (&column, name.is_empty()) {
                    (None, true) => branches.push((oid, None, text)),
                    (Some(column), false) => {
                        if let Some(position) = table.columns.iter().position(|c| &c.name == name) {
                            branches.push((oid, Some((column, position as i32 + 1)), text));
                        }
                    }
                    _ => {}
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_viewdef(oid)`: the defining query of the view whose oid `oid` is.
    pub(crate) fn view_definitions(&self, oid: Expr) -> Expr {
        let branches = self.snapshot.visible_tables().filter_map(|table| {
            let sql = match &table.kind {
                TableKind::View { sql, .. } => sql.clone(),
                TableKind::MaterializedView { sql, .. } => sql.clone(),
                TableKind::Table
                | TableKind::ValueCounts { .. }
                | TableKind::JoinState { .. }
                | TableKind::Macro { .. } => {
                    return None;
                }
            };
            let oid = crate::system_tables::table_oid(table);
            Some((oid, None, ScalarValue::Utf8(sql)))
        });
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_indexdef(oid [, column])`: the definition of the index whose oid `oid` is, or
    /// with a column number from 1, the name of that column of it; NULL for any other oid.
    pub(crate) fn index_definitions(&self, oid: Expr, column: Option<Expr>) -> Expr {
        let column = column.map(|c| c.cast(&DataType::Int32));
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables() {
            for index in crate::system_tables::table_indexes(table) {
                let definition = ScalarValue::Utf8(index.definition(&table.name));
                let Some(column) = &column else {
                    branches.push((index.oid, None, definition));
                    continue;
                };
                branches.push((index.oid, Some((column, 0)), definition));
                for (k, name) in index.column_names.iter().enumerate() {
                    let name = ScalarValue::Utf8(name.clone());
                    branches.push((index.oid, Some((column, k as i32 + 1)), name));
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_constraintdef(oid)`: the definition of the constraint whose oid `oid` is, NULL
    /// for any other oid.
    pub(crate) fn constraint_definitions(&self, oid: Expr) -> Expr {
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables() {
            for index in crate::system_tables::table_indexes(table) {
                if let (Some((oid, _)), Some(definition)) =
                    (index.constraint, index.constraint_definition())
                {
                    branches.push((oid, None, ScalarValue::Utf8(definition)));
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
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
            ..self.sharing_session()
        }
    }

    /// The same binder, for a session whose zone is `time_zone` (a name the zone database
    /// knows, or `UTC`).
    pub fn with_time_zone(self, time_zone: &'a str) -> Binder<'a> {
        Binder { time_zone, ..self }
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

    /// `plan` with its instants in the session's zone, when they are not: the values are
    /// kept, their label changes (ADR 0067).
    fn in_session_zone(&self, plan: LogicalPlan) -> LogicalPlan {
        let schema = plan.schema();
        let labelled = |t: &DataType| matches!(t, DataType::Timestamp(_, Some(zone)) if **zone != *self.time_zone);
        if !schema.fields().iter().any(|f| labelled(f.data_type())) {
            return plan;
        }
        let (exprs, names) = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let column = Expr::column(i, f.name(), f.data_type().clone());
                let column = match labelled(f.data_type()) {
                    true => column.cast(&self.instant_type()),
                    false => column,
                };
                (column, f.name().clone())
            })
            .unzip();
        plan.project(exprs, names)
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

    /// Records a window function of the SELECT being bound; returns its number.
    /// The definition of the window `name` in the innermost SELECT's WINDOW clause.
    pub(crate) fn named_window(&self, name: &ast::Ident) -> Option<ast::NamedWindowExpr> {
        let named = self.named_windows.borrow();
        let definitions = named.last()?;
        definitions
            .iter()
            .find(|definition| definition.0.value.eq_ignore_ascii_case(&name.value))
            .map(|definition| definition.1.clone())
    }

    pub(crate) fn add_window(&self, window: WindowExpr) -> Result<usize> {
        let mut windows = self.windows.borrow_mut();
        let current = windows
            .last_mut()
            .ok_or_else(|| unsupported!("window functions here"))?;
        if let Some(i) = current.iter().position(|w| *w == window) {
            return Ok(i);
        }
        current.push(window);
        Ok(current.len() - 1)
    }

    /// How many set-returning functions the select list being bound has so far.
    fn set_function_count(&self) -> usize {
        self.set_functions.borrow().last().map_or(0, Vec::len)
    }

    /// Renumbers the columns the select list's set-returning functions read, as the select
    /// list's own are once the columns before theirs are known.
    fn remap_set_functions(&self, remap: impl Fn(&Expr) -> Expr) {
        if let Some(arrays) = self.set_functions.borrow_mut().last_mut() {
            for array in arrays {
                *array = remap(array);
            }
        }
    }

    /// Records the array a set-returning function in the select list being bound unnests;
    /// returns its number.
    pub(crate) fn add_set_function(&self, array: Expr) -> Result<usize> {
        let mut frames = self.set_functions.borrow_mut();
        let current = frames
            .last_mut()
            .ok_or_else(|| bind_err!("set-returning functions are not allowed here"))?;
        if let Some(i) = current.iter().position(|a| *a == array) {
            return Ok(i);
        }
        current.push(array);
        Ok(current.len() - 1)
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

    /// The scope of the query directly around the subquery being bound.
    pub(crate) fn outer_scope(&self) -> Option<Scope> {
        self.outer.borrow().last().cloned()
    }

    /// The scopes of the queries around the one directly around the subquery being bound,
    /// nearest first: depth 2, 3, ...
    pub(crate) fn farther_scopes(&self) -> Vec<Scope> {
        let outer = self.outer.borrow();
        outer.iter().rev().skip(1).cloned().collect()
    }

    /// Binds a subquery whose outer columns come from `scope`.
    pub(crate) fn bind_subquery(&self, query: &ast::Query, scope: &Scope) -> Result<LogicalPlan> {
        self.outer.borrow_mut().push(scope.clone());
        let plan = self.bind_query(query);
        self.outer.borrow_mut().pop();
        plan
    }

    /// Records a subquery of the SELECT being bound that becomes a join; returns its number.
    pub(crate) fn add_pending(&self, subquery: LogicalPlan, kind: SubqueryKind) -> Result<usize> {
        let mut correlated = self.correlated.borrow_mut();
        let current = correlated
            .last_mut()
            .ok_or_else(|| unsupported!("a correlated subquery here"))?;
        current.push((subquery, kind));
        Ok(current.len() - 1)
    }

    /// The plan of the innermost common table expression named `name`.
    fn cte(&self, name: &str) -> Option<LogicalPlan> {
        let ctes = self.ctes.borrow();
        ctes.iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
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
            ast::Statement::CreateMacro {
                or_replace,
                temporary,
                name,
                args,
                definition,
            } => self.bind_create_macro(*or_replace, *temporary, name, args.as_deref(), definition),
            ast::Statement::DropFunction(drop) => self.bind_drop_macro(drop),
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
            other => Err(unsupported!("the statement {}", first_words(other))),
        }
    }

    fn table(&self, name: &str) -> Result<&Arc<pondra_catalog::TableDef>> {
        self.snapshot
            .table(name)
            .ok_or_else(|| bind_err!("table {name} does not exist"))
    }

    /// Binds a query: its body, then ORDER BY, then LIMIT / OFFSET.
    pub fn bind_query(&self, query: &ast::Query) -> Result<LogicalPlan> {
        // Rows are not locked: a query that asks for locks is refused rather than run without.
        if let Some(lock) = query.locks.first() {
            return Err(unsupported!(
                "the locking clause {lock}: rows are not locked; the statement runs on its snapshot"
            ));
        }
        let Some(with) = &query.with else {
            return self.bind_query_body(query);
        };
        let depth = self.ctes.borrow().len();
        let result = (|| {
            for cte in &with.cte_tables {
                if with_writes::is_write(&cte.query.body) {
                    return Err(unsupported!(
                        "INSERT, UPDATE and DELETE in a WITH below a statement's top level"
                    ));
                }
                let plan = self.bind_cte(cte, with.recursive)?;
                self.ctes
                    .borrow_mut()
                    .push((normalize(&cte.alias.name), plan));
            }
            self.bind_query_body(query)
        })();
        self.ctes.borrow_mut().truncate(depth);
        result
    }

    /// The plan of one CTE of a WITH (`recursive` when it says WITH RECURSIVE).
    fn bind_cte(&self, cte: &ast::Cte, recursive: bool) -> Result<LogicalPlan> {
        let recursive = match recursive {
            true => self.bind_recursive_cte(cte)?,
            false => None,
        };
        match recursive {
            Some(plan) => Ok(plan),
            None => rename_columns(self.bind_query(&cte.query)?, Some(&cte.alias)),
        }
    }

    fn bind_query_body(&self, query: &ast::Query) -> Result<LogicalPlan> {
        let fetched;
        let mut ties = None;
        let limit_clause = match &query.fetch {
            None => query.limit_clause.as_ref(),
            Some(fetch) if fetch.with_ties && !fetch.percent => {
                let limit = fetch_as_limit(&without_ties(fetch), query.limit_clause.as_ref())?;
                ties = Some(limit);
                None
            }
            Some(fetch) => {
                fetched = fetch_as_limit(fetch, query.limit_clause.as_ref())?;
                Some(&fetched)
            }
        };
        let every_column;
        let order_by = match &query.order_by {
            None => &[][..],
            Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(items),
                ..
            }) => items.as_slice(),
            Some(ast::OrderBy {
                kind: ast::OrderByKind::All(options),
                ..
            }) => {
                every_column = self.order_by_all(query.body.as_ref(), options)?;
                every_column.as_slice()
            }
        };
        let plan = match query.body.as_ref() {
            ast::SetExpr::Select(select) => self.bind_select(select, order_by)?,
            other => {
                let plan = self.bind_set_expr(other)?;
                let scope = Scope::from_schema(&plan.schema(), None);
                order_output(plan, &scope, order_by)?
            }
        };
        match ties {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                let count = limit.map_or(Ok(1), |l| constant_count(&l, "FETCH"))?;
                let skip = offset.map_or(Ok(0), |o| constant_count(&o.value, "OFFSET"))?;
                ties::with_ties(plan, skip, count)
            }
            _ => self.bind_limit(plan, limit_clause),
        }
    }

    /// A query body other than a lone SELECT with ORDER BY: VALUES, a nested query, or a set
    /// operation (whose operands may be SELECTs).
    fn bind_set_expr(&self, body: &ast::SetExpr) -> Result<LogicalPlan> {
        match body {
            ast::SetExpr::Select(select) => self.bind_select(select, &[]),
            ast::SetExpr::Values(values) => self.bind_values(values),
            ast::SetExpr::Query(inner) => self.bind_query(inner),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let left = self.bind_set_expr(left)?;
                let right = self.bind_set_expr(right)?;
                set_operation(left, *op, *set_quantifier, right)
            }
            // `TABLE name`: every row of the relation, as `SELECT * FROM name`.
            ast::SetExpr::Table(table) if table.table_name.is_some() => {
                let parts = [&table.schema_name, &table.table_name];
                let name =
                    ast::ObjectName::from(parts.into_iter().flatten().cloned().collect::<Vec<_>>());
                Ok(self.named_relation(&name)?.0)
            }
            other => Err(unsupported!("the query form {other}")),
        }
    }

    fn bind_limit(
        &self,
        plan: LogicalPlan,
        clause: Option<&ast::LimitClause>,
    ) -> Result<LogicalPlan> {
        let (limit, offset) = match clause {
            None => return Ok(plan),
            Some(ast::LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(unsupported!("LIMIT BY"));
                }
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(limit), Some(offset))
            }
        };
        let fetch = match limit {
            Some(ast::Expr::Value(v)) if v.value == ast::Value::Null => None,
            Some(e) => Some(constant_count(e, "LIMIT")?),
            None => None,
        };
        let skip = offset
            .map(|e| constant_count(e, "OFFSET"))
            .transpose()?
            .unwrap_or(0);
        Ok(LogicalPlan::Limit {
            input: Box::new(plan),
            skip,
            fetch,
        })
    }

    fn bind_values(&self, values: &ast::Values) -> Result<LogicalPlan> {
        let empty = Scope::default();
        let mut rows = Vec::new();
        for row in &values.rows {
            // A value may read an enclosing query's row (a LATERAL or correlated subquery),
            // though not hold a subquery of its own.
            let binder = (!row.iter().any(expr::contains_subquery)).then_some(self);
            let mut ctx = Context::Plain {
                scope: &empty,
                clause: "VALUES",
                binder,
            };
            let bound = row
                .iter()
                .map(|e| bind_expr(e, &mut ctx))
                .collect::<Result<Vec<_>>>()?;
            if let Some(first) = rows.first().map(|r: &Vec<Expr>| r.len())
                && first != bound.len()
            {
                return Err(bind_err!("VALUES lists must all be the same length"));
            }
            rows.push(bound);
        }
        let width = rows.first().map_or(0, Vec::len);
        let mut fields = Vec::new();
        for column in 0..width {
            // A quoted literal takes the type the column's other values have, as in both
            // anchors: `VALUES ('10:00'), (TIME '11:00')` is a column of TIME.
            let typed = rows.iter().any(|row| {
                !expr::is_string_literal(&row[column]) && row[column].data_type() != DataType::Null
            });
            let mut data_type = DataType::Null;
            for row in rows
                .iter()
                .filter(|row| !typed || !expr::is_string_literal(&row[column]))
            {
                let t = row[column].data_type();
                data_type = expr::common_type(&[data_type.clone(), t.clone()]).map_err(|_| {
                    bind_err!(
                        "VALUES column {} mixes types {} and {}",
                        column + 1,
                        type_name(&data_type),
                        type_name(&t)
                    )
                })?;
            }
            fields.push(Field::new(format!("column{}", column + 1), data_type, true));
        }
        for row in &mut rows {
            for (expr, field) in row.iter_mut().zip(&fields) {
                *expr = expr.clone().cast(field.data_type());
            }
        }
        Ok(LogicalPlan::Values {
            schema: Arc::new(Schema::new(fields)),
            rows,
        })
    }

    /// A `pg_catalog` or `information_schema` table as of this snapshot.
    fn system_table(&self, schema: &str, name: &str) -> Option<LogicalPlan> {
        let columns_of = |table: &pondra_catalog::TableDef| -> Vec<(String, DataType)> {
            match &table.kind {
                TableKind::Table => table
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.sql_type.to_arrow()))
                    .collect(),
                _ => {
                    let Some(table) = self.snapshot.table(&table.name) else {
                        return Vec::new();
                    };
                    self.scan(table)
                        .map(|plan| {
                            plan.schema()
                                .fields()
                                .iter()
                                .map(|f| (f.name().clone(), f.data_type().clone()))
                                .collect()
                        })
                        .unwrap_or_default()
                }
            }
        };
        crate::system_tables::system_table(
            schema,
            name,
            self.snapshot,
            self.database,
            self.temporary,
            &columns_of,
        )
    }

    /// The plan that reads a table, or a materialized view through its read plan.
    fn scan(&self, table: &Arc<pondra_catalog::TableDef>) -> Result<LogicalPlan> {
        match &table.kind {
            TableKind::Table => {
                let scan = LogicalPlan::Scan {
                    table: table.clone(),
                    schema: table.scan_schema_numbered(
                        self.system_columns,
                        self.row_ids,
                        self.addressed == Some(table.id),
                    ),
                };
                Ok(match &table.ttl {
                    None => scan,
                    // Expired rows are hidden from every read at once (ADR 0048).
                    Some(ttl) => LogicalPlan::Filter {
                        input: Box::new(scan),
                        predicate: unexpired(table, ttl),
                    },
                })
            }
            TableKind::MaterializedView { .. } => {
                let read =
                    crate::view::load_view(self.snapshot, table)?.read_plan(table, self.snapshot);
                Ok(match self.views_as_leaves {
                    true => LogicalPlan::Scan {
                        table: table.clone(),
                        schema: read.schema(),
                    },
                    false => read,
                })
            }
            TableKind::View { .. } => self.view_plan(table),
            TableKind::ValueCounts { view, .. } | TableKind::JoinState { view, .. } => {
                Err(bind_err!(
                    "{} is internal state of materialized view {view}",
                    table.name
                ))
            }
            TableKind::Macro { .. } => Err(bind_err!("{} is a macro, not a table", table.name)),
        }
    }

    /// Binds a FROM clause into the relations of one inner-join block, the predicates of its
    /// INNER JOIN ... ON clauses, and the scope its columns are named in.
    fn bind_from(
        &self,
        from: &[ast::TableWithJoins],
    ) -> Result<(Vec<LogicalPlan>, Vec<Expr>, Scope)> {
        let mut relations = Vec::new();
        let mut predicates = Vec::new();
        let mut scope = Scope::default();
        if from.is_empty() {
            let plan = LogicalPlan::Values {
                schema: Arc::new(Schema::empty()),
                rows: vec![vec![]],
            };
            relations.push(plan);
            return Ok((relations, predicates, scope));
        }
        // Each joined relation is a level of the plan, which every later step walks.
        let joined: usize = from.iter().map(|item| 1 + item.joins.len()).sum();
        if joined > pondra_parser::MAX_DEPTH {
            return Err(PlanError::Parse(pondra_parser::ParseError::TooDeep));
        }
        for item in from {
            // Relations of this item not yet fixed by an outer join.
            let mut base = scope.columns.len();
            let mut item_relations: Vec<LogicalPlan> = Vec::new();
            let mut item_predicates: Vec<Expr> = Vec::new();
            let (plan, factor_scope, lateral) = self.bind_factor_after(&item.relation, &scope)?;
            if lateral {
                // It reads every relation to its left, which it joins as one.
                let left = LogicalPlan::join_block(
                    std::mem::take(&mut relations),
                    std::mem::take(&mut predicates),
                );
                let kind = SubqueryKind::Lateral {
                    join: JoinKind::Inner,
                    on: None,
                };
                item_relations.push(left.subquery(plan, kind));
                base = 0;
            } else {
                item_relations.push(plan);
            }
            scope.columns.extend(factor_scope.columns);
            for join in &item.joins {
                let (right, right_scope, lateral) =
                    self.bind_factor_after(&join.relation, &scope)?;
                let left_width = scope.columns.len() - base;
                let mut joined_scope = scope.clone();
                joined_scope.columns.extend(right_scope.columns.clone());
                use ast::JoinOperator as J;
                if let J::AsOf {
                    match_condition,
                    constraint,
                } = &join.join_operator
                {
                    if lateral {
                        return Err(unsupported!("an ASOF join to a LATERAL subquery"));
                    }
                    let left = self.collapse(
                        std::mem::take(&mut item_relations),
                        std::mem::take(&mut item_predicates),
                        base,
                    );
                    let sides = [&scope, &right_scope, &joined_scope];
                    let plan = self.bind_asof(left, right, (match_condition, constraint), sides)?;
                    let left_width = scope.columns.len() - base;
                    item_relations.push(plan(base, left_width)?);
                    hide_using_copies(constraint, &mut joined_scope, scope.columns.len(), false)?;
                    scope = joined_scope;
                    continue;
                }
                let (kind, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (None, c),
                    J::CrossJoin(c) => (None, c),
                    J::Left(c) | J::LeftOuter(c) => (Some(JoinKind::Left), c),
                    J::Right(c) | J::RightOuter(c) => (Some(JoinKind::Left), c),
                    J::FullOuter(c) => (Some(JoinKind::Full), c),
                    J::Semi(c) | J::LeftSemi(c) => (Some(JoinKind::Semi), c),
                    J::Anti(c) | J::LeftAnti(c) => (Some(JoinKind::Anti), c),
                    other => return Err(unsupported!("the join {other:?}")),
                };
                let is_right = matches!(join.join_operator, J::Right(_) | J::RightOuter(_));
                if let ast::JoinConstraint::On(condition) = constraint
                    && expr::contains_subquery(condition)
                    && !lateral
                    && matches!(kind, None | Some(JoinKind::Left | JoinKind::Full))
                {
                    // Everything to the left, earlier FROM items too, is the join's left side.
                    let mut left_relations = std::mem::take(&mut relations);
                    left_relations.append(&mut item_relations);
                    let mut left_predicates = std::mem::take(&mut predicates);
                    left_predicates.append(&mut item_predicates);
                    let left = LogicalPlan::join_block(left_relations, left_predicates);
                    let kept = join_subqueries::Kept {
                        left: matches!(kind, Some(JoinKind::Full))
                            || kind == Some(JoinKind::Left) && !is_right,
                        right: matches!(kind, Some(JoinKind::Full)) || is_right,
                    };
                    let sides = (&scope, &right_scope);
                    let plan = self.join_on_subqueries((left, right), kept, condition, sides)?;
                    item_relations.push(plan);
                    base = 0;
                    scope = joined_scope;
                    continue;
                }
                let constraint =
                    &natural_as_using(constraint, &scope.columns[base..], &right_scope);
                let on = self.join_condition(constraint, &scope, &right_scope, &joined_scope)?;
                if kind != Some(JoinKind::Full) {
                    hide_using_copies(
                        constraint,
                        &mut joined_scope,
                        scope.columns.len(),
                        is_right,
                    )?;
                }
                if lateral {
                    let join = match kind {
                        None => JoinKind::Inner,
                        Some(JoinKind::Left) if !is_right => JoinKind::Left,
                        _ => {
                            return Err(bind_err!(
                                "a LATERAL subquery is joined by INNER or LEFT JOIN only"
                            ));
                        }
                    };
                    // Everything to the left, earlier FROM items too, is the lateral's input.
                    let mut left_relations = std::mem::take(&mut relations);
                    left_relations.append(&mut item_relations);
                    let mut left_predicates = std::mem::take(&mut predicates);
                    left_predicates.append(&mut item_predicates);
                    let left = LogicalPlan::join_block(left_relations, left_predicates);
                    let on = match join {
                        JoinKind::Inner => {
                            item_predicates.extend(on.into_iter().flat_map(Expr::conjuncts));
                            None
                        }
                        _ => on,
                    };
                    let kind = SubqueryKind::Lateral { join, on };
                    item_relations.push(left.subquery(right, kind));
                    base = 0;
                    scope = joined_scope;
                    continue;
                }
                match kind {
                    None => {
                        item_relations.push(right);
                        item_predicates.extend(on.into_iter().flat_map(Expr::conjuncts));
                        scope = joined_scope;
                    }
                    Some(kind) => {
                        // Everything to the left becomes one input of the outer join.
                        let left = self.collapse(
                            std::mem::take(&mut item_relations),
                            std::mem::take(&mut item_predicates),
                            base,
                        );
                        let on = on.map(|e| e.remap_columns(&|c| c - base));
                        let mut plan = outer_join(left, right, kind, on, left_width, is_right)?;
                        if kind == JoinKind::Full {
                            let sides = (base, left_width);
                            plan = from::merge_using_columns(
                                plan,
                                constraint,
                                &mut joined_scope,
                                sides,
                            )?;
                        }
                        if !kind.left_only() {
                            scope = joined_scope;
                        }
                        item_relations.push(plan);
                    }
                }
            }
            relations.extend(item_relations);
            predicates.extend(item_predicates);
        }
        Ok((relations, predicates, scope))
    }

    /// An ASOF join of `left` and `right`, bound to plans the executor runs (`asof.rs`), as a
    /// function of where the FROM item starts and how wide its left side is.
    fn bind_asof(
        &self,
        left: LogicalPlan,
        right: LogicalPlan,
        (match_condition, constraint): (&ast::Expr, &ast::JoinConstraint),
        [scope, right_scope, joined_scope]: [&Scope; 3],
    ) -> Result<impl FnOnce(usize, usize) -> Result<LogicalPlan>> {
        let on = match constraint {
            // DuckDB's `USING (k, ..., ts)`: equal keys, and the last column `l.ts >= r.ts`.
            ast::JoinConstraint::Using(names) => {
                let Some((last, keys)) = names.split_last() else {
                    return Err(bind_err!("ASOF JOIN ... USING needs the time column"));
                };
                let keys = ast::JoinConstraint::Using(keys.to_vec());
                let equal = self.join_condition(&keys, scope, right_scope, joined_scope)?;
                let name = object_name(last)?;
                let l = scope.resolve(None, &name)?;
                let r = right_scope.resolve(None, &name)?;
                let (lc, rc) = (&scope.columns[l], &right_scope.columns[r]);
                let at_or_before = expr::at_least(
                    Expr::column(l, &lc.name, lc.data_type.clone()),
                    Expr::column(scope.columns.len() + r, &rc.name, rc.data_type.clone()),
                )?;
                Expr::and_all(equal.into_iter().chain([at_or_before]).collect())
            }
            _ => self.join_condition(constraint, scope, right_scope, joined_scope)?,
        };
        let (keep_unmatched, matched) = match asof::asof_form(match_condition) {
            asof::AsofForm::DuckDb { keep_unmatched } => (keep_unmatched, None),
            asof::AsofForm::Snowflake { match_condition } => {
                let bound = self.bind_scalar(match_condition, joined_scope, "MATCH_CONDITION")?;
                (false, Some(bound))
            }
        };
        if keep_unmatched && self.views_as_leaves {
            // A view's outer joins match on equal keys only (ADR 0054).
            return Err(unsupported!("ASOF LEFT JOIN in a materialized view"));
        }
        let condition = Expr::and_all(on.into_iter().chain(matched).collect())
            .ok_or_else(|| bind_err!("an ASOF join needs a condition"))?;
        let views_as_leaves = self.views_as_leaves;
        Ok(move |base: usize, left_width: usize| {
            let condition = condition.remap_columns(&|c| c - base);
            let left_rows = match views_as_leaves {
                true => asof::LeftRows::ByValue,
                false => asof::LeftRows::Numbered,
            };
            asof::asof_join(
                left,
                right,
                condition,
                left_width,
                (keep_unmatched, left_rows),
            )
        })
    }

    /// The relations of a FROM item that starts at column `base` as one join block.
    fn collapse(
        &self,
        relations: Vec<LogicalPlan>,
        predicates: Vec<Expr>,
        base: usize,
    ) -> LogicalPlan {
        let predicates = predicates
            .into_iter()
            .map(|p| p.remap_columns(&|c| c - base))
            .collect();
        LogicalPlan::join_block(relations, predicates)
    }

    /// The condition of a join (`ON`, `USING` or `NATURAL`, as `USING`) over the joined scope.
    fn join_condition(
        &self,
        constraint: &ast::JoinConstraint,
        left: &Scope,
        right: &Scope,
        joined: &Scope,
    ) -> Result<Option<Expr>> {
        match constraint {
            ast::JoinConstraint::None => Ok(None),
            ast::JoinConstraint::On(expr) => {
                let bound = self.bind_scalar(expr, joined, "JOIN ... ON")?;
                Ok(Some(filter_predicate(bound, "JOIN ... ON")?))
            }
            ast::JoinConstraint::Using(names) => {
                let mut parts = Vec::new();
                for name in names {
                    let name = object_name(name)?;
                    let l = left.resolve(None, &name)?;
                    let r = right.resolve(None, &name)?;
                    let lc = &left.columns[l];
                    let rc = &right.columns[r];
                    parts.push(expr::equality(
                        Expr::column(l, &lc.name, lc.data_type.clone()),
                        Expr::column(left.columns.len() + r, &rc.name, rc.data_type.clone()),
                    )?);
                }
                Ok(Expr::and_all(parts))
            }
            other => Err(unsupported!("the join condition {other:?}")),
        }
    }

    /// The relation a name in FROM reads (a CTE, a file read in place, a table or view, a
    /// system table), with its unqualified name.
    pub(super) fn named_relation(&self, name: &ast::ObjectName) -> Result<(LogicalPlan, String)> {
        let (schema, name) = qualified_name(name)?;
        if schema.as_deref() == Some(recursive::RECURRING)
            && let Some(plan) = self.cte(&format!("{}.{name}", recursive::RECURRING))
        {
            return Ok((self.in_session_zone(plan), name));
        }
        let plan = match schema.as_deref() {
            Some("pg_catalog" | "information_schema") => {
                let schema = schema.as_deref().unwrap_or_default();
                self.system_table(schema, &name)
                    .ok_or_else(|| bind_err!("table {schema}.{name} does not exist"))?
            }
            Some("public" | "main") | None => {
                let external = self.external.and_then(|e| e.get(&name)).cloned();
                match (self.cte(&name), external) {
                    (Some(plan), _) => plan,
                    (None, Some(table)) => LogicalPlan::ParquetScan { table },
                    (None, None) if self.snapshot.table(&name).is_none() => self
                        .system_table("pg_catalog", &name)
                        .ok_or_else(|| bind_err!("table {name} does not exist"))?,
                    (None, None) => self.scan(self.table(&name)?)?,
                }
            }
            Some(other) if self.snapshot.schemas.contains_key(other) => {
                let qualified = format!("{other}.{name}");
                match self.snapshot.table(&qualified) {
                    Some(_) => self.scan(self.table(&qualified)?)?,
                    None => return Err(bind_err!("table {qualified} does not exist")),
                }
            }
            Some(other) => return Err(bind_err!("schema {other} does not exist")),
        };
        Ok((self.in_session_zone(plan), name))
    }

    /// A table, a view, a CTE or a subquery in FROM, with its scope.
    fn bind_factor(&self, factor: &ast::TableFactor) -> Result<(LogicalPlan, Scope)> {
        if let ast::TableFactor::Table {
            args: Some(_),
            sample: Some(_),
            ..
        } = factor
        {
            return Err(unsupported!("TABLESAMPLE of a table function"));
        }
        match factor {
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                sample,
                ..
            } => {
                let (plan, name) = self.named_relation(name)?;
                let plan = match sample {
                    Some(sample) => samples::sampled(plan, sample)?,
                    None => plan,
                };
                let qualifier = alias.as_ref().map(|a| normalize(&a.name)).unwrap_or(name);
                let plan = rename_columns(plan, alias.as_ref())?;
                let scope = Scope::from_schema(&plan.schema(), Some(&qualifier));
                Ok((plan, scope))
            }
            ast::TableFactor::Table {
                name,
                alias,
                args: Some(args),
                ..
            } if time_windows::is_time_window(&function_name(name)?) => {
                let function = function_name(name)?;
                let plan = self.time_window(&function, &args.args)?;
                let plan = rename_columns(plan, alias.as_ref())?;
                // Unaliased, the windowed rows are the table's, `bid.price`, as in RisingWave.
                let read = args.args.first().and_then(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => match e {
                        ast::Expr::Identifier(ident) => Some(normalize(ident)),
                        ast::Expr::CompoundIdentifier(parts) => parts.last().map(normalize),
                        _ => None,
                    },
                    _ => None,
                });
                let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                let qualifier = qualifier.or(read).unwrap_or(function);
                let scope = Scope::from_schema(&plan.schema(), Some(&qualifier));
                Ok((plan, scope))
            }
            ast::TableFactor::Table {
                name,
                alias,
                args: Some(args),
                with_ordinality,
                ..
            } => {
                let function = function_name(name)?;
                if table_functions::is_set_function(&function) {
                    if let Some(query) =
                        lateral::select_form(&function, &args.args, *with_ordinality)?
                    {
                        let plan = self.bind_query(&query)?;
                        return lateral::named_function_rows(plan, &function, alias.as_ref());
                    }
                    // Its arguments may read an enclosing query's columns (`FROM
                    // unnest(outer.l)` in a correlated subquery).
                    let plan = table_functions::set_function(
                        &function,
                        &args.args,
                        Some(self),
                        *with_ordinality,
                    )?;
                    return lateral::named_function_rows(plan, &function, alias.as_ref());
                }
                if *with_ordinality {
                    return Err(unsupported!("WITH ORDINALITY on {function}"));
                }
                if function == "test_all_types" {
                    let plan = rename_columns(self.test_all_types(&args.args)?, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let scope =
                        Scope::from_schema(&plan.schema(), Some(&qualifier.unwrap_or(function)));
                    return Ok((plan, scope));
                }
                if function == pondra_parser::DESCRIBE_QUERY {
                    let plan = self.describe_query(&args.args)?;
                    let plan = rename_columns(plan, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let scope =
                        Scope::from_schema(&plan.schema(), Some(&qualifier.unwrap_or(function)));
                    return Ok((plan, scope));
                }
                if function == "query" {
                    let plan = rename_columns(self.query_function(&args.args)?, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let scope =
                        Scope::from_schema(&plan.schema(), Some(&qualifier.unwrap_or(function)));
                    return Ok((plan, scope));
                }
                if function == "table_changes" {
                    let (name, from, to) = table_functions::table_changes_arguments(&args.args)?;
                    let table = self.table(&name)?.clone();
                    let plan = table_functions::table_changes(self.snapshot, table, (from, to))?;
                    let plan = rename_columns(plan, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let qualifier = qualifier.unwrap_or(function);
                    let scope = Scope::from_schema(&plan.schema(), Some(&qualifier));
                    return Ok((plan, scope));
                }
                let readers = [
                    "read_parquet",
                    "read_csv",
                    "read_json",
                    "delta_scan",
                    "iceberg_scan",
                ];
                if !readers.contains(&function.as_str()) {
                    return Err(unsupported!("the table function {function}"));
                }
                let path = match args.args.as_slice() {
                    [
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))),
                    ] => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => return Err(bind_err!("{function} needs a path, not {other}")),
                    },
                    _ => return Err(bind_err!("{function} takes one path, URL or glob")),
                };
                let table = match function.as_str() {
                    "read_csv" => ExternalTable::open_csv(&function, &path)?,
                    "read_json" => ExternalTable::open_json(&function, &path)?,
                    "delta_scan" => ExternalTable::open_delta(&function, &path)?,
                    "iceberg_scan" => ExternalTable::open_iceberg(&function, &path)?,
                    _ => ExternalTable::open(&function, &path)?,
                };
                let plan = rename_columns(LogicalPlan::ParquetScan { table }, alias.as_ref())?;
                let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                let scope = Scope::from_schema(&plan.schema(), qualifier.as_deref());
                Ok((plan, scope))
            }
            ast::TableFactor::Derived {
                subquery, alias, ..
            } => {
                let plan = self.bind_query(subquery)?;
                let plan = rename_columns(plan, alias.as_ref())?;
                let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                let scope = Scope::from_schema(&plan.schema(), qualifier.as_deref());
                Ok((plan, scope))
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => {
                let (relations, predicates, scope) =
                    self.bind_from(std::slice::from_ref(table_with_joins))?;
                Ok((LogicalPlan::join_block(relations, predicates), scope))
            }
            other => Err(unsupported!("FROM {other}")),
        }
    }

    /// FROM and WHERE together: the join block with WHERE's conditions in it, then the
    /// subqueries WHERE asks of its rows.
    fn bind_where(
        &self,
        relations: Vec<LogicalPlan>,
        mut predicates: Vec<Expr>,
        scope: &Scope,
        selection: Option<&ast::Expr>,
    ) -> Result<LogicalPlan> {
        let width = scope.columns.len();
        let mut filters: Vec<(LogicalPlan, SubqueryKind)> = Vec::new();
        self.correlated.borrow_mut().push(Vec::new());
        let bound = (|| {
            for conjunct in selection.map(split_and).unwrap_or_default() {
                match conjunct {
                    ast::Expr::Exists { subquery, negated } => {
                        let plan = self.bind_subquery(subquery, scope)?;
                        let join = if *negated {
                            JoinKind::Anti
                        } else {
                            JoinKind::Semi
                        };
                        filters.push((plan, SubqueryKind::Filter { join, probe: None }));
                    }
                    ast::Expr::In {
                        expr,
                        target: ast::InTarget::Subquery(subquery),
                        negated,
                        ..
                    } => {
                        let probe = self.bind_scalar(expr, scope, "WHERE")?;
                        let plan = self.bind_subquery(subquery, scope)?;
                        if *negated && plan.has_any_outer() || arrays::is_row_value(&probe) {
                            // No anti join keeps a correlated NOT IN's NULL semantics, nor a
                            // join on one key a row value's: it is a comparison with the
                            // subquery's values, row by row.
                            let predicate = self.bind_scalar(conjunct, scope, "WHERE")?;
                            predicates.extend(filter_predicate(predicate, "WHERE")?.conjuncts());
                            continue;
                        }
                        let (probe, plan) = in_subquery(probe, plan)?;
                        let join = if *negated {
                            JoinKind::NullAwareAnti
                        } else {
                            JoinKind::Semi
                        };
                        let probe = Some(probe);
                        filters.push((plan, SubqueryKind::Filter { join, probe }));
                    }
                    other => {
                        let predicate = self.bind_scalar(other, scope, "WHERE")?;
                        predicates.extend(filter_predicate(predicate, "WHERE")?.conjuncts());
                    }
                }
            }
            Ok::<_, PlanError>(())
        })();
        let correlated = self.correlated.borrow_mut().pop().unwrap_or_default();
        bound?;
        // Conditions on correlated subqueries' values wait until those values are joined in.
        let (late, early): (Vec<Expr>, Vec<Expr>) = predicates
            .into_iter()
            .partition(|p| p.column_indices().iter().any(|c| *c >= width));
        // EXISTS and IN filter first: the correlated subqueries' values are then computed for
        // the rows that remain (and only for their keys: `key_domain`).
        let filtered = add_subqueries(LogicalPlan::join_block(relations, early), filters);
        let mut plan = add_subqueries(filtered, correlated);
        if let Some(predicate) = Expr::and_all(late) {
            plan = LogicalPlan::Filter {
                input: Box::new(plan),
                predicate,
            };
        }
        if plan.schema().fields().len() > width {
            plan = plan.first_columns(width);
        }
        Ok(plan)
    }

    /// Binds an expression over a scope, outside any aggregation.
    fn bind_scalar(&self, expr: &ast::Expr, scope: &Scope, clause: &str) -> Result<Expr> {
        bind_expr(
            expr,
            &mut Context::Plain {
                scope,
                clause,
                binder: Some(self),
            },
        )
    }

    fn bind_select(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> Result<LogicalPlan> {
        // DuckDB's `FROM t` with no select list means `SELECT * FROM t`.
        let select_all;
        let select = match select.flavor == ast::SelectFlavor::FromFirstNoSelect
            && select.projection.is_empty()
        {
            true => {
                let mut all = select.clone();
                all.projection = vec![ast::SelectItem::Wildcard(Default::default())];
                select_all = all;
                &select_all
            }
            false => select,
        };
        if select.into.is_some() {
            return Err(unsupported!(
                "SELECT ... INTO: use CREATE TABLE name AS SELECT ..."
            ));
        }
        self.windows.borrow_mut().push(Vec::new());
        self.named_windows
            .borrow_mut()
            .push(select.named_window.clone());
        self.set_functions.borrow_mut().push(Vec::new());
        let plan = match &select.distinct {
            Some(ast::Distinct::On(on)) => distinct_on(select, on, order_by)
                .and_then(|select| self.bind_select_inner(&select, order_by)),
            _ => self.bind_select_inner(select, order_by),
        };
        self.set_functions.borrow_mut().pop();
        self.named_windows.borrow_mut().pop();
        self.windows.borrow_mut().pop();
        plan
    }

    /// `ORDER BY ALL` (DuckDB): by every output column, left to right, each with the options.
    fn order_by_all(
        &self,
        body: &ast::SetExpr,
        options: &ast::OrderByOptions,
    ) -> Result<Vec<ast::OrderByExpr>> {
        let width = match body {
            ast::SetExpr::Select(select) => {
                let star = select.projection.iter().any(|item| {
                    matches!(
                        item,
                        ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
                    )
                });
                match star || select.projection.is_empty() {
                    // The width of a star is known only once its tables are bound.
                    true => self.bind_select(select, &[])?.schema().fields().len(),
                    false => select.projection.len(),
                }
            }
            other => self.bind_set_expr(other)?.schema().fields().len(),
        };
        Ok((1..=width)
            .map(|position| ast::OrderByExpr {
                expr: ast::Expr::value(ast::Value::Number(position.to_string(), false)),
                options: options.clone(),
                with_fill: None,
            })
            .collect())
    }

    fn bind_select_inner(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> Result<LogicalPlan> {
        let (relations, predicates, scope) = self.bind_from(&select.from)?;
        let outer = self.outer_scope();
        let lateral =
            where_aliases::with_lateral_aliases(&select.projection, &scope, outer.as_ref());
        let with_lateral;
        let select = match lateral {
            Some(projection) => {
                with_lateral = ast::Select {
                    projection,
                    ..select.clone()
                };
                &with_lateral
            }
            None => select,
        };
        let selection = select.selection.as_ref().map(|selection| {
            where_aliases::with_aliases(selection, &select.projection, &scope, outer.as_ref())
        });
        let plan = self.bind_where(relations, predicates, &scope, selection.as_ref())?;
        let (group_by, sets) = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                grouping_sets(exprs)?
            }
            ast::GroupByExpr::All(modifiers) if modifiers.is_empty() => {
                grouping_sets(&group_by_all(&select.projection)?)?
            }
            _ => return Err(unsupported!("GROUP BY ... WITH ROLLUP / CUBE")),
        };
        let group_by = &group_by;
        // `GROUP BY ()` groups all rows into one, which a select without aggregates has too.
        let groups_by_empty_set = matches!(&select.group_by,
            ast::GroupByExpr::Expressions(exprs, _) if exprs.iter().any(set_ops::is_empty_set));
        let aggregating = !group_by.is_empty()
            || groups_by_empty_set
            || select.projection.iter().any(item_has_aggregate)
            // HAVING makes the query grouped, all its rows one group without GROUP BY, as
            // in Postgres and DuckDB.
            || select.having.is_some()
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        let aggregation = if aggregating {
            let mut group = Vec::new();
            for expr in group_by {
                let expr = resolve_group_alias(expr, &select.projection, &scope)?;
                if contains_aggregate(expr) {
                    return Err(bind_err!("aggregate functions are not allowed in GROUP BY"));
                }
                let bound = bind_expr(expr, &mut Context::plain(&scope, "GROUP BY"))?;
                if !group.contains(&bound) {
                    group.push(bound);
                }
            }
            Some(Aggregation {
                input: scope.clone(),
                group,
                aggregates: Vec::new(),
            })
        } else {
            None
        };

        // Correlated subqueries in the select list become joins before the projection.
        self.correlated.borrow_mut().push(Vec::new());
        let bound = self.bind_select_list(select, order_by, plan, &scope, aggregation, sets);
        self.correlated.borrow_mut().pop();
        bound
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_select_list(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        mut plan: LogicalPlan,
        scope: &Scope,
        mut aggregation: Option<Aggregation>,
        sets: Option<Vec<Vec<ast::Expr>>>,
    ) -> Result<LogicalPlan> {
        // The projection, with output names.
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        let expanded = columns_expression::expand_columns(&select.projection, scope)?;
        for item in expanded.as_ref().unwrap_or(&select.projection) {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    if let Some(arg) = structs::unnest_argument(e) {
                        let record =
                            bind_in(arg, scope, aggregation.as_mut(), "SELECT", Some(self))?;
                        if let Some(fields) = structs::unnest_fields(&record) {
                            for (value, name) in fields {
                                exprs.push(value);
                                names.push(name);
                            }
                            continue;
                        }
                    }
                    exprs.push(bind_in(
                        e,
                        scope,
                        aggregation.as_mut(),
                        "SELECT",
                        Some(self),
                    )?);
                    names.push(output_name(e));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(bind_in(
                        expr,
                        scope,
                        aggregation.as_mut(),
                        "SELECT",
                        Some(self),
                    )?);
                    names.push(normalize(alias));
                }
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    for column in star::star_columns(item, scope)? {
                        let expr = match (column.replacement, aggregation.as_mut()) {
                            (Some(replacement), aggregation) => {
                                bind_in(replacement, scope, aggregation, "SELECT", Some(self))?
                            }
                            (None, Some(agg)) => {
                                let name = &scope.columns[column.index].name;
                                let ident = ast::Expr::Identifier(ast::Ident::new(name));
                                bind_expr(&ident, &mut Context::Aggregated(agg, None))?
                            }
                            (None, None) => {
                                let read = &scope.columns[column.index];
                                Expr::column(column.index, &read.name, read.data_type.clone())
                            }
                        };
                        exprs.push(expr);
                        names.push(column.name);
                    }
                }
                other => return Err(unsupported!("the select item {other}")),
            }
        }
        if exprs.is_empty() && !select.projection.is_empty() {
            return Err(bind_err!(
                "the SELECT list is empty after its stars' EXCLUDE lists"
            ));
        }

        let set_functions_before = self.set_function_count();
        let having = match &select.having {
            Some(h) => Some(bind_in(
                h,
                scope,
                aggregation.as_mut(),
                "HAVING",
                Some(self),
            )?),
            None => None,
        };
        // A grouped context does not name its clause: the count tells one in HAVING.
        if self.set_function_count() != set_functions_before {
            return Err(bind_err!(
                "set-returning functions are not allowed in HAVING"
            ));
        }
        let mut grouped_subqueries = Vec::new();
        let qualify_with_aliases = select
            .qualify
            .as_ref()
            .map(|q| with_select_aliases(q, &select.projection, scope));
        let mut qualify = match &qualify_with_aliases {
            Some(q) => Some(bind_in(
                q,
                scope,
                aggregation.as_mut(),
                "QUALIFY",
                Some(self),
            )?),
            None => None,
        };

        // ORDER BY keys that are not output columns are computed as hidden trailing columns.
        let visible = exprs.len();
        let distinct = match &select.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(other) => return Err(unsupported!("{other}")),
        };
        let mut sort_keys = Vec::new();
        for item in order_by {
            let index = match output_position(&item.expr, &names)? {
                Some(index) => index,
                None if distinct => {
                    return Err(bind_err!(
                        "for SELECT DISTINCT, ORDER BY expressions must appear in the select list"
                    ));
                }
                None => {
                    let expr = bind_in(
                        &item.expr,
                        scope,
                        aggregation.as_mut(),
                        "ORDER BY",
                        Some(self),
                    )?;
                    match exprs.iter().position(|e| *e == expr) {
                        Some(index) => index,
                        None => {
                            exprs.push(expr);
                            names.push(format!("__order_{}", exprs.len()));
                            exprs.len() - 1
                        }
                    }
                }
            };
            sort_keys.push((index, sort_options(item)?));
        }

        let correlated = std::mem::take(self.correlated.borrow_mut().last_mut().expect("frame"));
        let mut having = having;
        if aggregation.is_none() {
            assert_eq!(plan.schema().fields().len(), scope.columns.len());
            plan = add_subqueries(plan, correlated);
        } else if !correlated.is_empty() {
            // Joined to the aggregation's output below; their values' placeholder numbers
            // become columns after it.
            let width = aggregation
                .as_ref()
                .map_or(0, |a| a.group.len() + a.aggregates.len());
            let remap = |e: &Expr| {
                e.remap_columns(&|c| {
                    if (GROUPED_SUBQUERY_BASE..SET_FUNCTION_BASE).contains(&c) {
                        width + c - GROUPED_SUBQUERY_BASE
                    } else {
                        c
                    }
                })
            };
            exprs = exprs.iter().map(remap).collect();
            having = having.as_ref().map(remap);
            qualify = qualify.as_ref().map(remap);
            self.remap_set_functions(remap);
            grouped_subqueries = correlated;
        }
        if let Some(agg) = aggregation {
            let mut fields: Vec<Field> = agg
                .group
                .iter()
                .map(|g| Field::new(g.to_string(), g.data_type(), true))
                .collect();
            fields.extend(
                agg.aggregates
                    .iter()
                    .map(|a| Field::new(a.to_string(), a.data_type.clone(), true)),
            );
            let schema = Arc::new(Schema::new(fields));
            plan = match &sets {
                None => LogicalPlan::Aggregate {
                    input: Box::new(plan),
                    group: agg.group,
                    aggregates: agg.aggregates,
                    schema,
                },
                Some(sets) => {
                    let positions = sets
                        .iter()
                        .map(|set| {
                            set.iter()
                                .map(|e| {
                                    let e = resolve_group_alias(e, &select.projection, scope)?;
                                    let bound =
                                        bind_expr(e, &mut Context::plain(scope, "GROUP BY"))?;
                                    Ok(agg
                                        .group
                                        .iter()
                                        .position(|g| *g == bound)
                                        .expect("bound before"))
                                })
                                .collect::<Result<Vec<usize>>>()
                        })
                        .collect::<Result<Vec<_>>>()?;
                    union_of_groupings(plan, &agg.group, &agg.aggregates, &positions, schema)
                }
            };
            plan = add_subqueries(plan, std::mem::take(&mut grouped_subqueries));
            if let Some(having) = having {
                plan = filter(plan, having, "HAVING")?;
            }
        }
        let windows = std::mem::take(self.windows.borrow_mut().last_mut().expect("frame"));
        if !windows.is_empty() {
            let base = plan.schema().fields().len();
            let remap = |e: &Expr| {
                e.remap_columns(&|c| {
                    if (WINDOW_BASE..GROUPED_SUBQUERY_BASE).contains(&c) {
                        base + c - WINDOW_BASE
                    } else {
                        c
                    }
                })
            };
            exprs = exprs.iter().map(remap).collect();
            let qualify = qualify.as_ref().map(remap);
            self.remap_set_functions(remap);
            let schema = crate::types::schema_with(
                &plan.schema(),
                windows
                    .iter()
                    .enumerate()
                    .map(|(i, w)| Field::new(format!("window_{i}"), w.data_type.clone(), true)),
            );
            plan = LogicalPlan::Window {
                input: Box::new(plan),
                exprs: windows,
                schema,
            };
            if let Some(predicate) = qualify {
                plan = filter(plan, predicate, "QUALIFY")?;
            }
        } else if qualify.is_some() {
            return Err(bind_err!("QUALIFY needs a window function"));
        }
        let set_functions =
            std::mem::take(self.set_functions.borrow_mut().last_mut().expect("frame"));
        match set_functions.as_slice() {
            [] => {}
            [array] => {
                // Each row once per element, the element a column after the input's.
                let base = plan.schema().fields().len();
                exprs = exprs
                    .iter()
                    .map(|e| e.remap_columns(&|c| if c >= SET_FUNCTION_BASE { base } else { c }))
                    .collect();
                plan = plan.unnest(array.clone(), "element");
            }
            arrays => {
                // Zipped, as Postgres and DuckDB do: as many rows as the longest array has
                // elements, NULL past a shorter one's end. Each call is its field of the pair.
                let zipped = list_picks::zip(arrays)?;
                let DataType::List(item) = zipped.data_type() else {
                    unreachable!("list_zip gives a list")
                };
                let element = Expr::column(
                    plan.schema().fields().len(),
                    "element",
                    item.data_type().clone(),
                );
                for expr in &mut exprs {
                    crate::tree::TreeNode::transform_up(expr, &mut |e: &mut Expr| {
                        if let Expr::Column { index, .. } = e
                            && *index >= SET_FUNCTION_BASE
                        {
                            *e = structs::field_at(element.clone(), *index - SET_FUNCTION_BASE);
                        }
                        Ok::<_, std::convert::Infallible>(())
                    })
                    .expect("infallible");
                }
                plan = plan.unnest(zipped, "element");
            }
        }
        plan = plan.project(exprs, names.clone());
        if distinct {
            plan = distinct_rows(plan);
        }
        if !sort_keys.is_empty() {
            let schema = plan.schema();
            let keys = sort_keys
                .into_iter()
                .map(|(index, (descending, nulls_first))| SortKey {
                    expr: Expr::column(
                        index,
                        schema.field(index).name(),
                        schema.field(index).data_type().clone(),
                    ),
                    descending,
                    nulls_first,
                })
                .collect();
            plan = LogicalPlan::Sort {
                input: Box::new(plan),
                keys,
                fetch: None,
            };
        }
        if names.len() > visible {
            let schema = plan.schema();
            let exprs = (0..visible)
                .map(|i| {
                    Expr::column(
                        i,
                        schema.field(i).name(),
                        schema.field(i).data_type().clone(),
                    )
                })
                .collect();
            plan = plan.project(exprs, names[..visible].to_vec());
        }
        Ok(plan)
    }
}

/// A predicate checked to be boolean (a NULL literal counts as an unknown boolean).
fn filter_predicate(predicate: Expr, clause: &str) -> Result<Expr> {
    match predicate.data_type() {
        DataType::Boolean => Ok(predicate),
        DataType::Null => Ok(predicate.cast(&DataType::Boolean)),
        other => Err(bind_err!(
            "argument of {clause} must be BOOLEAN, not {}",
            type_name(&other)
        )),
    }
}

fn bind_in(
    expr: &ast::Expr,
    scope: &Scope,
    aggregation: Option<&mut Aggregation>,
    clause: &str,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    match aggregation {
        Some(agg) => bind_expr(expr, &mut Context::Aggregated(agg, binder)),
        None => bind_expr(
            expr,
            &mut Context::Plain {
                scope,
                clause,
                binder,
            },
        ),
    }
}

fn item_has_aggregate(item: &ast::SelectItem) -> bool {
    match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            contains_aggregate(e)
        }
        _ => false,
    }
}

fn filter(plan: LogicalPlan, predicate: Expr, clause: &str) -> Result<LogicalPlan> {
    let predicate = match predicate.data_type() {
        DataType::Boolean => predicate,
        DataType::Null => predicate.cast(&DataType::Boolean),
        other => {
            return Err(bind_err!(
                "argument of {clause} must be BOOLEAN, not {}",
                type_name(&other)
            ));
        }
    };
    Ok(LogicalPlan::Filter {
        input: Box::new(plan),
        predicate,
    })
}

/// GROUP BY may name an output column by position or alias, as Postgres allows.
fn resolve_group_alias<'e>(
    expr: &'e ast::Expr,
    projection: &'e [ast::SelectItem],
    scope: &Scope,
) -> Result<&'e ast::Expr> {
    if let Some(position) = positional(expr)? {
        return match projection.get(position.wrapping_sub(1)) {
            Some(ast::SelectItem::UnnamedExpr(e))
            | Some(ast::SelectItem::ExprWithAlias { expr: e, .. }) => Ok(e),
            _ => Err(bind_err!(
                "GROUP BY position {position} is not in the select list"
            )),
        };
    }
    if let ast::Expr::Identifier(ident) = expr {
        let name = normalize(ident);
        if scope.resolve(None, &name).is_err() {
            for item in projection {
                if let ast::SelectItem::ExprWithAlias { expr, alias } = item
                    && normalize(alias) == name
                {
                    return Ok(expr);
                }
            }
        }
    }
    Ok(expr)
}

/// `Some(n)` when the expression is the integer literal `n` (a position in the select list).
fn positional(expr: &ast::Expr) -> Result<Option<usize>> {
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n
                .parse::<usize>()
                .map(Some)
                .map_err(|_| bind_err!("invalid position {n}")),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The output column an ORDER BY item names, by position or by output name.
fn output_position(expr: &ast::Expr, names: &[String]) -> Result<Option<usize>> {
    if let Some(position) = positional(expr)? {
        if position == 0 || position > names.len() {
            return Err(bind_err!(
                "ORDER BY position {position} is not in select list"
            ));
        }
        return Ok(Some(position - 1));
    }
    if let ast::Expr::Identifier(ident) = expr {
        let name = normalize(ident);
        let mut matches = names.iter().enumerate().filter(|(_, n)| **n == name);
        if let (Some((index, _)), None) = (matches.next(), matches.next()) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// (descending, nulls first); NULLs sort as if larger than every value, as in Postgres.
pub(super) fn sort_options(item: &ast::OrderByExpr) -> Result<(bool, bool)> {
    let descending = match &item.options.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(_) => return Err(unsupported!("ORDER BY ... USING")),
    };
    Ok((descending, item.options.nulls_first.unwrap_or(descending)))
}

/// ORDER BY over the output of a query body that is not a SELECT (VALUES, a nested query).
fn order_output(
    plan: LogicalPlan,
    scope: &Scope,
    order_by: &[ast::OrderByExpr],
) -> Result<LogicalPlan> {
    if order_by.is_empty() {
        return Ok(plan);
    }
    let names: Vec<String> = scope.columns.iter().map(|c| c.name.clone()).collect();
    let mut keys = Vec::new();
    for item in order_by {
        let expr = match output_position(&item.expr, &names)? {
            Some(i) => Expr::column(i, &names[i], scope.columns[i].data_type.clone()),
            None => bind_expr(&item.expr, &mut Context::plain(scope, "ORDER BY"))?,
        };
        let (descending, nulls_first) = sort_options(item)?;
        keys.push(SortKey {
            expr,
            descending,
            nulls_first,
        });
    }
    Ok(LogicalPlan::Sort {
        input: Box::new(plan),
        keys,
        fetch: None,
    })
}

fn constant_count(expr: &ast::Expr, clause: &str) -> Result<usize> {
    match positional(expr) {
        Ok(Some(n)) => Ok(n),
        _ => Err(bind_err!(
            "{clause} must be a non-negative integer, not {expr}"
        )),
    }
}

/// Whether values of type `from` may be stored as type `to`: the same type, NULL, text
/// (parsed), a number as a number, a date or timestamp as a timestamp of either kind (ADR
/// 0067), a list as a list of elements
/// that may be, and a struct as a struct.
fn assignable(from: &DataType, to: &DataType) -> bool {
    let numeric = crate::types::is_numeric;
    match (from, to) {
        (DataType::List(from), DataType::List(to)) => assignable(from.data_type(), to.data_type()),
        // Field by field, by name or position, as a cast (ADR 0063); a map key by key.
        (DataType::Struct(_), DataType::Struct(_)) | (DataType::Map(..), DataType::Map(..)) => true,
        _ => {
            from == to
                || *from == DataType::Null
                || *from == DataType::Utf8
                || (numeric(from) && numeric(to))
                || (matches!(from, DataType::Date32 | DataType::Timestamp(..))
                    && matches!(to, DataType::Timestamp(..)))
                // A timestamp stored in a DATE column keeps its date, as PostgreSQL's
                // assignment cast and DuckDB do (`DATE '2024-01-01' + INTERVAL 1 DAY`).
                || (matches!(from, DataType::Timestamp(..)) && *to == DataType::Date32)
        }
    }
}

/// Whether a value of type `from` may be stored in a column of type `to`.
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

fn check_assignable(from: &DataType, to: &DataType, column: &str) -> Result<()> {
    if assignable(from, to) {
        Ok(())
    } else {
        Err(bind_err!(
            "column {column} is of type {} but the value is of type {}",
            type_name(to),
            type_name(from)
        ))
    }
}

/// A table name with its schema, if given (`pg_catalog.pg_class`), normalized. A database
/// name before them (`pondra.public.t`, as dbt writes) is the lake's own: a server opens one
/// lake per connection.
fn qualified_name(name: &ast::ObjectName) -> Result<(Option<String>, String)> {
    let part = |p: &ast::ObjectNamePart| {
        p.as_ident()
            .map(normalize)
            .ok_or_else(|| bind_err!("invalid name {name}"))
    };
    match name.0.as_slice() {
        [table] => Ok((None, part(table)?)),
        [schema, table] | [_, schema, table] => Ok((Some(part(schema)?), part(table)?)),
        _ => Err(bind_err!("invalid name {name}")),
    }
}

/// An object's name, normalized: a table of `public` by its name alone (`t`, `public.t` and
/// dbt's `database.public.t` name `t`), one of another schema as `schema.table`.
/// The interval `text` writes as DuckDB and Postgres write them (`1 year 2 days`,
/// `3 days 12:30:00`, `2 days ago`): its months, days and nanoseconds; `None` for text that
/// is no interval.
pub fn interval_from_text(text: &str) -> Option<(i32, i32, i64)> {
    match expr::interval_of_text(text, None) {
        Ok(crate::scalar::ScalarValue::Interval {
            months,
            days,
            nanos,
        }) => Some((months, days, nanos)),
        _ => None,
    }
}

pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    let part = |i: &ast::ObjectNamePart| {
        i.as_ident()
            .map(normalize)
            .ok_or_else(|| bind_err!("invalid name {name}"))
    };
    match name.0.as_slice() {
        [table] => part(table),
        [schema, table] | [_, schema, table] => match part(schema)?.as_str() {
            "public" | "main" => part(table),
            schema => Ok(format!("{schema}.{}", part(table)?)),
        },
        _ => Err(bind_err!("invalid name {name}")),
    }
}

/// A function's name in FROM; Postgres's own functions may be named in `pg_catalog`.
fn function_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [schema, function]
            if schema.as_ident().is_some_and(|s| {
                s.value.eq_ignore_ascii_case("pg_catalog")
                    || s.value.eq_ignore_ascii_case("information_schema")
            }) =>
        {
            function
                .as_ident()
                .map(normalize)
                .ok_or_else(|| bind_err!("invalid name {name}"))
        }
        _ => object_name(name),
    }
}

/// The value paired with the oid `oid` is (and, where a pair names one, with the value of a
/// second argument), NULL when none is: the catalog's objects are few, so a CASE over them
/// serves the catalog functions clients call per row.
fn by_oid<'e>(
    oid: Expr,
    values: impl IntoIterator<Item = (i32, Option<(&'e Expr, i32)>, ScalarValue)>,
    data_type: DataType,
) -> Expr {
    let oid = oid.cast(&DataType::Int32);
    let equals = |left: &Expr, right: i32| Expr::Binary {
        op: crate::expr::BinaryOp::Eq,
        left: Box::new(left.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int32(right))),
    };
    let branches = values
        .into_iter()
        .map(|(key, second, value)| {
            let mut matches = equals(&oid, key);
            if let Some((argument, expected)) = second {
                matches = Expr::Binary {
                    op: crate::expr::BinaryOp::And,
                    left: Box::new(matches),
                    right: Box::new(equals(argument, expected)),
                };
            }
            (matches, Expr::Literal(value).cast(&data_type))
        })
        .collect();
    Expr::Case {
        branches,
        otherwise: None,
        data_type,
    }
}

/// The name a select item gets without an alias: the column's name, else the expression's text.
fn output_name(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Identifier(ident) => normalize(ident),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(normalize).unwrap_or_default(),
        ast::Expr::Nested(inner) => output_name(inner),
        other => pondra_parser::with_exclusions_written(&other.to_string()),
    }
}

fn first_words(statement: &ast::Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
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

/// The condition a row of `table` meets until its TTL expires it: its TTL column is NULL or
/// not older than the TTL before now.
fn unexpired(table: &pondra_catalog::TableDef, ttl: &pondra_catalog::Ttl) -> Expr {
    let index = table
        .columns
        .iter()
        .position(|c| c.name == ttl.column)
        .expect("a TTL column is a column of its table");
    let column = &table.columns[index];
    let value = Expr::column(index, &column.name, column.sql_type.to_arrow());
    let now = pondra_catalog::now_ms();
    let cutoff = match column.sql_type {
        pondra_catalog::SqlType::Date => ScalarValue::Date32(ttl.cutoff_days(now)),
        _ => ScalarValue::TimestampMicros(ttl.cutoff_micros(now)),
    };
    Expr::Binary {
        op: crate::expr::BinaryOp::Or,
        left: Box::new(Expr::IsNull(Box::new(value.clone()))),
        right: Box::new(Expr::Binary {
            op: crate::expr::BinaryOp::GtEq,
            left: Box::new(value),
            right: Box::new(Expr::Literal(cutoff)),
        }),
    }
}

/// `NATURAL` as the `USING` of the column names both sides have (none: a cross join), as
/// PostgreSQL; any other constraint as it is.
fn natural_as_using(
    constraint: &ast::JoinConstraint,
    left: &[scope::ScopeColumn],
    right: &Scope,
) -> ast::JoinConstraint {
    if !matches!(constraint, ast::JoinConstraint::Natural) {
        return constraint.clone();
    }
    let common = left
        .iter()
        .filter(|l| !l.hidden)
        .filter(|l| right.columns.iter().any(|r| !r.hidden && r.name == l.name))
        .map(|l| ast::ObjectName::from(vec![ast::Ident::with_quote('"', l.name.clone())]))
        .collect();
    ast::JoinConstraint::Using(common)
}

/// After `JOIN ... USING (k)`, `*` and an unqualified `k` name one column, as in PostgreSQL:
/// the left side's (the right side's for a RIGHT JOIN, whose rows it always has). The other
/// copy stays reachable qualified.
fn hide_using_copies(
    constraint: &ast::JoinConstraint,
    joined: &mut Scope,
    left_width: usize,
    is_right: bool,
) -> Result<()> {
    let ast::JoinConstraint::Using(names) = constraint else {
        return Ok(());
    };
    for name in names {
        let name = object_name(name)?;
        let (left, right) = joined.columns.split_at(left_width);
        let find = |side: &[scope::ScopeColumn]| {
            side.iter()
                .rposition(|c| !c.hidden && c.name.eq_ignore_ascii_case(&name))
        };
        let (Some(l), Some(r)) = (find(left), find(right)) else {
            continue;
        };
        let hidden = match is_right {
            true => l,
            false => left_width + r,
        };
        joined.columns[hidden].hidden = true;
        joined.columns[hidden].merged = true;
    }
    Ok(())
}

/// `GROUP BY ALL` (DuckDB): by every select-list expression that holds no aggregate.
fn group_by_all(projection: &[ast::SelectItem]) -> Result<Vec<ast::Expr>> {
    let mut group = Vec::new();
    for item in projection {
        let expr = match item {
            ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
                expr
            }
            _ => return Err(unsupported!("GROUP BY ALL with * in the select list")),
        };
        if !contains_aggregate(expr) {
            group.push(expr.clone());
        }
    }
    Ok(group)
}

/// `predicate` with each name of a select-list alias that is not a column of `scope` replaced
/// by the aliased expression: QUALIFY may name a window function by its alias (DuckDB).
fn with_select_aliases(
    predicate: &ast::Expr,
    projection: &[ast::SelectItem],
    scope: &Scope,
) -> ast::Expr {
    let mut predicate = predicate.clone();
    let _ = ast::visit_expressions_mut(&mut predicate, |expr| {
        if let ast::Expr::Identifier(ident) = expr
            && scope.resolve(None, &normalize(ident)).is_err()
        {
            let aliased = projection.iter().find_map(|item| match item {
                ast::SelectItem::ExprWithAlias { expr, alias }
                    if normalize(alias) == normalize(ident) =>
                {
                    Some(expr.clone())
                }
                _ => None,
            });
            if let Some(aliased) = aliased {
                *expr = ast::Expr::Nested(Box::new(aliased));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    predicate
}

/// `SELECT DISTINCT ON (k, ...) ... ORDER BY ...` (PostgreSQL): of each group of rows equal on
/// the keys, the first in the query's order; the same select with the group's first row kept
/// by `QUALIFY row_number() OVER (PARTITION BY k, ... ORDER BY ...) = 1`.
fn distinct_on(
    select: &ast::Select,
    on: &[ast::Expr],
    order_by: &[ast::OrderByExpr],
) -> Result<ast::Select> {
    let position = |expr: &ast::Expr| -> Result<ast::Expr> {
        Ok(match positional(expr)? {
            Some(n) => match select.projection.get(n.wrapping_sub(1)) {
                Some(
                    ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. },
                ) => e.clone(),
                _ => return Err(bind_err!("ORDER BY position {n} is not in the select list")),
            },
            None => expr.clone(),
        })
    };
    let keys: Vec<String> = on
        .iter()
        .map(|e| Ok(position(e)?.to_string()))
        .collect::<Result<_>>()?;
    let mut order = Vec::new();
    for item in order_by {
        let mut item = item.clone();
        item.expr = position(&item.expr)?;
        order.push(item.to_string());
    }
    let order = match order.is_empty() {
        true => String::new(),
        false => format!(" ORDER BY {}", order.join(", ")),
    };
    let first = format!(
        "row_number() OVER (PARTITION BY {}{order}) = 1",
        keys.join(", ")
    );
    let mut first = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(&first)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| bind_err!("DISTINCT ON: {e}"))?;
    if let Some(qualify) = &select.qualify {
        first = ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::Nested(Box::new(qualify.clone()))),
            op: ast::BinaryOperator::And,
            right: Box::new(first),
        };
    }
    let mut rewritten = select.clone();
    rewritten.distinct = None;
    rewritten.qualify = Some(first);
    Ok(rewritten)
}

/// `fetch` with its WITH TIES taken off, to read its count and offset as a LIMIT's.
fn without_ties(fetch: &ast::Fetch) -> ast::Fetch {
    ast::Fetch {
        with_ties: false,
        ..fetch.clone()
    }
}

/// `[OFFSET n ROWS] FETCH FIRST | NEXT [n] ROWS ONLY` (SQL:2008) as the LIMIT it is: one row
/// when no count is given. `PERCENT` is refused by name (`WITH TIES` is `ties.rs`).
fn fetch_as_limit(
    fetch: &ast::Fetch,
    limit: Option<&ast::LimitClause>,
) -> Result<ast::LimitClause> {
    if fetch.percent {
        return Err(unsupported!("FETCH ... PERCENT"));
    }
    assert!(!fetch.with_ties, "WITH TIES is bound by ties.rs");
    let offset = match limit {
        None => None,
        Some(ast::LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset.clone(),
        Some(_) => return Err(bind_err!("a query takes LIMIT or FETCH, not both")),
    };
    let count = fetch
        .quantity
        .clone()
        .unwrap_or_else(|| ast::Expr::value(ast::Value::Number("1".into(), false)));
    Ok(ast::LimitClause::LimitOffset {
        limit: Some(count),
        offset,
        limit_by: Vec::new(),
    })
}
