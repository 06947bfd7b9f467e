//! The session's `hnsw.ef_search` (pgvector's name; `hnsw_ef_search` too): how many
//! candidates each search of a vector index weighs (ADR 0082). More finds more of the true
//! nearest rows and costs more. `SET`, `SHOW` and `RESET` it; `DEFAULT` is the engine's.

use pondra_exec::{DEFAULT_EF_SEARCH, MOST_EF_SEARCH};
use pondra_parser::ast;

use crate::sessions::session::{Session, one_text, setting_statement_name};
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

const NAMES: [&str; 2] = ["hnsw.ef_search", "hnsw_ef_search"];

fn is_named(name: &str) -> bool {
    NAMES.iter().any(|known| known.eq_ignore_ascii_case(name))
}

/// Whether `statement` sets, shows or resets `hnsw.ef_search`.
pub fn is_vector_setting(statement: &ast::Statement) -> bool {
    setting_statement_name(statement).is_some_and(|name| is_named(&name))
}

/// Runs a statement `is_vector_setting` accepts for `session`.
pub fn run_vector_setting(
    statement: &ast::Statement,
    session: &Session,
) -> Result<StatementResult> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { values, .. }) => {
            session.set_ef_search(ef_search(values)?);
            Ok(done("SET"))
        }
        ast::Statement::Reset(_) => {
            session.set_ef_search(None);
            Ok(done("RESET"))
        }
        _ => {
            let ef = session.ef_search().unwrap_or(DEFAULT_EF_SEARCH);
            Ok(one_text(NAMES[0], ef.to_string()))
        }
    }
}

/// The value a `SET hnsw.ef_search` names: `None` for `DEFAULT`.
fn ef_search(values: &[ast::Expr]) -> Result<Option<usize>> {
    let text = match values {
        [ast::Expr::Identifier(ident)] if ident.value.eq_ignore_ascii_case("default") => {
            return Ok(None);
        }
        [ast::Expr::Value(v)] => match &v.value {
            ast::Value::Number(text, _) | ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        _ => String::new(),
    };
    match text.trim().parse::<usize>() {
        Ok(ef) if (1..=MOST_EF_SEARCH).contains(&ef) => Ok(Some(ef)),
        _ => Err(NodeError::Other(format!(
            "invalid value for hnsw.ef_search: '{text}' (expected 1 to {MOST_EF_SEARCH}, or \
             DEFAULT)"
        ))),
    }
}
