//! Semi and anti joins (EXISTS, IN and NOT EXISTS in WHERE) are planned above the block of
//! inner joins of their query. One that reads columns of only one relation of the block is
//! moved down onto that relation unless the relation is estimated to have more rows than the
//! block: the rows it removes then never reach the other joins (TPC-H q18's IN subquery keeps
//! 57 orders of 1.5 million before lineitem is joined to them), or unless the relation is a
//! table the subquery is far smaller than (its scan then drops rows as it reads them). Where
//! the rows it filters are
//! estimated far fewer than the subquery's, it becomes a right semi (anti) join, which builds the
//! filtered rows and streams the subquery's through them.

use pondra_catalog::Snapshot;

use crate::cardinality::{estimate, with_expected_join};
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::optimizer::key_domain::is_table;

/// A semi join whose subquery is estimated at least this many times smaller than a table read
/// in the block is moved onto the table even when the table is larger than the block: right
/// above a Parquet scan, its keys filter rows as they are read, before the scan decodes the
/// rows' other columns (TPC-H q2's subquery reads 1.6 million rows of partsupp for 31,000
/// when its semi join waits above the join to supplier).
const SCAN_FILTER_RATIO: f64 = 4.0;

/// `plan`, with its top semi or anti join moved down where it is cheaper.
pub fn push_down_semi_join(plan: LogicalPlan, snapshot: &Snapshot) -> LogicalPlan {
    let LogicalPlan::Join {
        left,
        right,
        kind: kind @ (JoinKind::Semi | JoinKind::Anti),
        on,
        filter,
        ..
    } = plan
    else {
        return plan;
    };
    let budget = estimate(&left, snapshot).rows;
    let semi = SemiJoin {
        subquery: *right,
        kind,
        on,
        filter,
    };
    semi.place(*left, budget, snapshot)
}

/// A semi or anti join waiting for the input it filters.
struct SemiJoin {
    subquery: LogicalPlan,
    kind: JoinKind,
    /// Keys: an expression over the input, one over the subquery.
    on: Vec<(Expr, Expr)>,
    /// Over the input's columns, then the subquery's.
    filter: Option<Expr>,
}

impl SemiJoin {
    /// The semi join over `input`, moved further down when one side of an inner join (or the
    /// input of a projection of columns) has all it reads and no more rows than `budget`.
    fn place(self, input: LogicalPlan, budget: f64, snapshot: &Snapshot) -> LogicalPlan {
        let width = input.schema().fields().len();
        let reads = self.input_columns(width);
        match input {
            LogicalPlan::Project {
                input,
                exprs,
                schema,
            } if exprs.iter().all(|e| matches!(e, Expr::Column { .. })) => {
                let inner_width = input.schema().fields().len();
                let source = |c: usize| match &exprs[c] {
                    Expr::Column { index, .. } => *index,
                    _ => unreachable!("only columns"),
                };
                let moved = self.remap(width, inner_width, source);
                LogicalPlan::Project {
                    input: Box::new(moved.place(*input, budget, snapshot)),
                    exprs,
                    schema,
                }
            }
            LogicalPlan::Join {
                left,
                right,
                kind: JoinKind::Inner,
                on,
                filter,
                ..
            } => {
                let left_width = left.schema().fields().len();
                let right_width = right.schema().fields().len();
                let (mut left, mut right) = (*left, *right);
                let subquery_rows = estimate(&self.subquery, snapshot).rows;
                let fits = |side: &LogicalPlan| {
                    let rows = estimate(side, snapshot).rows;
                    rows <= budget
                        || (self.kind == JoinKind::Semi
                            && is_table(side)
                            && subquery_rows * SCAN_FILTER_RATIO <= rows)
                };
                if reads.iter().all(|c| *c < left_width) && fits(&left) {
                    let budget = estimate(&left, snapshot).rows;
                    let moved = self.remap(width, left_width, |c| c);
                    left = moved.place(left, budget, snapshot);
                } else if reads.iter().all(|c| *c >= left_width) && fits(&right) {
                    let budget = estimate(&right, snapshot).rows;
                    let moved = self.remap(width, right_width, |c| c - left_width);
                    right = moved.place(right, budget, snapshot);
                } else {
                    let join = LogicalPlan::join(left, right, JoinKind::Inner, on, filter);
                    return self.over(join, snapshot);
                }
                // A side now filtered by the semi join changes what the join is expected to
                // give.
                let join = LogicalPlan::join(left, right, JoinKind::Inner, on, filter);
                with_expected_join(join, snapshot)
            }
            other => self.over(other, snapshot),
        }
    }

    /// The columns of an input `width` wide that the join reads.
    fn input_columns(&self, width: usize) -> Vec<usize> {
        let mut columns: Vec<usize> = self
            .on
            .iter()
            .flat_map(|(probe, _)| probe.column_indices())
            .collect();
        if let Some(filter) = &self.filter {
            columns.extend(filter.column_indices().into_iter().filter(|c| *c < width));
        }
        columns
    }

    /// The join for an input `new_width` wide whose column `source(c)` is column `c` of the
    /// current input, `width` wide.
    fn remap(self, width: usize, new_width: usize, source: impl Fn(usize) -> usize) -> SemiJoin {
        let on = self
            .on
            .into_iter()
            .map(|(probe, sub)| (probe.remap_columns(&source), sub))
            .collect();
        let filter = self.filter.map(|f| {
            f.remap_columns(&|c| match c < width {
                true => source(c),
                false => c - width + new_width,
            })
        });
        SemiJoin {
            subquery: self.subquery,
            kind: self.kind,
            on,
            filter,
        }
    }

    /// The join over `input`, as a right semi (anti) join that builds `input` when it is
    /// estimated clearly smaller than the subquery's rows: a subquery's filters on aggregates
    /// are estimated loosely, and building the larger side by mistake costs more than probing
    /// with it.
    fn over(self, input: LogicalPlan, snapshot: &Snapshot) -> LogicalPlan {
        const MARGIN: f64 = 4.0;
        let input_rows = estimate(&input, snapshot).rows;
        if input_rows * MARGIN >= estimate(&self.subquery, snapshot).rows {
            return LogicalPlan::join(input, self.subquery, self.kind, self.on, self.filter);
        }
        let input_width = input.schema().fields().len();
        let subquery_width = self.subquery.schema().fields().len();
        let kind = match self.kind {
            JoinKind::Semi => JoinKind::RightSemi,
            _ => JoinKind::RightAnti,
        };
        let on = self
            .on
            .into_iter()
            .map(|(probe, sub)| (sub, probe))
            .collect();
        let filter = self.filter.map(|f| {
            f.remap_columns(&|c| match c < input_width {
                true => c + subquery_width,
                false => c - input_width,
            })
        });
        LogicalPlan::join(self.subquery, input, kind, on, filter)
    }
}
