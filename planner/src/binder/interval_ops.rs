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
    let field = TRUNC_ALIASES
        .iter()
        .find(|(name, _)| *name == part)
        .map(|(_, field)| *field)
        .or_else(|| field(&part));
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
        "epoch_ns" => 1_000_000_000,
        "nanosecond" => {
            let [value] = args else { return None };
            return is_interval(value).then(|| {
                Ok(call(
                    IntervalOp::Nanosecond,
                    vec![value.clone()],
                    DataType::Int64,
                ))
            });
        }
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

/// `date_part(part, interval)` with a part that varies by row: a CASE over the parts'
/// names, an error for a name that is none.
pub(super) fn dynamic_interval_part(part: Expr, value: Expr) -> Expr {
    let named = FIELD_NAMES
        .iter()
        .map(|(name, field)| {
            let bound = call(
                IntervalOp::Part(*field),
                vec![value.clone()],
                DataType::Int64,
            );
            (*name, bound)
        })
        .collect();
    super::date_functions::by_part_name(
        part,
        named,
        "date_part: an INTERVAL has no part ",
        DataType::Int64,
    )
}

/// `date_trunc(part, interval)` with a part that varies by row: a CASE over the parts' names,
/// NULL for a NULL name, an error for a name that is none.
pub(super) fn dynamic_interval_trunc(part: Expr, value: Expr) -> Expr {
    let named = FIELD_NAMES
        .iter()
        .map(|(name, _)| *name)
        .chain(TRUNC_ALIASES.iter().map(|(name, _)| *name))
        .map(|name| {
            let truncated = interval_trunc(name, &value)
                .expect("an interval")
                .expect("a named part");
            (name, truncated)
        })
        .collect();
    super::date_functions::by_part_name(
        part,
        named,
        "date_trunc: an INTERVAL has no part ",
        value.data_type(),
    )
}

/// The parts `date_trunc` reads on an interval beyond its fields: those of a day of the week
/// or year truncate to the day, DuckDB's ISO year to the year, a year-week to the week, and
/// the epoch to the second.
const TRUNC_ALIASES: [(&str, DatePart); 11] = [
    ("dow", DatePart::Day),
    ("isodow", DatePart::Day),
    ("doy", DatePart::Day),
    ("dayofweek", DatePart::Day),
    ("dayofyear", DatePart::Day),
    ("week", DatePart::Week),
    ("weeks", DatePart::Week),
    ("w", DatePart::Week),
    ("yearweek", DatePart::Week),
    ("isoyear", DatePart::Year),
    ("epoch", DatePart::Second),
];

/// The names of an interval's fields, as DuckDB reads them.
const FIELD_NAMES: [(&str, DatePart); 56] = [
    ("year", DatePart::Year),
    ("years", DatePart::Year),
    ("y", DatePart::Year),
    ("yy", DatePart::Year),
    ("yyyy", DatePart::Year),
    ("yr", DatePart::Year),
    ("yrs", DatePart::Year),
    ("month", DatePart::Month),
    ("months", DatePart::Month),
    ("mon", DatePart::Month),
    ("mons", DatePart::Month),
    ("mm", DatePart::Month),
    ("quarter", DatePart::Quarter),
    ("quarters", DatePart::Quarter),
    ("day", DatePart::Day),
    ("days", DatePart::Day),
    ("d", DatePart::Day),
    ("dd", DatePart::Day),
    ("dayofmonth", DatePart::Day),
    ("decade", DatePart::Decade),
    ("decades", DatePart::Decade),
    ("dec", DatePart::Decade),
    ("century", DatePart::Century),
    ("centuries", DatePart::Century),
    ("c", DatePart::Century),
    ("cent", DatePart::Century),
    ("millennium", DatePart::Millennium),
    ("millennia", DatePart::Millennium),
    ("mil", DatePart::Millennium),
    ("mils", DatePart::Millennium),
    ("hour", DatePart::Hour),
    ("hours", DatePart::Hour),
    ("h", DatePart::Hour),
    ("hr", DatePart::Hour),
    ("hrs", DatePart::Hour),
    ("minute", DatePart::Minute),
    ("minutes", DatePart::Minute),
    ("m", DatePart::Minute),
    ("min", DatePart::Minute),
    ("mins", DatePart::Minute),
    ("mi", DatePart::Minute),
    ("second", DatePart::Second),
    ("seconds", DatePart::Second),
    ("s", DatePart::Second),
    ("sec", DatePart::Second),
    ("secs", DatePart::Second),
    ("millisecond", DatePart::Millisecond),
    ("milliseconds", DatePart::Millisecond),
    ("ms", DatePart::Millisecond),
    ("msec", DatePart::Millisecond),
    ("msecs", DatePart::Millisecond),
    ("microsecond", DatePart::Microsecond),
    ("microseconds", DatePart::Microsecond),
    ("us", DatePart::Microsecond),
    ("usec", DatePart::Microsecond),
    ("usecs", DatePart::Microsecond),
];

/// The field of an interval `part` names.
fn field(part: &str) -> Option<DatePart> {
    FIELD_NAMES
        .iter()
        .find(|(name, _)| *name == part)
        .map(|(_, field)| *field)
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
