//! Cardinality estimates for join ordering: a plan's rows and, per output column, its distinct
//! values, integer range and share of NULLs. Lake tables give their row counts and the column
//! statistics their files were written with (kept in the catalog: distinct-value sketches,
//! ranges, NULL counts). Parquet files read in place give their footers' row counts and integer
//! and date ranges, and the distinct values among their first rows, scaled to the file. Filters scale rows by a selectivity; an equi-join of two inputs has
//! `|L| * |R| / max(distinct(L.key), distinct(R.key))` rows, the textbook estimate for keys
//! whose values are spread evenly.

use arrow::datatypes::DataType;
use pondra_catalog::{Snapshot, TableStatistics};

use crate::expr::{BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;

/// What is estimated of one output column.
#[derive(Clone, Debug)]
pub struct ColumnEstimate {
    /// At most the rows; when not `known`, the rows (every value may be distinct).
    pub distinct: f64,
    /// Whether statistics bound `distinct`.
    pub known: bool,
    /// The column's range, for integer and date columns whose statistics give one.
    pub range: Option<(f64, f64)>,
    /// The share of the rows that are NULL, when statistics count them.
    pub nulls: Option<f64>,
}

/// What join ordering expected of one join: the rows of its probe and build sides, and of
/// its output. EXPLAIN prints it beside the rows each side produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinEstimate {
    pub probe: f64,
    pub build: f64,
    pub rows: f64,
}

impl std::fmt::Display for JoinEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "estimated=[probe={:.0} build={:.0} rows={:.0}]",
            self.probe, self.build, self.rows
        )
    }
}

/// A plan's estimated rows and columns.
#[derive(Clone, Debug)]
pub struct Estimate {
    pub rows: f64,
    pub columns: Vec<ColumnEstimate>,
}

impl ColumnEstimate {
    fn unknown(rows: f64) -> ColumnEstimate {
        ColumnEstimate {
            distinct: rows,
            known: false,
            range: None,
            nulls: None,
        }
    }
}

impl Estimate {
    /// `rows` rows of `width` columns about which nothing else is known: every value may be
    /// distinct.
    fn unknown(rows: f64, width: usize) -> Estimate {
        let rows = rows.max(1.0);
        Estimate {
            rows,
            columns: vec![ColumnEstimate::unknown(rows); width],
        }
    }

    /// The rows a filter of this selectivity keeps; no column has more distinct values than
    /// there are rows.
    pub fn filtered(mut self, selectivity: f64) -> Estimate {
        self.rows = (self.rows * selectivity.clamp(0.0, 1.0)).max(1.0);
        self.cap_distinct();
        self
    }

    fn cap_distinct(&mut self) {
        for column in &mut self.columns {
            column.distinct = column.distinct.min(self.rows).max(1.0);
        }
    }

    fn distinct_of(&self, expr: &Expr) -> f64 {
        match expr {
            Expr::Column { index, .. } => {
                self.columns.get(*index).map_or(self.rows, |c| c.distinct)
            }
            Expr::Cast { expr, .. } => self.distinct_of(expr),
            _ => self.rows,
        }
    }

    /// The distinct values of a key of several columns: at most the product of each one's,
    /// and at most the rows.
    fn distinct_of_key<'a>(&self, key: impl Iterator<Item = &'a Expr>) -> f64 {
        key.map(|e| self.distinct_of(e))
            .fold(1.0, |product, d| product * d)
            .min(self.rows)
            .max(1.0)
    }
}

/// The estimate of an inner equi-join of `left` and `right` on `keys` (left expression, right
/// expression); its columns are the left's, then the right's.
pub fn join_estimate(left: &Estimate, right: &Estimate, keys: &[(Expr, Expr)]) -> Estimate {
    // Of several key columns, the one with the most distinct values counts, and so do the
    // key's combinations on either side, at most that side's rows. Key columns are often
    // correlated (TPC-H's l_partkey and l_suppkey name one of 8 million partsupp rows, not
    // one of 200 billion pairs): multiplying each column's selectivity would underestimate
    // joins, which the cost search then favours; bounding the combinations by the rows keeps
    // that in check. The one column alone overestimates instead: it had each lineitem row
    // find every partsupp row of its part, four times too many, and q9 built its
    // lineitem side twice (ADR 0038). A key whose combinations repeat on both sides is still
    // underestimated.
    let rows = match keys
        .iter()
        .map(|(l, r)| left.distinct_of(l).max(right.distinct_of(r)))
        .max_by(f64::total_cmp)
    {
        None => left.rows * right.rows,
        Some(distinct) => {
            let combinations = left
                .distinct_of_key(keys.iter().map(|(l, _)| l))
                .max(right.distinct_of_key(keys.iter().map(|(_, r)| r)));
            left.rows * right.rows / distinct.max(combinations).max(1.0)
        }
    };
    let mut columns = left.columns.clone();
    columns.extend(right.columns.iter().cloned());
    // Equal keys have at most the distinct values of the side with fewer.
    for (l, r) in keys {
        if let (Expr::Column { index: li, .. }, Expr::Column { index: ri, .. }) = (l, r) {
            let ri = left.columns.len() + ri;
            if *li < columns.len() && ri < columns.len() {
                let fewer = columns[*li].distinct.min(columns[ri].distinct);
                columns[*li].distinct = fewer;
                columns[ri].distinct = fewer;
            }
        }
    }
    let mut estimate = Estimate {
        rows: rows.max(1.0),
        columns,
    };
    estimate.cap_distinct();
    estimate
}

/// The distinct values of a column of `rows` rows whose first `sample_rows` held
/// `sample_distinct`: scaled by the share of distinct values in the sample, which holds for
/// keys clustered as they are written (an order's lines together) and for keys that repeat
/// at random when capped by their range. A column with no range whose sample holds few values
/// often is a small domain seen whole (a status, a category), kept unscaled.
fn sampled_distinct(sample_rows: f64, sample_distinct: f64, rows: f64, span: Option<f64>) -> f64 {
    const SMALL_DOMAIN: f64 = 1000.0;
    if sample_rows >= rows {
        return sample_distinct.max(1.0);
    }
    if span.is_none() && sample_distinct <= SMALL_DOMAIN && sample_distinct * 8.0 <= sample_rows {
        return sample_distinct.max(1.0);
    }
    (rows * sample_distinct / sample_rows).max(1.0)
}

/// The estimate of a lake table of `rows` rows (log tail included) from its files' statistics,
/// which may cover fewer rows: their distinct values are scaled up as a sample's are.
fn table_estimate(rows: f64, statistics: &TableStatistics) -> Estimate {
    let rows = rows.max(1.0);
    let covered = (statistics.rows as f64).max(1.0);
    let columns = statistics
        .columns
        .iter()
        .map(|column| {
            let range = column
                .min
                .zip(column.max)
                .map(|(lo, hi)| (lo as f64, hi as f64));
            let span = range.map(|(lo, hi)| hi - lo + 1.0);
            let sketched = column.distinct.estimate().min(covered);
            let distinct = sampled_distinct(covered, sketched, rows, span)
                .min(span.unwrap_or(rows))
                .min(rows);
            ColumnEstimate {
                distinct: distinct.max(1.0),
                known: true,
                range,
                nulls: Some((column.nulls as f64 / covered).min(1.0)),
            }
        })
        .collect();
    Estimate { rows, columns }
}

/// The estimate of a plan's output.
pub fn estimate(plan: &LogicalPlan, snapshot: &Snapshot) -> Estimate {
    let width = plan.schema().fields().len();
    match plan {
        LogicalPlan::Scan { table, .. } => {
            let rows = snapshot.row_count(table.id) as f64;
            match snapshot.table_statistics(table.id) {
                Some(statistics) if statistics.columns.len() == width => {
                    table_estimate(rows, &statistics)
                }
                _ => Estimate::unknown(rows, width),
            }
        }
        LogicalPlan::ParquetScan { table } => {
            let rows = (table.rows() as f64).max(1.0);
            let columns = table
                .schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    let stats = table.columns.get(i);
                    let range = stats
                        .and_then(|s| s.min.zip(s.max))
                        .filter(|_| {
                            matches!(
                                field.data_type(),
                                DataType::Int32 | DataType::Int64 | DataType::Date32
                            )
                        })
                        .map(|(lo, hi)| (lo as f64, hi as f64));
                    let span = range.map(|(lo, hi)| hi - lo + 1.0);
                    let sampled = stats.and_then(|s| s.sample).map(|sample| {
                        sampled_distinct(sample.rows as f64, sample.distinct as f64, rows, span)
                    });
                    let distinct = match (span, sampled) {
                        (_, Some(sampled)) => sampled.min(span.unwrap_or(rows)),
                        (Some(span), None) => span.min(rows),
                        (None, None) => rows,
                    };
                    ColumnEstimate {
                        distinct,
                        known: range.is_some() || sampled.is_some(),
                        range,
                        nulls: None,
                    }
                })
                .collect();
            Estimate { rows, columns }
        }
        LogicalPlan::Union { inputs, .. } => Estimate::unknown(
            inputs.iter().map(|i| estimate(i, snapshot).rows).sum(),
            width,
        ),
        LogicalPlan::Input { .. }
        | LogicalPlan::WorkingTable { .. }
        | LogicalPlan::ChangeRecords { .. } => Estimate::unknown(1000.0, width),
        LogicalPlan::RecursiveCte { anchor, .. } => {
            Estimate::unknown(estimate(anchor, snapshot).rows * 10.0, width)
        }
        LogicalPlan::Values { rows, .. } => Estimate::unknown(rows.len() as f64, width),
        LogicalPlan::Filter { input, predicate } => {
            let input = estimate(input, snapshot);
            let selectivity = selectivity(predicate, &input);
            input.filtered(selectivity)
        }
        LogicalPlan::Project { input, exprs, .. } => {
            let input = estimate(input, snapshot);
            let columns = exprs
                .iter()
                .map(|e| match e {
                    Expr::Column { index, .. } if *index < input.columns.len() => {
                        input.columns[*index].clone()
                    }
                    _ => ColumnEstimate::unknown(input.rows),
                })
                .collect();
            Estimate {
                rows: input.rows,
                columns,
            }
        }
        LogicalPlan::Sort { input, .. } => estimate(input, snapshot),
        // Arrays of unknown length: as if each row had ten elements.
        LogicalPlan::Unnest { input, .. } => {
            Estimate::unknown(estimate(input, snapshot).rows * 10.0, width)
        }
        LogicalPlan::Window { input, .. } => {
            let mut estimate = estimate(input, snapshot);
            let extra = width - estimate.columns.len();
            estimate
                .columns
                .extend(Estimate::unknown(estimate.rows, extra).columns);
            estimate
        }
        LogicalPlan::Aggregate { input, group, .. } => {
            let input = estimate(input, snapshot);
            let groups = if group.is_empty() {
                1.0
            } else {
                input.distinct_of_key(group.iter())
            };
            let mut columns: Vec<ColumnEstimate> = group
                .iter()
                .map(|g| match g {
                    Expr::Column { index, .. } if *index < input.columns.len() => {
                        input.columns[*index].clone()
                    }
                    _ => ColumnEstimate::unknown(groups),
                })
                .collect();
            columns.extend(Estimate::unknown(groups, width - group.len()).columns);
            let mut estimate = Estimate {
                rows: groups,
                columns,
            };
            estimate.cap_distinct();
            estimate
        }
        LogicalPlan::Limit { input, fetch, .. } => {
            let input = estimate(input, snapshot);
            let kept = fetch.map_or(1.0, |f| (f as f64 / input.rows).min(1.0));
            input.filtered(kept)
        }
        // Not yet planned (estimates are asked of them only inside a relation of a join block
        // that contains a correlated subquery): a block as its largest relation, a subquery as
        // the join it becomes would be estimated without its keys.
        LogicalPlan::JoinBlock { relations, .. } => {
            let rows = relations
                .iter()
                .map(|r| estimate(r, snapshot).rows)
                .fold(1.0, f64::max);
            Estimate::unknown(rows, width)
        }
        LogicalPlan::Subquery { input, .. } => {
            let mut input = estimate(input, snapshot);
            let rows = input.rows;
            input.columns.resize(width, ColumnEstimate::unknown(rows));
            input
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            ..
        } => {
            let l = estimate(left, snapshot);
            let r = estimate(right, snapshot);
            match kind {
                JoinKind::Inner
                | JoinKind::Left
                | JoinKind::Full
                | JoinKind::Right
                | JoinKind::Single => {
                    let mut joined = join_estimate(&l, &r, on);
                    if let Some(filter) = filter {
                        let selectivity = selectivity(filter, &joined);
                        joined = joined.filtered(selectivity);
                    }
                    let floor = match kind {
                        JoinKind::Left | JoinKind::Single => l.rows,
                        JoinKind::Full => l.rows.max(r.rows),
                        JoinKind::Right => r.rows,
                        _ => 1.0,
                    };
                    joined.rows = joined.rows.max(floor);
                    joined
                }
                // Keys are assumed contained: the side with fewer distinct keys finds all of
                // them in the other.
                JoinKind::Semi if filter.is_none() && !on.is_empty() => {
                    let probe = l.distinct_of_key(on.iter().map(|(k, _)| k));
                    let build = r.distinct_of_key(on.iter().map(|(_, k)| k));
                    l.filtered(build / probe)
                }
                JoinKind::Semi | JoinKind::Anti | JoinKind::NullAwareAnti => l,
                JoinKind::RightSemi | JoinKind::RightAnti => r,
                JoinKind::Mark | JoinKind::MarkIn => {
                    let mut marked = l;
                    marked.columns.push(ColumnEstimate {
                        distinct: 2.0,
                        known: true,
                        range: None,
                        nulls: None,
                    });
                    marked
                }
            }
        }
    }
}

/// `plan` with what is expected of it recorded, when it is a join: the estimates of its
/// sides and of itself.
pub fn with_expected_join(plan: LogicalPlan, snapshot: &Snapshot) -> LogicalPlan {
    let LogicalPlan::Join { left, right, .. } = &plan else {
        return plan;
    };
    let expected = JoinEstimate {
        probe: estimate(left, snapshot).rows,
        build: estimate(right, snapshot).rows,
        rows: estimate(&plan, snapshot).rows,
    };
    plan.with_join_estimate(expected)
}

/// The fraction of rows a predicate keeps: equality with a constant keeps one distinct value
/// in `distinct`, a range comparison with a constant the part of the column's range it
/// covers, conjunctions multiply; the rest are the customary guesses.
pub fn selectivity(predicate: &Expr, input: &Estimate) -> f64 {
    const UNKNOWN: f64 = 0.25;
    const EQUAL: f64 = 0.1;
    const RANGE: f64 = 1.0 / 3.0;
    let column = |e: &Expr| match e {
        Expr::Column { index, .. } => input.columns.get(*index),
        _ => None,
    };
    let correlated = |e: &Expr| e.any(&|x| matches!(x, Expr::OuterColumn { .. }));
    let s = match predicate {
        // A condition on an enclosing query's column becomes a join key when the subquery is
        // decorrelated: it does not filter the subquery's own join block.
        Expr::Binary { left, right, .. } if correlated(left) || correlated(right) => 1.0,
        Expr::Binary { op, left, right } => match op {
            BinaryOp::And => conjunction_selectivity(predicate, input),
            BinaryOp::Or => {
                let (a, b) = (selectivity(left, input), selectivity(right, input));
                a + b - a * b
            }
            BinaryOp::Eq | BinaryOp::NotEq => {
                let one = match (column(left), column(right)) {
                    (Some(a), Some(b)) => 1.0 / a.distinct.max(b.distinct),
                    (Some(c), None) | (None, Some(c)) if c.known => 1.0 / c.distinct,
                    _ => EQUAL,
                };
                if *op == BinaryOp::Eq { one } else { 1.0 - one }
            }
            BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => {
                let (c, value, below) =
                    match (column(left), number(right), column(right), number(left)) {
                        (Some(c), Some(v), _, _) => {
                            (c, v, matches!(op, BinaryOp::Lt | BinaryOp::LtEq))
                        }
                        (_, _, Some(c), Some(v)) => {
                            (c, v, matches!(op, BinaryOp::Gt | BinaryOp::GtEq))
                        }
                        _ => return RANGE,
                    };
                match c.range {
                    Some((lo, hi)) if hi > lo => {
                        let below_fraction = ((value - lo) / (hi - lo)).clamp(0.0, 1.0);
                        if below {
                            below_fraction
                        } else {
                            1.0 - below_fraction
                        }
                    }
                    _ => RANGE,
                }
            }
            _ => UNKNOWN,
        },
        Expr::Not(inner) => 1.0 - selectivity(inner, input),
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let hit = match column(expr) {
                Some(c) if c.known => (list.len() as f64 / c.distinct).min(1.0),
                _ => (list.len() as f64 * EQUAL).min(0.5),
            };
            if *negated { 1.0 - hit } else { hit }
        }
        Expr::Like { negated, .. } => {
            if *negated {
                0.9
            } else {
                0.1
            }
        }
        Expr::IsNull(e) => column(e).and_then(|c| c.nulls).unwrap_or(0.05),
        Expr::IsNotNull(e) => 1.0 - column(e).and_then(|c| c.nulls).unwrap_or(0.05),
        _ => UNKNOWN,
    };
    s.clamp(0.0001, 1.0)
}

/// The selectivity of a conjunction: bounds on one column (`d >= x AND d < y`) together, as
/// the share of the column's range between them, and every other conjunct apart. Multiplied
/// apart, two bounds of a three-month window of seven years of dates would keep a fifth of
/// the rows instead of a twenty-fifth.
fn conjunction_selectivity(predicate: &Expr, input: &Estimate) -> f64 {
    const RANGE: f64 = 1.0 / 3.0;
    // Per column: the greatest lower bound, the least upper bound, and how many bounds.
    let mut bounds: Vec<(usize, Option<f64>, Option<f64>, i32)> = Vec::new();
    let mut selectivity_of_rest = 1.0;
    for part in predicate.clone().conjuncts() {
        let Some((index, value, upper)) = range_bound(&part) else {
            selectivity_of_rest *= selectivity(&part, input);
            continue;
        };
        let at = match bounds.iter().position(|b| b.0 == index) {
            Some(at) => at,
            None => {
                bounds.push((index, None, None, 0));
                bounds.len() - 1
            }
        };
        let bound = &mut bounds[at];
        match upper {
            true => bound.2 = Some(bound.2.map_or(value, |u: f64| u.min(value))),
            false => bound.1 = Some(bound.1.map_or(value, |l: f64| l.max(value))),
        }
        bound.3 += 1;
    }
    bounds
        .iter()
        .map(
            |&(index, lower, upper, count)| match input.columns.get(index).and_then(|c| c.range) {
                Some((lo, hi)) if hi > lo => {
                    let from = lower.unwrap_or(lo).max(lo);
                    let to = upper.unwrap_or(hi).min(hi);
                    ((to - from) / (hi - lo)).clamp(0.0, 1.0)
                }
                _ => RANGE.powi(count),
            },
        )
        .product::<f64>()
        * selectivity_of_rest
}

/// A comparison of a column with a constant: the column, the constant on the scale of
/// integer and date statistics, and whether it bounds the column from above.
fn range_bound(expr: &Expr) -> Option<(usize, f64, bool)> {
    let Expr::Binary { op, left, right } = expr else {
        return None;
    };
    let upper = match op {
        BinaryOp::Lt | BinaryOp::LtEq => true,
        BinaryOp::Gt | BinaryOp::GtEq => false,
        _ => return None,
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column { index, .. }, constant) => Some((*index, number(constant)?, upper)),
        (constant, Expr::Column { index, .. }) => Some((*index, number(constant)?, !upper)),
        _ => None,
    }
}

/// A constant's value on the scale of integer and date statistics: a literal, or casts and
/// date arithmetic of literals (`date '1994-01-01' + interval '1' year`).
fn number(expr: &Expr) -> Option<f64> {
    integer_constant(expr).map(|v| v as f64)
}

/// The exact value of a constant integer, date or timestamp expression (dates in days,
/// timestamps without a zone in microseconds), as statistics of such columns hold them; none
/// for other constants and for NULL.
pub fn integer_constant(expr: &Expr) -> Option<i64> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Date32Type, Int32Type, Int64Type, TimeUnit};
    let value = constant(expr)?;
    if value.is_null(0) {
        return None;
    }
    match value.data_type() {
        DataType::Int32 => Some(i64::from(value.as_primitive::<Int32Type>().value(0))),
        DataType::Date32 => Some(i64::from(value.as_primitive::<Date32Type>().value(0))),
        DataType::Int64 => Some(value.as_primitive::<Int64Type>().value(0)),
        DataType::Timestamp(TimeUnit::Microsecond, None) => Some(
            value
                .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                .value(0),
        ),
        _ => None,
    }
}

/// A constant expression computed as an array of one value, if it is one this knows.
fn constant(expr: &Expr) -> Option<arrow::array::ArrayRef> {
    use arrow::compute::kernels::numeric;
    match expr {
        Expr::Literal(value) => Some(value.to_array(1)),
        Expr::Cast { expr, data_type } => arrow::compute::cast(&constant(expr)?, data_type).ok(),
        Expr::Binary { op, left, right } => {
            let (l, r) = (constant(left)?, constant(right)?);
            match op {
                BinaryOp::Plus => numeric::add(&l, &r).ok(),
                BinaryOp::Minus => numeric::sub(&l, &r).ok(),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::DataType;

    use super::*;
    use crate::scalar::ScalarValue;

    fn column(index: usize) -> Expr {
        Expr::Column {
            index,
            name: format!("c{index}"),
            data_type: DataType::Int64,
        }
    }

    fn compare(op: BinaryOp, index: usize, value: i64) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(column(index)),
            right: Box::new(Expr::Literal(ScalarValue::Int64(value))),
        }
    }

    fn and(left: Expr, right: Expr) -> Expr {
        Expr::Binary {
            op: BinaryOp::And,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    #[test]
    fn bounds_on_one_column_keep_the_share_between_them() {
        // Column 0 spans 0..1000, column 1 has no range.
        let ranged = |distinct, range| ColumnEstimate {
            distinct,
            known: true,
            range,
            nulls: None,
        };
        let input = Estimate {
            rows: 1000.0,
            columns: vec![ranged(1000.0, Some((0.0, 1000.0))), ranged(10.0, None)],
        };
        let window = and(
            compare(BinaryOp::GtEq, 0, 300),
            compare(BinaryOp::Lt, 0, 340),
        );
        assert!((selectivity(&window, &input) - 0.04).abs() < 1e-9);
        // The tighter of two bounds on a side counts; a bound past the range keeps all.
        let tighter = and(window.clone(), compare(BinaryOp::Lt, 0, 320));
        assert!((selectivity(&tighter, &input) - 0.02).abs() < 1e-9);
        let past = and(
            compare(BinaryOp::Gt, 0, -5),
            compare(BinaryOp::LtEq, 0, 5000),
        );
        assert!((selectivity(&past, &input) - 1.0).abs() < 1e-9);
        // Bounds on a column without a range are guesses, multiplied; other conjuncts apart.
        let unranged = and(compare(BinaryOp::Gt, 1, 5), compare(BinaryOp::Lt, 1, 9));
        assert!((selectivity(&unranged, &input) - 1.0 / 9.0).abs() < 1e-9);
        let mixed = and(window, compare(BinaryOp::Eq, 1, 7));
        assert!((selectivity(&mixed, &input) - 0.04 / 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_key_of_two_columns_finds_one_of_the_combinations_a_side_holds() {
        let known = |distinct| ColumnEstimate {
            distinct,
            known: true,
            range: None,
            nulls: None,
        };
        // lineitem's (partkey, suppkey) against partsupp's: 2,000,000 parts, 100,000
        // suppliers, and 8,000,000 partsupp rows, each pair once.
        let lineitem = Estimate {
            rows: 60_000_000.0,
            columns: vec![known(2_000_000.0), known(100_000.0)],
        };
        let partsupp = Estimate {
            rows: 8_000_000.0,
            columns: vec![known(2_000_000.0), known(100_000.0)],
        };
        let keys = [(column(0), column(0)), (column(1), column(1))];
        // The key takes lineitem's rows as its combinations, at most: 60 million rows times 8
        // million over 60 million (the true join has 60 million; one column alone gives 240).
        let joined = join_estimate(&lineitem, &partsupp, &keys);
        assert!((joined.rows - 8_000_000.0).abs() < 1.0, "{}", joined.rows);
        // One key column alone: each lineitem row finds its part's four partsupp rows.
        let joined = join_estimate(&lineitem, &partsupp, &keys[..1]);
        assert!((joined.rows - 240_000_000.0).abs() < 1.0, "{}", joined.rows);
    }
}
