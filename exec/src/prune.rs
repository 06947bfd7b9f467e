//! Skipping a scan's row groups and files whose statistics prove that a filter keeps none of
//! their rows: each integer, date or timestamp column's least and greatest value against comparisons of
//! the column with constants (and, in `scan_filter`, against the least and greatest key of
//! the build side of each join above the scan). Within a row group that may match, the same
//! test on each page's range in the Parquet page index skips pages (ADR 0043).

use std::ops::Range;

use arrow::datatypes::{DataType, Schema, TimeUnit};
use pondra_planner::{BinaryOp, Expr, integer_constant};
use pondra_storage::ParquetFooter;

use crate::morsel::MayHold;
use crate::scan_filter::ScanFilter;

/// Whether any row whose columns lie within `range(column)` (least and greatest value, when
/// known) could satisfy `predicate`, a filter over `schema`. False only when the ranges rule
/// every row out: a comparison never holds for a value outside them, nor for NULL.
pub fn may_match(
    predicate: &Expr,
    schema: &Schema,
    range: &dyn Fn(usize) -> Option<(i64, i64)>,
) -> bool {
    match predicate {
        Expr::Binary {
            op: BinaryOp::And,
            left,
            right,
        } => may_match(left, schema, range) && may_match(right, schema, range),
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => may_match(left, schema, range) || may_match(right, schema, range),
        Expr::Binary { op, left, right } => {
            let (column, value, op) = match (
                ranged_column(left, schema),
                integer_constant(right),
                ranged_column(right, schema),
                integer_constant(left),
            ) {
                (Some(c), Some(v), _, _) => (c, v, *op),
                (_, _, Some(c), Some(v)) => match flipped(*op) {
                    Some(op) => (c, v, op),
                    None => return true,
                },
                _ => return true,
            };
            let Some((lo, hi)) = range(column) else {
                return true;
            };
            match op {
                BinaryOp::Eq => lo <= value && value <= hi,
                BinaryOp::Lt => lo < value,
                BinaryOp::LtEq => lo <= value,
                BinaryOp::Gt => hi > value,
                BinaryOp::GtEq => hi >= value,
                _ => true,
            }
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } => {
            let Some(column) = ranged_column(expr, schema) else {
                return true;
            };
            let Some((lo, hi)) = range(column) else {
                return true;
            };
            list.iter().any(|item| match integer_constant(item) {
                Some(value) => lo <= value && value <= hi,
                None => true,
            })
        }
        _ => true,
    }
}

/// `a op b` as `b op' a`.
fn flipped(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Eq => BinaryOp::Eq,
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        _ => return None,
    })
}

/// The column an expression reads as it is, or widened to a larger integer: one of a signed
/// integer or date type, whose statistics are on the scale of `integer_constant`.
pub(crate) fn ranged_column(expr: &Expr, schema: &Schema) -> Option<usize> {
    let (index, widened_to) = match expr {
        Expr::Column { index, .. } => (*index, None),
        Expr::Cast {
            expr,
            data_type: to @ (DataType::Int32 | DataType::Int64),
        } => match expr.as_ref() {
            Expr::Column { index, .. } => (*index, Some(to)),
            _ => return None,
        },
        _ => return None,
    };
    let from = schema.fields().get(index)?.data_type();
    let ranged = matches!(
        (from, widened_to),
        (
            DataType::Date32 | DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64,
            None
        ) | (DataType::Timestamp(TimeUnit::Microsecond, None), None)
            | (
                DataType::Int8 | DataType::Int16 | DataType::Int32,
                Some(DataType::Int32)
            )
            | (
                DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64,
                Some(DataType::Int64)
            )
    );
    ranged.then_some(index)
}

/// The columns whose ranges `may_match` or a join's key bounds can test: those of the
/// `predicate` and the integer or date join keys of `filter`.
pub fn ranged_columns(
    predicate: Option<&Expr>,
    filter: Option<&ScanFilter<'_>>,
    schema: &Schema,
) -> Vec<usize> {
    let mut columns: Vec<usize> = predicate.map(Expr::column_indices).unwrap_or_default();
    for join in filter.map(ScanFilter::joins).unwrap_or_default() {
        columns.extend(
            join.keys
                .iter()
                .filter_map(|key| ranged_column(key, schema)),
        );
    }
    columns.sort_unstable();
    columns.dedup();
    columns
}

/// The rows of `row_group` left once the pages `may_hold` rules out are skipped, tested column
/// by column among `columns` with that column's page ranges alone; and how many pages were
/// skipped. `None` when no page is.
pub fn pages_kept(
    footer: &ParquetFooter,
    row_group: usize,
    columns: &[usize],
    may_hold: &MayHold<'_>,
) -> (Option<Vec<Range<usize>>>, usize) {
    let mut kept: Option<Vec<Range<usize>>> = None;
    let mut skipped = 0;
    for &column in columns {
        let Some(pages) = footer.page_ranges(row_group, column) else {
            continue;
        };
        let mut column_kept: Vec<Range<usize>> = Vec::new();
        for page in &pages {
            if !may_hold(&|c| if c == column { page.values } else { None }) {
                skipped += 1;
                continue;
            }
            match column_kept.last_mut() {
                Some(last) if last.end == page.rows.start => last.end = page.rows.end,
                _ => column_kept.push(page.rows.clone()),
            }
        }
        if column_kept.len() == 1 && column_kept[0] == (0..footer.row_group_rows(row_group)) {
            continue;
        }
        kept = Some(match kept {
            None => column_kept,
            Some(earlier) => intersect(&earlier, &column_kept),
        });
    }
    (kept, skipped)
}

/// The rows in both lists of ordered, disjoint ranges.
pub(crate) fn intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::Field;
    use pondra_planner::ScalarValue;

    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("n", DataType::Int32, true),
            Field::new("d", DataType::Date32, true),
            Field::new("f", DataType::Float64, true),
        ])
    }

    fn column(index: usize) -> Expr {
        let schema = schema();
        let field = schema.field(index);
        Expr::column(index, field.name(), field.data_type().clone())
    }

    fn compare(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    fn int(value: i32) -> Expr {
        Expr::Literal(ScalarValue::Int32(value))
    }

    /// Rows with n in 10..=20, d unknown, f in any range.
    fn may(predicate: &Expr) -> bool {
        may_match(predicate, &schema(), &|c| (c == 0).then_some((10, 20)))
    }

    #[test]
    fn comparisons_outside_the_range_rule_rows_out() {
        use BinaryOp::*;
        for (op, value, expected) in [
            (Eq, 9, false),
            (Eq, 10, true),
            (Eq, 21, false),
            (Lt, 10, false),
            (Lt, 11, true),
            (LtEq, 10, true),
            (Gt, 20, false),
            (Gt, 19, true),
            (GtEq, 20, true),
            (GtEq, 21, false),
            (NotEq, 15, true),
        ] {
            assert_eq!(
                may(&compare(op, column(0), int(value))),
                expected,
                "{op:?} {value}"
            );
        }
        // The constant on the left: 25 > n.
        assert!(!may(&compare(Gt, int(5), column(0))));
        assert!(may(&compare(Gt, int(25), column(0))));
    }

    #[test]
    fn and_or_and_in_lists_combine() {
        use BinaryOp::*;
        let out = compare(Gt, column(0), int(30));
        let inside = compare(Eq, column(0), int(15));
        let unknown = compare(Eq, column(1), int(0));
        assert!(!may(&compare(And, inside.clone(), out.clone())));
        assert!(may(&compare(Or, inside.clone(), out.clone())));
        assert!(!may(&compare(Or, out.clone(), out.clone())));
        // A column without statistics rules nothing out.
        assert!(may(&compare(And, unknown.clone(), inside)));
        let list = |values: &[i32], negated| Expr::InList {
            expr: Box::new(column(0)),
            list: values.iter().map(|v| int(*v)).collect(),
            negated,
        };
        assert!(!may(&list(&[1, 2, 30], false)));
        assert!(may(&list(&[1, 12], false)));
        assert!(may(&list(&[1, 2], true)));
    }

    #[test]
    fn only_integer_and_date_columns_are_compared() {
        // A float column's statistics are not on the integer scale: never used.
        let float = compare(BinaryOp::Gt, column(2), int(100));
        assert!(may_match(&float, &schema(), &|_| Some((0, 1))));
        // A widening cast keeps the column's values.
        let widened = Expr::Cast {
            expr: Box::new(column(0)),
            data_type: DataType::Int64,
        };
        let big = Expr::Literal(ScalarValue::Int64(1 << 40));
        assert!(!may(&compare(BinaryOp::GtEq, widened, big)));
    }

    #[test]
    fn row_ranges_intersect() {
        let a = [0..10, 20..30, 40..50];
        let b = [5..25, 28..45];
        assert_eq!(intersect(&a, &b), [5..10, 20..25, 28..30, 40..45]);
        assert!(intersect(&a, &[]).is_empty());
        let all = [0..50, 50..100];
        assert_eq!(intersect(&all, &[10..20, 30..40]), [10..20, 30..40]);
    }
}
