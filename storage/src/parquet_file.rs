use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int32Array, Int64Array, IntervalMonthDayNanoArray,
    RecordBatchOptions, StructArray,
};
use arrow::datatypes::{
    DataType, Field, Fields, Int32Type, Int64Type, IntervalMonthDayNano, IntervalMonthDayNanoType,
    IntervalUnit, Schema, SchemaRef,
};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::properties::WriterProperties;

use crate::Result;
use crate::file_source::{FileChunks, FileSource};

/// Rows per batch read.
const BATCH_ROWS: usize = 8192;

/// Rows per Parquet row group: one row group is one morsel for the scan.
const ROW_GROUP_ROWS: usize = 122_880;

/// Parquet cannot hold Arrow's month-day-nanosecond intervals: they are written as a struct of
/// their three parts, and read back as intervals.
const INTERVAL_PARTS: [&str; 3] = ["months", "days", "nanoseconds"];

fn interval_struct_fields() -> Fields {
    Fields::from(vec![
        Field::new(INTERVAL_PARTS[0], DataType::Int32, false),
        Field::new(INTERVAL_PARTS[1], DataType::Int32, false),
        Field::new(INTERVAL_PARTS[2], DataType::Int64, false),
    ])
}

fn is_interval(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Interval(IntervalUnit::MonthDayNano))
}

fn is_interval_struct(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Struct(fields) if *fields == interval_struct_fields())
}

/// The schema and batches as written to Parquet: intervals as structs.
fn to_storable(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch> {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match is_interval(f.data_type()) {
            true => Field::new(f.name(), DataType::Struct(interval_struct_fields()), true),
            false => f.as_ref().clone(),
        })
        .collect();
    let columns = batch
        .columns()
        .iter()
        .map(|c| {
            if !is_interval(c.data_type()) {
                return c.clone();
            }
            let values = c.as_primitive::<IntervalMonthDayNanoType>();
            let part = |f: fn(&IntervalMonthDayNano) -> i64| -> Vec<i64> {
                values.values().iter().map(f).collect()
            };
            let months: Int32Array = part(|v| v.months as i64)
                .iter()
                .map(|v| *v as i32)
                .collect();
            let days: Int32Array = part(|v| v.days as i64).iter().map(|v| *v as i32).collect();
            let nanos = Int64Array::from(part(|v| v.nanoseconds));
            Arc::new(StructArray::new(
                interval_struct_fields(),
                vec![Arc::new(months), Arc::new(days), Arc::new(nanos)],
                values.nulls().cloned(),
            )) as ArrayRef
        })
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// A batch read from Parquet with its interval structs made intervals again.
fn from_storable(batch: RecordBatch) -> Result<RecordBatch> {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| is_interval_struct(f.data_type()))
    {
        return Ok(batch);
    }
    let schema = batch.schema();
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        if !is_interval_struct(field.data_type()) {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
            continue;
        }
        let parts = column.as_struct();
        let months = parts.column(0).as_primitive::<Int32Type>();
        let days = parts.column(1).as_primitive::<Int32Type>();
        let nanos = parts.column(2).as_primitive::<Int64Type>();
        let values: Vec<IntervalMonthDayNano> = (0..parts.len())
            .map(|i| IntervalMonthDayNano::new(months.value(i), days.value(i), nanos.value(i)))
            .collect();
        let array = IntervalMonthDayNanoArray::new(values.into(), parts.nulls().cloned());
        fields.push(Field::new(
            field.name(),
            DataType::Interval(IntervalUnit::MonthDayNano),
            true,
        ));
        columns.push(Arc::new(array) as ArrayRef);
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Writes batches as one Parquet file (Snappy, statistics on) held in memory.
///
/// Snappy rather than zstd: scans of a lake's files spent 41% of TPC-H q6, q14 and q19 in zstd
/// decompression, and took 1.3 times as long as the same rows in Snappy files; zstd's smaller
/// files do not buy that back. Every Parquet reader reads Snappy.
pub fn write_parquet_bytes(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    write_parquet_with_pages(schema, batches, None)
}

/// The most rows a data page of a sorted run holds: a lookup of one key reads a page of each
/// column it needs, found through the page index, instead of a whole row group.
const SORTED_RUN_PAGE_ROWS: usize = 4096;

/// The largest dictionary page of a sorted run's column: a lookup decodes the dictionary of
/// each column it reads whole, so a column of many values falls back to plain pages soon.
const SORTED_RUN_DICTIONARY_BYTES: usize = 64 * 1024;

/// Writes rows sorted by a key (a keyed table's sorted run, ADR 0048) as Parquet: as
/// [`write_parquet_bytes`], with small pages, so that the page index narrows a key to a few
/// thousand rows, and small dictionaries, so that reading a page does not decode a large one.
pub fn write_sorted_run(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    write_parquet_with_pages(schema, batches, Some(SORTED_RUN_PAGE_ROWS))
}

fn write_parquet_with_pages(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    page_rows: Option<usize>,
) -> Result<Bytes> {
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    if let Some(rows) = page_rows {
        properties = properties
            .set_data_page_row_count_limit(rows)
            .set_write_batch_size(rows.min(1024))
            .set_dictionary_page_size_limit(SORTED_RUN_DICTIONARY_BYTES);
    }
    let empty = RecordBatch::new_empty(schema.clone());
    let storable_schema = to_storable(schema, &empty)?.schema();
    let properties =
        crate::dictionaries::without_useless_dictionaries(properties, &storable_schema, batches)?
            .build();
    // Without the Arrow schema in the footer: Pondra reads files by their Parquet types
    // ([`reading_schema`]), and other engines (PyIceberg) take an embedded `decimal64` for a
    // type they do not know, where the Parquet decimal reads as theirs.
    let options = ArrowWriterOptions::new()
        .with_properties(properties)
        .with_skip_arrow_metadata(true);
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), storable_schema, options)?;
    for batch in batches {
        writer.write(&to_storable(schema, batch)?)?;
    }
    let bytes = writer.into_inner()?;
    Ok(Bytes::from(bytes))
}

/// Reads every row of a Parquet file held in memory; with `columns`, only those top-level
/// columns, in file order.
pub fn read_parquet_bytes(bytes: Bytes, columns: Option<&[usize]>) -> Result<Vec<RecordBatch>> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?.with_batch_size(8192);
    read_columns(builder, columns)
}

/// The rows a reader yields, of only `columns` when given, with intervals restored.
fn read_columns<T: parquet::file::reader::ChunkReader + 'static>(
    mut builder: ParquetRecordBatchReaderBuilder<T>,
    columns: Option<&[usize]>,
) -> Result<Vec<RecordBatch>> {
    if let Some(columns) = columns {
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
        builder = builder.with_projection(mask);
    }
    let reader = builder.build()?;
    reader
        .map(|batch| from_storable(batch?))
        .collect::<Result<Vec<_>>>()
}

/// The schema Pondra reads a Parquet file with, and the file's row count and row groups.
/// String columns of any Arrow layout are read as plain UTF-8 strings.
pub fn parquet_file_info(source: &FileSource) -> Result<ParquetFileInfo> {
    let (file, builder) = open_footer(source)?;
    let schema = reading_schema(builder.schema());
    let footer = ParquetFooter::new(builder.metadata(), &schema)?;
    let metadata = builder.metadata();
    // Leaf columns match the fields one to one only in a flat schema.
    let flat = metadata.file_metadata().schema_descr().num_columns() == schema.fields().len();
    let samples = distinct_samples(&file, &footer, schema.fields().len())?;
    let columns = (0..schema.fields().len())
        .map(|column| match flat {
            true => ColumnFooterStats {
                sample: samples[column],
                ..column_footer_stats(metadata, column)
            },
            false => ColumnFooterStats::default(),
        })
        .collect();
    Ok(ParquetFileInfo {
        schema,
        rows: metadata.file_metadata().num_rows().max(0) as u64,
        row_groups: metadata.num_row_groups(),
        columns,
        footer,
    })
}

/// The parsed footer of a Parquet file, without the statistics [`parquet_file_info`] gathers
/// for planning: what a scan of a lake's data file needs to read it row group by row group.
pub fn parquet_footer(source: &FileSource) -> Result<ParquetFooter> {
    let (_, builder) = open_footer(source)?;
    ParquetFooter::new(builder.metadata(), &reading_schema(builder.schema()))
}

/// A file's footer parsed, with its page index when it has one (ADR 0043).
fn open_footer(
    source: &FileSource,
) -> Result<(FileChunks, ParquetRecordBatchReaderBuilder<FileChunks>)> {
    let file = source.chunks()?;
    file.prefetch_footer()?;
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file.clone(), options)?;
    Ok((file, builder))
}

/// The schema a file is read with: strings of any layout as plain UTF-8, and decimals at the
/// width their precision gives them (ADR 0028), so INT64 decimals are read without widening
/// each value.
fn reading_schema(stored: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = stored
        .fields()
        .iter()
        .map(|f| {
            let data_type = match f.data_type() {
                DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
                DataType::Decimal32(p, s)
                | DataType::Decimal64(p, s)
                | DataType::Decimal128(p, s) => crate::decimal_type(*p, *s),
                other => other.clone(),
            };
            Field::new(f.name(), data_type, f.is_nullable())
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// An integer-like column's range and a column's NULL count, over every row group of a file;
/// `None` where some row group does not say.
#[derive(Clone, Debug, Default)]
pub struct ColumnFooterStats {
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub nulls: Option<u64>,
    /// Of the file's first rows, how many were read and how many distinct values they held:
    /// Parquet footers rarely give distinct counts, and join order needs them.
    pub sample: Option<DistinctSample>,
}

/// Distinct values among the first rows of a file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistinctSample {
    pub rows: u32,
    pub distinct: u32,
}

/// Rows of a file's first row group sampled for distinct values.
const SAMPLE_ROWS: usize = 8192;

/// Per column, the distinct values among the file's first `SAMPLE_ROWS` rows.
fn distinct_samples(
    file: &FileChunks,
    footer: &ParquetFooter,
    columns: usize,
) -> Result<Vec<Option<DistinctSample>>> {
    // No prefetch: the sample is the first pages of each column, read as the reader asks for
    // them, never a remote file's whole first row group.
    let mut reader =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file.clone(), footer.plain.clone())
            .with_batch_size(SAMPLE_ROWS)
            .with_limit(SAMPLE_ROWS)
            .build()?;
    let Some(batch) = reader.next().transpose()? else {
        return Ok(vec![None; columns]);
    };
    let rows = batch.num_rows() as u32;
    Ok(batch
        .columns()
        .iter()
        .map(|column| {
            let converter = arrow::row::RowConverter::new(vec![arrow::row::SortField::new(
                column.data_type().clone(),
            )])
            .ok()?;
            let encoded = converter
                .convert_columns(std::slice::from_ref(column))
                .ok()?;
            let distinct: std::collections::HashSet<&[u8]> =
                encoded.iter().map(|row| row.data()).collect();
            Some(DistinctSample {
                rows,
                distinct: distinct.len() as u32,
            })
        })
        .collect())
}

fn column_footer_stats(
    metadata: &parquet::file::metadata::ParquetMetaData,
    column: usize,
) -> ColumnFooterStats {
    let mut out = ColumnFooterStats {
        min: None,
        max: None,
        nulls: Some(0),
        sample: None,
    };
    for (index, row_group) in metadata.row_groups().iter().enumerate() {
        let statistics = row_group.column(column).statistics();
        let range = integer_range(statistics);
        out.nulls = out
            .nulls
            .zip(statistics.and_then(|s| s.null_count_opt()))
            .map(|(a, b)| a + b);
        match (range, index) {
            (Some((lo, hi)), 0) => (out.min, out.max) = (Some(lo), Some(hi)),
            (Some((lo, hi)), _) => {
                out.min = out.min.map(|m| m.min(lo));
                out.max = out.max.map(|m| m.max(hi));
            }
            (None, _) => (out.min, out.max) = (None, None),
        }
    }
    out
}

/// The least and greatest value of an INT32 or INT64 column chunk, as its statistics give them.
fn integer_range(statistics: Option<&parquet::file::statistics::Statistics>) -> Option<(i64, i64)> {
    use parquet::file::statistics::Statistics;
    match statistics? {
        Statistics::Int32(s) => s
            .min_opt()
            .zip(s.max_opt())
            .map(|(a, b)| (i64::from(*a), i64::from(*b))),
        Statistics::Int64(s) => s.min_opt().copied().zip(s.max_opt().copied()),
        _ => None,
    }
}

/// What [`parquet_file_info`] learns from a file's footer.
#[derive(Clone, Debug)]
pub struct ParquetFileInfo {
    pub schema: SchemaRef,
    pub rows: u64,
    pub row_groups: usize,
    /// Per field, what the footer's statistics say.
    pub columns: Vec<ColumnFooterStats>,
    pub footer: ParquetFooter,
}

/// A Parquet file's footer, parsed once with the schema Pondra reads the file with, so that
/// reading each of its row groups does not parse it again. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ParquetFooter {
    /// Without the page index: a reader that has one reads every page through it, which
    /// costs more than it saves when no page is skipped.
    plain: ArrowReaderMetadata,
    /// With the page index (when the file has one), for reads that skip pages.
    paged: ArrowReaderMetadata,
    /// The same schema with each top-level string column read as a dictionary (`Int32` keys),
    /// which keeps a dictionary-encoded column chunk's encoding instead of decoding each value.
    strings_as_dictionaries: ArrowReaderMetadata,
}

/// One data page of a column chunk: the rows it holds (within its row group) and, when the
/// page index says, the least and greatest of its values.
#[derive(Clone, Debug, PartialEq)]
pub struct PageRange {
    pub rows: std::ops::Range<usize>,
    pub values: Option<(i64, i64)>,
}

/// The rows of a row group a read keeps: ranges in order, apart; `None` for all of them.
pub type RowRanges<'a> = Option<&'a [std::ops::Range<usize>]>;

fn selection(ranges: &[std::ops::Range<usize>], rows: usize) -> RowSelection {
    RowSelection::from_consecutive_ranges(ranges.iter().cloned(), rows)
}

/// The type a string column is read as when its dictionary is kept.
pub fn string_dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

impl ParquetFooter {
    /// The least and greatest value of integer or date column `column` in one row group, when
    /// its statistics give them (dates in days; decimals and timestamps as stored).
    pub fn row_group_range(&self, row_group: usize, column: usize) -> Option<(i64, i64)> {
        if !self.is_flat() {
            return None;
        }
        let metadata = self.plain.metadata();
        let chunk = metadata
            .row_groups()
            .get(row_group)?
            .columns()
            .get(column)?;
        integer_range(chunk.statistics())
    }

    /// The data pages of integer or date column `column` in one row group, in row order, each
    /// with its value range (`None` for a page of NULLs or without one); `None` when the file
    /// has no page index for the column.
    pub fn page_ranges(&self, row_group: usize, column: usize) -> Option<Vec<PageRange>> {
        use parquet::file::page_index::column_index::ColumnIndexMetaData;
        if !self.is_flat() {
            return None;
        }
        let metadata = self.paged.metadata();
        let rows = metadata.row_groups().get(row_group)?.num_rows().max(0) as usize;
        let index = metadata.page_index_for_row_group(row_group);
        let locations = index.offset_index(column)?.page_locations();
        let ranges: Vec<Option<(i64, i64)>> = match index.column_index(column)? {
            ColumnIndexMetaData::INT32(pages) => (0..locations.len())
                .map(|page| {
                    let min = pages.min_value(page)?;
                    let max = pages.max_value(page)?;
                    Some((i64::from(*min), i64::from(*max)))
                })
                .collect(),
            ColumnIndexMetaData::INT64(pages) => (0..locations.len())
                .map(|page| Some((*pages.min_value(page)?, *pages.max_value(page)?)))
                .collect(),
            _ => return None,
        };
        let starts: Vec<usize> = locations
            .iter()
            .map(|l| l.first_row_index.max(0) as usize)
            .collect();
        Some(
            (0..starts.len())
                .map(|page| PageRange {
                    rows: starts[page]..starts.get(page + 1).copied().unwrap_or(rows),
                    values: ranges[page],
                })
                .collect(),
        )
    }

    /// Whether each field is one column chunk. Chunks are leaves: a field's position names
    /// its chunk only when no field has several (lists, structs).
    fn is_flat(&self) -> bool {
        let leaves = self
            .plain
            .metadata()
            .file_metadata()
            .schema_descr()
            .num_columns();
        leaves == self.plain.schema().fields().len()
    }

    /// The file's row groups.
    pub fn row_groups(&self) -> usize {
        self.plain.metadata().num_row_groups()
    }

    /// The top-level columns the file is read as.
    pub fn fields(&self) -> usize {
        self.plain.schema().fields().len()
    }

    /// The names of the file's top-level columns, in order.
    pub fn column_names(&self) -> Vec<String> {
        let fields = self.plain.schema().fields();
        fields.iter().map(|f| f.name().clone()).collect()
    }

    pub fn row_group_rows(&self, row_group: usize) -> usize {
        let metadata = self.plain.metadata();
        metadata
            .row_groups()
            .get(row_group)
            .map_or(0, |g| g.num_rows().max(0) as usize)
    }

    /// `metadata`'s schema over the footer with the page index, to read with a selection of
    /// rows that skips pages.
    fn with_pages(&self, metadata: &ArrowReaderMetadata) -> Result<ArrowReaderMetadata> {
        Ok(ArrowReaderMetadata::try_new(
            self.paged.metadata().clone(),
            ArrowReaderOptions::new().with_schema(metadata.schema().clone()),
        )?)
    }

    /// Reader metadata that reads the string columns at `dictionaries` (schema positions) as
    /// dictionaries ([`string_dictionary_type`]) and every other column as the plain schema.
    fn with_dictionaries(&self, dictionaries: &[usize]) -> Result<ArrowReaderMetadata> {
        if dictionaries.is_empty() {
            return Ok(self.plain.clone());
        }
        let fields = self
            .plain
            .schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(position, field)| match field.data_type() {
                DataType::Utf8 if dictionaries.contains(&position) => Arc::new(
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(string_dictionary_type()),
                ),
                _ => field.clone(),
            })
            .collect::<Fields>();
        Ok(ArrowReaderMetadata::try_new(
            self.plain.metadata().clone(),
            ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields))),
        )?)
    }

    fn new(
        paged: &Arc<parquet::file::metadata::ParquetMetaData>,
        schema: &SchemaRef,
    ) -> Result<Self> {
        let metadata = Arc::new(
            paged
                .as_ref()
                .clone()
                .into_builder()
                .set_page_index(None)
                .build(),
        );
        let with_schema = |schema: SchemaRef| {
            ArrowReaderMetadata::try_new(
                metadata.clone(),
                ArrowReaderOptions::new().with_schema(schema),
            )
        };
        let dictionaries = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 => {
                    Arc::new(f.as_ref().clone().with_data_type(string_dictionary_type()))
                }
                _ => f.clone(),
            })
            .collect::<Fields>();
        Ok(ParquetFooter {
            paged: ArrowReaderMetadata::try_new(
                paged.clone(),
                ArrowReaderOptions::new().with_schema(schema.clone()),
            )?,
            plain: with_schema(schema.clone())?,
            strings_as_dictionaries: with_schema(Arc::new(Schema::new(dictionaries)))?,
        })
    }
}

/// Reads one row group of a Parquet file with its parsed footer, as batches of the
/// footer's schema (which may name plain strings where the file stores another layout). The
/// string columns at `dictionaries` come as dictionaries ([`string_dictionary_type`]).
pub fn read_parquet_row_group(
    source: &FileSource,
    footer: &ParquetFooter,
    (row_group, ranges): (usize, RowRanges<'_>),
    columns: Option<&[usize]>,
    dictionaries: &[usize],
) -> Result<Vec<RecordBatch>> {
    let file = source.chunks()?;
    prefetch_roots(&file, footer, row_group, columns)?;
    let metadata = footer.with_dictionaries(dictionaries)?;
    let Some(ranges) = ranges else {
        return read_columns(row_group_reader(&file, &metadata, row_group), columns);
    };
    let reader = row_group_reader(&file, &footer.with_pages(&metadata)?, row_group)
        .with_row_selection(selection(ranges, footer.row_group_rows(row_group)));
    read_columns(reader, columns)
}

/// Fetches, at once, the column chunks of a remote file's row group that reading the
/// top-level `columns` (all when `None`) needs.
fn prefetch_roots(
    file: &FileChunks,
    footer: &ParquetFooter,
    row_group: usize,
    columns: Option<&[usize]>,
) -> Result<()> {
    let metadata = footer.plain.metadata();
    let schema = metadata.file_metadata().schema_descr();
    file.prefetch_columns(metadata, row_group, |leaf| {
        columns.is_none_or(|roots| roots.contains(&schema.get_column_root_idx(leaf)))
    })
}

/// A reader of one row group of a Parquet file, with a footer parsed for some schema.
fn row_group_reader(
    file: &FileChunks,
    metadata: &ArrowReaderMetadata,
    row_group: usize,
) -> ParquetRecordBatchReaderBuilder<FileChunks> {
    ParquetRecordBatchReaderBuilder::new_with_metadata(file.clone(), metadata.clone())
        .with_row_groups(vec![row_group])
        .with_batch_size(BATCH_ROWS)
}

/// Reads the rows of one row group of a Parquet file that `keep` is true for (NULL is
/// false), as batches of the top-level `columns` in file order. `keep` sees batches of the
/// `filter_columns` (a subset of `columns`, in file order), which are read first; the other
/// columns are then read only for the rows kept, skipping the others when few are kept
/// (late materialization). With `dictionaries`, `keep` sees string columns as dictionaries
/// ([`string_dictionary_type`]). The batches returned hold plain strings but in the columns
/// at `kept_dictionaries`, which come as dictionaries.
pub fn read_parquet_row_group_where<E: From<crate::StorageError>>(
    source: &FileSource,
    footer: &ParquetFooter,
    (row_group, ranges): (usize, RowRanges<'_>),
    (columns, filter_columns): (&[usize], &[usize]),
    (dictionaries, kept_dictionaries): (bool, &[usize]),
    mut keep: impl FnMut(&RecordBatch) -> std::result::Result<BooleanArray, E>,
) -> std::result::Result<Vec<RecordBatch>, E> {
    let file = source.chunks()?;
    prefetch_roots(&file, footer, row_group, Some(columns))?;
    let kept_as_dictionary =
        |position: usize| kept_dictionaries.contains(&filter_columns[position]);
    let pages = ranges.map(|r| selection(r, footer.row_group_rows(row_group)));
    let open = |metadata: &ArrowReaderMetadata| -> Result<_> {
        Ok(match &pages {
            Some(pages) => row_group_reader(&file, &footer.with_pages(metadata)?, row_group)
                .with_row_selection(pages.clone()),
            None => row_group_reader(&file, metadata, row_group),
        })
    };
    let filter_metadata = match dictionaries {
        true => &footer.strings_as_dictionaries,
        false => &footer.plain,
    };
    let filtered = read_columns(open(filter_metadata)?, Some(filter_columns))?;
    let masks = filtered
        .iter()
        .map(|batch| keep(batch).map(|mask| without_nulls(&mask)))
        .collect::<std::result::Result<Vec<_>, E>>()?;
    let rows: usize = filtered.iter().map(RecordBatch::num_rows).sum();
    let kept: usize = masks.iter().map(BooleanArray::true_count).sum();
    if kept == 0 {
        return Ok(Vec::new());
    }
    let filter = |batch: &RecordBatch, mask: &BooleanArray| {
        arrow::compute::filter_record_batch(batch, mask).map_err(crate::StorageError::from)
    };
    let kept_filtered = filtered
        .iter()
        .zip(&masks)
        .map(|(batch, mask)| plain_strings_but(&filter(batch, mask)?, kept_as_dictionary))
        .collect::<Result<Vec<_>>>()?;
    let rest: Vec<usize> = columns
        .iter()
        .copied()
        .filter(|c| !filter_columns.contains(c))
        .collect();
    if rest.is_empty() {
        return Ok(kept_filtered);
    }
    let combine = |filtered: &RecordBatch, other: &RecordBatch| -> Result<RecordBatch> {
        let mut fields = Vec::new();
        let mut arrays = Vec::new();
        let (mut f, mut o) = (0, 0);
        for column in columns {
            let (batch, i) = if filter_columns.contains(column) {
                f += 1;
                (filtered, f - 1)
            } else {
                o += 1;
                (other, o - 1)
            };
            fields.push(batch.schema().field(i).clone());
            arrays.push(batch.column(i).clone());
        }
        batch_of(fields, arrays, filtered.num_rows())
    };
    // Most rows kept: reading the rest whole and filtering it costs less than skipping.
    let others_metadata = footer.with_dictionaries(kept_dictionaries)?;
    if kept * 2 > rows {
        let others = read_columns(open(&others_metadata)?, Some(&rest))?;
        return Ok(kept_filtered
            .iter()
            .zip(&others)
            .zip(&masks)
            .map(|((batch, other), mask)| combine(batch, &filter(other, mask)?))
            .collect::<Result<Vec<_>>>()?);
    }
    let kept_rows = RowSelection::from_filters(&masks);
    let selection = match &pages {
        Some(pages) => pages.and_then(&kept_rows),
        None => kept_rows,
    };
    let others = read_columns(
        open(&others_metadata)?.with_row_selection(selection),
        Some(&rest),
    )?;
    let concat = |batches: &[RecordBatch]| -> Result<RecordBatch> {
        Ok(arrow::compute::concat_batches(
            &batches[0].schema(),
            batches,
        )?)
    };
    let whole = combine(&concat(&kept_filtered)?, &concat(&others)?)?;
    Ok((0..kept)
        .step_by(BATCH_ROWS)
        .map(|start| whole.slice(start, BATCH_ROWS.min(kept - start)))
        .collect())
}

/// The batch with each dictionary column decoded to its values' type.
pub fn plain_strings(batch: &RecordBatch) -> Result<RecordBatch> {
    plain_strings_but(batch, |_| false)
}

/// The batch with each dictionary column decoded to its values' type, but those at the
/// positions `kept` is true for.
fn plain_strings_but(batch: &RecordBatch, kept: impl Fn(usize) -> bool) -> Result<RecordBatch> {
    let decoded = |(position, column): (usize, &ArrayRef)| {
        matches!(column.data_type(), DataType::Dictionary(_, _)) && !kept(position)
    };
    if !batch.columns().iter().enumerate().any(decoded) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut arrays = Vec::with_capacity(batch.num_columns());
    let schema = batch.schema();
    for (position, (field, column)) in schema.fields().iter().zip(batch.columns()).enumerate() {
        match column.data_type() {
            DataType::Dictionary(_, values) if !kept(position) => {
                arrays.push(arrow::compute::cast(column, values)?);
                fields.push(
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(values.as_ref().clone()),
                );
            }
            _ => {
                arrays.push(column.clone());
                fields.push(field.as_ref().clone());
            }
        }
    }
    batch_of(fields, arrays, batch.num_rows())
}

/// A batch of these columns and `rows` rows (which a batch of no columns needs told).
fn batch_of(fields: Vec<Field>, arrays: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &options,
    )?)
}

/// The mask with NULL read as false.
fn without_nulls(mask: &BooleanArray) -> BooleanArray {
    match mask.nulls() {
        None => mask.clone(),
        Some(nulls) => BooleanArray::new(mask.values() & nulls.inner(), None),
    }
}

/// The columns of a CSV file with a header row, their types inferred from its first rows:
/// whole numbers BIGINT, other numbers DOUBLE, true/false BOOLEAN, dates DATE, timestamps
/// TIMESTAMP, anything else VARCHAR.
pub fn csv_file_schema(source: &FileSource) -> Result<SchemaRef> {
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    let file = std::io::Cursor::new(source.read_all()?);
    let (schema, _) = arrow::csv::reader::Format::default()
        .with_header(true)
        .infer_schema(file, Some(10_000))?;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let data_type = match f.data_type() {
                DataType::Int64 | DataType::Float64 | DataType::Boolean | DataType::Date32 => {
                    f.data_type().clone()
                }
                DataType::Timestamp(..) => DataType::Timestamp(TimeUnit::Microsecond, None),
                _ => DataType::Utf8,
            };
            Field::new(f.name(), data_type, true)
        })
        .collect();
    Ok(std::sync::Arc::new(Schema::new(fields)))
}

/// Every row of a CSV file with a header row, as batches of `schema`.
pub fn read_csv_file(source: &FileSource, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    let file = std::io::Cursor::new(source.read_all()?);
    let reader = arrow::csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .with_batch_size(8192)
        .build(file)?;
    Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The columns of a file of JSON objects, one per line, their types inferred from its first
/// objects: whole numbers BIGINT, other numbers DOUBLE, true/false BOOLEAN, anything else
/// VARCHAR. Objects and arrays as values are not read yet, and say so.
pub fn json_file_schema(source: &FileSource) -> Result<SchemaRef> {
    use arrow::datatypes::{DataType, Field, Schema};
    let bytes = source.read_all()?;
    let (schema, _) = arrow::json::reader::infer_json_schema(&bytes[..], Some(10_000))?;
    let mut fields = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let data_type = match field.data_type() {
            DataType::Int64 | DataType::Float64 | DataType::Boolean => field.data_type().clone(),
            DataType::List(_) | DataType::Struct(_) => {
                return Err(crate::StorageError::Unsupported(format!(
                    "reading JSON objects and arrays as column values (column {} of {})",
                    field.name(),
                    source.name()
                )));
            }
            _ => DataType::Utf8,
        };
        fields.push(Field::new(field.name(), data_type, true));
    }
    Ok(std::sync::Arc::new(Schema::new(fields)))
}

/// Every object of a file of JSON objects, one per line, as batches of `schema`.
pub fn read_json_file(source: &FileSource, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    let bytes = source.read_all()?;
    let reader = arrow::json::ReaderBuilder::new(schema.clone())
        .with_batch_size(8192)
        .build(&bytes[..])?;
    Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int64Array, StringArray};

    use super::*;

    /// A Parquet file of one row group: `a` = i, `b` = "s{i}", `c` = 2i for i below `rows`.
    fn numbered_file(name: &str, rows: i64) -> std::path::PathBuf {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("c", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("s{i}")),
                )),
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| 2 * i))),
            ],
        )
        .unwrap();
        let path =
            std::env::temp_dir().join(format!("pondra-{}-{name}.parquet", std::process::id()));
        std::fs::write(&path, write_parquet_bytes(&schema, &[batch]).unwrap()).unwrap();
        path
    }

    /// Row `row` of a batch of `numbered_file`'s three columns, checked whole: its `a`.
    fn numbered_row(batch: &RecordBatch, row: usize) -> i64 {
        let a = batch.column(0).as_primitive::<Int64Type>().value(row);
        assert_eq!(
            batch.column(1).as_string::<i32>().value(row),
            format!("s{a}")
        );
        assert_eq!(
            batch.column(2).as_primitive::<Int64Type>().value(row),
            2 * a
        );
        a
    }

    #[test]
    fn pages_are_skipped_by_row_ranges_and_filtered_within_them() {
        let path = numbered_file("pages", 100_000);
        let footer = parquet_file_info(&FileSource::Local(path.clone()))
            .unwrap()
            .footer;
        let pages = footer.page_ranges(0, 0).unwrap();
        assert_eq!(pages.len(), 5);
        assert_eq!(pages[1].rows, 20_000..40_000);
        assert_eq!(pages[1].values, Some((20_000, 39_999)));
        assert!(
            footer.page_ranges(0, 1).is_none(),
            "strings have no integer ranges"
        );
        let ranges = [20_000..40_000, 80_000..100_000];
        let in_ranges = |a: i64| ranges.iter().any(|r| r.contains(&(a as usize)));
        let whole = read_parquet_row_group(
            &FileSource::Local(path.clone()),
            &footer,
            (0, Some(&ranges)),
            None,
            &[],
        )
        .unwrap();
        let values: Vec<i64> = whole
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(
            values,
            (0..100_000).filter(|&a| in_ranges(a)).collect::<Vec<_>>()
        );
        // Few rows kept (the rest read for them alone) and most rows kept.
        for every in [1_000, 1] {
            let read = read_parquet_row_group_where(
                &FileSource::Local(path.clone()),
                &footer,
                (0, Some(&ranges)),
                (&[0, 1, 2], &[0]),
                (false, &[]),
                |batch| {
                    let a = batch.column(0).as_primitive::<Int64Type>();
                    Ok::<_, crate::StorageError>(
                        a.iter().map(|v| v.map(|v| v % every == 0)).collect(),
                    )
                },
            )
            .unwrap();
            let mut expected = (0..100_000).filter(|&a| in_ranges(a) && a % every == 0);
            for batch in &read {
                for row in 0..batch.num_rows() {
                    assert_eq!(Some(numbered_row(batch, row)), expected.next());
                }
            }
            assert_eq!(expected.next(), None);
        }
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn a_filtered_row_group_reads_every_column_of_the_kept_rows() {
        let path = numbered_file("filtered", 20_000);
        let footer = parquet_file_info(&FileSource::Local(path.clone()))
            .unwrap()
            .footer;
        // Few rows kept (skipped while reading), most kept (filtered after), none, and the
        // filter's columns only.
        for (below, columns) in [
            (10, vec![0, 1, 2]),
            (15_000, vec![0, 1, 2]),
            (0, vec![0, 1, 2]),
            (100, vec![0]),
        ] {
            let read = read_parquet_row_group_where(
                &FileSource::Local(path.clone()),
                &footer,
                (0, None),
                (&columns, &[0]),
                (false, &[]),
                |batch| {
                    let a = batch.column(0).as_primitive::<Int64Type>();
                    Ok::<_, crate::StorageError>(a.iter().map(|v| v.map(|v| v < below)).collect())
                },
            )
            .unwrap();
            let rows: usize = read.iter().map(RecordBatch::num_rows).sum();
            assert_eq!(rows as i64, below);
            let mut next = 0;
            for batch in &read {
                assert_eq!(batch.num_columns(), columns.len());
                for row in 0..batch.num_rows() {
                    let a = match columns.len() {
                        3 => numbered_row(batch, row),
                        _ => batch.column(0).as_primitive::<Int64Type>().value(row),
                    };
                    assert_eq!(a, next);
                    next += 1;
                }
            }
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_filter_on_strings_sees_their_dictionary_and_the_rows_come_back_plain() {
        // Few distinct strings: the writer keeps them dictionary-encoded.
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let rows = 30_000i64;
        let strings = (0..rows).map(|i| (i % 7 != 0).then(|| ["x", "yy", "zzz"][i as usize % 3]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter(strings)),
            ],
        )
        .unwrap();
        let path =
            std::env::temp_dir().join(format!("pondra-{}-dictionary.parquet", std::process::id()));
        std::fs::write(&path, write_parquet_bytes(&schema, &[batch]).unwrap()).unwrap();
        let footer = parquet_file_info(&FileSource::Local(path.clone()))
            .unwrap()
            .footer;
        let read = read_parquet_row_group_where(
            &FileSource::Local(path.clone()),
            &footer,
            (0, None),
            (&[0, 1], &[1]),
            (true, &[]),
            |batch| {
                assert_eq!(batch.column(0).data_type(), &string_dictionary_type());
                let plain = arrow::compute::cast(batch.column(0), &DataType::Utf8).unwrap();
                let yy = plain
                    .as_string::<i32>()
                    .iter()
                    .map(|s| s.map(|s| s == "yy"));
                Ok::<_, crate::StorageError>(yy.collect())
            },
        )
        .unwrap();
        let expected: Vec<i64> = (0..rows).filter(|i| i % 7 != 0 && i % 3 == 1).collect();
        let mut got: Vec<i64> = Vec::new();
        for batch in &read {
            assert_eq!(batch.column(1).data_type(), &DataType::Utf8);
            let s = batch.column(1).as_string::<i32>();
            assert!(s.iter().all(|s| s == Some("yy")));
            got.extend(batch.column(0).as_primitive::<Int64Type>().values().iter());
        }
        assert_eq!(got, expected);
        std::fs::remove_file(path).unwrap();
    }
}
