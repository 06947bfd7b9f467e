//! The result a recursive CTE builds across its iterations: rows appended (dropping repeats
//! under UNION), or one row per key that later rows replace (`USING KEY`, ADR 0071).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use arrow::row::{OwnedRow, RowConverter, SortField};

use crate::Result;

/// Rows per batch when a keyed result is turned back into batches.
const BATCH_ROWS: usize = 8192;

/// What one iteration's rows did to the result.
pub(crate) struct Applied {
    /// The rows to emit now (a keyed result emits once, at the end).
    pub emit: Vec<RecordBatch>,
    /// The rows the next iteration reads by the CTE's name; none ends the recursion.
    pub working: Vec<RecordBatch>,
}

/// The result of a recursive CTE so far.
pub(crate) enum RecursiveResult {
    Appended {
        /// Under UNION, the rows produced so far, to drop repeats.
        seen: Option<NewRows>,
        /// Every row emitted, when the step reads `recurring.name`.
        so_far: Option<Vec<RecordBatch>>,
    },
    Keyed(Box<KeyedRows>),
    Aggregated(Box<AggregatedRows>),
}

/// Runs a keyed CTE's finalize plan over all the rows made so far (with their arrival
/// numbers): the result as it stands.
pub(crate) type Finalize<'a> = dyn FnMut(Vec<RecordBatch>) -> Result<Vec<RecordBatch>> + 'a;

impl RecursiveResult {
    /// An empty result; `keeps_rows` when the step reads the result so far.
    /// `finalized`: the schema of the finalize plan's rows, when the key has aggregates.
    pub fn new(
        schema: &SchemaRef,
        distinct: bool,
        key: Option<&[usize]>,
        keeps_rows: bool,
        finalized: Option<SchemaRef>,
    ) -> Result<RecursiveResult> {
        Ok(match (key, finalized) {
            (Some(key), Some(finalized)) => RecursiveResult::Aggregated(Box::new(
                AggregatedRows::new(finalized, key, distinct)?,
            )),
            (Some(key), None) => {
                RecursiveResult::Keyed(Box::new(KeyedRows::new(schema, key, distinct)?))
            }
            (None, Some(_)) => unreachable!("aggregates come with a key"),
            (None, None) => RecursiveResult::Appended {
                seen: distinct.then(|| NewRows::new(schema)).transpose()?,
                so_far: keeps_rows.then(Vec::new),
            },
        })
    }

    /// Adds the rows of the anchor or of one run of the step.
    pub fn apply(
        &mut self,
        rows: Vec<RecordBatch>,
        finalize: &mut Finalize<'_>,
    ) -> Result<Applied> {
        match self {
            RecursiveResult::Appended { seen, so_far } => {
                let added = match seen {
                    Some(seen) => seen.keep_new(rows)?,
                    None => rows,
                };
                let added: Vec<RecordBatch> =
                    added.into_iter().filter(|b| b.num_rows() > 0).collect();
                if let Some(so_far) = so_far {
                    so_far.extend(added.iter().cloned());
                }
                Ok(Applied {
                    emit: added.clone(),
                    working: added,
                })
            }
            RecursiveResult::Keyed(keyed) => Ok(Applied {
                emit: Vec::new(),
                working: keyed.apply(rows)?,
            }),
            RecursiveResult::Aggregated(aggregated) => Ok(Applied {
                emit: Vec::new(),
                working: aggregated.apply(rows, finalize)?,
            }),
        }
    }

    /// The result so far, for `recurring.name`.
    pub fn so_far(&self) -> Result<Vec<RecordBatch>> {
        match self {
            RecursiveResult::Appended { so_far, .. } => Ok(so_far.clone().unwrap_or_default()),
            RecursiveResult::Keyed(keyed) => keyed.batches(),
            RecursiveResult::Aggregated(aggregated) => Ok(aggregated.finalized.clone()),
        }
    }

    /// About how many bytes the result holds: the rows kept to drop repeats or to read as
    /// `recurring.name`, a key's rows, or every row made (with payload aggregates).
    pub fn held_bytes(&self) -> usize {
        let batches =
            |b: &[RecordBatch]| b.iter().map(|b| b.get_array_memory_size()).sum::<usize>();
        match self {
            RecursiveResult::Appended { seen, so_far } => {
                seen.as_ref().map_or(0, |s| s.seen.len() * 32)
                    + so_far.as_deref().map_or(0, batches)
            }
            RecursiveResult::Keyed(keyed) => {
                keyed.stored.iter().map(|r| r.as_ref().len() + 32).sum()
            }
            RecursiveResult::Aggregated(aggregated) => {
                batches(&aggregated.candidates) + batches(&aggregated.finalized)
            }
        }
    }

    /// The rows left to emit once the recursion has ended.
    pub fn finish(self) -> Result<Vec<RecordBatch>> {
        match self {
            RecursiveResult::Appended { .. } => Ok(Vec::new()),
            RecursiveResult::Keyed(keyed) => keyed.batches(),
            RecursiveResult::Aggregated(aggregated) => Ok(aggregated.finalized),
        }
    }
}

/// The rows a recursive CTE with UNION has produced so far, to drop repeats.
pub(crate) struct NewRows {
    converter: RowConverter,
    seen: std::collections::HashSet<Box<[u8]>>,
}

impl NewRows {
    fn new(schema: &SchemaRef) -> Result<NewRows> {
        Ok(NewRows {
            converter: converter(schema, 0..schema.fields().len())?,
            seen: Default::default(),
        })
    }

    /// The rows of `batches` not seen before (each once), now seen.
    fn keep_new(&mut self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            // Rows equal as SQL compares them (`-0.0` and `0.0`) are repeats.
            let canonical: Vec<ArrayRef> = batch
                .columns()
                .iter()
                .map(crate::float_equality::canonical_floats)
                .collect();
            let rows = self.converter.convert_columns(&canonical)?;
            let keep: BooleanArray = (0..batch.num_rows())
                .map(|i| Some(self.seen.insert(rows.row(i).as_ref().into())))
                .collect();
            out.push(crate::select::filter_batch(&batch, &keep)?);
        }
        Ok(out)
    }
}

/// The key columns of `batch`, floats made canonical, in `keys`' row format.
fn key_rows(keys: &RowConverter, key: &[usize], batch: &RecordBatch) -> Result<arrow::row::Rows> {
    let columns: Vec<ArrayRef> = key
        .iter()
        .map(|&k| crate::float_equality::canonical_floats(batch.column(k)))
        .collect();
    Ok(keys.convert_columns(&columns)?)
}

fn converter(schema: &SchemaRef, columns: impl Iterator<Item = usize>) -> Result<RowConverter> {
    let fields = columns
        .map(|c| SortField::new(schema.field(c).data_type().clone()))
        .collect();
    Ok(RowConverter::new(fields)?)
}

/// A keyed result: its rows in the order their keys first arrived, and where each key's is.
pub(crate) struct KeyedRows {
    schema: SchemaRef,
    key: Vec<usize>,
    keys: RowConverter,
    rows: RowConverter,
    slots: HashMap<Box<[u8]>, usize>,
    stored: Vec<OwnedRow>,
    /// Under UNION only rows that changed the result are worked on again.
    distinct: bool,
}

impl KeyedRows {
    fn new(schema: &SchemaRef, key: &[usize], distinct: bool) -> Result<KeyedRows> {
        assert!(!key.is_empty(), "a keyed recursive CTE has key columns");
        Ok(KeyedRows {
            schema: schema.clone(),
            key: key.to_vec(),
            keys: converter(schema, key.iter().copied())?,
            rows: converter(schema, 0..schema.fields().len())?,
            slots: HashMap::new(),
            stored: Vec::new(),
            distinct,
        })
    }

    /// Applies `batches` in order, each row replacing its key's row or adding one; returns
    /// the next working table: the rows as they came under UNION ALL, under UNION the final
    /// row of each key whose row is new or differs from the one before these rows.
    fn apply(&mut self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        // Each slot these rows touched, with its row before them (none for a new key).
        let mut before: HashMap<usize, Option<OwnedRow>> = HashMap::new();
        for batch in &batches {
            let keys = key_rows(&self.keys, &self.key, batch)?;
            let rows = self.rows.convert_columns(batch.columns())?;
            for i in 0..batch.num_rows() {
                let row = rows.row(i).owned();
                match self.slots.entry(keys.row(i).as_ref().into()) {
                    Entry::Occupied(slot) => {
                        let slot = *slot.get();
                        let old = std::mem::replace(&mut self.stored[slot], row);
                        before.entry(slot).or_insert(Some(old));
                    }
                    Entry::Vacant(vacant) => {
                        vacant.insert(self.stored.len());
                        before.insert(self.stored.len(), None);
                        self.stored.push(row);
                    }
                }
            }
        }
        if !self.distinct {
            return Ok(batches.into_iter().filter(|b| b.num_rows() > 0).collect());
        }
        let mut changed: Vec<usize> = before
            .into_iter()
            .filter(|(slot, old)| {
                old.as_ref()
                    .is_none_or(|old| old.row() != self.stored[*slot].row())
            })
            .map(|(slot, _)| slot)
            .collect();
        changed.sort_unstable();
        self.rows_at(&changed)
    }

    /// The whole result, in its keys' order of arrival.
    fn batches(&self) -> Result<Vec<RecordBatch>> {
        self.rows_at(&(0..self.stored.len()).collect::<Vec<_>>())
    }

    fn rows_at(&self, slots: &[usize]) -> Result<Vec<RecordBatch>> {
        slots
            .chunks(BATCH_ROWS)
            .map(|chunk| {
                let columns = self
                    .rows
                    .convert_rows(chunk.iter().map(|&slot| self.stored[slot].row()))?;
                Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
            })
            .collect()
    }
}

/// A keyed result whose key has payload aggregates (`USING KEY (k, min(v))`): every row made
/// so far is kept, numbered by arrival, and the result is the finalize plan over them.
pub(crate) struct AggregatedRows {
    /// The finalize plan's columns: the CTE's as its name shows them.
    finalized_schema: SchemaRef,
    keys: RowConverter,
    rows: RowConverter,
    key: Vec<usize>,
    candidates: Vec<RecordBatch>,
    arrivals: i64,
    finalized: Vec<RecordBatch>,
    /// Each key's finalized row, to tell which changed.
    previous: HashMap<Box<[u8]>, Box<[u8]>>,
    distinct: bool,
}

impl AggregatedRows {
    fn new(finalized_schema: SchemaRef, key: &[usize], distinct: bool) -> Result<AggregatedRows> {
        assert!(!key.is_empty(), "a keyed recursive CTE has key columns");
        Ok(AggregatedRows {
            keys: converter(&finalized_schema, key.iter().copied())?,
            rows: converter(&finalized_schema, 0..finalized_schema.fields().len())?,
            finalized_schema,
            key: key.to_vec(),
            candidates: Vec::new(),
            arrivals: 0,
            finalized: Vec::new(),
            previous: HashMap::new(),
            distinct,
        })
    }

    /// Adds `batches` to the rows made so far and finalizes them again; returns the next
    /// working table: the rows as they came (in the finalized columns' types) under UNION
    /// ALL, the finalized rows of the keys whose row changed under UNION.
    fn apply(
        &mut self,
        batches: Vec<RecordBatch>,
        finalize: &mut Finalize<'_>,
    ) -> Result<Vec<RecordBatch>> {
        for batch in batches.iter().filter(|b| b.num_rows() > 0) {
            let rows = batch.num_rows() as i64;
            let arrival =
                arrow::array::Int64Array::from_iter_values(self.arrivals..self.arrivals + rows);
            self.arrivals += rows;
            let mut columns = batch.columns().to_vec();
            columns.push(Arc::new(arrival));
            let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
            fields.push(Arc::new(arrow::datatypes::Field::new(
                "arrival",
                arrow::datatypes::DataType::Int64,
                false,
            )));
            let schema = Arc::new(arrow::datatypes::Schema::new(fields));
            self.candidates.push(RecordBatch::try_new(schema, columns)?);
        }
        let finalized: Vec<RecordBatch> = finalize(self.candidates.clone())?
            .into_iter()
            .map(|b| RecordBatch::try_new(self.finalized_schema.clone(), b.columns().to_vec()))
            .collect::<std::result::Result<_, _>>()?;
        let mut current = HashMap::new();
        let mut changed_batches = Vec::new();
        for batch in &finalized {
            let keys = key_rows(&self.keys, &self.key, batch)?;
            let rows = self.rows.convert_columns(batch.columns())?;
            let mut changed = Vec::with_capacity(batch.num_rows());
            for i in 0..batch.num_rows() {
                let key: Box<[u8]> = keys.row(i).as_ref().into();
                let row: Box<[u8]> = rows.row(i).as_ref().into();
                changed.push(Some(self.previous.get(&key) != Some(&row)));
                current.insert(key, row);
            }
            let changed: BooleanArray = changed.into_iter().collect();
            changed_batches.push(crate::select::filter_batch(batch, &changed)?);
        }
        self.previous = current;
        self.finalized = finalized;
        if self.distinct {
            return Ok(changed_batches
                .into_iter()
                .filter(|b| b.num_rows() > 0)
                .collect());
        }
        batches
            .into_iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| self.as_finalized(&b))
            .collect()
    }

    /// A step's row in the finalized columns' types (`sum` of INTEGER is BIGINT).
    fn as_finalized(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let columns = batch
            .columns()
            .iter()
            .zip(self.finalized_schema.fields())
            .map(|(column, field)| arrow::compute::cast(column, field.data_type()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(
            self.finalized_schema.clone(),
            columns,
        )?)
    }
}
