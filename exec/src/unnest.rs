//! Unnest: each input row once per element of an array computed from it, the element last.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::SchemaRef;
use pondra_planner::Expr;

use crate::Result;
use crate::expr::evaluate;
use crate::sink::Flow;

/// Output batches are cut at about this many rows: one row's array may be long.
const OUTPUT_ROWS: usize = 8192;

/// Output batches hold about this many bytes at most: a row repeated per element may be wide.
pub const OUTPUT_BYTES: usize = 16 << 20;

/// How many output rows of `row_bytes` each make a batch of at most about `OUTPUT_BYTES`
/// (and at most `OUTPUT_ROWS`, at least one).
pub fn rows_per_batch(row_bytes: usize) -> usize {
    (OUTPUT_BYTES / row_bytes.max(1)).clamp(1, OUTPUT_ROWS)
}

/// The rows of `batch` repeated per element of `array`'s value in each, with the element,
/// handed to `emit` a batch at a time until it needs no more.
pub fn unnest(
    batch: &RecordBatch,
    array: &Expr,
    schema: &SchemaRef,
    emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
) -> Result<Flow> {
    let lists = evaluate(array, batch)?;
    let lists = lists.as_list::<i32>();
    let offsets = lists.value_offsets();
    let row_bytes = crate::memory::batch_bytes(batch) / batch.num_rows().max(1);
    let chunk = rows_per_batch(row_bytes);
    let mut rows: Vec<u32> = Vec::with_capacity(chunk);
    let mut elements: Vec<u32> = Vec::with_capacity(chunk);
    for row in (0..lists.len()).filter(|&row| lists.is_valid(row)) {
        for element in offsets[row] as u32..offsets[row + 1] as u32 {
            rows.push(row as u32);
            elements.push(element);
            if rows.len() == chunk {
                crate::control::check_current()?;
                let out = output(batch, lists.values(), &rows, &elements, schema)?;
                if emit(out)? == Flow::Done {
                    return Ok(Flow::Done);
                }
                rows.clear();
                elements.clear();
            }
        }
    }
    if rows.is_empty() {
        return Ok(Flow::More);
    }
    emit(output(batch, lists.values(), &rows, &elements, schema)?)
}

/// The output rows: `batch`'s rows at `rows`, each with the element of `values` at the same
/// place of `elements`.
fn output(
    batch: &RecordBatch,
    values: &ArrayRef,
    rows: &[u32],
    elements: &[u32],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let rows = UInt32Array::from(rows.to_vec());
    let elements = UInt32Array::from(elements.to_vec());
    let mut columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| take(c, &rows, None))
        .collect::<Result<_, _>>()?;
    columns.push(take(values, &elements, None)?);
    let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}
