//! Hash joins: the right input is built into a hash table on its key columns; the left input
//! streams through it batch by batch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{
    Array, ArrayRef, BooleanArray, NullArray, RecordBatch, RecordBatchOptions, UInt32Array,
    new_null_array,
};
use arrow::buffer::BooleanBuffer;
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_catalog::is_exact_integer;
use pondra_planner::{Expr, JoinKind};

use crate::expr::{evaluate, evaluate_all};
use crate::join_rows::BuildRows;
use crate::join_table::JoinTable;
use crate::sink::Flow;
use crate::{ExecError, Result};

/// Output batches are cut at about this many rows, so a join that multiplies rows does not
/// build one huge batch.
const OUTPUT_ROWS: usize = 8192;

/// A probe batch is joined in windows of rows whose pairs make about this many.
const MAX_PAIRS: usize = 32 * OUTPUT_ROWS;

/// The built side of a hash join and what the probe side has matched of it.
pub struct HashJoin {
    kind: JoinKind,
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
    filter: Option<Expr>,
    schema: SchemaRef,
    build: BuildRows,
    /// The build side's keys and the rows of each (`None` for a join without keys); rows with
    /// a NULL key are never in it.
    table: Option<JoinTable>,
    /// For a full join, the build rows matched so far, to emit the others at the end. Probe
    /// batches may run on several threads at once.
    matched: Vec<AtomicBool>,
    /// For each build column, the probe column it equals in every matched pair, when it is a
    /// key column whose probe key is a column of the same type whose equal values are
    /// identical (integers, dates, decimals, strings): matched pairs take it from the probe
    /// rows, in probe order, instead of gathering it from the build rows.
    equal_probe_column: Vec<Option<usize>>,
    /// The average bytes of a build row, for sizing output batches.
    build_row_bytes: usize,
}

impl HashJoin {
    pub fn new(
        kind: JoinKind,
        left_keys: &[Expr],
        right_keys: &[Expr],
        filter: Option<&Expr>,
        schema: SchemaRef,
        build_schema: &SchemaRef,
        build_batches: &[RecordBatch],
    ) -> Result<HashJoin> {
        // Build columns the join neither reads nor emits are dropped before it is built.
        let needed = build_columns_needed(kind, &schema, build_schema, right_keys, filter);
        let (build_schema, build_batches) = without_columns(build_schema, build_batches, &needed)?;
        let build = BuildRows::new(&build_schema, &build_batches)?;
        let table = (!right_keys.is_empty())
            .then(|| JoinTable::build(right_keys, build.batches()))
            .transpose()?;
        if kind == JoinKind::Single
            && left_keys.is_empty()
            && filter.is_none()
            && build.num_rows() > 1
        {
            return Err(ExecError::Execution(
                "more than one row returned by a subquery used as an expression".into(),
            ));
        }
        let matched = if matches!(
            kind,
            JoinKind::Full | JoinKind::Right | JoinKind::RightSemi | JoinKind::RightAnti
        ) {
            (0..build.num_rows())
                .map(|_| AtomicBool::new(false))
                .collect()
        } else {
            Vec::new()
        };
        let equal_probe_column = equal_probe_columns(&build_schema, left_keys, right_keys, &schema);
        let build_bytes: usize = build_batches.iter().map(crate::memory::batch_bytes).sum();
        let build_row_bytes = build_bytes / build.num_rows().max(1);
        Ok(HashJoin {
            kind,
            left_keys: left_keys.to_vec(),
            right_keys: right_keys.to_vec(),
            filter: filter.cloned(),
            schema,
            build,
            table,
            matched,
            equal_probe_column,
            build_row_bytes,
        })
    }

    /// The probe side's key expressions, when a probe row whose key no build row has adds
    /// nothing to the join's output, so a scan may drop it while reading.
    pub fn droppable_probe_keys(&self) -> Option<&[Expr]> {
        let drops = matches!(
            self.kind,
            JoinKind::Inner
                | JoinKind::Right
                | JoinKind::Semi
                | JoinKind::RightSemi
                | JoinKind::RightAnti
        );
        (drops && self.table.is_some()).then_some(&self.left_keys[..])
    }

    /// The rows of the build side.
    pub fn build_rows(&self) -> usize {
        self.build.num_rows()
    }

    pub fn kind(&self) -> JoinKind {
        self.kind
    }

    /// The least and greatest build key of key column `position`, when it is an integer or
    /// date column.
    pub fn key_bounds(&self, position: usize) -> Option<(i64, i64)> {
        self.table.as_ref()?.key_bounds(position)
    }

    /// Whether the build side can tell, for key column `position` alone, which values it
    /// holds (so that a probe row without one of them can be dropped).
    pub fn knows_key_column(&self, position: usize) -> bool {
        self.table
            .as_ref()
            .is_some_and(|t| t.knows_column(position))
    }

    /// For each row of `batch`, whether some build row may have its key: `keys` are the
    /// probe keys over `batch`'s columns, all of them (`columns` is `None`) or those of the
    /// given key columns, each known to the build side.
    pub fn has_keys(
        &self,
        keys: &[Expr],
        columns: Option<&[usize]>,
        batch: &RecordBatch,
    ) -> Result<BooleanArray> {
        let table = self.table.as_ref().expect("a join with keys");
        let keys = evaluate_all(keys, batch)?;
        let has = match columns {
            None => table.contains(&keys)?,
            Some(columns) => table.contains_in_columns(columns, &keys)?,
        };
        Ok(BooleanArray::new(has, None))
    }

    /// Whether every build key of this join passes `other`'s `has_keys` check: this join's key
    /// columns `columns` (all when `None`) against `other`'s `other_columns`, probed with
    /// `probe_keys`, the expressions both joins' probe sides compute. A scan that dropped the
    /// rows failing `other`'s check has then kept every row whose key this join holds. Build
    /// rows with a NULL key match nothing and need not pass.
    pub fn keys_pass(
        &self,
        columns: Option<&[usize]>,
        probe_keys: &[Expr],
        other: &HashJoin,
        other_columns: Option<&[usize]>,
    ) -> Result<bool> {
        let Some(table) = &other.table else {
            return Ok(false);
        };
        let positions: Vec<usize> = match columns {
            Some(columns) => columns.to_vec(),
            None => (0..self.right_keys.len()).collect(),
        };
        let keys: Vec<Expr> = positions
            .iter()
            .map(|&p| self.right_keys[p].clone())
            .collect();
        let same_types = keys.len() == probe_keys.len()
            && keys
                .iter()
                .zip(probe_keys)
                .all(|(key, probe)| key.data_type() == probe.data_type());
        if !same_types {
            return Ok(false);
        }
        for batch in self.build.batches() {
            let values = evaluate_all(&keys, batch)?;
            let has = match other_columns {
                None => table.contains(&values)?,
                Some(columns) => table.contains_in_columns(columns, &values)?,
            };
            let mut must_have = BooleanBuffer::new_set(batch.num_rows());
            for value in &values {
                if let Some(nulls) = value.logical_nulls() {
                    must_have = &must_have & nulls.inner();
                }
            }
            if (&must_have & &!&has).count_set_bits() > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Joins one probe batch, handing each output batch to `emit` until it says it needs no
    /// more. The batch is joined a window of rows at a time, each window's pairs at most about
    /// `MAX_PAIRS`, so that a join that multiplies rows (a cross join, a key on many rows)
    /// never holds more than one window's output.
    pub fn probe(
        &self,
        batch: &RecordBatch,
        emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<Flow> {
        let rows = batch.num_rows();
        let mut start = 0;
        while start < rows {
            crate::control::check_current()?;
            let window = batch.slice(start, rows - start);
            let (probe_index, build_index, taken) = self.candidates(&window)?;
            debug_assert!(taken > 0, "each window takes a probe row");
            let window = window.slice(0, taken);
            if self.join_window(&window, probe_index, build_index, emit)? == Flow::Done {
                return Ok(Flow::Done);
            }
            start += taken;
        }
        Ok(Flow::More)
    }

    /// Joins the rows of `batch` whose candidate pairs are `probe_index` and `build_index`,
    /// handing the output to `emit` in batches of a bounded size.
    fn join_window(
        &self,
        batch: &RecordBatch,
        probe_index: Vec<u32>,
        build_index: Vec<u32>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<Flow> {
        let rows = batch.num_rows();
        let probe_row_bytes = crate::memory::batch_bytes(batch) / rows.max(1);
        let chunk = crate::unnest::rows_per_batch(probe_row_bytes + self.build_row_bytes);
        let (probe_index, build_index) = match &self.filter {
            Some(filter) if !probe_index.is_empty() => {
                self.passing_pairs(filter, batch, &probe_index, &build_index, chunk)?
            }
            _ => (probe_index, build_index),
        };
        let mut probe_matched = vec![false; rows];
        for &p in &probe_index {
            if self.kind == JoinKind::Single && probe_matched[p as usize] {
                return Err(ExecError::Execution(
                    "more than one row returned by a subquery used as an expression".into(),
                ));
            }
            probe_matched[p as usize] = true;
        }
        if !self.matched.is_empty() {
            for &b in &build_index {
                // Stored once per build row: a store to a line other threads read moves it
                // between cores each time.
                let matched = &self.matched[b as usize];
                if !matched.load(Ordering::Relaxed) {
                    matched.store(true, Ordering::Relaxed);
                }
            }
        }
        match self.kind {
            JoinKind::Inner | JoinKind::Right => {
                self.emit_pairs(batch, &probe_index, &build_index, chunk, emit)
            }
            JoinKind::Left | JoinKind::Full | JoinKind::Single => {
                let mut p = probe_index;
                let mut b: Vec<Option<u32>> = build_index.into_iter().map(Some).collect();
                for (row, matched) in probe_matched.iter().enumerate() {
                    if !matched {
                        p.push(row as u32);
                        b.push(None);
                    }
                }
                self.emit_outer(batch, &p, &b, chunk, emit)
            }
            JoinKind::Semi => emit(self.left_rows(batch, |row| probe_matched[row])?),
            JoinKind::Mark | JoinKind::MarkIn => {
                let null_aware = self.kind == JoinKind::MarkIn;
                let keys = self.probe_keys(batch)?;
                let empty = self.build.num_rows() == 0;
                let marks: BooleanArray = (0..rows)
                    .map(|row| {
                        if probe_matched[row] {
                            Some(true)
                        } else if empty {
                            Some(false)
                        } else if null_aware
                            && (self.build_has_null_key() || keys.iter().any(|k| k.is_null(row)))
                        {
                            None
                        } else {
                            Some(false)
                        }
                    })
                    .collect();
                let mut columns = batch.columns().to_vec();
                columns.push(Arc::new(marks));
                emit(self.output(columns, rows)?)
            }
            JoinKind::Anti => emit(self.left_rows(batch, |row| !probe_matched[row])?),
            // Their rows are the build side's, known once every probe row has been seen.
            JoinKind::RightSemi | JoinKind::RightAnti => Ok(Flow::More),
            JoinKind::NullAwareAnti => {
                if self.build.num_rows() == 0 {
                    return emit(self.left_rows(batch, |_| true)?);
                }
                if self.build_has_null_key() {
                    return Ok(Flow::More);
                }
                let keys = self.probe_keys(batch)?;
                let null_key = |row: usize| keys.iter().any(|k| k.is_null(row));
                emit(self.left_rows(batch, |row| !probe_matched[row] && !null_key(row))?)
            }
        }
    }

    /// After the last probe batch: the build rows a full or right join never matched, or those
    /// a right semi join matched and a right anti join did not.
    pub fn finish(&self) -> Result<Vec<RecordBatch>> {
        if self.kind.right_only() {
            let keep = self.kind == JoinKind::RightSemi;
            let kept = self
                .build
                .filter(|row| self.matched[row].load(Ordering::Relaxed) == keep)?;
            return kept.into_iter().map(|b| self.with_schema(b)).collect();
        }
        if !matches!(self.kind, JoinKind::Full | JoinKind::Right) {
            return Ok(vec![]);
        }
        let unmatched: Vec<Option<u32>> = (0..self.matched.len() as u32)
            .filter(|i| !self.matched[*i as usize].load(Ordering::Relaxed))
            .map(Some)
            .collect();
        if unmatched.is_empty() {
            return Ok(vec![]);
        }
        let left_width = self.schema.fields().len() - self.build.schema().fields().len();
        let mut columns: Vec<ArrayRef> = self.schema.fields()[..left_width]
            .iter()
            .map(|f| new_null_array(f.data_type(), unmatched.len()))
            .collect();
        columns.extend(self.build.take(&unmatched)?);
        Ok(vec![self.output(columns, unmatched.len())?])
    }

    fn build_has_null_key(&self) -> bool {
        self.table.as_ref().is_some_and(JoinTable::has_null_key)
    }

    fn probe_keys(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        evaluate_all(&self.left_keys, batch)
    }

    /// Every (probe row, build row) pair with equal keys (all pairs when there are no keys) of
    /// the first rows of `batch` whose pairs make about `MAX_PAIRS`; returns them with how
    /// many probe rows they cover (at least one).
    fn candidates(&self, batch: &RecordBatch) -> Result<(Vec<u32>, Vec<u32>, usize)> {
        let mut probe = Vec::new();
        let mut build = Vec::new();
        let taken = match &self.table {
            None => {
                let build_rows = self.build.num_rows();
                let taken = (MAX_PAIRS / build_rows.max(1)).clamp(1, batch.num_rows());
                for row in 0..taken as u32 {
                    probe.extend(std::iter::repeat_n(row, build_rows));
                    build.extend(0..build_rows as u32);
                }
                taken
            }
            Some(table) => {
                let keys = self.probe_keys(batch)?;
                table.matches(&keys, MAX_PAIRS, &mut probe, &mut build)?
            }
        };
        Ok((probe, build, taken.max(1).min(batch.num_rows())))
    }

    /// The joined rows of the given pairs: probe columns, then build columns. A probe column
    /// that neither the output nor the join's filter reads is NULL.
    fn pairs(&self, batch: &RecordBatch, probe: &[u32], build: &[u32]) -> Result<RecordBatch> {
        let emitted = |i: usize| {
            matches!(
                self.kind,
                JoinKind::Inner
                    | JoinKind::Left
                    | JoinKind::Full
                    | JoinKind::Right
                    | JoinKind::Single
            ) && self.schema.field(i).data_type() != &DataType::Null
        };
        let filtered: Vec<usize> = self
            .filter
            .as_ref()
            .map(Expr::column_indices)
            .unwrap_or_default();
        let probe = UInt32Array::from(probe.to_vec());
        let build: Vec<Option<u32>> = build.iter().copied().map(Some).collect();
        let mut columns = Vec::new();
        let mut fields = Vec::new();
        for (i, (column, field)) in batch
            .columns()
            .iter()
            .zip(batch.schema().fields())
            .enumerate()
        {
            if emitted(i) || filtered.contains(&i) {
                columns.push(take(column, &probe, None)?);
                fields.push(field.as_ref().clone());
            } else {
                columns.push(Arc::new(NullArray::new(probe.len())) as ArrayRef);
                fields.push(Field::new(field.name(), DataType::Null, true));
            }
        }
        let skip: Vec<bool> = self
            .equal_probe_column
            .iter()
            .map(Option::is_some)
            .collect();
        let probe_width = columns.len();
        columns.extend(self.build.take_except(&build, &skip)?);
        for (column, equal) in self.equal_probe_column.iter().enumerate() {
            if let Some(probe_column) = *equal {
                columns[probe_width + column] = match columns[probe_column].data_type() {
                    DataType::Null => take(batch.column(probe_column), &probe, None)?,
                    _ => columns[probe_column].clone(),
                };
            }
        }
        for field in self.build.schema().fields() {
            fields.push(field.as_ref().clone().with_nullable(true));
        }
        let schema = Arc::new(arrow::datatypes::Schema::new(fields));
        let options = RecordBatchOptions::new().with_row_count(Some(probe.len()));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }

    /// The pairs that pass the join's filter, evaluated `chunk` pairs at a time.
    fn passing_pairs(
        &self,
        filter: &Expr,
        batch: &RecordBatch,
        probe_index: &[u32],
        build_index: &[u32],
        chunk: usize,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let mut p = Vec::new();
        let mut b = Vec::new();
        for start in (0..probe_index.len()).step_by(chunk) {
            let end = (start + chunk).min(probe_index.len());
            let (probe, build) = (&probe_index[start..end], &build_index[start..end]);
            let joined = self.pairs(batch, probe, build)?;
            let keep = evaluate(filter, &joined)?;
            let keep = keep
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| ExecError::Execution("join filter is not boolean".into()))?;
            for i in 0..keep.len() {
                if keep.is_valid(i) && keep.value(i) {
                    p.push(probe[i]);
                    b.push(build[i]);
                }
            }
        }
        Ok((p, b))
    }

    fn emit_pairs(
        &self,
        batch: &RecordBatch,
        probe: &[u32],
        build: &[u32],
        chunk: usize,
        emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<Flow> {
        for start in (0..probe.len()).step_by(chunk) {
            let end = (start + chunk).min(probe.len());
            let joined = self.pairs(batch, &probe[start..end], &build[start..end])?;
            if emit(self.with_schema(joined)?)? == Flow::Done {
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::More)
    }

    fn emit_outer(
        &self,
        batch: &RecordBatch,
        probe: &[u32],
        build: &[Option<u32>],
        chunk: usize,
        emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<Flow> {
        for start in (0..probe.len()).step_by(chunk) {
            let end = (start + chunk).min(probe.len());
            let probe_index = UInt32Array::from(probe[start..end].to_vec());
            let mut columns = Vec::new();
            for (column, field) in batch.columns().iter().zip(self.schema.fields()) {
                columns.push(match field.data_type() {
                    DataType::Null => Arc::new(NullArray::new(end - start)) as ArrayRef,
                    _ => take(column, &probe_index, None)?,
                });
            }
            columns.extend(self.build.take(&build[start..end])?);
            if emit(self.output(columns, end - start)?)? == Flow::Done {
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::More)
    }

    /// The rows of `batch` (the probe side's columns alone) for which `keep` holds.
    fn left_rows(&self, batch: &RecordBatch, keep: impl Fn(usize) -> bool) -> Result<RecordBatch> {
        let mask: BooleanArray = (0..batch.num_rows()).map(|row| Some(keep(row))).collect();
        let kept = crate::select::filter_batch(batch, &mask)?;
        self.with_schema(kept)
    }

    fn with_schema(&self, batch: RecordBatch) -> Result<RecordBatch> {
        self.output(batch.columns().to_vec(), batch.num_rows())
    }

    /// The output batch of these columns: those the output types NULL (nothing above reads
    /// them) become NULL arrays, which hold no buffers.
    fn output(&self, columns: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
        let columns = columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(column, field)| match field.data_type() {
                DataType::Null if column.data_type() != &DataType::Null => {
                    Arc::new(NullArray::new(rows)) as ArrayRef
                }
                _ => column,
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?)
    }
}

/// See `HashJoin::equal_probe_column`. Only build columns the output keeps count.
fn equal_probe_columns(
    build_schema: &SchemaRef,
    left_keys: &[Expr],
    right_keys: &[Expr],
    schema: &SchemaRef,
) -> Vec<Option<usize>> {
    let width = build_schema.fields().len();
    let mut equal = vec![None; width];
    let Some(output_start) = schema.fields().len().checked_sub(width) else {
        return equal;
    };
    for (left, right) in left_keys.iter().zip(right_keys) {
        let (
            Expr::Column { index: probe, .. },
            Expr::Column {
                index: build,
                data_type,
                ..
            },
        ) = (left, right)
        else {
            continue;
        };
        let identical_when_equal = is_exact_integer(data_type)
            || matches!(
                data_type,
                DataType::UInt64
                    | DataType::Date64
                    | DataType::Decimal64(_, _)
                    | DataType::Decimal128(_, _)
                    | DataType::Utf8
            );
        let emitted = schema
            .fields()
            .get(output_start + build)
            .is_some_and(|f| f.data_type() != &DataType::Null);
        if identical_when_equal
            && emitted
            && left.data_type() == *data_type
            && build_schema.field(*build).data_type() == data_type
        {
            equal[*build] = Some(*probe);
        }
    }
    equal
}

/// Which build columns a join reads or emits: its keys', its filter's, and those its output
/// keeps (typed other than NULL).
fn build_columns_needed(
    kind: JoinKind,
    schema: &SchemaRef,
    build_schema: &SchemaRef,
    right_keys: &[Expr],
    filter: Option<&Expr>,
) -> Vec<bool> {
    let width = build_schema.fields().len();
    let output_width = schema.fields().len();
    // Where the build columns start in the output, and in the rows the filter reads (probe
    // columns, then build columns). A right semi or anti join's filter may read any.
    let (in_output, in_filter) = match kind {
        JoinKind::Inner | JoinKind::Left | JoinKind::Full | JoinKind::Right | JoinKind::Single => {
            (Some(output_width - width), Some(output_width - width))
        }
        JoinKind::RightSemi | JoinKind::RightAnti => (Some(0), None),
        JoinKind::Semi | JoinKind::Anti | JoinKind::NullAwareAnti => (None, Some(output_width)),
        JoinKind::Mark | JoinKind::MarkIn => (None, Some(output_width - 1)),
    };
    let mut needed = vec![false; width];
    for column in right_keys.iter().flat_map(Expr::column_indices) {
        needed[column] = true;
    }
    if let Some(start) = in_output {
        for (column, needed) in needed.iter_mut().enumerate() {
            *needed |= schema.field(start + column).data_type() != &DataType::Null;
        }
    }
    if let Some(filter) = filter {
        match in_filter {
            Some(start) => {
                for column in filter.column_indices() {
                    if column >= start && column - start < width {
                        needed[column - start] = true;
                    }
                }
            }
            None => needed.fill(true),
        }
    }
    needed
}

/// The build side without the columns not `needed`: they become NULL columns of type NULL.
fn without_columns(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    needed: &[bool],
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let dropped = |i: usize| !needed[i] && schema.field(i).data_type() != &DataType::Null;
    if !(0..needed.len()).any(dropped) {
        return Ok((schema.clone(), batches.to_vec()));
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match dropped(i) {
            true => Field::new(f.name(), DataType::Null, true),
            false => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batches = batches
        .iter()
        .map(|batch| {
            let columns = batch
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| match dropped(i) {
                    true => Arc::new(NullArray::new(batch.num_rows())) as ArrayRef,
                    false => c.clone(),
                })
                .collect();
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            RecordBatch::try_new_with_options(schema.clone(), columns, &options)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use arrow::array::{AsArray, Int64Array};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use rayon::prelude::*;

    use super::*;

    /// Enough build rows to be split into partitions.
    const BUILD_ROWS: usize = 120_000;

    fn key_column(name: &str) -> Expr {
        Expr::Column {
            index: 0,
            name: name.into(),
            data_type: DataType::Int64,
        }
    }

    fn schema(names: &[&str]) -> SchemaRef {
        let fields: Vec<Field> = names
            .iter()
            .map(|n| Field::new(*n, DataType::Int64, true))
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// Build row `r`'s key: keys repeat, every 1000th is NULL. They are too sparse to be
    /// addressed directly, so the table hashes them into partitions.
    fn build_key(r: usize) -> Option<i64> {
        (r % 1_000 != 7).then_some((r % 50_000) as i64 * 1_000)
    }

    /// Probe row `r`'s key: every third key, half of them past the build side's keys.
    fn probe_key(r: usize) -> Option<i64> {
        (!r.is_multiple_of(97)).then_some(r as i64 * 3_000)
    }

    /// The build side (key, row number) in batches of 4096 rows.
    fn build_batches() -> Vec<RecordBatch> {
        (0..BUILD_ROWS)
            .step_by(4_096)
            .map(|start| {
                let rows = start..(start + 4_096).min(BUILD_ROWS);
                let keys = Int64Array::from_iter(rows.clone().map(build_key));
                let numbers = Int64Array::from_iter_values(rows.map(|r| r as i64));
                let columns: Vec<ArrayRef> = vec![Arc::new(keys), Arc::new(numbers)];
                RecordBatch::try_new(schema(&["b_key", "b_row"]), columns).unwrap()
            })
            .collect()
    }

    /// Builds a join of `kind` and probes it with 34,000 keys in batches on several threads;
    /// returns the probes' batches, then what `finish` emits.
    fn run(kind: JoinKind, output: SchemaRef) -> (Vec<RecordBatch>, Vec<RecordBatch>) {
        let build = build_batches();
        let join = HashJoin::new(
            kind,
            &[key_column("p_key")],
            &[key_column("b_key")],
            None,
            output,
            &schema(&["b_key", "b_row"]),
            &build,
        )
        .unwrap();
        let partitions = join.table.as_ref().unwrap().partition_count();
        assert!(partitions > 1, "{partitions} partition");
        let probed: Vec<RecordBatch> = (0..34_000usize)
            .step_by(1_000)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|start| {
                let keys = Int64Array::from_iter((start..start + 1_000).map(probe_key));
                let batch = RecordBatch::try_new(schema(&["p_key"]), vec![Arc::new(keys)]).unwrap();
                let mut out = Vec::new();
                join.probe(&batch, &mut |b| {
                    out.push(b);
                    Ok(Flow::More)
                })
                .unwrap();
                out
            })
            .flatten()
            .collect();
        (probed, join.finish().unwrap())
    }

    fn probe_keys() -> HashSet<i64> {
        (0..34_000).filter_map(probe_key).collect()
    }

    /// The build rows matched by some probe key, in build order.
    fn matched_build_rows() -> Vec<i64> {
        let probe = probe_keys();
        (0..BUILD_ROWS)
            .filter(|&r| build_key(r).is_some_and(|k| probe.contains(&k)))
            .map(|r| r as i64)
            .collect()
    }

    fn values(batches: &[RecordBatch], column: usize) -> Vec<Option<i64>> {
        batches
            .iter()
            .flat_map(|b| b.column(column).as_primitive::<Int64Type>().iter())
            .collect()
    }

    #[test]
    fn right_semi_and_right_anti_joins_emit_the_matched_and_unmatched_build_rows() {
        let matched = matched_build_rows();
        let (probed, finished) = run(JoinKind::RightSemi, schema(&["b_key", "b_row"]));
        assert!(probed.iter().all(|b| b.num_rows() == 0));
        let rows: Vec<i64> = values(&finished, 1).into_iter().flatten().collect();
        assert_eq!(rows, matched);

        let (_, finished) = run(JoinKind::RightAnti, schema(&["b_key", "b_row"]));
        let rows: Vec<i64> = values(&finished, 1).into_iter().flatten().collect();
        let matched: HashSet<i64> = matched.into_iter().collect();
        let unmatched: Vec<i64> = (0..BUILD_ROWS as i64)
            .filter(|r| !matched.contains(r))
            .collect();
        assert!(unmatched.iter().any(|&r| build_key(r as usize).is_none()));
        assert_eq!(rows, unmatched);
    }

    #[test]
    fn full_join_emits_pairs_and_the_rows_of_either_side_without_a_match() {
        let (probed, finished) = run(JoinKind::Full, schema(&["p_key", "b_key", "b_row"]));
        let build_keys: HashSet<i64> = (0..BUILD_ROWS).filter_map(build_key).collect();
        let probe_side = values(&probed, 0);
        let mut pairs = 0;
        for (p, b) in probe_side.iter().zip(values(&probed, 1)) {
            match (p, b) {
                (Some(p), Some(b)) => {
                    assert_eq!(*p, b);
                    pairs += 1;
                }
                (_, None) => assert!(p.is_none_or(|k| !build_keys.contains(&k))),
                (None, Some(_)) => panic!("a NULL probe key matched"),
            }
        }
        assert_eq!(pairs, matched_build_rows().len());
        let unmatched_probe = (0..34_000)
            .filter(|&r| probe_key(r).is_none_or(|k| !build_keys.contains(&k)))
            .count();
        assert_eq!(probe_side.len(), pairs + unmatched_probe);

        assert!(values(&finished, 0).iter().all(Option::is_none));
        let rows: HashSet<i64> = values(&finished, 2).into_iter().flatten().collect();
        let matched: HashSet<i64> = matched_build_rows().into_iter().collect();
        assert_eq!(rows.len() + matched.len(), BUILD_ROWS);
        assert!(rows.is_disjoint(&matched));
    }

    #[test]
    fn matched_build_keys_are_taken_from_the_probe_rows() {
        // The probe key is not emitted, the build key is: pairs take it from the probe rows.
        let output = Arc::new(Schema::new(vec![
            Field::new("p_key", DataType::Null, true),
            Field::new("b_key", DataType::Int64, true),
            Field::new("b_row", DataType::Int64, true),
        ]));
        for kind in [JoinKind::Inner, JoinKind::Right] {
            let (probed, finished) = run(kind, output.clone());
            let keys = values(&probed, 1);
            let rows = values(&probed, 2);
            assert_eq!(keys.len(), matched_build_rows().len());
            for (key, row) in keys.iter().zip(&rows) {
                assert_eq!(*key, build_key(row.unwrap() as usize), "{kind:?}");
            }
            // A right join's unmatched build rows still carry their own keys.
            for (key, row) in values(&finished, 1).iter().zip(values(&finished, 2)) {
                assert_eq!(*key, build_key(row.unwrap() as usize));
            }
        }
        let join = HashJoin::new(
            JoinKind::Inner,
            &[key_column("p_key")],
            &[key_column("b_key")],
            None,
            output,
            &schema(&["b_key", "b_row"]),
            &build_batches(),
        )
        .unwrap();
        assert_eq!(join.equal_probe_column, [Some(0), None]);
    }

    #[test]
    fn build_columns_nothing_reads_are_dropped_before_the_build() {
        // The output types b_row NULL: nothing above the join reads it.
        let fields = vec![
            Field::new("p_key", DataType::Int64, true),
            Field::new("b_key", DataType::Int64, true),
            Field::new("b_row", DataType::Null, true),
        ];
        let (probed, _) = run(JoinKind::Inner, Arc::new(Schema::new(fields)));
        assert!(
            probed
                .iter()
                .all(|b| b.column(2).data_type() == &DataType::Null)
        );
        let keys: Vec<(Option<i64>, Option<i64>)> = values(&probed, 0)
            .into_iter()
            .zip(values(&probed, 1))
            .collect();
        assert_eq!(keys.len(), matched_build_rows().len());
        assert!(keys.iter().all(|(p, b)| p.is_some() && p == b));
        let output = schema(&["p_key", "b_key", "b_row"]);
        let needed = |output: &SchemaRef, filter: Option<&Expr>| {
            let build = schema(&["b_key", "b_row"]);
            build_columns_needed(
                JoinKind::Inner,
                output,
                &build,
                &[key_column("b_key")],
                filter,
            )
        };
        assert_eq!(needed(&output, None), [true, true]);
        let pruned = Arc::new(Schema::new(vec![
            Field::new("p_key", DataType::Int64, true),
            Field::new("b_key", DataType::Null, true),
            Field::new("b_row", DataType::Null, true),
        ]));
        // The key is read to build the table; a filter reads b_row (column 2 of the pairs).
        assert_eq!(needed(&pruned, None), [true, false]);
        let b_row = Expr::Column {
            index: 2,
            name: "b_row".into(),
            data_type: DataType::Int64,
        };
        assert_eq!(needed(&pruned, Some(&b_row)), [true, true]);
    }
}
