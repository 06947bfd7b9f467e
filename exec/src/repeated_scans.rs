//! A scan that a query repeats reads its files once (ADR 0034). A decorrelated
//! subquery often reads a table that the outer query reads too, narrowed by the same keys:
//! TPC-H q2's subquery and outer query both read partsupp for the parts of one size and type,
//! q17's both read lineitem for the parts of one brand and container, and q20 filters part by
//! the same name twice. The first filtered scan of such a table to run reads the columns that
//! all the table's scans read, and keeps the rows it kept while they are few. A later scan of
//! the table with the same filter, whose joins hold only keys that the first scan's key checks
//! pass, takes those rows instead of reading the files: its joins drop what it does not need.
//! A scan with a predicate may also take the rows of an unfiltered scan of its table, and
//! apply its predicate to them (TPC-H q21 reads lineitem for the same orders twice, once with
//! `l_receiptdate > l_commitdate`). Physical planning groups the scans and says which keeps
//! its rows (`repeat` on the plan's scans); this keeps the rows, and decides as each later
//! scan starts whether they cover it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use arrow::array::{MutableArrayData, RecordBatch, RecordBatchOptions, make_array};
use pondra_planner::{Expr, PhysicalPlan};

use crate::Result;
use crate::join::HashJoin;
use crate::memory::{MemoryPool, Reservation};
use crate::scan_filter::ScanFilter;

/// A scan keeps its rows for a later scan only up to this many bytes: beyond, they are not
/// few, and holding them would cost more memory than reading again costs time.
const KEPT_BYTES: usize = 256 << 20;

/// The rows scans kept for later scans of their group (numbered by physical planning).
#[derive(Default)]
pub struct RepeatedScans {
    kept: Mutex<HashMap<usize, Vec<Arc<KeptScan>>>>,
}

/// How a filtered Parquet scan gets its rows.
pub enum Repeat {
    /// No other scan reads its table with its predicate: it reads as planned.
    Once,
    /// It reads `scan` (the planned scan, with the columns every scan of its group reads) and
    /// keeps its rows for the group.
    Keep { scan: PhysicalPlan, group: usize },
    /// It takes the rows an earlier scan kept, and keeps those `refilter` passes (the scan's
    /// predicate, when the earlier scan had none).
    Reuse {
        kept: Arc<KeptScan>,
        refilter: Option<Expr>,
    },
}

/// The rows a filtered scan kept, and what it kept them by.
pub struct KeptScan {
    columns: Option<Vec<usize>>,
    joins: Vec<KeptJoin>,
    /// The rows of each morsel, in scan order.
    pub morsels: Vec<Vec<RecordBatch>>,
    /// What those rows hold, reserved from the memory pool until the query ends.
    _memory: Reservation,
}

/// A join whose keys a kept scan checked: over the scan's columns `keys`, at the join's key
/// columns `columns` (all when `None`).
struct KeptJoin {
    join: Arc<HashJoin>,
    keys: Vec<Expr>,
    columns: Option<Vec<usize>>,
}

impl RepeatedScans {
    /// How scan `node`, which drops the rows `filter` rejects, gets its rows.
    pub fn repeat(&self, node: &PhysicalPlan, filter: &ScanFilter<'_>) -> Result<Repeat> {
        // Most scans share nothing (physical planning left them no group).
        let Some(repeat) = node.scan_repeat() else {
            return Ok(Repeat::Once);
        };
        let columns = scan_columns(node);
        let kept = self.kept.lock().expect("kept scans lock");
        for scan in kept.get(&repeat.group).into_iter().flatten() {
            if scan.covers(columns, filter)? {
                return Ok(Repeat::Reuse {
                    kept: scan.clone(),
                    refilter: None,
                });
            }
        }
        if let (Some(predicate), Some(unfiltered)) = (filter.predicate(), repeat.unfiltered) {
            for scan in kept.get(&unfiltered).into_iter().flatten() {
                if scan.covers(columns, filter)? {
                    return Ok(Repeat::Reuse {
                        kept: scan.clone(),
                        refilter: Some(predicate.clone()),
                    });
                }
            }
        }
        Ok(match &repeat.keep {
            Some(all_columns) => Repeat::Keep {
                scan: node.scan_reading(all_columns.clone()),
                group: repeat.group,
            },
            None => Repeat::Once,
        })
    }

    /// Keeps the rows `morsels` that scan `scan` kept through `filter`, whose joins are
    /// `joins` (among others, as `Arc`s).
    pub fn keep(
        &self,
        group: usize,
        scan: &PhysicalPlan,
        filter: &ScanFilter<'_>,
        joins: &[&Arc<HashJoin>],
        (morsels, memory): (Vec<Vec<RecordBatch>>, Reservation),
    ) {
        let columns = scan_columns(scan);
        let mut kept_joins = Vec::with_capacity(filter.joins().len());
        for checked in filter.joins() {
            let Some(join) = joins
                .iter()
                .find(|join| std::ptr::eq(Arc::as_ptr(join), checked.join))
            else {
                return;
            };
            kept_joins.push(KeptJoin {
                join: Arc::clone(join),
                keys: checked.keys.clone(),
                columns: checked.key_columns().map(<[usize]>::to_vec),
            });
        }
        let scan = KeptScan {
            columns: columns.map(<[usize]>::to_vec),
            joins: kept_joins,
            morsels,
            _memory: memory,
        };
        let mut kept = self.kept.lock().expect("kept scans lock");
        kept.entry(group).or_default().push(Arc::new(scan));
    }
}

impl KeptScan {
    /// Whether these rows, kept by a scan with the same predicate, hold every row a scan of
    /// `columns` with filter `filter` would pass to the operators above it: every column read,
    /// and for each join whose keys these rows were checked against, one of `filter`'s joins
    /// on the same keys whose build keys all pass that check.
    fn covers(&self, columns: Option<&[usize]>, filter: &ScanFilter<'_>) -> Result<bool> {
        let has_columns = match (&self.columns, columns) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(kept), Some(wanted)) => wanted.iter().all(|c| kept.contains(c)),
        };
        if !has_columns {
            return Ok(false);
        }
        for kept in &self.joins {
            let mut passed = false;
            for join in filter.joins().iter().filter(|join| join.keys == kept.keys) {
                if join.join.keys_pass(
                    join.key_columns(),
                    &join.keys,
                    &kept.join,
                    kept.columns.as_deref(),
                )? {
                    passed = true;
                    break;
                }
            }
            if !passed {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The rows a scan keeps for a later one, morsel by morsel, until they pass `KEPT_BYTES` or
/// the memory pool refuses them.
pub struct ScanRecorder {
    morsels: Vec<Mutex<Vec<RecordBatch>>>,
    /// How many morsels were read: a scan a LIMIT stops early keeps nothing.
    read: AtomicUsize,
    too_many: AtomicBool,
    memory: Mutex<Reservation>,
}

impl ScanRecorder {
    pub fn new(morsels: usize, memory: &Arc<MemoryPool>) -> ScanRecorder {
        ScanRecorder {
            morsels: (0..morsels).map(|_| Mutex::default()).collect(),
            read: AtomicUsize::new(0),
            too_many: AtomicBool::new(false),
            memory: Mutex::new(memory.reservation()),
        }
    }

    pub fn record(&self, morsel: usize, batches: &[RecordBatch]) {
        self.read.fetch_add(1, Relaxed);
        if self.too_many.load(Relaxed) {
            return;
        }
        let batches: Vec<RecordBatch> = batches.iter().map(compacted).collect();
        let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        let kept = {
            let mut memory = self.memory.lock().expect("kept memory lock");
            memory.bytes() + bytes <= KEPT_BYTES && memory.try_grow(bytes)
        };
        if !kept {
            self.give_up();
            return;
        }
        *self.morsels[morsel].lock().expect("kept morsel lock") = batches;
    }

    /// Keeps nothing: lets go of the rows kept so far and of their memory.
    fn give_up(&self) {
        self.too_many.store(true, Relaxed);
        for morsel in &self.morsels {
            morsel.lock().expect("kept morsel lock").clear();
        }
        self.memory.lock().expect("kept memory lock").free();
    }

    /// The rows of every morsel, with the memory they hold, unless they grew too many or some
    /// morsel was not read.
    pub fn finish(self) -> Option<(Vec<Vec<RecordBatch>>, Reservation)> {
        if self.too_many.into_inner() || self.read.into_inner() < self.morsels.len() {
            return None;
        }
        let rows = self
            .morsels
            .into_iter()
            .map(|m| m.into_inner().expect("kept morsel lock"))
            .collect();
        Some((rows, self.memory.into_inner().expect("kept memory lock")))
    }
}

/// `batch` with each column copied into buffers of its size when it holds far more: columns
/// read for a few kept rows keep the capacity of a whole batch.
fn compacted(batch: &RecordBatch) -> RecordBatch {
    let columns = batch
        .columns()
        .iter()
        .map(|column| {
            let data = column.to_data();
            let needed = data.get_slice_memory_size().unwrap_or(usize::MAX);
            if needed.saturating_mul(2) >= column.get_array_memory_size() {
                return column.clone();
            }
            let mut copy = MutableArrayData::new(vec![&data], false, data.len());
            match copy.try_extend(0, 0, data.len()) {
                Ok(()) => make_array(copy.freeze()),
                Err(_) => column.clone(),
            }
        })
        .collect();
    RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .expect("the same columns")
}

/// The columns scan `node` reads (all when `None`).
fn scan_columns(node: &PhysicalPlan) -> Option<&[usize]> {
    match node {
        PhysicalPlan::TableScan { columns, .. } | PhysicalPlan::ParquetScan { columns, .. } => {
            columns.as_deref()
        }
        _ => unreachable!("only scans repeat"),
    }
}
