//! The morsels of a scan: the units of rows worker threads take one at a time. A lake table's
//! are its Parquet files and log segments; Parquet files read in place are split by row group.

use arrow::array::RecordBatch;
use pondra_planner::{ExternalFile, FileFormat, PhysicalPlan};
use pondra_storage::{read_csv_file, read_parquet_row_group};

use crate::Result;
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

/// Reads one morsel of scan `node` as batches of the node's schema.
pub fn read_unit(
    unit: &ScanUnit<'_>,
    node: &PhysicalPlan,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    match (unit, node) {
        (
            ScanUnit::Table(morsel),
            PhysicalPlan::TableScan {
                schema, columns, ..
            },
        ) => read_morsel(&ctx.lake, &ctx.runtime, morsel, schema, columns.as_deref()),
        (ScanUnit::CsvFile(file), PhysicalPlan::ParquetScan { table, schema, .. }) => {
            read_csv_file(&file.path, &table.schema)?
                .iter()
                .map(|batch| as_schema(batch, schema))
                .collect()
        }
        (
            ScanUnit::RowGroup { file, row_group },
            PhysicalPlan::ParquetScan {
                schema, columns, ..
            },
        ) => {
            let footer = file.footer.as_ref().expect("a Parquet file has a footer");
            let read = read_parquet_row_group(&file.path, footer, *row_group, columns.as_deref())?;
            match columns {
                Some(columns) => read
                    .iter()
                    .map(|batch| widen(batch, schema, columns))
                    .collect(),
                None => Ok(read),
            }
        }
        _ => unreachable!("a scan unit is read by the scan that made it"),
    }
}
