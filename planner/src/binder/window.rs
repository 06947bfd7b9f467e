//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::expr::*;
use crate::expr::{
    AggregateFunction, Expr, Frame, FrameBound, SortKey, WindowExpr, WindowFunction,
};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

pub(super) fn bind_window(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let binder = match ctx {
        Context::Plain {
            binder: Some(b), ..
        }
        | Context::Aggregated(_, Some(b)) => *b,
        _ => return Err(unsupported!("window functions here")),
    };
    let ast::WindowType::WindowSpec(spec) = over else {
        return Err(unsupported!("named windows"));
    };
    if function.filter.is_some() {
        return Err(unsupported!("FILTER on window functions"));
    }
    let raw_args = match &function.args {
        ast::FunctionArguments::List(list) => list.args.clone(),
        _ => Vec::new(),
    };
    let star = matches!(
        raw_args.as_slice(),
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]
    );
    let mut args = Vec::new();
    if !star {
        for a in function_args(function) {
            args.push(bind_expr(a, ctx)?);
        }
    }
    let (func, data_type) = match name {
        "row_number" => (WindowFunction::RowNumber, DataType::Int64),
        "rank" => (WindowFunction::Rank, DataType::Int64),
        "dense_rank" => (WindowFunction::DenseRank, DataType::Int64),
        "lag" | "lead" => {
            if args.is_empty() || args.len() > 3 {
                return Err(bind_err!("{name} takes 1 to 3 arguments"));
            }
            let t = args[0].data_type();
            let offset = match args.get(1) {
                None => 1,
                Some(Expr::Literal(ScalarValue::Int32(n))) if *n >= 0 => *n as i64,
                Some(Expr::Literal(ScalarValue::Int64(n))) if *n >= 0 => *n,
                Some(other) => {
                    return Err(bind_err!("{name} needs a constant offset, not {other}"));
                }
            };
            let default = args
                .get(2)
                .cloned()
                .unwrap_or(Expr::Literal(ScalarValue::Null));
            args = vec![
                args[0].clone(),
                Expr::Literal(ScalarValue::Int64(offset)),
                default.cast(&t),
            ];
            let func = if name == "lag" {
                WindowFunction::Lag
            } else {
                WindowFunction::Lead
            };
            (func, t)
        }
        other => match aggregate_function(other) {
            Some(AggregateFunction::Count) if star => (
                WindowFunction::Aggregate(AggregateFunction::CountStar),
                DataType::Int64,
            ),
            Some(AggregateFunction::StringAgg | AggregateFunction::GroupingId) => {
                return Err(unsupported!("{other} as a window function"));
            }
            Some(agg) => {
                if args.len() != 1 {
                    return Err(bind_err!("{other} takes one argument"));
                }
                let t = args[0].data_type();
                if matches!(agg, AggregateFunction::Sum | AggregateFunction::Avg) && !is_numeric(&t)
                {
                    return Err(bind_err!("{other}({}) is not defined", type_name(&t)));
                }
                (WindowFunction::Aggregate(agg), agg.result_type(Some(&t)))
            }
            None => return Err(bind_err!("window function {other} does not exist")),
        },
    };
    let partition_by = spec
        .partition_by
        .iter()
        .map(|e| bind_expr(e, ctx))
        .collect::<Result<Vec<_>>>()?;
    let mut order_by = Vec::new();
    for item in &spec.order_by {
        let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
        order_by.push(SortKey {
            expr: bind_expr(&item.expr, ctx)?,
            descending,
            nulls_first: item.options.nulls_first.unwrap_or(descending),
        });
    }
    let frame = window_frame(spec.window_frame.as_ref(), !order_by.is_empty())?;
    let window = WindowExpr {
        func,
        args,
        partition_by,
        order_by,
        frame,
        data_type: data_type.clone(),
    };
    let index = binder.add_window(window)?;
    Ok(Expr::column(WINDOW_BASE + index, name, data_type))
}

pub(super) fn window_frame(frame: Option<&ast::WindowFrame>, ordered: bool) -> Result<Frame> {
    let Some(frame) = frame else {
        let end = if ordered {
            FrameBound::CurrentRow
        } else {
            FrameBound::UnboundedFollowing
        };
        return Ok(Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end,
        });
    };
    let rows = match frame.units {
        ast::WindowFrameUnits::Rows => true,
        ast::WindowFrameUnits::Range => false,
        ast::WindowFrameUnits::Groups => return Err(unsupported!("GROUPS frames")),
    };
    let bound = |b: &ast::WindowFrameBound| -> Result<FrameBound> {
        let count = |e: &Option<Box<ast::Expr>>| -> Result<Option<u64>> {
            match e.as_deref() {
                None => Ok(None),
                Some(ast::Expr::Value(v)) => match &v.value {
                    ast::Value::Number(n, _) => n
                        .parse::<u64>()
                        .map(Some)
                        .map_err(|_| bind_err!("invalid frame offset {n}")),
                    other => Err(bind_err!("invalid frame offset {other}")),
                },
                Some(other) => Err(unsupported!("the frame offset {other}")),
            }
        };
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(e) => match count(e)? {
                None => FrameBound::UnboundedPreceding,
                Some(n) => FrameBound::Preceding(n),
            },
            ast::WindowFrameBound::Following(e) => match count(e)? {
                None => FrameBound::UnboundedFollowing,
                Some(n) => FrameBound::Following(n),
            },
        })
    };
    let start = bound(&frame.start_bound)?;
    let end = match &frame.end_bound {
        Some(b) => bound(b)?,
        None => FrameBound::CurrentRow,
    };
    if !rows
        && (matches!(start, FrameBound::Preceding(_) | FrameBound::Following(_))
            || matches!(end, FrameBound::Preceding(_) | FrameBound::Following(_)))
    {
        return Err(unsupported!("RANGE frames with offsets"));
    }
    Ok(Frame { rows, start, end })
}
