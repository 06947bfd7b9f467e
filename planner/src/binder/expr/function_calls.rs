//! The parts of a function call the binder reads: its name, its plain arguments, integer
//! positions, and the date part a field names.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::type_name;
use crate::binder::scope::normalize;
use crate::expr::{DatePart, Expr};
use crate::{Result, bind_err, unsupported};

pub(crate) fn function_name(function: &ast::Function) -> String {
    function
        .name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(normalize)
        .unwrap_or_default()
}

pub(crate) fn function_args(function: &ast::Function) -> Vec<&ast::Expr> {
    match &function.args {
        ast::FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The plain positional arguments of a call (`*` is returned as a wildcard expression).
/// An error for a call with a named argument (`f(x := 1)`), which no function takes yet and
/// [`function_args`] would otherwise leave out.
pub(crate) fn refuse_named_arguments(function: &ast::Function) -> Result<()> {
    if let ast::FunctionArguments::List(list) = &function.args
        && let Some(named) = list.args.iter().find(|a| {
            matches!(
                a,
                ast::FunctionArg::Named { .. } | ast::FunctionArg::ExprNamed { .. }
            )
        })
    {
        return Err(unsupported!("the named argument {named}"));
    }
    Ok(())
}

pub(crate) fn integer_arg(expr: Expr, function: &str) -> Result<Expr> {
    match expr.data_type() {
        DataType::Int32 | DataType::Int64 | DataType::Null => Ok(expr.cast(&DataType::Int64)),
        other => Err(bind_err!(
            "{function} needs integer positions, not {}",
            type_name(&other)
        )),
    }
}

pub(crate) fn date_part(field: &ast::DateTimeField) -> Result<DatePart> {
    use ast::DateTimeField as F;
    Ok(match field {
        F::Year | F::Years => DatePart::Year,
        F::Quarter => DatePart::Quarter,
        F::Month | F::Months => DatePart::Month,
        F::Week(_) | F::Weeks => DatePart::Week,
        F::Day | F::Days => DatePart::Day,
        F::DayOfWeek | F::Dow => DatePart::DayOfWeek,
        F::DayOfYear | F::Doy => DatePart::DayOfYear,
        F::Hour | F::Hours => DatePart::Hour,
        F::Minute | F::Minutes => DatePart::Minute,
        F::Second | F::Seconds => DatePart::Second,
        F::Millisecond | F::Milliseconds => DatePart::Millisecond,
        F::Microsecond | F::Microseconds => DatePart::Microsecond,
        F::Isodow => DatePart::IsoDayOfWeek,
        F::Isoyear => DatePart::IsoYear,
        F::Decade => DatePart::Decade,
        F::Century => DatePart::Century,
        F::Millennium => DatePart::Millennium,
        // `EXTRACT('part' FROM x)` and parts sqlparser does not name.
        F::Custom(name) => crate::binder::functions::part_by_name(&name.value)?,
        other => return Err(unsupported!("EXTRACT({other})")),
    })
}
