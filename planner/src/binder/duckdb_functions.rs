//! DuckDB's names for what analysts call: `if` / `iif`, `ifnull`, `mod`, `year(d)` and the other
//! part functions, `trunc`, `date_add`, `time_bucket`, `len`, `list_value`, and the list aggregates
//! (`list_aggr(l, 'sum')`, `list_sum(l)`). Each is bound to the expression the engine already
//! evaluates, or to a function of its own where there is none.

use arrow::datatypes::DataType;
use sqlparser::ast::BinaryOperator;

use super::expr::*;
use super::functions::{expect_arity, part_by_name};
use crate::expr::{AggregateFunction, Expr, ListOp, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::{is_numeric, list_of};
use crate::{Result, bind_err};

/// The bound call, or `None` when `name` is none of DuckDB's functions this module knows.
pub(super) fn duckdb_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let part = match name {
        "year" | "month" | "day" | "hour" | "minute" | "second" | "quarter" | "week"
        | "dayofmonth" | "dayofweek" | "dayofyear" | "weekofyear" | "weekday" | "isodow"
        | "isoyear" | "decade" | "century" | "millennium" | "millisecond" | "microsecond" => {
            Some(name)
        }
        _ => None,
    };
    if let Some(part) = part {
        return Some(part_function(part, args));
    }
    if let Some(aggregate) = name
        .strip_prefix("list_")
        .or_else(|| name.strip_prefix("array_"))
        .filter(|aggregate| {
            list_aggregate(aggregate).is_some()
                || super::composed_aggregates::is_list_composed(aggregate)
                || matches!(
                    *aggregate,
                    "first" | "last" | "arbitrary" | "any_value" | "bit_and" | "bit_or" | "bit_xor"
                )
        })
    {
        return Some(bind_list_aggregate(name, aggregate, args, None));
    }
    let bound = match name {
        "if" | "iif" => if_function(name, args),
        "ifnull" | "nvl" => expect_arity(name, args, 2).and_then(|()| coalesce(args.to_vec())),
        "mod" => expect_arity(name, args, 2)
            .and_then(|()| binary(args[0].clone(), &BinaryOperator::Modulo, args[1].clone())),
        "trunc" => trunc(args),
        "roundbankers" => expect_arity(name, args, 2)
            .and_then(|()| to_digits(name, ScalarFunction::RoundBankers, &args[0], &args[1])),
        "time_bucket" => time_bucket(args),
        // `date_add(d, INTERVAL ...)`: `d + INTERVAL ...`, as a TIMESTAMP.
        "date_add" => expect_arity(name, args, 2).and_then(|()| {
            if !matches!(args[1].data_type(), DataType::Interval(_)) {
                return Err(bind_err!(
                    "date_add adds an interval, not {}",
                    type_name(&args[1].data_type())
                ));
            }
            // A TIMESTAMP, as in both anchors, a date included.
            let stamp = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
            let start = match args[0].data_type() {
                DataType::Date32 => args[0].clone().cast(&stamp),
                _ => args[0].clone(),
            };
            binary(start, &BinaryOperator::Plus, args[1].clone())
        }),
        "len" => length(args),
        "list_value" | "list_pack" => make_list(args),
        "list_concat" | "list_cat" | "array_concat" | "array_cat" => list_concat(name, args),
        "list_append" | "array_append" | "array_push_back" => expect_arity(name, args, 2)
            .and_then(|()| list_concat(name, &[args[0].clone(), make_list(&args[1..])?])),
        "list_prepend" | "array_prepend" | "array_push_front" => expect_arity(name, args, 2)
            .and_then(|()| list_concat(name, &[make_list(&args[..1])?, args[1].clone()])),
        "xor" => expect_arity(name, args, 2).and_then(|()| {
            binary(
                args[0].clone(),
                &BinaryOperator::PGBitwiseXor,
                args[1].clone(),
            )
        }),
        "list_contains" | "list_has" | "array_contains" | "array_has" => {
            list_find(name, args, ListOp::Contains)
        }
        "list_position" | "list_indexof" | "array_position" | "array_indexof" => {
            list_find(name, args, ListOp::Position)
        }
        "list_reverse" | "array_reverse" => list_reshape(name, args, ListOp::Reverse),
        "list_distinct" | "array_distinct" => list_reshape(name, args, ListOp::Distinct),
        "list_sort" | "array_sort" | "list_reverse_sort" | "array_reverse_sort" => {
            list_sort(name, args)
        }
        "list_unique" | "array_unique" => {
            bind_list_aggregate(name, "approx_count_distinct", args, None)
        }
        "list_aggr" | "list_aggregate" | "array_aggr" | "array_aggregate" => match args.get(1) {
            Some(Expr::Literal(ScalarValue::Utf8(aggregate))) => {
                let aggregate = aggregate.to_lowercase();
                bind_list_aggregate(name, &aggregate, &args[..1], args.get(2))
            }
            _ => Err(bind_err!(
                "{name} takes a list and the name of an aggregate as a constant string"
            )),
        },
        _ => return None,
    };
    Some(bound)
}

/// `if(condition, then, else)`: CASE WHEN condition THEN then ELSE else END.
fn if_function(name: &str, args: &[Expr]) -> Result<Expr> {
    expect_arity(name, args, 3)?;
    let condition = boolean(args[0].clone(), name)?;
    let data_type = common_type(&[args[1].data_type(), args[2].data_type()])?;
    Ok(Expr::Case {
        branches: vec![(condition, args[1].clone().cast(&data_type))],
        otherwise: Some(Box::new(args[2].clone().cast(&data_type))),
        data_type,
    })
}

fn coalesce(args: Vec<Expr>) -> Result<Expr> {
    let types: Vec<DataType> = args.iter().map(Expr::data_type).collect();
    let data_type = common_type(&types)?;
    Ok(Expr::Function {
        func: ScalarFunction::Coalesce,
        args: args.into_iter().map(|a| a.cast(&data_type)).collect(),
        data_type,
    })
}

/// `year(d)`, `dayofweek(d)` and the like: `date_part('year', d)`.
fn part_function(name: &str, args: &[Expr]) -> Result<Expr> {
    expect_arity(name, args, 1)?;
    let value = &args[0];
    if let Some(bound) = super::interval_ops::interval_part(name, value) {
        return bound;
    }
    if !matches!(
        value.data_type(),
        DataType::Date32 | DataType::Timestamp(..) | DataType::Null
    ) {
        return Err(bind_err!(
            "function {name}({}) does not exist",
            type_name(&value.data_type())
        ));
    }
    Ok(Expr::Function {
        func: ScalarFunction::DatePart(part_by_name(name)?),
        args: vec![value.clone()],
        data_type: DataType::Int64,
    })
}

/// `trunc(x, n)` and `roundbankers(x, n)`: `x` to `n` digits after the point, in `x`'s type.
fn to_digits(name: &str, func: ScalarFunction, value: &Expr, digits: &Expr) -> Result<Expr> {
    let t = value.data_type();
    if !is_numeric(&t) && t != DataType::Null {
        return Err(bind_err!(
            "function {name}({}, ...) does not exist",
            type_name(&t)
        ));
    }
    if !matches!(
        digits.data_type(),
        DataType::Int32 | DataType::Int64 | DataType::Null
    ) {
        return Err(bind_err!("{name} takes its digits as an integer"));
    }
    let t = match t {
        DataType::Null => DataType::Float64,
        t => t,
    };
    let cut = Expr::Function {
        func,
        args: vec![
            value.clone().cast(&t),
            digits.clone().cast(&DataType::Int64),
        ],
        data_type: t.clone(),
    };
    // A decimal cut to a constant number of digits keeps that many, as in DuckDB:
    // trunc(42.12345, 2) is 42.12, a DECIMAL(7,2).
    let n = match digits {
        Expr::Literal(ScalarValue::Int32(n)) => Some(*n as i64),
        Expr::Literal(ScalarValue::Int64(n)) => Some(*n),
        _ => None,
    };
    Ok(match (pondra_catalog::decimal_parts(&t), n) {
        (Some((precision, scale)), Some(n)) if n < scale as i64 => {
            cut.cast(&pondra_catalog::decimal_type(precision, n.max(0) as i8))
        }
        _ => cut,
    })
}

/// `trunc(x)`: the number without its fraction, toward zero; an integer is itself.
fn trunc(args: &[Expr]) -> Result<Expr> {
    if args.len() == 2 {
        return to_digits("trunc", ScalarFunction::TruncDigits, &args[0], &args[1]);
    }
    expect_arity("trunc", args, 1)?;
    let value = args[0].clone();
    let t = value.data_type();
    if !is_numeric(&t) && t != DataType::Null {
        return Err(bind_err!(
            "function trunc({}) does not exist",
            type_name(&t)
        ));
    }
    if matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    ) {
        return Ok(value);
    }
    let value = value.cast(&DataType::Float64);
    let rounded = |func| Expr::Function {
        func,
        args: vec![value.clone()],
        data_type: DataType::Float64,
    };
    let negative = binary(
        value.clone(),
        &BinaryOperator::Lt,
        Expr::Literal(ScalarValue::Float64(0.0)),
    )?;
    Ok(Expr::Case {
        branches: vec![(negative, rounded(ScalarFunction::Ceil))],
        otherwise: Some(Box::new(rounded(ScalarFunction::Floor))),
        data_type: DataType::Float64,
    })
}

/// `time_bucket(width, t [, origin or offset])`: of the type of `t`; an interval third argument
/// shifts the buckets by it.
fn time_bucket(args: &[Expr]) -> Result<Expr> {
    if !(2..=3).contains(&args.len()) {
        return Err(bind_err!(
            "time_bucket takes a width, a date or timestamp, and an origin or an offset"
        ));
    }
    let stamp = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
    let interval = DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano);
    let result = match args[1].data_type() {
        t @ (DataType::Date32 | DataType::Timestamp(..)) => t,
        DataType::Null => stamp.clone(),
        other => {
            return Err(bind_err!(
                "time_bucket buckets a date or a timestamp, not {}",
                type_name(&other)
            ));
        }
    };
    if !matches!(args[0].data_type(), DataType::Interval(_) | DataType::Null) {
        return Err(bind_err!(
            "time_bucket's width is an interval, not {}",
            type_name(&args[0].data_type())
        ));
    }
    let width = args[0].clone().cast(&interval);
    let time = args[1].clone().cast(&stamp);
    let (call, offset) = match args.get(2) {
        Some(offset) if matches!(offset.data_type(), DataType::Interval(_)) => {
            let shifted = binary(time, &BinaryOperator::Minus, offset.clone())?;
            (vec![width, shifted], Some(offset.clone()))
        }
        Some(origin) => (vec![width, time, origin.clone().cast(&stamp)], None),
        None => (vec![width, time], None),
    };
    let bucket = Expr::Function {
        func: ScalarFunction::TimeBucket,
        args: call,
        data_type: stamp,
    };
    let bucket = match offset {
        Some(offset) => binary(bucket, &BinaryOperator::Plus, offset)?,
        None => bucket,
    };
    Ok(bucket.cast(&result))
}

/// `len(x)`: a list's number of elements, or a string's characters.
pub(super) fn length(args: &[Expr]) -> Result<Expr> {
    expect_arity("len", args, 1)?;
    let value = args[0].clone();
    let (func, value) = match value.data_type() {
        DataType::List(_) => (ScalarFunction::Cardinality, value),
        _ => (ScalarFunction::Length, value.cast(&DataType::Utf8)),
    };
    Ok(Expr::Function {
        func,
        args: vec![value],
        data_type: DataType::Int64,
    })
}

/// `list_value(a, b, ...)`: the list of its arguments, as `[a, b, ...]`.
fn make_list(args: &[Expr]) -> Result<Expr> {
    if args.is_empty() {
        return Err(bind_err!(
            "cannot tell the type of an empty list: cast it, as in []::INT[]"
        ));
    }
    super::arrays::make_array(args.to_vec())
}

/// The list argument of a list function, with its element type.
fn list_argument(name: &str, list: &Expr) -> Result<(Expr, DataType)> {
    match list.data_type() {
        DataType::List(item) => Ok((list.clone(), item.data_type().clone())),
        DataType::Null => Ok((list.clone().cast(&list_of(DataType::Null)), DataType::Null)),
        other => Err(bind_err!("{name} needs a list, not {}", type_name(&other))),
    }
}

fn list_call(op: ListOp, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function {
        func: ScalarFunction::List(op),
        args,
        data_type,
    }
}

/// `list_concat(a, b)`: both lists brought to their common type.
fn list_concat(name: &str, args: &[Expr]) -> Result<Expr> {
    expect_arity(name, args, 2)?;
    let (left, a) = list_argument(name, &args[0])?;
    let (right, b) = list_argument(name, &args[1])?;
    let item = common_type(&[a, b])?;
    let list = list_of(item);
    Ok(list_call(
        ListOp::Concat,
        vec![left.cast(&list), right.cast(&list)],
        list,
    ))
}

/// `list_contains(l, x)` and `list_position(l, x)`: `x` compared in the elements' type.
fn list_find(name: &str, args: &[Expr], op: ListOp) -> Result<Expr> {
    expect_arity(name, args, 2)?;
    let (list, item) = list_argument(name, &args[0])?;
    let item = common_type(&[item, args[1].data_type()])?;
    let result = match op {
        ListOp::Contains => DataType::Boolean,
        _ => DataType::Int64,
    };
    let args = vec![
        list.cast(&list_of(item.clone())),
        args[1].clone().cast(&item),
    ];
    Ok(list_call(op, args, result))
}

fn list_reshape(name: &str, args: &[Expr], op: ListOp) -> Result<Expr> {
    expect_arity(name, args, 1)?;
    let (list, _) = list_argument(name, &args[0])?;
    let data_type = list.data_type();
    Ok(list_call(op, vec![list], data_type))
}

/// `list_sort(l [, 'ASC' | 'DESC' [, 'NULLS FIRST' | 'NULLS LAST']])`, `list_reverse_sort`:
/// NULLs first unless told otherwise, as DuckDB.
fn list_sort(name: &str, args: &[Expr]) -> Result<Expr> {
    if args.is_empty() || args.len() > 3 {
        return Err(bind_err!("{name} takes a list, an order and a NULL order"));
    }
    let word = |arg: Option<&Expr>| -> Result<Option<String>> {
        match arg {
            None => Ok(None),
            Some(Expr::Literal(ScalarValue::Utf8(word))) => Ok(Some(word.to_uppercase())),
            Some(_) => Err(bind_err!("{name} takes its orders as constant strings")),
        }
    };
    let mut descending = name.contains("reverse");
    match word(args.get(1))?.as_deref() {
        None => {}
        Some("ASC") => descending = false,
        Some("DESC") => descending = true,
        Some(other) => return Err(bind_err!("{name}: unknown order {other:?}")),
    }
    let nulls_first = match word(args.get(2))?.as_deref() {
        None | Some("NULLS FIRST") => true,
        Some("NULLS LAST") => false,
        Some(other) => return Err(bind_err!("{name}: unknown NULL order {other:?}")),
    };
    let op = ListOp::Sort {
        descending,
        nulls_first,
    };
    list_reshape(name, &args[..1], op)
}

/// The aggregate `list_aggr` applies by this name: an aggregate's, but those that make lists
/// or need more than the elements.
fn list_aggregate(name: &str) -> Option<AggregateFunction> {
    aggregate_function(name).filter(|func| {
        !matches!(
            func,
            AggregateFunction::ArrayAgg | AggregateFunction::GroupingId
        )
    })
}

/// The list aggregates that pick from the list rather than fold it: `first` / `arbitrary`,
/// `last`, and `list` / `array_agg` (the list itself).
fn list_pick(aggregate: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let [list] = args else {
        return None;
    };
    let DataType::List(item) = list.data_type() else {
        return None;
    };
    let element = |position: Expr| Expr::Function {
        func: ScalarFunction::ArrayElement,
        args: vec![list.clone(), position],
        data_type: item.data_type().clone(),
    };
    Some(Ok(match aggregate {
        "first" | "arbitrary" => element(Expr::Literal(ScalarValue::Int64(1))),
        "last" => element(Expr::Function {
            func: ScalarFunction::Cardinality,
            args: vec![list.clone()],
            data_type: DataType::Int64,
        }),
        "list" | "array_agg" => list.clone(),
        // The first element that is not NULL.
        "any_value" => Expr::Function {
            func: ScalarFunction::ArrayElement,
            args: vec![
                super::composed_aggregates::present_elements(list, item.data_type()),
                Expr::Literal(ScalarValue::Int64(1)),
            ],
            data_type: item.data_type().clone(),
        },
        _ => return None,
    }))
}

/// `list_aggr(list, 'aggregate' [, separator])`.
fn bind_list_aggregate(
    name: &str,
    aggregate: &str,
    args: &[Expr],
    separator: Option<&Expr>,
) -> Result<Expr> {
    if let Some(picked) = list_pick(aggregate, args) {
        return picked;
    }
    if let (Some(op), [list]) = (super::ordered_set::bit_fold(aggregate), args) {
        let (list, item) = list_argument(name, list)?;
        if !matches!(item, DataType::Int32 | DataType::Int64) {
            return Err(bind_err!(
                "{name}: {aggregate}({}) is not defined",
                type_name(&item)
            ));
        }
        return Ok(Expr::Function {
            func: ScalarFunction::BitFold(op),
            args: vec![list],
            data_type: item,
        });
    }
    if super::composed_aggregates::is_list_composed(aggregate) {
        let [list] = args else {
            return Err(bind_err!("{name} takes a list"));
        };
        let (list, item) = list_argument(name, list)?;
        return super::composed_aggregates::bind_list_composed(aggregate, list, item);
    }
    let Some(func) = list_aggregate(aggregate) else {
        return Err(bind_err!(
            "{name}: the aggregate {aggregate:?} does not exist or is not supported over lists yet"
        ));
    };
    let [list] = args else {
        return Err(bind_err!("{name} takes a list"));
    };
    let item = match list.data_type() {
        DataType::List(item) => item.data_type().clone(),
        DataType::Null => DataType::Null,
        other => return Err(bind_err!("{name} needs a list, not {}", type_name(&other))),
    };
    let logical = matches!(aggregate, "bool_and" | "bool_or" | "every");
    if logical && !matches!(item, DataType::Boolean | DataType::Null) {
        return Err(bind_err!(
            "{name}: {aggregate}({}) is not defined",
            type_name(&item)
        ));
    }
    // Sums and means are kept in the widest type of their kind.
    let item = match (func, &item) {
        (
            AggregateFunction::Sum | AggregateFunction::Avg,
            DataType::Int8 | DataType::Int16 | DataType::Int32,
        ) => DataType::Int64,
        (AggregateFunction::Sum | AggregateFunction::Avg, DataType::Float32) => DataType::Float64,
        (AggregateFunction::StringAgg, _) => DataType::Utf8,
        (
            AggregateFunction::Sum
            | AggregateFunction::Avg
            | AggregateFunction::Product
            | AggregateFunction::KahanSum
            | AggregateFunction::StddevSamp
            | AggregateFunction::StddevPop
            | AggregateFunction::VarSamp
            | AggregateFunction::VarPop,
            t,
        ) if !is_numeric(t) && *t != DataType::Null => {
            return Err(bind_err!(
                "{name}: {aggregate}({}) is not defined",
                type_name(t)
            ));
        }
        (AggregateFunction::Product | AggregateFunction::KahanSum, _) => DataType::Float64,
        (AggregateFunction::Min | AggregateFunction::Max, DataType::Null) => DataType::Int32,
        (_, DataType::Null) => DataType::Int32,
        (_, t) => t.clone(),
    };
    let mut call = vec![list.clone().cast(&list_of(item.clone()))];
    if func == AggregateFunction::StringAgg {
        let separator = separator
            .cloned()
            .unwrap_or(Expr::Literal(ScalarValue::Utf8(",".into())));
        match separator {
            Expr::Literal(ScalarValue::Utf8(_) | ScalarValue::Null) => {
                call.push(separator.cast(&DataType::Utf8))
            }
            _ => return Err(bind_err!("{name}: the separator must be a constant string")),
        }
    }
    Ok(Expr::Function {
        func: ScalarFunction::ListAggregate(func),
        args: call,
        data_type: func.result_type(Some(&item)),
    })
}
