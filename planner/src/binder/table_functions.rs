//! Functions in FROM that give rows of their own: `generate_series`, `range`, `unnest` and
//! `pg_get_keywords`. Their arguments are constants or expressions of them; a function over a
//! column of another FROM item (LATERAL) is not supported yet.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use super::expr::{Context, bind_expr, is_string_literal, type_name};
use super::scope::Scope;
use crate::expr::{Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{Result, bind_err, unsupported};

/// True for the names `set_function` binds.
pub fn is_set_function(name: &str) -> bool {
    matches!(
        name,
        "generate_series" | "range" | "unnest" | "pg_get_keywords"
    )
}

/// The rows of the set-returning function `name` over `args`, in a column named after it.
pub fn set_function(name: &str, args: &[ast::FunctionArg]) -> Result<LogicalPlan> {
    let empty = Scope::default();
    let mut ctx = Context::plain(&empty, "FROM");
    let args = args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => bind_expr(e, &mut ctx),
            other => Err(bind_err!("{name}: unexpected argument {other}")),
        })
        .collect::<Result<Vec<_>>>()?;
    let array = match name {
        "pg_get_keywords" if args.is_empty() => return Ok(keywords()),
        "pg_get_keywords" => return Err(bind_err!("pg_get_keywords takes no arguments")),
        "unnest" => match args.as_slice() {
            [array] if matches!(array.data_type(), DataType::List(_)) => array.clone(),
            [other] => {
                return Err(bind_err!(
                    "unnest needs an array, not {}",
                    type_name(&other.data_type())
                ));
            }
            _ => return Err(bind_err!("unnest takes one array")),
        },
        _ => series(name, args)?,
    };
    let DataType::List(item) = array.data_type() else {
        unreachable!("an array")
    };
    let schema = Arc::new(Schema::new(vec![Field::new(
        name,
        item.data_type().clone(),
        true,
    )]));
    // One row of no columns to unnest from.
    let one_row = LogicalPlan::Values {
        schema: Arc::new(Schema::empty()),
        rows: vec![Vec::new()],
    };
    Ok(LogicalPlan::Unnest {
        input: Box::new(one_row),
        array,
        schema,
    })
}

/// `generate_series(start, stop [, step])` (stop included) or `range([start,] stop [, step])`
/// (stop excluded), over BIGINTs, as an array.
fn series(name: &str, args: Vec<Expr>) -> Result<Expr> {
    let inclusive = name == "generate_series";
    let mut args = match (inclusive, args.len()) {
        (false, 1) => {
            let mut args = args;
            args.insert(0, Expr::Literal(ScalarValue::Int64(0)));
            args
        }
        (_, 2 | 3) => args,
        _ => return Err(bind_err!("{name} takes a start, a stop and a step")),
    };
    if args.len() == 2 {
        args.push(Expr::Literal(ScalarValue::Int64(1)));
    }
    for arg in &mut args {
        // A quoted number is read as one, as Postgres reads a literal of unknown type.
        if is_string_literal(arg) {
            *arg = arg.clone().cast(&DataType::Int64);
        }
        let t = arg.data_type();
        if !matches!(t, DataType::Int32 | DataType::Int64 | DataType::Null) {
            return Err(unsupported!("{name} over {}", type_name(&t)));
        }
    }
    Ok(Expr::Function {
        func: ScalarFunction::Series { inclusive },
        args: args.into_iter().map(|a| a.cast(&DataType::Int64)).collect(),
        data_type: list_of(DataType::Int64),
    })
}

/// `pg_get_keywords()`: the words the SQL parser knows; those it will not take as a column
/// alias are reserved.
fn keywords() -> LogicalPlan {
    use sqlparser::keywords::{ALL_KEYWORDS, ALL_KEYWORDS_INDEX, RESERVED_FOR_COLUMN_ALIAS};
    let text = |s: &str| Expr::Literal(ScalarValue::Utf8(s.to_string()));
    let rows = ALL_KEYWORDS
        .iter()
        .zip(ALL_KEYWORDS_INDEX)
        .map(|(word, keyword)| {
            let reserved = RESERVED_FOR_COLUMN_ALIAS.contains(keyword);
            let (code, description) = if reserved {
                ("R", "reserved")
            } else {
                ("U", "unreserved")
            };
            vec![
                text(&word.to_lowercase()),
                text(code),
                Expr::Literal(ScalarValue::Boolean(!reserved)),
                text(description),
            ]
        })
        .collect();
    let schema = Schema::new(vec![
        Field::new("word", DataType::Utf8, true),
        Field::new("catcode", DataType::Utf8, true),
        Field::new("barelabel", DataType::Boolean, true),
        Field::new("catdesc", DataType::Utf8, true),
    ]);
    LogicalPlan::Values {
        schema: Arc::new(schema),
        rows,
    }
}
