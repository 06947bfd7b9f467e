//! The morsels of a scan: the units of rows worker threads take one at a time. One scan reads
//! lake tables and files in place alike: Parquet files row group by row group (a lake
//! table's data files and Parquet files read in place), then a lake table's log tail segment by
//! segment; CSV and JSON files are read whole.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{BooleanArray, RecordBatch};
use arrow::datatypes::SchemaRef;
use pondra_catalog::{Container, DeletionVector, Layout};
use pondra_planner::{ExternalFile, FileFormat, PhysicalPlan};
use pondra_storage::{
    ColumnFooterStats, DistinctSample, FileSource, ParquetFooter, read_csv_file, read_json_file,
    read_parquet_row_group, read_parquet_row_group_where,
};

use crate::Result;
use crate::dictionary_filter::AnswerCache;
use crate::pipeline::ExecContext;
use crate::prune::pages_kept;
use crate::scan::{Morsel, as_schema, read_morsel, widen};
use crate::scan_filter::ScanFilter;

/// The morsels of a scan: units to read, or the rows an earlier scan of the same table kept
/// for each of its units (`repeated_scans`).
pub enum Morsels<'p> {
    Read(Vec<ScanUnit<'p>>),
    Kept(&'p crate::repeated_scans::KeptScan),
}

impl Morsels<'_> {
    pub fn len(&self) -> usize {
        match self {
            Morsels::Read(units) => units.len(),
            Morsels::Kept(kept) => kept.morsels.len(),
        }
    }
}

/// A Parquet file a scan reads row group by row group, with its parsed footer; and, for a data
/// file of a lake table, its place among the table's containers.
pub struct ScanFile {
    pub source: FileSource,
    pub footer: ParquetFooter,
    pub place: Option<Place>,
    /// For a scan with a nearest clause, the rows its vector index found (ADR 0082); none to
    /// read every row.
    pub nearest: Option<crate::vectors::NearestRows>,
}

/// Where a container of a lake table's rows is among the table's containers (what row
/// addresses number), and which of its rows are deleted (ADR 0048).
#[derive(Clone, Debug)]
pub struct Place {
    pub position: usize,
    /// The rows of the table's containers before this one, deleted ones included: the
    /// `rowid` of its first row.
    pub first_row: u64,
    pub deleted: Option<DeletionVector>,
    pub commits: Commits,
}

/// Where the commit version and time of a container's rows, and their offsets, come from.
#[derive(Clone, Debug)]
pub enum Commits {
    /// One commit wrote them all: a log segment, or a data file that stores none. A segment's
    /// rows take the offsets from its first on (ADR 0077); none for rows without offsets.
    Constant {
        version: u64,
        micros: i64,
        first_offset: Option<u64>,
    },
    /// A data file stores them per row, after its table columns; `offsets` when it stores each
    /// row's offset after them.
    Stored { offsets: bool },
}

/// One morsel of a scan.
pub enum ScanUnit<'p> {
    /// A log segment of a lake table; or one of its data files read whole, when the file's
    /// columns are not the table's (its morsel maps them, `Morsel::Remapped`).
    Table {
        morsel: Morsel,
        place: Place,
    },
    RowGroup {
        file: Arc<ScanFile>,
        row_group: usize,
    },
    TextFile(&'p ExternalFile),
}

/// Given how to find a column's least and greatest value in one morsel, whether the morsel
/// may hold rows the scan keeps.
pub type MayHold<'a> = dyn Fn(&dyn Fn(usize) -> Option<(i64, i64)>) -> bool + Sync + 'a;

/// How a Parquet scan skips pages (ADR 0043): the columns to test page by page, the test, and
/// how many pages it skipped.
pub struct PagePruning<'a> {
    pub columns: Vec<usize>,
    pub may_hold: &'a MayHold<'a>,
    pub skipped: AtomicUsize,
}

/// Whether `node` is a scan: of a lake table or of files read in place.
pub fn is_scan(node: &PhysicalPlan) -> bool {
    matches!(
        node,
        PhysicalPlan::TableScan { .. } | PhysicalPlan::ParquetScan { .. }
    )
}

/// What the files of scan `node` say of its rows and columns: the catalog's statistics of a
/// lake table's data files (the log tail not counted), or the footers of files read in place.
pub struct ScanStatistics {
    pub rows: u64,
    pub columns: Vec<ColumnFooterStats>,
    /// Whether the rows come from Parquet files, whose string columns may be read as
    /// dictionaries.
    pub parquet: bool,
}

impl ScanStatistics {
    pub fn of(node: &PhysicalPlan, ctx: &ExecContext) -> Option<ScanStatistics> {
        match node {
            PhysicalPlan::ParquetScan { table, .. } => Some(ScanStatistics {
                rows: table.files.iter().map(|f| f.rows).sum(),
                columns: table.columns.clone(),
                parquet: table.format == FileFormat::Parquet,
            }),
            PhysicalPlan::TableScan { table, .. } => {
                let statistics = ctx.snapshot.table_statistics(table.id)?;
                let sampled = u32::try_from(statistics.rows).unwrap_or(u32::MAX);
                let columns = statistics.columns.iter().map(|column| ColumnFooterStats {
                    min: column.min,
                    max: column.max,
                    nulls: Some(column.nulls),
                    // The sketch covers every row of the files: a sample of all of them.
                    sample: Some(DistinctSample {
                        rows: sampled,
                        distinct: (column.distinct.estimate().round() as u32).min(sampled),
                    }),
                });
                Some(ScanStatistics {
                    rows: statistics.rows,
                    columns: columns.collect(),
                    parquet: true,
                })
            }
            _ => None,
        }
    }

    /// Of column `column`, how many distinct values how many rows held, when known.
    pub fn sample(&self, column: usize) -> Option<DistinctSample> {
        self.columns.get(column).and_then(|stats| stats.sample)
    }
}

/// The morsels of a scan node, in the order a sequential scan reads them, without those whose
/// statistics `may_hold` rules out; and how many were skipped. `None` if `node` is not a scan.
pub fn scan_units<'p>(
    node: &'p PhysicalPlan,
    may_hold: &MayHold<'_>,
    ctx: &ExecContext,
) -> Result<Option<(Vec<ScanUnit<'p>>, usize)>> {
    let mut skipped = 0;
    let mut units = Vec::new();
    match node {
        PhysicalPlan::TableScan { table, nearest, .. } => {
            let nearest = match nearest {
                Some(nearest) => Some(crate::vectors::NearestQuery::new(nearest, ctx)?),
                None => None,
            };
            let width = table.columns.len();
            let place = |position: usize, first_row, container: Container, commits| Place {
                position,
                first_row,
                deleted: ctx.snapshot.deletion_vector(table.id, &container).cloned(),
                commits,
            };
            let constant = |version: u64, ms: u64, first_offset| Commits::Constant {
                version,
                micros: ms as i64 * 1000,
                first_offset,
            };
            let files = ctx.snapshot.files(table.id);
            let mut chosen = match &nearest {
                Some(query) => query.choose(table, files, ctx)?,
                None => Default::default(),
            };
            let mut first_row = 0;
            for (position, file) in files.iter().enumerate() {
                let file_first_row = first_row;
                first_row += file.rows;
                let layout = table.layout_of(&file.column_ids);
                let range = |column: usize| {
                    let statistics = file.columns.get(stored_position(&layout, column)?)?;
                    statistics.min.zip(statistics.max)
                };
                if !may_hold(&range) {
                    skipped += 1;
                    continue;
                }
                let (source, footer) = ctx.runtime.block_on(ctx.lake.data_file(&file.path))?;
                // Tiered files store each row's commit after the table's columns (ADR 0048),
                // and since ADR 0077 its offset after those.
                let stored_width = layout.as_ref().map_or(width, |l| l.stored);
                let commits = match footer.fields().checked_sub(stored_width) {
                    Some(2) => Commits::Stored { offsets: false },
                    Some(3) => Commits::Stored { offsets: true },
                    // A file loaded in bulk holds the offsets from its first on, in order.
                    _ => constant(
                        file.commit,
                        file.committed_at_ms,
                        file.offsets.map(|(first, _)| first),
                    ),
                };
                let container = Container::File(file.path.clone());
                let place = place(position, file_first_row, container, commits);
                if layout.is_some() {
                    // Written before an ADD or DROP COLUMN: read whole, mapped by column id.
                    let morsel = Morsel::of_file(file, table);
                    units.push(ScanUnit::Table { morsel, place });
                    continue;
                }
                // Read by row group: the table's columns, alone or with the commit columns
                // (and the offsets) after them.
                match matches!(footer.fields().checked_sub(width), Some(0 | 2 | 3)) {
                    true => {
                        let nearest = nearest.as_ref().zip(chosen.remove(&file.path));
                        let nearest = nearest.map(|(query, rows)| query.rows(rows, &footer));
                        let file = ScanFile {
                            source,
                            footer,
                            place: Some(place),
                            nearest,
                        };
                        skipped += add_row_groups(file, may_hold, &mut units);
                    }
                    false => units.push(ScanUnit::Table {
                        morsel: Morsel::ParquetFile(file.path.clone()),
                        place,
                    }),
                }
            }
            let segments = ctx.snapshot.segments(table.id).iter();
            for (position, segment) in (files.len()..).zip(segments) {
                let segment_first_row = first_row;
                first_row += segment.rows;
                // A segment's column ranges skip it undecoded (ADR 0048).
                let layout = table.layout_of(&segment.column_ids);
                let range = |column: usize| {
                    let stored = stored_position(&layout, column)?;
                    segment.ranges.get(stored).copied().flatten()
                };
                if !may_hold(&range) {
                    skipped += 1;
                    continue;
                }
                let container = Container::Segment {
                    commit: segment.commit,
                    index: segment.index,
                };
                let commits = constant(
                    segment.commit,
                    segment.committed_at_ms,
                    segment.first_offset,
                );
                units.push(ScanUnit::Table {
                    morsel: Morsel::of_segment(segment, table),
                    place: place(position, segment_first_row, container, commits),
                });
            }
        }
        PhysicalPlan::ParquetScan { table, .. } => {
            for file in &table.files {
                let footer = file.footer.clone();
                let Some(footer) = footer.filter(|_| table.format == FileFormat::Parquet) else {
                    units.push(ScanUnit::TextFile(file));
                    continue;
                };
                let file = ScanFile {
                    source: file.source.clone(),
                    footer,
                    place: None,
                    nearest: None,
                };
                skipped += add_row_groups(file, may_hold, &mut units);
            }
        }
        _ => return Ok(None),
    }
    if let PhysicalPlan::TableScan {
        slice: Some(slice), ..
    } = node
    {
        assert!(slice.part < slice.parts, "a slice is one of its parts");
        units.retain(|unit| slice_key(unit) % slice.parts == slice.part);
    }
    Ok(Some((units, skipped)))
}

/// Which slice of a sliced scan a unit belongs to (ADR 0076), from where it lies among the
/// table's containers (and, in a data file, its row group's number): every node finds the
/// same key for it in the same snapshot, whatever its statistics let a node skip, so the
/// slices are disjoint and cover the table.
fn slice_key(unit: &ScanUnit<'_>) -> usize {
    match unit {
        ScanUnit::Table { place, .. } => place.position,
        ScanUnit::RowGroup { file, row_group } => {
            file.place.as_ref().map_or(0, |place| place.position) + row_group
        }
        ScanUnit::TextFile(_) => unreachable!("a sliced scan reads a lake table"),
    }
}

/// Where a container of `layout` (none: the table's own) stores the table's `column`; none when
/// it predates the column.
fn stored_position(layout: &Option<Layout>, column: usize) -> Option<usize> {
    match layout {
        None => Some(column),
        Some(layout) => layout.columns.get(column).copied().flatten(),
    }
}

/// Adds the row groups of `file` that `may_hold` keeps to `units`; returns how many it skipped.
fn add_row_groups(file: ScanFile, may_hold: &MayHold<'_>, units: &mut Vec<ScanUnit<'_>>) -> usize {
    let file = Arc::new(file);
    let mut skipped = 0;
    for row_group in 0..file.footer.row_groups() {
        if file
            .nearest
            .as_ref()
            .is_some_and(|nearest| nearest.rows[row_group].is_empty())
        {
            skipped += 1;
            continue;
        }
        match may_hold(&|column| file.footer.row_group_range(row_group, column)) {
            true => units.push(ScanUnit::RowGroup {
                file: file.clone(),
                row_group,
            }),
            false => skipped += 1,
        }
    }
    skipped
}

/// Whether every unit's range of integer or date `column` is known, and no two overlap but at
/// their ends: a value strictly inside one unit's range is then in no other unit.
pub fn units_clustered_on(units: &[ScanUnit<'_>], column: usize) -> bool {
    let mut ranges = Vec::with_capacity(units.len());
    for unit in units {
        let ScanUnit::RowGroup { file, row_group } = unit else {
            return false;
        };
        match file.footer.row_group_range(*row_group, column) {
            Some(range) => ranges.push(range),
            None => return false,
        }
    }
    ranges.sort_unstable();
    ranges.windows(2).all(|pair| pair[0].1 <= pair[1].0)
}

/// Reads one morsel of scan `node` as batches of the node's schema; with `filter`, only its
/// rows the filter keeps. The string columns at `dictionaries` come as dictionaries from
/// Parquet files (ADR 0037), and plain from the other sources.
pub fn read_unit(
    unit: &ScanUnit<'_>,
    node: &PhysicalPlan,
    (filter, pages): (Option<&ScanFilter<'_>>, Option<&PagePruning<'_>>),
    dictionaries: &[usize],
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    if let Some(place) = unit_place(unit)
        && (place.deleted.is_some() || has_hidden_columns(node))
    {
        let read = crate::lake_rows::read_live_rows(unit, place, node, pages, dictionaries, ctx)?;
        return match filter {
            Some(filter) => filter.apply(read),
            None => Ok(read),
        };
    }
    let (schema, columns) = scan_projection(node);
    let read = match unit {
        ScanUnit::Table { morsel, .. } => {
            read_morsel(&ctx.lake, &ctx.runtime, morsel, schema, columns)?
        }
        ScanUnit::TextFile(file) => {
            let PhysicalPlan::ParquetScan { table, .. } = node else {
                unreachable!("text files are read by scans of files in place");
            };
            let batches = match table.format {
                FileFormat::Json => read_json_file(&file.source, &table.schema)?,
                _ => read_csv_file(&file.source, &table.schema)?,
            };
            batches
                .iter()
                .map(|batch| as_schema(batch, schema))
                .collect::<Result<_>>()?
        }
        ScanUnit::RowGroup { file, row_group } => {
            let read = (file.as_ref(), *row_group);
            return read_row_group(read, (schema, columns), (filter, pages), dictionaries);
        }
    };
    match filter {
        Some(filter) => filter.apply(read),
        None => Ok(read),
    }
}

/// Where the container a unit reads is among its lake table's; none for files read in place.
fn unit_place<'u>(unit: &'u ScanUnit<'_>) -> Option<&'u Place> {
    match unit {
        ScanUnit::Table { place, .. } => Some(place),
        ScanUnit::RowGroup { file, .. } => file.place.as_ref(),
        ScanUnit::TextFile(_) => None,
    }
}

/// Whether `node` scans a lake table with hidden columns (system columns, the row address)
/// after its own.
fn has_hidden_columns(node: &PhysicalPlan) -> bool {
    match node {
        PhysicalPlan::TableScan { table, schema, .. } => {
            schema.fields().len() > table.columns.len()
        }
        _ => false,
    }
}

/// A scan node's schema and the columns it reads, when not all.
pub(crate) fn scan_projection(node: &PhysicalPlan) -> (&SchemaRef, Option<&[usize]>) {
    match node {
        PhysicalPlan::TableScan {
            schema, columns, ..
        }
        | PhysicalPlan::ParquetScan {
            schema, columns, ..
        } => (schema, columns.as_deref()),
        _ => unreachable!("a scan unit is read by the scan that made it"),
    }
}

/// Reads one row group of a Parquet file as batches of `schema`, skipping the pages `pages`
/// rules out; with `filter`, only the rows it keeps, reading its columns first when it can.
fn read_row_group(
    (file, row_group): (&ScanFile, usize),
    (schema, columns): (&SchemaRef, Option<&[usize]>),
    (filter, pages): (Option<&ScanFilter<'_>>, Option<&PagePruning<'_>>),
    dictionaries: &[usize],
) -> Result<Vec<RecordBatch>> {
    let footer = &file.footer;
    let mut table_columns = Vec::new();
    let columns = table_part(footer, schema, columns, &mut table_columns);
    let ranges = kept_ranges(file, row_group, pages);
    if ranges.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let ranges = ranges.as_deref();
    if let (Some(filter), Some(columns)) = (filter, columns)
        && filter.reads_first(columns)
    {
        let mut rows = 0;
        let mut answers = AnswerCache::new();
        let keep = |batch: &RecordBatch| -> Result<BooleanArray> {
            rows += batch.num_rows();
            filter.mask_read(batch, schema, &mut answers)
        };
        let read = read_parquet_row_group_where(
            &file.source,
            footer,
            (row_group, ranges),
            (columns, filter.columns()),
            (filter.reads_dictionaries(), dictionaries),
            keep,
        )?;
        filter.count(rows, read.iter().map(RecordBatch::num_rows).sum());
        let read = read
            .iter()
            .map(|batch| widen(batch, schema, columns))
            .collect::<Result<_>>()?;
        return filter.apply_deferred(read);
    }
    let read = read_pages((file, row_group, ranges), (schema, columns), dictionaries)?;
    match filter {
        Some(filter) => filter.apply(read),
        None => Ok(read),
    }
}

/// `columns`, or when the scan reads every column of a file that stores commit columns after
/// the table's (ADR 0048), the table's alone, held in `table_columns`.
fn table_part<'c>(
    footer: &ParquetFooter,
    schema: &SchemaRef,
    columns: Option<&'c [usize]>,
    table_columns: &'c mut Vec<usize>,
) -> Option<&'c [usize]> {
    *table_columns = (0..schema.fields().len()).collect();
    columns.or((footer.fields() > table_columns.len()).then_some(&table_columns[..]))
}

/// The rows of `row_group` left once the pages `pages` rules out are skipped, and only those a
/// vector index found when the scan has a nearest clause; `None` for all.
pub(crate) fn kept_ranges(
    file: &ScanFile,
    row_group: usize,
    pages: Option<&PagePruning<'_>>,
) -> Option<Vec<Range<usize>>> {
    let nearest = file
        .nearest
        .as_ref()
        .map(|nearest| nearest.rows[row_group].as_slice());
    let kept = pages.and_then(|pages| {
        let (ranges, skipped) = pages_kept(&file.footer, row_group, &pages.columns, pages.may_hold);
        pages.skipped.fetch_add(skipped, Ordering::Relaxed);
        ranges
    });
    crate::vectors::intersect_ranges(kept, nearest)
}

/// Reads the rows at `ranges` (all when `None`) of one row group of a Parquet file as batches
/// of `schema`, the `columns` read (all when `None`) and the others NULL.
pub(crate) fn read_pages(
    (file, row_group, ranges): (&ScanFile, usize, Option<&[Range<usize>]>),
    (schema, columns): (&SchemaRef, Option<&[usize]>),
    dictionaries: &[usize],
) -> Result<Vec<RecordBatch>> {
    let mut table_columns = Vec::new();
    let columns = table_part(&file.footer, schema, columns, &mut table_columns);
    let every_column: Vec<usize>;
    let all_columns = match columns {
        Some(columns) => columns,
        None => {
            every_column = (0..schema.fields().len()).collect();
            &every_column
        }
    };
    if let (Some(nearest), Some(ranges)) = (&file.nearest, ranges)
        && let Some(column) = nearest.graph_column(schema, all_columns)
    {
        let others: Vec<usize> = all_columns
            .iter()
            .copied()
            .filter(|c| *c != column)
            .collect();
        let read = read_columns((file, row_group, ranges), (schema, &others), dictionaries)?;
        let first_row = (0..row_group).map(|g| file.footer.row_group_rows(g)).sum();
        return nearest.fill_graph_column(read, first_row, ranges);
    }
    let read = read_parquet_row_group(
        &file.source,
        &file.footer,
        (row_group, ranges),
        columns,
        dictionaries,
    )?;
    // A lake file's batches carry its writer's field metadata, and may hold decimals wider
    // than the table now declares: the plan's schema is the reader's truth.
    read.iter()
        .map(|batch| widen(batch, schema, all_columns))
        .collect()
}

/// The rows at `ranges` of one row group as batches of `schema` with only `columns` read, the
/// others NULL; with no column to read, one batch of as many rows.
fn read_columns(
    (file, row_group, ranges): (&ScanFile, usize, &[Range<usize>]),
    (schema, columns): (&SchemaRef, &[usize]),
    dictionaries: &[usize],
) -> Result<Vec<RecordBatch>> {
    if columns.is_empty() {
        let rows = ranges.iter().map(ExactSizeIterator::len).sum();
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
        let none = Arc::new(arrow::datatypes::Schema::empty());
        let batch = RecordBatch::try_new_with_options(none, vec![], &options)?;
        return Ok(vec![widen(&batch, schema, columns)?]);
    }
    let source = &file.source;
    let read = (row_group, Some(ranges));
    let read = read_parquet_row_group(source, &file.footer, read, Some(columns), dictionaries)?;
    read.iter()
        .map(|batch| widen(batch, schema, columns))
        .collect()
}
