//! ASOF joins: each left row with the right row of equal keys whose time is the closest on the
//! side the inequality allows (`l.ts >= r.ts`: the latest right row at or before the left
//! row), or none. DuckDB's form, `a ASOF [LEFT] JOIN b ON a.k = b.k AND a.ts >= b.ts`, and
//! Snowflake's, `a ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k`.
//!
//! Bound as plans the executor already runs: the left rows are numbered, joined to every
//! right row of their keys that the inequality allows, and each keeps its best match, the
//! first by time in its number's partition. That costs the pairs the inequality allows per key;
//! a merge of both sides in time order is the refinement. Among right rows tied on the best
//! time, the least by its values is kept. In a materialized view the left rows are told apart
//! by their values instead, which a view's stream follows as a window by partition (ADR
//! 0054): there the right rows are made distinct first (a window too), and each left row keeps
//! the least of the distinct right rows tied on the best time, as the query does.

use arrow::datatypes::{DataType, Field};
use pondra_parser::{DUCKDB_ASOF, DUCKDB_ASOF_LEFT, ast};

use super::from::outer_join;
use crate::expr::{
    BinaryOp, Expr, Frame, FrameBound, JoinKind, SortKey, WindowExpr, WindowFunction,
};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err};

/// How an ASOF join reads its condition: whether the inequality is in `ON` (DuckDB's form,
/// which the parser marks) or in `MATCH_CONDITION`, and whether left rows without a match stay.
pub(super) enum AsofForm<'a> {
    DuckDb { keep_unmatched: bool },
    Snowflake { match_condition: &'a ast::Expr },
}

/// The form of `match_condition`, as the parser left it.
pub(super) fn asof_form(match_condition: &ast::Expr) -> AsofForm<'_> {
    let marker = match match_condition {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    };
    match marker {
        Some(DUCKDB_ASOF) => AsofForm::DuckDb {
            keep_unmatched: false,
        },
        Some(DUCKDB_ASOF_LEFT) => AsofForm::DuckDb {
            keep_unmatched: true,
        },
        _ => AsofForm::Snowflake { match_condition },
    }
}

/// The inequality of an ASOF join, as `left op right` with `left` over the left input.
struct Inequality {
    op: BinaryOp,
    right: Expr,
}

/// How an ASOF join tells its left rows apart, to keep one match each.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LeftRows {
    /// By a number given to each: one right row per left row.
    Numbered,
    /// By their values, in a materialized view, whose stream computes a window by partition
    /// (ADR 0054): over distinct right rows, each copy of a left row keeps the one match.
    ByValue,
}

/// The ASOF join of `left` (the first `left_width` columns of `condition`'s columns) and
/// `right` on `condition`: equal keys and one inequality between the sides.
pub(super) fn asof_join(
    left: LogicalPlan,
    right: LogicalPlan,
    condition: Expr,
    left_width: usize,
    (keep_unmatched, left_rows): (bool, LeftRows),
) -> Result<LogicalPlan> {
    let usage = "an ASOF join takes equalities and one inequality (>=, >, <= or <) between its two sides, such as ON a.k = b.k AND a.ts >= b.ts";
    let side = |e: &Expr| {
        let columns = e.column_indices();
        match (
            columns.iter().all(|c| *c < left_width),
            columns.iter().all(|c| *c >= left_width),
        ) {
            _ if columns.is_empty() => None,
            (true, _) => Some(false),
            (_, true) => Some(true),
            _ => None,
        }
    };
    let mut inequality = None;
    let mut rest = Vec::new();
    for conjunct in condition.conjuncts() {
        let Expr::Binary {
            op,
            left: l,
            right: r,
        } = &conjunct
        else {
            return Err(bind_err!("{usage}, not {conjunct}"));
        };
        let flipped = match op {
            BinaryOp::Eq => {
                rest.push(conjunct.clone());
                continue;
            }
            BinaryOp::GtEq => BinaryOp::LtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Lt => BinaryOp::Gt,
            _ => return Err(bind_err!("{usage}, not {conjunct}")),
        };
        let found = match (side(l), side(r)) {
            (Some(false), Some(true)) => Inequality {
                op: *op,
                right: (**r).clone(),
            },
            (Some(true), Some(false)) => Inequality {
                op: flipped,
                right: (**l).clone(),
            },
            _ => return Err(bind_err!("{usage}, not {conjunct}")),
        };
        if inequality.replace(found).is_some() {
            return Err(bind_err!("{usage}: it has more than one inequality"));
        }
        rest.push(conjunct.clone());
    }
    let Some(inequality) = inequality else {
        return Err(bind_err!("{usage}: it has no inequality"));
    };
    let left_schema = left.schema();
    let right_schema = right.schema();
    // In a view, a right row and its exact copies are one match: each left row keeps one.
    let right = match left_rows {
        LeftRows::Numbered => right,
        LeftRows::ByValue => distinct_by_window(right),
    };
    // Numbered, the left rows gain a column, and the right side's columns move one along.
    let numbered = usize::from(left_rows == LeftRows::Numbered);
    let left = match left_rows {
        LeftRows::Numbered => with_window(
            left,
            WindowExpr {
                func: WindowFunction::RowNumber,
                args: Vec::new(),
                partition_by: Vec::new(),
                order_by: Vec::new(),
                frame: whole_partition(),
                data_type: DataType::Int64,
                ignore_nulls: false,
            },
            "asof_row",
        ),
        LeftRows::ByValue => left,
    };
    let shift = |e: Expr| e.remap_columns(&|c| if c >= left_width { c + numbered } else { c });
    let condition = Expr::and_all(rest.into_iter().map(shift).collect()).expect("an inequality");
    let kind = match keep_unmatched {
        true => JoinKind::Left,
        false => JoinKind::Inner,
    };
    let joined = outer_join(
        left,
        right,
        kind,
        Some(condition),
        left_width + numbered,
        false,
    )?;
    // The best match first: the latest right time for `>=` and `>`, the earliest for the others.
    let (func, partition_by) = match left_rows {
        LeftRows::Numbered => (
            WindowFunction::RowNumber,
            vec![Expr::column(left_width, "asof_row", DataType::Int64)],
        ),
        LeftRows::ByValue => {
            let columns = left_schema.fields().iter().enumerate();
            let by_value = columns.map(|(i, f)| Expr::column(i, f.name(), f.data_type().clone()));
            (WindowFunction::Rank, by_value.collect())
        }
    };
    // Of right rows tied on the best time, the least by their values: one match per left
    // row, the same in a query and in a view that follows it.
    let mut order_by = vec![SortKey {
        expr: shift(inequality.right),
        descending: matches!(inequality.op, BinaryOp::GtEq | BinaryOp::Gt),
        nulls_first: false,
    }];
    let right_start = left_width + numbered;
    order_by.extend(
        right_schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| SortKey {
                expr: Expr::column(right_start + i, f.name(), f.data_type().clone()),
                descending: false,
                nulls_first: false,
            }),
    );
    let best = WindowExpr {
        func,
        args: Vec::new(),
        partition_by,
        order_by,
        frame: whole_partition(),
        data_type: DataType::Int64,
        ignore_nulls: false,
    };
    let ranked = with_window(joined, best, "asof_rank");
    let width = left_width + numbered + right_schema.fields().len();
    let first = LogicalPlan::Filter {
        input: Box::new(ranked),
        predicate: Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(Expr::column(width, "asof_rank", DataType::Int64)),
            right: Box::new(Expr::Literal(ScalarValue::Int64(1))),
        },
    };
    let fields = left_schema.fields().iter().chain(right_schema.fields());
    let positions = (0..left_width).chain(left_width + numbered..width);
    let (exprs, names) = fields
        .zip(positions)
        .map(|(f, i)| {
            (
                Expr::column(i, f.name(), f.data_type().clone()),
                f.name().clone(),
            )
        })
        .unzip();
    Ok(first.project(exprs, names))
}

/// `plan`'s rows, each distinct row once: the first of the rows equal in every column, as a
/// window by partition, which a view's stream follows.
fn distinct_by_window(plan: LogicalPlan) -> LogicalPlan {
    let schema = plan.schema();
    let width = schema.fields().len();
    let columns: Vec<Expr> = Expr::columns_of(&schema);
    let numbered = with_window(
        plan,
        WindowExpr {
            func: WindowFunction::RowNumber,
            args: Vec::new(),
            partition_by: columns.clone(),
            order_by: Vec::new(),
            frame: whole_partition(),
            data_type: DataType::Int64,
            ignore_nulls: false,
        },
        "asof_copy",
    );
    let first = LogicalPlan::Filter {
        input: Box::new(numbered),
        predicate: Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(Expr::column(width, "asof_copy", DataType::Int64)),
            right: Box::new(Expr::Literal(ScalarValue::Int64(1))),
        },
    };
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    first.project(columns, names)
}

fn whole_partition() -> Frame {
    Frame::rows(
        FrameBound::UnboundedPreceding,
        FrameBound::UnboundedFollowing,
    )
}

fn with_window(input: LogicalPlan, expr: WindowExpr, name: &str) -> LogicalPlan {
    let field = Field::new(name, expr.data_type.clone(), true);
    LogicalPlan::Window {
        schema: crate::types::schema_with(&input.schema(), vec![field]),
        input: Box::new(input),
        exprs: vec![expr],
    }
}
