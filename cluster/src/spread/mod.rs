//! Spread queries (ADR 0076): a query's plan cut by the planner and run by several nodes of
//! the cluster, each on a slice of the largest table it reads. The node that got the query
//! coordinates (`gather.rs`); the others run the parts it asks of them (`part.rs`); where a
//! failed part runs next is `steps.rs`. How parts travel between nodes is the server's
//! (`Peers`, over Arrow Flight).

mod coordinate;
mod exchange;
mod gather;
mod part;
mod rounds;
mod steps;

#[cfg(test)]
mod simulation;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arrow::array::RecordBatch;
use pondra_planner::{DEFAULT_NETWORK_BYTES_PER_SECOND, SpreadMode};
use serde::{Deserialize, Serialize};

pub(crate) use coordinate::{Decided, inner_query};
pub(crate) use gather::ClusterGatherer;

/// Another node that may run parts of this node's queries.
#[derive(Clone, Debug)]
pub struct Peer {
    /// How the cluster names it (its HTTP address).
    pub name: String,
    /// Where its Flight door listens.
    pub flight: String,
    pub cores: usize,
}

/// The other nodes of the cluster and the way to them.
pub trait Peers: Send + Sync {
    /// This node's name in the cluster.
    fn own_name(&self) -> String;

    /// The nodes that may take part in a query now, in a fixed order.
    fn peers(&self) -> Vec<Peer>;

    /// Where this node's Flight door listens, as the others reach it.
    fn own_flight(&self) -> String;

    /// Runs `request` on `peer`: the rows of its part, or why not.
    fn run_part(
        &self,
        peer: &Peer,
        request: &PartRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>, String>> + Send + 'static>>;

    /// Delivers a part's rows of an exchange to the node whose Flight door is at `flight`;
    /// done once that node holds them all.
    fn deliver(
        &self,
        flight: &str,
        delivery: &Delivery,
        rows: Vec<RecordBatch>,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;
}

/// Which rows a delivery carries: part `from`'s rows for part `to` of exchange `exchange` in
/// round `round` of a spread query.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Delivery {
    pub round: u64,
    pub exchange: usize,
    pub from: usize,
    pub to: usize,
    pub parts: usize,
}

/// What a node is asked to run: a part of the statement's spread plan, planned over the
/// snapshot of `commit` with the coordinator's settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartRequest {
    pub statement: String,
    pub commit: u64,
    pub part: usize,
    pub parts: usize,
    /// The fragment's fingerprint, as the coordinator planned it.
    pub fingerprint: u64,
    pub time_zone: String,
    pub disabled_optimizers: String,
    /// The moment the statement runs at: what `now()` gives on every node.
    pub statement_micros: i64,
    /// The path from the plan's root to the scan the coordinator sliced.
    pub sliced: Vec<usize>,
    /// Whether the cut exchanges rows between the parts; then the round they run in and the
    /// Flight door of the node running each part.
    #[serde(default)]
    pub exchange: bool,
    #[serde(default)]
    pub round: u64,
    #[serde(default)]
    pub part_nodes: Vec<String>,
}

/// What `/stats` reports of spread queries.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SpreadStats {
    pub spread_queries: u64,
    pub parts_asked: u64,
    pub parts_retried: u64,
    pub parts_run_here: u64,
    pub exchange_rounds: u64,
    pub bytes_exchanged: u64,
    pub network_bytes_per_second: u64,
}

/// A node's part in spread queries: its peers, its default, its measures.
pub(crate) struct SpreadState {
    peers: RwLock<Option<Arc<dyn Peers>>>,
    /// The rows other parts delivered to the parts this node runs.
    mailboxes: std::sync::OnceLock<Arc<pondra_exec::Mailboxes>>,
    default_mode: Mutex<SpreadMode>,
    pub(crate) counters: Arc<Counters>,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) spread_queries: AtomicU64,
    pub(crate) parts_asked: AtomicU64,
    pub(crate) parts_retried: AtomicU64,
    pub(crate) parts_run_here: AtomicU64,
    /// Rounds of spread queries whose parts exchange rows.
    pub(crate) exchange_rounds: AtomicU64,
    pub(crate) bytes_exchanged: AtomicU64,
    /// What the last exchanges moved per second, smoothed.
    pub(crate) network_bytes_per_second: AtomicU64,
}

impl Counters {
    /// Notes that a part moved `bytes` in `seconds`.
    pub(crate) fn exchanged(&self, bytes: u64, seconds: f64) {
        self.bytes_exchanged.fetch_add(bytes, Ordering::Relaxed);
        // Small parts measure round trips, not throughput.
        if bytes < 1 << 20 || seconds <= 0.0 {
            return;
        }
        let measured = bytes as f64 / seconds;
        let _ = self.network_bytes_per_second.fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |old| {
                let old = old as f64;
                Some((0.7 * old + 0.3 * measured) as u64)
            },
        );
    }
}

impl Default for SpreadState {
    fn default() -> Self {
        let counters = Counters::default();
        counters
            .network_bytes_per_second
            .store(DEFAULT_NETWORK_BYTES_PER_SECOND as u64, Ordering::Relaxed);
        SpreadState {
            peers: RwLock::new(None),
            mailboxes: std::sync::OnceLock::new(),
            default_mode: Mutex::new(SpreadMode::Auto),
            counters: Arc::new(counters),
        }
    }
}

impl SpreadState {
    pub(crate) fn peers(&self) -> Option<Arc<dyn Peers>> {
        self.peers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The mailboxes of the parts this node runs, their rows held within `memory`.
    pub(crate) fn mailboxes(
        &self,
        memory: &Arc<pondra_exec::MemoryPool>,
    ) -> Arc<pondra_exec::Mailboxes> {
        self.mailboxes
            .get_or_init(|| Arc::new(pondra_exec::Mailboxes::new(memory.clone())))
            .clone()
    }

    pub(crate) fn default_mode(&self) -> SpreadMode {
        *self.default_mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stats(&self) -> SpreadStats {
        let c = &self.counters;
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SpreadStats {
            spread_queries: read(&c.spread_queries),
            parts_asked: read(&c.parts_asked),
            parts_retried: read(&c.parts_retried),
            parts_run_here: read(&c.parts_run_here),
            exchange_rounds: read(&c.exchange_rounds),
            bytes_exchanged: read(&c.bytes_exchanged),
            network_bytes_per_second: read(&c.network_bytes_per_second),
        }
    }
}

impl crate::node::Node {
    /// The other nodes this node's queries may spread to, and how to reach them.
    pub fn set_peers(&self, peers: Arc<dyn Peers>) {
        *self.spread.peers.write().unwrap_or_else(|e| e.into_inner()) = Some(peers);
    }

    /// Whether this node's sessions spread their queries unless they set otherwise
    /// (`--spread`).
    pub fn set_default_spread(&self, mode: SpreadMode) {
        *self
            .spread
            .default_mode
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// Spread queries coordinated here, their parts and the bytes they moved.
    pub fn spread_stats(&self) -> SpreadStats {
        self.spread.stats()
    }
}
