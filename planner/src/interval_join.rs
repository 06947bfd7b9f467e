//! Interval joins in a view's stream (ADR 0056): a join whose condition bounds one side's
//! time by the other's, where the other side's time is a watermarked table's. Such a bound
//! lets each side's join state drop the rows no row still to come on the other side can match.

use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit};
use pondra_catalog::{Snapshot, TableDef};

use crate::binder::time_windows::tumble_start_of;
use crate::expr::{BinaryOp, Expr};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::view::load_view;
use crate::view_stream::window_chain;

/// When rows of one join state can no longer match: those whose time (state column `column`)
/// lies below the other side's watermark plus `offset` microseconds. The other side's time
/// (its column `late_column`) is the watermark column of `table`, or a window's bound over it
/// in a view, which every row not late holds at or above the table's watermark plus
/// `late_shift`; the other side's rows below that are late, and the join takes none of them.
#[derive(Clone, Debug)]
pub struct StateExpiry {
    /// The state column holding the side's time.
    pub column: usize,
    /// The watermarked table of the other side's time.
    pub table: Arc<TableDef>,
    /// The other side's input column holding its time.
    pub late_column: usize,
    /// The other side's watermark is the table's plus this (minus a TUMBLE window's size for
    /// its `window_start`, 0 for the column itself and a window's `window_end`).
    pub late_shift: i64,
    /// Added to the other side's watermark: the bound below which the side's rows expire.
    pub offset: i64,
}

impl StateExpiry {
    /// The other side's watermark for the table's `watermark`: its rows below it are late.
    pub fn late_below(&self, watermark: i64) -> i64 {
        watermark.saturating_add(self.late_shift)
    }

    /// The time below which the side's rows expire, for the table's `watermark`.
    pub fn bound(&self, watermark: i64) -> i64 {
        self.late_below(watermark).saturating_add(self.offset)
    }
}

/// A bound `left_time - right_time >= lo` (or `<= hi`) the join condition states.
struct Bound {
    left: usize,
    right: usize,
    difference: i64,
}

/// The expiries of the left and right states of an inner join of `left` and `right` whose
/// condition beyond its keys is `filter` (over the left's columns, then the right's), with
/// `key_counts` state columns of keys before each side's columns.
pub(crate) fn state_expiries(
    left: &LogicalPlan,
    right: &LogicalPlan,
    filter: &Expr,
    key_counts: [usize; 2],
    snapshot: &Snapshot,
) -> [Option<StateExpiry>; 2] {
    let left_width = left.schema().fields().len();
    let mut lower: Option<Bound> = None;
    let mut upper: Option<Bound> = None;
    for conjunct in filter.clone().conjuncts() {
        let Some((bound, is_lower)) = time_bound(&conjunct, left_width) else {
            continue;
        };
        // Of several bounds the tightest holds: the greatest lower, the least upper.
        match is_lower {
            true if lower
                .as_ref()
                .is_none_or(|b| bound.difference > b.difference) =>
            {
                lower = Some(bound)
            }
            false
                if upper
                    .as_ref()
                    .is_none_or(|b| bound.difference < b.difference) =>
            {
                upper = Some(bound)
            }
            _ => {}
        }
    }
    // left >= right + lo: a right row at or above the right watermark W matches left rows
    // at or above W + lo only.
    let left_expiry = lower.and_then(|b| {
        let (table, late_shift) = watermark_source(right, b.right, snapshot)?;
        Some(StateExpiry {
            column: key_counts[0] + b.left,
            table,
            late_column: b.right,
            late_shift,
            offset: b.difference,
        })
    });
    // left <= right + hi: a left row at or above the left watermark W matches right rows at
    // or above W - hi only.
    let right_expiry = upper.and_then(|b| {
        let (table, late_shift) = watermark_source(left, b.left, snapshot)?;
        Some(StateExpiry {
            column: key_counts[1] + b.right,
            table,
            late_column: b.left,
            late_shift,
            offset: b.difference.checked_neg()?,
        })
    });
    [left_expiry, right_expiry]
}

/// `conjunct` as a bound on a left time less a right time, and whether it is a lower bound.
fn time_bound(conjunct: &Expr, left_width: usize) -> Option<(Bound, bool)> {
    let Expr::Binary { op, left, right } = conjunct else {
        return None;
    };
    let is_lower = match op {
        BinaryOp::GtEq | BinaryOp::Gt => true,
        BinaryOp::LtEq | BinaryOp::Lt => false,
        _ => return None,
    };
    let (a, a_offset) = shifted_time(left)?;
    let (b, b_offset) = shifted_time(right)?;
    // a + a_offset (op) b + b_offset, so a - b (op) b_offset - a_offset; a strict bound is
    // kept as the inclusive one, which only keeps more state.
    let difference = b_offset.checked_sub(a_offset)?;
    match (a < left_width, b < left_width) {
        (true, false) => Some((
            Bound {
                left: a,
                right: b - left_width,
                difference,
            },
            is_lower,
        )),
        (false, true) => Some((
            Bound {
                left: b,
                right: a - left_width,
                difference: difference.checked_neg()?,
            },
            !is_lower,
        )),
        _ => None,
    }
}

/// `expr` as a microsecond timestamp column plus a constant interval: the column and the
/// interval in microseconds.
fn shifted_time(expr: &Expr) -> Option<(usize, i64)> {
    match expr {
        Expr::Column {
            index, data_type, ..
        } if is_micros(data_type) => Some((*index, 0)),
        Expr::Binary {
            op: op @ (BinaryOp::Plus | BinaryOp::Minus),
            left,
            right,
        } => {
            let (column, offset) = shifted_time(left)?;
            let Expr::Literal(ScalarValue::Interval {
                months: 0,
                days,
                nanos,
            }) = right.as_ref()
            else {
                return None;
            };
            let micros = i64::from(*days)
                .checked_mul(86_400_000_000)?
                .checked_add(nanos / 1_000)?;
            let micros = match op {
                BinaryOp::Plus => micros,
                _ => micros.checked_neg()?,
            };
            Some((column, offset.checked_add(micros)?))
        }
        _ => None,
    }
}

fn is_micros(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Timestamp(TimeUnit::Microsecond, _))
}

/// The watermarked table whose watermark column `plan`'s column `index` holds, unchanged or
/// as the bound of a TUMBLE window over it in a view (ADR 0056), and how far below the
/// table's watermark the column of a row not late may lie (see [`StateExpiry::late_shift`]).
fn watermark_source(
    plan: &LogicalPlan,
    index: usize,
    snapshot: &Snapshot,
) -> Option<(Arc<TableDef>, i64)> {
    match plan {
        LogicalPlan::Scan { table, .. } if table.is_materialized_view() => {
            let view = load_view(snapshot, table).ok()?;
            let (input, key) = view.group_key_of(index)?;
            expr_source(input, key, snapshot)
        }
        LogicalPlan::Scan { table, .. } => {
            let declared = table.watermark.as_ref()?;
            let column = table.columns.get(index)?;
            (column.name == declared.column).then(|| (table.clone(), 0))
        }
        LogicalPlan::Filter { input, .. } => watermark_source(input, index, snapshot),
        LogicalPlan::Project { input, exprs, .. } => {
            expr_source(input, exprs.get(index)?, snapshot)
        }
        LogicalPlan::Join {
            left, right, kind, ..
        } if *kind == crate::expr::JoinKind::Inner => {
            let width = left.schema().fields().len();
            match index < width {
                true => watermark_source(left, index, snapshot),
                false => watermark_source(right, index - width, snapshot),
            }
        }
        LogicalPlan::Window { .. } => {
            let (_, base) = window_chain(plan)?;
            let width = base.schema().fields().len();
            (index < width).then(|| watermark_source(base, index, snapshot))?
        }
        _ => None,
    }
}

/// [`watermark_source`] for `expr` over `input`'s columns: a column, or a TUMBLE window's
/// start (at most its size below the time) or end (above the time) over one.
fn expr_source(
    input: &LogicalPlan,
    expr: &Expr,
    snapshot: &Snapshot,
) -> Option<(Arc<TableDef>, i64)> {
    let column_source = |column: &Expr, shift: i64| {
        let Expr::Column { index, .. } = column else {
            return None;
        };
        let (table, late_shift) = watermark_source(input, *index, snapshot)?;
        Some((table, late_shift.checked_add(shift)?))
    };
    match expr {
        Expr::Column { index, .. } => watermark_source(input, *index, snapshot),
        Expr::Cast {
            expr: inner,
            data_type,
        } if is_micros(data_type) => {
            if let Some((time, size)) = tumble_start_of(expr) {
                return column_source(time, size.checked_neg()?);
            }
            let Expr::Binary {
                op: BinaryOp::Plus,
                left: start,
                right: end_size,
            } = inner.as_ref()
            else {
                return None;
            };
            let start = Expr::Cast {
                expr: start.clone(),
                data_type: data_type.clone(),
            };
            let (time, size) = tumble_start_of(&start)?;
            match end_size.as_ref() {
                Expr::Literal(ScalarValue::Int64(end)) if *end == size => column_source(time, 0),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(index: usize) -> Expr {
        Expr::column(
            index,
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, None),
        )
    }

    fn minus_seconds(expr: Expr, seconds: i64) -> Expr {
        Expr::Binary {
            op: BinaryOp::Minus,
            left: Box::new(expr),
            right: Box::new(Expr::Literal(ScalarValue::Interval {
                months: 0,
                days: 0,
                nanos: seconds * 1_000_000_000,
            })),
        }
    }

    fn compare(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    #[test]
    fn between_bounds_the_left_time_from_both_sides() {
        // left.ts (0) BETWEEN right.ts (2) - 60 s AND right.ts, with two left columns.
        let lower = compare(BinaryOp::GtEq, time(0), minus_seconds(time(2), 60));
        let (bound, is_lower) = time_bound(&lower, 2).unwrap();
        assert!(is_lower);
        assert_eq!(
            (bound.left, bound.right, bound.difference),
            (0, 0, -60_000_000)
        );
        let upper = compare(BinaryOp::LtEq, time(0), time(2));
        let (bound, is_lower) = time_bound(&upper, 2).unwrap();
        assert!(!is_lower);
        assert_eq!(bound.difference, 0);
    }

    #[test]
    fn a_bound_written_the_other_way_round_turns_over() {
        // right.ts (3) - 10 s <= left.ts (1): left - right >= -10 s, a lower bound.
        let reversed = compare(BinaryOp::LtEq, minus_seconds(time(3), 10), time(1));
        let (bound, is_lower) = time_bound(&reversed, 2).unwrap();
        assert!(is_lower);
        assert_eq!(
            (bound.left, bound.right, bound.difference),
            (1, 1, -10_000_000)
        );
    }

    #[test]
    fn bounds_within_one_side_or_by_months_are_not_intervals() {
        let same_side = compare(BinaryOp::GtEq, time(0), time(1));
        assert!(time_bound(&same_side, 2).is_none());
        let months = Expr::Binary {
            op: BinaryOp::Minus,
            left: Box::new(time(2)),
            right: Box::new(Expr::Literal(ScalarValue::Interval {
                months: 1,
                days: 0,
                nanos: 0,
            })),
        };
        assert!(time_bound(&compare(BinaryOp::GtEq, time(0), months), 2).is_none());
    }
}
