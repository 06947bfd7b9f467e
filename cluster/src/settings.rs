//! Settings a statement changes for the whole process: `SET memory_limit = '4GB'` (also
//! `TO`, a number of bytes, a share such as `'50%'`, or `DEFAULT` for 80% of the machine's
//! memory) and `SHOW memory_limit`, as in DuckDB.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use pondra_exec::{MemoryPool, default_memory_limit, format_size, parse_memory_size};
use pondra_parser::ast;

use crate::node::{StatementResult, done};
use crate::{NodeError, Result};

const MEMORY_LIMIT: &str = "memory_limit";

/// Whether `statement` sets or shows a process setting, which the node answers itself.
pub fn is_process_setting(statement: &ast::Statement) -> bool {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => {
            is_memory_limit(&variable.to_string())
        }
        ast::Statement::ShowVariable { variable } => {
            variable.len() == 1 && is_memory_limit(&variable[0].value)
        }
        _ => false,
    }
}

fn is_memory_limit(name: &str) -> bool {
    name.eq_ignore_ascii_case(MEMORY_LIMIT)
}

/// Runs a statement `is_process_setting` accepts.
pub fn run_setting(statement: &ast::Statement, memory: &MemoryPool) -> Result<StatementResult> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { values, .. }) => {
            let [value] = values.as_slice() else {
                return Err(NodeError::Other(
                    "SET memory_limit takes one value, such as '4GB'".into(),
                ));
            };
            let bytes = match value {
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
            };
            memory.set_limit(bytes);
            Ok(done("SET"))
        }
        _ => {
            let schema = Arc::new(Schema::new(vec![Field::new(
                MEMORY_LIMIT,
                DataType::Utf8,
                false,
            )]));
            let text = format_size(memory.limit());
            let column = StringArray::from(vec![text]);
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)])
                .expect("one text column");
            Ok(StatementResult::Rows {
                schema,
                batches: vec![batch],
            })
        }
    }
}
