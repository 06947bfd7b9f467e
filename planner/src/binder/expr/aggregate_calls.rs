//! One aggregate call bound: DISTINCT, ORDER BY inside the call, `string_agg`'s separator, the
//! argument's type, and FILTER.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::aggregates::contains_aggregate;
use super::comparisons::boolean;
use super::function_calls::refuse_named_arguments;
use super::{Context, bind_generic, type_name};
use crate::binder::Binder;
use crate::binder::scope::Scope;
use crate::expr::{AggregateCall, AggregateFunction, Expr, SortKey};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

pub(crate) fn bind_aggregate_call(
    function: &ast::Function,
    func: AggregateFunction,
    input: &Scope,
    binder: Option<&Binder<'_>>,
) -> Result<AggregateCall> {
    let name = func.name();
    refuse_named_arguments(function)?;
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(bind_err!("{name} needs an argument"));
    };
    let distinct = list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct);
    let func = match (func, distinct) {
        (_, false) => func,
        (AggregateFunction::Count, true) => AggregateFunction::CountDistinct,
        (AggregateFunction::Sum, true) => AggregateFunction::SumDistinct,
        (AggregateFunction::Avg, true) => AggregateFunction::AvgDistinct,
        (AggregateFunction::StringAgg, true) => AggregateFunction::StringAggDistinct,
        // min and max ignore duplicates anyway.
        (AggregateFunction::Min | AggregateFunction::Max, true) => func,
        (_, true) => return Err(unsupported!("{name}(DISTINCT ...)")),
    };

    if function.over.is_some() {
        return Err(unsupported!("window functions"));
    }
    let mut order = Vec::new();
    for clause in &list.clauses {
        let ast::FunctionArgumentClause::OrderBy(items) = clause else {
            return Err(unsupported!("{clause} inside {name}(...)"));
        };
        for item in items {
            let (descending, nulls_first) = crate::binder::order_by::sort_options(item)?;
            let mut ctx = Context::plain_for(&item.expr, input, "ORDER BY", binder);
            let expr = bind_generic(&item.expr, &mut ctx)?;
            order.push(SortKey {
                expr,
                descending,
                nulls_first,
            });
        }
    }
    // Only these depend on the order of their input; for any other the ORDER BY is moot.
    if !matches!(
        func,
        AggregateFunction::StringAgg
            | AggregateFunction::StringAggDistinct
            | AggregateFunction::ArrayAgg
    ) {
        order.clear();
    }
    let mut args = list.args.as_slice();
    let mut separator = None;
    let mut null_separator = false;
    if matches!(
        func,
        AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct
    ) {
        separator = Some(match args {
            // Without a separator, a comma (DuckDB; Postgres asks for one).
            [_] => ",".to_string(),
            [
                _,
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))),
            ] => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                // A NULL separator makes the result NULL, as in DuckDB: no value is kept.
                ast::Value::Null => {
                    null_separator = true;
                    String::new()
                }
                other => {
                    return Err(bind_err!(
                        "{name}'s separator must be a string, not {other}"
                    ));
                }
            },
            [_, other] => {
                return Err(unsupported!(
                    "{name} with a separator other than a constant string ({other})"
                ));
            }
            _ => return Err(bind_err!("{name} takes a value and a separator")),
        });
        args = &args[..1];
    }
    if args.is_empty() && func == AggregateFunction::Count {
        // `count()` (DuckDB) counts rows, as `count(*)` does.
        let call = AggregateCall::new(AggregateFunction::CountStar, None);
        return with_filter(call, function.filter.as_deref(), input, binder);
    }
    if args.len() != 1 {
        return Err(bind_err!("{name} takes one argument, got {}", args.len()));
    }
    let arg_expr = match &args[0] {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)
            if func == AggregateFunction::Count =>
        {
            let call = AggregateCall::new(AggregateFunction::CountStar, None);
            return with_filter(call, function.filter.as_deref(), input, binder);
        }
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => e,
        other => return Err(bind_err!("{name}: unexpected argument {other}")),
    };
    if contains_aggregate(arg_expr) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let mut arg = bind_generic(arg_expr, &mut argument_context(input, binder))?;
    refuse_outer_only(&arg, arg_expr)?;
    if null_separator {
        arg = Expr::Literal(ScalarValue::Null);
    }
    if distinct && order.iter().any(|key| key.expr != arg) {
        return Err(bind_err!(
            "in a DISTINCT aggregate, ORDER BY expressions must appear in the argument list"
        ));
    }
    let arg_type = arg.data_type();
    match func {
        AggregateFunction::Sum
        | AggregateFunction::Avg
        | AggregateFunction::SumDistinct
        | AggregateFunction::AvgDistinct
        | AggregateFunction::StddevSamp
        | AggregateFunction::StddevPop
        | AggregateFunction::VarSamp
        | AggregateFunction::VarPop
        | AggregateFunction::Product
        | AggregateFunction::KahanSum
            if !is_numeric(&arg_type) =>
        {
            if arg_type == DataType::Null {
                arg = arg.cast(&DataType::Int64);
            } else {
                return Err(bind_err!(
                    "{name}({}) is not defined: the argument must be a number",
                    type_name(&arg_type)
                ));
            }
        }
        AggregateFunction::Min | AggregateFunction::Max if arg_type == DataType::Null => {
            arg = arg.cast(&DataType::Int64);
        }
        AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct => {
            arg = arg.cast(&DataType::Utf8);
        }
        _ => {}
    }
    if matches!(
        func,
        AggregateFunction::Product | AggregateFunction::KahanSum
    ) {
        arg = arg.cast(&DataType::Float64);
    }
    let data_type = func.result_type(Some(&arg.data_type()));
    let call = AggregateCall {
        func,
        arg: Some(arg),
        data_type,
        separator,
        order,
        filter: None,
    };
    with_filter(call, function.filter.as_deref(), input, binder)
}

/// `agg(x) FILTER (WHERE c)` is `agg(CASE WHEN c THEN x END)`; `count(*)` counts `CASE WHEN c
/// THEN 1 END`.
pub(super) fn with_filter(
    call: AggregateCall,
    filter: Option<&ast::Expr>,
    input: &Scope,
    binder: Option<&Binder<'_>>,
) -> Result<AggregateCall> {
    let Some(filter) = filter else {
        return Ok(call);
    };
    if contains_aggregate(filter) {
        return Err(bind_err!("aggregate functions are not allowed in FILTER"));
    }
    let condition = boolean(
        bind_generic(
            filter,
            &mut Context::plain_for(filter, input, "FILTER", binder),
        )?,
        "FILTER",
    )?;
    if call.func == AggregateFunction::ArrayAgg {
        return Ok(AggregateCall {
            filter: Some(condition),
            ..call
        });
    }
    let (func, value) = match call.arg {
        Some(arg) => (call.func, arg),
        None => (
            AggregateFunction::Count,
            Expr::Literal(ScalarValue::Int32(1)),
        ),
    };
    let data_type = value.data_type();
    Ok(AggregateCall {
        func,
        arg: Some(Expr::Case {
            branches: vec![(condition, value)],
            otherwise: None,
            data_type,
        }),
        data_type: call.data_type,
        separator: call.separator,
        order: call.order,
        filter: call.filter,
    })
}

/// The context an aggregate's arguments are bound in: the aggregation's input, and the row
/// of an enclosing query (`sum(x + outer.y)`).
pub(crate) fn argument_context<'a>(
    input: &'a Scope,
    binder: Option<&'a Binder<'a>>,
) -> Context<'a> {
    // An uncorrelated subquery is one value computed before the query runs; a correlated one
    // (or EXISTS / IN) would need a join below the aggregation, and is refused by the clause.
    Context::Plain {
        scope: input,
        clause: "aggregate arguments",
        binder,
    }
}

/// An aggregate argument that reads an enclosing query's columns only belongs, by the
/// standard, to that query, which it would make an aggregation: refused.
pub(crate) fn refuse_outer_only(arg: &Expr, written: &ast::Expr) -> Result<()> {
    if arg.has_any_outer() && arg.column_indices().is_empty() {
        return Err(unsupported!(
            "an aggregate over only an enclosing query's columns ({written})"
        ));
    }
    Ok(())
}
