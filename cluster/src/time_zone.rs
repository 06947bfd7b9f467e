//! The session's `TimeZone` (ADR 0067): `SET TimeZone = 'UTC'`, `SET TIME ZONE 'UTC'` and
//! `SHOW TimeZone`. Instants are shown in UTC; a zone with other rules is refused by name
//! until every conversion applies them.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use crate::node::{StatementResult, done};
use crate::{NodeError, Result};

const TIME_ZONE: &str = "TimeZone";

/// The names of UTC that both anchors accept, lower-cased.
const UTC_NAMES: [&str; 11] = [
    "utc",
    "gmt",
    "etc/utc",
    "etc/gmt",
    "uct",
    "universal",
    "zulu",
    "z",
    "+00",
    "+00:00",
    "default",
];

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

/// Runs a statement `is_time_zone_setting` accepts.
pub fn run_time_zone_setting(statement: &ast::Statement) -> Result<StatementResult> {
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
        _ => return Ok(shown()),
    };
    let name = match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    };
    if !UTC_NAMES.contains(&name.trim().to_lowercase().as_str()) {
        return Err(NodeError::Plan(pondra_planner::PlanError::NotSupported(
            format!(
                "the session TimeZone '{name}': instants are shown in UTC only so far (ADR \
                 0067)"
            ),
        )));
    }
    Ok(done("SET"))
}

fn shown() -> StatementResult {
    let schema = Arc::new(Schema::new(vec![Field::new(
        TIME_ZONE,
        DataType::Utf8,
        false,
    )]));
    let column = StringArray::from(vec!["UTC"]);
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).expect("one text column");
    StatementResult::Rows {
        schema,
        batches: vec![batch],
    }
}
