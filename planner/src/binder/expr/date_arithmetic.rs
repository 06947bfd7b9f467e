//! Arithmetic of dates, times and instants: days between dates, a time of day moved by an
//! interval, the time between instants, and a date moved by whole days kept a DATE.

use arrow::datatypes::DataType;
use sqlparser::ast::BinaryOperator;

use super::case_when::common_type;
use super::operators::binary;
use crate::Result;
use crate::expr::{BinaryOp, Expr, ScalarFunction};
use crate::scalar::ScalarValue;

/// Dates and days, as PostgreSQL and DuckDB count them: `date - date` is the INTEGER count of
/// days between them, and `date + integer`, `integer + date`, `date - integer` a DATE.
pub(super) fn date_arithmetic(
    left: &Expr,
    op: &BinaryOperator,
    right: &Expr,
) -> Result<Option<Expr>> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let days = |e: &Expr| e.clone().cast(&DataType::Int32);
    let integer = |t: &DataType| {
        matches!(
            t,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    };
    let time_call = |subtract: bool, args: Vec<Expr>, data_type: DataType| Expr::Function {
        func: ScalarFunction::TimeArithmetic { subtract },
        args,
        data_type,
    };
    let minus = *op == BinaryOperator::Minus;
    if let Some(instant) = instant_arithmetic(left, op, right)? {
        return Ok(Some(instant));
    }
    Ok(match (op, &lt, &rt) {
        // A time of day moved by an interval's time part wraps around midnight; the
        // difference of two is an interval (ADR 0065).
        (
            BinaryOperator::Plus | BinaryOperator::Minus,
            DataType::Time64(_),
            DataType::Interval(_),
        ) => Some(time_call(
            minus,
            vec![left.clone(), right.clone()],
            lt.clone(),
        )),
        (BinaryOperator::Plus, DataType::Interval(_), DataType::Time64(_)) => Some(time_call(
            false,
            vec![right.clone(), left.clone()],
            rt.clone(),
        )),
        (BinaryOperator::Minus, DataType::Time64(_), DataType::Time64(_)) => Some(time_call(
            true,
            vec![left.clone(), right.clone()],
            DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
        )),
        (BinaryOperator::Minus, DataType::Date32, DataType::Date32) => {
            Some(binary(days(left), op, days(right))?)
        }
        // Two wall times differ by days and a time of day, as in both anchors.
        (
            BinaryOperator::Minus,
            DataType::Timestamp(_, None) | DataType::Date32,
            DataType::Timestamp(_, None) | DataType::Date32,
        ) => {
            let wall = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
            Some(time_call(
                true,
                vec![left.clone().cast(&wall), right.clone().cast(&wall)],
                DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
            ))
        }
        (BinaryOperator::Plus | BinaryOperator::Minus, DataType::Date32, t) if integer(t) => {
            Some(binary(days(left), op, days(right))?.cast(&DataType::Date32))
        }
        (BinaryOperator::Plus, t, DataType::Date32) if integer(t) => {
            Some(binary(days(left), op, days(right))?.cast(&DataType::Date32))
        }
        _ => None,
    })
}

/// `instant - instant` (or a wall time or a date, ADR 0067): the time between them, whatever
/// the zone's clocks did. `None` for anything else; `instant ± interval` is Arrow's, which
/// moves by months and days in the zone's calendar and by the rest in elapsed time, as
/// Postgres does.
fn instant_arithmetic(left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Option<Expr>> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let instant = |t: &DataType| matches!(t, DataType::Timestamp(_, Some(_)));
    let moment = |t: &DataType| matches!(t, DataType::Timestamp(..) | DataType::Date32);
    if *op != BinaryOperator::Minus
        || !(instant(&lt) || instant(&rt))
        || !(moment(&lt) && moment(&rt))
    {
        return Ok(None);
    }
    let unit = arrow::datatypes::TimeUnit::Microsecond;
    let zoned = common_type(&[lt, rt])?;
    let utc = DataType::Timestamp(unit, Some("UTC".into()));
    let absolute = |e: &Expr| {
        e.clone()
            .cast(&zoned)
            .cast(&utc)
            .cast(&DataType::Timestamp(unit, None))
    };
    Ok(Some(binary(absolute(left), op, absolute(right))?))
}

/// A DATE as the TIMESTAMP of its midnight; any other value as it is.
pub(super) fn at_midnight(value: Expr) -> Expr {
    match value.data_type() {
        DataType::Date32 => value.cast(&DataType::Timestamp(
            arrow::datatypes::TimeUnit::Microsecond,
            None,
        )),
        _ => value,
    }
}

/// A date compared with a date moved by whole days and months (`d <= DATE '1998-12-01' -
/// INTERVAL 90 DAY`): the moved date kept a DATE, which is exact, as the timestamp it was
/// bound to falls on a midnight; so the date side is read as it is stored, and a filter on it
/// stays one a scan can prune by.
pub(super) fn dates_beside_dates(left: Expr, right: Expr) -> (Expr, Expr) {
    let (lt, rt) = (left.data_type(), right.data_type());
    match (lt, rt) {
        (DataType::Date32, DataType::Timestamp(_, None)) => {
            let right = moved_date(&right).unwrap_or(right);
            (left, right)
        }
        (DataType::Timestamp(_, None), DataType::Date32) => {
            let left = moved_date(&left).unwrap_or(left);
            (left, right)
        }
        _ => (left, right),
    }
}

/// `date ± interval`, bound as a timestamp, as the DATE it equals when the interval has no
/// time part; `None` for anything else.
fn moved_date(stamp: &Expr) -> Option<Expr> {
    let Expr::Binary {
        op: op @ (BinaryOp::Plus | BinaryOp::Minus),
        left,
        right,
    } = stamp
    else {
        return None;
    };
    let Expr::Cast { expr: date, .. } = left.as_ref() else {
        return None;
    };
    let whole_days = matches!(
        right.as_ref(),
        Expr::Literal(ScalarValue::Interval { nanos: 0, .. })
    );
    (date.data_type() == DataType::Date32 && whole_days).then(|| Expr::Binary {
        op: *op,
        left: date.clone(),
        right: right.clone(),
    })
}

pub(super) fn is_temporal(t: &DataType) -> bool {
    matches!(t, DataType::Date32 | DataType::Timestamp(..))
}

pub(super) fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(_))
}
