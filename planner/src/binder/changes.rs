//! Statements that change rows in place (UPDATE, DELETE) or declare schema objects that hold
//! no rows of their own (views, indexes).

use std::sync::Arc;

use arrow::datatypes::DataType;
use pondra_catalog::{COMMIT_TIMESTAMP, COMMIT_VERSION, Index, ROW_ADDRESS, TableDef, TableKind};
use pondra_parser::ast;

use super::assign::check_assignable;
use super::scope::normalize;
use super::{Binder, object_name};
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::plan::{Plan, RewriteKind};
use crate::{Result, bind_err, unsupported};

impl Binder<'_> {
    /// `UPDATE t SET c = e, ... [WHERE p]`: the new version of each row it changes, the address
    /// of the old one, and the old one with its commit.
    ///
    /// The values are computed by a query the binder writes itself, so that the assignments and
    /// the condition may use anything a SELECT may (subqueries included):
    /// `SELECT t.*, t._row_address, t._commit_version, t._commit_timestamp, e, ... FROM t
    /// WHERE p`.
    pub(super) fn bind_update(&self, update: &ast::Update) -> Result<Plan> {
        if update.from.is_some() {
            return Err(unsupported!("UPDATE ... FROM"));
        }
        if let Some(items) = &update.returning {
            let without = ast::Update {
                returning: None,
                ..update.clone()
            };
            let write = self.bind_update(&without)?;
            let (table, qualifier) = self.changed_table(&update.table.relation, "UPDATE")?;
            return self.returning(write, &table, Some(qualifier), items);
        }
        if !update.table.joins.is_empty() {
            return Err(unsupported!("UPDATE of a join"));
        }
        let (table, qualifier) = self.changed_table(&update.table.relation, "UPDATE")?;
        let mut targets: Vec<(usize, &ast::Expr)> = Vec::new();
        for assignment in &update.assignments {
            let ast::AssignmentTarget::ColumnName(name) = &assignment.target else {
                return Err(unsupported!("assigning a tuple of columns"));
            };
            let column = match name.0.as_slice() {
                [.., last] => last
                    .as_ident()
                    .map(normalize)
                    .ok_or_else(|| bind_err!("invalid column name {name}"))?,
                [] => return Err(bind_err!("an assignment needs a column")),
            };
            let index = table
                .columns
                .iter()
                .position(|c| c.name == column)
                .ok_or_else(|| bind_err!("table {} has no column named {column}", table.name))?;
            if targets.iter().any(|(i, _)| *i == index) {
                return Err(bind_err!(
                    "multiple assignments to the same column {column}"
                ));
            }
            targets.push((index, &assignment.value));
        }
        let mut select = format!(
            "SELECT {qualifier}.*, {qualifier}.{ROW_ADDRESS}, {qualifier}.{COMMIT_VERSION}, \
             {qualifier}.{COMMIT_TIMESTAMP}"
        );
        for (_, value) in &targets {
            select.push_str(&format!(", ({value})"));
        }
        select.push_str(&format!(
            " FROM {}{}",
            update.table,
            where_sql(&update.selection)
        ));
        let input = self.addressing(&table).bind_query(&parse_query(&select)?)?;
        let schema = input.schema();
        let width = table.columns.len();
        let mut exprs = Vec::with_capacity(width + 1);
        for (index, column) in table.columns.iter().enumerate() {
            let target = column.sql_type.to_arrow();
            let expr = match targets.iter().position(|(i, _)| *i == index) {
                Some(position) => {
                    let at = width + 3 + position;
                    let field = schema.field(at);
                    check_assignable(field.data_type(), &target, &column.name)?;
                    Expr::column(at, field.name(), field.data_type().clone()).cast(&target)
                }
                None => Expr::column(index, &column.name, target),
            };
            exprs.push(expr);
        }
        exprs.push(Expr::column(width, ROW_ADDRESS, DataType::Int64));
        let mut names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        names.push(ROW_ADDRESS.into());
        // The old version and its commit, for the change record.
        for (index, column) in table.columns.iter().enumerate() {
            exprs.push(Expr::column(
                index,
                &column.name,
                column.sql_type.to_arrow(),
            ));
            names.push(format!("old_{}", column.name));
        }
        for (at, name) in [(width + 1, COMMIT_VERSION), (width + 2, COMMIT_TIMESTAMP)] {
            exprs.push(Expr::column(at, name, schema.field(at).data_type().clone()));
            names.push(name.into());
        }
        Ok(Plan::Rewrite {
            table,
            input: input.project(exprs, names),
            kind: RewriteKind::Update,
        })
    }

    /// `DELETE FROM t [WHERE p]`: each row it deletes, with its commit and address.
    pub(super) fn bind_delete(&self, delete: &ast::Delete) -> Result<Plan> {
        if delete.using.is_some() {
            return Err(unsupported!("DELETE ... USING"));
        }
        if let Some(items) = &delete.returning {
            let without = ast::Delete {
                returning: None,
                ..delete.clone()
            };
            let write = self.bind_delete(&without)?;
            let Plan::Rewrite { table, .. } = &write else {
                unreachable!("a DELETE binds to a rewrite");
            };
            let table = table.clone();
            let from = match &delete.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            let qualifier = match from.first().map(|f| &f.relation) {
                Some(ast::TableFactor::Table {
                    alias: Some(alias), ..
                }) => Some(normalize(&alias.name)),
                _ => None,
            };
            return self.returning(write, &table, qualifier, items);
        }
        if delete.limit.is_some() || !delete.order_by.is_empty() {
            return Err(unsupported!("DELETE with ORDER BY or LIMIT"));
        }
        let from = match &delete.from {
            ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
        };
        let [item] = from.as_slice() else {
            return Err(unsupported!("DELETE from several tables"));
        };
        if !item.joins.is_empty() || !delete.tables.is_empty() {
            return Err(unsupported!("DELETE from a join"));
        }
        let (table, qualifier) = self.changed_table(&item.relation, "DELETE")?;
        let selection = where_sql(&delete.selection);
        let select = format!(
            "SELECT {qualifier}.*, {qualifier}.{COMMIT_VERSION}, {qualifier}.{COMMIT_TIMESTAMP}, \
             {qualifier}.{ROW_ADDRESS} FROM {item}{selection}"
        );
        let input = self.addressing(&table).bind_query(&parse_query(&select)?)?;
        Ok(Plan::Rewrite {
            table,
            input,
            kind: RewriteKind::Delete,
        })
    }

    /// `TRUNCATE [TABLE] t`: every row deleted, as `DELETE FROM t` deletes them (the table's
    /// earlier versions keep them, as after any delete).
    pub(super) fn bind_truncate(&self, truncate: &ast::Truncate) -> Result<Plan> {
        let [target] = truncate.table_names.as_slice() else {
            return Err(unsupported!("TRUNCATE of several tables"));
        };
        if truncate.partitions.is_some() || truncate.identity.is_some() {
            return Err(unsupported!("TRUNCATE with PARTITION or IDENTITY options"));
        }
        if let Some(ast::CascadeOption::Cascade) = truncate.cascade {
            return Err(unsupported!("TRUNCATE ... CASCADE"));
        }
        let sql = format!("DELETE FROM {}", target.name);
        let dialect = sqlparser::dialect::DuckDbDialect {};
        let statement = sqlparser::parser::Parser::parse_sql(&dialect, &sql)
            .map_err(|e| bind_err!("TRUNCATE {}: {e}", target.name))?;
        match statement.as_slice() {
            [ast::Statement::Delete(delete)] => self.bind_delete(delete),
            _ => unreachable!("a DELETE was written"),
        }
    }

    /// The stored table an UPDATE or DELETE changes, and the name its columns are qualified by.
    pub(super) fn changed_table(
        &self,
        relation: &ast::TableFactor,
        statement: &str,
    ) -> Result<(Arc<TableDef>, String)> {
        let ast::TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = relation
        else {
            return Err(unsupported!("{statement} of anything but a table"));
        };
        let table_name = object_name(name)?;
        if self.temporary.iter().any(|t| t.name == table_name) {
            return Err(unsupported!("{statement} of a temporary table"));
        }
        let table = self.table(&table_name)?.clone();
        if !matches!(table.kind, TableKind::Table) {
            return Err(bind_err!(
                "cannot {statement} {}: it is a view, not a table",
                table.name
            ));
        }
        // What the query the binder writes qualifies the table's columns by: a FROM item's
        // scope is named by its alias, or by its table's name without a schema.
        let qualifier = match (alias, name.0.last()) {
            (Some(alias), _) => alias.name.to_string(),
            (None, Some(last)) => last.to_string(),
            (None, None) => return Err(bind_err!("invalid name {name}")),
        };
        Ok((table, qualifier))
    }

    pub(super) fn bind_create_index(&self, create: &ast::CreateIndex) -> Result<Plan> {
        if create.unique {
            return Err(unsupported!("UNIQUE indexes (uniqueness is not enforced)"));
        }
        if create.predicate.is_some() {
            return Err(unsupported!("partial indexes (CREATE INDEX ... WHERE)"));
        }
        let name = create
            .name
            .as_ref()
            .ok_or_else(|| bind_err!("CREATE INDEX needs a name"))
            .and_then(object_name)?;
        let table = self.table(&object_name(&create.table_name)?)?;
        if !matches!(table.kind, TableKind::Table) {
            return Err(bind_err!("cannot index {}: it is not a table", table.name));
        }
        let mut columns = Vec::new();
        for column in &create.columns {
            let ast::Expr::Identifier(ident) = &column.column.expr else {
                return Err(unsupported!("indexes on expressions"));
            };
            let column = normalize(ident);
            if !table.columns.iter().any(|c| c.name == column) {
                return Err(bind_err!(
                    "table {} has no column named {column}",
                    table.name
                ));
            }
            columns.push(column);
        }
        let vector = super::vectors::vector_index(create, table, &columns)?;
        Ok(Plan::CreateIndex {
            table: table.name.clone(),
            index: Index {
                name,
                columns,
                vector,
            },
            if_not_exists: create.if_not_exists,
        })
    }

    /// `CREATE VIEW v [(columns)] AS query`: the query is checked now and bound again on every
    /// read, against the tables as they are then.
    pub(super) fn bind_create_view(&self, create: &ast::CreateView) -> Result<Plan> {
        if create.or_alter {
            return Err(unsupported!("CREATE OR ALTER VIEW"));
        }
        let name = object_name(&create.name)?;
        let column_names: Vec<String> = create.columns.iter().map(|c| normalize(&c.name)).collect();
        let sql = create.query.to_string();
        let view = TableDef::new(
            name.clone(),
            Vec::new(),
            TableKind::View { sql, column_names },
        );
        let plan = self.view_plan(&view)?;
        let mut seen = std::collections::HashSet::new();
        for field in plan.schema().fields() {
            if !seen.insert(field.name().clone()) {
                return Err(bind_err!(
                    "view {name} would have two columns named {}; name them with AS",
                    field.name()
                ));
            }
        }
        Ok(Plan::CreateView {
            view,
            if_not_exists: create.if_not_exists,
            or_replace: create.or_replace,
        })
    }

    /// The plan a view stands for, bound apart from the query that reads it (that query's CTEs
    /// and outer columns are not visible inside the view).
    pub(super) fn view_plan(&self, view: &TableDef) -> Result<LogicalPlan> {
        let TableKind::View { sql, column_names } = &view.kind else {
            unreachable!("not a view");
        };
        if self.view_depth >= super::MAX_VIEW_DEPTH {
            return Err(bind_err!(
                "views read views more than {} deep at {} (does a view read itself?)",
                super::MAX_VIEW_DEPTH,
                view.name
            ));
        }
        let query = parse_query(sql)?;
        let query = match super::macros::expand_macros(
            self.snapshot,
            &ast::Statement::Query(Box::new(query.clone())),
        )? {
            Some(ast::Statement::Query(expanded)) => *expanded,
            _ => query,
        };
        let binder = Binder {
            external: self.external,
            view_depth: self.view_depth + 1,
            time_zone: self.time_zone,
            statement_micros: self.statement_micros,
            ..Binder::new(self.snapshot)
        };
        let plan = binder.bind_query(&query)?;
        if column_names.is_empty() {
            return Ok(plan);
        }
        let schema = plan.schema();
        if column_names.len() != schema.fields().len() {
            return Err(bind_err!(
                "view {} names {} columns but its query has {}",
                view.name,
                column_names.len(),
                schema.fields().len()
            ));
        }
        let exprs = Expr::columns_of(&schema);
        Ok(plan.project(exprs, column_names.clone()))
    }
}

/// ` WHERE p`, or nothing with no condition.
fn where_sql(selection: &Option<ast::Expr>) -> String {
    match selection {
        Some(predicate) => format!(" WHERE {predicate}"),
        None => String::new(),
    }
}

pub(super) fn parse_query(sql: &str) -> Result<ast::Query> {
    let mut statements = pondra_parser::parse_sql(sql).map_err(|e| bind_err!("{e}"))?;
    match statements.pop().map(|s| s.statement) {
        Some(pondra_parser::Statement::Sql(statement)) => match *statement {
            ast::Statement::Query(query) => Ok(*query),
            other => Err(bind_err!("expected a query, found {other}")),
        },
        _ => Err(bind_err!("expected a query")),
    }
}
