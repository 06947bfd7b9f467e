//! The session's `TimeZone` (ADR 0067): `SET TimeZone = 'Europe/Paris'`, `SET TIME ZONE
//! 'UTC'` (`DEFAULT` and `LOCAL` are UTC) and `SHOW TimeZone`. Any zone of the zone database
//! by name, in any case.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_parser::ast;

use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

const TIME_ZONE: &str = "TimeZone";

/// Whether `statement` sets or shows the session's zone.
pub fn is_time_zone_setting(statement: &ast::Statement) -> bool {
    match statement {
        ast::Statement::Set(ast::Set::SetTimeZone { .. }) => true,
        ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => {
            variable.to_string().eq_ignore_ascii_case(TIME_ZONE)
        }
        ast::Statement::ShowVariable { variable } => {
            variable.len() == 1 && variable[0].value.eq_ignore_ascii_case(TIME_ZONE)
        }
        _ => false,
    }
}

/// Runs a statement `is_time_zone_setting` accepts for `session`.
pub fn run_time_zone_setting(
    statement: &ast::Statement,
    session: &Session,
) -> Result<StatementResult> {
    let value = match statement {
        ast::Statement::Set(ast::Set::SetTimeZone { value, .. }) => value,
        ast::Statement::Set(ast::Set::SingleAssignment { values, .. }) => match values.as_slice() {
            [value] => value,
            _ => {
                return Err(NodeError::Other(
                    "SET TimeZone takes one zone, such as 'UTC'".into(),
                ));
            }
        },
        _ => {
            return Ok(crate::sessions::session::one_text(
                TIME_ZONE,
                session.time_zone(),
            ));
        }
    };
    let name = match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    };
    let zone = match name.to_lowercase().as_str() {
        "default" | "local" => "UTC".to_string(),
        _ => pondra_exec::zone_name(&name).ok_or_else(|| {
            NodeError::Other(format!(
                "invalid value for parameter \"TimeZone\": \"{name}\" (expected a zone such as \
                 'UTC' or 'Europe/Paris')"
            ))
        })?,
    };
    session.set_time_zone(zone);
    Ok(done("SET"))
}

/// The columns a statement `is_time_zone_setting` accepts returns: `SHOW`'s one.
pub fn result_schema(statement: &ast::Statement) -> Option<SchemaRef> {
    match statement {
        ast::Statement::ShowVariable { .. } => Some(shown_schema()),
        _ => None,
    }
}

fn shown_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        TIME_ZONE,
        DataType::Utf8,
        false,
    )]))
}
