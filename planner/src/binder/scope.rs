use arrow::datatypes::{DataType, SchemaRef};
use sqlparser::ast::Ident;

use crate::{Result, bind_err};

/// One column visible to expressions: what it is called and where it is in the input.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    pub qualifier: Option<String>,
    pub name: String,
    pub data_type: DataType,
    /// A system column, or a copy a USING join merged: named, it is found; `*` leaves it out.
    pub hidden: bool,
    /// A side's own copy of a column `JOIN ... USING` merged: `t.*` keeps it.
    pub merged: bool,
}

/// The columns an expression can name: its input's, in order.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// In the scope of a grouped query's output, the input columns it does not group by: they
    /// cannot be named, and an error says so.
    pub ungrouped: Vec<ScopeColumn>,
}

impl Scope {
    /// The columns of `schema`, all reachable through `qualifier` too.
    pub fn from_schema(schema: &SchemaRef, qualifier: Option<&str>) -> Scope {
        let columns = schema
            .fields()
            .iter()
            .map(|f| ScopeColumn {
                qualifier: qualifier.map(str::to_string),
                name: f.name().clone(),
                data_type: f.data_type().clone(),
                hidden: f.metadata().contains_key(pondra_catalog::HIDDEN_COLUMN),
                merged: false,
            })
            .collect();
        Scope {
            columns,
            ungrouped: Vec::new(),
        }
    }

    /// Finds a column by name, optionally qualified by a table name or alias.
    pub fn resolve(&self, qualifier: Option<&str>, name: &str) -> Result<usize> {
        let matches = |c: &&ScopeColumn| {
            c.name.eq_ignore_ascii_case(name)
                && qualifier.is_none_or(|q| {
                    c.qualifier
                        .as_deref()
                        .is_some_and(|cq| cq.eq_ignore_ascii_case(q))
                })
        };
        // A visible column hides a system column of its name: `_commit_version` of
        // `table_changes` is found beside a table's hidden one.
        let visible = |c: &ScopeColumn| !c.hidden;
        let visible_matches = self.columns.iter().filter(matches).filter(|c| visible(c));
        let prefer_visible = visible_matches.count() == 1;
        let mut found = self
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| matches(c) && (!prefer_visible || visible(c)));
        let display = match qualifier {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        match (found.next(), found.next()) {
            (Some((index, _)), None) => Ok(index),
            (Some(_), Some(_)) => Err(bind_err!("column reference \"{display}\" is ambiguous")),
            (None, _) => {
                let known: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
                if known.is_empty() {
                    Err(bind_err!("column \"{display}\" does not exist"))
                } else {
                    Err(bind_err!(
                        "column \"{display}\" does not exist (columns: {})",
                        known.join(", ")
                    ))
                }
            }
        }
    }
}

/// An identifier as SQL means it: unquoted names are case-insensitive (kept in lower case).
pub fn normalize(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}
