//! The result a recursive CTE builds across its iterations: rows appended (dropping repeats
//! under UNION), or one row per key that later rows replace (`USING KEY`, ADR 0071).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use arrow::array::BooleanArray;
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
}

impl RecursiveResult {
    /// An empty result; `keeps_rows` when the step reads the result so far.
    pub fn new(
        schema: &SchemaRef,
        distinct: bool,
        key: Option<&[usize]>,
        keeps_rows: bool,
    ) -> Result<RecursiveResult> {
        Ok(match key {
            Some(key) => RecursiveResult::Keyed(Box::new(KeyedRows::new(schema, key, distinct)?)),
            None => RecursiveResult::Appended {
                seen: distinct.then(|| NewRows::new(schema)).transpose()?,
                so_far: keeps_rows.then(Vec::new),
            },
        })
    }

    /// Adds the rows of the anchor or of one run of the step.
    pub fn apply(&mut self, rows: Vec<RecordBatch>) -> Result<Applied> {
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
        }
    }

    /// The result so far, for `recurring.name`.
    pub fn so_far(&self) -> Result<Vec<RecordBatch>> {
        match self {
            RecursiveResult::Appended { so_far, .. } => Ok(so_far.clone().unwrap_or_default()),
            RecursiveResult::Keyed(keyed) => keyed.batches(),
        }
    }

    /// The rows left to emit once the recursion has ended.
    pub fn finish(self) -> Result<Vec<RecordBatch>> {
        match self {
            RecursiveResult::Appended { .. } => Ok(Vec::new()),
            RecursiveResult::Keyed(keyed) => keyed.batches(),
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
            let rows = self.converter.convert_columns(batch.columns())?;
            let keep: BooleanArray = (0..batch.num_rows())
                .map(|i| Some(self.seen.insert(rows.row(i).as_ref().into())))
                .collect();
            out.push(crate::select::filter_batch(&batch, &keep)?);
        }
        Ok(out)
    }
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
            let key_columns: Vec<_> = self.key.iter().map(|&k| batch.column(k).clone()).collect();
            let keys = self.keys.convert_columns(&key_columns)?;
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
