//! `CALL name(args)` (ADR 0081): the arguments are computed once, in the caller's session, and
//! become typed literals; the overload they fit is found; a SQL procedure's statements then
//! run one after another in the caller's session, each parameter (by name or as `$n`) replaced
//! by its literal. A `BEGIN ... COMMIT` in the body is the session's, as if typed. A procedure
//! may call procedures, 32 deep. A Python procedure runs in a worker process with `con`, a
//! client connected to the node, through the [`PythonRunner`] a serving node is given.

use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use pondra_catalog::{FunctionLanguage, SqlType, TableKind};
use pondra_parser::{ParsedStatement, Statement, ast};

use crate::node::Node;
use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// How deep procedures may call procedures.
const MAX_CALL_DEPTH: usize = 32;

/// Runs Python code in a worker process with `con` connected to this node (the console's
/// Python cells, ADR 0080): its outcome as JSON (`stdout`, `error`), or why the worker failed.
pub trait PythonRunner: Send + Sync {
    fn run(
        &self,
        code: String,
        patience: std::time::Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>>;
}

/// The longest a Python procedure runs in a session without a statement timeout.
const PYTHON_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The procedure `CALL` in `statement`, when it is one.
pub(crate) fn call_of(statement: &ast::Statement) -> Option<&ast::Function> {
    match statement {
        ast::Statement::Call(function) => Some(function),
        _ => None,
    }
}

impl Node {
    /// Runs `CALL` for `session`, `depth` calls deep.
    pub(crate) async fn call_procedure(
        self: &Arc<Self>,
        session: &Arc<Session>,
        call: &ast::Function,
        depth: usize,
    ) -> Result<StatementResult> {
        let name = pondra_planner::object_name(&call.name).map_err(NodeError::from)?;
        if depth >= MAX_CALL_DEPTH {
            return Err(NodeError::Other(format!(
                "procedures call procedures more than {MAX_CALL_DEPTH} deep (does {name} call itself?)"
            )));
        }
        let arguments = call_arguments(call)?;
        let select = format!("SELECT {}", arguments.join(", "));
        let types = match arguments.is_empty() {
            true => Vec::new(),
            false => self
                .result_schema_in(Some(session), &select)?
                .map(|s| s.fields().iter().map(|f| f.data_type().clone()).collect())
                .unwrap_or_default(),
        };
        let snapshot = session
            .transaction_view()
            .unwrap_or_else(|| self.snapshot());
        let def = pondra_planner::procedure_for_call(&snapshot, &name, &types)?;
        let TableKind::Procedure {
            parameters,
            parameter_types,
            language,
            body,
        } = &def.kind
        else {
            unreachable!("procedure_for_call finds procedures");
        };
        let (literals, values) = self
            .argument_values(session, &arguments, parameter_types)
            .await?;
        if *language == FunctionLanguage::Python {
            let code = python_call(&name, parameters, body, &values);
            return self.run_python_procedure(session, &name, code).await;
        }
        for statement in pondra_parser::parse_sql(body)? {
            let statement = with_arguments(statement, parameters, &literals)?;
            let inner = match &statement.statement {
                Statement::Sql(sql) => call_of(sql).cloned(),
                _ => None,
            };
            match inner {
                Some(inner) => {
                    Box::pin(self.call_procedure(session, &inner, depth + 1)).await?;
                }
                None => {
                    Box::pin(self.execute_in(session, statement)).await?;
                }
            }
        }
        Ok(done("CALL"))
    }

    /// Each argument computed once: as a SQL literal of its parameter's type, and as a JSON
    /// value (for Python).
    async fn argument_values(
        self: &Arc<Self>,
        session: &Arc<Session>,
        arguments: &[String],
        types: &[SqlType],
    ) -> Result<(Vec<String>, Vec<serde_json::Value>)> {
        if arguments.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let casts: Vec<String> = arguments
            .iter()
            .zip(types)
            .enumerate()
            .map(|(at, (argument, to))| format!("CAST(({argument}) AS {to}) AS a{at}"))
            .collect();
        let statement = pondra_parser::parse_sql(&format!("SELECT {}", casts.join(", ")))?
            .pop()
            .expect("one SELECT");
        let StatementResult::Rows { batches, .. } =
            Box::pin(self.execute_in(session, statement)).await?
        else {
            unreachable!("a SELECT returns rows");
        };
        let Some(row) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Err(NodeError::Other("CALL's arguments gave no row".into()));
        };
        let row = row.slice(0, 1);
        let literals = row
            .columns()
            .iter()
            .zip(types)
            .map(|(column, to)| literal(column, to))
            .collect::<Result<Vec<_>>>()?;
        Ok((literals, json_values(&row)?))
    }

    /// Runs Python procedure `name`'s `code` in a worker, under the session's timeout.
    async fn run_python_procedure(
        &self,
        session: &Session,
        name: &str,
        code: String,
    ) -> Result<StatementResult> {
        let runner = self
            .python
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                NodeError::Other(format!(
                    "Python procedure {name} runs on a serving node (pondra serve), whose client it uses"
                ))
            })?;
        let patience = session.statement_timeout().unwrap_or(PYTHON_PATIENCE);
        let outcome = runner
            .run(code, patience)
            .await
            .map_err(|why| NodeError::Other(format!("Python procedure {name}: {why}")))?;
        let outcome: serde_json::Value = serde_json::from_str(&outcome)
            .map_err(|e| NodeError::Other(format!("Python procedure {name}: {e}")))?;
        match outcome["error"].as_str() {
            Some(error) => Err(NodeError::Other(format!(
                "Python procedure {name} failed: {}",
                error.trim()
            ))),
            None => Ok(done("CALL")),
        }
    }
}

/// Where Python procedures run (ADR 0081): set by the server once its doors are open.
impl Node {
    pub fn set_python_runner(&self, runner: Arc<dyn PythonRunner>) {
        *self.python.write().unwrap_or_else(|e| e.into_inner()) = Some(runner);
    }
}

/// The values of a one-row batch as JSON, in column order.
fn json_values(row: &arrow::array::RecordBatch) -> Result<Vec<serde_json::Value>> {
    let mut text = Vec::new();
    let mut writer = arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow::json::writer::JsonArray>(&mut text);
    writer
        .write(row)
        .and_then(|_| writer.finish())
        .map_err(|e| NodeError::Other(e.to_string()))?;
    drop(writer);
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_slice(&text).map_err(|e| NodeError::Other(e.to_string()))?;
    let fields = row.schema();
    Ok(fields
        .fields()
        .iter()
        .map(|f| rows[0].get(f.name()).cloned().unwrap_or_default())
        .collect())
}

/// The Python a procedure's call runs: its body as the body of `def name(parameters):`, then
/// the call with the arguments' values.
fn python_call(
    name: &str,
    parameters: &[String],
    body: &str,
    values: &[serde_json::Value],
) -> String {
    let body: Vec<String> = body
        .trim_matches('\n')
        .lines()
        .map(|line| format!("    {line}"))
        .collect();
    let arguments = serde_json::Value::Array(values.to_vec()).to_string();
    let arguments = serde_json::Value::String(arguments).to_string();
    format!(
        "import json as _pondra_json\ndef {name}({}):\n{}\n    pass\n{name}(*_pondra_json.loads({arguments}))\n",
        parameters.join(", "),
        body.join("\n")
    )
}

/// The arguments of `call` as SQL text, in order; named ones are refused.
fn call_arguments(call: &ast::Function) -> Result<Vec<String>> {
    let list = match &call.args {
        ast::FunctionArguments::None => return Ok(Vec::new()),
        ast::FunctionArguments::List(list) => list,
        ast::FunctionArguments::Subquery(_) => {
            return Err(NodeError::Other("CALL takes values, not a query".into()));
        }
    };
    list.args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => Ok(expr.to_string()),
            _ => Err(NodeError::Other(
                "not supported yet: named arguments of CALL".into(),
            )),
        })
        .collect()
}

/// The first value of `column` as a SQL literal of type `to`.
fn literal(column: &ArrayRef, to: &SqlType) -> Result<String> {
    if column.is_null(0) {
        return Ok(format!("CAST(NULL AS {to})"));
    }
    let options = FormatOptions::default();
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)
        .map_err(|e| NodeError::Other(e.to_string()))?;
    let text = formatter.value(0).to_string().replace('\'', "''");
    Ok(format!("CAST('{text}' AS {to})"))
}

/// `statement` with each parameter (by name, or `$n`) replaced by its argument's literal.
fn with_arguments(
    mut statement: ParsedStatement,
    parameters: &[String],
    literals: &[String],
) -> Result<ParsedStatement> {
    let Statement::Sql(sql) = &mut statement.statement else {
        return Ok(statement);
    };
    let values = literals
        .iter()
        .map(|l| pondra_parser::parse_expression(l))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut replaced = false;
    let _ = ast::visit_expressions_mut(sql.as_mut(), |expr| {
        let position = match expr {
            ast::Expr::Identifier(ident) => {
                let name = pondra_planner::normalize(ident);
                parameters.iter().position(|p| *p == name)
            }
            ast::Expr::Value(value) => match &value.value {
                ast::Value::Placeholder(placeholder) => placeholder
                    .strip_prefix('$')
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=values.len()).contains(n))
                    .map(|n| n - 1),
                _ => None,
            },
            _ => None,
        };
        if let Some(at) = position {
            *expr = ast::Expr::Nested(Box::new(values[at].clone()));
            replaced = true;
        }
        ControlFlow::<()>::Continue(())
    });
    if replaced {
        statement.text = sql.to_string();
    }
    Ok(statement)
}
