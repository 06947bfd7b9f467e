//! `FETCH FIRST n ROWS WITH TIES` (SQL:2008): the first `n` rows in the query's order and
//! every row tied with the last of them, as the rows whose rank in that order is at most
//! `offset + n`, then the offset's rows skipped.

use arrow::datatypes::{DataType, Field};

use crate::expr::{BinaryOp, Expr, Frame, FrameBound, SortKey, WindowExpr, WindowFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err};

/// `plan` (ordered by its ORDER BY) cut after `skip + count` rows and their ties.
pub(super) fn with_ties(plan: LogicalPlan, skip: usize, count: usize) -> Result<LogicalPlan> {
    let last_rank = skip.saturating_add(count);
    let ranked = match plan {
        LogicalPlan::Sort {
            input,
            keys,
            fetch: None,
        } => ordered_by_rank(*input, keys, last_rank),
        // The ORDER BY read columns the select list drops: the projection sits above it.
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => match *input {
            LogicalPlan::Sort {
                input,
                keys,
                fetch: None,
            } => LogicalPlan::Project {
                input: Box::new(ordered_by_rank(*input, keys, last_rank)),
                exprs,
                schema,
            },
            _ => return Err(bind_err!("FETCH ... WITH TIES needs an ORDER BY")),
        },
        _ => return Err(bind_err!("FETCH ... WITH TIES needs an ORDER BY")),
    };
    Ok(LogicalPlan::Limit {
        input: Box::new(ranked),
        skip,
        fetch: None,
    })
}

/// The rows of `input` whose rank by `keys` is at most `last_rank`, sorted by `keys`.
fn ordered_by_rank(input: LogicalPlan, keys: Vec<SortKey>, last_rank: usize) -> LogicalPlan {
    let schema = input.schema();
    let width = schema.fields().len();
    let rank = WindowExpr {
        func: WindowFunction::Rank,
        args: vec![],
        partition_by: vec![],
        order_by: keys.clone(),
        frame: Frame::rows(
            FrameBound::UnboundedPreceding,
            FrameBound::UnboundedFollowing,
        ),
        data_type: DataType::Int64,
        ignore_nulls: false,
    };
    let field = Field::new("tie_rank", DataType::Int64, true);
    let ranked = LogicalPlan::Window {
        schema: crate::types::schema_with(&schema, vec![field]),
        input: Box::new(input),
        exprs: vec![rank],
    };
    let kept = LogicalPlan::Filter {
        input: Box::new(ranked),
        predicate: Expr::Binary {
            op: BinaryOp::LtEq,
            left: Box::new(Expr::column(width, "tie_rank", DataType::Int64)),
            right: Box::new(Expr::Literal(ScalarValue::Int64(last_rank as i64))),
        },
    };
    let (exprs, names) = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (
                Expr::column(i, f.name(), f.data_type().clone()),
                f.name().clone(),
            )
        })
        .unzip();
    LogicalPlan::Sort {
        input: Box::new(kept.project(exprs, names)),
        keys,
        fetch: None,
    }
}
