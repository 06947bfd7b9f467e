//! The rows of a hash join's build side, kept in the batches its pipeline produced. Build rows
//! are numbered in order across the batches; the rows a probe batch joins are gathered from
//! the batches they are in. Concatenating the batches into one instead would copy the whole
//! build side while the join is built, which cost more than the key table itself.

use arrow::array::{
    Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array, new_empty_array, new_null_array,
};
use arrow::compute::{concat_batches, interleave, take};
use arrow::datatypes::{DataType, SchemaRef};
use rayon::prelude::*;

use crate::Result;

/// Build sides of fewer rows are concatenated into one batch: copying them costs a few
/// milliseconds, and a join with many output rows takes them from one batch faster than it
/// gathers them from several.
const CONCATENATED_ROWS: usize = 1_000_000;

/// Larger build sides keep batches of at least this many rows as they are.
const MIN_BATCH_ROWS: usize = 4096;

pub struct BuildRows {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    /// The number of each batch's first row.
    first_rows: Vec<u32>,
    rows: usize,
}

impl BuildRows {
    pub fn new(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<BuildRows> {
        let batches: Vec<&RecordBatch> = batches.iter().filter(|b| b.num_rows() > 0).collect();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if rows < CONCATENATED_ROWS {
            let batch = match &batches[..] {
                [only] => (*only).clone(),
                _ => concat_batches(schema, batches.iter().copied())?,
            };
            return Ok(BuildRows::in_batches(schema, vec![batch]));
        }
        // Runs of small batches (a selective join or filter below makes them) are concatenated:
        // gathering costs a little for every batch gathered from, once per probe batch.
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        let mut run_rows = 0;
        for (i, batch) in batches.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if run_rows < MIN_BATCH_ROWS => run.end = i + 1,
                _ => {
                    runs.push(i..i + 1);
                    run_rows = 0;
                }
            }
            run_rows += batch.num_rows();
        }
        let coalesced = runs
            .into_par_iter()
            .map(|run| match &batches[run.clone()] {
                [only] => Ok((*only).clone()),
                several => Ok(concat_batches(schema, several.iter().copied())?),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BuildRows::in_batches(schema, coalesced))
    }

    /// The rows of these batches, as they are.
    fn in_batches(schema: &SchemaRef, batches: Vec<RecordBatch>) -> BuildRows {
        let mut first_rows = Vec::with_capacity(batches.len());
        let mut rows = 0;
        for batch in &batches {
            first_rows.push(rows as u32);
            rows += batch.num_rows();
        }
        BuildRows {
            schema: schema.clone(),
            batches,
            first_rows,
            rows,
        }
    }

    pub fn num_rows(&self) -> usize {
        self.rows
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The batches, in row order (without empty ones).
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// Each build column at the given rows, `None` giving a NULL in every column.
    pub fn take(&self, rows: &[Option<u32>]) -> Result<Vec<ArrayRef>> {
        self.take_except(rows, &[])
    }

    /// As `take`, but the columns `skip` marks are left NULL (typed NULL) for the caller to
    /// fill.
    pub fn take_except(&self, rows: &[Option<u32>], skip: &[bool]) -> Result<Vec<ArrayRef>> {
        let skipped = |column: usize| skip.get(column).copied().unwrap_or(false);
        if let [batch] = &self.batches[..] {
            let indices = UInt32Array::from(rows.to_vec());
            return batch
                .columns()
                .iter()
                .enumerate()
                .map(|(column, values)| match skipped(column) {
                    true => Ok(new_null_array(&DataType::Null, rows.len())),
                    false => Ok(take(values, &indices, None)?),
                })
                .collect();
        }
        // A `None` points at a row of NULLs after the last batch.
        let null_batch = self.batches.len();
        let at: Vec<(usize, usize)> = rows
            .iter()
            .map(|row| match row {
                Some(row) => self.locate(*row),
                None => (null_batch, 0),
            })
            .collect();
        let needs_nulls = rows.iter().any(Option::is_none);
        self.schema
            .fields()
            .iter()
            .enumerate()
            .map(|(column, field)| {
                // Columns nothing reads are typed NULL (see the scans): no need to gather them.
                if field.data_type() == &DataType::Null || skipped(column) {
                    return Ok(new_null_array(&DataType::Null, rows.len()));
                }
                if at.is_empty() {
                    return Ok(new_empty_array(field.data_type()));
                }
                let nulls = needs_nulls.then(|| new_null_array(field.data_type(), 1));
                let mut values: Vec<&dyn Array> = self
                    .batches
                    .iter()
                    .map(|b| b.column(column).as_ref())
                    .collect();
                values.extend(nulls.as_deref());
                Ok(interleave(&values, &at)?)
            })
            .collect()
    }

    /// The rows for which `keep(row)` holds, batch by batch (one empty batch when there are no
    /// rows).
    pub fn filter(&self, keep: impl Fn(usize) -> bool) -> Result<Vec<RecordBatch>> {
        if self.batches.is_empty() {
            return Ok(vec![RecordBatch::new_empty(self.schema.clone())]);
        }
        let mut kept = Vec::with_capacity(self.batches.len());
        for (batch, &first_row) in self.batches.iter().zip(&self.first_rows) {
            let first_row = first_row as usize;
            let mask: BooleanArray = (first_row..first_row + batch.num_rows())
                .map(|row| Some(keep(row)))
                .collect();
            kept.push(crate::select::filter_batch(batch, &mask)?);
        }
        Ok(kept)
    }

    /// The batch a build row is in, and its row there.
    #[inline]
    fn locate(&self, row: u32) -> (usize, usize) {
        let batch = self.first_rows.partition_point(|&first| first <= row) - 1;
        (batch, (row - self.first_rows[batch]) as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, Int64Array};
    use arrow::datatypes::{Field, Int64Type, Schema};

    use super::*;

    fn batch(schema: &SchemaRef, values: Vec<i64>) -> RecordBatch {
        let nothing = new_null_array(&DataType::Null, values.len());
        let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(values)), nothing];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    }

    #[test]
    fn rows_are_numbered_across_batches_and_gathered_from_them() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("unread", DataType::Null, true),
        ]));
        let batches = [
            batch(&schema, vec![10, 11]),
            batch(&schema, vec![]),
            batch(&schema, vec![12]),
            batch(&schema, vec![13, 14, 15]),
        ];
        // Gathered from several batches, or taken from one when they are concatenated.
        let several = BuildRows::in_batches(&schema, batches.to_vec());
        let one = BuildRows::new(&schema, &batches).unwrap();
        assert_eq!(one.batches().len(), 1);
        for rows in [several, one] {
            assert_eq!(rows.num_rows(), 6);
            let taken = rows
                .take(&[Some(5), None, Some(0), Some(2), Some(3)])
                .unwrap();
            let values: Vec<Option<i64>> = taken[0].as_primitive::<Int64Type>().iter().collect();
            assert_eq!(values, [Some(15), None, Some(10), Some(12), Some(13)]);
            assert_eq!(taken[1].len(), 5);
            let kept = rows.filter(|row| row % 2 == 1).unwrap();
            let values: Vec<Option<i64>> = kept
                .iter()
                .flat_map(|b| b.column(0).as_primitive::<Int64Type>().iter())
                .collect();
            assert_eq!(values, [Some(11), Some(13), Some(15)]);
            assert!(rows.take(&[]).unwrap()[0].is_empty());
        }
    }

    #[test]
    fn runs_of_small_batches_of_a_large_build_side_are_concatenated() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("unread", DataType::Null, true),
        ]));
        let batches: Vec<RecordBatch> = (0..1_200)
            .map(|i| {
                let size = if i == 600 { 10_000 } else { 1_000 };
                batch(&schema, (0..size).map(|r| i * 100_000 + r).collect())
            })
            .collect();
        let rows = BuildRows::new(&schema, &batches).unwrap();
        assert_eq!(rows.num_rows(), 1_209_000);
        let sizes: Vec<usize> = rows.batches().iter().map(RecordBatch::num_rows).collect();
        // Only the last run may end short.
        let (_, all_but_last) = sizes.split_last().unwrap();
        assert!(
            all_but_last.iter().all(|&n| n >= MIN_BATCH_ROWS),
            "{sizes:?}"
        );
        assert!(sizes.len() > 1 && sizes.len() < 300, "{sizes:?}");
        // Row 600_500 is row 500 of the large batch; row 1_208_999 the last row.
        let taken = rows
            .take(&[Some(600_500), Some(1_208_999), Some(0)])
            .unwrap();
        let values: Vec<Option<i64>> = taken[0].as_primitive::<Int64Type>().iter().collect();
        assert_eq!(values, [Some(60_000_500), Some(119_900_999), Some(0)]);
    }
}
