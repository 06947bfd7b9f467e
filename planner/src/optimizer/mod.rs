//! The optimizer: named passes over a bound logical plan, run in the order `PASSES` lists
//! (ADR 0047). Each pass is a file of this module with its own tests; `EXPLAIN (VERBOSE)`
//! prints the plan after each pass that changed it. The binder leaves blocks of inner joins
//! unordered (`JoinBlock`) and subqueries asked of each row (`Subquery`); the first two passes
//! plan them, and no later pass sees either.

mod decorrelate;
mod domain_join;
pub(crate) mod join_order;
pub(crate) mod join_search;
pub(crate) mod key_domain;
mod outer_join_sides;
pub(crate) mod pull_up;
pub(crate) mod semi_pushdown;
mod settings;
mod top_n;

pub use settings::OptimizerSettings;

use std::sync::Arc;

use pondra_catalog::Snapshot;

use crate::Result;
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::tree::{PlanNode, TreeNode};

/// A pass: a rewrite of a whole plan, the plans of its subqueries included.
struct Pass {
    name: &'static str,
    /// The name of DuckDB's optimizer that turns it off (`disabled_optimizers`); `None` for a
    /// pass every plan needs.
    duckdb_name: Option<&'static str>,
    run: fn(&mut LogicalPlan, &Snapshot, &OptimizerSettings) -> Result<()>,
}

/// The passes, in the order they run.
const PASSES: &[Pass] = &[
    // Join blocks must become joins: turning off `join_order` makes them in written order.
    Pass {
        name: "join_order",
        duckdb_name: None,
        run: join_order::order_join_blocks,
    },
    Pass {
        name: "decorrelate",
        duckdb_name: None,
        run: |plan, snapshot, _| decorrelate::decorrelate(plan, snapshot),
    },
    Pass {
        name: "outer_join_sides",
        duckdb_name: Some("build_side_probe_side"),
        run: |plan, snapshot, _| outer_join_sides::choose_build_sides(plan, snapshot),
    },
    Pass {
        name: "top_n",
        duckdb_name: Some("top_n"),
        run: |plan, snapshot, _| top_n::sort_only_what_limits_keep(plan, snapshot),
    },
];

/// `plan` after every pass.
pub fn optimize(plan: LogicalPlan, snapshot: &Snapshot) -> Result<LogicalPlan> {
    optimize_with(plan, snapshot, &OptimizerSettings::default())
}

/// `plan` after every pass `settings` leaves on.
pub fn optimize_with(
    mut plan: LogicalPlan,
    snapshot: &Snapshot,
    settings: &OptimizerSettings,
) -> Result<LogicalPlan> {
    for pass in active_passes(settings) {
        run_everywhere(pass, &mut plan, snapshot, settings)?;
    }
    Ok(plan)
}

fn active_passes(settings: &OptimizerSettings) -> impl Iterator<Item = &'static Pass> {
    PASSES.iter().filter(|pass| {
        !pass
            .duckdb_name
            .is_some_and(|name| settings.is_disabled(name))
    })
}

/// `plan` after every pass, and the text of the plan as bound and after each pass that changed
/// it, named by the pass.
pub fn optimize_traced(
    mut plan: LogicalPlan,
    snapshot: &Snapshot,
    settings: &OptimizerSettings,
) -> Result<(LogicalPlan, Vec<(&'static str, String)>)> {
    let mut trace = vec![("bound", plan.to_string())];
    for pass in active_passes(settings) {
        run_everywhere(pass, &mut plan, snapshot, settings)?;
        let text = plan.to_string();
        if trace.last().is_none_or(|(_, last)| *last != text) {
            trace.push((pass.name, text));
        }
    }
    Ok((plan, trace))
}

/// Runs `pass` over `plan` and over the plans of the scalar subqueries its expressions hold.
fn run_everywhere(
    pass: &Pass,
    plan: &mut LogicalPlan,
    snapshot: &Snapshot,
    settings: &OptimizerSettings,
) -> Result<()> {
    plan.transform_up(&mut |node| {
        for expr in node.exprs_mut() {
            expr.transform_up(&mut |e| {
                if let Expr::ScalarSubquery(subquery) = e {
                    let inner = Arc::make_mut(&mut subquery.plan);
                    run_everywhere(pass, inner, snapshot, settings)?;
                }
                Ok::<_, crate::PlanError>(())
            })?;
        }
        Ok::<_, crate::PlanError>(())
    })?;
    (pass.run)(plan, snapshot, settings)
}
