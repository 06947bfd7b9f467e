//! PostgreSQL's formatting functions: `to_char` of a timestamp, date or number by a template,
//! and `to_date` / `to_timestamp` reading text by one (the executor's `pg_format`).

use arrow::datatypes::{DataType, TimeUnit};

use super::expr::{Context, type_name};
use crate::expr::{Expr, ScalarFunction, TextOp};
use crate::types::is_numeric;
use crate::{Result, bind_err};

/// The bound call, or `None` when `name` is none of these functions.
pub(super) fn pg_format_function(
    name: &str,
    args: &[Expr],
    ctx: &Context<'_>,
) -> Option<Result<Expr>> {
    if !matches!(name, "to_char" | "to_date" | "to_timestamp") || args.len() != 2 {
        return None;
    }
    Some(bind(name, args, ctx))
}

fn bind(name: &str, args: &[Expr], ctx: &Context<'_>) -> Result<Expr> {
    let [value, template] = args else {
        unreachable!("two arguments")
    };
    if !matches!(template.data_type(), DataType::Utf8 | DataType::Null) {
        return Err(bind_err!(
            "{name}'s template must be text, not {}",
            type_name(&template.data_type())
        ));
    }
    let template = template.clone().cast(&DataType::Utf8);
    let wall_time = DataType::Timestamp(TimeUnit::Microsecond, None);
    let value_type = value.data_type();
    let (op, value, data_type) = match name {
        "to_char" => match value_type {
            DataType::Timestamp(..) | DataType::Date32 => (
                TextOp::ToCharTime,
                value.clone().cast(&wall_time),
                DataType::Utf8,
            ),
            t if is_numeric(&t) || t == DataType::Null => (
                TextOp::ToCharNumber,
                value.clone().cast(&DataType::Float64),
                DataType::Utf8,
            ),
            other => {
                return Err(bind_err!(
                    "function to_char({}, text) does not exist",
                    type_name(&other)
                ));
            }
        },
        _ if !matches!(value_type, DataType::Utf8 | DataType::Null) => {
            return Err(bind_err!(
                "function {name}({}, text) does not exist",
                type_name(&value_type)
            ));
        }
        "to_date" => (
            TextOp::ToDate,
            value.clone().cast(&DataType::Utf8),
            DataType::Date32,
        ),
        _ => (
            TextOp::ToTimestamp,
            value.clone().cast(&DataType::Utf8),
            wall_time.clone(),
        ),
    };
    let call = Expr::Function {
        func: ScalarFunction::Text(op),
        args: vec![value, template],
        data_type,
    };
    // PostgreSQL's to_timestamp gives an instant: the wall time read in the session's zone.
    Ok(match (op, ctx.binder()) {
        (TextOp::ToTimestamp, Some(binder)) => call.cast(&binder.instant_type()),
        _ => call,
    })
}
