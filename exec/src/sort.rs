use arrow::array::RecordBatch;
use arrow::compute::{
    SortColumn, SortOptions, concat_batches, lexsort_to_indices, take_record_batch,
};
use arrow::datatypes::SchemaRef;
use pondra_planner::SortKey;

use crate::Result;
use crate::expr::evaluate;

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
    let columns = keys
        .iter()
        .map(|k| {
            Ok(SortColumn {
                values: evaluate(&k.expr, &all)?,
                options: Some(SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                }),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let indices = lexsort_to_indices(&columns, fetch)?;
    Ok(vec![take_record_batch(&all, &indices)?])
}
