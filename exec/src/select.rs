//! Keeping the rows of a batch a mask selects. Columns nothing reads travel as NULL arrays of
//! type NULL (ADR 0008); Arrow's filter copies those slice by slice through its generic path,
//! which cost more than filtering the columns that hold values. Here they are made anew.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BooleanArray, NullArray, RecordBatch, RecordBatchOptions};
use arrow::compute::FilterBuilder;
use arrow::datatypes::DataType;
use pondra_planner::Expr;

use crate::expr::evaluate;
use crate::{ExecError, Result};

/// Which rows of `batch` `predicate` is true for (NULL where it is NULL).
pub fn predicate_mask(predicate: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    let mask = evaluate(predicate, batch)?;
    mask.as_boolean_opt()
        .cloned()
        .ok_or_else(|| ExecError::Execution("filter is not boolean".into()))
}

/// The rows of `batch` `predicate` is true for.
pub fn filter_where(predicate: &Expr, batch: &RecordBatch) -> Result<RecordBatch> {
    filter_batch(batch, &predicate_mask(predicate, batch)?)
}

/// The rows of `batch` where `mask` is true (NULL counts as false).
pub fn filter_batch(batch: &RecordBatch, mask: &BooleanArray) -> Result<RecordBatch> {
    let predicate = FilterBuilder::new(mask).optimize().build();
    let rows = predicate.count();
    let columns = batch
        .columns()
        .iter()
        .map(|column| match column.data_type() {
            DataType::Null => Ok(Arc::new(NullArray::new(rows)) as ArrayRef),
            _ => predicate.filter(column),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &options,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int32Array};
    use arrow::datatypes::{Field, Schema};

    #[test]
    fn null_columns_keep_the_selected_row_count() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("unread", DataType::Null, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3, 4])),
                Arc::new(NullArray::new(4)),
            ],
        )
        .unwrap();
        let mask = BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]);
        let kept = filter_batch(&batch, &mask).unwrap();
        assert_eq!(kept.num_rows(), 2);
        assert_eq!(kept.column(1).len(), 2);
        let a = kept
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert_eq!(a.values(), &[1, 4]);
    }
}
