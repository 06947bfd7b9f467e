//! EXPLAIN ANALYZE: rows and time per operator, gathered while the plan runs.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pondra_planner::PhysicalPlan;

/// What one plan node did: rows it produced and time spent in its own work (its inputs' time
/// is theirs).
#[derive(Default)]
pub struct NodeStats {
    rows: AtomicU64,
    nanos: AtomicU64,
    /// Row groups or files a scan did not read because their statistics ruled its filter out.
    skipped: AtomicU64,
    /// Groups an aggregation finished as runs of clustered keys, without its hash table.
    runs: AtomicU64,
    /// Whether a scan took the rows an earlier scan of its table kept, instead of reading.
    reused: AtomicBool,
    /// Bytes (in memory) of the rows a sort, join or aggregation wrote to disk.
    spilled: AtomicU64,
    /// Pages of row groups read that a scan skipped by their ranges in the page index.
    skipped_pages: AtomicU64,
}

impl NodeStats {
    pub fn add(&self, rows: usize, elapsed: Duration) {
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
        self.nanos
            .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn add_time(&self, elapsed: Duration) {
        self.add(0, elapsed);
    }

    pub fn add_skipped(&self, units: usize) {
        self.skipped.fetch_add(units as u64, Ordering::Relaxed);
    }

    pub fn add_runs(&self, groups: usize) {
        self.runs.fetch_add(groups as u64, Ordering::Relaxed);
    }

    pub fn add_skipped_pages(&self, pages: usize) {
        self.skipped_pages
            .fetch_add(pages as u64, Ordering::Relaxed);
    }

    pub fn add_spilled(&self, bytes: usize) {
        self.spilled.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn set_reused(&self) {
        self.reused.store(true, Ordering::Relaxed);
    }
}

/// The stats of every node of one running plan, by the node's address.
#[derive(Default)]
pub struct Profile {
    nodes: Mutex<HashMap<usize, Arc<NodeStats>>>,
}

impl Profile {
    pub fn stats(&self, node: &PhysicalPlan) -> Arc<NodeStats> {
        let key = node as *const PhysicalPlan as usize;
        let mut nodes = self.nodes.lock().expect("profile lock");
        nodes.entry(key).or_default().clone()
    }

    pub fn clear(&self) {
        self.nodes.lock().expect("profile lock").clear();
    }

    /// The plan as a tree, each node with its rows and time.
    pub fn render(&self, plan: &PhysicalPlan) -> String {
        plan.render(&|node| self.annotation(node))
    }

    /// What EXPLAIN ANALYZE adds to a node's line: its rows, its own time, what it skipped.
    fn annotation(&self, plan: &PhysicalPlan) -> String {
        let stats = self.stats(plan);
        let rows = stats.rows.load(Ordering::Relaxed);
        let millis = stats.nanos.load(Ordering::Relaxed) as f64 / 1e6;
        let mut skipped = match stats.skipped.load(Ordering::Relaxed) {
            0 => String::new(),
            units => format!(" skipped={units}"),
        };
        if let groups @ 1.. = stats.runs.load(Ordering::Relaxed) {
            let _ = write!(skipped, " runs={groups}");
        }
        if stats.reused.load(Ordering::Relaxed) {
            skipped.push_str(" reused");
        }
        if let pages @ 1.. = stats.skipped_pages.load(Ordering::Relaxed) {
            let _ = write!(skipped, " skipped_pages={pages}");
        }
        if let bytes @ 1.. = stats.spilled.load(Ordering::Relaxed) {
            let _ = write!(
                skipped,
                " spilled={:.1} MB",
                bytes as f64 / (1 << 20) as f64
            );
        }
        format!("  [rows={rows} time={millis:.3} ms{skipped}]")
    }
}
