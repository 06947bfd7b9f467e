//! Functions of intervals, as DuckDB has them: `date_part` / `EXTRACT` of a field,
//! `epoch` (and `epoch_ms`, `epoch_us`, `epoch_ns`), `date_trunc`, and `interval * number`,
//! `number * interval`, `interval / number`.

use arrow::datatypes::DataType;

use super::expr::type_name;
use crate::expr::{DatePart, Expr, IntervalOp, ScalarFunction};
use crate::types::is_numeric;
use crate::{Result, bind_err};

fn is_interval(e: &Expr) -> bool {
    matches!(e.data_type(), DataType::Interval(_))
}

/// `date_part(part, interval)`; `None` when `value` is no interval.
pub(super) fn interval_part(part: &str, value: &Expr) -> Option<Result<Expr>> {
    if !is_interval(value) {
        return None;
    }
    let part = part.to_lowercase();
    let (op, data_type) = match part.as_str() {
        "epoch" => (IntervalOp::Epoch, DataType::Float64),
        _ => match field(&part) {
            Some(field) => (IntervalOp::Part(field), DataType::Int64),
            None => return Some(Err(no_part(&part))),
        },
    };
    Some(Ok(call(op, vec![value.clone()], data_type)))
}

/// `date_trunc(part, interval)`; `None` when `value` is no interval.
pub(super) fn interval_trunc(part: &str, value: &Expr) -> Option<Result<Expr>> {
    if !is_interval(value) {
        return None;
    }
    let part = part.to_lowercase();
    let field = match part.as_str() {
        // The parts of a day of the week or year truncate to the day.
        "dow" | "isodow" | "doy" | "dayofweek" | "dayofyear" => Some(DatePart::Day),
        "week" | "weeks" | "w" => Some(DatePart::Week),
        _ => field(&part),
    };
    Some(match field {
        Some(field) => Ok(call(
            IntervalOp::Trunc(field),
            vec![value.clone()],
            value.data_type(),
        )),
        None => Err(no_part(&part)),
    })
}

/// `epoch_ms`, `epoch_us` and `epoch_ns` of an interval; `None` for other names or values.
pub(super) fn interval_epoch_units(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let per_second = match name {
        "epoch_ms" => 1_000,
        "epoch_us" => 1_000_000,
        "epoch_ns" | "nanosecond" => 1_000_000_000,
        _ => return None,
    };
    let [value] = args else { return None };
    if !is_interval(value) {
        return None;
    }
    Some(Ok(call(
        IntervalOp::EpochUnits { per_second },
        vec![value.clone()],
        DataType::Int64,
    )))
}

/// `interval * number`, `number * interval` or `interval / number`; `None` when no side is an
/// interval.
pub(super) fn interval_scale(left: &Expr, divide: bool, right: &Expr) -> Option<Result<Expr>> {
    let (interval, factor) = match (is_interval(left), is_interval(right)) {
        (true, false) => (left, right),
        (false, true) if !divide => (right, left),
        (false, false) => return None,
        _ => {
            let op = if divide { "/" } else { "*" };
            return Some(Err(bind_err!(
                "operator {op} is not defined for types {} and {}",
                type_name(&left.data_type()),
                type_name(&right.data_type())
            )));
        }
    };
    let t = factor.data_type();
    if !is_numeric(&t) && t != DataType::Null {
        let op = if divide { "/" } else { "*" };
        return Some(Err(bind_err!(
            "operator {op} is not defined for types {} and {}",
            type_name(&left.data_type()),
            type_name(&right.data_type())
        )));
    }
    Some(Ok(call(
        IntervalOp::Scale { divide },
        vec![interval.clone(), factor.clone().cast(&DataType::Float64)],
        interval.data_type(),
    )))
}

/// The field of an interval `part` names, as DuckDB reads it.
fn field(part: &str) -> Option<DatePart> {
    Some(match part {
        "year" | "years" | "y" | "yy" | "yyyy" | "yr" | "yrs" => DatePart::Year,
        "month" | "months" | "mon" | "mons" | "mm" => DatePart::Month,
        "quarter" | "quarters" => DatePart::Quarter,
        "day" | "days" | "d" | "dd" | "dayofmonth" => DatePart::Day,
        "decade" | "decades" | "dec" => DatePart::Decade,
        "century" | "centuries" | "c" | "cent" => DatePart::Century,
        "millennium" | "millennia" | "mil" | "mils" => DatePart::Millennium,
        "hour" | "hours" | "h" | "hr" | "hrs" => DatePart::Hour,
        "minute" | "minutes" | "m" | "min" | "mins" | "mi" => DatePart::Minute,
        "second" | "seconds" | "s" | "sec" | "secs" => DatePart::Second,
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => DatePart::Millisecond,
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => DatePart::Microsecond,
        _ => return None,
    })
}

fn no_part(part: &str) -> crate::PlanError {
    bind_err!("an INTERVAL has no part \"{part}\"")
}

fn call(op: IntervalOp, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function {
        func: ScalarFunction::Interval(op),
        args,
        data_type,
    }
}
