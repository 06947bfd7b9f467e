//! Date functions of both anchors beyond EXTRACT and its kin: `make_date`, `make_timestamp`,
//! `age`, `last_day`, `dayname`, `monthname` and `yearweek`.

use arrow::datatypes::{DataType, TimeUnit};

use sqlparser::ast;

use super::expr::*;
use super::functions::part_by_name;
use crate::expr::{DatePart, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

const TIMESTAMP: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

/// The bound call, or `None` when `name` is none of these functions.
pub(super) fn date_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    Some(match name {
        "make_date" => integers(name, args, 3)
            .map(|args| call(ScalarFunction::MakeDate, args, DataType::Date32)),
        "make_timestamp" => make_timestamp(args),
        "age" => age(args),
        "last_day" => temporal(name, args)
            .map(|value| call(ScalarFunction::LastDay, vec![value], DataType::Date32)),
        "dayname" | "monthname" => temporal(name, args).map(|value| {
            let format = if name == "dayname" { "%A" } else { "%B" };
            call(
                ScalarFunction::Strftime,
                vec![
                    value.cast(&TIMESTAMP),
                    Expr::Literal(ScalarValue::Utf8(format.to_string())),
                ],
                DataType::Utf8,
            )
        }),
        "yearweek" => match args {
            [value] => derived_part(name, value).expect("yearweek is a derived part"),
            _ => Err(bind_err!("{name} takes one argument")),
        },
        "to_years" | "to_months" | "to_weeks" | "to_days" | "to_hours" | "to_minutes"
        | "to_seconds" | "to_milliseconds" | "to_microseconds" | "to_centuries" | "to_decades"
        | "to_millennia" | "to_quarters" => {
            let unit = match name.trim_start_matches("to_") {
                "centuries" => "century",
                "millennia" => "millennium",
                plural => plural.trim_end_matches('s'),
            };
            match (args, part_by_name(unit)) {
                ([count], Ok(part)) => interval_of(part, count.clone()),
                (_, Err(e)) => Err(e),
                _ => Err(bind_err!("{name} takes one argument")),
            }
        }
        _ => return None,
    })
}

/// `INTERVAL (expr) unit`: an interval of `expr` units.
pub(super) fn interval_of_expression(
    interval: &ast::Interval,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let (Some(unit), None) = (&interval.leading_field, &interval.last_field) else {
        return Err(unsupported!("the interval {interval}: name one unit"));
    };
    let part = part_by_name(&unit.to_string())?;
    interval_of(part, bind_expr(&interval.value, ctx)?)
}

/// An interval of `count` `part`s.
fn interval_of(part: DatePart, count: Expr) -> Result<Expr> {
    let fraction = matches!(
        part,
        DatePart::Second | DatePart::Millisecond | DatePart::Microsecond
    );
    let count = match (count.data_type(), fraction) {
        (DataType::Int32 | DataType::Int64 | DataType::Null, false) => count.cast(&DataType::Int64),
        (t, true) if crate::types::is_numeric(&t) || t == DataType::Null => {
            count.cast(&DataType::Float64)
        }
        (other, _) => {
            return Err(bind_err!(
                "an interval of {part:?}s needs {}, not {}",
                if fraction { "a number" } else { "an integer" },
                type_name(&other)
            ));
        }
    };
    if matches!(
        part,
        DatePart::DayOfWeek | DatePart::DayOfYear | DatePart::IsoDayOfWeek | DatePart::IsoYear
    ) {
        return Err(bind_err!("an interval cannot be counted in {part:?}"));
    }
    Ok(call(
        ScalarFunction::IntervalOf(part),
        vec![count],
        DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
    ))
}

/// The parts computed from others, by name, of a date or timestamp: `epoch` (seconds since
/// 1970, a DOUBLE), `julian` (the Julian day, a DOUBLE), `era` (1 after Christ, 0 before) and
/// `yearweek` (the ISO year times 100 plus the ISO week: 202001 for 2019-12-30), and
/// `timezone` (the offset from UTC in seconds), `timezone_hour` and `timezone_minute`. `None`
/// for the other parts.
pub(super) fn derived_part(name: &str, value: &Expr) -> Option<Result<Expr>> {
    use crate::expr::BinaryOp;
    if !matches!(
        name,
        "epoch" | "julian" | "era" | "yearweek" | "timezone" | "timezone_hour" | "timezone_minute"
    ) {
        return None;
    }
    // An infinity has no epoch, Julian day or era: NULL, as in DuckDB.
    let value = match temporal(name, std::slice::from_ref(value)) {
        Ok(value) => {
            let data_type = value.data_type();
            call(ScalarFunction::FiniteOnly, vec![value], data_type)
        }
        Err(e) => return Some(Err(e)),
    };
    let binary = |op, left: Expr, right: Expr| Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    };
    let part = |part| {
        call(
            ScalarFunction::DatePart(part),
            vec![value.clone()],
            DataType::Int64,
        )
    };
    let seconds = || {
        // An instant's own value counts from the epoch in UTC (ADR 0067); a wall time's as
        // if it were in UTC.
        let stamp = match value.data_type() {
            DataType::Timestamp(_, Some(_)) => value.clone(),
            _ => value.clone().cast(&TIMESTAMP),
        };
        let micros = stamp.cast(&DataType::Int64).cast(&DataType::Float64);
        binary(
            BinaryOp::Divide,
            micros,
            Expr::Literal(ScalarValue::Float64(1e6)),
        )
    };
    let int = |v: i64| Expr::Literal(ScalarValue::Int64(v));
    // The zone's offset from UTC in seconds: an instant's wall time in the session's zone
    // less the instant; 0 for a date or a wall time, which have no zone.
    let offset = || {
        let stamp = match value.data_type() {
            DataType::Timestamp(_, Some(_)) => value.clone(),
            _ => value.clone().cast(&TIMESTAMP),
        };
        let wall = value.clone().cast(&TIMESTAMP).cast(&DataType::Int64);
        let micros = binary(BinaryOp::Minus, wall, stamp.cast(&DataType::Int64));
        binary(BinaryOp::Divide, micros, int(1_000_000))
    };
    Some(Ok(match name {
        "epoch" => seconds(),
        "timezone" => offset(),
        "timezone_hour" => binary(BinaryOp::Divide, offset(), int(3_600)),
        "timezone_minute" => binary(
            BinaryOp::Divide,
            binary(BinaryOp::Modulo, offset(), int(3_600)),
            int(60),
        ),
        // Day 2440588 of the Julian count is 1970-01-01.
        "julian" => binary(
            BinaryOp::Plus,
            binary(
                BinaryOp::Divide,
                seconds(),
                Expr::Literal(ScalarValue::Float64(86_400.0)),
            ),
            Expr::Literal(ScalarValue::Float64(2_440_588.0)),
        ),
        "era" => Expr::Case {
            branches: vec![
                (
                    Expr::IsNull(Box::new(value.clone())),
                    Expr::Literal(ScalarValue::Null).cast(&DataType::Int64),
                ),
                (
                    binary(
                        BinaryOp::Gt,
                        part(DatePart::Year),
                        Expr::Literal(ScalarValue::Int64(0)),
                    ),
                    Expr::Literal(ScalarValue::Int64(1)),
                ),
            ],
            otherwise: Some(Box::new(Expr::Literal(ScalarValue::Int64(0)))),
            data_type: DataType::Int64,
        },
        // The week takes the year's sign, as DuckDB writes it: -4311 for week 11 of -43.
        _ => {
            let hundreds = binary(
                BinaryOp::Multiply,
                part(DatePart::IsoYear),
                Expr::Literal(ScalarValue::Int64(100)),
            );
            let before_christ = binary(BinaryOp::Lt, part(DatePart::IsoYear), int(0));
            Expr::Case {
                branches: vec![(
                    before_christ,
                    binary(BinaryOp::Minus, hundreds.clone(), part(DatePart::Week)),
                )],
                otherwise: Some(Box::new(binary(
                    BinaryOp::Plus,
                    hundreds,
                    part(DatePart::Week),
                ))),
                data_type: DataType::Int64,
            }
        }
    }))
}

/// A TIME (ADR 0065) as the timestamp of its time of day on 1970-01-01, for the parts a time
/// has (`hour` to `microsecond`, and `epoch`, its seconds since midnight); any other value
/// as it is. A date part of a TIME is an error.
pub(super) fn time_of_day(value: Expr, part: &str) -> Result<Expr> {
    if !matches!(value.data_type(), DataType::Time64(_)) {
        return Ok(value);
    }
    let clock = part.eq_ignore_ascii_case("epoch")
        || matches!(
            super::functions::part_by_name(part),
            Ok(DatePart::Hour
                | DatePart::Minute
                | DatePart::Second
                | DatePart::Millisecond
                | DatePart::Microsecond)
        );
    if !clock {
        return Err(bind_err!("a TIME has no part \"{part}\""));
    }
    Ok(value.cast(&DataType::Int64).cast(&TIMESTAMP))
}

/// `epoch_ms`, `epoch_us`, `epoch_ns` and `nanosecond` of a date or timestamp: BIGINT counts
/// since 1970 (an instant's in UTC, a wall time's as if in UTC), and the nanoseconds of the
/// minute; NULL for an infinity. `epoch_ms` of an integer is the timestamp that many
/// milliseconds after 1970. `None` for other names or arguments.
pub(super) fn temporal_epoch_units(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    use crate::expr::BinaryOp;
    let [value] = args else { return None };
    let int = |v: i64| Expr::Literal(ScalarValue::Int64(v));
    let binary = |op, left: Expr, right: Expr| Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    };
    let t = value.data_type();
    if name == "epoch_ms" && matches!(t, DataType::Int32 | DataType::Int64) {
        let micros = binary(
            BinaryOp::Multiply,
            value.clone().cast(&DataType::Int64),
            int(1_000),
        );
        return Some(Ok(micros.cast(&TIMESTAMP)));
    }
    if !matches!(t, DataType::Date32 | DataType::Timestamp(..)) {
        return None;
    }
    let finite = call(ScalarFunction::FiniteOnly, vec![value.clone()], t.clone());
    let stamp = match t {
        DataType::Timestamp(_, Some(_)) => finite,
        _ => finite.cast(&TIMESTAMP),
    };
    let micros = stamp.clone().cast(&DataType::Int64);
    Some(Ok(match name {
        "epoch_ms" => binary(BinaryOp::Divide, micros, int(1_000)),
        "epoch_us" => micros,
        "epoch_ns" => binary(BinaryOp::Multiply, micros, int(1_000)),
        "nanosecond" => {
            let wall = stamp.cast(&TIMESTAMP);
            let part = call(
                ScalarFunction::DatePart(DatePart::Microsecond),
                vec![wall],
                DataType::Int64,
            );
            binary(BinaryOp::Multiply, part, int(1_000))
        }
        _ => return None,
    }))
}

/// The part `date_trunc` truncates to for `name`: DuckDB's Julian day and parts of a day of
/// the week or year truncate to the day, a year-week to the week, and the epoch to the second.
pub(super) fn trunc_part(name: &str) -> Result<DatePart> {
    Ok(match name.to_lowercase().as_str() {
        "julian" | "dow" | "isodow" | "doy" | "dayofweek" | "dayofyear" | "weekday" => {
            DatePart::Day
        }
        "yearweek" => DatePart::Week,
        "epoch" => DatePart::Second,
        other => part_by_name(other)?,
    })
}

/// `date_trunc(part, value)` of a DATE or TIMESTAMP. A date is truncated as the timestamp at
/// its midnight, and gives a timestamp, in both anchors; an instant is truncated as its wall
/// time, and gives an instant (ADR 0067).
pub(super) fn date_trunc(part: DatePart, value: Expr) -> Expr {
    let value = match value.data_type() {
        DataType::Date32 => value.cast(&TIMESTAMP),
        _ => value,
    };
    let t = value.data_type();
    if let DataType::Timestamp(_, Some(_)) = t {
        let truncated = call(
            ScalarFunction::DateTrunc(part),
            vec![value.cast(&TIMESTAMP)],
            TIMESTAMP,
        );
        return truncated.cast(&t);
    }
    call(ScalarFunction::DateTrunc(part), vec![value], t)
}

/// `date_trunc(part, value)` with a part that varies by row: the truncations to each part
/// DuckDB names, chosen row by row; NULL for a NULL part, an error for any other name.
pub(super) fn dynamic_date_trunc(part: Expr, value: Expr) -> Result<Expr> {
    const NAMES: [&str; 60] = [
        "millennium",
        "millennia",
        "mil",
        "century",
        "centuries",
        "decade",
        "decades",
        "year",
        "years",
        "y",
        "yy",
        "yyyy",
        "yr",
        "yrs",
        "isoyear",
        "quarter",
        "quarters",
        "month",
        "months",
        "mon",
        "mm",
        "week",
        "weeks",
        "w",
        "weekofyear",
        "yearweek",
        "day",
        "days",
        "d",
        "dd",
        "dayofmonth",
        "julian",
        "dow",
        "isodow",
        "doy",
        "hour",
        "hours",
        "h",
        "hr",
        "minute",
        "minutes",
        "m",
        "min",
        "second",
        "seconds",
        "s",
        "sec",
        "epoch",
        "millisecond",
        "milliseconds",
        "ms",
        "msec",
        "msecs",
        "microsecond",
        "microseconds",
        "us",
        "usec",
        "usecs",
        "weekday",
        "dayofweek",
    ];
    let value = temporal("date_trunc", std::slice::from_ref(&value))?;
    let mut named = Vec::with_capacity(NAMES.len());
    for name in NAMES {
        named.push((name, date_trunc(trunc_part(name)?, value.clone())));
    }
    let data_type = named[0].1.data_type();
    Ok(by_part_name(
        part,
        named,
        "date_trunc: unknown part ",
        data_type,
    ))
}

/// `date_part(['year', 'month', ...], value)`: a struct of the parts, named as asked; NULL
/// for a NULL value.
pub(super) fn date_part_struct(names: Vec<String>, value: Expr) -> Result<Expr> {
    let mut parts = Vec::with_capacity(names.len());
    for name in &names {
        let lower = name.to_lowercase();
        if let Some(part) = super::interval_ops::interval_part(&lower, &value) {
            parts.push(part?);
            continue;
        }
        let value = time_of_day(value.clone(), &lower)?;
        parts.push(match derived_part(&lower, &value) {
            Some(derived) => derived?,
            None => call(
                ScalarFunction::DatePart(part_by_name(&lower)?),
                vec![temporal("date_part", std::slice::from_ref(&value))?],
                DataType::Int64,
            ),
        });
    }
    let record = super::structs::make_struct(names, parts)?;
    let data_type = record.data_type();
    Ok(Expr::Case {
        branches: vec![(
            Expr::IsNull(Box::new(value)),
            Expr::Literal(ScalarValue::Null).cast(&data_type),
        )],
        otherwise: Some(Box::new(record)),
        data_type,
    })
}

/// `date_part(part, value)` with a part that varies by row: each part DuckDB counts in whole
/// numbers, chosen row by row; NULL for a NULL part, an error for a part not among them.
pub(super) fn dynamic_date_part(part: Expr, value: Expr) -> Result<Expr> {
    const PARTS: [&str; 31] = [
        "era",
        "millennium",
        "century",
        "decade",
        "year",
        "quarter",
        "month",
        "day",
        "week",
        "weekday",
        "dow",
        "isodow",
        "dayofyear",
        "doy",
        "isoyear",
        "yearweek",
        "hour",
        "minute",
        "second",
        "millisecond",
        "milliseconds",
        "ms",
        "msec",
        "msecs",
        "microsecond",
        "microseconds",
        "us",
        "usec",
        "usecs",
        "weekday",
        "dayofweek",
    ];
    if let DataType::Interval(_) = value.data_type() {
        return Ok(super::interval_ops::dynamic_interval_part(part, value));
    }
    let value = temporal("date_part", std::slice::from_ref(&value))?;
    let mut named = Vec::with_capacity(PARTS.len());
    for part_name in PARTS {
        let bound = match derived_part(part_name, &value) {
            Some(bound) => bound?,
            None => call(
                ScalarFunction::DatePart(super::functions::part_by_name(part_name)?),
                vec![value.clone()],
                DataType::Int64,
            ),
        };
        assert_eq!(bound.data_type(), DataType::Int64, "{part_name} counts");
        named.push((part_name, bound));
    }
    Ok(by_part_name(
        part,
        named,
        "date_part: unknown part, or one that varies by row only as a constant: ",
        DataType::Int64,
    ))
}

/// A BIGINT chosen row by row by the lower-cased name `part` holds: NULL for a NULL part, the
/// value `named` gives a name, an error (`unknown` then the name) for any other.
pub(super) fn by_part_name(
    part: Expr,
    named: Vec<(&str, Expr)>,
    unknown: &str,
    data_type: DataType,
) -> Expr {
    use crate::expr::BinaryOp;
    let part = part.cast(&DataType::Utf8);
    let name = call(ScalarFunction::Lower, vec![part.clone()], DataType::Utf8);
    let null = Expr::Literal(ScalarValue::Null).cast(&data_type);
    let mut branches = vec![(Expr::IsNull(Box::new(part.clone())), null)];
    for (part_name, bound) in named {
        let is_named = Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(name.clone()),
            right: Box::new(Expr::Literal(ScalarValue::Utf8(part_name.into()))),
        };
        branches.push((is_named, bound));
    }
    let message = Expr::Binary {
        op: BinaryOp::Concat,
        left: Box::new(Expr::Literal(ScalarValue::Utf8(unknown.into()))),
        right: Box::new(part),
    };
    Expr::Case {
        branches,
        otherwise: Some(Box::new(call(
            ScalarFunction::RaiseError,
            vec![message],
            data_type.clone(),
        ))),
        data_type,
    }
}

fn call(func: ScalarFunction, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function {
        func,
        args,
        data_type,
    }
}

fn integers(name: &str, args: &[Expr], count: usize) -> Result<Vec<Expr>> {
    if args.len() != count {
        return Err(bind_err!("{name} takes {count} arguments"));
    }
    args.iter()
        .map(|a| match a.data_type() {
            DataType::Int32 | DataType::Int64 | DataType::Null => {
                Ok(a.clone().cast(&DataType::Int64))
            }
            other => Err(bind_err!(
                "{name} needs integer parts, not {}",
                type_name(&other)
            )),
        })
        .collect()
}

/// The single DATE or TIMESTAMP argument.
fn temporal(name: &str, args: &[Expr]) -> Result<Expr> {
    let [value] = args else {
        return Err(bind_err!("{name} takes one argument"));
    };
    match value.data_type() {
        DataType::Date32 | DataType::Timestamp(..) => Ok(value.clone()),
        DataType::Null => Ok(value.clone().cast(&DataType::Date32)),
        other => Err(bind_err!(
            "{name} needs a DATE or TIMESTAMP, not {}",
            type_name(&other)
        )),
    }
}

/// `make_timestamp(year, month, day, hour, minute, seconds)`.
fn make_timestamp(args: &[Expr]) -> Result<Expr> {
    if args.len() != 6 {
        return Err(bind_err!(
            "make_timestamp takes a year, a month, a day, an hour, a minute and seconds"
        ));
    }
    let mut parts = integers("make_timestamp", &args[..5], 5)?;
    let seconds = &args[5];
    if !crate::types::is_numeric(&seconds.data_type()) && seconds.data_type() != DataType::Null {
        return Err(bind_err!(
            "make_timestamp needs seconds as a number, not {}",
            type_name(&seconds.data_type())
        ));
    }
    parts.push(seconds.clone().cast(&DataType::Float64));
    Ok(call(ScalarFunction::MakeTimestamp, parts, TIMESTAMP))
}

/// `age(a, b)`; `age(a)` counts from the current date, which the engine has no function for.
fn age(args: &[Expr]) -> Result<Expr> {
    let [a, b] = args else {
        return Err(bind_err!("age takes one or two timestamps"));
    };
    let stamp = |value: &Expr| match value.data_type() {
        DataType::Date32 | DataType::Timestamp(..) | DataType::Null => {
            Ok(value.clone().cast(&TIMESTAMP))
        }
        other => Err(bind_err!("age needs timestamps, not {}", type_name(&other))),
    };
    Ok(call(
        ScalarFunction::Age,
        vec![stamp(a)?, stamp(b)?],
        DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
    ))
}
