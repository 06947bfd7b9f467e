//! The session's `disabled_optimizers` (DuckDB's setting): `SET disabled_optimizers =
//! 'join_order,build_side_probe_side'`, `SHOW` and `RESET` of it. What each name turns off is
//! the planner's `OptimizerSettings`.

use pondra_parser::ast;
use pondra_planner::OptimizerSettings;

use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

const DISABLED_OPTIMIZERS: &str = "disabled_optimizers";

fn is_named(name: &str) -> bool {
    name.eq_ignore_ascii_case(DISABLED_OPTIMIZERS)
}

/// Whether `statement` sets, shows or resets the session's disabled optimizers.
pub fn is_optimizer_setting(statement: &ast::Statement) -> bool {
    crate::sessions::session::setting_statement_name(statement).is_some_and(|name| is_named(&name))
}

/// Runs a statement `is_optimizer_setting` accepts for `session`.
pub fn run_optimizer_setting(
    statement: &ast::Statement,
    session: &Session,
) -> Result<StatementResult> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { values, .. }) => {
            let text = match values.as_slice() {
                [ast::Expr::Value(v)] => match &v.value {
                    ast::Value::SingleQuotedString(text) => text.clone(),
                    other => other.to_string(),
                },
                [ast::Expr::Identifier(ident)] if ident.value.eq_ignore_ascii_case("default") => {
                    String::new()
                }
                _ => {
                    return Err(NodeError::Other(
                        "SET disabled_optimizers takes a text of names separated by commas".into(),
                    ));
                }
            };
            let settings = OptimizerSettings::disabling(&text)?;
            session.set_optimizer_settings(settings);
            Ok(done("SET"))
        }
        ast::Statement::Reset(_) => {
            session.set_optimizer_settings(OptimizerSettings::default());
            Ok(done("RESET"))
        }
        _ => Ok(crate::sessions::session::one_text(
            DISABLED_OPTIMIZERS,
            session.optimizer_settings().text(),
        )),
    }
}
