//! Reading a container of a lake table's rows with what ADR 0048 adds: the rows its deletion
//! vector marks are dropped, and each row kept can carry its address, for the statements that
//! change rows. The rows are numbered as they are stored (a row group's first row plus the
//! offset, across the pages read), so pages a filter rules out may still be skipped.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Int64Array, NullArray, RecordBatch, TimestampMicrosecondArray,
    new_null_array,
};
use arrow::compute::{concat, filter_record_batch};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use pondra_catalog::{COMMIT_VERSION, DeletionVector, OFFSET, ROW_ADDRESS, ROW_ID, row_address};
use pondra_planner::PhysicalPlan;
use pondra_storage::{ParquetFooter, read_parquet_row_group};

use crate::Result;
use crate::morsel::{
    Commits, PagePruning, Place, ScanFile, ScanUnit, kept_ranges, read_pages, scan_projection,
};
use crate::pipeline::ExecContext;
use crate::scan::read_morsel;

/// The live rows of one unit of a lake table scan, as batches of the scan's schema: its
/// table's columns, then the row address when the scan has that column.
pub fn read_live_rows(
    unit: &ScanUnit<'_>,
    place: &Place,
    node: &PhysicalPlan,
    pages: Option<&PagePruning<'_>>,
    dictionaries: &[usize],
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let PhysicalPlan::TableScan { table, .. } = node else {
        unreachable!("only lake tables have containers");
    };
    let (schema, columns) = scan_projection(node);
    let width = table.columns.len();
    let mut table_schema: SchemaRef = Arc::new(Schema::new(schema.fields()[..width].to_vec()));
    let mut table_columns: Option<Vec<usize>> =
        columns.map(|columns| columns.iter().copied().filter(|&c| c < width).collect());
    // Reading only the address still needs the row count: the first column is read for it.
    let reads_none = table_columns.as_ref().is_some_and(Vec::is_empty);
    if reads_none {
        table_columns = Some(vec![0]);
        table_schema = table.arrow_schema();
    }
    let mut whole_commits = None;
    let (read, ordinals) = match unit {
        ScanUnit::Table { morsel, .. } if matches!(place.commits, Commits::Stored { .. }) => {
            // A data file read whole (its columns mapped by id) with its commit columns.
            let (read, commits) = read_with_commits(morsel, &table_schema, &place.commits, ctx)?;
            whole_commits = Some(commits);
            let rows = read.iter().map(|b| b.num_rows() as u64).sum();
            (read, std::iter::once(0..rows).collect())
        }
        ScanUnit::Table { morsel, .. } => {
            let read = read_morsel(
                &ctx.lake,
                &ctx.runtime,
                morsel,
                &table_schema,
                table_columns.as_deref(),
            )?;
            let rows = read.iter().map(|b| b.num_rows() as u64).sum();
            (read, std::iter::once(0..rows).collect())
        }
        ScanUnit::RowGroup { file, row_group } => {
            let read = (file.as_ref(), *row_group);
            read_row_group(
                read,
                (&table_schema, table_columns.as_deref()),
                pages,
                dictionaries,
            )?
        }
        ScanUnit::TextFile(_) => unreachable!("text files are not lake tables"),
    };
    let stored = match whole_commits {
        Some(commits) => Some(commits),
        None => stored_commits(unit, place, &ordinals, schema, width)?,
    };
    let mut ordinals = ordinals.into_iter().flatten();
    let mut offset = 0;
    let mut out = Vec::with_capacity(read.len());
    for batch in read {
        let ordinals: Vec<u64> = ordinals.by_ref().take(batch.num_rows()).collect();
        assert_eq!(ordinals.len(), batch.num_rows(), "a row for every ordinal");
        let rows = batch.num_rows();
        let (mut fields, mut arrays) = match reads_none {
            false => (batch.schema().fields().to_vec(), batch.columns().to_vec()),
            true => {
                let fields = schema.fields()[..width].to_vec();
                let nulls: Vec<ArrayRef> = fields
                    .iter()
                    .map(|f| new_null_array(f.data_type(), rows))
                    .collect();
                (fields, nulls)
            }
        };
        for field in &schema.fields()[width..] {
            let column: ArrayRef = match (field.data_type(), field.name().as_str()) {
                (DataType::Null, _) => Arc::new(NullArray::new(rows)),
                (_, ROW_ADDRESS) => Arc::new(Int64Array::from_iter_values(
                    ordinals.iter().map(|&o| row_address(place.position, o)),
                )),
                (_, ROW_ID) => Arc::new(Int64Array::from_iter_values(
                    ordinals.iter().map(|&o| (place.first_row + o) as i64),
                )),
                (_, OFFSET) => match (&place.commits, &stored) {
                    (
                        _,
                        Some(StoredCommits {
                            offset: Some(offsets),
                            ..
                        }),
                    ) => offsets.slice(offset, rows),
                    (
                        Commits::Constant {
                            first_offset: Some(first),
                            ..
                        },
                        _,
                    ) => Arc::new(Int64Array::from_iter_values(
                        ordinals.iter().map(|&o| (first + o) as i64),
                    )),
                    // Rows appended before offsets were kept have none.
                    _ => new_null_array(&DataType::Int64, rows),
                },
                (_, name) => match (&place.commits, &stored) {
                    (_, Some(commits)) => match name {
                        COMMIT_VERSION => commits.version.slice(offset, rows),
                        _ => commits.time.slice(offset, rows),
                    },
                    (
                        Commits::Constant {
                            version, micros, ..
                        },
                        None,
                    ) => match name {
                        COMMIT_VERSION => Arc::new(Int64Array::from_value(*version as i64, rows)),
                        _ => Arc::new(TimestampMicrosecondArray::from_value(*micros, rows)),
                    },
                    (Commits::Stored { .. }, None) => unreachable!("stored commits were read"),
                },
            };
            fields.push(field.clone());
            arrays.push(column);
        }
        offset += rows;
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
        let batch = match &place.deleted {
            Some(deleted) => {
                let live: BooleanArray = ordinals
                    .iter()
                    .map(|&o| Some(!deleted.contains(o as u32)))
                    .collect();
                filter_record_batch(&batch, &live)?
            }
            None => batch,
        };
        if batch.num_rows() > 0 {
            out.push(batch);
        }
    }
    Ok(out)
}

/// What a data file stores after its table's columns, for the rows read: each row's commit
/// version and time, and its offset when the file has offsets.
struct StoredCommits {
    version: ArrayRef,
    time: ArrayRef,
    offset: Option<ArrayRef>,
}

/// A morsel's rows as batches of `table_schema`, and the commit version and time columns its
/// data file stores after them (with the offsets, when it has them), each as one array.
fn read_with_commits(
    morsel: &crate::scan::Morsel,
    table_schema: &SchemaRef,
    commits: &Commits,
    ctx: &ExecContext,
) -> Result<(Vec<RecordBatch>, StoredCommits)> {
    let offsets = matches!(commits, Commits::Stored { offsets: true });
    let mut fields = table_schema.fields().to_vec();
    fields.extend(pondra_catalog::system_fields().map(Arc::new));
    if offsets {
        fields.push(Arc::new(arrow::datatypes::Field::new(
            OFFSET,
            DataType::Int64,
            true,
        )));
    }
    let with_commits = Arc::new(Schema::new(fields));
    let read = read_morsel(&ctx.lake, &ctx.runtime, morsel, &with_commits, None)?;
    let width = table_schema.fields().len();
    let column = |i: usize| -> Result<ArrayRef> {
        let parts: Vec<&dyn Array> = read.iter().map(|b| b.column(i).as_ref()).collect();
        Ok(match parts.is_empty() {
            true => new_null_array(with_commits.field(i).data_type(), 0),
            false => concat(&parts)?,
        })
    };
    let commits = StoredCommits {
        version: column(width)?,
        time: column(width + 1)?,
        offset: offsets.then(|| column(width + 2)).transpose()?,
    };
    let read = read
        .iter()
        .map(|b| crate::scan::as_schema(&b.project(&(0..width).collect::<Vec<_>>())?, table_schema))
        .collect::<Result<Vec<_>>>()?;
    Ok((read, commits))
}

/// The commit version and time columns a data file stores (and its offsets), for the rows at
/// `ordinals`, when the scan reads them and the file has them.
fn stored_commits(
    unit: &ScanUnit<'_>,
    place: &Place,
    ordinals: &[Range<u64>],
    schema: &SchemaRef,
    width: usize,
) -> Result<Option<StoredCommits>> {
    let wanted = schema.fields()[width..]
        .iter()
        .any(|f| f.name() != ROW_ADDRESS && f.name() != ROW_ID && f.data_type() != &DataType::Null);
    let (true, Commits::Stored { offsets }, ScanUnit::RowGroup { file, row_group }) =
        (wanted, &place.commits, unit)
    else {
        return Ok(None);
    };
    let first = first_row(&file.footer, *row_group);
    let ranges: Vec<Range<usize>> = ordinals
        .iter()
        .map(|r| (r.start - first) as usize..(r.end - first) as usize)
        .collect();
    let columns = match offsets {
        true => vec![width, width + 1, width + 2],
        false => vec![width, width + 1],
    };
    let read = read_parquet_row_group(
        &file.source,
        &file.footer,
        (*row_group, Some(&ranges)),
        Some(&columns),
        &[],
    )?;
    let column = |i: usize| -> Result<ArrayRef> {
        let arrays: Vec<&dyn Array> = read.iter().map(|b| b.column(i).as_ref()).collect();
        Ok(concat(&arrays)?)
    };
    Ok(Some(StoredCommits {
        version: column(0)?,
        time: column(1)?,
        offset: offsets.then(|| column(2)).transpose()?,
    }))
}

/// Reads one row group of a lake table's data file, skipping the pages `pages` rules out;
/// returns its batches and the ordinals in the file of the rows they hold.
fn read_row_group(
    (file, row_group): (&ScanFile, usize),
    (schema, columns): (&SchemaRef, Option<&[usize]>),
    pages: Option<&PagePruning<'_>>,
    dictionaries: &[usize],
) -> Result<(Vec<RecordBatch>, Vec<Range<u64>>)> {
    let footer = &file.footer;
    let ranges = kept_ranges(file, row_group, pages);
    let rows = footer.row_group_rows(row_group);
    let first = first_row(footer, row_group);
    let ordinals = match &ranges {
        Some(ranges) => ranges
            .iter()
            .map(|r| first + r.start as u64..first + r.end as u64)
            .collect(),
        None => std::iter::once(first..first + rows as u64).collect(),
    };
    if ranges.as_ref().is_some_and(Vec::is_empty) {
        return Ok((Vec::new(), Vec::new()));
    }
    let unit = (file, row_group, ranges.as_deref());
    let read = read_pages(unit, (schema, columns), dictionaries)?;
    Ok((read, ordinals))
}

/// The ordinal in its file of the first row of `row_group`.
fn first_row(footer: &ParquetFooter, row_group: usize) -> u64 {
    (0..row_group)
        .map(|r| footer.row_group_rows(r) as u64)
        .sum()
}

/// The rows of one container's `batches` (all of its rows, in order) that `deleted` does not
/// mark.
pub fn drop_deleted(
    batches: Vec<RecordBatch>,
    deleted: Option<&DeletionVector>,
) -> Result<Vec<RecordBatch>> {
    let Some(deleted) = deleted else {
        return Ok(batches);
    };
    let mut ordinal = 0u32;
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let live: BooleanArray = (0..batch.num_rows())
            .map(|i| Some(!deleted.contains(ordinal + i as u32)))
            .collect();
        ordinal += batch.num_rows() as u32;
        out.push(filter_record_batch(&batch, &live)?);
    }
    Ok(out)
}
