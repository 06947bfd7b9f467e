//! Settings a statement changes for the whole process, as in DuckDB: `SET memory_limit =
//! '4GB'` (also `TO`, a number of bytes, a share such as `'50%'`, or `DEFAULT` for 80% of the
//! machine's memory) and `SET debug_force_external = true` (sorts, joins and aggregations
//! spill to disk past a small fixed amount, whatever the limit, to run their spilling paths);
//! `SHOW` and `RESET` of each.

use pondra_exec::{MemoryPool, default_memory_limit, format_size, parse_memory_size};
use pondra_parser::ast;

use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// The process settings, by name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Setting {
    MemoryLimit,
    ForceExternal,
}

impl Setting {
    fn named(name: &str) -> Option<Setting> {
        match name.to_ascii_lowercase().as_str() {
            "memory_limit" => Some(Setting::MemoryLimit),
            "debug_force_external" => Some(Setting::ForceExternal),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Setting::MemoryLimit => "memory_limit",
            Setting::ForceExternal => "debug_force_external",
        }
    }
}

/// The setting `statement` sets, shows or resets, and the values it sets (none to show,
/// `None` to reset).
fn setting_of(statement: &ast::Statement) -> Option<(Setting, Option<Option<&[ast::Expr]>>)> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment {
            variable, values, ..
        }) => Setting::named(&variable.to_string()).map(|s| (s, Some(Some(values.as_slice())))),
        ast::Statement::ShowVariable { variable } if variable.len() == 1 => {
            Setting::named(&variable[0].value).map(|s| (s, None))
        }
        ast::Statement::Reset(reset) => match &reset.reset {
            ast::Reset::ConfigurationParameter(name) => {
                Setting::named(&name.to_string()).map(|s| (s, Some(None)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `statement` sets, shows or resets a process setting, which the node answers itself.
pub fn is_process_setting(statement: &ast::Statement) -> bool {
    setting_of(statement).is_some()
}

/// Runs a statement `is_process_setting` accepts.
pub fn run_setting(statement: &ast::Statement, memory: &MemoryPool) -> Result<StatementResult> {
    let (setting, change) = setting_of(statement).expect("a process setting");
    match (setting, change) {
        (Setting::MemoryLimit, Some(values)) => {
            let bytes = match values {
                Some(values) => memory_limit_of(values)?,
                None => default_memory_limit(),
            };
            memory.set_limit(bytes);
            Ok(done(if values.is_some() { "SET" } else { "RESET" }))
        }
        (Setting::ForceExternal, Some(values)) => {
            let forced = match values {
                Some(values) => boolean_of(setting, values)?,
                None => false,
            };
            memory.set_force_spill(forced);
            Ok(done(if values.is_some() { "SET" } else { "RESET" }))
        }
        (Setting::MemoryLimit, None) => Ok(one_text(setting, format_size(memory.limit()))),
        (Setting::ForceExternal, None) => Ok(one_text(setting, memory.forces_spill().to_string())),
    }
}

fn memory_limit_of(values: &[ast::Expr]) -> Result<usize> {
    let [value] = values else {
        return Err(NodeError::Other(
            "SET memory_limit takes one value, such as '4GB'".into(),
        ));
    };
    Ok(match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(text) | ast::Value::Number(text, _) => {
                parse_memory_size(text)?
            }
            ast::Value::Null => default_memory_limit(),
            other => parse_memory_size(&other.to_string())?,
        },
        ast::Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case("default") => {
            default_memory_limit()
        }
        other => parse_memory_size(&other.to_string())?,
    })
}

/// A boolean setting's value: `true` / `false` (bare, quoted, or as 1 / 0), or `DEFAULT`.
fn boolean_of(setting: Setting, values: &[ast::Expr]) -> Result<bool> {
    let text = match values {
        [ast::Expr::Value(v)] => match &v.value {
            ast::Value::Boolean(b) => b.to_string(),
            ast::Value::SingleQuotedString(text) | ast::Value::Number(text, _) => text.clone(),
            other => other.to_string(),
        },
        [ast::Expr::Identifier(ident)] => ident.value.clone(),
        _ => String::new(),
    };
    match text.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" | "default" => Ok(false),
        _ => Err(NodeError::Other(format!(
            "SET {} takes true or false, not '{text}'",
            setting.name()
        ))),
    }
}

fn one_text(setting: Setting, text: String) -> StatementResult {
    crate::sessions::session::one_text(setting.name(), text)
}
