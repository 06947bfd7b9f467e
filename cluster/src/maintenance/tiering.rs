//! Tiering: rows move from the log tail into Parquet files under `data/<table>/`; an aggregating
//! view's partial states are merged into one row per group on the way.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    ArrayRef, Date32Array, Int64Array, RecordBatch, Scalar, TimestampMicrosecondArray,
};
use arrow::compute::kernels::cmp::gt_eq;
use arrow::compute::{SortColumn, concat_batches, lexsort_to_indices, take_record_batch};
use arrow::compute::{filter_record_batch, is_null, or_kleene};
use pondra_catalog::{
    Change, Container, DataFile, LogSegment, Snapshot, SqlType, TableDef, TableKind, Ttl,
    gather_statistics, now_ms,
};
use pondra_exec::{drop_deleted, read_morsel, table_morsels};
use pondra_planner::load_view;
use pondra_storage::{write_parquet_bytes, write_sorted_run};

use crate::Result;
use crate::node::Node;
use crate::object_names::unique_name;

impl Node {
    /// Moves log segments that have waited at least `min_age` into Parquet, table by table.
    pub async fn tier(&self, min_age: Duration) -> Result<()> {
        let _guard = self.tier_lock.lock().await;
        let snapshot = self.snapshot();
        let now = now_ms();
        for table in snapshot.tables.values() {
            let ready: Vec<(u64, u32)> = snapshot
                .segments(table.id)
                .iter()
                .take_while(|s| now.saturating_sub(s.committed_at_ms) >= min_age.as_millis() as u64)
                .map(|s| (s.commit, s.index))
                .collect();
            if ready.is_empty() {
                continue;
            }
            match self.tier_table(&snapshot, table, ready).await {
                Ok(()) => {}
                // A table dropped meanwhile has nothing left to tier; rows deleted meanwhile
                // are tiered without them next time.
                Err(crate::NodeError::Catalog(
                    pondra_catalog::CatalogError::TableNotFound(_)
                    | pondra_catalog::CatalogError::DeletedConcurrently(_),
                )) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn tier_table(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        segments: Vec<(u64, u32)>,
    ) -> Result<()> {
        let schema = table.arrow_schema();
        let compact = match &table.kind {
            TableKind::Table
            | TableKind::View { .. }
            | TableKind::ValueCounts { .. }
            | TableKind::JoinState { .. }
            | TableKind::Macro { .. }
            | TableKind::Procedure { .. } => None,
            TableKind::MaterializedView { .. } => load_view(snapshot, table)?.compact_plan(table),
        };
        // A merged view replaces all of its files; a table only adds one for its log rows.
        let replaced_files: Vec<String> = match compact {
            Some(_) => snapshot
                .files(table.id)
                .iter()
                .map(|f| f.path.clone())
                .collect(),
            None => Vec::new(),
        };
        let (mut rows, deleted) = {
            let lake = self.lake.clone();
            let snapshot = snapshot.clone();
            let table = table.clone();
            let schema = schema.clone();
            let segments = segments.clone();
            let whole = compact.is_some();
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || -> Result<(Vec<RecordBatch>, u64)> {
                let files = snapshot.files(table.id).len();
                let morsels = table_morsels(&snapshot, &table);
                let containers = snapshot.containers(table.id);
                let stamped = matches!(table.kind, TableKind::Table);
                let (mut out, mut deleted) = (Vec::new(), 0);
                for (i, (morsel, container)) in morsels.iter().zip(&containers).enumerate() {
                    let is_file = i < files;
                    let wanted = if is_file {
                        whole
                    } else {
                        let s = &snapshot.segments(table.id)[i - files];
                        segments.contains(&(s.commit, s.index))
                    };
                    if wanted {
                        let mut read = read_morsel(&lake, &runtime, morsel, &schema, None)?;
                        if let (true, Container::Segment { .. }) = (stamped, container) {
                            // Stamped before deleted rows are dropped: a row's offset is its
                            // ordinal in the segment past the segment's first.
                            let segment = &snapshot.segments(table.id)[i - files];
                            read = with_commit_columns(&table, &read, segment)?;
                        }
                        let vector = snapshot.deletion_vector(table.id, container);
                        deleted += vector.map_or(0, |v| v.len());
                        out.extend(drop_deleted(read, vector)?);
                    }
                }
                Ok((out, deleted))
            })
            .await
            .map_err(|e| crate::NodeError::Other(format!("tiering thread failed: {e}")))??
        };
        if let Some(plan) = compact {
            rows = self.run_query(plan, snapshot.clone(), rows).await?;
        }
        if let Some(ttl) = &table.ttl {
            rows = unexpired_rows(table, ttl, rows)?;
        }
        if !table.key.is_empty() {
            rows = sorted_by_key(table, &rows)?;
        }
        let added = self.write_data_file(table, &rows).await?;
        self.catalog
            .commit(vec![Change::Replace {
                table_id: table.id,
                segments,
                files: replaced_files,
                added,
                deleted,
            }])
            .await?;
        Ok(())
    }

    /// Writes `rows` as one Parquet file of `table` under `data/`; none when there are no rows.
    pub(crate) async fn write_data_file(
        &self,
        table: &TableDef,
        rows: &[RecordBatch],
    ) -> Result<Vec<DataFile>> {
        let row_count: usize = rows.iter().map(|b| b.num_rows()).sum();
        if row_count == 0 {
            return Ok(Vec::new());
        }
        // Rows tiered from the log tail carry their commit columns (ADR 0048).
        let width = table.columns.len();
        let schema = table.file_schema(rows[0].num_columns() != width);
        let rows: Vec<RecordBatch> = rows
            .iter()
            .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
            .collect::<Result<_, _>>()?;
        let bytes = match table.key.is_empty() {
            true => write_parquet_bytes(&schema, &rows)?,
            false => write_sorted_run(&schema, &rows)?,
        };
        let path = format!("data/{}/{}.parquet", table.name, unique_name());
        let size_bytes = bytes.len() as u64;
        self.lake.put(&path, bytes).await?;
        Ok(vec![DataFile {
            table_id: table.id,
            path,
            rows: row_count as u64,
            size_bytes,
            columns: gather_statistics(&rows).into_iter().take(width).collect(),
            commit: 0,
            committed_at_ms: 0,
            column_ids: table.stored_column_ids(),
            offsets: offset_range(&rows, width),
        }])
    }

    /// Deletes the objects whose retention has passed, then forgets them.
    pub async fn collect_garbage(&self) -> Result<()> {
        let _guard = self.tier_lock.lock().await;
        let now = now_ms();
        let expired: Vec<(u64, String)> = self
            .snapshot()
            .garbage
            .iter()
            .filter(|(deadline, _)| *deadline <= now)
            .cloned()
            .collect();
        if expired.is_empty() {
            return Ok(());
        }
        for (_, path) in &expired {
            self.lake.delete(path).await?;
        }
        self.catalog
            .commit(vec![Change::ForgetGarbage { entries: expired }])
            .await?;
        Ok(())
    }
}

/// A keyed table's rows sorted by key: each file tiering writes is a sorted run (ADR 0048), so
/// that its row groups and pages hold narrow ranges of keys, which lookups by key prune by.
pub(crate) fn sorted_by_key(table: &TableDef, rows: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let batch = concat_batches(&rows[0].schema(), rows)?;
    let keys: Vec<SortColumn> = table
        .key
        .iter()
        .map(|name| {
            let index = table.columns.iter().position(|c| &c.name == name);
            let index = index.expect("key columns are columns of the table");
            SortColumn {
                values: batch.column(index).clone(),
                options: None,
            }
        })
        .collect();
    let order = lexsort_to_indices(&keys, None)?;
    Ok(vec![take_record_batch(&batch, &order)?])
}

/// The least and greatest offset `rows` hold, when they carry offsets after the table's
/// `width` columns and their commit columns.
fn offset_range(rows: &[RecordBatch], width: usize) -> Option<(u64, u64)> {
    let mut range: Option<(u64, u64)> = None;
    for batch in rows.iter().filter(|b| b.num_columns() == width + 3) {
        let offsets = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(
            batch.column(width + 2),
        );
        let least = arrow::compute::min(offsets);
        let greatest = arrow::compute::max(offsets);
        if let (Some(least), Some(greatest)) = (least, greatest) {
            let (least, greatest) = (least as u64, greatest as u64);
            range = Some(range.map_or((least, greatest), |(l, g)| (l.min(least), g.max(greatest))));
        }
    }
    range
}

/// `batches`, the rows of log `segment` in order, with the columns a data file stores after
/// the table's: the segment's commit and its time, and each row's offset (ADR 0077).
fn with_commit_columns(
    table: &TableDef,
    batches: &[RecordBatch],
    segment: &LogSegment,
) -> Result<Vec<RecordBatch>> {
    let micros = segment.committed_at_ms as i64 * 1000;
    let mut next_offset = segment.first_offset;
    let mut stamped = Vec::with_capacity(batches.len());
    for batch in batches {
        let rows = batch.num_rows();
        let offsets: Int64Array = match next_offset {
            Some(first) => (first..first + rows as u64)
                .map(|o| Some(o as i64))
                .collect(),
            None => Int64Array::new_null(rows),
        };
        next_offset = next_offset.map(|first| first + rows as u64);
        let mut columns = batch.columns().to_vec();
        columns.push(Arc::new(Int64Array::from_value(
            segment.commit as i64,
            rows,
        )));
        columns.push(Arc::new(TimestampMicrosecondArray::from_value(
            micros, rows,
        )));
        columns.push(Arc::new(offsets));
        stamped.push(RecordBatch::try_new(table.stored_schema(), columns)?);
    }
    Ok(stamped)
}

/// The rows a TTL has not expired: expired rows are dropped as tiering writes them (reads hid
/// them already).
pub(crate) fn unexpired_rows(
    table: &TableDef,
    ttl: &Ttl,
    rows: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>> {
    let index = table.columns.iter().position(|c| c.name == ttl.column);
    let index = index.expect("a TTL column is a column of its table");
    let now = now_ms();
    let cutoff: ArrayRef = match table.columns[index].sql_type {
        SqlType::Date => Arc::new(Date32Array::from(vec![ttl.cutoff_days(now)])),
        _ => Arc::new(TimestampMicrosecondArray::from(vec![
            ttl.cutoff_micros(now),
        ])),
    };
    let mut kept = Vec::with_capacity(rows.len());
    for batch in rows {
        let column = batch.column(index);
        let live = gt_eq(column, &Scalar::new(cutoff.clone()))?;
        let live = or_kleene(&live, &is_null(column)?)?;
        kept.push(filter_record_batch(&batch, &live)?);
    }
    Ok(kept)
}
