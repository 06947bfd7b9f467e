//! Which columns of a written Parquet file are dictionary-encoded. A dictionary pays for a
//! column of few distinct values. For one whose values are nearly all distinct (keys,
//! measures, vectors) it is as large as the values, and a read of any page must decode the
//! row group's whole dictionary first: reading one row then decompresses up to a megabyte.
//! The file's first rows decide, as DuckDB's compression analysis samples a column before
//! choosing how to store it.

use std::collections::HashSet;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Schema};
use arrow::row::{RowConverter, SortField};
use parquet::arrow::ArrowSchemaConverter;
use parquet::file::properties::WriterPropertiesBuilder;

use crate::Result;

/// Rows of the first batch sampled.
const SAMPLE_ROWS: usize = 8192;

/// Fewer sampled values than this decide nothing: the default (a dictionary) stays.
const FEWEST_VALUES: usize = 256;

/// A column whose sampled values are at least this share distinct is written without one.
const DISTINCT_SHARE: f64 = 0.9;

/// `properties` with dictionaries turned off for the columns whose values among the file's
/// first rows, `batches`, are nearly all distinct. `stored` is the schema the file is written
/// in: a column whose values it stores as several leaves keeps its dictionaries.
pub(crate) fn without_useless_dictionaries(
    mut properties: WriterPropertiesBuilder,
    stored: &Schema,
    batches: &[RecordBatch],
) -> Result<WriterPropertiesBuilder> {
    let Some(first) = batches.first() else {
        return Ok(properties);
    };
    let mut rows = 0;
    let mut sampled = Vec::new();
    for batch in batches {
        if rows == SAMPLE_ROWS {
            break;
        }
        let taken = batch.num_rows().min(SAMPLE_ROWS - rows);
        sampled.push(batch.slice(0, taken));
        rows += taken;
    }
    let sample = arrow::compute::concat_batches(&first.schema(), &sampled)?;
    let parquet = ArrowSchemaConverter::new().convert(stored)?;
    for (root, column) in sample.columns().iter().enumerate() {
        let mut leaves =
            (0..parquet.num_columns()).filter(|&leaf| parquet.get_column_root_idx(leaf) == root);
        let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
            continue;
        };
        if leaf_values(column).is_some_and(|values| nearly_all_distinct(&values)) {
            let path = parquet.column(leaf).path().clone();
            properties = properties.set_column_dictionary_enabled(path, false);
        }
    }
    Ok(properties)
}

/// The values of a column's one Parquet leaf: the column itself, or a list's items.
fn leaf_values(column: &ArrayRef) -> Option<ArrayRef> {
    match column.data_type() {
        DataType::List(_) => Some(column.as_list::<i32>().values().clone()),
        DataType::LargeList(_) => Some(column.as_list::<i64>().values().clone()),
        DataType::Struct(_) | DataType::Map(_, _) | DataType::FixedSizeList(_, _) => None,
        _ => Some(column.clone()),
    }
    .filter(|values| !values.data_type().is_nested())
}

/// Whether at least `DISTINCT_SHARE` of the non-NULL values of `values` differ.
fn nearly_all_distinct(values: &ArrayRef) -> bool {
    let values = values.slice(0, values.len().min(SAMPLE_ROWS * 4));
    let present = values.len() - values.null_count();
    if present < FEWEST_VALUES {
        return false;
    }
    let Ok(converter) = RowConverter::new(vec![SortField::new(values.data_type().clone())]) else {
        return false;
    };
    let Ok(rows) = converter.convert_columns(std::slice::from_ref(&values)) else {
        return false;
    };
    let distinct: HashSet<&[u8]> = (0..values.len())
        .filter(|&i| values.is_valid(i))
        .map(|i| rows.row(i).data())
        .collect();
    distinct.len() as f64 >= DISTINCT_SHARE * present as f64
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnPath;

    use super::*;

    #[test]
    fn only_columns_of_nearly_all_distinct_values_lose_their_dictionary() {
        let rows = 4096;
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("kind", DataType::Utf8, false),
            Field::new("few", DataType::Int64, true),
        ]);
        let ids = Int64Array::from_iter_values(0..rows);
        let kinds = StringArray::from_iter_values((0..rows).map(|i| format!("k{}", i % 7)));
        let few = Int64Array::from_iter((0..rows).map(|i| (i < 10).then_some(i)));
        let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(kinds), Arc::new(few)];
        let batch = RecordBatch::try_new(Arc::new(schema.clone()), columns).unwrap();
        let builder = WriterProperties::builder();
        let properties = without_useless_dictionaries(builder, &schema, &[batch])
            .unwrap()
            .build();
        let enabled = |name: &str| properties.dictionary_enabled(&ColumnPath::from(name));
        assert!(!enabled("id"));
        assert!(enabled("kind"));
        // Ten values are too few to decide on.
        assert!(enabled("few"));
        let builder = WriterProperties::builder();
        let none = without_useless_dictionaries(builder, &schema, &[])
            .unwrap()
            .build();
        assert!(none.dictionary_enabled(&ColumnPath::from("id")));
    }
}
