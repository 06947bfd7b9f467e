//! Where a pipeline's batches end up. A breaker's sink finishes before its output flows on.

use std::sync::Arc;

use crate::aggregate::HashAggregateSink;
use crate::join_spill::BuildSink;
use crate::memory::{MemoryPool, Reservation};
use crate::sort::SortSink;
use crate::{ExecError, Result};
use arrow::array::RecordBatch;

/// Whether a sink takes more rows: `Done` once a LIMIT has its rows, so the work below it
/// stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    More,
    Done,
}

pub enum Sink<'p> {
    Collect(Collected),
    /// A hash join's build side (`join_spill`).
    Build(Box<BuildSink>),
    Aggregate(Box<HashAggregateSink>),
    Sort(Box<SortSink<'p>>),
    Limit {
        skip: usize,
        fetch: Option<usize>,
        seen: usize,
        batches: Vec<RecordBatch>,
    },
}

/// Rows collected whole (a query's result, a union's input, a window's partition), counted
/// against the memory limit as they arrive: past it the statement fails, rather than the
/// process.
#[derive(Default)]
pub struct Collected {
    pub batches: Vec<RecordBatch>,
    /// What the rows hold, while they are collected; `None` where they are counted elsewhere
    /// (a worker's rows on their way to the collecting sink).
    reservation: Option<Reservation>,
}

impl Collected {
    /// Rows collected within `memory`'s limit.
    pub fn within(memory: &Arc<MemoryPool>) -> Collected {
        Collected {
            batches: Vec::new(),
            reservation: Some(memory.reservation()),
        }
    }

    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        if let Some(reservation) = &mut self.reservation {
            let bytes = crate::memory::batch_bytes(&batch);
            if !reservation.try_grow_unspillable(bytes) {
                return Err(ExecError::OutOfMemory {
                    limit: reservation.pool().limit(),
                });
            }
        }
        self.batches.push(batch);
        Ok(())
    }
}

/// What a pipeline's last stage hands its batches to: a pipeline's sink, or a worker's share
/// of it.
pub trait BatchSink {
    fn sink(&mut self, batch: RecordBatch) -> Result<()>;

    /// True once no more rows are needed.
    fn is_full(&self) -> bool {
        false
    }
}

impl BatchSink for Sink<'_> {
    fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        Sink::sink(self, batch)
    }

    fn is_full(&self) -> bool {
        Sink::is_full(self)
    }
}

/// How worker threads feed a sink when a pipeline runs in parallel.
pub enum Split<'p> {
    /// Each worker collects its morsels' rows, which reach the sink in morsel order.
    InOrder,
    /// Each worker fills a sink of its own; they are merged into this one at the end.
    Partial(Vec<Sink<'p>>),
}

impl<'p> Sink<'p> {
    pub fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        match self {
            Sink::Collect(collected) => collected.push(batch)?,
            Sink::Build(build) => build.sink(batch)?,
            Sink::Sort(sort) => sort.sink(batch)?,
            Sink::Aggregate(aggregate) => aggregate.sink(&batch)?,
            Sink::Limit {
                skip,
                fetch,
                seen,
                batches,
            } => {
                let start = *seen;
                let end = start + batch.num_rows();
                *seen = end;
                let lo = (*skip).max(start);
                let hi = fetch.map_or(end, |f| end.min(*skip + f));
                if lo < hi {
                    batches.push(batch.slice(lo - start, hi - lo));
                }
            }
        }
        Ok(())
    }

    /// Marks the end of one morsel's rows, for an aggregation taking them as runs.
    pub fn end_of_morsel(&mut self) -> Result<()> {
        match self {
            Sink::Aggregate(aggregate) => aggregate.end_of_morsel(),
            _ => Ok(()),
        }
    }

    /// How many groups an aggregation finished as runs of clustered keys.
    pub fn run_groups(&self) -> usize {
        match self {
            Sink::Aggregate(aggregate) => aggregate.run_groups(),
            _ => 0,
        }
    }

    /// The bytes of rows the sink wrote to disk for want of memory.
    pub fn spilled_bytes(&self) -> usize {
        match self {
            Sink::Sort(sort) => sort.spilled_bytes(),
            Sink::Aggregate(aggregate) => aggregate.spilled_bytes(),
            _ => 0,
        }
    }

    /// True once the sink needs no more rows.
    pub fn is_full(&self) -> bool {
        match self {
            Sink::Limit {
                skip, fetch, seen, ..
            } => fetch.is_some_and(|f| *seen >= skip + f),
            _ => false,
        }
    }

    /// How `workers` threads can feed this sink, or `None` if rows must arrive one by one in
    /// order (a LIMIT stops its input early).
    pub fn split(&self, workers: usize) -> Result<Option<Split<'p>>> {
        Ok(match self {
            Sink::Collect(_) | Sink::Build(_) | Sink::Sort(_) => Some(Split::InOrder),
            Sink::Aggregate(aggregate) if aggregate.can_merge() => {
                let partials = (0..workers)
                    .map(|_| Ok(Sink::Aggregate(Box::new(aggregate.empty_like()?))))
                    .collect::<Result<Vec<_>>>()?;
                Some(Split::Partial(partials))
            }
            Sink::Aggregate(_) | Sink::Limit { .. } => None,
        })
    }

    /// Folds in a worker's partial sink made by `split`.
    pub fn absorb(&mut self, partial: Sink<'p>) -> Result<()> {
        match (self, partial) {
            (Sink::Aggregate(mine), Sink::Aggregate(theirs)) => mine.merge(*theirs),
            _ => unreachable!("only aggregates are split into partial sinks"),
        }
    }

    pub fn finish(self) -> Result<Vec<RecordBatch>> {
        match self {
            Sink::Collect(collected) => Ok(collected.batches),
            Sink::Limit { batches, .. } => Ok(batches),
            Sink::Aggregate(aggregate) => aggregate.finish(),
            Sink::Sort(sort) => sort.finish(),
            Sink::Build(_) => unreachable!("a build side finishes as `Built`"),
        }
    }
}
