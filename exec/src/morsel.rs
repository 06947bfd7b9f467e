//! The morsels of a scan: the units of rows worker threads take one at a time. A lake table's
//! are its Parquet files and log segments; Parquet files read in place are split by row group.

use arrow::array::{BooleanArray, RecordBatch};
use pondra_planner::{ExternalFile, FileFormat, PhysicalPlan};
use pondra_storage::{
    read_csv_file, read_json_file, read_parquet_row_group, read_parquet_row_group_where,
};

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::Result;
use crate::dictionary_filter::AnswerCache;
use crate::pipeline::ExecContext;
use crate::prune::pages_kept;
use crate::scan::{Morsel, as_schema, read_morsel, table_morsels_where, widen};
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

/// One morsel of a scan.
pub enum ScanUnit<'p> {
    Table(Morsel),
    RowGroup {
        file: &'p ExternalFile,
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

/// The morsels of a scan node, in the order a sequential scan reads them, without those whose
/// statistics `may_hold` rules out; and how many were skipped. `None` if `node` is not a scan.
pub fn scan_units<'p>(
    node: &'p PhysicalPlan,
    may_hold: &MayHold<'_>,
    ctx: &ExecContext,
) -> Option<(Vec<ScanUnit<'p>>, usize)> {
    let mut skipped = 0;
    let mut units = Vec::new();
    match node {
        PhysicalPlan::TableScan { table, .. } => {
            let morsels = table_morsels_where(&ctx.snapshot, table, |file| {
                let range = |column: usize| {
                    let statistics = file.columns.get(column)?;
                    statistics.min.zip(statistics.max)
                };
                let keep = may_hold(&range);
                skipped += usize::from(!keep);
                keep
            });
            units.extend(morsels.into_iter().map(ScanUnit::Table));
        }
        PhysicalPlan::ParquetScan { table, .. } => {
            for file in &table.files {
                if table.format != FileFormat::Parquet {
                    units.push(ScanUnit::TextFile(file));
                    continue;
                }
                let footer = file.footer.as_ref().expect("a Parquet file has a footer");
                for row_group in 0..file.row_groups {
                    if may_hold(&|column| footer.row_group_range(row_group, column)) {
                        units.push(ScanUnit::RowGroup { file, row_group });
                    } else {
                        skipped += 1;
                    }
                }
            }
        }
        _ => return None,
    }
    Some((units, skipped))
}

/// Whether every unit's range of integer or date `column` is known, and no two overlap but at
/// their ends: a value strictly inside one unit's range is then in no other unit.
pub fn units_clustered_on(units: &[ScanUnit<'_>], column: usize) -> bool {
    let mut ranges = Vec::with_capacity(units.len());
    for unit in units {
        let ScanUnit::RowGroup { file, row_group } = unit else {
            return false;
        };
        let footer = file.footer.as_ref();
        match footer.and_then(|f| f.row_group_range(*row_group, column)) {
            Some(range) => ranges.push(range),
            None => return false,
        }
    }
    ranges.sort_unstable();
    ranges.windows(2).all(|pair| pair[0].1 <= pair[1].0)
}

/// Reads one morsel of scan `node` as batches of the node's schema; with `filter`, only its
/// rows the filter keeps. The string columns at `dictionaries` come as dictionaries from
/// Parquet files read in place (ADR 0037), and plain from the other sources.
pub fn read_unit(
    unit: &ScanUnit<'_>,
    node: &PhysicalPlan,
    (filter, pages): (Option<&ScanFilter<'_>>, Option<&PagePruning<'_>>),
    dictionaries: &[usize],
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let read = match (unit, node) {
        (
            ScanUnit::Table(morsel),
            PhysicalPlan::TableScan {
                schema, columns, ..
            },
        ) => read_morsel(&ctx.lake, &ctx.runtime, morsel, schema, columns.as_deref())?,
        (ScanUnit::TextFile(file), PhysicalPlan::ParquetScan { table, schema, .. }) => {
            let batches = match table.format {
                FileFormat::Json => read_json_file(&file.source, &table.schema)?,
                _ => read_csv_file(&file.source, &table.schema)?,
            };
            batches
                .iter()
                .map(|batch| as_schema(batch, schema))
                .collect::<Result<_>>()?
        }
        (
            ScanUnit::RowGroup { file, row_group },
            PhysicalPlan::ParquetScan {
                schema, columns, ..
            },
        ) => {
            let footer = file.footer.as_ref().expect("a Parquet file has a footer");
            let ranges = match pages {
                Some(pages) => {
                    let (ranges, skipped) =
                        pages_kept(footer, *row_group, &pages.columns, pages.may_hold);
                    pages.skipped.fetch_add(skipped, Ordering::Relaxed);
                    ranges
                }
                None => None,
            };
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
                    (*row_group, ranges),
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
            let read = read_parquet_row_group(
                &file.source,
                footer,
                (*row_group, ranges),
                columns.as_deref(),
                dictionaries,
            )?;
            match columns {
                Some(columns) => read
                    .iter()
                    .map(|batch| widen(batch, schema, columns))
                    .collect::<Result<_>>()?,
                None => read,
            }
        }
        _ => unreachable!("a scan unit is read by the scan that made it"),
    };
    match filter {
        Some(filter) => filter.apply(read),
        None => Ok(read),
    }
}
