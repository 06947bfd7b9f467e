//! Names as the binder reads them: a table with its schema, an object, a function in FROM, a
//! select item's output name, a statement's first words; and intervals from their text.

use pondra_parser::ast;

use super::expr;
use super::scope::normalize;
use crate::{Result, bind_err};

/// A table name with its schema, if given (`pg_catalog.pg_class`), normalized. A database
/// name before them (`pondra.public.t`, as dbt writes) is the lake's own: a server opens one
/// lake per connection.
pub(super) fn qualified_name(name: &ast::ObjectName) -> Result<(Option<String>, String)> {
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

/// An object's name, normalized: a table of `public` by its name alone (`t`, `public.t` and
/// dbt's `database.public.t` name `t`), one of another schema as `schema.table`.
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
pub(super) fn function_name(name: &ast::ObjectName) -> Result<String> {
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

/// The name a select item gets without an alias: the column's name, else the expression's text.
pub(super) fn output_name(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Identifier(ident) => normalize(ident),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(normalize).unwrap_or_default(),
        ast::Expr::Nested(inner) => output_name(inner),
        other => pondra_parser::with_exclusions_written(&other.to_string()),
    }
}

pub(super) fn first_words(statement: &ast::Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}
