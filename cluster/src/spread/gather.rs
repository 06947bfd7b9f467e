//! The coordinator's Gather (ADR 0076): part 0 runs here while the other parts run on the other
//! nodes at once; a part that fails or stalls is asked again once, then run here. The rows
//! come back in part order, whatever order the parts end in.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use pondra_exec::{ExecContext, GatheredParts, Gatherer, run_part};
use pondra_planner::PhysicalPlan;

use super::steps::{PartSteps, Runner};
use super::{Counters, PartRequest, Peer, Peers};

/// A part asked of another node fails when it has not answered this long after the
/// coordinator finished its own part, or this many times as long as that part took.
pub(super) const STALL_FLOOR: Duration = Duration::from_secs(10);
pub(super) const STALL_FACTOR: u32 = 4;

/// How often the coordinator looks at a cancel and at stalled parts while it waits.
pub(super) const WAIT_TICK: Duration = Duration::from_millis(50);

/// Gathers the parts of a spread plan from the nodes taking part.
pub(crate) struct ClusterGatherer {
    /// The way to the other nodes; none when every part runs here (`debug_spread_parts`).
    pub(crate) peers: Option<Arc<dyn Peers>>,
    /// The other nodes taking part, part 1 on the first.
    pub(crate) taking_part: Vec<Peer>,
    /// What each node is asked, but for the part.
    pub(crate) request: PartRequest,
    pub(crate) counters: Arc<Counters>,
    /// Where the rows parts deliver to the parts run here wait.
    pub(crate) mailboxes: Arc<pondra_exec::Mailboxes>,
    /// Where each part ran, its rows, bytes and time, for EXPLAIN ANALYZE.
    pub(crate) reports: std::sync::Mutex<Vec<PartReport>>,
}

/// One part as it ran.
#[derive(Clone, Debug)]
pub(crate) struct PartReport {
    part: usize,
    node: String,
    rows: usize,
    bytes: usize,
    took: Duration,
    /// How many times it was asked before it gave its rows.
    asks: u32,
}

/// A part in flight on another node.
pub(super) struct Ask {
    pub(super) started: Instant,
    pub(super) task: tokio::task::AbortHandle,
}

/// A part's answer: the part, which ask of it answered (1 for the first), its rows or why
/// not, and how long it took.
type Answer = (usize, u32, Result<Vec<RecordBatch>, String>, Duration);

impl Gatherer for ClusterGatherer {
    fn gather(
        &self,
        fragment: &PhysicalPlan,
        parts: usize,
        ctx: &ExecContext,
    ) -> pondra_exec::Result<GatheredParts> {
        if pondra_planner::exchanges(fragment) {
            return self.gather_in_rounds(fragment, parts, ctx);
        }
        let mut gathered = GatheredParts::new(parts, &ctx.memory);
        let Some(peers) = &self.peers else {
            // Every part here, in turn: the cut and the slices without a network.
            for part in 0..parts {
                let started = Instant::now();
                let rows = run_part(fragment, part, ctx)?;
                self.report(part, "here".into(), &rows, started.elapsed(), 0);
                gathered.put(part, rows)?;
            }
            return Ok(gathered);
        };
        assert_eq!(parts, self.taking_part.len() + 1, "a part per node");
        self.counters.spread_queries.fetch_add(1, Ordering::Relaxed);
        let mut steps = PartSteps::new(parts);
        let (answers, answered) = mpsc::channel::<Answer>();
        let mut in_flight = InFlight((0..parts).map(|_| None).collect());
        let asks = &mut in_flight.0;
        let mut asked = vec![1u32; parts];
        for (part, runner) in steps.first_runs() {
            if let Runner::Peer(peer) = runner {
                asks[part] = Some(self.ask(peers, peer, part, 1, &answers, ctx));
            }
        }
        let own = Instant::now();
        let own_rows = run_part(fragment, 0, ctx)?;
        self.report(0, "here".into(), &own_rows, own.elapsed(), 0);
        gathered.put(0, own_rows)?;
        steps.succeeded(0);
        let stall = STALL_FLOOR.max(own.elapsed() * STALL_FACTOR);
        let own_done = Instant::now();
        while !steps.finished() {
            ctx.control.check()?;
            let failed: Vec<usize> = match answered.recv_timeout(WAIT_TICK) {
                // An earlier ask of a part asked again since (it stalled, or its failure was
                // counted) may still answer: only the part's latest ask counts.
                Ok((part, ask, ..)) if asks[part].is_none() || ask != asked[part] => Vec::new(),
                Ok((part, _, Ok(rows), took)) => {
                    let bytes = rows.iter().map(|b| b.get_array_memory_size() as u64).sum();
                    self.counters.exchanged(bytes, took.as_secs_f64());
                    let node = self.taking_part[part - 1].name.clone();
                    self.report(part, node, &rows, took, asked[part]);
                    gathered.put(part, rows)?;
                    asks[part] = None;
                    steps.succeeded(part);
                    Vec::new()
                }
                Ok((part, _, Err(e), _)) => {
                    eprintln!("part {part} of a spread query failed: {e}");
                    vec![part]
                }
                Err(_) => stalled(asks, own_done, stall),
            };
            for part in failed {
                if let Some(ask) = asks[part].take() {
                    ask.task.abort();
                }
                match steps.failed(part) {
                    Runner::Peer(peer) => {
                        asked[part] += 1;
                        self.counters.parts_retried.fetch_add(1, Ordering::Relaxed);
                        let ask = self.ask(peers, peer, part, asked[part], &answers, ctx);
                        asks[part] = Some(ask);
                    }
                    Runner::Here => {
                        self.counters.parts_run_here.fetch_add(1, Ordering::Relaxed);
                        let started = Instant::now();
                        let rows = run_part(fragment, part, ctx)?;
                        self.report(part, "here".into(), &rows, started.elapsed(), asked[part]);
                        gathered.put(part, rows)?;
                        steps.succeeded(part);
                    }
                }
            }
        }
        Ok(gathered)
    }
}

impl ClusterGatherer {
    pub(super) fn report(
        &self,
        part: usize,
        node: String,
        rows: &[RecordBatch],
        took: Duration,
        asks: u32,
    ) {
        let report = PartReport {
            part,
            node,
            rows: rows.iter().map(RecordBatch::num_rows).sum(),
            bytes: rows.iter().map(RecordBatch::get_array_memory_size).sum(),
            took,
            asks,
        };
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(report);
    }

    /// The parts as they ran, a line each, for EXPLAIN ANALYZE.
    pub(crate) fn report_text(&self) -> String {
        let mut reports = self
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        reports.sort_by_key(|r| r.part);
        let mut text = String::from("Parts:\n");
        for r in reports {
            let asked = match r.asks {
                0 | 1 => String::new(),
                n => format!(" after {n} asks"),
            };
            text.push_str(&format!(
                "  part {} on {}: {} rows, {} bytes, {:.3} ms{asked}\n",
                r.part,
                r.node,
                r.rows,
                r.bytes,
                r.took.as_secs_f64() * 1e3
            ));
        }
        text
    }

    /// Asks `part` of the `peer`-th node taking part, the `attempt`-th time; its answer comes
    /// on `answers`.
    fn ask(
        &self,
        peers: &Arc<dyn Peers>,
        peer: usize,
        part: usize,
        attempt: u32,
        answers: &mpsc::Sender<Answer>,
        ctx: &ExecContext,
    ) -> Ask {
        self.counters.parts_asked.fetch_add(1, Ordering::Relaxed);
        let request = PartRequest {
            part,
            ..self.request.clone()
        };
        let running = peers.run_part(&self.taking_part[peer], &request);
        let answers = answers.clone();
        let started = Instant::now();
        let task = ctx.runtime.spawn(async move {
            let rows = running.await;
            let _ = answers.send((part, attempt, rows, started.elapsed()));
        });
        Ask {
            started,
            task: task.abort_handle(),
        }
    }
}

/// The parts in flight that have stalled: asked `stall` before now, counted from when the
/// coordinator finished its own part at the earliest.
pub(super) fn stalled(asks: &[Option<Ask>], own_done: Instant, stall: Duration) -> Vec<usize> {
    asks.iter()
        .enumerate()
        .filter_map(|(part, ask)| {
            let ask = ask.as_ref()?;
            let since = ask.started.max(own_done);
            (since.elapsed() > stall).then_some(part)
        })
        .collect()
}

/// The parts in flight, by part. Dropped when the Gather ends, early too (an error, a
/// cancel): the asks still in flight stop, and their nodes see the connection close and stop
/// their parts.
pub(super) struct InFlight(pub(super) Vec<Option<Ask>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        for ask in self.0.iter().flatten() {
            ask.task.abort();
        }
    }
}
