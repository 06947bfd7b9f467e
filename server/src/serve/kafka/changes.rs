//! The `<table>.changes` topic (ADR 0077): a table's change feed as Debezium envelopes, read
//! by offset. An event's offset holds its commit version and its place in the commit
//! (`pondra_cluster::change_offset`), so offsets rise with commits but skip between them, as
//! a compacted Kafka topic's do.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::records::{Record, TimestampType};
use pondra_cluster::{
    ChangeEvent, ChangeEvents, ChangeOp, ChangeWindow, TableDef, change_offset, change_position,
    next_change_offset,
};

use super::KafkaDoor;
use super::fetch::{EARLIEST, LATEST, MAX_TIMESTAMP, encode_records, json_rows};
use crate::serve::literal::quote_literal;

/// Events read per Fetch at most, whatever bytes the client allows.
const MAX_EVENTS: usize = 10_000;

impl KafkaDoor {
    /// Reads the change events of `table` from `offset` into `data`, about `max_bytes` of
    /// them (at least one); returns their bytes.
    pub(super) async fn read_changes(
        &self,
        table: &Arc<TableDef>,
        offset: i64,
        max_bytes: usize,
        data: &mut PartitionData,
    ) -> Result<usize, ResponseError> {
        let next = next_change_offset(&self.node.snapshot());
        data.high_watermark = next;
        data.last_stable_offset = next;
        data.log_start_offset = 0;
        if !(0..=next).contains(&offset) {
            return Err(ResponseError::OffsetOutOfRange);
        }
        if offset == next {
            data.records = Some(Bytes::new());
            return Ok(0);
        }
        // About 200 bytes an envelope bounds the events read by the bytes asked.
        let limit = (max_bytes / 200).clamp(1, MAX_EVENTS);
        let events = self
            .change_events(table, offset as u64, limit)
            .await
            .map_err(|e| {
                eprintln!(
                    "kafka: a fetch of the changes of {} failed: {e}",
                    table.name
                );
                ResponseError::KafkaStorageError
            })?;
        if events.events.is_empty() {
            // Nothing from here to the latest commit: the consumer is at the end, which is
            // where it stands (the next commit's events come after it), so that it sees its
            // end of the topic rather than a gap it cannot cross.
            data.high_watermark = offset;
            data.last_stable_offset = offset;
        }
        let encoded = change_records(table, &events, max_bytes)
            .and_then(encode_records)
            .map_err(|e| {
                eprintln!(
                    "kafka: the changes of {} cannot be records: {e}",
                    table.name
                );
                ResponseError::UnknownServerError
            })?;
        let bytes = encoded.len();
        data.records = Some(encoded);
        Ok(bytes)
    }

    /// Up to `limit` events of `table`'s feed from `offset` on: from a window of commits kept
    /// from an earlier Fetch, or read now and kept (a commit's events are read once however
    /// many Fetches it takes to send them).
    async fn change_events(
        &self,
        table: &Arc<TableDef>,
        offset: u64,
        limit: usize,
    ) -> pondra_cluster::Result<ChangeEvents> {
        let mut at = offset;
        loop {
            let window = match self.change_windows.find(table, at) {
                Some(window) => window,
                None => match self.node.change_window(table, at).await? {
                    Some(window) => self.change_windows.keep(table, window),
                    None => {
                        let rows = RecordBatch::new_empty(table.arrow_schema());
                        let events = Vec::new();
                        return Ok(ChangeEvents { rows, events });
                    }
                },
            };
            let found = window.events_from(offset, limit)?;
            let latest = window.until >= next_change_offset(&self.node.snapshot()) as u64;
            if !found.events.is_empty() || latest {
                return Ok(found);
            }
            at = window.until;
        }
    }

    /// The offset (and its timestamp) ListOffsets answers for `timestamp` on a change feed:
    /// the first event of the first commit at or after the time.
    pub(super) async fn change_offset_at(
        &self,
        table: &TableDef,
        timestamp: i64,
    ) -> Result<(i64, i64), ResponseError> {
        let (filter, order) = match timestamp {
            LATEST => return Ok((next_change_offset(&self.node.snapshot()), -1)),
            EARLIEST => return Ok((0, -1)),
            MAX_TIMESTAMP => (String::new(), "DESC"),
            millis if millis >= 0 => (
                format!("WHERE epoch_ms(_commit_timestamp) >= {millis}"),
                "ASC",
            ),
            _ => return Err(ResponseError::InvalidRequest),
        };
        let sql = format!(
            "SELECT _commit_version, epoch_ms(_commit_timestamp) \
             FROM table_changes({}, 0) {filter} ORDER BY 1 {order} LIMIT 1",
            quote_literal(&table.name)
        );
        // No change at or after the time: Kafka answers -1.
        let first = self.first_two_integers(&sql, &table.name).await?;
        Ok(match first {
            Some((version, at)) => (change_offset(version as u64, 0).unwrap_or(-1), at),
            None => (-1, -1),
        })
    }
}

/// Change events as records, up to about `max_bytes` (at least one): the key columns of a
/// keyed table's row as a JSON object for the key (none without a key), and a Debezium
/// envelope for the value.
fn change_records(
    table: &TableDef,
    events: &ChangeEvents,
    max_bytes: usize,
) -> Result<Vec<Record>, String> {
    let rows = json_rows(&events.rows, true)?;
    let key_columns: Vec<usize> = table
        .key
        .iter()
        .filter_map(|k| table.columns.iter().position(|c| &c.name == k))
        .collect();
    let keys: Vec<Option<Bytes>> = match key_columns.is_empty() {
        true => vec![None; events.rows.num_rows()],
        false => json_rows(&project(&events.rows, &key_columns)?, true)?,
    };
    let name = serde_json::to_string(&table.name).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    let mut bytes = 0;
    for event in &events.events {
        let row_of = |row: Option<usize>| row.and_then(|r| rows[r].clone());
        let value = envelope(&name, event, row_of(event.before), row_of(event.after));
        let key = event.after.or(event.before).and_then(|r| keys[r].clone());
        bytes += value.len() + key.as_ref().map_or(0, Bytes::len) + 24;
        records.push(Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::LogAppend,
            offset: event.offset,
            sequence: -1,
            timestamp: event.committed_at_ms,
            key,
            value: Some(value),
            headers: Default::default(),
        });
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(records)
}

/// Windows of change events read for Fetch, the latest used last: a few, 256 MB at most.
#[derive(Default)]
pub(super) struct ChangeWindows {
    windows: Mutex<VecDeque<(Arc<TableDef>, Arc<ChangeWindow>)>>,
}

/// Bytes of change windows kept at most.
const KEPT_WINDOW_BYTES: usize = 256 << 20;

/// Change windows kept at most.
const KEPT_WINDOWS: usize = 8;

impl ChangeWindows {
    /// The window of `table`'s feed holding `offset`, if one is kept.
    fn find(&self, table: &TableDef, offset: u64) -> Option<Arc<ChangeWindow>> {
        let mut windows = self.windows.lock().expect("change windows lock");
        let at = windows
            .iter()
            .position(|(t, w)| t.as_ref() == table && w.covers(offset))?;
        let found = windows.remove(at).expect("found");
        let window = found.1.clone();
        windows.push_back(found);
        Some(window)
    }

    /// Keeps `window` (unless it is too large to) and returns it.
    fn keep(&self, table: &Arc<TableDef>, window: ChangeWindow) -> Arc<ChangeWindow> {
        let window = Arc::new(window);
        if window.memory_size() > KEPT_WINDOW_BYTES / 2 {
            return window;
        }
        let mut windows = self.windows.lock().expect("change windows lock");
        windows.retain(|(t, _)| t.id != table.id || t == table);
        windows.push_back((table.clone(), window.clone()));
        let size = |w: &VecDeque<(Arc<TableDef>, Arc<ChangeWindow>)>| {
            w.iter().map(|(_, w)| w.memory_size()).sum::<usize>()
        };
        while windows.len() > KEPT_WINDOWS || size(&windows) > KEPT_WINDOW_BYTES {
            windows.pop_front();
        }
        window
    }
}

fn project(rows: &RecordBatch, columns: &[usize]) -> Result<RecordBatch, String> {
    rows.project(columns).map_err(|e| e.to_string())
}

/// A Debezium change event's value without the schema envelope: `before`, `after`, `op`,
/// `ts_ms` and `source`, whose `commit_version` names the commit.
fn envelope(
    table_json: &str,
    event: &ChangeEvent,
    before: Option<Bytes>,
    after: Option<Bytes>,
) -> Bytes {
    let op = match event.op {
        ChangeOp::Insert => "c",
        ChangeOp::Update => "u",
        ChangeOp::Delete => "d",
    };
    let (version, at) = (event.version, event.committed_at_ms);
    let text = |row: &Option<Bytes>| {
        row.as_ref()
            .map_or("null".into(), |r| String::from_utf8_lossy(r).into_owned())
    };
    let (place_version, _) = change_position(event.offset as u64);
    debug_assert_eq!(place_version, version, "an event's offset holds its commit");
    let value = format!(
        "{{\"before\":{},\"after\":{},\"op\":\"{op}\",\"ts_ms\":{at},\"source\":\
         {{\"connector\":\"pondra\",\"name\":\"pondra\",\"db\":\"pondra\",\"table\":{table_json},\
         \"commit_version\":{version},\"ts_ms\":{at},\"snapshot\":\"false\"}}}}",
        text(&before),
        text(&after),
    );
    Bytes::from(value)
}
