//! ORDER BY: rows are held and sorted at the end. With a LIMIT (top-N), only the first rows
//! are kept as rows arrive. Rows past the memory limit are sorted into runs written to disk,
//! merged at the end.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::{
    SortColumn, SortOptions, concat_batches, lexsort_to_indices, take_record_batch,
};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_planner::SortKey;

use crate::Result;
use crate::expr::evaluate;
use crate::memory::{MemoryPool, Reservation};
use crate::spill::{SPILL_BATCH_ROWS, SpillFile, SpillWriter};

/// A top-N sort cuts its rows down to the first N once it holds this many more.
const TOP_N_SLACK_ROWS: usize = 1 << 16;

/// The sink of a sort.
pub struct SortSink<'p> {
    schema: SchemaRef,
    keys: &'p [SortKey],
    fetch: Option<usize>,
    batches: Vec<RecordBatch>,
    rows: usize,
    reservation: Reservation,
    /// Sorted runs written to disk when the pool refused more memory.
    runs: Vec<SpillFile>,
    spilled_bytes: usize,
}

impl<'p> SortSink<'p> {
    pub fn new(
        schema: SchemaRef,
        keys: &'p [SortKey],
        fetch: Option<usize>,
        memory: &Arc<MemoryPool>,
    ) -> SortSink<'p> {
        SortSink {
            schema,
            keys,
            fetch,
            batches: Vec::new(),
            rows: 0,
            reservation: memory.reservation(),
            runs: Vec::new(),
            spilled_bytes: 0,
        }
    }

    pub fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let bytes = batch.get_array_memory_size();
        if !self.reservation.try_grow(bytes) {
            match self.fetch {
                Some(fetch) if self.rows > fetch => self.keep_first(fetch)?,
                _ if !self.batches.is_empty() => self.spill_run()?,
                _ => {}
            }
            // The batch at hand is held whatever the pool says.
            self.reservation.grow(bytes);
        }
        self.rows += batch.num_rows();
        self.batches.push(batch);
        if let Some(fetch) = self.fetch
            && self.rows >= fetch.saturating_mul(2).max(TOP_N_SLACK_ROWS)
        {
            self.keep_first(fetch)?;
        }
        Ok(())
    }

    /// The bytes of rows written to disk.
    pub fn spilled_bytes(&self) -> usize {
        self.spilled_bytes
    }

    /// Keeps only the first `fetch` rows in sort order.
    fn keep_first(&mut self, fetch: usize) -> Result<()> {
        self.batches = sort_batches(&self.schema, &self.batches, self.keys, Some(fetch))?;
        self.rows = self.batches.iter().map(RecordBatch::num_rows).sum();
        let bytes = self.batches.iter().map(|b| b.get_array_memory_size()).sum();
        self.reservation.shrink_to(bytes);
        Ok(())
    }

    /// Sorts the rows held and writes them to disk as a run.
    fn spill_run(&mut self) -> Result<()> {
        let all = concat_batches(&self.schema, &std::mem::take(&mut self.batches))?;
        let indices = lexsort_to_indices(&sort_columns(self.keys, &all)?, None)?;
        let mut writer = SpillWriter::new(self.reservation.pool().spill_dir(), &self.schema)?;
        let mut start = 0;
        while start < indices.len() {
            let chunk = indices.slice(start, SPILL_BATCH_ROWS.min(indices.len() - start));
            writer.write(&take_record_batch(&all, &chunk)?)?;
            start += chunk.len();
        }
        let run = writer.finish()?;
        self.spilled_bytes += run.bytes();
        self.runs.push(run);
        self.rows = 0;
        self.reservation.free();
        Ok(())
    }

    /// The sorted rows.
    pub fn finish(self) -> Result<Vec<RecordBatch>> {
        let held = sort_batches(&self.schema, &self.batches, self.keys, self.fetch)?;
        if self.runs.is_empty() {
            return Ok(held);
        }
        let mut runs: Vec<Box<dyn Iterator<Item = Result<RecordBatch>>>> = Vec::new();
        for run in self.runs {
            runs.push(Box::new(run.read()?));
        }
        let held_slices: Vec<Result<RecordBatch>> = held
            .iter()
            .flat_map(|batch| {
                (0..batch.num_rows())
                    .step_by(SPILL_BATCH_ROWS)
                    .map(|start| {
                        Ok(batch.slice(start, SPILL_BATCH_ROWS.min(batch.num_rows() - start)))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        runs.push(Box::new(held_slices.into_iter()));
        let mut out = Vec::new();
        merge_runs(self.keys, runs, self.fetch, &mut |batch| {
            out.push(batch);
            Ok(())
        })?;
        Ok(out)
    }
}

/// The sort key columns of `batch`: one per key, and before a key that `splits_nulls_of` a
/// column of whether its value is NULL.
fn sort_columns(keys: &[SortKey], batch: &RecordBatch) -> Result<Vec<SortColumn>> {
    let mut columns = Vec::with_capacity(keys.len());
    for key in keys {
        let values = evaluate(&key.expr, batch)?;
        push_key_columns(&mut columns, values, key.descending, key.nulls_first)?;
    }
    Ok(columns)
}

/// Pushes the sort columns of one key's `values` ordered as asked: the values, and before
/// them, for a nested key whose NULL order `splits_nulls_of`, whether each is NULL. Every sort of
/// values (ORDER BY, an ordered aggregate's input) orders nested values through this.
pub fn push_key_columns(
    columns: &mut Vec<SortColumn>,
    values: ArrayRef,
    descending: bool,
    nulls_first: bool,
) -> Result<()> {
    let split = splits_nulls_of(values.data_type(), descending, nulls_first);
    if split {
        columns.push(SortColumn {
            values: Arc::new(arrow::compute::is_null(&values)?),
            options: Some(null_flag_options(nulls_first)),
        });
    }
    columns.push(SortColumn {
        values,
        options: Some(sort_options(split, descending, nulls_first)),
    });
    Ok(())
}

/// The row format's fields for `sort_columns`' columns.
fn sort_fields(keys: &[SortKey]) -> Vec<SortField> {
    let mut fields = Vec::with_capacity(keys.len());
    for key in keys {
        let data_type = key.expr.data_type();
        let split = splits_nulls_of(&data_type, key.descending, key.nulls_first);
        if split {
            fields.push(SortField::new_with_options(
                DataType::Boolean,
                null_flag_options(key.nulls_first),
            ));
        }
        fields.push(SortField::new_with_options(
            data_type,
            sort_options(split, key.descending, key.nulls_first),
        ));
    }
    fields
}

/// Whether a key's NULLs are placed by a column of their own: a key holding values inside it
/// (a list, a struct, a map) whose NULL order would give the values inside it the wrong one.
/// DuckDB orders a NULL inside a nested value as the greatest value whatever the key's NULL
/// order, and Arrow gives the values inside the key's own NULL order (flipped when
/// descending); they agree when the key's NULLs go where its greatest values do.
fn splits_nulls_of(data_type: &DataType, descending: bool, nulls_first: bool) -> bool {
    let nested = matches!(
        data_type,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
    );
    nested && nulls_first != descending
}

/// NULLs (true) first or last as the key asks.
fn null_flag_options(nulls_first: bool) -> SortOptions {
    SortOptions {
        descending: nulls_first,
        nulls_first: false,
    }
}

fn sort_options(split: bool, descending: bool, nulls_first: bool) -> SortOptions {
    SortOptions {
        descending,
        // A key whose NULLs have a column of their own puts them where its values inside
        // it sort their NULLs: among the greatest.
        nulls_first: match split {
            true => descending,
            false => nulls_first,
        },
    }
}

/// Sorts all rows it is given; with `fetch`, keeps only the first rows (top-N).
pub fn sort_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    keys: &[SortKey],
    fetch: Option<usize>,
) -> Result<Vec<RecordBatch>> {
    let all = concat_batches(schema, batches)?;
    if all.num_rows() == 0 {
        return Ok(vec![]);
    }
    let indices = lexsort_to_indices(&sort_columns(keys, &all)?, fetch)?;
    Ok(vec![take_record_batch(&all, &indices)?])
}

/// Where a merge is in one sorted run.
struct Cursor {
    rest: Box<dyn Iterator<Item = Result<RecordBatch>>>,
    /// The run's current batch is `sources[source]` of the merge.
    source: usize,
    rows: Rows,
    row: usize,
}

/// Merges sorted runs into sorted batches handed to `emit`; ties are taken from the earlier
/// run first.
fn merge_runs(
    keys: &[SortKey],
    runs: Vec<Box<dyn Iterator<Item = Result<RecordBatch>>>>,
    fetch: Option<usize>,
    emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let converter = RowConverter::new(sort_fields(keys))?;
    let key_rows = |batch: &RecordBatch| -> Result<Rows> {
        let columns: Vec<_> = sort_columns(keys, batch)?
            .into_iter()
            .map(|c| c.values)
            .collect();
        Ok(converter.convert_columns(&columns)?)
    };
    // The batches the rows picked since the last output batch come from.
    let mut sources: Vec<RecordBatch> = Vec::new();
    let next_batch = |rest: &mut dyn Iterator<Item = Result<RecordBatch>>,
                      sources: &mut Vec<RecordBatch>|
     -> Result<Option<(usize, Rows)>> {
        for batch in rest {
            let batch = batch?;
            if batch.num_rows() > 0 {
                let rows = key_rows(&batch)?;
                sources.push(batch);
                return Ok(Some((sources.len() - 1, rows)));
            }
        }
        Ok(None)
    };
    let mut cursors: Vec<Option<Cursor>> = Vec::with_capacity(runs.len());
    for mut rest in runs {
        cursors.push(
            next_batch(&mut *rest, &mut sources)?.map(|(source, rows)| Cursor {
                rest,
                source,
                rows,
                row: 0,
            }),
        );
    }
    let mut left = fetch.unwrap_or(usize::MAX);
    let mut picked: Vec<(usize, usize)> = Vec::with_capacity(SPILL_BATCH_ROWS);
    while left > 0 {
        let mut best: Option<usize> = None;
        for (i, cursor) in cursors.iter().enumerate() {
            let Some(cursor) = cursor else { continue };
            let better = match best.and_then(|b| cursors[b].as_ref()) {
                None => true,
                Some(leader) => cursor.rows.row(cursor.row) < leader.rows.row(leader.row),
            };
            if better {
                best = Some(i);
            }
        }
        let Some(best) = best else { break };
        let cursor = cursors[best].as_mut().expect("a live cursor");
        picked.push((cursor.source, cursor.row));
        left -= 1;
        cursor.row += 1;
        if cursor.row == cursor.rows.num_rows() {
            match next_batch(&mut *cursor.rest, &mut sources)? {
                Some((source, rows)) => {
                    cursor.source = source;
                    cursor.rows = rows;
                    cursor.row = 0;
                }
                None => cursors[best] = None,
            }
        }
        if picked.len() == SPILL_BATCH_ROWS {
            crate::control::check_current()?;
            flush(&mut picked, &mut sources, &mut cursors, emit)?;
        }
    }
    flush(&mut picked, &mut sources, &mut cursors, emit)
}

/// Emits the picked rows as one batch, and lets go of the source batches no cursor is in.
fn flush(
    picked: &mut Vec<(usize, usize)>,
    sources: &mut Vec<RecordBatch>,
    cursors: &mut [Option<Cursor>],
    emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    if picked.is_empty() {
        return Ok(());
    }
    let refs: Vec<&RecordBatch> = sources.iter().collect();
    emit(arrow::compute::interleave_record_batch(&refs, picked)?)?;
    picked.clear();
    let mut kept = Vec::new();
    for cursor in cursors.iter_mut().flatten() {
        kept.push(sources[cursor.source].clone());
        cursor.source = kept.len() - 1;
    }
    *sources = kept;
    Ok(())
}
