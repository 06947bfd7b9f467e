//! `CREATE SCHEMA` and `DROP SCHEMA`. A schema other than `public` is a name in the catalog; a
//! table of one is stored as `<schema>.<table>`, which `object_name` gives for `schema.table`
//! and `database.schema.table`.

use pondra_parser::ast;

use super::{Binder, object_name};
use crate::plan::Plan;
use crate::{Result, bind_err, unsupported};

/// The schemas every lake has, which cannot be created or dropped.
const BUILT_IN: [&str; 3] = ["public", "pg_catalog", "information_schema"];

impl Binder<'_> {
    pub(super) fn bind_create_schema(
        &self,
        name: &ast::ObjectName,
        if_not_exists: bool,
    ) -> Result<Plan> {
        let name = schema_name(name)?;
        let exists = BUILT_IN.contains(&name.as_str()) || self.snapshot.schemas.contains_key(&name);
        match (exists, if_not_exists) {
            (true, true) => Ok(Plan::Nothing {
                tag: "CREATE SCHEMA",
            }),
            (true, false) => Err(bind_err!("schema \"{name}\" already exists")),
            (false, _) => Ok(Plan::CreateSchema { name }),
        }
    }

    /// `DROP SCHEMA s [IF EXISTS] [CASCADE]`: with CASCADE, its tables and views go with it,
    /// and so do the materialized views elsewhere that read them.
    pub(super) fn bind_drop_schema(
        &self,
        name: &ast::ObjectName,
        if_exists: bool,
        cascade: bool,
    ) -> Result<Plan> {
        let name = schema_name(name)?;
        if BUILT_IN.contains(&name.as_str()) {
            return Err(bind_err!("cannot drop schema {name}: every lake has it"));
        }
        if !self.snapshot.schemas.contains_key(&name) {
            return match if_exists {
                true => Ok(Plan::Nothing { tag: "DROP SCHEMA" }),
                false => Err(bind_err!("schema \"{name}\" does not exist")),
            };
        }
        let prefix = format!("{name}.");
        let held: Vec<String> = self
            .snapshot
            .visible_tables()
            .filter(|t| t.name.starts_with(&prefix))
            .map(|t| t.name.clone())
            .collect();
        if !held.is_empty() && !cascade {
            return Err(bind_err!(
                "cannot drop schema {name} because other objects depend on it ({}); use DROP \
                 SCHEMA ... CASCADE",
                held.join(", ")
            ));
        }
        // Views first: a table goes after every materialized view that reads it.
        let mut tables: Vec<String> = Vec::new();
        for table in &held {
            for view in self.snapshot.views_over(table) {
                if !tables.contains(&view.name) {
                    tables.push(view.name.clone());
                }
            }
        }
        for table in held {
            if !tables.contains(&table) {
                tables.push(table);
            }
        }
        Ok(Plan::DropSchema { name, tables })
    }
}

/// A schema's name: one part (a database before it is the lake's own).
fn schema_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [_] => object_name(name),
        [_, schema] => object_name(&ast::ObjectName(vec![schema.clone()])),
        _ => Err(unsupported!("the schema name {name}")),
    }
}
