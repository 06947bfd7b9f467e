//! Text functions of both anchors beyond the core ones: edit distances (`levenshtein`,
//! `damerau_levenshtein`, `hamming`), `jaccard`, `suffix` / `ends_with`, `contains`,
//! `translate`, `chr`, `ascii` and `concat_ws`.

use arrow::datatypes::DataType;

use super::expr::*;
use super::functions::strings;
use crate::expr::{Expr, ScalarFunction, TextOp};
use crate::{Result, bind_err};

/// The bound call, or `None` when `name` is none of these functions.
pub(super) fn text_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let (op, arity, data_type) = match name {
        "levenshtein" | "editdist3" => (TextOp::Levenshtein, 2, DataType::Int64),
        "damerau_levenshtein" => (TextOp::DamerauLevenshtein, 2, DataType::Int64),
        "hamming" | "mismatches" => (TextOp::Hamming, 2, DataType::Int64),
        "jaccard" => (TextOp::Jaccard, 2, DataType::Float64),
        "suffix" | "ends_with" => (TextOp::EndsWith, 2, DataType::Boolean),
        "contains" => (TextOp::Contains, 2, DataType::Boolean),
        "translate" => (TextOp::Translate, 3, DataType::Utf8),
        "chr" => (TextOp::Chr, 1, DataType::Utf8),
        "ascii" => (TextOp::Ascii, 1, DataType::Int32),
        "concat_ws" => return Some(concat_ws(args)),
        "printf" | "sprintf" => return Some(formatted(name, args, TextOp::Printf)),
        "format" => return Some(formatted(name, args, TextOp::Format)),
        _ => return None,
    };
    if args.len() != arity {
        return Some(Err(bind_err!("{name} takes {arity} argument(s)")));
    }
    let args = match op {
        TextOp::Chr => match integer(name, &args[0]) {
            Ok(code) => vec![code],
            Err(e) => return Some(Err(e)),
        },
        // DuckDB's `contains` also finds an element in a list; the text form is this one.
        TextOp::Contains if matches!(args[0].data_type(), DataType::List(_)) => {
            return Some(Err(bind_err!(
                "contains over a list: use list_contains(list, element)"
            )));
        }
        _ => strings(args.to_vec()),
    };
    Some(Ok(Expr::Function {
        func: ScalarFunction::Text(op),
        args,
        data_type,
    }))
}

fn integer(name: &str, arg: &Expr) -> Result<Expr> {
    match arg.data_type() {
        DataType::Int32 | DataType::Int64 | DataType::Null => {
            Ok(arg.clone().cast(&DataType::Int64))
        }
        other => Err(bind_err!(
            "{name} needs an integer code point, not {}",
            type_name(&other)
        )),
    }
}

/// `concat_ws(separator, a, b, ...)`: the non-NULL values joined by the separator; NULL when
/// the separator is.
fn concat_ws(args: &[Expr]) -> Result<Expr> {
    if args.len() < 2 {
        return Err(bind_err!(
            "concat_ws takes a separator and at least one value"
        ));
    }
    Ok(Expr::Function {
        func: ScalarFunction::Text(TextOp::ConcatWs),
        args: strings(args.to_vec()),
        data_type: DataType::Utf8,
    })
}

/// `printf(format, ...)` and `format(format, ...)`: the format as text, the arguments in their
/// own types, which the specifiers check.
fn formatted(name: &str, args: &[Expr], op: TextOp) -> Result<Expr> {
    let Some((format, values)) = args.split_first() else {
        return Err(bind_err!("{name} takes a format and the values to write"));
    };
    let mut bound = vec![format.clone().cast(&DataType::Utf8)];
    for value in values {
        bound.push(match value.data_type() {
            DataType::Null => value.clone().cast(&DataType::Utf8),
            _ => value.clone(),
        });
    }
    Ok(Expr::Function {
        func: ScalarFunction::Text(op),
        args: bound,
        data_type: DataType::Utf8,
    })
}
