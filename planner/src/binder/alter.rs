//! `ALTER TABLE`: renaming the table, adding, dropping and renaming its columns, and setting
//! its `publish` option (ADR 0058). Columns keep ids and data files and log segments name
//! their columns by id (ADR 0048), so no change of columns rewrites a file: a column added
//! reads NULL in files written before it, a column dropped is left unread in them.

use pondra_catalog::{Column, TableDef, TableKind};
use pondra_parser::ast;

use super::scope::normalize;
use super::{Binder, object_name};
use crate::plan::Plan;
use crate::types::sql_type_from_ast;
use crate::{Result, bind_err, unsupported};

impl Binder<'_> {
    /// `ALTER TABLE t RENAME TO u`, `RENAME COLUMN a TO b`, and any list of `ADD [COLUMN]` and
    /// `DROP [COLUMN]`.
    pub(super) fn bind_alter_table(&self, alter: &ast::AlterTable) -> Result<Plan> {
        match alter.operations.as_slice() {
            [
                ast::AlterTableOperation::RenameTable {
                    table_name: ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to),
                },
            ] => return self.bind_rename(&alter.name, to, alter.if_exists),
            [
                ast::AlterTableOperation::RenameColumn {
                    old_column_name,
                    new_column_name,
                },
            ] => {
                let mut def = self.altered_table(&alter.name, "renaming a column of")?;
                rename_column(&mut def, old_column_name, new_column_name)?;
                super::table_options::check_publishable(&def.columns, &def.publish)?;
                return Ok(Plan::AlterColumns { table: def });
            }
            [ast::AlterTableOperation::SetOptionsParens { options }] => {
                let mut def = self.published_table(&alter.name)?;
                def.publish = super::table_options::altered_publish(options)?;
                super::table_options::check_publishable(&def.columns, &def.publish)?;
                return Ok(Plan::AlterColumns { table: def });
            }
            _ => {}
        }
        let mut def = self.altered_table(&alter.name, "changing the columns of")?;
        for operation in &alter.operations {
            match operation {
                ast::AlterTableOperation::AddColumn {
                    if_not_exists,
                    column_def,
                    column_position: None,
                    ..
                } => add_column(&mut def, column_def, *if_not_exists)?,
                ast::AlterTableOperation::DropColumn {
                    column_names,
                    if_exists,
                    ..
                } => {
                    for name in column_names {
                        drop_column(&mut def, name, *if_exists)?;
                    }
                }
                ast::AlterTableOperation::AlterColumn { column_name, op } => {
                    self.alter_default(&mut def, column_name, op)?;
                }
                _ => {
                    return Err(unsupported!(
                        "ALTER TABLE other than RENAME TO, RENAME COLUMN, ADD COLUMN, DROP COLUMN, ALTER COLUMN SET/DROP DEFAULT and SET (publish = ...)"
                    ));
                }
            }
        }
        super::table_options::check_publishable(&def.columns, &def.publish)?;
        Ok(Plan::AlterColumns { table: def })
    }

    /// `ALTER COLUMN c SET DEFAULT e` or `DROP DEFAULT` (ADR 0073): what later INSERTs give
    /// the column; rows already written keep their values.
    fn alter_default(
        &self,
        def: &mut TableDef,
        column: &ast::Ident,
        op: &ast::AlterColumnOperation,
    ) -> Result<()> {
        let name = normalize(column);
        let Some(column) = def.columns.iter().find(|c| c.name == name) else {
            return Err(bind_err!(
                "column \"{name}\" of relation \"{}\" does not exist",
                def.name
            ));
        };
        match op {
            ast::AlterColumnOperation::SetDefault { value } => {
                self.column_default(value, &name, &column.sql_type.to_arrow())?;
                def.defaults.insert(name, value.to_string());
            }
            ast::AlterColumnOperation::DropDefault => {
                def.defaults.remove(&name);
            }
            other => return Err(unsupported!("ALTER COLUMN ... {other}")),
        }
        Ok(())
    }

    /// `VACUUM [FULL] [table]`: Postgres's options beyond FULL are refused.
    pub(super) fn bind_vacuum(&self, vacuum: &ast::VacuumStatement) -> Result<Plan> {
        let ast::VacuumStatement {
            full,
            sort_only: false,
            delete_only: false,
            reindex: false,
            recluster: false,
            table_name,
            threshold: None,
            boost: false,
        } = vacuum
        else {
            return Err(unsupported!("VACUUM with options other than FULL"));
        };
        let table = match table_name {
            Some(name) => {
                let name = object_name(name)?;
                match self.snapshot.table(&name) {
                    Some(t) if matches!(t.kind, TableKind::Table) => Some(name),
                    Some(_) => return Err(bind_err!("cannot VACUUM {name}: it is not a table")),
                    None => return Err(bind_err!("relation \"{name}\" does not exist")),
                }
            }
            None => None,
        };
        Ok(Plan::Vacuum { table, full: *full })
    }

    /// The definition of the table `name` whose `publish` option an ALTER changes: any table,
    /// materialized views over it or not, since publishing changes none of its rows.
    fn published_table(&self, name: &ast::ObjectName) -> Result<TableDef> {
        let name = object_name(name)?;
        match self.snapshot.table(&name) {
            Some(table) if matches!(table.kind, TableKind::Table) => Ok(table.as_ref().clone()),
            Some(_) => Err(unsupported!(
                "publishing {name}: only tables are published, not views"
            )),
            None => Err(bind_err!("relation \"{name}\" does not exist")),
        }
    }

    /// The definition of the table `name` that an ALTER changes; `doing` says what, for errors.
    fn altered_table(&self, name: &ast::ObjectName, doing: &str) -> Result<TableDef> {
        let name = object_name(name)?;
        let Some(table) = self.snapshot.table(&name) else {
            return Err(bind_err!("relation \"{name}\" does not exist"));
        };
        if !matches!(table.kind, TableKind::Table) {
            return Err(unsupported!("{doing} a view ({name})"));
        }
        // A materialized view's state is planned over the table's columns when created.
        if !self.snapshot.views_over(&name).is_empty() {
            return Err(unsupported!(
                "{doing} a table that materialized views read ({name})"
            ));
        }
        Ok(table.as_ref().clone())
    }
}

/// `RENAME COLUMN a TO b`: every name of the column in the table's definition (key, UNIQUE
/// constraints, indexes, TTL, comments, a merge table's folds) follows it.
fn rename_column(def: &mut TableDef, from: &ast::Ident, to: &ast::Ident) -> Result<()> {
    let (from, to) = (normalize(from), normalize(to));
    let name = def.name.clone();
    if def.columns.iter().any(|c| c.name == to) {
        return Err(bind_err!(
            "column \"{to}\" of relation \"{name}\" already exists"
        ));
    }
    let Some(column) = def.columns.iter_mut().find(|c| c.name == from) else {
        return Err(bind_err!(
            "column \"{from}\" of relation \"{name}\" does not exist"
        ));
    };
    column.name = to.clone();
    let rename = |names: &mut Vec<String>| {
        for n in names.iter_mut().filter(|n| **n == from) {
            *n = to.clone();
        }
    };
    rename(&mut def.key);
    def.unique.iter_mut().for_each(rename);
    def.indexes.iter_mut().for_each(|i| rename(&mut i.columns));
    if let Some(ttl) = def.ttl.as_mut().filter(|t| t.column == from) {
        ttl.column = to.clone();
    }
    if let Some(fold) = def.folds.remove(&from) {
        def.folds.insert(to.clone(), fold);
    }
    if let Some(default) = def.defaults.remove(&from) {
        def.defaults.insert(to.clone(), default);
    }
    if let Some(comment) = def.comments.remove(&from) {
        def.comments.insert(to, comment);
    }
    Ok(())
}

/// `ADD [COLUMN] [IF NOT EXISTS] c type`: a new column with a new id, NULL in every row the
/// table holds.
fn add_column(def: &mut TableDef, column: &ast::ColumnDef, if_not_exists: bool) -> Result<()> {
    let name = normalize(&column.name);
    if def.columns.iter().any(|c| c.name == name) {
        return match if_not_exists {
            true => Ok(()),
            false => Err(bind_err!(
                "column \"{name}\" of relation \"{}\" already exists",
                def.name
            )),
        };
    }
    for option in &column.options {
        if !matches!(option.option, ast::ColumnOption::Null) {
            return Err(unsupported!(
                "ADD COLUMN with {} (a column added is NULL in the rows the table holds)",
                option.option
            ));
        }
    }
    def.columns.push(Column {
        name,
        sql_type: sql_type_from_ast(&column.data_type)?,
        not_null: false,
        id: def.next_column_id,
    });
    def.next_column_id += 1;
    Ok(())
}

/// `DROP [COLUMN] [IF EXISTS] c`: the column leaves the definition; files keep its values,
/// unread. Indexes on it go with it; a column of the key, of a UNIQUE constraint or of the
/// TTL cannot be dropped.
fn drop_column(def: &mut TableDef, name: &ast::Ident, if_exists: bool) -> Result<()> {
    let name = normalize(name);
    let table = def.name.clone();
    let Some(position) = def.columns.iter().position(|c| c.name == name) else {
        return match if_exists {
            true => Ok(()),
            false => Err(bind_err!(
                "column \"{name}\" of relation \"{table}\" does not exist"
            )),
        };
    };
    let holds = |columns: &[String]| columns.contains(&name);
    let refusal = if holds(&def.key) {
        Some("it is part of the table's primary key")
    } else if def.unique.iter().any(|u| holds(u)) {
        Some("a UNIQUE constraint names it")
    } else if def.ttl.as_ref().is_some_and(|t| t.column == name) {
        Some("the table's TTL reads it")
    } else if def.columns.len() == 1 {
        Some("it is the table's only column")
    } else {
        None
    };
    if let Some(reason) = refusal {
        return Err(bind_err!(
            "cannot drop column \"{name}\" of relation \"{table}\": {reason}"
        ));
    }
    def.columns.remove(position);
    def.indexes.retain(|index| !holds(&index.columns));
    def.comments.remove(&name);
    def.defaults.remove(&name);
    def.folds.remove(&name);
    Ok(())
}
