//! The session's `spread` (ADR 0076): `SET spread = 'auto' | 'always' | 'never'`, `SHOW` and
//! `RESET` it (back to the node's `--spread`); and `debug_spread_parts`, which cuts every plan
//! that can be cut into that many parts, with exchanges wherever the cut can place them, and
//! runs them all on this node, to test the cuts without a cluster (0, the default, turns it
//! off).

use pondra_parser::ast;
use pondra_planner::SpreadMode;

use crate::sessions::session::{Session, one_text};
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

const SPREAD: &str = "spread";
const DEBUG_PARTS: &str = "debug_spread_parts";

/// The most parts `debug_spread_parts` takes.
const MOST_DEBUG_PARTS: usize = 64;

/// What a session set of spreading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpreadSetting {
    /// `None`: the node's default.
    pub mode: Option<SpreadMode>,
    pub debug_parts: usize,
}

fn named(name: &str) -> Option<&'static str> {
    [SPREAD, DEBUG_PARTS]
        .into_iter()
        .find(|known| known.eq_ignore_ascii_case(name))
}

/// Whether `statement` sets, shows or resets `spread` or `debug_spread_parts`.
pub fn is_spread_setting(statement: &ast::Statement) -> bool {
    setting_name(statement).is_some()
}

fn setting_name(statement: &ast::Statement) -> Option<&'static str> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => {
            named(&variable.to_string())
        }
        ast::Statement::ShowVariable { variable } if variable.len() == 1 => {
            named(&variable[0].value)
        }
        ast::Statement::Reset(reset) => match &reset.reset {
            ast::Reset::ConfigurationParameter(name) => named(&name.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// Runs a statement `is_spread_setting` accepts for `session`.
pub fn run_spread_setting(
    statement: &ast::Statement,
    session: &Session,
) -> Result<StatementResult> {
    let name = setting_name(statement).expect("a spread setting");
    let mut setting = session.spread_setting();
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { values, .. }) => {
            let text = match values.as_slice() {
                [ast::Expr::Value(v)] => match &v.value {
                    ast::Value::SingleQuotedString(text) | ast::Value::Number(text, _) => {
                        text.clone()
                    }
                    other => other.to_string(),
                },
                [ast::Expr::Identifier(ident)] => ident.value.clone(),
                _ => String::new(),
            };
            match name {
                SPREAD if text.eq_ignore_ascii_case("default") => setting.mode = None,
                SPREAD => {
                    setting.mode = Some(SpreadMode::parse(&text).ok_or_else(|| {
                        NodeError::Other(format!(
                            "invalid value for spread: '{text}' (expected auto, always or never)"
                        ))
                    })?)
                }
                _ => setting.debug_parts = debug_parts(&text)?,
            }
            session.set_spread_setting(setting);
            Ok(done("SET"))
        }
        ast::Statement::Reset(_) => {
            match name {
                SPREAD => setting.mode = None,
                _ => setting.debug_parts = 0,
            }
            session.set_spread_setting(setting);
            Ok(done("RESET"))
        }
        _ => Ok(match name {
            SPREAD => one_text(
                SPREAD,
                setting.mode.map_or("default", SpreadMode::name).into(),
            ),
            _ => one_text(DEBUG_PARTS, setting.debug_parts.to_string()),
        }),
    }
}

fn debug_parts(text: &str) -> Result<usize> {
    match text.trim().parse::<usize>() {
        Ok(parts) if parts != 1 && parts <= MOST_DEBUG_PARTS => Ok(parts),
        _ => Err(NodeError::Other(format!(
            "invalid value for debug_spread_parts: '{text}' (expected 0 for off, or 2 to \
             {MOST_DEBUG_PARTS} parts)"
        ))),
    }
}
