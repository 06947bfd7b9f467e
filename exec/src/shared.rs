//! Aggregations that one query computes more than once run once. A view or CTE read twice is
//! planned twice: TPC-H q15 reads its revenue view in the main query and again in a scalar
//! subquery that takes the view's maximum. An aggregation whose plan occurs more than once in
//! the query and its subqueries keeps its rows for the other occurrences.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::RecordBatch;
use pondra_planner::{Expr, PhysicalPlan, PlanNode, TreeNode};

#[derive(Default)]
pub struct SharedAggregates {
    /// The plan text of each aggregation that occurs more than once, found from the outermost
    /// plan when it starts.
    repeated: OnceLock<HashSet<String>>,
    rows: Mutex<HashMap<String, Arc<Vec<RecordBatch>>>>,
}

impl SharedAggregates {
    /// Finds the aggregations that `plan` and its subqueries compute more than once. Only the
    /// first plan counts: the others are its subqueries.
    pub fn find_repeated(&self, plan: &PhysicalPlan) {
        if self.repeated.get().is_some() {
            return;
        }
        let mut counts = HashMap::new();
        count_aggregates(plan, &mut counts);
        let repeated = counts
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .map(|(text, _)| text)
            .collect();
        let _ = self.repeated.set(repeated);
    }

    /// The key under which an aggregation's rows are kept, when it occurs more than once.
    pub fn key(&self, aggregate: &PhysicalPlan) -> Option<String> {
        let repeated = self.repeated.get().filter(|r| !r.is_empty())?;
        let text = format!("{aggregate:?}");
        repeated.contains(&text).then_some(text)
    }

    pub fn get(&self, key: &str) -> Option<Arc<Vec<RecordBatch>>> {
        self.rows
            .lock()
            .expect("shared rows lock")
            .get(key)
            .cloned()
    }

    pub fn put(&self, key: String, rows: Arc<Vec<RecordBatch>>) {
        self.rows
            .lock()
            .expect("shared rows lock")
            .insert(key, rows);
    }
}

/// Counts each aggregation of `plan` and of the scalar subqueries in its expressions by its
/// plan text. An aggregation that reads a recursive CTE's working table is left out: it is
/// computed again on every step, over other rows.
fn count_aggregates(plan: &PhysicalPlan, counts: &mut HashMap<String, usize>) {
    for_each_node(plan, &mut |node| {
        if matches!(node, PhysicalPlan::HashAggregate { .. }) && !reads_working_table(node) {
            *counts.entry(format!("{node:?}")).or_default() += 1;
        }
    });
}

/// Calls `visit` on every node of `plan` and of the plans of the scalar subqueries in its
/// expressions, nested ones too.
pub fn for_each_node(plan: &PhysicalPlan, visit: &mut dyn FnMut(&PhysicalPlan)) {
    plan.visit(visit);
    for subquery in subquery_plans(plan) {
        for_each_node(&subquery, visit);
    }
}

fn reads_working_table(plan: &PhysicalPlan) -> bool {
    plan.exists(&mut |node| matches!(node, PhysicalPlan::WorkingTable { .. }))
}

/// The plans of the scalar subqueries in the expressions of `plan` (not those nested in them).
fn subquery_plans(plan: &PhysicalPlan) -> Vec<Arc<PhysicalPlan>> {
    let mut found = Vec::new();
    plan.visit_exprs(&mut |expr| {
        if let Expr::ScalarSubquery(subquery) = expr {
            found.extend(subquery.physical.clone());
        }
    });
    found
}
