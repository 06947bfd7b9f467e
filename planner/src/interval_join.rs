//! Interval joins in a view's stream (ADR 0056): a join whose condition bounds one side's
//! time by the other's, where the other side's time is a watermarked table's. Such a bound
//! lets each side's join state drop the rows no row still to come on the other side can match.

use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit};
use pondra_catalog::TableDef;

use crate::expr::{BinaryOp, Expr};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::view_stream::window_chain;

/// When rows of one join state can no longer match: those whose time (state column `column`)
/// lies below the watermark of `table`, the other side's, plus `offset` microseconds. The
/// other side's rows behind that watermark (its column `late_column`) are late, and the join
/// takes none of them.
#[derive(Clone, Debug)]
pub struct StateExpiry {
    /// The state column holding the side's time.
    pub column: usize,
    /// The watermarked table of the other side's time.
    pub table: Arc<TableDef>,
    /// The other side's input column holding that table's watermark column.
    pub late_column: usize,
    /// Added to the watermark: the bound below which the side's rows expire.
    pub offset: i64,
}

impl StateExpiry {
    /// The time below which the side's rows expire, for a watermark of the other side.
    pub fn bound(&self, watermark: i64) -> i64 {
        watermark.saturating_add(self.offset)
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
        let table = watermark_source(right, b.right)?;
        Some(StateExpiry {
            column: key_counts[0] + b.left,
            table,
            late_column: b.right,
            offset: b.difference,
        })
    });
    // left <= right + hi: a left row at or above the left watermark W matches right rows at
    // or above W - hi only.
    let right_expiry = upper.and_then(|b| {
        let table = watermark_source(left, b.left)?;
        Some(StateExpiry {
            column: key_counts[1] + b.right,
            table,
            late_column: b.left,
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

/// The watermarked table whose watermark column `plan`'s column `index` holds unchanged.
fn watermark_source(plan: &LogicalPlan, index: usize) -> Option<Arc<TableDef>> {
    match plan {
        LogicalPlan::Scan { table, .. } => {
            let declared = table.watermark.as_ref()?;
            let column = table.columns.get(index)?;
            (column.name == declared.column).then(|| table.clone())
        }
        LogicalPlan::Filter { input, .. } => watermark_source(input, index),
        LogicalPlan::Project { input, exprs, .. } => match exprs.get(index)? {
            Expr::Column { index, .. } => watermark_source(input, *index),
            _ => None,
        },
        LogicalPlan::Join {
            left, right, kind, ..
        } if *kind == crate::expr::JoinKind::Inner => {
            let width = left.schema().fields().len();
            match index < width {
                true => watermark_source(left, index),
                false => watermark_source(right, index - width),
            }
        }
        LogicalPlan::Window { .. } => {
            let (_, base) = window_chain(plan)?;
            let width = base.schema().fields().len();
            (index < width).then(|| watermark_source(base, index))?
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
