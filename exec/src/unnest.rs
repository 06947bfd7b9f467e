//! Unnest: each input row once per element of an array computed from it, the element last.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::SchemaRef;
use pondra_planner::Expr;

use crate::Result;
use crate::expr::evaluate;

/// Output batches are cut at about this many rows: one row's array may be long.
const OUTPUT_ROWS: usize = 8192;

/// The rows of `batch` repeated per element of `array`'s value in each, with the element.
pub fn unnest(batch: &RecordBatch, array: &Expr, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    let lists = evaluate(array, batch)?;
    let lists = lists.as_list::<i32>();
    let offsets = lists.value_offsets();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for row in 0..lists.len() {
        if lists.is_valid(row) {
            let (start, end) = (offsets[row] as u32, offsets[row + 1] as u32);
            pairs.extend((start..end).map(|element| (row as u32, element)));
        }
    }
    let mut out = Vec::new();
    for chunk in pairs.chunks(OUTPUT_ROWS) {
        let rows: UInt32Array = chunk.iter().map(|(row, _)| *row).collect();
        let elements: UInt32Array = chunk.iter().map(|(_, element)| *element).collect();
        let mut columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| take(c, &rows, None))
            .collect::<Result<_, _>>()?;
        columns.push(take(lists.values(), &elements, None)?);
        let options = RecordBatchOptions::new().with_row_count(Some(chunk.len()));
        out.push(RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &options,
        )?);
    }
    Ok(out)
}
