//! Rows read ahead for Fetch (ADR 0077): a consumer asks for about a megabyte at a time, while
//! a tiered file's pages and a log segment hold many times that. Each Fetch that read only its
//! own rows would decompress the same pages again and again; instead a read takes a run of
//! rows several Fetches long, kept here (shared by the consumers of a table, a few runs and
//! 64 MB at most) for the next Fetches to slice, and the next run is read while a consumer
//! takes the second half of one.
//!
//! A run holds the rows live when it was read. Serving them after a later commit deleted one
//! is what a compacted Kafka topic does until its cleaner runs: a record of a replaced key
//! may still be read, never a record out of order or a record missing.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use pondra_cluster::{Node, TableDef};

/// Bytes of rows kept at most, across runs.
const KEPT_BYTES: usize = 64 << 20;

/// Runs kept at most.
const KEPT_RUNS: usize = 16;

/// Rows one read takes at most: several Fetches' worth, bounded so a run stays small.
const RUN_ROWS: usize = 50_000;

/// Rows read by offset: every live row of a partition of `table` with an offset in
/// `from..until`.
struct Run {
    table: Arc<TableDef>,
    partition: u16,
    from: u64,
    until: u64,
    /// The table's columns, then `_commit_timestamp` and `_offset`, in offset order.
    rows: Vec<RecordBatch>,
    bytes: usize,
}

/// Turned true once a read in the background is done.
type ReadDone = tokio::sync::watch::Sender<bool>;

/// The runs kept, the latest used last.
#[derive(Default)]
pub(super) struct ReadAhead {
    runs: Mutex<VecDeque<Run>>,
    /// The (table, partition, offset) of the runs being read in the background, each with the
    /// flag its read turns true once it is done.
    reading: Mutex<HashMap<(u64, u16, u64), Arc<ReadDone>>>,
}

impl ReadAhead {
    /// Up to `limit` live rows of a partition of `table` from `offset` on (the table's columns, then
    /// `_commit_timestamp` and `_offset`): from a kept run, or from a run read now. Once a
    /// Fetch has taken half a run, the next run is read in the background, so that a consumer
    /// reading on finds it ready.
    pub async fn rows(
        self: &Arc<Self>,
        node: &Arc<Node>,
        (table, partition): (&Arc<TableDef>, u16),
        offset: u64,
        limit: usize,
    ) -> pondra_cluster::Result<Vec<RecordBatch>> {
        let place = (table.id, partition, offset);
        let (rows, next) = loop {
            if let Some(found) = self.rows_from((table, partition), offset, limit) {
                break found;
            }
            // The run being read in the background is waited for, not read twice.
            let read = self
                .reading
                .lock()
                .expect("read-ahead lock")
                .get(&place)
                .cloned();
            match read {
                Some(read) => {
                    let mut done = read.subscribe();
                    if !*done.borrow_and_update() {
                        let _ = done.changed().await;
                    }
                }
                None => {
                    self.read_run(node, (table, partition), offset).await?;
                    break self
                        .rows_from((table, partition), offset, limit)
                        .unwrap_or_default();
                }
            }
        };
        if let Some(next) = next {
            self.read_next(node, (table, partition), next);
        }
        Ok(rows)
    }

    /// Reads the run from `offset` and keeps it.
    async fn read_run(
        &self,
        node: &Node,
        (table, partition): (&Arc<TableDef>, u16),
        offset: u64,
    ) -> pondra_cluster::Result<()> {
        let rows = node
            .rows_from_offset(table, partition, offset, RUN_ROWS)
            .await?;
        if let Some(last) = last_offset(&rows, table.columns.len() + 1) {
            self.keep((table, partition), offset, last + 1, rows);
        }
        Ok(())
    }

    /// Reads the run from `offset` in the background, unless it is being read or the table
    /// has no rows there yet.
    fn read_next(
        self: &Arc<Self>,
        node: &Arc<Node>,
        (table, partition): (&Arc<TableDef>, u16),
        offset: u64,
    ) {
        if offset >= pondra_cluster::next_offset(&node.snapshot(), table, partition) {
            return;
        }
        let place = (table.id, partition, offset);
        let done = Arc::new(tokio::sync::watch::channel(false).0);
        {
            let mut reading = self.reading.lock().expect("read-ahead lock");
            if reading.contains_key(&place) {
                return;
            }
            reading.insert(place, done.clone());
        }
        let (ahead, node, table) = (self.clone(), node.clone(), table.clone());
        tokio::spawn(async move {
            if let Err(e) = ahead.read_run(&node, (&table, partition), offset).await {
                eprintln!("kafka: reading {} ahead failed: {e}", table.name);
            }
            ahead
                .reading
                .lock()
                .expect("read-ahead lock")
                .remove(&place);
            done.send_replace(true);
        });
    }

    /// The rows of a partition of `table` from `offset` on that a kept run holds (none when no run holds
    /// `offset`), at most `limit`; with the offset the next run starts at once these rows
    /// reach past the middle of theirs and no kept run starts there.
    fn rows_from(
        &self,
        (table, partition): (&TableDef, u16),
        offset: u64,
        limit: usize,
    ) -> Option<(Vec<RecordBatch>, Option<u64>)> {
        let mut runs = self.runs.lock().expect("read-ahead lock");
        let holds = |run: &Run, offset: u64| {
            run.table.as_ref() == table
                && run.partition == partition
                && (run.from..run.until).contains(&offset)
        };
        let at = runs.iter().position(|run| holds(run, offset))?;
        let run = runs.remove(at).expect("found");
        let offset_column = table.columns.len() + 1;
        let rows = slice_from(&run.rows, offset_column, offset, limit);
        let reached = last_offset(&rows, offset_column).unwrap_or(offset);
        let past_middle = reached >= run.from + (run.until - run.from) / 2;
        let next_kept = runs.iter().any(|r| holds(r, run.until));
        let next = (past_middle && !next_kept).then_some(run.until);
        runs.push_back(run);
        Some((rows, next))
    }

    /// Keeps the rows read from `from` on: those with offsets in `from..until`.
    fn keep(
        &self,
        (table, partition): (&Arc<TableDef>, u16),
        from: u64,
        until: u64,
        rows: Vec<RecordBatch>,
    ) {
        if until <= from {
            return;
        }
        let bytes = rows.iter().map(RecordBatch::get_array_memory_size).sum();
        if bytes > KEPT_BYTES / 2 {
            return;
        }
        let mut runs = self.runs.lock().expect("read-ahead lock");
        // A run of the same rows, or of a table defined otherwise since, is replaced.
        runs.retain(|run| {
            let overlaps = run.partition == partition && run.from < until && from < run.until;
            run.table.id != table.id || (run.table == *table && !overlaps)
        });
        runs.push_back(Run {
            table: table.clone(),
            partition,
            from,
            until,
            rows,
            bytes,
        });
        while runs.len() > KEPT_RUNS || runs.iter().map(|r| r.bytes).sum::<usize>() > KEPT_BYTES {
            runs.pop_front();
        }
    }
}

/// The offset of the last of `rows`.
fn last_offset(rows: &[RecordBatch], offset_column: usize) -> Option<u64> {
    let batch = rows.iter().rev().find(|b| b.num_rows() > 0)?;
    let offsets = batch.column(offset_column).as_primitive::<Int64Type>();
    Some(offsets.value(batch.num_rows() - 1) as u64)
}

/// Up to `limit` rows of `rows` (ordered by the offsets in column `offset_column`) from
/// `offset` on, sliced without copying.
fn slice_from(
    rows: &[RecordBatch],
    offset_column: usize,
    offset: u64,
    limit: usize,
) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut left = limit;
    for batch in rows {
        if left == 0 {
            break;
        }
        let offsets = batch.column(offset_column).as_primitive::<Int64Type>();
        let values = offsets.values();
        let start = values.partition_point(|&o| (o as u64) < offset);
        let taken = (batch.num_rows() - start).min(left);
        if taken > 0 {
            out.push(batch.slice(start, taken));
            left -= taken;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int64Array, TimestampMicrosecondArray};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use pondra_cluster::TableKind;

    use super::*;

    fn table(id: u64) -> Arc<TableDef> {
        let mut table = TableDef::new("t".into(), Vec::new(), TableKind::Table);
        table.id = id;
        Arc::new(table)
    }

    /// Rows of a table without columns: the commit time and the offset.
    fn rows(offsets: &[i64]) -> RecordBatch {
        let time = DataType::Timestamp(TimeUnit::Microsecond, None);
        let schema = Schema::new(vec![
            Field::new("_commit_timestamp", time, true),
            Field::new("_offset", DataType::Int64, true),
        ]);
        let times = TimestampMicrosecondArray::from(vec![0; offsets.len()]);
        let offsets = Int64Array::from(offsets.to_vec());
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(times), Arc::new(offsets)]).unwrap()
    }

    fn offsets(rows: &[RecordBatch]) -> Vec<i64> {
        rows.iter()
            .flat_map(|b| b.column(1).as_primitive::<Int64Type>().values().to_vec())
            .collect()
    }

    #[test]
    fn runs_serve_the_offsets_they_cover_and_no_other() {
        let ahead = ReadAhead::default();
        let t = table(1);
        ahead.keep((&t, 0), 10, 20, vec![rows(&[10, 11, 13]), rows(&[15, 19])]);
        let (found, next) = ahead.rows_from((&t, 0), 12, 10).unwrap();
        assert_eq!((offsets(&found), next), (vec![13, 15, 19], Some(20)));
        let (found, next) = ahead.rows_from((&t, 0), 10, 2).unwrap();
        assert_eq!(
            (offsets(&found), next),
            (vec![10, 11], None),
            "not half way yet"
        );
        assert_eq!(offsets(&ahead.rows_from((&t, 0), 19, 5).unwrap().0), [19]);
        ahead.keep((&t, 0), 20, 30, vec![rows(&[25])]);
        assert_eq!(
            ahead.rows_from((&t, 0), 19, 5).unwrap().1,
            None,
            "the next run is kept"
        );
        assert!(ahead.rows_from((&t, 0), 30, 5).is_none(), "past the runs");
        assert!(ahead.rows_from((&t, 0), 9, 5).is_none(), "before the run");
        assert!(
            ahead.rows_from((&table(2), 0), 12, 5).is_none(),
            "another table"
        );
        let mut altered = (*t).clone();
        altered.name = "u".into();
        assert!(
            ahead.rows_from((&altered, 0), 12, 5).is_none(),
            "the table redefined"
        );
        assert!(
            ahead.rows_from((&t, 1), 12, 5).is_none(),
            "another partition"
        );
        ahead.keep((&t, 1), 10, 20, vec![rows(&[12])]);
        assert_eq!(offsets(&ahead.rows_from((&t, 1), 10, 5).unwrap().0), [12]);
        assert_eq!(
            offsets(&ahead.rows_from((&t, 0), 12, 5).unwrap().0),
            [13, 15, 19],
            "a partition's run leaves another's of the same offsets kept"
        );
    }
}
