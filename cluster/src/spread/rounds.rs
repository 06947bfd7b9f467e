//! The coordinator's Gather of a fragment that exchanges rows (ADR 0076): its parts wait for
//! each other's rows, so they run at once, in rounds. Each round names itself and the node
//! of every part; the parts here run on threads of their own while the others run on their
//! nodes. A part that fails or stalls stops the round: every part of it stops, and the next
//! round runs where `RoundSteps` says. Only a round whose every part gave its rows counts.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use pondra_exec::{
    Exchanger, ExecContext, ExecError, GatheredParts, is_exchange_failure, run_parts_at_once,
};
use pondra_planner::PhysicalPlan;

use super::exchange::ClusterExchanger;
use super::gather::{Ask, InFlight, STALL_FACTOR, STALL_FLOOR, WAIT_TICK, stalled};
use super::steps::{RoundSteps, Runner};
use super::{ClusterGatherer, PartRequest, Peer, Peers};

/// How a round ended short of every part's rows.
enum RoundEnd {
    /// A part failed or stalled; which parts gave their rows before the round stopped.
    Parts { gave_rows: Vec<bool>, error: String },
    /// The statement's own error (a part here raised it, or the statement was stopped).
    Statement(ExecError),
}

/// What the Flight door of a node running parts is called when there is no network.
const HERE: &str = "here";

impl ClusterGatherer {
    /// The rows of `fragment`'s parts, from the first round in which every part gave them.
    pub(super) fn gather_in_rounds(
        &self,
        fragment: &PhysicalPlan,
        parts: usize,
        ctx: &ExecContext,
    ) -> pondra_exec::Result<GatheredParts> {
        let (mut steps, own_flight) = match &self.peers {
            Some(peers) => {
                assert_eq!(parts, self.taking_part.len() + 1, "a part per node");
                self.counters.spread_queries.fetch_add(1, Ordering::Relaxed);
                (RoundSteps::new(parts), peers.own_flight())
            }
            None => (RoundSteps::all_here(parts), HERE.to_string()),
        };
        let mut round_number = 0;
        loop {
            round_number += 1;
            let round = new_round();
            self.counters
                .exchange_rounds
                .fetch_add(1, Ordering::Relaxed);
            let part_nodes: Vec<String> = steps
                .runners()
                .iter()
                .map(|runner| match runner {
                    Runner::Here => own_flight.clone(),
                    Runner::Peer(peer) => self.taking_part[*peer].flight.clone(),
                })
                .collect();
            let ran = self.run_round(fragment, round, &steps, &part_nodes, ctx);
            self.mailboxes.stop_round(round);
            match ran {
                Ok(gathered) => return Ok(gathered),
                Err(RoundEnd::Statement(e)) => return Err(e),
                Err(RoundEnd::Parts { gave_rows, error }) => {
                    eprintln!("round {round_number} of a spread query failed: {error}");
                    if !steps.failed(&gave_rows) {
                        return Err(ExecError::Execution(error));
                    }
                    let moved = steps
                        .runners()
                        .iter()
                        .filter(|r| **r == Runner::Here)
                        .count();
                    self.counters
                        .parts_retried
                        .fetch_add(parts as u64, Ordering::Relaxed);
                    self.counters
                        .parts_run_here
                        .fetch_add(moved.saturating_sub(1) as u64, Ordering::Relaxed);
                }
            }
        }
    }

    /// Runs one round: every part at once, where `steps` says.
    fn run_round(
        &self,
        fragment: &PhysicalPlan,
        round: u64,
        steps: &RoundSteps,
        part_nodes: &[String],
        ctx: &ExecContext,
    ) -> Result<GatheredParts, RoundEnd> {
        let parts = part_nodes.len();
        let (answers, answered) = mpsc::channel::<RoundAnswer>();
        let mut in_flight = InFlight((0..parts).map(|_| None).collect());
        let mut here = Vec::new();
        for (part, runner) in steps.runners().iter().enumerate() {
            match (runner, &self.peers) {
                (Runner::Peer(peer), Some(peers)) => {
                    let request = PartRequest {
                        part,
                        round,
                        part_nodes: part_nodes.to_vec(),
                        ..self.request.clone()
                    };
                    let peer = &self.taking_part[*peer];
                    in_flight.0[part] =
                        Some(self.ask_in_round(peers, peer, request, &answers, ctx));
                }
                _ => here.push(part),
            }
        }
        let own_flight = here
            .first()
            .map_or(HERE.to_string(), |p| part_nodes[*p].clone());
        let exchanger_of = |part: usize| -> Arc<dyn Exchanger> {
            Arc::new(ClusterExchanger {
                mailboxes: self.mailboxes.clone(),
                peers: self.peers.clone(),
                round,
                part,
                part_nodes: part_nodes.to_vec(),
                own_flight: own_flight.clone(),
            })
        };
        std::thread::scope(|scope| {
            let local = answers.clone();
            let (here, exchanger_of) = (&here, &exchanger_of);
            scope.spawn(move || {
                let started = Instant::now();
                for (part, rows) in run_parts_at_once(fragment, here, ctx, exchanger_of) {
                    let answer = RoundAnswer {
                        part,
                        node: "here".into(),
                        rows: rows.map_err(PartFailure::Here),
                        took: started.elapsed(),
                    };
                    let _ = local.send(answer);
                }
            });
            drop(answers);
            let ended = self.follow_round(round, here, &answered, &mut in_flight, ctx);
            if ended.is_err() {
                // The parts here see their round stopped and end; the others see their asks
                // dropped and end.
                self.mailboxes.stop_round(round);
                for ask in in_flight.0.iter_mut() {
                    if let Some(ask) = ask.take() {
                        ask.task.abort();
                    }
                }
            }
            ended
        })
    }

    /// Takes the round's answers until every part gave its rows, one failed or stalled, or
    /// the statement was stopped.
    fn follow_round(
        &self,
        round: u64,
        here: &[usize],
        answered: &mpsc::Receiver<RoundAnswer>,
        in_flight: &mut InFlight,
        ctx: &ExecContext,
    ) -> Result<GatheredParts, RoundEnd> {
        let parts = in_flight.0.len();
        let mut rows: Vec<Option<Vec<RecordBatch>>> = (0..parts).map(|_| None).collect();
        let mut here_left = here.len();
        let mut here_done: Option<(Instant, Duration)> = None;
        let started = Instant::now();
        let gave_rows =
            |rows: &[Option<Vec<RecordBatch>>]| rows.iter().map(Option::is_some).collect();
        while rows.iter().any(Option::is_none) {
            if let Err(e) = ctx.control.check() {
                return Err(RoundEnd::Statement(e));
            }
            let answer = match answered.recv_timeout(WAIT_TICK) {
                Ok(answer) => answer,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Every part here and every ask ended, some without an answer.
                    return Err(RoundEnd::Parts {
                        gave_rows: gave_rows(&rows),
                        error: "a part ended without an answer".into(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let Some((done, own)) = here_done else {
                        continue;
                    };
                    let stall = STALL_FLOOR.max(own * STALL_FACTOR);
                    if let Some(part) = stalled(&in_flight.0, done, stall).first() {
                        return Err(RoundEnd::Parts {
                            gave_rows: gave_rows(&rows),
                            error: format!("part {part} stalled"),
                        });
                    }
                    continue;
                }
            };
            let part = answer.part;
            if here.contains(&part) {
                here_left -= 1;
                if here_left == 0 {
                    here_done = Some((Instant::now(), started.elapsed()));
                }
            } else {
                in_flight.0[part] = None;
            }
            match answer.rows {
                Ok(part_rows) => {
                    if answer.node != "here" {
                        let bytes = part_rows
                            .iter()
                            .map(|b| b.get_array_memory_size() as u64)
                            .sum();
                        self.counters.exchanged(bytes, answer.took.as_secs_f64());
                    }
                    self.report(part, answer.node, &part_rows, answer.took, 1);
                    rows[part] = Some(part_rows);
                }
                Err(PartFailure::Here(e)) if !is_exchange_failure(&e) => {
                    return Err(RoundEnd::Statement(e));
                }
                Err(failure) => {
                    return Err(RoundEnd::Parts {
                        gave_rows: gave_rows(&rows),
                        error: format!("part {part} of round {round:x}: {failure}"),
                    });
                }
            }
        }
        let mut gathered = GatheredParts::new(parts, &ctx.memory);
        for (part, part_rows) in rows.into_iter().enumerate() {
            gathered
                .put(part, part_rows.expect("every part gave its rows"))
                .map_err(RoundEnd::Statement)?;
        }
        Ok(gathered)
    }

    /// Asks `request`'s part of `peer`; its answer comes on `answers`.
    fn ask_in_round(
        &self,
        peers: &Arc<dyn Peers>,
        peer: &Peer,
        request: PartRequest,
        answers: &mpsc::Sender<RoundAnswer>,
        ctx: &ExecContext,
    ) -> Ask {
        self.counters.parts_asked.fetch_add(1, Ordering::Relaxed);
        let running = peers.run_part(peer, &request);
        let answers = answers.clone();
        let started = Instant::now();
        let node = peer.name.clone();
        let part = request.part;
        let task = ctx.runtime.spawn(async move {
            let rows = running.await.map_err(PartFailure::There);
            let took = started.elapsed();
            let _ = answers.send(RoundAnswer {
                part,
                node,
                rows,
                took,
            });
        });
        Ask {
            started,
            task: task.abort_handle(),
        }
    }
}

/// A part's answer in a round.
struct RoundAnswer {
    part: usize,
    node: String,
    rows: Result<Vec<RecordBatch>, PartFailure>,
    took: Duration,
}

/// Why a part gave no rows: its error here, or what the node asked answered.
enum PartFailure {
    Here(ExecError),
    There(String),
}

impl std::fmt::Display for PartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartFailure::Here(e) => write!(f, "{e}"),
            PartFailure::There(e) => write!(f, "{e}"),
        }
    }
}

/// A number for a new round, unlike any other node's: the process's random hash keys mixed
/// with a count of its rounds.
fn new_round() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static ROUNDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(ROUNDS.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
