//! The Gather operator's source (ADR 0076): the rows of a fragment run on every slice of its
//! sliced scan, which the cluster's `Gatherer` collects from the nodes taking part, in part
//! order. The executor knows nothing of nodes or the network; it runs one part when asked.

use arrow::array::RecordBatch;
use pondra_planner::PhysicalPlan;

use crate::pipeline::{ExecContext, collect, run_pipeline};
use crate::{ExecError, Result};

/// Collects the rows of a spread plan's fragment from the nodes that run its parts.
pub trait Gatherer: Send + Sync {
    /// The rows of `fragment` on each of its `parts` slices, concatenated in part order.
    /// `ctx` is the coordinator's, on which `run_part` runs the parts it keeps.
    fn gather(
        &self,
        fragment: &PhysicalPlan,
        parts: usize,
        ctx: &ExecContext,
    ) -> Result<Vec<RecordBatch>>;
}

/// The rows of a Gather node's fragment, from the context's gatherer.
pub(crate) fn gathered(
    fragment: &PhysicalPlan,
    parts: usize,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let Some(gatherer) = &ctx.gatherer else {
        return Err(ExecError::Execution(
            "a spread plan ran without the nodes of its cluster to gather from".into(),
        ));
    };
    gatherer.gather(fragment, parts, ctx)
}

/// Runs part `part` of `fragment` (its sliced scan reading that slice) on this node, inside a
/// running statement: the coordinator's own part, or a part it took back from a failed node.
pub fn run_part(
    fragment: &PhysicalPlan,
    part: usize,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let fragment = pondra_planner::with_slice_part(fragment, part);
    run_pipeline(&fragment, collect(ctx), None, ctx)
}
