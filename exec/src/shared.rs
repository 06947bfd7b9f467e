//! The rows of aggregations that one query computes more than once (ADR 0019): physical
//! planning numbers them (`shared` on the plan's aggregation), and the first occurrence to run
//! keeps its rows here for the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use pondra_planner::{Expr, PhysicalPlan, PlanNode, TreeNode};

#[derive(Default)]
pub struct SharedAggregates {
    rows: Mutex<HashMap<usize, Arc<Vec<RecordBatch>>>>,
}

impl SharedAggregates {
    pub fn get(&self, number: usize) -> Option<Arc<Vec<RecordBatch>>> {
        let rows = self.rows.lock().expect("shared rows lock");
        rows.get(&number).cloned()
    }

    pub fn put(&self, number: usize, rows: Arc<Vec<RecordBatch>>) {
        let mut shared = self.rows.lock().expect("shared rows lock");
        shared.insert(number, rows);
    }
}

/// Calls `visit` on every node of `plan` and of the plans of the scalar subqueries in its
/// expressions, nested ones too.
pub fn for_each_node(plan: &PhysicalPlan, visit: &mut dyn FnMut(&PhysicalPlan)) {
    plan.visit(visit);
    for subquery in subquery_plans(plan) {
        for_each_node(&subquery, visit);
    }
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
