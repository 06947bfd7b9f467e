//! PostgreSQL's run-time parameters that clients and tools set and show (`SET
//! application_name = 'x'`, `SET extra_float_digits = 3`, `SHOW search_path`), and custom
//! ones named `prefix.name`: a session keeps the value it sets and shows it back, as
//! PostgreSQL does; none changes how Pondra runs a statement. A name that is neither is
//! refused as PostgreSQL refuses it ("unrecognized configuration parameter", SQLSTATE 42704),
//! so that a typo (`SET statment_timeout = '5s'`) is not taken for a setting. The settings
//! that do change something (`statement_timeout`, `TimeZone`, `threads`, `memory_limit`, ...)
//! are answered before these.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// The parameters a session may set, each with the value it shows before it sets one.
const SETTABLE: &[(&str, &str)] = &[
    ("application_name", ""),
    ("array_nulls", "on"),
    ("backslash_quote", "safe_encoding"),
    ("bytea_output", "hex"),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("cursor_tuple_fraction", "0.1"),
    ("datestyle", "ISO, MDY"),
    ("default_text_search_config", "pg_catalog.english"),
    ("default_transaction_isolation", "repeatable read"),
    ("default_transaction_read_only", "off"),
    ("enable_hashjoin", "on"),
    ("enable_mergejoin", "on"),
    ("enable_nestloop", "on"),
    ("enable_seqscan", "on"),
    ("escape_string_warning", "on"),
    ("extra_float_digits", "1"),
    ("geqo", "on"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("intervalstyle", "postgres"),
    ("jit", "off"),
    ("lc_messages", "C"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("lock_timeout", "0"),
    ("maintenance_work_mem", "64MB"),
    ("max_parallel_workers_per_gather", "2"),
    ("plan_cache_mode", "auto"),
    ("quote_all_identifiers", "off"),
    ("row_security", "on"),
    ("search_path", "public"),
    ("session_replication_role", "origin"),
    ("standard_conforming_strings", "on"),
    ("synchronous_commit", "on"),
    ("temp_buffers", "8MB"),
    ("transaction_isolation", "repeatable read"),
    ("transaction_read_only", "off"),
    ("work_mem", "4MB"),
    ("xmloption", "content"),
];

/// The parameters a session may show but not set.
const READ_ONLY: &[(&str, &str)] = &[
    ("integer_datetimes", "on"),
    ("is_superuser", "on"),
    ("max_identifier_length", "63"),
    ("server_encoding", "UTF8"),
    ("server_version", crate::SERVER_VERSION),
];

/// Every parameter with the value it has before a session sets it, for `SHOW ALL`.
pub fn parameters() -> impl Iterator<Item = (&'static str, &'static str)> + Clone {
    SETTABLE.iter().chain(READ_ONLY).copied()
}

fn default_of(name: &str) -> Option<&'static str> {
    parameters().find(|(n, _)| *n == name).map(|(_, v)| v)
}

/// A custom parameter's name: `prefix.name`, as extensions and applications use them.
fn is_custom(name: &str) -> bool {
    matches!(name.split_once('.'), Some((prefix, rest)) if !prefix.is_empty() && !rest.is_empty())
}

/// Whether `statement` sets, shows or resets one of these parameters (or a name that is
/// none, which it refuses): every `SET name = value` not answered before, and `SHOW` or
/// `RESET` of a known or custom name.
pub(crate) fn is_parameter_statement(statement: &ast::Statement) -> bool {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { .. }) => true,
        ast::Statement::ShowVariable { variable } => match shown_name(variable) {
            Some(name) => default_of(&name).is_some() || is_custom(&name),
            None => false,
        },
        ast::Statement::Reset(reset) => match &reset.reset {
            ast::Reset::ALL => true,
            ast::Reset::ConfigurationParameter(name) => {
                let name = name.to_string().to_lowercase();
                default_of(&name).is_some() || is_custom(&name)
            }
            ast::Reset::SessionAuthorization => false,
        },
        _ => false,
    }
}

/// Runs a statement `is_parameter_statement` accepts for `session`.
pub(crate) fn run(statement: &ast::Statement, session: &Session) -> Result<StatementResult> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment {
            variable, values, ..
        }) => {
            let name = variable.to_string().to_lowercase();
            if READ_ONLY.iter().any(|(n, _)| *n == name) {
                return Err(NodeError::Other(format!(
                    "parameter \"{name}\" cannot be changed"
                )));
            }
            if default_of(&name).is_none() && !is_custom(&name) {
                return Err(NodeError::Other(format!(
                    "unrecognized configuration parameter \"{name}\""
                )));
            }
            match value_text(values) {
                Some(value) => session.set_parameter(name, value),
                None => session.reset_parameter(&name),
            }
            Ok(done("SET"))
        }
        ast::Statement::ShowVariable { variable } => {
            let name = shown_name(variable).expect("a parameter's name");
            let value = session
                .parameter(&name)
                .or_else(|| default_of(&name).map(str::to_string));
            match value {
                Some(value) => Ok(shown(&name, value)),
                None => Err(NodeError::Other(format!(
                    "unrecognized configuration parameter \"{name}\""
                ))),
            }
        }
        ast::Statement::Reset(reset) => {
            match &reset.reset {
                ast::Reset::ALL => session.reset_parameters(),
                ast::Reset::ConfigurationParameter(name) => {
                    session.reset_parameter(&name.to_string().to_lowercase())
                }
                ast::Reset::SessionAuthorization => unreachable!("not a parameter"),
            }
            Ok(done("RESET"))
        }
        other => unreachable!("not a parameter statement: {other}"),
    }
}

/// The parameter `SHOW` names: one word, or a custom `prefix.name`, which the parser reads as
/// two.
fn shown_name(variable: &[ast::Ident]) -> Option<String> {
    match variable {
        [name] => Some(name.value.to_lowercase()),
        [prefix, name] => Some(format!("{}.{}", prefix.value, name.value).to_lowercase()),
        _ => None,
    }
}

/// A value as PostgreSQL shows it back: a string's text, a name or number as written, a list
/// joined by `, `; `None` for `DEFAULT`.
fn value_text(values: &[ast::Expr]) -> Option<String> {
    let texts: Vec<String> = values
        .iter()
        .map(|value| match value {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(text) => text.clone(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(ident) => ident.value.clone(),
            other => other.to_string(),
        })
        .collect();
    match texts.as_slice() {
        [one] if one.eq_ignore_ascii_case("default") => None,
        _ => Some(texts.join(", ")),
    }
}

fn shown(name: &str, value: String) -> StatementResult {
    let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(vec![value]))],
    )
    .expect("one text column");
    StatementResult::Rows {
        schema,
        batches: vec![batch],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str) -> ast::Statement {
        match pondra_parser::parse_sql(sql).unwrap().remove(0).statement {
            pondra_parser::Statement::Sql(statement) => *statement,
            other => panic!("not SQL: {other:?}"),
        }
    }

    fn shown_value(result: StatementResult) -> String {
        let StatementResult::Rows { batches, .. } = result else {
            panic!("rows")
        };
        let column = batches[0].column(0).as_any().downcast_ref::<StringArray>();
        column.unwrap().value(0).to_string()
    }

    #[test]
    fn a_known_or_custom_parameter_is_kept_and_shown_and_a_typo_refused() {
        let session = Session::new(None);
        let run_sql = |sql: &str| run(&statement(sql), &session);
        run_sql("SET application_name = 'etl'").unwrap();
        assert_eq!(
            shown_value(run_sql("SHOW application_name").unwrap()),
            "etl"
        );
        run_sql("SET myapp.tenant TO 'acme'").unwrap();
        assert_eq!(shown_value(run_sql("SHOW myapp.tenant").unwrap()), "acme");
        assert_eq!(
            shown_value(run_sql("SHOW extra_float_digits").unwrap()),
            "1"
        );
        run_sql("RESET application_name").unwrap();
        assert_eq!(shown_value(run_sql("SHOW application_name").unwrap()), "");
        let typo = run_sql("SET statment_timeout = '5s'").unwrap_err();
        assert_eq!(
            typo.to_string(),
            "unrecognized configuration parameter \"statment_timeout\""
        );
        let fixed = run_sql("SET server_version = '1'").unwrap_err();
        assert!(fixed.to_string().contains("cannot be changed"), "{fixed}");
    }
}
