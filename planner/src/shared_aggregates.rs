//! Aggregations that one query computes more than once (ADR 0019). A view or CTE read twice is
//! planned twice: TPC-H q15 reads its revenue view in the main query and again in a scalar
//! subquery that takes the view's maximum. Physical planning numbers the aggregations whose
//! plans occur more than once in the query and its subqueries, the same number for each
//! occurrence; the first to run keeps its rows for the others.

use std::collections::HashMap;

use crate::physical::PhysicalPlan;
use crate::tree::TreeNode;

/// Numbers the aggregations of `plan` (and of the plans of its scalar subqueries) that occur
/// more than once. One that reads a recursive CTE's working table is left out: it is computed
/// again on every step, over other rows.
pub fn number_repeated_aggregates(plan: &mut PhysicalPlan) {
    // Both walks meet the aggregations in the same order: the texts are made once.
    let mut texts = Vec::new();
    for_each_aggregate(plan, &mut |aggregate| texts.push(format!("{aggregate:?}")));
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for text in &texts {
        *counts.entry(text).or_default() += 1;
    }
    let mut numbers: HashMap<&str, usize> = HashMap::new();
    let mut texts_in_order = texts.iter();
    for_each_aggregate(plan, &mut |aggregate| {
        let text = texts_in_order.next().expect("the same aggregations");
        if counts[text.as_str()] > 1 {
            let next = numbers.len();
            let number = *numbers.entry(text).or_insert(next);
            let PhysicalPlan::HashAggregate { shared, .. } = aggregate else {
                unreachable!("only aggregations are numbered");
            };
            *shared = Some(number);
        }
    });
}

/// Calls `f` on each aggregation that could be shared, in `plan` and in the plans of the scalar
/// subqueries in its expressions, nested ones too, each before the nodes under it.
fn for_each_aggregate(plan: &mut PhysicalPlan, f: &mut dyn FnMut(&mut PhysicalPlan)) {
    plan.for_each_with_subqueries(&mut |node| {
        if matches!(node, PhysicalPlan::HashAggregate { .. }) && !reads_working_table(node) {
            f(node);
        }
    });
}

fn reads_working_table(plan: &PhysicalPlan) -> bool {
    plan.exists(&mut |node| matches!(node, PhysicalPlan::WorkingTable { .. }))
}
