//! Merge tables (ADR 0050): an INSERT folds the rows of one key together, in their order, and
//! then with the row the table holds for the key, column by column: a sum, a min, a max, or
//! the newest value. NULL is no value: folded with a value, it gives the value.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, new_null_array};
use arrow::compute::kernels::cmp::{gt, lt};
use arrow::compute::kernels::numeric::add;
use arrow::compute::kernels::zip::zip;
use arrow::compute::{
    CastOptions, cast, cast_with_options, concat_batches, interleave, is_null, take,
};
use arrow::datatypes::{Field, Schema};
use arrow::row::{RowConverter, SortField};
use pondra_catalog::{Fold, Snapshot, TableDef};
use pondra_planner::{AggregateCall, AggregateFunction, Expr, LogicalPlan};

use crate::Result;
use crate::node::Node;
use crate::tables::keyed::{Matched, column_indices};

impl Node {
    /// The rows of `batch` folded per key: `last` (the last row of each key, as
    /// `last_per_key` keeps it) with each summed, least or greatest column folded over all of
    /// the key's rows.
    pub(crate) async fn folded_per_key(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &TableDef,
        batch: &RecordBatch,
        last: RecordBatch,
    ) -> Result<RecordBatch> {
        let folded: Vec<(usize, AggregateFunction)> = table
            .columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match table.folds.get(&c.name)? {
                Fold::Sum => Some((i, AggregateFunction::Sum)),
                Fold::Min => Some((i, AggregateFunction::Min)),
                Fold::Max => Some((i, AggregateFunction::Max)),
                Fold::Last => None,
            })
            .collect();
        if folded.is_empty() {
            return Ok(last);
        }
        let keys = column_indices(table, &table.key);
        let schema = table.arrow_schema();
        let column = |i: usize| {
            let f = schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        };
        let aggregates: Vec<AggregateCall> = folded
            .iter()
            .map(|&(i, func)| AggregateCall::new(func, Some(column(i))))
            .collect();
        let mut fields: Vec<Field> = keys.iter().map(|&i| schema.field(i).clone()).collect();
        for (n, call) in aggregates.iter().enumerate() {
            fields.push(Field::new(
                format!("fold_{n}"),
                call.data_type.clone(),
                true,
            ));
        }
        let plan = LogicalPlan::Aggregate {
            input: Box::new(LogicalPlan::Input {
                schema: schema.clone(),
            }),
            group: keys.iter().map(|&i| column(i)).collect(),
            aggregates,
            schema: Arc::new(Schema::new(fields)),
        };
        let result = self
            .run_query(plan, snapshot.clone(), vec![batch.clone()])
            .await?;
        let result = concat_batches(&result[0].schema(), &result)?;
        // The folded values, in the order of `last`'s rows.
        let result_keys: Vec<ArrayRef> = (0..keys.len())
            .map(|n| cast(result.column(n), schema.field(keys[n]).data_type()))
            .collect::<std::result::Result<_, _>>()?;
        let last_keys: Vec<ArrayRef> = keys.iter().map(|&i| last.column(i).clone()).collect();
        let converter = key_converter(&last_keys)?;
        let found = converter.convert_columns(&result_keys)?;
        let rows: HashMap<&[u8], u32> = (0..result.num_rows())
            .map(|r| (found.row(r).data(), r as u32))
            .collect();
        let wanted = converter.convert_columns(&last_keys)?;
        let order: UInt32Array = (0..last.num_rows())
            .map(|r| Some(rows[wanted.row(r).data()]))
            .collect();
        let mut columns = last.columns().to_vec();
        for (n, &(i, _)) in folded.iter().enumerate() {
            let values = take(result.column(keys.len() + n), &order, None)?;
            columns[i] = cast_with_options(&values, schema.field(i).data_type(), &EXACT)?;
        }
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// `batch` (one row per key) with each row folded into the row the table holds for its key,
/// among `held` (found by the key lookup; their columns are the table's, then their commit).
pub(crate) fn folded_with_held(
    table: &TableDef,
    batch: &RecordBatch,
    held: &Matched,
) -> Result<RecordBatch> {
    if held.rows.is_empty() {
        return Ok(batch.clone());
    }
    let keys = column_indices(table, &table.key);
    let new_keys: Vec<ArrayRef> = keys.iter().map(|&i| batch.column(i).clone()).collect();
    let converter = key_converter(&new_keys)?;
    let mut places = HashMap::new();
    let held_keys = held
        .rows
        .iter()
        .map(|columns| {
            let arrays: Vec<ArrayRef> = keys
                .iter()
                .map(|&i| cast(&columns[i], batch.column(i).data_type()))
                .collect::<std::result::Result<_, _>>()?;
            Ok(converter.convert_columns(&arrays)?)
        })
        .collect::<Result<Vec<_>>>()?;
    for (source, rows) in held_keys.iter().enumerate() {
        for r in 0..rows.num_rows() {
            places.insert(rows.row(r).data(), (source, r));
        }
    }
    // A row of a key the table does not hold is folded with NULLs: the last source.
    let none = held.rows.len();
    let wanted = converter.convert_columns(&new_keys)?;
    let indices: Vec<(usize, usize)> = (0..batch.num_rows())
        .map(|r| {
            places
                .get(wanted.row(r).data())
                .copied()
                .unwrap_or((none, 0))
        })
        .collect();
    let mut columns = batch.columns().to_vec();
    for (i, column) in table.columns.iter().enumerate() {
        let Some(&fold) = table.folds.get(&column.name) else {
            continue;
        };
        let data_type = batch.column(i).data_type();
        let mut sources = held
            .rows
            .iter()
            .map(|columns| cast(&columns[i], data_type))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        sources.push(new_null_array(data_type, 1));
        let sources: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
        let held_values = interleave(&sources, &indices)?;
        columns[i] = folded(fold, &held_values, batch.column(i))?;
    }
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The fold of two aligned columns, row by row; where one side is NULL, the other.
fn folded(fold: Fold, held: &ArrayRef, new: &ArrayRef) -> Result<ArrayRef> {
    let both = match fold {
        Fold::Last => return Ok(new.clone()),
        // A decimal sum widens its precision: brought back to the column's, or an error.
        Fold::Sum => cast_with_options(&add(held, new)?, new.data_type(), &EXACT)?,
        Fold::Min => zip(&lt(held, new)?, held, new)?,
        Fold::Max => zip(&gt(held, new)?, held, new)?,
    };
    let unless_held_null = zip(&is_null(held)?, new, &both)?;
    Ok(zip(&is_null(new)?, held, &unless_held_null)?)
}

/// A cast that fails rather than turn a value that does not fit into NULL.
const EXACT: CastOptions = CastOptions {
    safe: false,
    format_options: arrow::util::display::FormatOptions::new(),
};

fn key_converter(keys: &[ArrayRef]) -> Result<RowConverter> {
    let fields = keys
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    Ok(RowConverter::new(fields)?)
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, Int64Array, StringArray};
    use arrow::datatypes::Int64Type;

    use super::*;

    #[test]
    fn a_null_side_gives_the_other_and_two_values_fold() {
        let held: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None, Some(2), None]));
        let new: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), Some(4), None, None]));
        let values = |fold| {
            let out = folded(fold, &held, &new).unwrap();
            out.as_primitive::<Int64Type>().iter().collect::<Vec<_>>()
        };
        assert_eq!(values(Fold::Sum), vec![Some(8), Some(4), Some(2), None]);
        assert_eq!(values(Fold::Min), vec![Some(3), Some(4), Some(2), None]);
        assert_eq!(values(Fold::Max), vec![Some(5), Some(4), Some(2), None]);
        assert_eq!(values(Fold::Last), vec![Some(3), Some(4), None, None]);
        let held: ArrayRef = Arc::new(StringArray::from(vec![Some("b"), Some("a")]));
        let new: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let least = folded(Fold::Min, &held, &new).unwrap();
        let least: Vec<_> = least.as_string::<i32>().iter().collect();
        assert_eq!(least, vec![Some("a"), Some("a")]);
    }

    #[test]
    fn an_overflowing_sum_is_an_error() {
        let held: ArrayRef = Arc::new(Int64Array::from(vec![i64::MAX]));
        let new: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        assert!(folded(Fold::Sum, &held, &new).is_err());
    }
}
