//! Event-time windows as table functions (ADR 0054), in RisingWave's short form:
//! `TUMBLE(t, ts, size [, offset])` and `HOP(t, ts, slide, size [, offset])`. The parser reads
//! Flink's `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))` as the same call. Each gives the rows
//! of `t` (a table, view or CTE) with `window_start` and `window_end` after their columns:
//! TUMBLE one window per row, HOP every window of `size` (starting each `slide`) that holds
//! the row's time. A window holds the times from its start (included) to its end (excluded),
//! and windows start at multiples of their slide from the epoch, shifted by `offset`.
//!
//! Both are a projection of each row (HOP an unnest of its windows first), so a view over them
//! follows every change of `t` as any projection does.

use arrow::datatypes::{DataType, TimeUnit};
use pondra_parser::ast;

use super::Binder;
use super::expr::{Context, bind_expr};
use super::scope::{Scope, normalize};
use crate::expr::{BinaryOp, Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{Result, bind_err, unsupported};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// True for the names `time_window` binds.
pub fn is_time_window(name: &str) -> bool {
    matches!(name, "tumble" | "hop")
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
            _ => "HOP(table, time column, slide, size [, offset])",
        };
        let lengths = match function {
            "tumble" => 3..=4,
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

/// The time column `arg` names in `input`: its position and type, which must be a timestamp.
fn time_column(input: &LogicalPlan, arg: &ast::Expr, name: &str) -> Result<Expr> {
    let column = match arg {
        ast::Expr::Identifier(ident) => normalize(ident),
        other => return Err(bind_err!("{name} needs a time column's name, not {other}")),
    };
    let schema = input.schema();
    let Some(index) = schema.fields().iter().position(|f| *f.name() == column) else {
        return Err(bind_err!("{name}: column {column} does not exist"));
    };
    let data_type = schema.field(index).data_type().clone();
    if !matches!(data_type, DataType::Timestamp(_, _)) {
        return Err(bind_err!(
            "{name}: the time column {column} is {}, not a timestamp",
            super::type_name(&data_type)
        ));
    }
    Ok(Expr::column(index, column, data_type))
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
