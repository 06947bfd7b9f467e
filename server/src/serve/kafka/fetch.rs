//! Fetch and ListOffsets (ADR 0077): a table's rows (or its change feed, `changes.rs`) as
//! records by offset, long-polling for new commits until `min_bytes` or `max_wait_ms`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Int64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
};
use bytes::{Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{
    FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use pondra_cluster::{PARTITION_SHIFT, TableDef, lake_offset, offset_bounds};

use super::KafkaDoor;
use super::topics::{Topic, is_raw, partition_in};

/// The longest a Fetch waits for rows (clients ask for 500 ms by default).
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Rows read per partition per Fetch at most, whatever bytes the client allows.
const MAX_ROWS: usize = 10_000;

/// Rows turned into records at once: a Fetch stops once it has the bytes asked.
const ENCODED_AT_ONCE: usize = 256;

/// ListOffsets' special timestamps: the next offset, the first, and the latest record's.
pub(super) const LATEST: i64 = -1;
pub(super) const EARLIEST: i64 = -2;
pub(super) const MAX_TIMESTAMP: i64 = -3;

impl KafkaDoor {
    /// Fetch: each partition's records from its offset, at most its bytes; waits for commits
    /// until the answer holds `min_bytes` or `max_wait_ms` has passed.
    pub(super) async fn fetch(&self, request: FetchRequest) -> FetchResponse {
        let wait = Duration::from_millis(request.max_wait_ms.max(0) as u64).min(MAX_WAIT);
        let deadline = Instant::now() + wait;
        let min_bytes = request.min_bytes.max(0) as usize;
        loop {
            let seen = self.node.snapshot().commit;
            let (response, bytes, failed) = self.fetch_once(&request).await;
            let now = Instant::now();
            if bytes >= min_bytes.max(1) || failed || now >= deadline {
                return response;
            }
            self.node.wait_for_commit_after(seen, deadline - now).await;
        }
    }

    /// One pass over a Fetch's partitions: the answer, its record bytes, and whether a
    /// partition failed.
    async fn fetch_once(&self, request: &FetchRequest) -> (FetchResponse, usize, bool) {
        let mut response = FetchResponse::default();
        let (mut total, mut failed) = (0, false);
        let mut budget = request.max_bytes.max(1) as usize;
        for topic in &request.topics {
            let name = topic.topic.0.as_str();
            let table = self.topic_for(name, false).await;
            let mut answer = FetchableTopicResponse::default();
            answer.topic = topic.topic.clone();
            for partition in &topic.partitions {
                let mut data = PartitionData::default();
                data.partition_index = partition.partition;
                data.high_watermark = -1;
                data.last_stable_offset = -1;
                data.log_start_offset = -1;
                data.aborted_transactions = Some(Vec::new());
                let index = partition.partition;
                let read = match &table {
                    Err((error, _)) => Err(*error),
                    Ok(topic) => match partition_in(topic.partitions(), index) {
                        Err(error) => Err(error),
                        Ok(at) => {
                            let limit = (partition.partition_max_bytes.max(1) as usize).min(budget);
                            let offset = partition.fetch_offset;
                            match topic {
                                Topic::Rows(table) => {
                                    let read =
                                        self.read_partition((table, at), offset, limit, &mut data);
                                    read.await
                                }
                                Topic::Changes(table) => {
                                    self.read_changes(table, offset, limit, &mut data).await
                                }
                            }
                        }
                    },
                };
                match read {
                    Ok(bytes) => {
                        total += bytes;
                        budget = budget.saturating_sub(bytes).max(1);
                    }
                    Err(error) => {
                        data.error_code = error.code();
                        failed = true;
                    }
                }
                answer.partitions.push(data);
            }
            response.responses.push(answer);
        }
        (response, total, failed)
    }

    /// Reads a partition's records from `offset` into `data`, about `max_bytes` of them (at
    /// least one); returns their bytes.
    async fn read_partition(
        &self,
        (table, partition): (&Arc<TableDef>, u16),
        offset: i64,
        max_bytes: usize,
        data: &mut PartitionData,
    ) -> Result<usize, ResponseError> {
        let bounds = offset_bounds(&self.node.snapshot(), table, partition);
        data.high_watermark = bounds.next as i64;
        data.last_stable_offset = bounds.next as i64;
        data.log_start_offset = bounds.earliest as i64;
        let Ok(offset) = u64::try_from(offset) else {
            return Err(ResponseError::OffsetOutOfRange);
        };
        if offset < bounds.earliest || offset > bounds.next {
            return Err(ResponseError::OffsetOutOfRange);
        }
        if offset == bounds.next {
            data.records = Some(Bytes::new());
            return Ok(0);
        }
        // About 100 bytes a record: the rows read are bounded by the bytes asked (a Fetch of
        // smaller records returns fewer than it could, and the client asks again).
        let limit = (max_bytes / 100).clamp(1, MAX_ROWS);
        let rows = self
            .read_ahead
            .rows(&self.node, (table, partition), offset, limit)
            .await
            .map_err(|e| {
                eprintln!("kafka: a fetch of {} failed: {e}", table.name);
                ResponseError::KafkaStorageError
            })?;
        let records = records_of(table, &rows, max_bytes).map_err(|e| {
            eprintln!("kafka: the rows of {} cannot be records: {e}", table.name);
            ResponseError::UnknownServerError
        })?;
        let encoded = encode_records(records).map_err(|e| {
            eprintln!("kafka: cannot encode the records of {}: {e}", table.name);
            ResponseError::UnknownServerError
        })?;
        let bytes = encoded.len();
        data.records = Some(encoded);
        Ok(bytes)
    }

    /// ListOffsets: each partition's earliest or next offset, or the first offset committed
    /// at or after a time.
    pub(super) async fn list_offsets(&self, request: ListOffsetsRequest) -> ListOffsetsResponse {
        let mut response = ListOffsetsResponse::default();
        for topic in request.topics {
            let table = self.topic_for(topic.name.0.as_str(), false).await;
            let mut answer = ListOffsetsTopicResponse::default();
            answer.name = topic.name.clone();
            for partition in topic.partitions {
                let mut data = ListOffsetsPartitionResponse::default();
                data.partition_index = partition.partition_index;
                data.timestamp = -1;
                data.offset = -1;
                let index = partition.partition_index;
                let at = |topic: &Topic| partition_in(topic.partitions(), index);
                let found = match &table {
                    Err((error, _)) => Err(*error),
                    Ok(topic) => match (at(topic), topic) {
                        (Err(error), _) => Err(error),
                        (Ok(at), Topic::Rows(table)) => {
                            self.offset_at((table, at), partition.timestamp).await
                        }
                        (Ok(_), Topic::Changes(table)) => {
                            self.change_offset_at(table, partition.timestamp).await
                        }
                    },
                };
                match found {
                    Ok((offset, timestamp)) => {
                        data.offset = offset;
                        data.timestamp = timestamp;
                    }
                    Err(error) => data.error_code = error.code(),
                }
                answer.partitions.push(data);
            }
            response.topics.push(answer);
        }
        response
    }

    /// The offset (and its record's timestamp, -1 when not a record's) ListOffsets answers
    /// for `timestamp`.
    async fn offset_at(
        &self,
        (table, partition): (&TableDef, u16),
        timestamp: i64,
    ) -> Result<(i64, i64), ResponseError> {
        let bounds = offset_bounds(&self.node.snapshot(), table, partition);
        match timestamp {
            LATEST => Ok((bounds.next as i64, -1)),
            EARLIEST => Ok((bounds.earliest as i64, -1)),
            MAX_TIMESTAMP => Ok((bounds.next as i64 - 1, -1)),
            millis if millis >= 0 => {
                // The partition's rows: lake offsets from its base (ADR 0079).
                let base = lake_offset(partition, 0);
                let until = lake_offset(partition, 0) + (1 << PARTITION_SHIFT);
                let sql = format!(
                    "SELECT min(_offset) - {base}, min(epoch_ms(_commit_timestamp)) FROM {} \
                     WHERE epoch_ms(_commit_timestamp) >= {millis} \
                     AND _offset >= {base} AND _offset < {until}",
                    pondra_cluster::quoted_name(&table.name)
                );
                // No record at or after the time: Kafka answers -1.
                let first = self.first_two_integers(&sql, &table.name).await?;
                Ok(first.unwrap_or((-1, -1)))
            }
            _ => Err(ResponseError::InvalidRequest),
        }
    }
}

/// Records (in offset order) as record batches, one for each run whose offsets lie within
/// an `i32` of its first: the sequence a batch of no producer carries is set so that the
/// encoder keeps the run in one batch (it starts a batch where offset less sequence changes).
pub(super) fn encode_records(mut records: Vec<Record>) -> Result<Bytes, String> {
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    let payload: usize = records
        .iter()
        .map(|r| r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len))
        .sum();
    let mut encoded = BytesMut::with_capacity(payload + 32 * records.len() + 128);
    let mut start = 0;
    while start < records.len() {
        let base = records[start].offset;
        let mut end = start;
        while end < records.len() && records[end].offset - base <= i64::from(i32::MAX) {
            debug_assert!(records[end].offset >= base, "records in offset order");
            records[end].sequence = (records[end].offset - base) as i32;
            end += 1;
        }
        RecordBatchEncoder::encode(&mut encoded, &records[start..end], &options)
            .map_err(|e| e.to_string())?;
        start = end;
    }
    Ok(encoded.freeze())
}

impl KafkaDoor {
    /// The first row of `sql`'s answer as two integers, none when it has no row or a NULL
    /// (a query of ListOffsets by time on `table`).
    pub(super) async fn first_two_integers(
        &self,
        sql: &str,
        table: &str,
    ) -> Result<Option<(i64, i64)>, ResponseError> {
        let found = self.node.execute(sql).await.map_err(|e| {
            eprintln!("kafka: an offset of {table} by time: {e}");
            ResponseError::KafkaStorageError
        })?;
        let first = match found.first() {
            Some(pondra_cluster::StatementResult::Rows { batches, .. }) => {
                batches.iter().find(|b| b.num_rows() > 0).cloned()
            }
            _ => None,
        };
        Ok(first.and_then(|b| int_at(&b, 0).zip(int_at(&b, 1))))
    }
}

/// The value of a one-row answer's integer column, if not NULL.
fn int_at(batch: &RecordBatch, column: usize) -> Option<i64> {
    let values = arrow::compute::cast(batch.column(column), &DataType::Int64).ok()?;
    let values = values.as_primitive::<Int64Type>();
    values.is_valid(0).then(|| values.value(0))
}

/// Rows read by offset (the table's columns, then the commit time and the offset) as
/// records, up to about `max_bytes` (at least one): a raw table's key, value and timestamp;
/// otherwise a keyed table's key columns as a JSON object for the key, the row as a JSON
/// object for the value, and the commit's time.
fn records_of(
    table: &TableDef,
    rows: &[RecordBatch],
    max_bytes: usize,
) -> Result<Vec<Record>, String> {
    let width = table.columns.len();
    let raw = is_raw(table);
    let key_columns: Vec<usize> = table
        .key
        .iter()
        .filter_map(|k| table.columns.iter().position(|c| &c.name == k))
        .collect();
    let mut records = Vec::new();
    let mut bytes = 0;
    // Encoded a slice at a time, so that rows past the bytes asked are not encoded.
    let slices = rows.iter().flat_map(|batch| {
        (0..batch.num_rows())
            .step_by(ENCODED_AT_ONCE)
            .map(move |start| batch.slice(start, ENCODED_AT_ONCE.min(batch.num_rows() - start)))
    });
    for batch in slices {
        let batch = &batch;
        let offsets = batch.column(width + 1).as_primitive::<Int64Type>();
        let committed = arrow::compute::cast(
            batch.column(width),
            &DataType::Timestamp(TimeUnit::Microsecond, None),
        )
        .map_err(|e| e.to_string())?;
        let committed = committed.as_primitive::<TimestampMicrosecondType>();
        let table_rows = batch
            .project(&(0..width).collect::<Vec<_>>())
            .map_err(|e| e.to_string())?;
        let (keys, values, times) = match raw {
            true => raw_parts(&table_rows)?,
            false => (
                json_rows(
                    &table_rows
                        .project(&key_columns)
                        .map_err(|e| e.to_string())?,
                    !key_columns.is_empty(),
                )?,
                json_rows(&table_rows, true)?,
                None,
            ),
        };
        for row in 0..batch.num_rows() {
            let timestamp = match &times {
                Some(times) if times.is_valid(row) => times.value(row),
                _ => committed.value(row) / 1000,
            };
            let record = Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: offsets.value(row),
                sequence: -1,
                timestamp,
                key: keys[row].clone(),
                value: values[row].clone(),
                headers: Default::default(),
            };
            bytes += record.key.as_ref().map_or(0, Bytes::len)
                + record.value.as_ref().map_or(0, Bytes::len)
                + 24;
            records.push(record);
            if bytes >= max_bytes {
                return Ok(records);
            }
        }
    }
    Ok(records)
}

type Parts = (
    Vec<Option<Bytes>>,
    Vec<Option<Bytes>>,
    Option<arrow::array::TimestampMillisecondArray>,
);

/// A raw table's key and value texts and its records' timestamps.
fn raw_parts(rows: &RecordBatch) -> Result<Parts, String> {
    // Each value a slice of the column's bytes, not a copy of them.
    let text = |column: usize| -> Vec<Option<Bytes>> {
        let values = rows.column(column).as_string::<i32>();
        let bytes = Bytes::from_owner(values.values().clone());
        let offsets = values.value_offsets();
        (0..values.len())
            .map(|i| {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                values.is_valid(i).then(|| bytes.slice(start..end))
            })
            .collect()
    };
    let times = arrow::compute::cast(
        rows.column(2),
        &DataType::Timestamp(TimeUnit::Millisecond, None),
    )
    .map_err(|e| e.to_string())?;
    let times = times.as_primitive::<TimestampMillisecondType>().clone();
    Ok((text(0), text(1), Some(times)))
}

/// Each row of `rows` as a JSON object of its columns; none when not `wanted`.
pub(super) fn json_rows(rows: &RecordBatch, wanted: bool) -> Result<Vec<Option<Bytes>>, String> {
    if !wanted {
        return Ok(vec![None; rows.num_rows()]);
    }
    let mut out = Vec::new();
    let mut writer = arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow::json::writer::LineDelimited>(&mut out);
    writer.write(rows).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    drop(writer);
    // Each line a slice of the text written, not a copy of it.
    let out = Bytes::from(out);
    let mut lines = Vec::with_capacity(rows.num_rows());
    let mut start = 0;
    for end in newlines(&out) {
        if end > start {
            lines.push(Some(out.slice(start..end)));
        }
        start = end + 1;
    }
    if lines.len() != rows.num_rows() {
        return Err(format!(
            "{} JSON lines for {} rows",
            lines.len(),
            rows.num_rows()
        ));
    }
    Ok(lines)
}

/// The places of the newlines in `text`.
fn newlines(text: &[u8]) -> impl Iterator<Item = usize> + '_ {
    text.iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
}
