//! Statements other than queries: CREATE, DROP, INSERT, COPY, SHOW TABLES, DESCRIBE.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, TableKind};
use pondra_parser::ast;

use super::assign::check_assignable;
use super::scope::normalize;
use super::table_options::table_options;
use super::{Binder, object_name, type_name};
use crate::expr::Expr;
use crate::external::ExternalTable;
use crate::logical::LogicalPlan;
use crate::plan::Plan;
use crate::scalar::ScalarValue;
use crate::types::sql_type_from_ast;
use crate::{Result, bind_err, unsupported};

/// The name under which a RETURNING list reads the rows its write wrote.
const RETURNED_ROWS: &str = "pondra_returned_rows";

impl Binder<'_> {
    pub(super) fn bind_create_table(&self, create: &ast::CreateTable) -> Result<Plan> {
        let name = object_name(&create.name)?;
        if create.or_replace {
            self.check_replaceable(&name, create.temporary)?;
        }
        let has_options = !matches!(create.table_options, ast::CreateTableOptions::None);
        if has_options && (create.query.is_some() || create.temporary) {
            return Err(unsupported!(
                "table options on CREATE TABLE AS or a temporary table"
            ));
        }
        if let Some(query) = &create.query {
            if !create.columns.is_empty() {
                return Err(unsupported!("column definitions with AS SELECT"));
            }
            let input = self.bind_query(query)?;
            let mut columns = Vec::new();
            for field in input.schema().fields() {
                let sql_type =
                    pondra_catalog::SqlType::from_arrow(field.data_type()).ok_or_else(|| {
                        bind_err!(
                            "column {} of type {} cannot be stored",
                            field.name(),
                            type_name(field.data_type())
                        )
                    })?;
                if columns.iter().any(|c: &Column| c.name == *field.name()) {
                    return Err(bind_err!("column {} is named twice", field.name()));
                }
                columns.push(Column {
                    name: field.name().clone(),
                    sql_type,
                    not_null: false,
                    id: 0,
                });
            }
            return Ok(Plan::CreateTableAs {
                name,
                columns,
                input,
                if_not_exists: create.if_not_exists,
                temporary: create.temporary,
                or_replace: create.or_replace,
            });
        }
        let mut columns: Vec<Column> = Vec::new();
        let mut defaults = std::collections::BTreeMap::new();
        let mut key: Vec<String> = Vec::new();
        let mut unique: Vec<Vec<String>> = Vec::new();
        for def in &create.columns {
            let column_name = normalize(&def.name);
            if columns.iter().any(|c| c.name == column_name) {
                return Err(bind_err!("column {column_name} is named twice"));
            }
            let mut not_null = false;
            for option in &def.options {
                match &option.option {
                    ast::ColumnOption::Null => {}
                    ast::ColumnOption::Default(value) => {
                        let sql_type = sql_type_from_ast(&def.data_type)?;
                        self.column_default(value, &column_name, &sql_type.to_arrow())?;
                        defaults.insert(column_name.clone(), value.to_string());
                    }
                    ast::ColumnOption::NotNull => not_null = true,
                    ast::ColumnOption::PrimaryKey(_) => {
                        if !key.is_empty() {
                            return Err(bind_err!("a table has at most one PRIMARY KEY"));
                        }
                        key.push(column_name.clone());
                    }
                    ast::ColumnOption::Unique(_) => unique.push(vec![column_name.clone()]),
                    other => return Err(unsupported!("the column constraint {other}")),
                }
            }
            columns.push(Column {
                name: column_name,
                sql_type: sql_type_from_ast(&def.data_type)?,
                not_null,
                id: 0,
            });
        }
        for constraint in &create.constraints {
            let (constraint_columns, is_key) = match constraint {
                ast::TableConstraint::PrimaryKey(primary) => (&primary.columns, true),
                ast::TableConstraint::Unique(u) => (&u.columns, false),
                other => return Err(unsupported!("the table constraint {other}")),
            };
            let mut names = Vec::new();
            for column in constraint_columns {
                let ast::Expr::Identifier(ident) = &column.column.expr else {
                    return Err(bind_err!(
                        "a constraint lists columns, not {}",
                        column.column
                    ));
                };
                let name = normalize(ident);
                if !columns.iter().any(|c| c.name == name) {
                    return Err(bind_err!(
                        "constraint column {name} is not a column of the table"
                    ));
                }
                if names.contains(&name) {
                    return Err(bind_err!("a constraint names column {name} twice"));
                }
                names.push(name);
            }
            if !is_key {
                unique.push(names);
            } else if key.is_empty() {
                key = names;
            } else {
                return Err(bind_err!("a table has at most one PRIMARY KEY"));
            }
        }
        for column in &mut columns {
            column.not_null |= key.contains(&column.name);
        }
        let constrained = key.iter().chain(unique.iter().flatten());
        for name in constrained {
            if let Some(column) = columns
                .iter()
                .find(|c| &c.name == name && !c.sql_type.is_scalar())
            {
                return Err(unsupported!(
                    "a key or UNIQUE constraint on the {} column {name} (ADR 0059)",
                    column.sql_type
                ));
            }
        }
        if columns.is_empty() {
            return Err(bind_err!("a table needs at least one column"));
        }
        if create.temporary {
            if !key.is_empty() || !unique.is_empty() || !defaults.is_empty() {
                return Err(unsupported!(
                    "constraints and defaults on a temporary table"
                ));
            }
            // A temporary table starts as the empty result of its columns.
            let fields: Vec<arrow::datatypes::Field> = columns
                .iter()
                .map(|c| arrow::datatypes::Field::new(&c.name, c.sql_type.to_arrow(), true))
                .collect();
            let input = LogicalPlan::Values {
                schema: Arc::new(arrow::datatypes::Schema::new(fields)),
                rows: Vec::new(),
            };
            return Ok(Plan::CreateTableAs {
                name,
                columns,
                input,
                if_not_exists: create.if_not_exists,
                temporary: true,
                or_replace: false,
            });
        }
        let options = table_options(&create.table_options, &columns, &key)?;
        Ok(Plan::CreateTable {
            name,
            columns,
            key,
            unique,
            ttl: options.ttl,
            watermark: options.watermark,
            folds: options.folds,
            publish: options.publish,
            kafka_format: options.kafka_format,
            partitions: options.partitions,
            defaults,
            if_not_exists: create.if_not_exists,
            or_replace: create.or_replace,
        })
    }

    /// A column's default bound as a value of `target` (ADR 0073): over no columns, without
    /// subqueries.
    pub(super) fn column_default(
        &self,
        value: &ast::Expr,
        column: &str,
        target: &DataType,
    ) -> Result<Expr> {
        let empty = super::scope::Scope::default();
        let mut ctx = super::expr::Context::plain(&empty, "DEFAULT");
        let bound = super::expr::bind_expr(value, &mut ctx)
            .map_err(|e| bind_err!("the default of column {column}: {e}"))?;
        check_assignable(&bound.data_type(), target, column)?;
        Ok(bound.cast(target))
    }

    /// The value an INSERT gives `column` of `table` when it does not name it: its default,
    /// else NULL.
    fn insert_default(
        &self,
        table: &pondra_catalog::TableDef,
        column: &pondra_catalog::Column,
    ) -> Result<Expr> {
        let target = column.sql_type.to_arrow();
        match table.defaults.get(&column.name) {
            Some(text) => {
                let value = pondra_parser::parse_expression(text)
                    .map_err(|e| bind_err!("the default of column {}: {e}", column.name))?;
                self.column_default(&value, &column.name, &target)
            }
            None => Ok(Expr::Literal(ScalarValue::Null).cast(&target)),
        }
    }

    /// `CREATE OR REPLACE TABLE name`: what it replaces must be a table no materialized view
    /// reads, and a temporary table is not replaced.
    fn check_replaceable(&self, name: &str, temporary: bool) -> Result<()> {
        if temporary {
            return Err(unsupported!("CREATE OR REPLACE TEMPORARY TABLE"));
        }
        let Some(table) = self.snapshot.table(name) else {
            return Ok(());
        };
        if !matches!(table.kind, TableKind::Table) {
            return Err(bind_err!(
                "{name} is not a table: CREATE OR REPLACE TABLE cannot replace it"
            ));
        }
        let readers: Vec<String> = self
            .snapshot
            .views_over(name)
            .into_iter()
            .map(|v| v.name.clone())
            .collect();
        if !readers.is_empty() {
            return Err(bind_err!(
                "cannot replace {name}: the materialized view(s) {} depend on it",
                readers.join(", ")
            ));
        }
        Ok(())
    }

    pub(super) fn bind_drop(
        &self,
        object_type: ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
        cascade: bool,
    ) -> Result<Plan> {
        let [name] = names else {
            return Err(unsupported!("dropping several objects in one statement"));
        };
        let name = object_name(name)?;
        if object_type == ast::ObjectType::Index {
            if self.snapshot.table_with_index(&name).is_none() && !if_exists {
                return Err(bind_err!("index {name} does not exist"));
            }
            return Ok(Plan::DropIndex { name, if_exists });
        }
        let wanted = match object_type {
            ast::ObjectType::Table => "TABLE",
            ast::ObjectType::View => "VIEW",
            ast::ObjectType::MaterializedView => "MATERIALIZED VIEW",
            other => return Err(unsupported!("DROP {other}")),
        };
        if let Some(table) = self.snapshot.table(&name) {
            let actual = match table.kind {
                TableKind::Table | TableKind::ValueCounts { .. } | TableKind::JoinState { .. } => {
                    "TABLE"
                }
                TableKind::View { .. } => "VIEW",
                TableKind::MaterializedView { .. } => "MATERIALIZED VIEW",
                TableKind::Macro { .. } => "MACRO",
                TableKind::Procedure { .. } => "PROCEDURE",
            };
            // DROP VIEW also drops a materialized view, as in DuckDB.
            if wanted != actual && !(wanted == "VIEW" && actual == "MATERIALIZED VIEW") {
                let what = actual.to_lowercase();
                return Err(bind_err!("{name} is a {what}: use DROP {actual}"));
            }
            // The views over it, and the views over those (ADR 0054), readers after what they
            // read.
            let mut dependents: Vec<String> = Vec::new();
            let mut next = vec![name.clone()];
            while let Some(read) = next.pop() {
                for view in self.snapshot.views_over(&read) {
                    if !dependents.contains(&view.name) {
                        dependents.push(view.name.clone());
                        next.push(view.name.clone());
                    }
                }
            }
            if !dependents.is_empty() && !cascade {
                return Err(bind_err!(
                    "cannot drop {name}: the materialized view(s) {} depend on it; drop them \
                     first, or use DROP ... CASCADE",
                    dependents.join(", ")
                ));
            }
            return Ok(Plan::DropTable {
                name,
                if_exists,
                dependents,
            });
        } else if !if_exists {
            return Err(bind_err!("{} {name} does not exist", wanted.to_lowercase()));
        }
        Ok(Plan::DropTable {
            name,
            if_exists,
            dependents: Vec::new(),
        })
    }

    /// `COMMENT ON TABLE t | VIEW v | COLUMN t.c IS 'text' | NULL`.
    pub(super) fn bind_comment(
        &self,
        object_type: ast::CommentObject,
        name: &ast::ObjectName,
        comment: Option<String>,
        if_exists: bool,
    ) -> Result<Plan> {
        let (table_name, column) = match object_type {
            ast::CommentObject::Table
            | ast::CommentObject::View
            | ast::CommentObject::MaterializedView => (object_name(name)?, None),
            ast::CommentObject::Column => {
                let (Some((column, table)), true) = (name.0.split_last(), name.0.len() >= 2) else {
                    return Err(bind_err!(
                        "COMMENT ON COLUMN names a column as table.column"
                    ));
                };
                let table = ast::ObjectName(table.to_vec());
                let column = column
                    .as_ident()
                    .map(normalize)
                    .ok_or_else(|| bind_err!("invalid column name in {name}"))?;
                (object_name(&table)?, Some(column))
            }
            other => return Err(unsupported!("COMMENT ON {other}")),
        };
        let Some(table) = self.snapshot.table(&table_name) else {
            if if_exists {
                return Ok(Plan::Query(LogicalPlan::Values {
                    schema: Arc::new(Schema::empty()),
                    rows: Vec::new(),
                }));
            }
            return Err(bind_err!("relation \"{table_name}\" does not exist"));
        };
        let mut table = table.as_ref().clone();
        let key = match column {
            Some(column) => {
                if !table.columns.iter().any(|c| c.name == column) {
                    return Err(bind_err!(
                        "column \"{column}\" of relation \"{table_name}\" does not exist"
                    ));
                }
                column
            }
            None => String::new(),
        };
        match comment {
            Some(text) => table.comments.insert(key, text),
            None => table.comments.remove(&key),
        };
        Ok(Plan::Comment { table })
    }

    /// `ALTER VIEW v RENAME TO w`.
    pub(super) fn bind_alter_view(&self, alter: &ast::AlterView) -> Result<Plan> {
        match &alter.operation {
            ast::AlterViewOperation::RenameTo { new_name } => {
                self.bind_rename(&alter.name, new_name, alter.if_exists)
            }
            _ => Err(unsupported!("ALTER VIEW other than RENAME TO")),
        }
    }

    pub(super) fn bind_rename(
        &self,
        from: &ast::ObjectName,
        to: &ast::ObjectName,
        if_exists: bool,
    ) -> Result<Plan> {
        let (from, mut to) = (object_name(from)?, object_name(to)?);
        // A table renamed keeps its schema, as in Postgres.
        if let Some((schema, _)) = from.split_once('.')
            && !to.contains('.')
        {
            to = format!("{schema}.{to}");
        }
        if self.snapshot.table(&from).is_none() {
            if if_exists {
                return Ok(Plan::RenameTable {
                    from,
                    to,
                    if_exists,
                });
            }
            return Err(bind_err!("relation \"{from}\" does not exist"));
        }
        if self.snapshot.table(&to).is_some() {
            return Err(bind_err!("relation \"{to}\" already exists"));
        }
        if !self.snapshot.views_over(&from).is_empty() {
            return Err(unsupported!(
                "renaming a table that materialized views read ({from})"
            ));
        }
        Ok(Plan::RenameTable {
            from,
            to,
            if_exists,
        })
    }

    pub(super) fn bind_copy(
        &self,
        source: &ast::CopySource,
        to: bool,
        target: &ast::CopyTarget,
    ) -> Result<Plan> {
        let ast::CopyTarget::File { filename } = target else {
            return Err(unsupported!("COPY with {target}"));
        };
        if to {
            let input = match source {
                ast::CopySource::Query(query) => self.bind_query(query)?,
                ast::CopySource::Table {
                    table_name,
                    columns,
                } => {
                    if !columns.is_empty() {
                        return Err(unsupported!("COPY of some columns"));
                    }
                    self.scan(self.table(&object_name(table_name)?)?)?
                }
            };
            return Ok(Plan::CopyTo {
                input,
                path: filename.clone(),
            });
        }
        let ast::CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(bind_err!("COPY FROM needs a table"));
        };
        let table = self.table(&object_name(table_name)?)?.clone();
        let file = if filename.ends_with(".parquet") {
            ExternalTable::open("copy", filename)?
        } else if filename.ends_with(".csv") {
            ExternalTable::open_csv("copy", filename)?
        } else if pondra_storage::is_json_file(filename) {
            ExternalTable::open_json("copy", filename)?
        } else {
            return Err(unsupported!(
                "COPY FROM {filename} (the file name must end in .parquet, .csv or .json)"
            ));
        };
        let columns: Vec<ast::ObjectName> = columns
            .iter()
            .map(|c| ast::ObjectName::from(vec![c.clone()]))
            .collect();
        self.insert_plan(table, LogicalPlan::ParquetScan { table: file }, &columns)
    }

    pub(super) fn bind_insert(&self, insert: &ast::Insert) -> Result<Plan> {
        let ast::TableObject::TableName(name) = &insert.table else {
            return Err(unsupported!("INSERT into a table function"));
        };
        let name = object_name(name)?;
        // A session's temporary table hides the lake's table of its name, as in Postgres.
        let table = match self.temporary.iter().find(|t| t.name == name) {
            Some(temporary) if insert.on.is_none() && insert.or.is_none() => temporary.clone(),
            Some(_) => {
                return Err(unsupported!(
                    "INSERT OR ... and ON CONFLICT into a temporary table"
                ));
            }
            None => self.table(&name)?.clone(),
        };
        if let Some(items) = &insert.returning {
            if insert.on.is_some() || self.temporary.iter().any(|t| t.id == table.id) {
                return Err(unsupported!(
                    "RETURNING with ON CONFLICT, or into a temporary table"
                ));
            }
            let without = ast::Insert {
                returning: None,
                ..insert.clone()
            };
            let write = self.bind_insert(&without)?;
            let alias = insert.table_alias.as_ref().map(|a| normalize(&a.alias));
            return self.returning(write, &table, alias, items);
        }
        match (&insert.or, &insert.on) {
            (None, None) => {}
            (None, Some(ast::OnInsert::OnConflict(on_conflict))) => {
                return self.bind_on_conflict(insert, table, on_conflict);
            }
            (None, Some(_)) => return Err(unsupported!("INSERT ... ON DUPLICATE KEY UPDATE")),
            // A keyed table's INSERT replaces the row of a key it holds, which is what SQLite
            // and DuckDB's INSERT OR REPLACE do; a table without a UNIQUE constraint has
            // nothing to replace.
            (Some(ast::SqliteOnConflict::Replace), None) if table.unique.is_empty() => {}
            (Some(or), _) => {
                return Err(unsupported!(
                    "INSERT {or} (on a table with a UNIQUE constraint, or with ON CONFLICT)"
                ));
            }
        }
        let Some(source) = insert.source.as_ref() else {
            // `INSERT INTO t DEFAULT VALUES`: one row of every column's default.
            let defaults = table
                .columns
                .iter()
                .map(|column| self.insert_default(&table, column))
                .collect::<Result<Vec<_>>>()?;
            let fields: Vec<Field> = table
                .columns
                .iter()
                .map(|c| Field::new(&c.name, c.sql_type.to_arrow(), true))
                .collect();
            let input = LogicalPlan::Values {
                schema: Arc::new(Schema::new(fields)),
                rows: vec![defaults],
            };
            return self.insert_plan(table, input, &[]);
        };
        let with_defaults = self.values_defaults(source, &table, &insert.columns)?;
        let input = self.bind_query(with_defaults.as_ref().unwrap_or(source))?;
        let replace = insert.or.is_some();
        match self.insert_plan(table, input, &insert.columns)? {
            Plan::Insert { table, input, .. } => Ok(Plan::Insert {
                table,
                input,
                replace,
            }),
            other => Ok(other),
        }
    }

    /// `write` with a RETURNING list over the rows it writes to `table` (ADR 0072); the list
    /// reads them as `alias` (the table's name when none).
    pub(super) fn returning(
        &self,
        write: Plan,
        table: &pondra_catalog::TableDef,
        alias: Option<String>,
        items: &[ast::SelectItem],
    ) -> Result<Plan> {
        let fields: Vec<Field> = table
            .columns
            .iter()
            .map(|c| Field::new(&c.name, c.sql_type.to_arrow(), true))
            .collect();
        let rows = LogicalPlan::Input {
            schema: Arc::new(Schema::new(fields)),
        };
        let qualifier = alias.unwrap_or_else(|| {
            table
                .name
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_string()
        });
        let query = format!("SELECT 1 FROM {RETURNED_ROWS} AS \"{qualifier}\"");
        let parsed = pondra_parser::parse_sql(&query).map_err(|e| bind_err!("RETURNING: {e}"))?;
        let pondra_parser::Statement::Sql(statement) = &parsed[0].statement else {
            unreachable!("a query parses to SQL");
        };
        let ast::Statement::Query(mut query) = statement.as_ref().clone() else {
            unreachable!("a SELECT parses to a query");
        };
        if let ast::SetExpr::Select(select) = query.body.as_mut() {
            select.projection = items.to_vec();
        }
        let depth = self.ctes.borrow().len();
        self.ctes
            .borrow_mut()
            .push((RETURNED_ROWS.to_string(), rows));
        let returning = self.bind_query(&query);
        self.ctes.borrow_mut().truncate(depth);
        Ok(Plan::Returning {
            write: Box::new(write),
            returning: returning?,
        })
    }

    /// `source` with each `DEFAULT` of its VALUES rows replaced by its column's default (or
    /// NULL); `None` when it has none.
    fn values_defaults(
        &self,
        source: &ast::Query,
        table: &pondra_catalog::TableDef,
        columns: &[ast::ObjectName],
    ) -> Result<Option<ast::Query>> {
        let is_default = |e: &ast::Expr| {
            matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none()
                && i.value.eq_ignore_ascii_case("default"))
        };
        let ast::SetExpr::Values(values) = source.body.as_ref() else {
            return Ok(None);
        };
        if !values
            .rows
            .iter()
            .flat_map(|row| row.iter())
            .any(is_default)
        {
            return Ok(None);
        }
        let mut targets = Vec::new();
        for position in 0..values.rows.first().map_or(0, |row| row.len()) {
            let name = match columns.get(position) {
                Some(name) => Some(object_name(name)?),
                None if columns.is_empty() => table.columns.get(position).map(|c| c.name.clone()),
                None => None,
            };
            targets.push(name);
        }
        let mut source = source.clone();
        let ast::SetExpr::Values(values) = source.body.as_mut() else {
            unreachable!("checked above");
        };
        for row in &mut values.rows {
            for (position, value) in row.iter_mut().enumerate() {
                if !is_default(value) {
                    continue;
                }
                let default = targets
                    .get(position)
                    .and_then(|t| t.as_ref())
                    .and_then(|name| table.defaults.get(name));
                *value = match default {
                    Some(text) => pondra_parser::parse_expression(text)
                        .map_err(|e| bind_err!("a column's default: {e}"))?,
                    None => ast::Expr::value(ast::Value::Null),
                };
            }
        }
        Ok(Some(source))
    }

    /// Appends the rows of `input` to `table`, into `columns` (all of them when empty).
    pub(super) fn insert_plan(
        &self,
        table: Arc<pondra_catalog::TableDef>,
        input: LogicalPlan,
        columns: &[ast::ObjectName],
    ) -> Result<Plan> {
        if table.is_materialized_view() {
            return Err(bind_err!(
                "cannot insert into materialized view {}: it is kept current from its table",
                table.name
            ));
        }
        if table.is_view() {
            return Err(bind_err!("cannot insert into view {}", table.name));
        }
        let input_schema = input.schema();
        let targets: Vec<usize> = if columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            let mut targets = Vec::new();
            for column in columns {
                let column = object_name(column)?;
                let index = table
                    .columns
                    .iter()
                    .position(|c| c.name == column)
                    .ok_or_else(|| {
                        bind_err!("table {} has no column named {column}", table.name)
                    })?;
                if targets.contains(&index) {
                    return Err(bind_err!("column {column} is named twice"));
                }
                targets.push(index);
            }
            targets
        };
        if input_schema.fields().len() != targets.len() {
            return Err(bind_err!(
                "INSERT has {} target columns but {} values per row",
                targets.len(),
                input_schema.fields().len()
            ));
        }
        let mut exprs = Vec::new();
        for (index, column) in table.columns.iter().enumerate() {
            let target = column.sql_type.to_arrow();
            let expr = match targets.iter().position(|t| *t == index) {
                Some(source_index) => {
                    let field = input_schema.field(source_index);
                    check_assignable(field.data_type(), &target, &column.name)?;
                    Expr::column(source_index, field.name(), field.data_type().clone())
                        .cast(&target)
                }
                None => self.insert_default(&table, column)?,
            };
            exprs.push(expr);
        }
        let names = table.columns.iter().map(|c| c.name.clone()).collect();
        Ok(Plan::Insert {
            table,
            input: input.project(exprs, names),
            replace: false,
        })
    }

    pub(super) fn show_tables(&self) -> LogicalPlan {
        let schema = Arc::new(Schema::new(vec![Field::new("name", DataType::Utf8, true)]));
        let rows = self
            .snapshot
            .visible_tables()
            .map(|table| vec![Expr::Literal(ScalarValue::Utf8(table.name.clone()))])
            .collect();
        LogicalPlan::Values { schema, rows }
    }

    /// `describe_query('q')`, which `FROM (DESCRIBE q)` is read as: the rows `DESCRIBE q`
    /// gives, for a query or a table.
    pub(super) fn describe_query(&self, args: &[ast::FunctionArg]) -> Result<LogicalPlan> {
        let text = match args {
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
                match &v.value {
                    ast::Value::SingleQuotedString(text) => text.clone(),
                    _ => return Err(bind_err!("describe_query needs the query as text")),
                }
            }
            _ => return Err(bind_err!("describe_query needs the query as text")),
        };
        let parsed = pondra_parser::parse_sql(&format!("DESCRIBE {text}"))
            .map_err(|e| bind_err!("DESCRIBE {text}: {e}"))?;
        let [statement] = parsed.as_slice() else {
            return Err(bind_err!("DESCRIBE takes one query or table"));
        };
        match self.bind_statement(statement)? {
            Plan::Query(plan) => Ok(plan),
            _ => Err(bind_err!("DESCRIBE {text} gives no rows")),
        }
    }

    /// DuckDB's table function `query(text)`: the rows of the query in `text`, a constant (a
    /// variable's value, say).
    pub(super) fn query_function(&self, args: &[ast::FunctionArg]) -> Result<LogicalPlan> {
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = args else {
            return Err(bind_err!("query() takes one argument, the query's text"));
        };
        let empty = super::scope::Scope::default();
        let mut ctx = super::expr::Context::Plain {
            scope: &empty,
            clause: "query()",
            binder: Some(self),
        };
        let text = match super::expr::bind_expr(arg, &mut ctx)? {
            Expr::Literal(ScalarValue::Utf8(text)) => text,
            Expr::Literal(ScalarValue::Null) => return Err(bind_err!("query() of NULL")),
            _ => return Err(bind_err!("query() needs the query's text as a constant")),
        };
        let parsed = pondra_parser::parse_sql(&text).map_err(|e| bind_err!("query(): {e}"))?;
        let [statement] = parsed.as_slice() else {
            return Err(bind_err!("query() runs one query"));
        };
        // A query's text may call query() again (a variable holding itself): bounded, well
        // within a statement thread's stack.
        const MAX_QUERY_DEPTH: usize = 16;
        if self.view_depth >= MAX_QUERY_DEPTH {
            return Err(bind_err!(
                "query() runs query() more than {MAX_QUERY_DEPTH} deep (does a text run itself?)"
            ));
        }
        let nested = Binder {
            view_depth: self.view_depth + 1,
            ..self.sharing_session()
        };
        match nested.bind_statement(statement)? {
            Plan::Query(plan) => Ok(plan),
            _ => Err(bind_err!("query() runs a query, not {}", statement.text)),
        }
    }

    pub(super) fn describe(&self, name: &str) -> Result<LogicalPlan> {
        let table = self.table(name)?;
        let schema = match &table.kind {
            TableKind::Table | TableKind::ValueCounts { .. } | TableKind::JoinState { .. } => {
                table.arrow_schema()
            }
            TableKind::MaterializedView { .. } | TableKind::View { .. } => {
                self.scan(table)?.schema()
            }
            TableKind::Macro { .. } => return Err(bind_err!("{name} is a macro, not a table")),
            TableKind::Procedure { .. } => {
                return Err(bind_err!("{name} is a procedure, not a table"));
            }
        };
        // A table's columns by their declared types (JSON is stored as text).
        let declared = |i: usize| match table.kind {
            TableKind::Table => table.columns.get(i).map(|c| c.sql_type.to_string()),
            _ => None,
        };
        Ok(describe_columns(&schema, declared))
    }
}

/// DESCRIBE's rows for the columns of `schema`: each one's name, type (as `declared` gives it,
/// or from its Arrow type) and whether it may be NULL.
pub(super) fn describe_columns(
    schema: &arrow::datatypes::SchemaRef,
    declared: impl Fn(usize) -> Option<String>,
) -> LogicalPlan {
    let text = |s: String| Expr::Literal(ScalarValue::Utf8(s));
    let rows = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            vec![
                text(f.name().clone()),
                text(declared(i).unwrap_or_else(|| type_name(f.data_type()))),
                text("YES".into()),
            ]
        })
        .collect();
    let fields = ["column_name", "column_type", "null"]
        .into_iter()
        .map(|n| Field::new(n, DataType::Utf8, true))
        .collect::<Vec<_>>();
    LogicalPlan::Values {
        schema: Arc::new(Schema::new(fields)),
        rows,
    }
}
