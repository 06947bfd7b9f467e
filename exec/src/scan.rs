use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use pondra_catalog::{SegmentPayload, Snapshot, TableDef};
use pondra_storage::{Lake, decode_log_segment, read_parquet_bytes};

use crate::Result;

/// One unit of a table scan, read and decoded as a whole: a Parquet file or a log segment.
#[derive(Clone, Debug)]
pub enum Morsel {
    ParquetFile(String),
    InlineSegment(Bytes),
    SegmentObject(String),
}

/// The morsels holding every row of a table at one snapshot: its Parquet files, then its log
/// tail in commit order.
pub fn table_morsels(snapshot: &Snapshot, table: &TableDef) -> Vec<Morsel> {
    let files = snapshot
        .files(table.id)
        .iter()
        .map(|f| Morsel::ParquetFile(f.path.clone()));
    let segments = snapshot
        .segments(table.id)
        .iter()
        .map(|s| match &s.payload {
            SegmentPayload::Inline(bytes) => Morsel::InlineSegment(bytes.clone()),
            SegmentPayload::Object(path) => Morsel::SegmentObject(path.clone()),
        });
    files.chain(segments).collect()
}

/// Reads one morsel's rows, as batches of `schema`.
///
/// Runs on an executor thread, so it blocks on the object store through `runtime`.
pub fn read_morsel(
    lake: &Lake,
    runtime: &tokio::runtime::Handle,
    morsel: &Morsel,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let batches = match morsel {
        Morsel::ParquetFile(path) => read_parquet_bytes(runtime.block_on(lake.get(path))?)?,
        Morsel::InlineSegment(bytes) => decode_log_segment(bytes)?,
        Morsel::SegmentObject(path) => decode_log_segment(&runtime.block_on(lake.get(path))?)?,
    };
    // Stored batches carry the writer's field metadata; the plan's schema is the reader's truth.
    batches
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| Ok(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?))
        .collect()
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
        batches.extend(read_morsel(lake, runtime, &morsel, schema)?);
    }
    Ok(batches)
}
