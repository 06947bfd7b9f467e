//! The current date and time: `now()`, `current_timestamp`, `current_date`, `localtimestamp`,
//! `localtime` and one-argument `age`. Every call in one statement sees the same moment,
//! taken when the statement is bound; an instant shown in the session's zone, the date and
//! wall times that zone's.

use arrow::datatypes::{DataType, TimeUnit};

use super::expr::Context;
use crate::expr::Expr;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// The clock function `name` names, bound; `None` when it names none.
pub(super) fn clock_function(name: &str, args: &[Expr], ctx: &Context<'_>) -> Option<Result<Expr>> {
    let wanted = match name {
        "now"
        | "current_timestamp"
        | "transaction_timestamp"
        | "get_current_timestamp"
        | "statement_timestamp" => None,
        "current_date" | "today" => Some(DataType::Date32),
        "localtimestamp" => Some(DataType::Timestamp(TimeUnit::Microsecond, None)),
        "localtime" | "current_time" => Some(DataType::Time64(TimeUnit::Microsecond)),
        _ => return None,
    };
    if !args.is_empty() {
        return Some(Err(bind_err!("{name} takes no arguments")));
    }
    Some(now(name, ctx).map(|instant| match wanted {
        Some(data_type) => instant.cast(&data_type),
        None => instant,
    }))
}

/// The statement's moment as an instant in the session's zone.
pub(super) fn now(name: &str, ctx: &Context<'_>) -> Result<Expr> {
    let binder = ctx.binder();
    if binder.is_some_and(|b| b.binds_materialized_view()) {
        return Err(unsupported!(
            "{name} in a materialized view: its rows would depend on when each commit ran"
        ));
    }
    let micros = binder.map_or_else(statement_micros, |b| b.statement_micros());
    let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let instant = Expr::Literal(ScalarValue::TimestampMicros(micros)).cast(&utc);
    Ok(match binder {
        Some(binder) => instant.cast(&binder.instant_type()),
        None => instant,
    })
}

/// Microseconds since the epoch now.
/// Now, in microseconds since the epoch: the moment a statement binds at.
pub fn statement_micros() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}
