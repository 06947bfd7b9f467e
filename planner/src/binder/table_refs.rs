//! What a name or a function in FROM reads: a CTE, a table or view, a system table, a file read
//! in place, a table function or a derived table; and the scan of a table or materialized view.

use std::sync::Arc;

use arrow::datatypes::DataType;
use pondra_catalog::TableKind;
use pondra_parser::ast;

use super::from::rename_columns;
use super::names::{function_name, qualified_name};
use super::scope::{Scope, normalize};
use super::{Binder, lateral, recursive, samples, secrets, table_functions, time_windows};
use crate::expr::Expr;
use crate::external::ExternalTable;
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

impl<'a> Binder<'a> {
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
    pub(super) fn bind_factor(&self, factor: &ast::TableFactor) -> Result<(LogicalPlan, Scope)> {
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
                if let Some(plan) = self.bind_table_function_call(&function, &args.args)? {
                    let plan = rename_columns(plan, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let scope =
                        Scope::from_schema(&plan.schema(), Some(&qualifier.unwrap_or(function)));
                    return Ok((plan, scope));
                }
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
                if function == secrets::DUCKDB_SECRETS {
                    let plan = secrets::duckdb_secrets(self.snapshot, &args.args)?;
                    let plan = rename_columns(plan, alias.as_ref())?;
                    let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                    let scope =
                        Scope::from_schema(&plan.schema(), Some(&qualifier.unwrap_or(function)));
                    return Ok((plan, scope));
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

    /// A `pg_catalog` or `information_schema` table as of this snapshot.
    fn system_table(&self, schema: &str, name: &str) -> Option<LogicalPlan> {
        if name == secrets::PONDRA_SECRETS {
            return Some(secrets::pondra_secrets(self.snapshot));
        }
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
    pub(super) fn scan(&self, table: &Arc<pondra_catalog::TableDef>) -> Result<LogicalPlan> {
        match &table.kind {
            TableKind::Table => {
                let scan = LogicalPlan::Scan {
                    table: table.clone(),
                    schema: table.scan_schema_hidden(
                        self.system_columns,
                        self.row_ids,
                        self.addressed == Some(table.id),
                        self.offsets,
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
            TableKind::Procedure { .. } => {
                Err(bind_err!("{} is a procedure, not a table", table.name))
            }
        }
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
