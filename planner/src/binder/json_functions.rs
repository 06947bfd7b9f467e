//! PostgreSQL's and DuckDB's everyday JSON functions, over JSON held as text (ADR 0069):
//! builders (`json_object`, `json_build_object`, `json_array`, `to_json`, ...), readers
//! (`json_array_length`, `json_typeof`, `json_keys`, `json_extract_path`, `json_value`, ...),
//! rewriters (`jsonb_set`, `json_merge_patch`, `json_strip_nulls`, `json_pretty`), the
//! aggregates (`json_agg`, `json_object_agg`, `json_group_array`, `json_group_object`) and
//! the set-returning `json_array_elements`, `json_each` and `json_object_keys`. `jsonb_*`
//! names give PostgreSQL's `jsonb` forms. A value goes into a document as its JSON
//! (`to_json`), a JSON value (a cast to JSON, another JSON function's result) as itself.
//!
//! Where the anchors differ, each name keeps its own engine's answer: DuckDB's names write
//! compactly and count a non-array's length as 0; PostgreSQL's write with spaces and
//! `jsonb_array_length` refuses a non-array.

use arrow::datatypes::{DataType, Field};
use sqlparser::ast;

use super::expr::*;
use crate::expr::{Expr, JsonOp, JsonStyle, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{Result, bind_err};

/// The scalar JSON function `name` over `args`; `None` for other names.
pub(super) fn json_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let jsonb = name.starts_with("jsonb");
    let style = match jsonb {
        true => JsonStyle::Jsonb,
        false => JsonStyle::PgJson,
    };
    let bound = match name {
        "to_json" | "json_quote" | "to_jsonb" | "row_to_json" => unary(name, args, |value| {
            Ok(as_json(
                value,
                if jsonb { style } else { JsonStyle::Compact },
            ))
        }),
        "json_object" if args.iter().all(is_list) && (1..=2).contains(&args.len()) => {
            object_of_texts(args)
        }
        "json_object" => object(name, args, JsonStyle::Compact),
        "json_build_object" | "jsonb_build_object" => object(name, args, style),
        "json_array" => Ok(array(args, JsonStyle::Compact)),
        "json_build_array" | "jsonb_build_array" => Ok(array(args, JsonStyle::Jsonb)),
        "json_array_length" | "jsonb_array_length" => match args {
            [document] | [document, _] => {
                let mut call = vec![text(document.clone())];
                call.extend(args.get(1).cloned().map(text));
                Ok(json(
                    JsonOp::ArrayLength { strict: jsonb },
                    call,
                    DataType::Int64,
                ))
            }
            _ => Err(bind_err!("{name} takes a document and an optional path")),
        },
        "json_typeof" | "jsonb_typeof" => unary(name, args, |document| {
            let op = JsonOp::TypeOf { duckdb: false };
            Ok(json(op, vec![text(document)], DataType::Utf8))
        }),
        "json_type" => {
            with_optional_path(name, args, JsonOp::TypeOf { duckdb: true }, DataType::Utf8)
        }
        "json_keys" => with_optional_path(name, args, JsonOp::Keys, list_of(DataType::Utf8)),
        "json_valid" => unary(name, args, |value| {
            Ok(json(JsonOp::Valid, vec![text(value)], DataType::Boolean))
        }),
        "json_exists" | "jsonb_exists" => binary(name, args, JsonOp::Exists, DataType::Boolean),
        "json_contains" | "jsonb_contains" => {
            binary(name, args, JsonOp::Contains, DataType::Boolean)
        }
        "json_merge_patch" => match args.len() {
            0 | 1 => Err(bind_err!("{name} takes two documents or more")),
            _ => Ok(json(
                JsonOp::MergePatch,
                args.iter().cloned().map(text).collect(),
                DataType::Utf8,
            )),
        },
        "json_strip_nulls" | "jsonb_strip_nulls" => unary(name, args, |document| {
            let style = if jsonb { style } else { JsonStyle::Compact };
            Ok(json(
                JsonOp::StripNulls(style),
                vec![text(document)],
                DataType::Utf8,
            ))
        }),
        "json_pretty" | "jsonb_pretty" => unary(name, args, |document| {
            Ok(json(JsonOp::Pretty, vec![text(document)], DataType::Utf8))
        }),
        "jsonb_set" | "json_set_path" => set(name, args),
        "json_value" => binary(name, args, JsonOp::Value, DataType::Utf8),
        "json_extract_path" | "jsonb_extract_path" => extract_path(name, args, false),
        "json_extract_path_text" | "jsonb_extract_path_text" => extract_path(name, args, true),
        _ => return None,
    };
    Some(bound)
}

/// `j #> path` and `j #>> path`: `json_extract_path` over the path's list of keys.
pub(super) fn path_operator(document: Expr, path: Expr, text_result: bool) -> Result<Expr> {
    let path = path.cast(&list_of(DataType::Utf8));
    let op = JsonOp::ExtractPath { text: text_result };
    Ok(json(op, vec![text(document), path], DataType::Utf8))
}

/// The array a set-returning JSON function unnests (`json_array_elements`, `json_each`,
/// `json_object_keys` and their `jsonb` and `_text` forms); `None` for other names.
pub(super) fn json_set_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let name = name.replacen("jsonb", "json", 1);
    let (op, element) = match name.as_str() {
        "json_array_elements" => (JsonOp::Elements { text: false }, DataType::Utf8),
        "json_array_elements_text" => (JsonOp::Elements { text: true }, DataType::Utf8),
        "json_each" | "json_each_text" => {
            let entry = DataType::Struct(
                vec![
                    Field::new("key", DataType::Utf8, true),
                    Field::new("value", DataType::Utf8, true),
                ]
                .into(),
            );
            let text = name == "json_each_text";
            (JsonOp::Entries { text }, entry)
        }
        "json_object_keys" => (JsonOp::Keys, DataType::Utf8),
        _ => return None,
    };
    Some(unary(&name, args, |document| {
        Ok(json(op, vec![text(document)], list_of(element)))
    }))
}

/// Whether `name` is a set-returning JSON function.
pub(super) fn is_json_set_function(name: &str) -> bool {
    matches!(
        name.replacen("jsonb", "json", 1).as_str(),
        "json_array_elements"
            | "json_array_elements_text"
            | "json_each"
            | "json_each_text"
            | "json_object_keys"
    )
}

/// Whether `name` is a JSON aggregate.
pub(super) fn is_json_aggregate(name: &str) -> bool {
    matches!(
        name,
        "json_agg"
            | "jsonb_agg"
            | "json_group_array"
            | "json_object_agg"
            | "jsonb_object_agg"
            | "json_group_object"
    )
}

/// A JSON aggregate as the list aggregate it gathers its values with, and the function that
/// makes the document of the list: `json_agg(x ORDER BY y) FILTER (...)` is
/// `array_agg(to_json(x) ORDER BY y) FILTER (...)` written as one array, NULL over no rows.
pub(super) fn bind_json_aggregate(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&super::Binder<'_>>,
) -> Result<Expr> {
    let (gathered, style, pairs) = match name {
        "json_agg" => ("to_json", JsonStyle::Jsonb, false),
        "jsonb_agg" => ("to_jsonb", JsonStyle::Jsonb, false),
        "json_group_array" => ("to_json", JsonStyle::Compact, false),
        "json_object_agg" => ("to_json", JsonStyle::PgJsonAgg, true),
        "jsonb_object_agg" => ("to_jsonb", JsonStyle::Jsonb, true),
        _ => ("to_json", JsonStyle::Compact, true),
    };
    let args = function_args(function);
    let value = match (pairs, args.as_slice()) {
        (false, [value]) => format!("{gathered}({value})"),
        (true, [key, value]) => {
            format!("{{'key': ({key})::VARCHAR, 'value': {gathered}({value})}}")
        }
        (false, _) => return Err(bind_err!("{name} takes one value")),
        (true, _) => return Err(bind_err!("{name} takes a key and a value")),
    };
    let value = pondra_parser::parse_expression(&value)?;
    let mut gather = function.clone();
    gather.name = ast::ObjectName::from(vec![ast::Ident::new("array_agg")]);
    if let ast::FunctionArguments::List(list) = &mut gather.args {
        list.args = vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(value))];
    }
    let list = bind_aggregated(&ast::Expr::Function(gather), agg, binder)?;
    let op = match pairs {
        true => JsonOp::ObjectOfEntries(style),
        false => JsonOp::ArrayOfList(style),
    };
    Ok(json(op, vec![list], DataType::Utf8))
}

/// Whether `expr` is JSON already: a cast to JSON, or what a JSON function gives as JSON.
pub(super) fn is_json(expr: &Expr) -> bool {
    let Expr::Function { func, .. } = expr else {
        return false;
    };
    match func {
        ScalarFunction::JsonCheck | ScalarFunction::JsonGet { text: false } => true,
        ScalarFunction::Json(op) => matches!(
            op,
            JsonOp::ToJson(_)
                | JsonOp::Restyle(_)
                | JsonOp::Object(_)
                | JsonOp::Array(_)
                | JsonOp::ArrayOfList(_)
                | JsonOp::ObjectOfEntries(_)
                | JsonOp::ObjectOfTexts
                | JsonOp::MergePatch
                | JsonOp::StripNulls(_)
                | JsonOp::Set
                | JsonOp::Value
                | JsonOp::ExtractPath { text: false }
        ),
        _ => false,
    }
}

/// `value` as JSON text in `style`: itself when it is JSON (written again for `jsonb`), else
/// `to_json(value)`.
fn as_json(value: Expr, style: JsonStyle) -> Expr {
    let cast = matches!(
        &value,
        Expr::Function {
            func: ScalarFunction::JsonCheck,
            ..
        }
    );
    // A value cast to JSON keeps its text; DuckDB writes it compactly, `jsonb` with spaces.
    match (is_json(&value), style) {
        (true, JsonStyle::Jsonb) | (true, JsonStyle::Compact)
            if cast || style == JsonStyle::Jsonb =>
        {
            json(JsonOp::Restyle(style), vec![value], DataType::Utf8)
        }
        (true, _) => value,
        (false, _) => json(JsonOp::ToJson(style), vec![value], DataType::Utf8),
    }
}

fn json(op: JsonOp, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function {
        func: ScalarFunction::Json(op),
        args,
        data_type,
    }
}

fn text(value: Expr) -> Expr {
    value.cast(&DataType::Utf8)
}

fn is_list(value: &Expr) -> bool {
    matches!(value.data_type(), DataType::List(_))
}

fn unary(name: &str, args: &[Expr], bind: impl FnOnce(Expr) -> Result<Expr>) -> Result<Expr> {
    match args {
        [value] => bind(value.clone()),
        _ => Err(bind_err!("{name} takes one argument")),
    }
}

fn binary(name: &str, args: &[Expr], op: JsonOp, data_type: DataType) -> Result<Expr> {
    match args {
        [a, b] => Ok(json(op, vec![text(a.clone()), text(b.clone())], data_type)),
        _ => Err(bind_err!("{name} takes two arguments")),
    }
}

fn with_optional_path(name: &str, args: &[Expr], op: JsonOp, data_type: DataType) -> Result<Expr> {
    match args {
        [_] | [_, _] => Ok(json(
            op,
            args.iter().cloned().map(text).collect(),
            data_type,
        )),
        _ => Err(bind_err!("{name} takes a document and an optional path")),
    }
}

/// `json_object(k, v, ...)` and `json_build_object`: text keys, JSON values.
fn object(name: &str, args: &[Expr], style: JsonStyle) -> Result<Expr> {
    if !args.len().is_multiple_of(2) {
        return Err(bind_err!(
            "{name} takes pairs of a key and a value, not {} arguments",
            args.len()
        ));
    }
    let values = args.iter().enumerate().map(|(i, arg)| match i % 2 {
        0 => text(arg.clone()),
        _ => as_json(arg.clone(), value_style(style)),
    });
    Ok(json(
        JsonOp::Object(style),
        values.collect(),
        DataType::Utf8,
    ))
}

fn array(args: &[Expr], style: JsonStyle) -> Expr {
    let values = args
        .iter()
        .map(|arg| as_json(arg.clone(), value_style(style)));
    json(JsonOp::Array(style), values.collect(), DataType::Utf8)
}

/// The style a builder's values are written in: PostgreSQL's `json` builders keep each value's
/// own (compact) JSON; `jsonb` writes everything with spaces.
fn value_style(style: JsonStyle) -> JsonStyle {
    match style {
        JsonStyle::Jsonb => JsonStyle::Jsonb,
        _ => JsonStyle::Compact,
    }
}

/// PostgreSQL's `json_object(text[])` and `json_object(text[], text[])`.
fn object_of_texts(args: &[Expr]) -> Result<Expr> {
    let texts = args
        .iter()
        .map(|list| list.clone().cast(&list_of(DataType::Utf8)))
        .collect();
    Ok(json(JsonOp::ObjectOfTexts, texts, DataType::Utf8))
}

/// `jsonb_set(target, path, value [, create_missing])`.
fn set(name: &str, args: &[Expr]) -> Result<Expr> {
    let (target, path, value, create) = match args {
        [t, p, v] => (t, p, v, Expr::Literal(ScalarValue::Boolean(true))),
        [t, p, v, c] => (t, p, v, c.clone().cast(&DataType::Boolean)),
        _ => {
            return Err(bind_err!(
                "{name} takes a document, a path, a value and whether to create what is missing"
            ));
        }
    };
    // The new value is `jsonb`: text (a literal such as '9' or '"x"') is read as JSON.
    let value = match value.data_type() {
        DataType::Utf8 => json(
            JsonOp::Restyle(JsonStyle::Jsonb),
            vec![value.clone()],
            DataType::Utf8,
        ),
        _ => as_json(value.clone(), JsonStyle::Jsonb),
    };
    let call = vec![
        text(target.clone()),
        path.clone().cast(&list_of(DataType::Utf8)),
        value,
        create,
    ];
    Ok(json(JsonOp::Set, call, DataType::Utf8))
}

/// `json_extract_path(j, k1, k2, ...)`: the keys as one list.
fn extract_path(name: &str, args: &[Expr], text_result: bool) -> Result<Expr> {
    let Some((document, keys)) = args.split_first() else {
        return Err(bind_err!("{name} takes a document and keys"));
    };
    let keys = match keys {
        [] => return Err(bind_err!("{name} takes a document and keys")),
        [list] if is_list(list) => list.clone().cast(&list_of(DataType::Utf8)),
        keys => super::arrays::make_array(keys.iter().cloned().map(text).collect())?,
    };
    path_operator(document.clone(), keys, text_result)
}
