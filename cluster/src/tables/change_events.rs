//! A table's change feed as events by offset (ADR 0077): what Kafka's `<table>.changes` topic
//! serves. An event is an insertion, an update (its old and new row) or a deletion; its offset
//! is its commit version in the high bits and its place among the commit's events in the low
//! 32, so offsets follow commit order, and are dense within a commit but not across commits.
//!
//! A commit's events must keep their places for as long as the table lives, since consumers
//! commit offsets. A commit with a change record lists its events in the record's order,
//! which never changes. A commit without one only inserted rows, and those rows are found in
//! the table or, once deleted, in later commits' records: their set never changes but where
//! each is found does, so they are ordered by their values.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{Int64Type, TimestampMicrosecondType};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_catalog::{Snapshot, TableDef};

use crate::Result;
use crate::error::NodeError;
use crate::node::Node;

/// Bits of an event's offset that hold its place within its commit.
const PLACE_BITS: u32 = 32;

/// Versions read at first for one read of events, widened while they hold none.
const FIRST_WINDOW: u64 = 16;

/// What an event did to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeOp {
    Insert,
    Update,
    Delete,
}

/// One change of a table's feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeEvent {
    pub offset: i64,
    pub op: ChangeOp,
    /// The row before the change, an index into [`ChangeEvents::rows`]; none for an insert.
    pub before: Option<usize>,
    /// The row after the change; none for a delete.
    pub after: Option<usize>,
    pub version: u64,
    pub committed_at_ms: i64,
}

/// Events with the rows they name (the table's columns).
#[derive(Debug)]
pub struct ChangeEvents {
    pub rows: RecordBatch,
    pub events: Vec<ChangeEvent>,
}

/// The offset of the event at `place` in commit `version`: None past what an offset holds.
pub fn change_offset(version: u64, place: usize) -> Option<i64> {
    let place = u64::try_from(place).ok().filter(|&p| p < 1 << PLACE_BITS)?;
    let version = i64::try_from(version).ok().filter(|&v| v < 1 << 31)?;
    Some((version << PLACE_BITS) | place as i64)
}

/// The commit version and place an offset names.
pub fn change_position(offset: u64) -> (u64, usize) {
    (
        offset >> PLACE_BITS,
        (offset & ((1 << PLACE_BITS) - 1)) as usize,
    )
}

/// The offset the first event of the next commit will take (the topic's high watermark).
pub fn next_change_offset(snapshot: &Snapshot) -> i64 {
    change_offset(snapshot.commit + 1, 0).unwrap_or(i64::MAX)
}

/// The change events of a range of commits, whole: offsets `from..until` hold no others.
#[derive(Debug)]
pub struct ChangeWindow {
    pub from: u64,
    pub until: u64,
    /// The rows the events name (the table's columns).
    rows: RecordBatch,
    /// In offset order.
    events: Vec<ChangeEvent>,
}

impl ChangeWindow {
    /// Whether it holds every event at `offset`.
    pub fn covers(&self, offset: u64) -> bool {
        (self.from..self.until).contains(&offset)
    }

    /// Up to `limit` of its events from offset `from` on, with the rows they name.
    pub fn events_from(&self, from: u64, limit: usize) -> Result<ChangeEvents> {
        let start = self.events.partition_point(|e| (e.offset as u64) < from);
        let chosen = &self.events[start..(start + limit).min(self.events.len())];
        let mut wanted = Vec::new();
        let mut index_of = |row: Option<usize>| {
            row.map(|row| {
                wanted.push(row as u32);
                wanted.len() - 1
            })
        };
        let events = chosen
            .iter()
            .map(|event| ChangeEvent {
                before: index_of(event.before),
                after: index_of(event.after),
                ..event.clone()
            })
            .collect();
        let rows = take_record_batch(&self.rows, &UInt32Array::from(wanted))?;
        Ok(ChangeEvents { rows, events })
    }

    /// The memory its rows take.
    pub fn memory_size(&self) -> usize {
        self.rows.get_array_memory_size() + self.events.len() * size_of::<ChangeEvent>()
    }
}

impl Node {
    /// Up to `limit` events of `table`'s change feed from offset `from` on, in offset order:
    /// those of the first versions from `from`'s that hold any.
    pub async fn change_events(
        &self,
        table: &Arc<TableDef>,
        from: u64,
        limit: usize,
    ) -> Result<ChangeEvents> {
        assert!(limit > 0, "a read of change events asks for some");
        let mut at = from;
        loop {
            let Some(window) = self.change_window(table, at).await? else {
                let rows = RecordBatch::new_empty(table.arrow_schema());
                let events = Vec::new();
                return Ok(ChangeEvents { rows, events });
            };
            let found = window.events_from(from, limit)?;
            if !found.events.is_empty() {
                return Ok(found);
            }
            at = window.until;
        }
    }

    /// The events of the commits from `from`'s on, whole: of a window of commits widened
    /// while it holds none (each commit's events are fixed, so a window read once serves
    /// every read within it). None when no commit from there on changed the table.
    pub async fn change_window(
        &self,
        table: &Arc<TableDef>,
        from: u64,
    ) -> Result<Option<ChangeWindow>> {
        let snapshot = self.snapshot();
        let (first, _) = change_position(from);
        let (mut version, mut window) = (first, FIRST_WINDOW);
        while version <= snapshot.commit {
            let to = version.saturating_add(window - 1).min(snapshot.commit);
            let plan =
                pondra_planner::table_changes(&snapshot, table.clone(), (version, Some(to)))?;
            let rows = self.run_query(plan, snapshot.clone(), Vec::new()).await?;
            let recorded: HashSet<u64> = snapshot
                .change_records(table.id)
                .iter()
                .map(|r| r.commit)
                .filter(|c| (version..=to).contains(c))
                .collect();
            let (rows, events) = events_of(table, &rows, &recorded)?;
            if !events.is_empty() {
                let offset =
                    |version: u64| change_offset(version, 0).map_or(u64::MAX, |o| o as u64);
                return Ok(Some(ChangeWindow {
                    from: offset(first),
                    until: offset(to + 1),
                    rows,
                    events,
                }));
            }
            version = to + 1;
            window = window.saturating_mul(4);
        }
        Ok(None)
    }
}

/// The events of the `table_changes` rows of a range of commits (of which those in
/// `recorded` have change records), with the table's rows they name.
fn events_of(
    table: &TableDef,
    rows: &[RecordBatch],
    recorded: &HashSet<u64>,
) -> Result<(RecordBatch, Vec<ChangeEvent>)> {
    let width = table.columns.len();
    let schema = table.change_record_schema();
    let all = concat_batches(&schema, rows)?;
    let kinds = all.column(width).as_string::<i32>().clone();
    let versions = all.column(width + 1).as_primitive::<Int64Type>().clone();
    let times = all.column(width + 2);
    let times = times.as_primitive::<TimestampMicrosecondType>().clone();
    let table_rows = all.project(&(0..width).collect::<Vec<_>>())?;
    // Each version's rows, in the order the feed returned them.
    let mut by_version: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for row in 0..all.num_rows() {
        by_version
            .entry(versions.value(row) as u64)
            .or_default()
            .push(row);
    }
    let values = row_values(&table_rows, None)?;
    let keys = match table.key.is_empty() {
        true => None,
        false => Some(row_values(&table_rows, Some(table))?),
    };
    let mut events = Vec::new();
    for (version, mut members) in by_version {
        if !recorded.contains(&version) {
            members.sort_by(|&a, &b| values.row(a).cmp(&values.row(b)));
        }
        let committed_at_ms = times.value(members[0]) / 1000;
        let ops = pair_updates(&members, &kinds, keys.as_ref());
        for (place, (op, before, after)) in ops.into_iter().enumerate() {
            let offset = change_offset(version, place).ok_or_else(|| {
                NodeError::Other(format!(
                    "commit {version} of {} has more changes than a Kafka offset can number",
                    table.name
                ))
            })?;
            events.push(ChangeEvent {
                offset,
                op,
                before,
                after,
                version,
                committed_at_ms,
            });
        }
    }
    Ok((table_rows, events))
}

type Op = (ChangeOp, Option<usize>, Option<usize>);

/// A commit's rows, in order, as events: an update's new row takes the old row of its key (a
/// keyed table) or the old row at its place among the commit's (a table without a key, whose
/// statements record old and new rows alike in order), and stands where the new row stands.
fn pair_updates(
    members: &[usize],
    kinds: &arrow::array::StringArray,
    keys: Option<&Rows>,
) -> Vec<Op> {
    let mut by_key: HashMap<arrow::row::Row<'_>, VecDeque<usize>> = HashMap::new();
    let mut in_order: VecDeque<usize> = VecDeque::new();
    for &row in members {
        if kinds.value(row) == "update_preimage" {
            match keys {
                Some(keys) => by_key.entry(keys.row(row)).or_default().push_back(row),
                None => in_order.push_back(row),
            }
        }
    }
    let mut ops = Vec::with_capacity(members.len());
    for &row in members {
        match kinds.value(row) {
            "insert" => ops.push((ChangeOp::Insert, None, Some(row))),
            "delete" => ops.push((ChangeOp::Delete, Some(row), None)),
            "update_postimage" => {
                let before = match keys {
                    Some(keys) => by_key.get_mut(&keys.row(row)).and_then(VecDeque::pop_front),
                    None => in_order.pop_front(),
                };
                ops.push((ChangeOp::Update, before, Some(row)));
            }
            _ => {}
        }
    }
    // An old row no new row took (not written so by any statement) still tells its change.
    let unpaired = by_key.into_values().flatten().chain(in_order);
    let mut unpaired: Vec<usize> = unpaired.collect();
    unpaired.sort_unstable();
    ops.extend(
        unpaired
            .into_iter()
            .map(|r| (ChangeOp::Delete, Some(r), None)),
    );
    ops
}

/// Comparable forms of each row's values: of all the columns, or of `table`'s key columns.
fn row_values(rows: &RecordBatch, key_of: Option<&TableDef>) -> Result<Rows> {
    let columns: Vec<usize> = match key_of {
        None => (0..rows.num_columns()).collect(),
        Some(table) => table
            .key
            .iter()
            .filter_map(|k| table.columns.iter().position(|c| &c.name == k))
            .collect(),
    };
    let fields = columns
        .iter()
        .map(|&i| SortField::new(rows.column(i).data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let arrays: Vec<_> = columns.iter().map(|&i| rows.column(i).clone()).collect();
    Ok(converter.convert_columns(&arrays)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeOptions;

    #[test]
    fn offsets_hold_a_version_and_a_place() {
        let offset = change_offset(7, 3).unwrap();
        assert_eq!(change_position(offset as u64), (7, 3));
        assert!(change_offset(7, 1 << 32).is_none());
        assert!(change_offset(1 << 31, 0).is_none());
        assert!(change_offset(6, u32::MAX as usize).unwrap() < change_offset(7, 0).unwrap());
    }

    /// (op, before's v, after's v, offset) of the events read from `from`.
    async fn read(
        node: &Node,
        from: u64,
        limit: usize,
    ) -> Vec<(ChangeOp, Option<String>, Option<String>, i64)> {
        let table = node.snapshot().table("t").unwrap().clone();
        let found = node.change_events(&table, from, limit).await.unwrap();
        let values =
            arrow::compute::cast(found.rows.column(1), &arrow::datatypes::DataType::Utf8).unwrap();
        let values = values.as_string::<i32>();
        let text = |row: Option<usize>| row.map(|r| values.value(r).to_string());
        found
            .events
            .iter()
            .map(|e| (e.op, text(e.before), text(e.after), e.offset))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_keep_their_offsets_as_rows_move_between_table_and_records() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        node.execute("CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR)")
            .await
            .unwrap();
        node.execute("INSERT INTO t VALUES (3, 'c'), (1, 'a'), (2, 'b')")
            .await
            .unwrap();
        let all = read(&node, 0, 100).await;
        let inserted: Vec<_> = all.iter().map(|e| e.2.clone().unwrap()).collect();
        assert_eq!(
            inserted,
            ["a", "b", "c"],
            "a commit without a record, by value"
        );
        node.execute("UPDATE t SET v = 'bb' WHERE k = 2")
            .await
            .unwrap();
        node.execute("DELETE FROM t WHERE k = 1").await.unwrap();
        node.execute("CHECKPOINT").await.unwrap();
        let after = read(&node, 0, 100).await;
        assert_eq!(after[..3], all[..], "the deleted row keeps its place");
        let update = &after[3];
        assert_eq!(update.0, ChangeOp::Update);
        assert_eq!(
            (update.1.as_deref(), update.2.as_deref()),
            (Some("b"), Some("bb"))
        );
        assert_eq!(
            (after[4].0, after[4].1.as_deref()),
            (ChangeOp::Delete, Some("a"))
        );
        // A read from the middle of a commit, and one item at a time.
        assert_eq!(read(&node, after[1].3 as u64, 100).await, after[1..]);
        let mut from = 0;
        let mut one_by_one = Vec::new();
        while let Some(event) = read(&node, from, 1).await.pop() {
            from = event.3 as u64 + 1;
            one_by_one.push(event);
        }
        assert_eq!(one_by_one, after);
        let next = next_change_offset(&node.snapshot());
        assert!(after.iter().all(|e| e.3 < next));
        assert!(read(&node, next as u64, 10).await.is_empty());
    }
}
