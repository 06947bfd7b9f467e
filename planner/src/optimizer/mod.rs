//! The optimizer: named passes over a bound logical plan, run in the order `PASSES` lists
//! (ADR 0047). Each pass is a file of this module with its own tests; `EXPLAIN (VERBOSE)`
//! prints the plan after each pass that changed it.
//!
//! Some decisions are still made while the binder closes each query block, by functions of
//! this module it calls: a block of inner joins is ordered as it is bound (`join_order`,
//! `join_search`), correlated subqueries become joins (`decorrelate`, restricted to the outer
//! keys by `key_domain`), and semi joins are placed (`semi_pushdown`). They become passes here
//! when the binder leaves join blocks and subqueries in the plan unplanned.

pub(crate) mod decorrelate;
pub(crate) mod join_order;
pub(crate) mod join_search;
pub(crate) mod key_domain;
mod outer_join_sides;
pub(crate) mod semi_pushdown;
mod top_n;

use std::sync::Arc;

use pondra_catalog::Snapshot;

use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::tree::{PlanNode, TreeNode};

/// A pass: a rewrite of a whole plan, the plans of its subqueries included.
struct Pass {
    name: &'static str,
    run: fn(&mut LogicalPlan, &Snapshot),
}

/// The passes, in the order they run.
const PASSES: &[Pass] = &[
    Pass {
        name: "outer_join_sides",
        run: outer_join_sides::choose_build_sides,
    },
    Pass {
        name: "top_n",
        run: top_n::sort_only_what_limits_keep,
    },
];

/// `plan` after every pass.
pub fn optimize(mut plan: LogicalPlan, snapshot: &Snapshot) -> LogicalPlan {
    for pass in PASSES {
        run_everywhere(pass, &mut plan, snapshot);
    }
    plan
}

/// `plan` after every pass, and the text of the plan as bound and after each pass that changed
/// it, named by the pass.
pub fn optimize_traced(
    mut plan: LogicalPlan,
    snapshot: &Snapshot,
) -> (LogicalPlan, Vec<(&'static str, String)>) {
    let mut trace = vec![("bound", plan.to_string())];
    for pass in PASSES {
        run_everywhere(pass, &mut plan, snapshot);
        let text = plan.to_string();
        if trace.last().is_none_or(|(_, last)| *last != text) {
            trace.push((pass.name, text));
        }
    }
    (plan, trace)
}

/// Runs `pass` over `plan` and over the plans of the scalar subqueries its expressions hold.
fn run_everywhere(pass: &Pass, plan: &mut LogicalPlan, snapshot: &Snapshot) {
    let Ok(()) = plan.transform_up(&mut |node| {
        for expr in node.exprs_mut() {
            expr.transform_up(&mut |e| {
                if let Expr::ScalarSubquery(subquery) = e {
                    let inner = Arc::make_mut(&mut subquery.plan);
                    run_everywhere(pass, inner, snapshot);
                }
                Ok::<_, std::convert::Infallible>(())
            })?;
        }
        Ok::<_, std::convert::Infallible>(())
    });
    (pass.run)(plan, snapshot);
}
