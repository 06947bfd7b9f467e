//! Top-N: a sort under a LIMIT (or under projections under it) keeps only the rows the limit
//! lets through, so the sort holds `skip + fetch` rows instead of all of them.

use pondra_catalog::Snapshot;

use crate::logical::LogicalPlan;
use crate::tree::TreeNode;

/// Marks every sort that a limit above it cuts short.
pub fn sort_only_what_limits_keep(plan: &mut LogicalPlan, _: &Snapshot) -> crate::Result<()> {
    plan.transform_up(&mut |node| {
        if let LogicalPlan::Limit {
            input,
            skip,
            fetch: Some(fetch),
        } = node
        {
            keep_first_sorted(input, *skip + *fetch);
        }
        Ok(())
    })
}

/// Makes the sort at the top of `plan` (under projections) keep only its first `rows` rows.
fn keep_first_sorted(plan: &mut LogicalPlan, rows: usize) {
    match plan {
        LogicalPlan::Sort { fetch, .. } => *fetch = Some(fetch.map_or(rows, |f| f.min(rows))),
        LogicalPlan::Project { input, .. } => keep_first_sorted(input, rows),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::expr::{Expr, SortKey};

    fn values() -> LogicalPlan {
        LogicalPlan::Values {
            schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)])),
            rows: Vec::new(),
        }
    }

    fn sorted(input: LogicalPlan) -> LogicalPlan {
        LogicalPlan::Sort {
            input: Box::new(input),
            keys: vec![SortKey {
                expr: Expr::column(0, "x", DataType::Int64),
                descending: false,
                nulls_first: false,
            }],
            fetch: None,
        }
    }

    fn limited(input: LogicalPlan, skip: usize, fetch: Option<usize>) -> LogicalPlan {
        LogicalPlan::Limit {
            input: Box::new(input),
            skip,
            fetch,
        }
    }

    fn optimized(mut plan: LogicalPlan) -> String {
        let snapshot = Snapshot::default();
        sort_only_what_limits_keep(&mut plan, &snapshot).unwrap();
        plan.to_string()
    }

    #[test]
    fn a_limit_over_a_sort_keeps_its_offset_and_count() {
        let plan = limited(sorted(values()), 5, Some(10));
        assert_eq!(
            optimized(plan),
            "Limit: skip=5 fetch=Some(10)\n  TopN 15: x#0\n    Values: 0 rows\n"
        );
    }

    #[test]
    fn the_limit_reaches_through_projections_and_the_tighter_limit_wins() {
        let projected = sorted(values()).project(
            vec![Expr::column(0, "x", DataType::Int64)],
            vec!["x".to_string()],
        );
        let plan = limited(limited(projected, 0, Some(3)), 0, Some(7));
        assert_eq!(
            optimized(plan),
            "Limit: skip=0 fetch=Some(7)\n  Limit: skip=0 fetch=Some(3)\n    Project: x#0\n      TopN 3: x#0\n        Values: 0 rows\n"
        );
    }

    #[test]
    fn sorts_without_a_limit_or_under_other_nodes_sort_everything() {
        let unlimited = limited(sorted(values()), 4, None);
        assert!(optimized(unlimited).contains("Sort: x#0"));
        let filtered = LogicalPlan::Filter {
            input: Box::new(sorted(values())),
            predicate: Expr::Literal(crate::scalar::ScalarValue::Boolean(true)),
        };
        assert!(optimized(limited(filtered, 0, Some(1))).contains("Sort: x#0"));
    }
}
