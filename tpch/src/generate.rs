//! `pondra tpch gen`: the eight TPC-H tables made by `tpchgen`, streamed into a lake as
//! Parquet, one table at a time, never held whole in memory.

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use pondra_cluster::{Node, NodeError};
use std::sync::Arc;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// The tables, smallest first.
pub const TABLES: [&str; 8] = [
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
];

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

fn generator(table: &str, sf: f64) -> (SchemaRef, Batches) {
    const BATCH: usize = 65_536;
    match table {
        "region" => (
            RegionArrow::schema_ref(),
            Box::new(RegionArrow::new(RegionGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "nation" => (
            NationArrow::schema_ref(),
            Box::new(NationArrow::new(NationGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "supplier" => (
            SupplierArrow::schema_ref(),
            Box::new(SupplierArrow::new(SupplierGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "customer" => (
            CustomerArrow::schema_ref(),
            Box::new(CustomerArrow::new(CustomerGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "part" => (
            PartArrow::schema_ref(),
            Box::new(PartArrow::new(PartGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "partsupp" => (
            PartSuppArrow::schema_ref(),
            Box::new(PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "orders" => (
            OrderArrow::schema_ref(),
            Box::new(OrderArrow::new(OrderGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        "lineitem" => (
            LineItemArrow::schema_ref(),
            Box::new(LineItemArrow::new(LineItemGenerator::new(sf, 1, 1)).with_batch_size(BATCH)),
        ),
        other => unreachable!("no TPC-H table {other}"),
    }
}

/// The SQL type of a generated column.
fn sql_type(data_type: &DataType) -> Result<String, NodeError> {
    Ok(match data_type {
        DataType::Int32 => "INTEGER".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => "VARCHAR".into(),
        DataType::Date32 => "DATE".into(),
        DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => format!("DECIMAL({p},{s})"),
        DataType::Float64 => "DOUBLE".into(),
        other => {
            return Err(NodeError::Other(format!(
                "unexpected TPC-H column type {other}"
            )));
        }
    })
}

/// About how many rows `table` has at scale factor `sf` (lineitem varies a little).
pub fn expected_rows(table: &str, sf: f64) -> u64 {
    let per_unit = match table {
        "region" => return 5,
        "nation" => return 25,
        "supplier" => 10_000.0,
        "customer" => 150_000.0,
        "part" => 200_000.0,
        "partsupp" => 800_000.0,
        "orders" => 1_500_000.0,
        _ => 6_000_000.0,
    };
    (per_unit * sf).round().max(1.0) as u64
}

/// How far generation has come: the table, the rows written so far, and whether it is done.
pub struct Progress<'a> {
    pub table: &'a str,
    pub rows: u64,
    pub done: bool,
}

/// Creates the eight tables in the lake behind `node` and fills them at scale factor `sf`.
/// `progress` is told of every batch written and of each table's end.
pub async fn generate(
    node: &Arc<Node>,
    sf: f64,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<(), NodeError> {
    if sf.is_nan() || sf <= 0.0 {
        return Err(NodeError::Other(format!(
            "scale factor must be positive, not {sf}"
        )));
    }
    for table in TABLES {
        let (schema, batches) = generator(table, sf);
        let columns = schema
            .fields()
            .iter()
            .map(|f| Ok(format!("{} {}", f.name(), sql_type(f.data_type())?)))
            .collect::<Result<Vec<_>, NodeError>>()?;
        node.execute(&format!("CREATE TABLE {table} ({})", columns.join(", ")))
            .await?;
        let mut written = 0;
        let batches = batches.map(|b| {
            let b = b.map_err(NodeError::from)?;
            written += b.num_rows() as u64;
            progress(Progress {
                table,
                rows: written,
                done: false,
            });
            Ok(b)
        });
        let rows = node.bulk_load(table, batches).await?;
        progress(Progress {
            table,
            rows,
            done: true,
        });
    }
    Ok(())
}

/// Writes the eight tables as `<dir>/<table>.parquet`, the layout `tpchgen-cli parquet` makes,
/// streaming each table batch by batch.
pub fn write_parquet_dir(dir: &std::path::Path, sf: f64) -> Result<(), NodeError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| NodeError::Other(format!("cannot create {}: {e}", dir.display())))?;
    for table in TABLES {
        let (schema, batches) = generator(table, sf);
        let path = dir.join(format!("{table}.parquet"));
        let file = std::fs::File::create(&path)
            .map_err(|e| NodeError::Other(format!("cannot create {}: {e}", path.display())))?;
        let properties = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, Some(properties))
            .map_err(|e| NodeError::Other(e.to_string()))?;
        for batch in batches {
            writer
                .write(&batch?)
                .map_err(|e| NodeError::Other(e.to_string()))?;
        }
        writer
            .close()
            .map_err(|e| NodeError::Other(e.to_string()))?;
    }
    Ok(())
}
