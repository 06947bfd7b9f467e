//! Rows a Parquet scan drops as it reads: those a filter right above it rejects, and those
//! whose key the build side of a hash join above it lacks (ADR 0014). Such a scan reads the
//! columns the filter and the keys need first, and the others only for the rows kept.
//!
//! A join's keys count when they are columns the scan reads, passed up unchanged through the
//! operators between (filters, projections of columns, and joins that emit each probe row at
//! most once and never for another probe row's sake), and when the join drops the probe rows
//! whose key its build side lacks. When only some of a join's key columns are the scan's, the
//! scan checks those alone against the values the build side holds in them, if it keeps
//! them (TPC-H q5 joins lineitem on `l_orderkey` and a supplier's nation). A join whose keys
//! keep most rows stops being asked.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use arrow::array::{Array, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{Schema, SchemaRef};
use pondra_planner::{Expr, JoinKind, PhysicalPlan};

use crate::Result;
use crate::dictionary_filter::{AnswerCache, DictionaryFilter};
use crate::join::HashJoin;
use crate::morsel::ScanStatistics;
use crate::prune::ranged_column;
use crate::scan::widen;

/// A join's keys stop being checked at the scan once they have kept more than three quarters
/// of at least this many rows: the join checks them anyway, and they save little.
const JOIN_KEYS_TRIAL_ROWS: usize = 65_536;

/// The keys of a hash join above a scan, as expressions over the scan's columns: all of them,
/// or those of some key columns whose values the build side knows.
pub struct JoinKeys<'p> {
    pub join: &'p HashJoin,
    pub keys: Vec<Expr>,
    /// The key columns `keys` are, when not all.
    columns: Option<Vec<usize>>,
    rows: AtomicUsize,
    kept: AtomicUsize,
}

impl<'p> JoinKeys<'p> {
    pub fn new(join: &'p HashJoin, keys: Vec<Expr>, columns: Option<Vec<usize>>) -> JoinKeys<'p> {
        JoinKeys {
            join,
            keys,
            columns,
            rows: AtomicUsize::new(0),
            kept: AtomicUsize::new(0),
        }
    }

    /// The join's key columns `keys` are, when not all.
    pub fn key_columns(&self) -> Option<&[usize]> {
        self.columns.as_deref()
    }

    /// Whether the keys have dropped enough rows so far to be worth checking.
    fn selective(&self) -> bool {
        let (rows, kept) = (self.rows.load(Relaxed), self.kept.load(Relaxed));
        rows < JOIN_KEYS_TRIAL_ROWS || kept * 4 <= rows * 3
    }
}

/// What a scan drops as it reads, and how many rows it has kept so far.
pub struct ScanFilter<'p> {
    /// A filter right above the scan.
    predicate: Option<&'p Expr>,
    joins: Vec<JoinKeys<'p>>,
    /// The columns the predicate and the keys read: sorted, deduplicated.
    columns: Vec<usize>,
    /// The columns the keys read: sorted, deduplicated.
    key_columns: Vec<usize>,
    /// The predicate's conjuncts over one string column, answered from the column's
    /// dictionary when it is read first.
    dictionary: Option<DictionaryFilter>,
    /// Whether the predicate waits for the rows the keys keep, read with the other columns
    /// (`narrowest_joins`), instead of reading its columns first.
    deferred: bool,
    rows: AtomicUsize,
    kept: AtomicUsize,
}

impl<'p> ScanFilter<'p> {
    /// The filter of a scan `node`; `None` when there is nothing to drop.
    pub fn new(
        predicate: Option<&'p Expr>,
        joins: Vec<JoinKeys<'p>>,
        node: &PhysicalPlan,
        statistics: Option<&ScanStatistics>,
    ) -> Option<ScanFilter<'p>> {
        if predicate.is_none() && joins.is_empty() {
            return None;
        }
        // A column whose sampled rows repeat their values is likely dictionary-encoded in
        // every row group; one of mostly distinct values is stored plain, and reading it as a
        // dictionary would build one by hashing every string.
        let few_values = |column: usize| {
            let sample = statistics
                .filter(|s| s.parquet)
                .and_then(|s| s.sample(column));
            sample.is_some_and(|sample| sample.distinct * 4 <= sample.rows)
        };
        let (joins, deferred) = match statistics {
            Some(statistics) => narrowest_joins(joins, predicate, (&node.schema(), statistics)),
            None => (joins, false),
        };
        if predicate.is_none() && joins.is_empty() {
            return None;
        }
        let dictionary = predicate
            .filter(|_| !deferred)
            .and_then(|predicate| DictionaryFilter::new(predicate, &node.schema(), few_values));
        let mut key_columns: Vec<usize> = joins
            .iter()
            .flat_map(|j| j.keys.iter().flat_map(Expr::column_indices))
            .collect();
        key_columns.sort_unstable();
        key_columns.dedup();
        let mut columns: Vec<usize> = match deferred {
            true => Vec::new(),
            false => predicate.map(Expr::column_indices).unwrap_or_default(),
        };
        columns.extend(&key_columns);
        columns.sort_unstable();
        columns.dedup();
        Some(ScanFilter {
            predicate,
            joins,
            columns,
            key_columns,
            dictionary,
            deferred,
            rows: AtomicUsize::new(0),
            kept: AtomicUsize::new(0),
        })
    }

    /// Whether a morsel whose columns lie within `range(column)` may hold rows every join
    /// keeps: false when an integer or date key column's range misses its build side's
    /// least-to-greatest keys altogether.
    pub fn joins_may_match(
        &self,
        schema: &Schema,
        range: &dyn Fn(usize) -> Option<(i64, i64)>,
    ) -> bool {
        self.joins.iter().all(|join| {
            join.keys.iter().enumerate().all(|(i, key)| {
                let position = join.columns.as_ref().map_or(i, |columns| columns[i]);
                let bounds = join.join.key_bounds(position);
                let column = ranged_column(key, schema);
                match (bounds, column.and_then(range)) {
                    (Some((low, high)), Some((least, greatest))) => {
                        least <= high && greatest >= low
                    }
                    _ => true,
                }
            })
        })
    }

    /// The filter right above the scan, which the scan applies.
    pub fn predicate(&self) -> Option<&'p Expr> {
        self.predicate
    }

    /// The joins whose keys the scan checks.
    pub fn joins(&self) -> &[JoinKeys<'p>] {
        &self.joins
    }

    /// The columns to read first.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Whether string columns read first are read as dictionaries.
    pub fn reads_dictionaries(&self) -> bool {
        self.dictionary.is_some()
    }

    /// Which rows of a batch of the filter's columns, as read first, to keep.
    pub fn mask_read(
        &self,
        read: &RecordBatch,
        schema: &SchemaRef,
        answers: &mut AnswerCache,
    ) -> Result<BooleanArray> {
        let predicate = self.predicate.filter(|_| !self.deferred);
        let mut keep = match (&self.dictionary, predicate) {
            (Some(dictionary), _) => dictionary
                .mask(read, schema, &self.columns, answers)?
                .values()
                .clone(),
            (None, Some(predicate)) => {
                let mask =
                    crate::select::predicate_mask(predicate, &widen(read, schema, &self.columns)?)?;
                true_where_valid(&mask)
            }
            (None, None) => BooleanBuffer::new_set(read.num_rows()),
        };
        if self.joins.iter().any(JoinKeys::selective) {
            keep = self.keep_keyed(&self.keys_batch(read, schema)?, keep)?;
        }
        Ok(BooleanArray::new(keep, None))
    }

    /// `keep` narrowed to the rows of `batch` (of the scan's schema, with at least its key
    /// columns) whose keys the joins still checked have.
    fn keep_keyed(&self, batch: &RecordBatch, mut keep: BooleanBuffer) -> Result<BooleanBuffer> {
        for join in self.joins.iter().filter(|j| j.selective()) {
            let has_key = join
                .join
                .has_keys(&join.keys, join.columns.as_deref(), batch)?;
            let before = keep.count_set_bits();
            keep = &keep & has_key.values();
            join.rows.fetch_add(before, Relaxed);
            join.kept.fetch_add(keep.count_set_bits(), Relaxed);
        }
        Ok(keep)
    }

    /// The key columns of `read` (the filter's columns, as read first) as a batch of
    /// `schema`, strings read as dictionaries decoded.
    fn keys_batch(&self, read: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
        let mut fields = Vec::with_capacity(self.key_columns.len());
        let mut arrays = Vec::with_capacity(self.key_columns.len());
        for &column in &self.key_columns {
            let position = self
                .columns
                .binary_search(&column)
                .expect("the keys' columns are read first");
            let field = schema.field(column);
            let array = read.column(position);
            arrays.push(match array.data_type() == field.data_type() {
                true => array.clone(),
                false => arrow::compute::cast(array, field.data_type())?,
            });
            fields.push(field.clone());
        }
        let options = RecordBatchOptions::new().with_row_count(Some(read.num_rows()));
        let keys =
            RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)?;
        widen(&keys, schema, &self.key_columns)
    }

    /// Whether to read the filter's columns first and the other `columns` only for the rows
    /// it keeps: when it reads no more columns than the others, and has kept at most a
    /// quarter of the rows so far. Skipping rows saves decoding, not decompressing, which
    /// a filter that keeps most rows or reads most columns does not repay. A filter on a
    /// string column always does: it reads the column's dictionary instead of its strings.
    pub fn reads_first(&self, columns: &[usize]) -> bool {
        let others = columns.len() - self.columns.len();
        let (rows, kept) = (self.rows.load(Relaxed), self.kept.load(Relaxed));
        !self.columns.is_empty()
            && (self.dictionary.is_some() || (self.columns.len() <= others && kept * 4 <= rows))
    }

    /// The rows of `batches`, read whole, that the predicate keeps and whose keys the joins
    /// have: dropped here, they are not copied or probed on their way to the joins.
    pub fn apply(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let keyed = self.joins.iter().any(JoinKeys::selective);
        if self.predicate.is_none() && !keyed {
            return Ok(batches);
        }
        let mut kept = Vec::with_capacity(batches.len());
        for batch in batches {
            let mut keep = match self.predicate {
                Some(predicate) => {
                    true_where_valid(&crate::select::predicate_mask(predicate, &batch)?)
                }
                None => BooleanBuffer::new_set(batch.num_rows()),
            };
            if keyed {
                keep = self.keep_keyed(&batch, keep)?;
            }
            let mask = BooleanArray::new(keep, None);
            let batch = crate::select::filter_batch(&batch, &mask)?;
            self.count(mask.len(), batch.num_rows());
            kept.push(batch);
        }
        Ok(kept)
    }

    /// The rows read for the keys' kept rows (columns of the scan's schema) that the
    /// predicate keeps, when it waited for them.
    pub fn apply_deferred(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let Some(predicate) = self.predicate.filter(|_| self.deferred) else {
            return Ok(batches);
        };
        batches
            .iter()
            .map(|batch| {
                let mask = crate::select::predicate_mask(predicate, batch)?;
                crate::select::filter_batch(
                    batch,
                    &BooleanArray::new(true_where_valid(&mask), None),
                )
            })
            .collect()
    }

    pub fn count(&self, rows: usize, kept: usize) {
        self.rows.fetch_add(rows, Relaxed);
        self.kept.fetch_add(kept, Relaxed);
    }
}

/// A join whose keys keep at most this share of a scan's rows has the scan read its key
/// columns first, without other joins' keys.
const NARROW_KEEP: f64 = 0.05;

/// A join whose keys keep at most this share of a scan's rows has the scan read its key
/// columns first, alone: the predicate's columns are read with the others, for the rows the
/// keys keep. The share is an estimate (sampled distinct values), and a predicate read first
/// may drop most of the rows the keys keep: the threshold is low.
const DEFER_KEEP: f64 = 0.01;

/// The joins whose keys a scan checks as it reads, and whether the predicate waits for the
/// rows they keep. When one join's keys keep few rows (its build side holds a small share of
/// the values its key columns span), the scan reads no other join's key columns first: they
/// are read only for the rows the narrowest keeps, and those joins check their own keys.
/// Reading another column whole to drop a share of the few rows left costs more than it saves
/// (TPC-H q2's subquery reads partsupp's part keys, keeping 0.4% of rows, before its supplier
/// keys, which would keep 20%). When the keys keep very few rows, the predicate's columns wait
/// for them too.
fn narrowest_joins<'p>(
    mut joins: Vec<JoinKeys<'p>>,
    predicate: Option<&Expr>,
    (schema, statistics): (&SchemaRef, &ScanStatistics),
) -> (Vec<JoinKeys<'p>>, bool) {
    // The share of rows a join's keys keep, about: its build rows over the distinct values of
    // a key column, those of the sampled rows scaled up (order keys, which fill a quarter of
    // their span), at most the values it spans.
    let table_rows = statistics.rows;
    let kept_share = |join: &JoinKeys| -> f64 {
        let build_rows = join.join.build_rows() as f64;
        join.keys
            .iter()
            .filter_map(|key| {
                let stats = statistics.columns.get(ranged_column(key, schema)?)?;
                let span = stats.max?.checked_sub(stats.min?)?.checked_add(1)? as f64;
                let distinct = match stats.sample {
                    Some(sample) if sample.rows > 0 => {
                        (table_rows as f64 * sample.distinct as f64 / sample.rows as f64).min(span)
                    }
                    _ => span,
                };
                Some((build_rows / distinct.max(1.0)).min(1.0))
            })
            .fold(1.0, f64::min)
    };
    let shares: Vec<f64> = joins.iter().map(kept_share).collect();
    let Some((narrowest, &share)) = shares.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1))
    else {
        return (joins, false);
    };
    if share > NARROW_KEEP {
        return (joins, false);
    }
    let mut read_first: Vec<usize> = joins[narrowest]
        .keys
        .iter()
        .flat_map(Expr::column_indices)
        .collect();
    let predicate_columns = predicate.map(Expr::column_indices).unwrap_or_default();
    let deferred = share <= DEFER_KEEP && predicate_columns.iter().any(|c| !read_first.contains(c));
    if !deferred {
        read_first.extend(predicate_columns);
    }
    let mut position = 0;
    joins.retain(|join| {
        let keep = position == narrowest
            || join
                .keys
                .iter()
                .flat_map(Expr::column_indices)
                .all(|c| read_first.contains(&c));
        position += 1;
        keep
    });
    (joins, deferred)
}

/// The mask's true values, NULL counting as false.
fn true_where_valid(mask: &BooleanArray) -> BooleanBuffer {
    match mask.nulls() {
        Some(nulls) => mask.values() & nulls.inner(),
        None => mask.values().clone(),
    }
}

/// The keys of the hash joins among `above` (the streaming operators above a scan, lowest
/// first) that a scan of `width` columns can check as it reads.
pub fn join_keys_over_scan<'p>(
    above: impl Iterator<Item = Above<'p>>,
    width: usize,
) -> Vec<JoinKeys<'p>> {
    // For each column of the rows at this point, the scan column it is, if it is one.
    let mut scan_columns: Vec<Option<usize>> = (0..width).map(Some).collect();
    let mut found = Vec::new();
    for operator in above {
        match operator {
            Above::RowFilter => {}
            Above::Projection(exprs) => scan_columns = through_projection(exprs, &scan_columns),
            Above::Join(join) => {
                found.extend(keys_over_scan(join, &scan_columns));
                // Probe columns keep their places; the build side's are not the scan's.
                if !passes_probe_rows(join.kind()) {
                    break;
                }
            }
            Above::Other => break,
        }
    }
    found
}

/// For each column a projection outputs, the scan column it is, given the scan column (if
/// any) each of its input columns is: a plain column reference passes it on.
pub fn through_projection(exprs: &[Expr], scan_columns: &[Option<usize>]) -> Vec<Option<usize>> {
    exprs
        .iter()
        .map(|e| match e {
            Expr::Column { index, .. } => scan_columns.get(*index).copied().flatten(),
            _ => None,
        })
        .collect()
}

/// The keys of `join` a scan can check, given which scan column (if any) each column of the
/// join's probe rows is: all of them, or the key columns that are the scan's and whose values
/// the build side knows.
fn keys_over_scan<'p>(join: &'p HashJoin, scan_columns: &[Option<usize>]) -> Option<JoinKeys<'p>> {
    let keys = join.droppable_probe_keys()?;
    let scan_column = |c: usize| scan_columns.get(c).copied().flatten();
    let over_scan = |key: &Expr| {
        key.column_indices()
            .iter()
            .all(|&c| scan_column(c).is_some())
    };
    let usable: Vec<usize> = (0..keys.len()).filter(|&k| over_scan(&keys[k])).collect();
    let columns = match usable.len() == keys.len() {
        true => None,
        false => Some(
            usable
                .into_iter()
                .filter(|&k| join.knows_key_column(k))
                .collect::<Vec<_>>(),
        ),
    };
    let picked = columns.clone().unwrap_or_else(|| (0..keys.len()).collect());
    if picked.is_empty() {
        return None;
    }
    let source = |c: usize| scan_column(c).expect("a scan column");
    let keys = picked
        .iter()
        .map(|&k| keys[k].remap_columns(&source))
        .collect();
    Some(JoinKeys::new(join, keys, columns))
}

/// A streaming operator above a scan, as far as the scan's join keys care.
pub enum Above<'p> {
    /// Keeps some rows, changes none.
    RowFilter,
    Projection(&'p [Expr]),
    Join(&'p HashJoin),
    Other,
}

/// Whether a join's output for a probe row comes from that row alone, with its columns in
/// place: a probe row dropped below it then changes nothing but its own output. Full and
/// right joins emit build rows by what all probe rows matched. A single join is left out
/// too: a probe row with two matches there is an error, which a row dropped below must not
/// hide.
fn passes_probe_rows(kind: JoinKind) -> bool {
    !matches!(
        kind,
        JoinKind::Full
            | JoinKind::Right
            | JoinKind::RightSemi
            | JoinKind::RightAnti
            | JoinKind::Single
    )
}
