//! Hash joins: the right input is built into a hash table on its key columns; the left input
//! streams through it batch by batch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{
    Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array, new_null_array,
};
use arrow::compute::{concat_batches, filter_record_batch, take};
use arrow::datatypes::{DataType, SchemaRef};
use pondra_planner::{Expr, JoinKind};

use crate::expr::evaluate;
use crate::keys::{KeyIndex, NO_KEY, NullKeys};
use crate::{ExecError, Result};

/// Output batches are cut at about this many rows, so a join that multiplies rows does not
/// build one huge batch.
const OUTPUT_ROWS: usize = 8192;

/// The end of a chain of build rows.
const NO_ROW: u32 = u32::MAX;

/// The built side of a hash join and what the probe side has matched of it.
pub struct HashJoin {
    kind: JoinKind,
    left_keys: Vec<Expr>,
    filter: Option<Expr>,
    schema: SchemaRef,
    build: RecordBatch,
    /// The build side's distinct keys (`None` for a join without keys); rows with a NULL key
    /// are never in it.
    index: Option<KeyIndex>,
    /// For each key id, the first build row with that key.
    heads: Vec<u32>,
    /// For each build row, the next build row with the same key (`NO_ROW` after the last): the
    /// rows of one key form a chain, in build order, at four bytes a row.
    next: Vec<u32>,
    build_has_null_key: bool,
    /// For a full join, the build rows matched so far, to emit the others at the end. Probe
    /// batches may run on several threads at once.
    matched: Vec<AtomicBool>,
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
        let build = concat_batches(build_schema, build_batches)?;
        if kind == JoinKind::Single && left_keys.is_empty() && build.num_rows() > 1 {
            return Err(ExecError::Execution(
                "more than one row returned by a subquery used as an expression".into(),
            ));
        }
        let mut heads = Vec::new();
        let mut next = vec![NO_ROW; build.num_rows()];
        let mut build_has_null_key = false;
        let index = if right_keys.is_empty() {
            None
        } else {
            let types: Vec<DataType> = right_keys.iter().map(Expr::data_type).collect();
            let mut index = KeyIndex::new(&types)?;
            let keys = right_keys
                .iter()
                .map(|k| evaluate(k, &build))
                .collect::<Result<Vec<_>>>()?;
            let mut ids = Vec::new();
            index.intern(&keys, NullKeys::Skip, &mut ids, &mut Vec::new())?;
            heads = vec![NO_ROW; index.len()];
            // Last row first, so each key's chain runs in build order.
            for (row, &id) in ids.iter().enumerate().rev() {
                if id == NO_KEY {
                    build_has_null_key = true;
                    continue;
                }
                next[row] = heads[id as usize];
                heads[id as usize] = row as u32;
            }
            Some(index)
        };
        let matched = if matches!(
            kind,
            JoinKind::Full | JoinKind::RightSemi | JoinKind::RightAnti
        ) {
            (0..build.num_rows())
                .map(|_| AtomicBool::new(false))
                .collect()
        } else {
            Vec::new()
        };
        Ok(HashJoin {
            kind,
            left_keys: left_keys.to_vec(),
            filter: filter.cloned(),
            schema,
            build,
            index,
            heads,
            next,
            build_has_null_key,
            matched,
        })
    }

    /// Joins one probe batch.
    pub fn probe(&self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let rows = batch.num_rows();
        let (probe_index, build_index) = self.candidates(batch)?;
        // Pairs that pass the join filter.
        let (probe_index, build_index) = match &self.filter {
            None => (probe_index, build_index),
            Some(filter) if !probe_index.is_empty() => {
                let joined = self.pairs(batch, &probe_index, &build_index)?;
                let keep = evaluate(filter, &joined)?;
                let keep = keep
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| ExecError::Execution("join filter is not boolean".into()))?;
                let mut p = Vec::new();
                let mut b = Vec::new();
                for i in 0..keep.len() {
                    if keep.is_valid(i) && keep.value(i) {
                        p.push(probe_index[i]);
                        b.push(build_index[i]);
                    }
                }
                (p, b)
            }
            Some(_) => (probe_index, build_index),
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
                self.matched[b as usize].store(true, Ordering::Relaxed);
            }
        }
        match self.kind {
            JoinKind::Inner => self.emit_pairs(batch, &probe_index, &build_index),
            JoinKind::Left | JoinKind::Full | JoinKind::Single => {
                let mut p = probe_index;
                let mut b: Vec<Option<u32>> = build_index.into_iter().map(Some).collect();
                for (row, matched) in probe_matched.iter().enumerate() {
                    if !matched {
                        p.push(row as u32);
                        b.push(None);
                    }
                }
                self.emit_outer(batch, &p, &b)
            }
            JoinKind::Semi => self.emit_left(batch, |row| probe_matched[row]),
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
                            && (self.build_has_null_key || keys.iter().any(|k| k.is_null(row)))
                        {
                            None
                        } else {
                            Some(false)
                        }
                    })
                    .collect();
                let mut columns = batch.columns().to_vec();
                columns.push(Arc::new(marks));
                let options = RecordBatchOptions::new().with_row_count(Some(rows));
                Ok(vec![RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    columns,
                    &options,
                )?])
            }
            JoinKind::Anti => self.emit_left(batch, |row| !probe_matched[row]),
            // Their rows are the build side's, known once every probe row has been seen.
            JoinKind::RightSemi | JoinKind::RightAnti => Ok(vec![]),
            JoinKind::NullAwareAnti => {
                if self.build.num_rows() == 0 {
                    return self.emit_left(batch, |_| true);
                }
                if self.build_has_null_key {
                    return Ok(vec![]);
                }
                let keys = self.probe_keys(batch)?;
                let null_key = |row: usize| keys.iter().any(|k| k.is_null(row));
                self.emit_left(batch, |row| !probe_matched[row] && !null_key(row))
            }
        }
    }

    /// After the last probe batch: the build rows a full join never matched, or those a right
    /// semi join matched and a right anti join did not.
    pub fn finish(&self) -> Result<Vec<RecordBatch>> {
        if self.kind.right_only() {
            let keep = self.kind == JoinKind::RightSemi;
            let mask: BooleanArray = self
                .matched
                .iter()
                .map(|m| Some(m.load(Ordering::Relaxed) == keep))
                .collect();
            let kept = filter_record_batch(&self.build, &mask)?;
            return Ok(vec![self.with_schema(kept)?]);
        }
        if self.kind != JoinKind::Full {
            return Ok(vec![]);
        }
        let unmatched: Vec<u32> = (0..self.matched.len() as u32)
            .filter(|i| !self.matched[*i as usize].load(Ordering::Relaxed))
            .collect();
        if unmatched.is_empty() {
            return Ok(vec![]);
        }
        let left_width = self.schema.fields().len() - self.build.num_columns();
        let indices = UInt32Array::from(unmatched);
        let mut columns: Vec<ArrayRef> = self.schema.fields()[..left_width]
            .iter()
            .map(|f| new_null_array(f.data_type(), indices.len()))
            .collect();
        for column in self.build.columns() {
            columns.push(take(column, &indices, None)?);
        }
        Ok(vec![RecordBatch::try_new(self.schema.clone(), columns)?])
    }

    fn probe_keys(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.left_keys.iter().map(|k| evaluate(k, batch)).collect()
    }

    /// Every (probe row, build row) pair with equal keys; all pairs when there are no keys.
    fn candidates(&self, batch: &RecordBatch) -> Result<(Vec<u32>, Vec<u32>)> {
        let mut probe = Vec::new();
        let mut build = Vec::new();
        match &self.index {
            None => {
                let build_rows = self.build.num_rows() as u32;
                for row in 0..batch.num_rows() as u32 {
                    for b in 0..build_rows {
                        probe.push(row);
                        build.push(b);
                    }
                }
            }
            Some(index) => {
                let keys = self.probe_keys(batch)?;
                let mut ids = Vec::new();
                index.lookup(&keys, &mut ids)?;
                for (row, &id) in ids.iter().enumerate() {
                    if id == NO_KEY {
                        continue;
                    }
                    let mut b = self.heads[id as usize];
                    while b != NO_ROW {
                        probe.push(row as u32);
                        build.push(b);
                        b = self.next[b as usize];
                    }
                }
            }
        }
        Ok((probe, build))
    }

    /// The joined rows of the given pairs: probe columns, then build columns.
    fn pairs(&self, batch: &RecordBatch, probe: &[u32], build: &[u32]) -> Result<RecordBatch> {
        let probe = UInt32Array::from(probe.to_vec());
        let build = UInt32Array::from(build.to_vec());
        let mut columns = Vec::new();
        let mut fields = Vec::new();
        for (column, field) in batch.columns().iter().zip(batch.schema().fields()) {
            columns.push(take(column, &probe, None)?);
            fields.push(field.as_ref().clone());
        }
        for (column, field) in self
            .build
            .columns()
            .iter()
            .zip(self.build.schema().fields())
        {
            columns.push(take(column, &build, None)?);
            fields.push(field.as_ref().clone().with_nullable(true));
        }
        let schema = Arc::new(arrow::datatypes::Schema::new(fields));
        let options = RecordBatchOptions::new().with_row_count(Some(probe.len()));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }

    fn emit_pairs(
        &self,
        batch: &RecordBatch,
        probe: &[u32],
        build: &[u32],
    ) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for start in (0..probe.len()).step_by(OUTPUT_ROWS) {
            let end = (start + OUTPUT_ROWS).min(probe.len());
            let joined = self.pairs(batch, &probe[start..end], &build[start..end])?;
            out.push(self.with_schema(joined)?);
        }
        Ok(out)
    }

    fn emit_outer(
        &self,
        batch: &RecordBatch,
        probe: &[u32],
        build: &[Option<u32>],
    ) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for start in (0..probe.len()).step_by(OUTPUT_ROWS) {
            let end = (start + OUTPUT_ROWS).min(probe.len());
            let probe_index = UInt32Array::from(probe[start..end].to_vec());
            let build_index = UInt32Array::from(build[start..end].to_vec());
            let mut columns = Vec::new();
            for column in batch.columns() {
                columns.push(take(column, &probe_index, None)?);
            }
            for column in self.build.columns() {
                columns.push(take(column, &build_index, None)?);
            }
            let options = RecordBatchOptions::new().with_row_count(Some(end - start));
            out.push(RecordBatch::try_new_with_options(
                self.schema.clone(),
                columns,
                &options,
            )?);
        }
        Ok(out)
    }

    fn emit_left(
        &self,
        batch: &RecordBatch,
        keep: impl Fn(usize) -> bool,
    ) -> Result<Vec<RecordBatch>> {
        let mask: BooleanArray = (0..batch.num_rows()).map(|row| Some(keep(row))).collect();
        let kept = filter_record_batch(batch, &mask)?;
        Ok(vec![self.with_schema(kept)?])
    }

    fn with_schema(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            batch.columns().to_vec(),
            &options,
        )?)
    }
}
