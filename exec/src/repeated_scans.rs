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
//! `l_receiptdate > l_commitdate`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{MutableArrayData, RecordBatch, RecordBatchOptions, make_array};
use pondra_planner::{Expr, PhysicalPlan};

use crate::Result;
use crate::join::HashJoin;
use crate::memory::{MemoryPool, Reservation};
use crate::scan_filter::ScanFilter;
use crate::shared::for_each_node;

/// A scan keeps its rows for a later scan only up to this many bytes: beyond, they are not
/// few, and holding them would cost more memory than reading again costs time.
const KEPT_BYTES: usize = 256 << 20;

#[derive(Default)]
pub struct RepeatedScans {
    /// For each table (by its files) and predicate right above that more than one Parquet
    /// scan of the query reads with, the columns those scans read together (`None`: all).
    /// Found from the outermost plan.
    tables: OnceLock<HashMap<String, Option<Vec<usize>>>>,
    kept: Mutex<HashMap<String, Vec<Arc<KeptScan>>>>,
}

/// How a filtered Parquet scan gets its rows.
pub enum Repeat {
    /// No other scan reads its table with its predicate: it reads as planned.
    Once,
    /// It reads `scan` (the planned scan, with the columns every scan of the table reads) and
    /// keeps its rows under `table`.
    Keep { scan: PhysicalPlan, table: String },
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
    /// Finds the tables that `plan` and its subqueries read in more than one scan with the
    /// same filter.
    /// Only the first plan counts: the others are its subqueries.
    pub fn find_repeated(&self, plan: &PhysicalPlan) -> Result<()> {
        if self.tables.get().is_some() {
            return Ok(());
        }
        let mut scans: HashMap<String, (usize, Option<Vec<usize>>)> = HashMap::new();
        // Per table, the scans with a predicate: they may take an unfiltered scan's rows.
        let mut filtered: HashMap<String, (usize, Option<Vec<usize>>)> = HashMap::new();
        for_each_node(plan, &mut |scan| {
            let predicate = scan.scan_filter();
            if let Some((key, columns)) = scan_key(scan, predicate) {
                let (count, read) = scans.entry(key).or_insert_with(|| (0, Some(Vec::new())));
                add_scan(count, read, columns);
                if predicate.is_some() {
                    let (count, read) = filtered
                        .entry(scan_key(scan, None).expect("a scan").0)
                        .or_insert_with(|| (0, Some(Vec::new())));
                    add_scan(count, read, columns);
                }
            }
        });
        // An unfiltered scan of a table that filtered scans read too reads their columns.
        for (table, (count, columns)) in filtered {
            if let Some((unfiltered, read)) = scans.get_mut(&table) {
                *unfiltered += count;
                add_columns(read, columns.as_deref());
            }
        }
        let repeated = scans
            .into_iter()
            .filter(|(_, (count, _))| *count > 1)
            .map(|(table, (_, columns))| (table, columns))
            .collect();
        let _ = self.tables.set(repeated);
        Ok(())
    }

    /// How scan `node`, which drops the rows `filter` rejects, gets its rows.
    pub fn repeat(&self, node: &PhysicalPlan, filter: &ScanFilter<'_>) -> Result<Repeat> {
        let Some((key, columns)) = scan_key(node, filter.predicate()) else {
            return Ok(Repeat::Once);
        };
        // Most queries repeat no scan: they name none of their scans.
        let Some(tables) = self.tables.get().filter(|tables| !tables.is_empty()) else {
            return Ok(Repeat::Once);
        };
        let kept = self.kept.lock().expect("kept scans lock");
        for scan in kept.get(&key).into_iter().flatten() {
            if scan.covers(columns, filter)? {
                return Ok(Repeat::Reuse {
                    kept: scan.clone(),
                    refilter: None,
                });
            }
        }
        if let Some(predicate) = filter.predicate() {
            let unfiltered = kept.get(&scan_key(node, None).expect("a scan").0);
            for scan in unfiltered.into_iter().flatten() {
                if scan.covers(columns, filter)? {
                    return Ok(Repeat::Reuse {
                        kept: scan.clone(),
                        refilter: Some(predicate.clone()),
                    });
                }
            }
        }
        let Some(all_columns) = tables.get(&key) else {
            return Ok(Repeat::Once);
        };
        Ok(Repeat::Keep {
            scan: node.scan_reading(all_columns.clone()),
            table: key,
        })
    }

    /// Keeps the rows `morsels` that scan `scan` kept through `filter`, whose joins are
    /// `joins` (among others, as `Arc`s).
    pub fn keep(
        &self,
        table: String,
        scan: &PhysicalPlan,
        filter: &ScanFilter<'_>,
        joins: &[&Arc<HashJoin>],
        (morsels, memory): (Vec<Vec<RecordBatch>>, Reservation),
    ) {
        let Some((_, columns)) = scan_key(scan, None) else {
            return;
        };
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
        kept.entry(table).or_default().push(Arc::new(scan));
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

/// Counts one more scan of a group, which reads `columns` (all when `None`), into the group's
/// count and the columns its scans read together.
fn add_scan(count: &mut usize, read: &mut Option<Vec<usize>>, columns: Option<&[usize]>) {
    *count += 1;
    add_columns(read, columns);
}

/// Adds `columns` (all when `None`) to the columns a group's scans read together.
fn add_columns(read: &mut Option<Vec<usize>>, columns: Option<&[usize]>) {
    *read = match (read.take(), columns) {
        (Some(mut read), Some(columns)) => {
            read.extend(columns);
            read.sort_unstable();
            read.dedup();
            Some(read)
        }
        _ => None,
    };
}

/// What names a scan with a predicate right above it (a lake table by its id, a table read
/// in place by its files), and the columns the scan reads; `None` if `node` is not a scan.
fn scan_key<'n>(
    node: &'n PhysicalPlan,
    predicate: Option<&Expr>,
) -> Option<(String, Option<&'n [usize]>)> {
    let (table, columns) = match node {
        PhysicalPlan::TableScan { table, columns, .. } => (format!("table {}", table.id), columns),
        PhysicalPlan::ParquetScan { table, columns, .. } => {
            let paths: Vec<_> = table.files.iter().map(|f| f.source.name()).collect();
            (paths.join("\n"), columns)
        }
        _ => return None,
    };
    Some((format!("{table}\n{predicate:?}"), columns.as_deref()))
}
