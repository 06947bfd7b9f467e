//! Event-time windows as table functions (ADR 0054), in RisingWave's short form:
//! `TUMBLE(t, ts, size [, offset])`, `HOP(t, ts, slide, size [, offset])` and
//! `SESSION(t, ts, gap [, key ...])`. The parser reads Flink's
//! `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))` and
//! `TABLE(SESSION(TABLE t PARTITION BY key, DESCRIPTOR(ts), gap))` as the same calls. Each gives
//! the rows of `t` (a table, view or CTE) with `window_start` and `window_end` after their
//! columns: TUMBLE one window per row, HOP every window of `size` (starting each `slide`) that
//! holds the row's time, SESSION the session of the row's keys that holds it. A TUMBLE or HOP
//! window holds the times from its start (included) to its end (excluded), and windows start
//! at multiples of their slide from the epoch, shifted by `offset`. A session, as in Flink, is
//! a run of rows each less than `gap` after the one before; it starts at its first row's time
//! and ends `gap` after its last.
//!
//! TUMBLE and HOP are a projection of each row (HOP an unnest of its windows first), so a view
//! over them follows every change of `t` as any projection does. SESSION is window functions
//! over each key's rows in time order.

use arrow::datatypes::{DataType, Field, TimeUnit};
use pondra_parser::ast;

use super::Binder;
use super::expr::{Context, bind_expr};
use super::scope::{Scope, normalize};
use crate::expr::{
    AggregateFunction, BinaryOp, Expr, Frame, FrameBound, FrameUnits, ScalarFunction, SortKey,
    WindowExpr, WindowFunction,
};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{Result, bind_err, unsupported};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// True for the names `time_window` binds.
pub fn is_time_window(name: &str) -> bool {
    matches!(name, "tumble" | "hop" | "session")
}

impl Binder<'_> {
    /// The rows of `function` (`tumble` or `hop`) over `args`.
    pub(super) fn time_window(
        &self,
        function: &str,
        args: &[ast::FunctionArg],
    ) -> Result<LogicalPlan> {
        let name = function.to_uppercase();
        let args: Vec<&ast::Expr> = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(bind_err!("{name}: unexpected argument {other}")),
            })
            .collect::<Result<_>>()?;
        let usage = match function {
            "tumble" => "TUMBLE(table, time column, size [, offset])",
            "session" => "SESSION(table, time column, gap [, key ...])",
            _ => "HOP(table, time column, slide, size [, offset])",
        };
        let lengths = match function {
            "tumble" => 3..=4,
            "session" => 3..=usize::MAX,
            _ => 4..=5,
        };
        if !lengths.contains(&args.len()) {
            return Err(bind_err!("{name} takes {usage}"));
        }
        let relation = match args[0] {
            ast::Expr::Identifier(ident) => ast::ObjectName::from(vec![ident.clone()]),
            ast::Expr::CompoundIdentifier(parts) => ast::ObjectName::from(parts.clone()),
            other => {
                return Err(bind_err!(
                    "{name} reads a table by name, not {other}: {usage}"
                ));
            }
        };
        let (input, _) = self.named_relation(&relation)?;
        let ts = time_column(&input, args[1], &name)?;
        if function == "session" {
            let gap = micros_of(args[2], &name)?;
            if gap <= 0 {
                return Err(bind_err!("{name}: the gap must be positive"));
            }
            let keys = args[3..]
                .iter()
                .map(|key| named_column(&input, key, &name))
                .collect::<Result<Vec<_>>>()?;
            return Ok(session(input, ts, gap, keys));
        }
        let durations = args[2..]
            .iter()
            .map(|e| micros_of(e, &name))
            .collect::<Result<Vec<_>>>()?;
        let (slide, size, offset) = match (function, durations.as_slice()) {
            ("tumble", [size]) => (*size, *size, 0),
            ("tumble", [size, offset]) => (*size, *size, *offset),
            (_, [slide, size]) => (*slide, *size, 0),
            (_, [slide, size, offset]) => (*slide, *size, *offset),
            _ => unreachable!("argument counts checked"),
        };
        if slide <= 0 || size <= 0 {
            return Err(bind_err!(
                "{name}: window sizes and slides must be positive"
            ));
        }
        Ok(match function {
            "tumble" => tumble(input, ts, size, offset),
            _ => hop(input, ts, (slide, size, offset)),
        })
    }
}

/// The column `arg` names in `input`.
fn named_column(input: &LogicalPlan, arg: &ast::Expr, name: &str) -> Result<Expr> {
    let column = match arg {
        ast::Expr::Identifier(ident) => normalize(ident),
        other => return Err(bind_err!("{name} needs a column's name, not {other}")),
    };
    let schema = input.schema();
    let Some(index) = schema.fields().iter().position(|f| *f.name() == column) else {
        return Err(bind_err!("{name}: column {column} does not exist"));
    };
    Ok(Expr::column(
        index,
        column,
        schema.field(index).data_type().clone(),
    ))
}

/// The time column `arg` names in `input`, which must be a timestamp.
fn time_column(input: &LogicalPlan, arg: &ast::Expr, name: &str) -> Result<Expr> {
    let column = named_column(input, arg, name)?;
    let data_type = column.data_type();
    if !matches!(data_type, DataType::Timestamp(_, _)) {
        return Err(bind_err!(
            "{name}: the time column {arg} is {}, not a timestamp",
            super::type_name(&data_type)
        ));
    }
    Ok(column)
}

/// A constant interval as microseconds; months have no fixed length and are refused.
fn micros_of(arg: &ast::Expr, name: &str) -> Result<i64> {
    let empty = Scope::default();
    let mut ctx = Context::plain(&empty, "FROM");
    match bind_expr(arg, &mut ctx)? {
        Expr::Literal(ScalarValue::Interval {
            months: 0,
            days,
            nanos,
        }) => Ok(i64::from(days) * MICROS_PER_DAY + nanos / 1_000),
        Expr::Literal(ScalarValue::Interval { .. }) => {
            Err(unsupported!("{name} windows measured in months or years"))
        }
        _ => Err(bind_err!("{name}: {arg} is not a constant interval")),
    }
}

fn int(value: i64) -> Expr {
    Expr::Literal(ScalarValue::Int64(value))
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

/// The time as microseconds since the epoch.
fn micros(ts: &Expr) -> Expr {
    let DataType::Timestamp(_, zone) = ts.data_type() else {
        unreachable!("checked to be a timestamp");
    };
    ts.clone()
        .cast(&DataType::Timestamp(TimeUnit::Microsecond, zone))
        .cast(&DataType::Int64)
}

/// The start of the window of `step` (shifted by `offset`) that holds `micros`: the floor,
/// also for times before the epoch.
fn floor(micros: Expr, step: i64, offset: i64) -> Expr {
    let shifted = binary(BinaryOp::Minus, micros.clone(), int(offset));
    let rest = binary(BinaryOp::Modulo, shifted, int(step));
    let positive = binary(
        BinaryOp::Modulo,
        binary(BinaryOp::Plus, rest, int(step)),
        int(step),
    );
    binary(BinaryOp::Minus, micros, positive)
}

/// The first `width` columns of `input`, then `window_start` and `window_end` from `start`
/// (microseconds).
fn with_window(
    input: LogicalPlan,
    width: usize,
    start: Expr,
    size: i64,
    time: &DataType,
) -> LogicalPlan {
    let schema = input.schema();
    let mut exprs = Expr::columns_of(&schema);
    exprs.truncate(width);
    let mut names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    names.truncate(width);
    let end = binary(BinaryOp::Plus, start.clone(), int(size));
    exprs.push(start.cast(time));
    exprs.push(end.cast(time));
    names.extend(["window_start".to_string(), "window_end".to_string()]);
    input.project(exprs, names)
}

fn tumble(input: LogicalPlan, ts: Expr, size: i64, offset: i64) -> LogicalPlan {
    let start = floor(micros(&ts), size, offset);
    let width = input.schema().fields().len();
    with_window(input, width, start, size, &ts.data_type())
}

/// Every window holding the row's time: from the last one that starts at or before it, back
/// by `slide` while the window still reaches past it.
fn hop(input: LogicalPlan, ts: Expr, (slide, size, offset): (i64, i64, i64)) -> LogicalPlan {
    let width = input.schema().fields().len();
    let time = micros(&ts);
    let last = floor(time.clone(), slide, offset);
    let count = (size + slide - 1) / slide;
    let first = binary(BinaryOp::Minus, last.clone(), int((count - 1) * slide));
    let starts = Expr::Function {
        func: ScalarFunction::Series { inclusive: true },
        args: vec![first, last, int(slide)],
        data_type: list_of(DataType::Int64),
    };
    let unnested = input.unnest(starts, "window_start");
    let start = Expr::column(width, "window_start", DataType::Int64);
    let reaches = binary(
        BinaryOp::Gt,
        binary(BinaryOp::Plus, start.clone(), int(size)),
        time,
    );
    let held = LogicalPlan::Filter {
        input: Box::new(unnested),
        predicate: reaches,
    };
    with_window(held, width, start, size, &ts.data_type())
}

/// `input` with a window of functions `exprs` (each named) after its columns.
fn windowed(input: LogicalPlan, exprs: Vec<(WindowExpr, &str)>) -> LogicalPlan {
    let fields: Vec<Field> = exprs
        .iter()
        .map(|(e, name)| Field::new(*name, e.data_type.clone(), true))
        .collect();
    LogicalPlan::Window {
        schema: crate::types::schema_with(&input.schema(), fields),
        input: Box::new(input),
        exprs: exprs.into_iter().map(|(e, _)| e).collect(),
    }
}

fn window_call(
    func: WindowFunction,
    args: Vec<Expr>,
    keys: &[Expr],
    order: Option<&Expr>,
) -> WindowExpr {
    let data_type = match func {
        WindowFunction::Aggregate(aggregate) => aggregate.result_type(Some(&args[0].data_type())),
        _ => args[0].data_type(),
    };
    let order_by: Vec<SortKey> = order
        .map(|e| SortKey {
            expr: e.clone(),
            descending: false,
            nulls_first: false,
        })
        .into_iter()
        .collect();
    let frame = match order {
        Some(_) => Frame::rows(FrameBound::UnboundedPreceding, FrameBound::CurrentRow),
        None => Frame::range(
            FrameBound::UnboundedPreceding,
            FrameBound::UnboundedFollowing,
        ),
    };
    WindowExpr {
        func,
        args,
        partition_by: keys.to_vec(),
        order_by,
        frame,
        data_type,
        ignore_nulls: false,
    }
}

/// Each row with its session: per key, in time order, a row at least `gap` after the one
/// before starts a session (numbered by a running sum); a session's window is its least time
/// to its greatest plus the gap.
fn session(input: LogicalPlan, ts: Expr, gap: i64, keys: Vec<Expr>) -> LogicalPlan {
    let width = input.schema().fields().len();
    let time = micros(&ts);
    let before = window_call(
        WindowFunction::Lag,
        vec![
            time.clone(),
            int(1),
            Expr::Literal(ScalarValue::Null).cast(&DataType::Int64),
        ],
        &keys,
        Some(&ts),
    );
    let with_before = windowed(input, vec![(before, "previous")]);
    let previous = Expr::column(width, "previous", DataType::Int64);
    let starts = Expr::Binary {
        op: BinaryOp::Or,
        left: Box::new(Expr::IsNull(Box::new(previous.clone()))),
        right: Box::new(binary(
            BinaryOp::GtEq,
            binary(BinaryOp::Minus, time.clone(), previous),
            int(gap),
        )),
    };
    let flag = Expr::Case {
        branches: vec![(starts, int(1))],
        otherwise: Some(Box::new(int(0))),
        data_type: DataType::Int64,
    };
    let mut count = window_call(
        WindowFunction::Aggregate(AggregateFunction::Sum),
        vec![flag],
        &keys,
        Some(&ts),
    );
    // Rows of one time are peers: they take the same session whichever of them the sort put
    // first (a ROWS frame could split them around a session's start).
    count.frame.units = FrameUnits::Range;
    let number_type = count.data_type.clone();
    let numbered = windowed(with_before, vec![(count, "session")]);
    let number = Expr::column(width + 1, "session", number_type);
    let mut session_keys = keys.clone();
    session_keys.push(number);
    let least = window_call(
        WindowFunction::Aggregate(AggregateFunction::Min),
        vec![time.clone()],
        &session_keys,
        None,
    );
    let most = window_call(
        WindowFunction::Aggregate(AggregateFunction::Max),
        vec![time],
        &session_keys,
        None,
    );
    let bounded = windowed(numbered, vec![(least, "first"), (most, "last")]);
    let schema = bounded.schema();
    let mut exprs = Expr::columns_of(&schema);
    exprs.truncate(width);
    let mut names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    names.truncate(width);
    let time_type = ts.data_type();
    let first = Expr::column(width + 2, "first", DataType::Int64);
    let last = Expr::column(width + 3, "last", DataType::Int64);
    exprs.push(first.cast(&time_type));
    exprs.push(binary(BinaryOp::Plus, last, int(gap)).cast(&time_type));
    names.extend(["window_start".to_string(), "window_end".to_string()]);
    bounded.project(exprs, names)
}

/// The time column and size (microseconds) of a TUMBLE window's start as [`tumble`] writes
/// it, for a column of microsecond timestamps without a zone: a read of some windows' rows
/// can then read the times they span instead of every row. `None` for any other expression.
pub(crate) fn tumble_start_of(expr: &Expr) -> Option<(&Expr, i64)> {
    let Expr::Cast { expr: start, .. } = expr else {
        return None;
    };
    // start = time - ((((time - offset) % size) + size) % size)
    let (time, positive) = operands(start, BinaryOp::Minus)?;
    let (plus, outer_size) = operands(positive, BinaryOp::Modulo)?;
    let (rest, plus_size) = operands(plus, BinaryOp::Plus)?;
    let (shifted, rest_size) = operands(rest, BinaryOp::Modulo)?;
    let (shifted_time, _) = operands(shifted, BinaryOp::Minus)?;
    let size = match outer_size {
        Expr::Literal(ScalarValue::Int64(size)) if *size > 0 => *size,
        _ => return None,
    };
    if plus_size != outer_size || rest_size != outer_size || shifted_time != time {
        return None;
    }
    // `micros`: the column cast to Int64, through microseconds when it was not in them.
    let Expr::Cast {
        expr: column,
        data_type: DataType::Int64,
    } = time
    else {
        return None;
    };
    let microsecond_time = DataType::Timestamp(TimeUnit::Microsecond, None);
    match column.as_ref() {
        c @ Expr::Column { .. } if c.data_type() == microsecond_time => Some((c, size)),
        _ => None,
    }
}

/// The operands of `expr` when it is a binary `op`.
fn operands(expr: &Expr, op: BinaryOp) -> Option<(&Expr, &Expr)> {
    match expr {
        Expr::Binary {
            op: found,
            left,
            right,
        } if *found == op => Some((left, right)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tumble_start_is_known_by_its_column_and_size() {
        let time = DataType::Timestamp(TimeUnit::Microsecond, None);
        let ts = Expr::column(0, "ts", time.clone());
        let start = floor(micros(&ts), 10_000_000, 0).cast(&time);
        assert_eq!(tumble_start_of(&start), Some((&ts, 10_000_000)));
        let other = floor(micros(&ts), 10_000_000, 0).cast(&DataType::Int64);
        assert_eq!(tumble_start_of(&other), None, "not cast back to the time");
        assert_eq!(tumble_start_of(&ts), None);
    }
}
