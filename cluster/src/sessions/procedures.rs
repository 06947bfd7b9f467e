//! `CALL name(args)` (ADR 0081): the arguments are computed once, in the caller's session, and
//! become typed literals; the overload they fit is found; a SQL procedure's statements then
//! run one after another in the caller's session, each parameter (by name or as `$n`) replaced
//! by its literal. A `BEGIN ... COMMIT` in the body is the session's, as if typed. A procedure
//! may call procedures, 32 deep.

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
        let literals = self
            .argument_literals(session, &arguments, parameter_types)
            .await?;
        match language {
            FunctionLanguage::Sql => {}
            FunctionLanguage::Python => {
                return Err(NodeError::Other(format!(
                    "not supported yet: Python procedures ({name}; ADR 0081)"
                )));
            }
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

    /// Each argument computed once and written as a literal of its parameter's type.
    async fn argument_literals(
        self: &Arc<Self>,
        session: &Arc<Session>,
        arguments: &[String],
        types: &[SqlType],
    ) -> Result<Vec<String>> {
        if arguments.is_empty() {
            return Ok(Vec::new());
        }
        let casts: Vec<String> = arguments
            .iter()
            .zip(types)
            .map(|(argument, to)| format!("CAST(({argument}) AS {to})"))
            .collect();
        let statement = pondra_parser::parse_sql(&format!("SELECT {}", casts.join(", ")))?
            .pop()
            .expect("one SELECT");
        let StatementResult::Rows { batches, .. } =
            Box::pin(self.execute_in(session, statement)).await?
        else {
            unreachable!("a SELECT returns rows");
        };
        let columns: Vec<ArrayRef> = match batches.iter().find(|b| b.num_rows() > 0) {
            Some(batch) => batch.columns().to_vec(),
            None => return Err(NodeError::Other("CALL's arguments gave no row".into())),
        };
        columns
            .iter()
            .zip(types)
            .map(|(column, to)| literal(column, to))
            .collect()
    }
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
