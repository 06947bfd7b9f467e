//! The Gather operator's source (ADR 0076): the rows of a fragment run on every slice of its
//! sliced scan, which the cluster's `Gatherer` collects from the nodes taking part, in part
//! order. The executor knows nothing of nodes or the network; it runs one part when asked.

use std::sync::Arc;

use arrow::array::RecordBatch;
use pondra_planner::PhysicalPlan;

use crate::memory::{MemoryPool, Reservation};
use crate::pipeline::{ExecContext, collect, run_pipeline};
use crate::spill::{SpillFile, SpillWriter};
use crate::{ExecError, Result};

/// Collects the rows of a spread plan's fragment from the nodes that run its parts.
pub trait Gatherer: Send + Sync {
    /// The rows of `fragment` on each of its `parts` slices, in part order. `ctx` is the
    /// coordinator's, on which `run_part` runs the parts it keeps.
    fn gather(
        &self,
        fragment: &PhysicalPlan,
        parts: usize,
        ctx: &ExecContext,
    ) -> Result<GatheredParts>;
}

/// The rows of a Gather's parts as they come, in any order: each kept in memory while the
/// pool grants it, else written to a spill file, as joins spill (ADR 0076); read back in part
/// order.
pub struct GatheredParts {
    parts: Vec<Option<Gathered>>,
    reservation: Reservation,
}

enum Gathered {
    Memory(Vec<RecordBatch>),
    Spilled(SpillFile),
}

impl GatheredParts {
    pub fn new(parts: usize, memory: &Arc<MemoryPool>) -> GatheredParts {
        GatheredParts {
            parts: (0..parts).map(|_| None).collect(),
            reservation: memory.reservation(),
        }
    }

    /// Keeps the rows of part `part`.
    pub fn put(&mut self, part: usize, rows: Vec<RecordBatch>) -> Result<()> {
        assert!(self.parts[part].is_none(), "part {part} gathered twice");
        let bytes = rows.iter().map(RecordBatch::get_array_memory_size).sum();
        let pool = self.reservation.pool().clone();
        let kept = match rows.first() {
            Some(first) if pool.forces_spill() || !self.reservation.try_grow(bytes) => {
                let mut writer = SpillWriter::new(pool.spill_dir(), &first.schema())?;
                for batch in &rows {
                    writer.write(batch)?;
                }
                Gathered::Spilled(writer.finish()?)
            }
            _ => Gathered::Memory(rows),
        };
        self.parts[part] = Some(kept);
        Ok(())
    }

    /// Every part's rows, in part order; the memory they held is given back once read.
    pub fn into_batches(self) -> Result<GatheredBatches> {
        let GatheredParts { parts, reservation } = self;
        let mut all: Vec<PartBatches> = Vec::new();
        for (part, gathered) in parts.into_iter().enumerate() {
            match gathered {
                Some(Gathered::Memory(rows)) => all.push(Box::new(rows.into_iter().map(Ok))),
                Some(Gathered::Spilled(file)) => all.push(Box::new(file.read()?)),
                None => {
                    return Err(ExecError::Execution(format!(
                        "internal error: part {part} of a spread plan was never gathered"
                    )));
                }
            }
        }
        Ok(GatheredBatches {
            batches: all.into_iter().flatten(),
            _reservation: reservation,
        })
    }
}

type PartBatches = Box<dyn Iterator<Item = Result<RecordBatch>>>;

/// The gathered rows in part order, holding their memory's reservation until read.
pub struct GatheredBatches {
    batches: std::iter::Flatten<std::vec::IntoIter<PartBatches>>,
    _reservation: Reservation,
}

impl Iterator for GatheredBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next()
    }
}

/// The rows of a Gather node's fragment, from the context's gatherer.
pub(crate) fn gathered(
    fragment: &PhysicalPlan,
    parts: usize,
    ctx: &ExecContext,
) -> Result<GatheredParts> {
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
