//! SQL's own prepared statements: `PREPARE name [(types)] AS statement`, `EXECUTE name
//! [(values)]` and `DEALLOCATE [PREPARE] name | ALL`, kept per session. EXECUTE puts each
//! value (cast to its declared type, when one is given) in place of `$n` (or DuckDB's `?`,
//! in order) and runs the statement that makes.

use std::collections::HashMap;
use std::sync::Arc;

use pondra_parser::ast;

use crate::node::Node;
use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// A session's prepared statements, by name.
#[derive(Debug, Default)]
pub(crate) struct PreparedStatements {
    statements: HashMap<String, Prepared>,
}

#[derive(Debug, Clone)]
struct Prepared {
    /// The statement's SQL, with its placeholders.
    text: String,
    /// The declared type of each parameter, in order; fewer than the values when not given.
    types: Vec<ast::DataType>,
}

/// Whether `statement` is one of these.
pub(crate) fn is_prepared_statement(statement: &ast::Statement) -> bool {
    matches!(
        statement,
        ast::Statement::Prepare { .. }
            | ast::Statement::Execute {
                immediate: false,
                ..
            }
            | ast::Statement::Deallocate { .. }
    )
}

impl Node {
    /// Runs PREPARE, EXECUTE or DEALLOCATE for `session`.
    pub(crate) async fn run_prepared_statement(
        self: &Arc<Self>,
        session: &Arc<Session>,
        statement: &ast::Statement,
    ) -> Result<StatementResult> {
        match statement {
            ast::Statement::Prepare {
                name,
                data_types,
                statement,
            } => {
                if is_prepared_statement(statement) {
                    return Err(NodeError::Other(
                        "PREPARE prepares a query or a write, not PREPARE, EXECUTE or DEALLOCATE"
                            .into(),
                    ));
                }
                let prepared = Prepared {
                    text: statement.to_string(),
                    types: data_types.clone(),
                };
                let name = pondra_planner::normalize(name);
                session.with_prepared(|p| match p.statements.contains_key(&name) {
                    true => Err(NodeError::Other(format!(
                        "prepared statement \"{name}\" already exists"
                    ))),
                    false => {
                        p.statements.insert(name, prepared);
                        Ok(())
                    }
                })?;
                Ok(done("PREPARE"))
            }
            ast::Statement::Deallocate { name, .. } => {
                let name = pondra_planner::normalize(name);
                session.with_prepared(|p| {
                    if name == "all" {
                        p.statements.clear();
                        return Ok(());
                    }
                    p.statements.remove(&name).map(|_| ()).ok_or_else(|| {
                        NodeError::Other(format!("prepared statement \"{name}\" does not exist"))
                    })
                })?;
                Ok(done("DEALLOCATE"))
            }
            ast::Statement::Execute {
                name: Some(name),
                parameters,
                using,
                into,
                ..
            } if using.is_empty() && into.is_empty() => {
                let name = name.to_string().to_lowercase();
                let prepared = session
                    .with_prepared(|p| p.statements.get(&name).cloned())
                    .ok_or_else(|| {
                        NodeError::Other(format!("prepared statement \"{name}\" does not exist"))
                    })?;
                let values: Vec<String> = parameters
                    .iter()
                    .enumerate()
                    .map(|(i, value)| match prepared.types.get(i) {
                        Some(data_type) => format!("CAST(({value}) AS {data_type})"),
                        None => format!("({value})"),
                    })
                    .collect();
                let sql = pondra_parser::substitute_placeholders(&prepared.text, &values)?;
                let mut statements = pondra_parser::parse_sql(&sql)?;
                let (Some(statement), true) = (statements.pop(), statements.is_empty()) else {
                    return Err(NodeError::Other(format!("{name} is not one statement")));
                };
                Box::pin(self.execute_in(session, statement)).await
            }
            other => Err(NodeError::Other(format!("not supported yet: {other}"))),
        }
    }
}
