//! Text functions of both anchors beyond the core ones: edit distances (`levenshtein`,
//! `damerau_levenshtein`, `hamming`), `jaccard`, `suffix` / `ends_with`, `contains`,
//! `translate`, `overlay`, `chr`, `ascii` and `concat_ws`.

use arrow::datatypes::DataType;

use super::expr::*;
use super::functions::strings;
use super::list_picks::integer;
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
        "overlay" if args.len() == 4 => (TextOp::Overlay, 4, DataType::Utf8),
        "overlay" => (TextOp::Overlay, 3, DataType::Utf8),
        "chr" => (TextOp::Chr, 1, DataType::Utf8),
        "ascii" => (TextOp::Ascii, 1, DataType::Int32),
        "concat_ws" => return Some(concat_ws(args)),
        "printf" | "sprintf" => return Some(formatted(name, args, TextOp::Printf)),
        "format" => return Some(formatted(name, args, TextOp::Format)),
        "ucase" | "lcase" | "unicode" | "array_value" | "array_extract" | "list_extract" => {
            return Some(alias(name, args));
        }
        "bar" => return Some(bar(args)),
        "to_base" => return Some(to_base(args)),
        "format_bytes" | "formatreadablesize" => {
            (TextOp::FormatBytes { decimal: false }, 1, DataType::Utf8)
        }
        "formatreadabledecimalsize" => (TextOp::FormatBytes { decimal: true }, 1, DataType::Utf8),
        "string_split_regex" | "str_split_regex" | "regexp_split_to_array" => {
            (TextOp::SplitRegex, 2, crate::types::list_of(DataType::Utf8))
        }
        "regexp_escape" => (TextOp::RegexpEscape, 1, DataType::Utf8),
        "parse_formatted_bytes" => (TextOp::ParseFormattedBytes, 1, DataType::Int64),
        "substring_grapheme" => (TextOp::SubstringGrapheme, 3, DataType::Utf8),
        "left_grapheme" => (TextOp::LeftGrapheme, 2, DataType::Utf8),
        "right_grapheme" => (TextOp::RightGrapheme, 2, DataType::Utf8),
        "length_grapheme" => (TextOp::LengthGrapheme, 1, DataType::Int64),
        "url_encode" => (TextOp::UrlEncode, 1, DataType::Utf8),
        "url_decode" => (TextOp::UrlDecode, 1, DataType::Utf8),
        _ => return None,
    };
    if args.len() != arity {
        return Some(Err(bind_err!("{name} takes {arity} argument(s)")));
    }
    let args = match op {
        TextOp::FormatBytes { .. } => match integer(name, &args[0]) {
            Ok(size) => vec![size],
            Err(e) => return Some(Err(e)),
        },
        TextOp::SubstringGrapheme | TextOp::LeftGrapheme | TextOp::RightGrapheme => {
            let mut bound = strings(vec![args[0].clone()]);
            for number in &args[1..] {
                match integer(name, number) {
                    Ok(number) => bound.push(number),
                    Err(e) => return Some(Err(e)),
                }
            }
            bound
        }
        TextOp::Overlay => {
            let mut bound = strings(args[..2].to_vec());
            for number in &args[2..] {
                match integer(name, number) {
                    Ok(number) => bound.push(number),
                    Err(e) => return Some(Err(e)),
                }
            }
            bound
        }
        TextOp::ParseFormattedBytes
            if !matches!(args[0].data_type(), DataType::Utf8 | DataType::Null) =>
        {
            return Some(Err(bind_err!(
                "parse_formatted_bytes takes text, not {}",
                type_name(&args[0].data_type())
            )));
        }
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

/// DuckDB's other names for functions bound elsewhere.
fn alias(name: &str, args: &[Expr]) -> Result<Expr> {
    let one = |func: ScalarFunction, data_type: DataType| -> Result<Expr> {
        let [value] = args else {
            return Err(bind_err!("{name} takes one argument"));
        };
        Ok(Expr::Function {
            func,
            args: strings(vec![value.clone()]),
            data_type,
        })
    };
    match name {
        "ucase" => one(ScalarFunction::Upper, DataType::Utf8),
        "lcase" => one(ScalarFunction::Lower, DataType::Utf8),
        "unicode" => one(ScalarFunction::Text(TextOp::Ascii), DataType::Int32),
        "array_value" => super::duckdb_functions::duckdb_function("list_value", args)
            .expect("list_value is one of DuckDB's functions"),
        // `array_extract(list, i)` is `list[i]`; over text, the i-th character.
        _ => {
            let [value, place] = args else {
                return Err(bind_err!("{name} takes a list and a place"));
            };
            match value.data_type() {
                DataType::Utf8 => {
                    super::list_picks::slice(name, Some(value), &[place.clone(), place.clone()])
                }
                DataType::List(item) => Ok(Expr::Function {
                    func: ScalarFunction::ArrayElement,
                    args: vec![value.clone(), integer(name, place)?],
                    data_type: item.data_type().clone(),
                }),
                other => Err(bind_err!(
                    "{name} needs a list or text, not {}",
                    type_name(&other)
                )),
            }
        }
    }
}

/// `bar(x, min, max [, width])`, 80 characters wide by default.
fn bar(args: &[Expr]) -> Result<Expr> {
    if !(3..=4).contains(&args.len()) {
        return Err(bind_err!(
            "bar takes a value, a minimum, a maximum and a width"
        ));
    }
    let mut bound = Vec::with_capacity(4);
    for number in &args[..3] {
        let t = number.data_type();
        if !crate::types::is_numeric(&t) && t != DataType::Null {
            return Err(bind_err!("bar needs numbers, not {}", type_name(&t)));
        }
        bound.push(number.clone().cast(&DataType::Float64));
    }
    let width = args
        .get(3)
        .cloned()
        .unwrap_or(Expr::Literal(crate::scalar::ScalarValue::Int64(80)));
    bound.push(integer("bar", &width)?);
    Ok(Expr::Function {
        func: ScalarFunction::Text(TextOp::Bar),
        args: bound,
        data_type: DataType::Utf8,
    })
}

/// `to_base(n, radix [, length])`.
fn to_base(args: &[Expr]) -> Result<Expr> {
    if !(2..=3).contains(&args.len()) {
        return Err(bind_err!("to_base takes a number, a radix and a length"));
    }
    let length = args
        .get(2)
        .cloned()
        .unwrap_or(Expr::Literal(crate::scalar::ScalarValue::Int64(0)));
    Ok(Expr::Function {
        func: ScalarFunction::Text(TextOp::ToBase),
        args: vec![
            integer("to_base", &args[0])?,
            integer("to_base", &args[1])?,
            integer("to_base", &length)?,
        ],
        data_type: DataType::Utf8,
    })
}
