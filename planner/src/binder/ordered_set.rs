//! Ordered-set aggregates: `median(x)`, `quantile_cont(x, q)`, `quantile_disc(x, q)`,
//! `approx_quantile` and `reservoir_quantile` (exact here), `approx_top_k` (counted exactly), `arg_min(x, y)` / `arg_max` (DuckDB), and
//! `percentile_cont(q) | percentile_disc(q) | mode() WITHIN GROUP (ORDER BY x)` (PostgreSQL)
//! and `mode(x)`, and the picks `first`, `last`, `any_value` (DuckDB). Each is bound as a group's values in order (an `array_agg ... ORDER BY`
//! with a filter) and a scalar function that picks from that sorted array.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::Binder;
use super::expr::*;
use crate::expr::{AggregateCall, AggregateFunction, Expr, ScalarFunction, SortKey};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

/// Whether `name` is an ordered-set aggregate.
pub fn is_ordered_set(name: &str) -> bool {
    matches!(
        name,
        "median"
            | "quantile_cont"
            | "quantile_disc"
            | "quantile"
            | "percentile_cont"
            | "percentile_disc"
            | "mode"
            | "approx_top_k"
            | "approx_quantile"
            | "reservoir_quantile"
            | "first"
            | "last"
            | "any_value"
            | "arbitrary"
            | "bit_and"
            | "bit_or"
            | "bit_xor"
            | "count_if"
            | "countif"
    ) || by_other(name).is_some()
        || super::json_functions::is_json_aggregate(name)
        || super::statistics::is_statistic(name)
        || super::composed_aggregates::is_composed(name)
}

/// `arg_max(x, y)` / `max_by` and `arg_min(x, y)` / `min_by` (DuckDB), and `arg_max_null` /
/// `arg_min_null`, which keep a NULL `x`: whether the name is one, and then whether it takes
/// the greatest `y`.
fn by_other(name: &str) -> Option<bool> {
    match name {
        "arg_max" | "argmax" | "max_by" | "arg_max_null" => Some(true),
        "arg_min" | "argmin" | "min_by" | "arg_min_null" => Some(false),
        _ => None,
    }
}

/// `arg_max(x, y)`: the `x` of a row with the greatest `y` (rows whose `x` or `y` is NULL
/// left out; `arg_max_null` keeps those whose `x` is), as the first of the values ordered by
/// `y`; any of them when `y` ties, as DuckDB.
fn bind_by_other(
    function: &ast::Function,
    greatest: bool,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let name = function_name(function);
    let [value, by] = function_args(function)[..] else {
        return Err(bind_err!("{name} takes a value and what to order it by"));
    };
    if contains_aggregate(value) || contains_aggregate(by) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let mut context = argument_context(&agg.input, binder);
    let value = bind_generic(value, &mut context)?;
    let by = bind_generic(by, &mut context)?;
    let value_type = value.data_type();
    let ordered = AggregateCall {
        func: AggregateFunction::ArrayAgg,
        arg: Some(value.clone()),
        data_type: AggregateFunction::ArrayAgg.result_type(Some(&value_type)),
        separator: None,
        order: vec![SortKey {
            expr: by.clone(),
            descending: greatest,
            nulls_first: false,
        }],
        filter: Some(match name.ends_with("_null") {
            true => Expr::IsNotNull(Box::new(by)),
            false => binary(
                Expr::IsNotNull(Box::new(by)),
                &sqlparser::ast::BinaryOperator::And,
                Expr::IsNotNull(Box::new(value)),
            )?,
        }),
    };
    let ordered = agg.column_of(ordered);
    Ok(Expr::Function {
        func: ScalarFunction::ArrayElement,
        args: vec![ordered, Expr::Literal(ScalarValue::Int64(1))],
        data_type: value_type,
    })
}

/// The one argument of an aggregate call, bound over the aggregation's input.
fn single_argument(
    function: &ast::Function,
    name: &str,
    context: &mut Context<'_>,
) -> Result<Expr> {
    let [value] = function_args(function)[..] else {
        return Err(bind_err!("{name} takes one argument"));
    };
    if contains_aggregate(value) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    bind_generic(value, context)
}

/// `first(x [ORDER BY k])` / `arbitrary`, `last(x [ORDER BY k])` (DuckDB): the value of the
/// group's first or last row, NULL included, in the order given (input order without one);
/// `any_value(x)`: its first non-NULL value. Bound as the group's values in order and a pick.
fn bind_pick(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let mut context = argument_context(&agg.input, binder);
    let value = single_argument(function, name, &mut context)?;
    let mut order = Vec::new();
    if let ast::FunctionArguments::List(list) = &function.args {
        for clause in &list.clauses {
            let ast::FunctionArgumentClause::OrderBy(items) = clause else {
                return Err(unsupported!("{clause} inside {name}(...)"));
            };
            for item in items {
                let (descending, nulls_first) = super::order_by::sort_options(item)?;
                let expr = bind_generic(&item.expr, &mut context)?;
                order.push(SortKey {
                    expr,
                    descending,
                    nulls_first,
                });
            }
        }
    }
    let mut filter = match &function.filter {
        Some(condition) => Some(bind_generic(condition, &mut context)?),
        None => None,
    };
    if name == "any_value" {
        let not_null = Expr::IsNotNull(Box::new(value.clone()));
        filter = Some(match filter {
            Some(condition) => Expr::Binary {
                op: crate::expr::BinaryOp::And,
                left: Box::new(condition),
                right: Box::new(not_null),
            },
            None => not_null,
        });
    }
    let value_type = value.data_type();
    let values = agg.column_of(AggregateCall {
        func: AggregateFunction::ArrayAgg,
        arg: Some(value),
        data_type: AggregateFunction::ArrayAgg.result_type(Some(&value_type)),
        separator: None,
        order,
        filter,
    });
    let position = match name {
        "last" => Expr::Function {
            func: ScalarFunction::Cardinality,
            args: vec![values.clone()],
            data_type: DataType::Int64,
        },
        _ => Expr::Literal(ScalarValue::Int64(1)),
    };
    Ok(Expr::Function {
        func: ScalarFunction::ArrayElement,
        args: vec![values, position],
        data_type: value_type,
    })
}

/// `bit_and`, `bit_or`, `bit_xor`: the bitwise operation they fold by.
pub(super) fn bit_fold(name: &str) -> Option<crate::expr::BitwiseOp> {
    use crate::expr::BitwiseOp;
    match name {
        "bit_and" => Some(BitwiseOp::And),
        "bit_or" => Some(BitwiseOp::Or),
        "bit_xor" => Some(BitwiseOp::Xor),
        _ => None,
    }
}

/// `bit_and(x)` and the like over integers: the group's non-NULL values folded; NULL over
/// none.
fn bind_bit_fold(
    function: &ast::Function,
    name: &str,
    op: crate::expr::BitwiseOp,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let mut context = argument_context(&agg.input, binder);
    let value = single_argument(function, name, &mut context)?;
    // An untyped NULL is an integer that is never there.
    let value = match value.data_type() {
        DataType::Null => value.cast(&DataType::Int32),
        _ => value,
    };
    let value_type = value.data_type();
    if !matches!(
        value_type,
        DataType::Int32 | DataType::Int64 | DataType::Int16 | DataType::Int8
    ) {
        return Err(bind_err!(
            "{name}({}) is not defined: it folds integers",
            super::expr::type_name(&value_type)
        ));
    }
    let mut filter = Expr::IsNotNull(Box::new(value.clone()));
    if let Some(condition) = &function.filter {
        let condition = bind_generic(condition, &mut context)?;
        filter = Expr::Binary {
            op: crate::expr::BinaryOp::And,
            left: Box::new(condition),
            right: Box::new(filter),
        };
    }
    let values = agg.column_of(AggregateCall {
        func: AggregateFunction::ArrayAgg,
        arg: Some(value),
        data_type: AggregateFunction::ArrayAgg.result_type(Some(&value_type)),
        separator: None,
        order: Vec::new(),
        filter: Some(filter),
    });
    Ok(Expr::Function {
        func: ScalarFunction::BitFold(op),
        args: vec![values],
        data_type: value_type,
    })
}

/// `count_if(p)` (DuckDB): how many of the group's rows `p` holds for, as
/// `count(CASE WHEN p THEN 1 END)` (0 over no rows).
fn bind_count_if(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let [predicate] = function_args(function)[..] else {
        return Err(bind_err!("{name} takes one condition"));
    };
    let mut count = function.clone();
    count.name = ast::ObjectName::from(vec![ast::Ident::new("count")]);
    let when = ast::Expr::Case {
        case_token: ast::helpers::attached_token::AttachedToken::empty(),
        end_token: ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![ast::CaseWhen {
            condition: predicate.clone(),
            result: ast::Expr::value(ast::Value::Number("1".into(), false)),
        }],
        else_result: None,
    };
    if let ast::FunctionArguments::List(list) = &mut count.args {
        list.args = vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(when))];
    }
    bind_aggregated(&ast::Expr::Function(count), agg, binder)
}

pub(super) fn bind_ordered_set(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    refuse_named_arguments(function)?;
    if matches!(name, "count_if" | "countif") {
        return bind_count_if(function, name, agg, binder);
    }
    if name == "approx_top_k" {
        return bind_top_k(function, agg, binder);
    }
    if super::json_functions::is_json_aggregate(name) {
        return super::json_functions::bind_json_aggregate(function, name, agg, binder);
    }
    let distinct = matches!(
        &function.args,
        ast::FunctionArguments::List(list)
            if list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)
    );
    // These pick or fold alike without DISTINCT, and the quantiles take it below; for the
    // others it would change the answer.
    let distinct_handled = matches!(
        name,
        "first"
            | "last"
            | "any_value"
            | "arbitrary"
            | "bit_and"
            | "bit_or"
            | "median"
            | "quantile_cont"
            | "quantile_disc"
            | "quantile"
            | "approx_quantile"
    ) || by_other(name).is_some();
    if distinct && !distinct_handled {
        return Err(unsupported!("DISTINCT in {name}"));
    }
    if let Some(greatest) = by_other(name) {
        return bind_by_other(function, greatest, agg, binder);
    }
    if matches!(name, "first" | "last" | "any_value" | "arbitrary") {
        return bind_pick(function, name, agg, binder);
    }
    if let Some(op) = bit_fold(name) {
        return bind_bit_fold(function, name, op, agg, binder);
    }
    if super::statistics::is_statistic(name) {
        return super::statistics::bind_statistic(function, name, agg, binder);
    }
    if super::composed_aggregates::is_composed(name) {
        return super::composed_aggregates::bind_composed(function, name, agg, binder);
    }
    let args = function_args(function);
    let within = !function.within_group.is_empty();
    let (value, descending, fraction) = match (name, within, args.as_slice()) {
        ("percentile_cont" | "percentile_disc", true, [q]) => {
            let (value, descending) = ordered_value(function)?;
            (value, descending, Some(*q))
        }
        ("mode", true, []) => {
            let (value, descending) = ordered_value(function)?;
            (value, descending, None)
        }
        ("mode", false, [value]) if argument_order(function) => {
            return bind_mode_in_order(function, value, agg, binder);
        }
        ("median" | "mode", false, [x]) => (*x, false, None),
        ("quantile_cont" | "quantile_disc" | "quantile" | "approx_quantile", false, [x, q]) => {
            (*x, false, Some(*q))
        }
        // DuckDB's quantile of a sample of the given size: the sample is every value here.
        ("reservoir_quantile", false, [x, q]) => (*x, false, Some(*q)),
        ("reservoir_quantile", false, [x, q, size]) => match size.to_string().parse::<i64>() {
            Ok(size) if size > 0 => (*x, false, Some(*q)),
            _ => {
                return Err(bind_err!(
                    "reservoir_quantile's sample size must be a positive constant, not {size}"
                ));
            }
        },
        _ => return Err(bind_err!("{name}: wrong arguments (see its documentation)")),
    };
    if contains_aggregate(value) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let input = &agg.input;
    let written = value;
    let value = bind_generic(value, &mut argument_context(input, binder))?;
    // `FILTER (WHERE p)`: the values of the rows `p` holds for.
    let condition = match function.filter.as_deref() {
        Some(condition) if contains_aggregate(condition) => {
            return Err(bind_err!("aggregate functions are not allowed in FILTER"));
        }
        Some(condition) => Some(bind_generic(
            condition,
            &mut argument_context(input, binder),
        )?),
        None => None,
    };
    refuse_outer_only(&value, written)?;
    // An untyped NULL (`median(NULL)`) is a number that is never there.
    let value = match value.data_type() {
        DataType::Null => value.cast(&DataType::Int32),
        _ => value,
    };
    // A median interpolates numbers and times, and is of anything else the lower middle value,
    // as DuckDB's.
    let continuous = match name {
        "median" => is_numeric(&value.data_type()) || temporal_back(&value.data_type()).is_some(),
        _ => matches!(name, "quantile_cont" | "percentile_cont"),
    };
    // Times are interpolated as their microseconds, and made times again after.
    let back = temporal_back(&value.data_type()).filter(|_| continuous);
    let value = match &back {
        Some(_) => micros_of(value),
        None => value,
    };
    let value_type = value.data_type();
    if continuous && !is_numeric(&value_type) {
        return Err(bind_err!(
            "{name}({}) is not defined: it interpolates numbers",
            super::expr::type_name(&value_type)
        ));
    }
    // `quantile_cont(x, [0.25, 0.75])`: a list of the quantiles, one per fraction.
    let fractions = match fraction {
        Some(ast::Expr::Array(list)) if name != "median" => Some(
            list.elem
                .iter()
                .map(|q| constant_fraction(q, name))
                .collect::<Result<Vec<f64>>>()?,
        ),
        _ => None,
    };
    let fraction = match (name, fraction, &fractions) {
        ("median", ..) => 0.5,
        (_, _, Some(_)) => 0.0,
        (_, Some(q), None) => constant_fraction(q, name)?,
        (_, None, None) => 0.0,
    };
    let mut call = sorted_values(value, descending);
    if let Some(condition) = condition {
        call.filter = Some(Expr::Binary {
            op: crate::expr::BinaryOp::And,
            left: Box::new(condition),
            right: Box::new(call.filter.take().expect("values are filtered")),
        });
    }
    let mut sorted = agg.column_of(call);
    if distinct {
        // Each value once: the sorted values' runs of equal ones, kept once.
        let data_type = sorted.data_type();
        sorted = Expr::Function {
            func: ScalarFunction::DistinctRuns,
            args: vec![sorted],
            data_type,
        };
    }
    let (func, data_type) = match name {
        "mode" => (ScalarFunction::SortedMode, value_type),
        _ if continuous => (
            ScalarFunction::SortedQuantile { continuous },
            DataType::Float64,
        ),
        _ => (ScalarFunction::SortedQuantile { continuous }, value_type),
    };
    let quantile = |fraction: f64| {
        let pick = Expr::Function {
            func,
            args: vec![
                sorted.clone(),
                Expr::Literal(ScalarValue::Float64(fraction)),
            ],
            data_type: data_type.clone(),
        };
        match &back {
            Some(back) => pick.cast(&DataType::Int64).cast(back),
            None => pick,
        }
    };
    Ok(match fractions {
        None => quantile(fraction),
        Some(fractions) => {
            // No values, no list, as in DuckDB; no fractions, an empty list.
            let list = match fractions.is_empty() {
                true => {
                    let item = back.clone().unwrap_or_else(|| data_type.clone());
                    Expr::Literal(ScalarValue::Utf8("{}".into())).cast(&crate::types::list_of(item))
                }
                false => super::arrays::make_array(fractions.into_iter().map(quantile).collect())?,
            };
            let list_type = list.data_type();
            Expr::Case {
                branches: vec![(
                    Expr::IsNull(Box::new(sorted)),
                    Expr::Literal(ScalarValue::Null).cast(&list_type),
                )],
                otherwise: Some(Box::new(list)),
                data_type: list_type,
            }
        }
    })
}

/// The type an interpolated time of type `data_type` is given back as (a date's is a
/// TIMESTAMP, as in DuckDB); `None` for any other type.
pub(super) fn temporal_back(data_type: &DataType) -> Option<DataType> {
    use arrow::datatypes::TimeUnit::Microsecond;
    match data_type {
        DataType::Date32 => Some(DataType::Timestamp(Microsecond, None)),
        DataType::Timestamp(Microsecond, _) | DataType::Time64(Microsecond) => {
            Some(data_type.clone())
        }
        _ => None,
    }
}

/// A time as its microseconds (since the epoch, or midnight), a DOUBLE to interpolate.
pub(super) fn micros_of(value: Expr) -> Expr {
    let value = match value.data_type() {
        DataType::Date32 => value.cast(&DataType::Timestamp(
            arrow::datatypes::TimeUnit::Microsecond,
            None,
        )),
        _ => value,
    };
    value.cast(&DataType::Int64).cast(&DataType::Float64)
}

/// `quantile_cont(x, q)`, `quantile_disc(x, q)` and `quantile(x, q)` of a list of a frame's
/// values (a window's `array_agg(x)`), with a constant fraction `q`.
pub(super) fn list_quantile(name: &str, list: Expr, fraction: &ast::Expr) -> Result<Expr> {
    let DataType::List(item) = list.data_type() else {
        return Err(bind_err!("{name} over a window needs its values as a list"));
    };
    let item = item.data_type().clone();
    let continuous = name == "quantile_cont";
    if continuous && !is_numeric(&item) {
        return Err(bind_err!(
            "{name}({}) is not defined: it interpolates numbers",
            super::expr::type_name(&item)
        ));
    }
    let fraction = constant_fraction(fraction, name)?;
    let sorted = Expr::Function {
        func: ScalarFunction::List(crate::expr::ListOp::Sort {
            descending: false,
            nulls_first: false,
        }),
        args: vec![super::composed_aggregates::present_elements(&list, &item)],
        data_type: list.data_type(),
    };
    Ok(Expr::Function {
        func: ScalarFunction::SortedQuantile { continuous },
        args: vec![sorted, Expr::Literal(ScalarValue::Float64(fraction))],
        data_type: if continuous { DataType::Float64 } else { item },
    })
}

/// A group's non-NULL values of `value`, sorted, as an array (NULL over no rows).
pub(super) fn sorted_values(value: Expr, descending: bool) -> AggregateCall {
    let data_type = value.data_type();
    AggregateCall {
        func: AggregateFunction::ArrayAgg,
        arg: Some(value.clone()),
        data_type: AggregateFunction::ArrayAgg.result_type(Some(&data_type)),
        separator: None,
        order: vec![SortKey {
            expr: value.clone(),
            descending,
            nulls_first: false,
        }],
        filter: Some(Expr::IsNotNull(Box::new(value))),
    }
}

/// `mode(x ORDER BY y)` (DuckDB): the most frequent value, of equally frequent ones the first
/// in that order: a pick from the group's values gathered in order.
fn bind_mode_in_order(
    function: &ast::Function,
    value: &ast::Expr,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let present = ast::Expr::IsNotNull(Box::new(value.clone()));
    let mut gather = function.clone();
    gather.name = ast::ObjectName::from(vec![ast::Ident::new("array_agg")]);
    gather.filter = Some(Box::new(match function.filter.as_deref() {
        Some(filter) => ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::Nested(Box::new(filter.clone()))),
            op: ast::BinaryOperator::And,
            right: Box::new(present),
        },
        None => present,
    }));
    let call =
        super::expr::bind_aggregate_call(&gather, AggregateFunction::ArrayAgg, &agg.input, binder)?;
    let list = agg.column_of(call);
    let DataType::List(item) = list.data_type() else {
        unreachable!("array_agg gives a list")
    };
    Ok(Expr::Function {
        func: ScalarFunction::ModeInOrder,
        args: vec![list],
        data_type: item.data_type().clone(),
    })
}

/// Whether a call orders its rows inside its parentheses (`f(x ORDER BY y)`).
fn argument_order(function: &ast::Function) -> bool {
    matches!(
        &function.args,
        ast::FunctionArguments::List(list)
            if list.clauses.iter().any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)))
    )
}

/// `f(x, ...) FILTER (WHERE p)` as `f(CASE WHEN p THEN x END, ...)`, for an aggregate that
/// passes over NULL values: the arguments at `positions` are NULL where `p` does not hold.
/// The call as it is without a FILTER.
pub(super) fn filter_as_nulls(function: &ast::Function, positions: &[usize]) -> ast::Function {
    let Some(condition) = function.filter.as_deref() else {
        return function.clone();
    };
    let mut unfiltered = function.clone();
    unfiltered.filter = None;
    if let ast::FunctionArguments::List(list) = &mut unfiltered.args {
        for &position in positions {
            let Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))) =
                list.args.get_mut(position)
            else {
                continue;
            };
            *arg = ast::Expr::Case {
                case_token: ast::helpers::attached_token::AttachedToken::empty(),
                end_token: ast::helpers::attached_token::AttachedToken::empty(),
                operand: None,
                conditions: vec![ast::CaseWhen {
                    condition: condition.clone(),
                    result: arg.clone(),
                }],
                else_result: None,
            };
        }
    }
    unfiltered
}

/// The value and direction of `WITHIN GROUP (ORDER BY x [DESC])`.
fn ordered_value(function: &ast::Function) -> Result<(&ast::Expr, bool)> {
    match function.within_group.as_slice() {
        [item] => {
            let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            Ok((&item.expr, descending))
        }
        _ => Err(bind_err!("WITHIN GROUP takes one ORDER BY expression")),
    }
}

/// A quantile's fraction: a constant from 0 to 1.
/// `approx_top_k(x, k)` (DuckDB): the `k` most frequent values of `x`, counted exactly; `k` a
/// constant from 1 to 999,999, as DuckDB takes it.
fn bind_top_k(
    function: &ast::Function,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let [value, k] = function_args(function)[..] else {
        return Err(bind_err!("approx_top_k takes a value and a count k"));
    };
    let k = match k.to_string().parse::<i64>() {
        Ok(k) if k <= 0 => return Err(bind_err!("approx_top_k: k value must be > 0")),
        Ok(k) if k >= 1_000_000 => {
            return Err(bind_err!("approx_top_k: k value must be < 1000000"));
        }
        Ok(k) => k,
        Err(_) if k.to_string().eq_ignore_ascii_case("NULL") => {
            return Err(bind_err!("approx_top_k: k value must not be NULL"));
        }
        Err(_) => {
            return Err(unsupported!(
                "approx_top_k with a k other than a constant ({k})"
            ));
        }
    };
    let written = value;
    let value = bind_generic(value, &mut argument_context(&agg.input, binder))?;
    refuse_outer_only(&value, written)?;
    let data_type = crate::types::list_of(value.data_type());
    let mut call = sorted_values(value, false);
    if let Some(condition) = function.filter.as_deref() {
        let condition = bind_generic(condition, &mut argument_context(&agg.input, binder))?;
        call.filter = Some(Expr::Binary {
            op: crate::expr::BinaryOp::And,
            left: Box::new(condition),
            right: Box::new(call.filter.take().expect("values are filtered")),
        });
    }
    let sorted = agg.column_of(call);
    Ok(Expr::Function {
        func: ScalarFunction::SortedTopK,
        args: vec![sorted, Expr::Literal(ScalarValue::Int64(k))],
        data_type,
    })
}

fn constant_fraction(expr: &ast::Expr, name: &str) -> Result<f64> {
    let text = expr.to_string();
    match text.parse::<f64>() {
        Ok(q) if (0.0..=1.0).contains(&q) => Ok(q),
        Ok(q) => Err(bind_err!("{name}: the fraction {q} is not between 0 and 1")),
        Err(_) => Err(unsupported!(
            "{name} with a fraction other than a constant ({text})"
        )),
    }
}
