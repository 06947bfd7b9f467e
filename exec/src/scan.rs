use std::sync::Arc;

use arrow::array::{ArrayRef, NullArray, RecordBatch, new_null_array};
use arrow::datatypes::{DataType, SchemaRef};
use bytes::Bytes;
use pondra_catalog::{DataFile, Layout, LogSegment, SegmentPayload, Snapshot, TableDef};
use pondra_storage::{Lake, read_parquet_bytes};

use crate::Result;

/// One unit of a table scan, read and decoded as a whole: a Parquet file or a log segment.
#[derive(Clone, Debug)]
pub enum Morsel {
    ParquetFile(String),
    InlineSegment(Bytes),
    SegmentObject(String),
    /// A container whose columns are not its table's (written before an ADD or DROP COLUMN):
    /// read whole, its columns mapped to the table's by id.
    Remapped {
        stored: Box<Morsel>,
        layout: Arc<Layout>,
    },
}

/// The morsels holding every row of a table at one snapshot: its Parquet files, then its log
/// tail in commit order.
pub fn table_morsels(snapshot: &Snapshot, table: &TableDef) -> Vec<Morsel> {
    let files = snapshot
        .files(table.id)
        .iter()
        .map(|f| Morsel::of_file(f, table));
    let segments = snapshot
        .segments(table.id)
        .iter()
        .map(|s| Morsel::of_segment(s, table));
    files.chain(segments).collect()
}

impl Morsel {
    /// The morsel of one data file of `table`.
    pub fn of_file(file: &DataFile, table: &TableDef) -> Morsel {
        Morsel::ParquetFile(file.path.clone()).in_layout(table.layout_of(&file.column_ids))
    }

    /// The morsel of one log segment (or change record) of `table`.
    pub fn of_segment(segment: &LogSegment, table: &TableDef) -> Morsel {
        let stored = match &segment.payload {
            SegmentPayload::Inline(bytes) => Morsel::InlineSegment(bytes.clone()),
            SegmentPayload::Object(path) => Morsel::SegmentObject(path.clone()),
        };
        stored.in_layout(table.layout_of(&segment.column_ids))
    }

    fn in_layout(self, layout: Option<Layout>) -> Morsel {
        match layout {
            None => self,
            Some(layout) => Morsel::Remapped {
                stored: Box::new(self),
                layout: Arc::new(layout),
            },
        }
    }
}

/// Reads one morsel's rows, as batches of `schema`. With `columns`, Parquet files decode only
/// those columns, and the others are NULL.
///
/// Runs on an executor thread, so it blocks on the object store through `runtime`.
pub fn read_morsel(
    lake: &Lake,
    runtime: &tokio::runtime::Handle,
    morsel: &Morsel,
    schema: &SchemaRef,
    columns: Option<&[usize]>,
) -> Result<Vec<RecordBatch>> {
    let batches = match morsel {
        Morsel::ParquetFile(path) => {
            let bytes = runtime.block_on(lake.get(path))?;
            let Some(columns) = columns else {
                return conform(read_parquet_bytes(bytes, None)?, schema);
            };
            let read = read_parquet_bytes(bytes, Some(columns))?;
            return read
                .into_iter()
                .filter(|b| b.num_rows() > 0)
                .map(|b| widen(&b, schema, columns))
                .collect();
        }
        Morsel::InlineSegment(bytes) => lake.inline_segment(bytes)?,
        Morsel::SegmentObject(path) => lake.segment_object(path, runtime)?,
        Morsel::Remapped { stored, layout } => {
            let batches = read_stored(lake, runtime, stored)?;
            return batches
                .iter()
                .filter(|b| b.num_rows() > 0)
                .map(|b| remap(b, layout, schema))
                .collect();
        }
    };
    conform(batches, schema)
}

/// Every column of a container as it was written.
fn read_stored(
    lake: &Lake,
    runtime: &tokio::runtime::Handle,
    morsel: &Morsel,
) -> Result<Vec<RecordBatch>> {
    Ok(match morsel {
        Morsel::ParquetFile(path) => read_parquet_bytes(runtime.block_on(lake.get(path))?, None)?,
        Morsel::InlineSegment(bytes) => lake.inline_segment(bytes)?,
        Morsel::SegmentObject(path) => lake.segment_object(path, runtime)?,
        Morsel::Remapped { .. } => unreachable!("a container has one layout"),
    })
}

/// A batch of a container whose columns are not its table's, as a batch of `schema`: the
/// table's columns found by id (NULL where the container predates one), then what the
/// container stores after its table columns (commit columns, a change record's), in order.
fn remap(batch: &RecordBatch, layout: &Layout, schema: &SchemaRef) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let width = layout.columns.len();
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let position = match i < width {
                true => layout.columns[i],
                false => Some(layout.stored + i - width),
            };
            match position.filter(|&p| p < batch.num_columns()) {
                Some(p) if field.data_type() != &DataType::Null => {
                    as_stored_type(batch.column(p), field.data_type())
                }
                _ => Ok(new_null_array(field.data_type(), rows)),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    batch_of(schema, columns, rows)
}

/// A batch of `schema` from its columns, which may be none at all.
fn batch_of(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Stored batches carry the writer's field metadata; the plan's schema is the reader's truth.
fn conform(batches: Vec<RecordBatch>, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| as_schema(&b, schema))
        .collect()
}

/// `batch` as a batch of `schema`, whose columns typed NULL (columns the plan never reads)
/// become NULL arrays.
pub fn as_schema(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| match field.data_type() {
            DataType::Null if column.data_type() != &DataType::Null => {
                Ok(Arc::new(NullArray::new(rows)) as ArrayRef)
            }
            stored => as_stored_type(column, stored),
        })
        .collect::<Result<Vec<_>>>()?;
    batch_of(schema, columns, rows)
}

/// A batch of the read `columns` as a batch of `schema`. No operator reads the other columns:
/// they are NULL, or zeros where the schema says a column has no NULLs. A string column read
/// as a dictionary stays one (ADR 0037), and the batch's schema says so.
pub fn widen(batch: &RecordBatch, schema: &SchemaRef, columns: &[usize]) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let mut read = batch.columns().iter();
    let mut dictionaries = false;
    let arrays = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            if columns.contains(&i) {
                let column = read.next().expect("one read column per projected index");
                if is_dictionary_of(column, field.data_type()) {
                    dictionaries = true;
                    return Ok(column.clone());
                }
                return as_stored_type(column, field.data_type());
            }
            unread_column(field.data_type(), field.is_nullable(), rows)
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = match dictionaries {
        false => schema.clone(),
        true => {
            let fields = schema.fields().iter().zip(&arrays).map(|(field, array)| {
                field
                    .as_ref()
                    .clone()
                    .with_data_type(array.data_type().clone())
            });
            Arc::new(arrow::datatypes::Schema::new(fields.collect::<Vec<_>>()))
        }
    };
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema, arrays, &options)?)
}

/// Whether `column` is a dictionary of values of `data_type`.
fn is_dictionary_of(column: &ArrayRef, data_type: &DataType) -> bool {
    matches!(column.data_type(), DataType::Dictionary(_, values) if values.as_ref() == data_type)
}

/// Rows up to which each thread keeps the unread columns it built, to slice them.
const UNREAD_COLUMN_ROWS: usize = 1 << 16;

thread_local! {
    /// Per data type and nullability, an unread column this thread built: the scans of a
    /// worker share them, sliced to each batch.
    static UNREAD_COLUMNS: std::cell::RefCell<Vec<(DataType, bool, ArrayRef)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A column a scan does not read, as the batch's schema still holds it: NULLs, or for a
/// non-nullable field zeros and empty strings. Built once per thread and type and sliced,
/// because building one per batch (zeroing its buffers and validating them) took a tenth of
/// a scan that reads four of lineitem's sixteen columns.
fn unread_column(data_type: &DataType, nullable: bool, rows: usize) -> Result<ArrayRef> {
    if rows > UNREAD_COLUMN_ROWS {
        return build_unread_column(data_type, nullable, rows);
    }
    UNREAD_COLUMNS.with_borrow_mut(|built| {
        let found = built
            .iter()
            .find(|(t, n, _)| t == data_type && *n == nullable);
        if let Some((_, _, column)) = found {
            return Ok(column.slice(0, rows));
        }
        let column = build_unread_column(data_type, nullable, UNREAD_COLUMN_ROWS)?;
        built.push((data_type.clone(), nullable, column.clone()));
        Ok(column.slice(0, rows))
    })
}

fn build_unread_column(data_type: &DataType, nullable: bool, rows: usize) -> Result<ArrayRef> {
    if data_type == &DataType::Null {
        return Ok(Arc::new(NullArray::new(rows)) as ArrayRef);
    }
    let nulls = arrow::array::new_null_array(data_type, rows);
    if nullable {
        return Ok(nulls);
    }
    // The same zeroed buffers without their validity: zeros and empty strings.
    let zeros = nulls.to_data().into_builder().nulls(None).build()?;
    Ok(arrow::array::make_array(zeros))
}

/// A stored column as the type its table declares now: decimals of up to 18 digits written
/// 128 bits wide, before they were held in 64 (ADR 0028), are narrowed as they are read.
fn as_stored_type(column: &ArrayRef, declared: &DataType) -> Result<ArrayRef> {
    let stored = column.data_type();
    if stored == declared {
        return Ok(column.clone());
    }
    match crate::decimal::keeps_values(stored, declared) {
        true => crate::decimal::cast_keeping_values(column, stored, declared),
        false => Ok(column.clone()),
    }
}

/// Every row of a table at one snapshot.
pub fn read_table(
    lake: &Lake,
    runtime: &tokio::runtime::Handle,
    snapshot: &Snapshot,
    table: &TableDef,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    for morsel in table_morsels(snapshot, table) {
        batches.extend(read_morsel(lake, runtime, &morsel, schema, None)?);
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray, Int64Array};
    use arrow::datatypes::{Field, Int64Type, Schema};

    use super::*;

    #[test]
    fn unread_columns_are_nulls_or_zeros_of_each_batch_length() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("read", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("amount", DataType::Int64, true),
        ]));
        for rows in [3, 1, 70_000, 5] {
            let read = Int64Array::from_iter_values(0..rows as i64);
            let batch = RecordBatch::try_new(
                Arc::new(Schema::new(vec![schema.field(0).clone()])),
                vec![Arc::new(read)],
            )
            .unwrap();
            let widened = widen(&batch, &schema, &[0]).unwrap();
            assert_eq!(widened.num_rows(), rows);
            let names = widened.column(1).as_string::<i32>();
            assert_eq!(names.len(), rows);
            assert_eq!(names.null_count(), 0);
            assert!(names.iter().all(|name| name == Some("")));
            let amounts = widened.column(2).as_primitive::<Int64Type>();
            assert_eq!((amounts.len(), amounts.null_count()), (rows, rows));
            assert_eq!(
                widened
                    .column(0)
                    .as_primitive::<Int64Type>()
                    .value(rows - 1),
                rows as i64 - 1
            );
        }
    }
}
