//! Build sides of outer joins (ADR 0026). A hash join builds its right input and streams its
//! left. An outer join binds with the input it keeps whole as written: on the left of a left
//! join, on the right of a right join. The kept input is built when the other is much larger
//! (a right join, which streams the larger input and emits the kept rows nothing matched at the
//! end), and streamed otherwise (a left join). A join is turned by swapping its inputs and
//! projecting the columns back in order.

use pondra_catalog::Snapshot;

use crate::cardinality::estimate;
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::tree::TreeNode;

/// How many times larger than the input an outer join keeps whole the other input must be
/// estimated for the kept one to be built.
const BUILD_KEPT_RATIO: f64 = 2.0;

/// Turns every left and right join whose kept input should be on the other side.
pub fn choose_build_sides(plan: &mut LogicalPlan, snapshot: &Snapshot) -> crate::Result<()> {
    plan.transform_up(&mut |node| {
        if let Some(kind) = turned_kind(node, snapshot) {
            let joined = std::mem::replace(node, LogicalPlan::empty());
            *node = swapped(joined, kind);
        }
        Ok(())
    })
}

/// The kind `node` becomes with its inputs swapped, when it is an outer join that should be.
fn turned_kind(node: &LogicalPlan, snapshot: &Snapshot) -> Option<JoinKind> {
    let LogicalPlan::Join {
        left,
        right,
        kind,
        on,
        ..
    } = node
    else {
        return None;
    };
    let much_larger = |other: &LogicalPlan, kept: &LogicalPlan| {
        estimate(other, snapshot).rows > BUILD_KEPT_RATIO * estimate(kept, snapshot).rows
    };
    match kind {
        // Without keys, the join checks every pair: the kept input streams.
        JoinKind::Left if !on.is_empty() && much_larger(right, left) => Some(JoinKind::Right),
        JoinKind::Right if on.is_empty() || !much_larger(left, right) => Some(JoinKind::Left),
        _ => None,
    }
}

/// The join `joined` as `kind` with its inputs swapped, then its columns back in order: the
/// first input's, then the second's.
fn swapped(joined: LogicalPlan, kind: JoinKind) -> LogicalPlan {
    let LogicalPlan::Join {
        left,
        right,
        on,
        filter,
        ..
    } = joined
    else {
        unreachable!("only joins are swapped");
    };
    let left_width = left.schema().fields().len();
    let right_width = right.schema().fields().len();
    let swap = |c: usize| match c < left_width {
        true => c + right_width,
        false => c - left_width,
    };
    let on = on.into_iter().map(|(l, r)| (r, l)).collect();
    let filter = filter.map(|f| f.remap_columns(&swap));
    let turned = LogicalPlan::join(*right, *left, kind, on, filter);
    let schema = turned.schema();
    let (exprs, names): (Vec<Expr>, Vec<String>) = (0..left_width + right_width)
        .map(|c| {
            let field = schema.field(swap(c));
            let column = Expr::column(swap(c), field.name(), field.data_type().clone());
            (column, field.name().clone())
        })
        .unzip();
    turned.project(exprs, names)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::scalar::ScalarValue;

    /// Constant rows of one column `name`: `rows` of them.
    fn rows(name: &str, rows: usize) -> LogicalPlan {
        LogicalPlan::Values {
            schema: Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, true)])),
            rows: vec![vec![Expr::Literal(ScalarValue::Int64(1))]; rows],
        }
    }

    fn join(left: LogicalPlan, right: LogicalPlan, kind: JoinKind, keyed: bool) -> LogicalPlan {
        let on = match keyed {
            true => vec![(
                Expr::column(0, "a", DataType::Int64),
                Expr::column(0, "b", DataType::Int64),
            )],
            false => Vec::new(),
        };
        LogicalPlan::join(left, right, kind, on, None)
    }

    fn optimized(mut plan: LogicalPlan) -> String {
        choose_build_sides(&mut plan, &Snapshot::default()).unwrap();
        plan.to_string()
    }

    #[test]
    fn a_left_join_builds_its_kept_input_when_the_other_is_much_larger() {
        let plan = join(rows("a", 2), rows("b", 10), JoinKind::Left, true);
        assert_eq!(
            optimized(plan),
            "Project: a#1, b#0\n  Join Right: on=[b#0 = a#0]\n    Values: 10 rows\n    Values: 2 rows\n"
        );
    }

    #[test]
    fn a_left_join_stays_when_the_other_input_is_not_much_larger_or_there_are_no_keys() {
        let plan = join(rows("a", 2), rows("b", 4), JoinKind::Left, true);
        assert!(optimized(plan).starts_with("Join Left: on=[a#0 = b#0]"));
        let plan = join(rows("a", 2), rows("b", 10), JoinKind::Left, false);
        assert!(optimized(plan).starts_with("Join Left: on=[]"));
    }

    #[test]
    fn a_right_join_streams_its_kept_input_unless_the_other_is_much_larger() {
        let plan = join(rows("a", 10), rows("b", 2), JoinKind::Right, true);
        assert!(optimized(plan).starts_with("Join Right: on=[a#0 = b#0]"));
        let plan = join(rows("a", 4), rows("b", 2), JoinKind::Right, true);
        assert_eq!(
            optimized(plan),
            "Project: a#1, b#0\n  Join Left: on=[b#0 = a#0]\n    Values: 2 rows\n    Values: 4 rows\n"
        );
        let plan = join(rows("a", 10), rows("b", 2), JoinKind::Right, false);
        assert!(optimized(plan).contains("Join Left: on=[]"));
    }
}
