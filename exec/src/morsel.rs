//! The morsels of a scan: the units of rows worker threads take one at a time. A lake table's
//! are its Parquet files and log segments; Parquet files read in place are split by row group.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::datatypes::SchemaRef;
use pondra_planner::{Expr, ExternalFile, FileFormat, PhysicalPlan};
use pondra_storage::{read_csv_file, read_parquet_row_group, read_parquet_row_group_where};

use crate::Result;
use crate::dictionary_filter::{AnswerCache, DictionaryFilter};
use crate::join::HashJoin;
use crate::pipeline::ExecContext;
use crate::scan::{Morsel, as_schema, read_morsel, table_morsels, widen};

/// One morsel of a scan.
pub enum ScanUnit<'p> {
    Table(Morsel),
    RowGroup {
        file: &'p ExternalFile,
        row_group: usize,
    },
    CsvFile(&'p ExternalFile),
}

/// The morsels of a scan node, in the order a sequential scan reads them; `None` if `node` is
/// not a scan.
pub fn scan_units<'p>(node: &'p PhysicalPlan, ctx: &ExecContext) -> Option<Vec<ScanUnit<'p>>> {
    match node {
        PhysicalPlan::TableScan { table, .. } => Some(
            table_morsels(&ctx.snapshot, table)
                .into_iter()
                .map(ScanUnit::Table)
                .collect(),
        ),
        PhysicalPlan::ParquetScan { table, .. } => {
            let mut units = Vec::new();
            for file in &table.files {
                if table.format == FileFormat::Csv {
                    units.push(ScanUnit::CsvFile(file));
                    continue;
                }
                units.extend(
                    (0..file.row_groups).map(|row_group| ScanUnit::RowGroup { file, row_group }),
                );
            }
            Some(units)
        }
        _ => None,
    }
}

/// What a scan keeps of the rows it reads.
pub enum Keep<'p> {
    /// The rows a filter right above the scan keeps.
    Filter(&'p Expr),
    /// The rows whose key the build side of the hash join right above the scan has; the join
    /// still runs on them.
    JoinKey(&'p HashJoin),
}

/// Rows dropped as a scan reads, and how many it has kept so far.
pub struct ScanFilter<'p> {
    keep: Keep<'p>,
    /// The columns `keep` reads: sorted, deduplicated.
    columns: Vec<usize>,
    /// The filter's conjuncts over one string column, answered from the column's
    /// dictionary when it is read first.
    dictionary: Option<DictionaryFilter>,
    rows: AtomicUsize,
    kept: AtomicUsize,
}

impl<'p> ScanFilter<'p> {
    /// The filter of a scan `node`.
    pub fn new(keep: Keep<'p>, node: &PhysicalPlan) -> ScanFilter<'p> {
        // A column whose sampled rows repeat their values is likely dictionary-encoded in
        // every row group; one of mostly distinct values is stored plain, and reading it as a
        // dictionary would build one by hashing every string.
        let few_values = |column: usize| match node {
            PhysicalPlan::ParquetScan { table, .. } => table
                .columns
                .get(column)
                .and_then(|stats| stats.sample)
                .is_some_and(|sample| sample.distinct * 4 <= sample.rows),
            _ => false,
        };
        let dictionary = match &keep {
            Keep::Filter(predicate) => DictionaryFilter::new(predicate, &node.schema(), few_values),
            Keep::JoinKey(_) => None,
        };
        let columns = match &keep {
            Keep::Filter(predicate) => predicate.column_indices(),
            Keep::JoinKey(join) => {
                let keys = join.droppable_probe_keys().unwrap_or_default();
                let mut columns: Vec<usize> = keys.iter().flat_map(Expr::column_indices).collect();
                columns.sort_unstable();
                columns.dedup();
                columns
            }
        };
        ScanFilter {
            keep,
            columns,
            dictionary,
            rows: AtomicUsize::new(0),
            kept: AtomicUsize::new(0),
        }
    }

    /// Which rows of a batch of the scan's schema to keep.
    fn mask(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        match &self.keep {
            Keep::Filter(predicate) => crate::select::predicate_mask(predicate, batch),
            Keep::JoinKey(join) => join.has_key(batch),
        }
    }

    /// Which rows of a batch of the filter's columns, as read first, to keep.
    fn mask_read(
        &self,
        read: &RecordBatch,
        schema: &SchemaRef,
        answers: &mut AnswerCache,
    ) -> Result<BooleanArray> {
        match &self.dictionary {
            Some(dictionary) => dictionary.mask(read, schema, &self.columns, answers),
            None => self.mask(&widen(read, schema, &self.columns)?),
        }
    }

    /// Whether to read the filter's columns first and the other `columns` only for the rows
    /// it keeps: when it reads no more columns than the others, and has kept at most a
    /// quarter of the rows so far. Skipping rows saves decoding, not decompressing, which
    /// a filter that keeps most rows or reads most columns does not repay. A filter on a
    /// string column always does: it reads the column's dictionary instead of its strings.
    fn reads_first(&self, columns: &[usize]) -> bool {
        let others = columns.len() - self.columns.len();
        let (rows, kept) = (self.rows.load(Relaxed), self.kept.load(Relaxed));
        !self.columns.is_empty()
            && (self.dictionary.is_some() || (self.columns.len() <= others && kept * 4 <= rows))
    }

    /// The rows of `batches` a filter keeps (all of them for a join's keys: the join drops
    /// the others itself).
    fn apply(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        if let Keep::JoinKey(_) = self.keep {
            return Ok(batches);
        }
        let mut kept = Vec::with_capacity(batches.len());
        for batch in batches {
            let mask = self.mask(&batch)?;
            let batch = crate::select::filter_batch(&batch, &mask)?;
            self.count(mask.len(), batch.num_rows());
            kept.push(batch);
        }
        Ok(kept)
    }

    fn count(&self, rows: usize, kept: usize) {
        self.rows.fetch_add(rows, Relaxed);
        self.kept.fetch_add(kept, Relaxed);
    }
}

/// Reads one morsel of scan `node` as batches of the node's schema; with `filter`, only its
/// rows the filter keeps.
pub fn read_unit(
    unit: &ScanUnit<'_>,
    node: &PhysicalPlan,
    filter: Option<&ScanFilter<'_>>,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let read = match (unit, node) {
        (
            ScanUnit::Table(morsel),
            PhysicalPlan::TableScan {
                schema, columns, ..
            },
        ) => read_morsel(&ctx.lake, &ctx.runtime, morsel, schema, columns.as_deref())?,
        (ScanUnit::CsvFile(file), PhysicalPlan::ParquetScan { table, schema, .. }) => {
            read_csv_file(&file.path, &table.schema)?
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
                    &file.path,
                    footer,
                    *row_group,
                    (columns, &filter.columns),
                    filter.dictionary.is_some(),
                    keep,
                )?;
                filter.count(rows, read.iter().map(RecordBatch::num_rows).sum());
                return read
                    .iter()
                    .map(|batch| widen(batch, schema, columns))
                    .collect();
            }
            let read = read_parquet_row_group(&file.path, footer, *row_group, columns.as_deref())?;
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
