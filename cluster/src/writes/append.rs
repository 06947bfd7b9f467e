//! Appends of rows that arrive as Arrow batches (HTTP, Flight SQL ingest, COPY FROM STDIN),
//! optionally exactly once per producer and sequence number.

use arrow::array::{RecordBatch, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use std::sync::Arc;

use pondra_catalog::{Change, SegmentPayload, Snapshot, TableDef, TableKind};

use crate::node::Node;
use crate::sessions::session::Session;
use crate::sessions::transaction::Transaction;
use crate::writes::producer_lines::{LinePlace, Stage};
use crate::{NodeError, Result};

/// What became of an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The rows were committed.
    Appended(usize),
    /// The producer had already appended this sequence number (or a later one): a retry,
    /// dropped.
    Duplicate,
}

impl Node {
    /// Appends `batches` to `table`. Columns are matched by name and cast to the table's
    /// types; columns the batches lack are NULL. With a producer and sequence number, the
    /// append happens at most once: the producer's last sequence number is committed with the
    /// rows, and an append whose number is not above it is dropped.
    ///
    /// Appends to a plain table prepare in parallel and may share a catalog commit (ADR
    /// 0046); the sequence number is checked again when the commit is made, against every
    /// commit before it and the appends earlier in the same one.
    pub async fn append(
        &self,
        table: &str,
        batches: &[RecordBatch],
        producer: Option<(&str, u64)>,
    ) -> Result<AppendOutcome> {
        Ok(self
            .append_written(table, 0, batches, producer, None)
            .await?
            .0)
    }

    /// As `append_at`, for an append that took its place in its producer's line (ADR 0078):
    /// its rows are prepared at once, and handed to the committer once the append before it
    /// in line has been; it commits only if the lake keeps the sequence it follows.
    pub async fn append_in_line(
        &self,
        table: &str,
        batches: &[RecordBatch],
        place: LinePlace,
    ) -> Result<(AppendOutcome, Option<u64>)> {
        let producer = Some((place.producer.clone(), place.sequence));
        self.append_to_partition(table, 0, batches, producer, Some(place))
            .await
    }

    /// As `append`, with the offset the rows appended start at (ADR 0077), when the node
    /// still holds their log segment after the commit.
    pub async fn append_at(
        &self,
        table: &str,
        batches: &[RecordBatch],
        producer: Option<(&str, u64)>,
    ) -> Result<(AppendOutcome, Option<u64>)> {
        let producer = producer.map(|(name, sequence)| (name.to_string(), sequence));
        self.append_to_partition(table, 0, batches, producer, None)
            .await
    }

    /// As `append_at`, to the table's Kafka partition `partition` (ADR 0079), in its
    /// producer's line when `place` is given (ADR 0078); the offset answered is the
    /// partition's.
    pub async fn append_to_partition(
        &self,
        table: &str,
        partition: u16,
        batches: &[RecordBatch],
        producer: Option<(String, u64)>,
        place: Option<LinePlace>,
    ) -> Result<(AppendOutcome, Option<u64>)> {
        let producer = producer.as_ref().map(|(name, seq)| (name.as_str(), *seq));
        let (outcome, payload) = self
            .append_written(table, partition, batches, producer, place.as_ref())
            .await?;
        Ok((outcome, self.offset_of_payload(table, payload)))
    }

    /// The offset within its partition the rows of the segment `payload` start at, while the
    /// node holds it.
    fn offset_of_payload(&self, table: &str, payload: Option<SegmentPayload>) -> Option<u64> {
        let table_id = self.snapshot().table(table)?.id;
        self.first_offset_of(table_id, &payload?)
    }

    /// As `append`, with the payload of the segment the rows were appended in.
    async fn append_written(
        &self,
        table: &str,
        partition: u16,
        batches: &[RecordBatch],
        producer: Option<(&str, u64)>,
        place: Option<&LinePlace>,
    ) -> Result<(AppendOutcome, Option<SegmentPayload>)> {
        let claim = match producer {
            Some(("", _)) => return Err(NodeError::Other("a producer needs a name".into())),
            Some((producer, sequence)) => Some((producer.to_string(), sequence)),
            None => None,
        };
        // In line, the append before is handed over first: waited for before the write lock
        // is taken, never while it is held (the one before may be waiting for that lock).
        if let Some(place) = place {
            place.wait_before(Stage::Handed).await;
        }
        let (_guard, snapshot) = self.lock_for_append(table).await;
        let table = appendable(&snapshot, table)?;
        let mut extra = Vec::new();
        if let Some((producer, sequence)) = &claim {
            // A retry of a committed append is dropped before its rows are encoded.
            if has_appended(&snapshot, producer, *sequence) {
                return Ok((AppendOutcome::Duplicate, None));
            }
            extra.push(Change::ProducerSequence {
                producer: producer.clone(),
                sequence: *sequence,
            });
        }
        let conformed = conform(&table, batches)?;
        let (rows, mut changes) = self
            .insert_changes(&snapshot, &table, &conformed, extra, false)
            .await?;
        if changes.is_empty() {
            return Ok((AppendOutcome::Appended(0), None));
        }
        to_partition(&mut changes, table.id, partition);
        let payload = appended_payload(&changes, table.id);
        let objects = crate::sessions::transaction::objects_named(&changes);
        let line = place.map(LinePlace::check);
        let committed = self
            .commit_or_delete_in_line(
                objects,
                move |latest| {
                    if let Some((producer, sequence)) = &claim
                        && has_appended(latest, producer, *sequence)
                    {
                        return Err(NotAppended::Duplicate);
                    }
                    if let Some(line) = &line {
                        line.fits(latest)?;
                    }
                    Ok(crate::sessions::transaction::rebase(
                        &snapshot, latest, changes,
                    )?)
                },
                place,
            )
            .await;
        match committed {
            Ok(_) => Ok((AppendOutcome::Appended(rows), payload)),
            Err(NotAppended::Duplicate) => Ok((AppendOutcome::Duplicate, None)),
            Err(NotAppended::Failed(e)) => Err(e),
        }
    }

    /// The first offset within its partition of the segment of `table_id` with `payload`, if
    /// the node holds it.
    fn first_offset_of(&self, table_id: u64, payload: &SegmentPayload) -> Option<u64> {
        let snapshot = self.snapshot();
        let segments = snapshot.segments(table_id);
        let segment = segments.iter().rev().find(|s| &s.payload == payload)?;
        Some(pondra_catalog::partition_offset(segment.first_offset?).1)
    }

    /// Deletes the rows `delete` (a DELETE statement on `table`) removes and upserts `upserts`
    /// into `table`, a keyed table, in one commit: a Kafka batch of upserts and tombstones
    /// (ADR 0077). With a producer and sequence number it happens at most once, as `append`.
    /// A commit that conflicts with one made since it was prepared is prepared again.
    /// Answers the offset the upserted rows start at, as `append_at`.
    /// The rows go to Kafka partition `partition` (ADR 0079).
    pub async fn upsert_and_delete(
        self: &Arc<Self>,
        (table, partition): (&str, u16),
        delete: Option<pondra_parser::ParsedStatement>,
        upserts: &[RecordBatch],
        producer: Option<(&str, u64)>,
        place: Option<LinePlace>,
    ) -> Result<(AppendOutcome, Option<u64>)> {
        const ATTEMPTS: usize = 5;
        let Some(delete) = delete else {
            let producer = producer.map(|(name, sequence)| (name.to_string(), sequence));
            return self
                .append_to_partition(table, partition, upserts, producer, place)
                .await;
        };
        // A transaction commits after the append before it in line is done (ADR 0078).
        if let Some(place) = &place {
            place.wait_before(Stage::Done).await;
            let snapshot = self.snapshot();
            if has_appended(&snapshot, &place.producer, place.sequence) {
                return Ok((AppendOutcome::Duplicate, None));
            }
            place.check().fits(&snapshot)?;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Some((producer, sequence)) = producer
                && has_appended(&self.snapshot(), producer, sequence)
            {
                return Ok((AppendOutcome::Duplicate, None));
            }
            let session = Session::new(None);
            let written = self
                .upserted_and_deleted(
                    &session,
                    (table, partition),
                    delete.clone(),
                    upserts,
                    producer,
                )
                .await;
            let (rows, payload) = match written {
                Ok(written) => written,
                Err(e) => {
                    let rollback = pondra_parser::parse_sql("ROLLBACK")?.remove(0);
                    self.execute_in(&session, rollback).await?;
                    return Err(e);
                }
            };
            let commit = pondra_parser::parse_sql("COMMIT")?.remove(0);
            match self.execute_in(&session, commit).await {
                Ok(_) => {
                    let table_id = self.snapshot().table(table).map(|t| t.id);
                    let offset = table_id
                        .zip(payload)
                        .and_then(|(id, payload)| self.first_offset_of(id, &payload));
                    return Ok((AppendOutcome::Appended(rows), offset));
                }
                Err(NodeError::SerializationFailure) if attempt < ATTEMPTS => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs a batch's deletes and upserts in `session`'s new transaction, with the producer's
    /// claim; returns the rows upserted and the payload of their segment.
    async fn upserted_and_deleted(
        self: &Arc<Self>,
        session: &Arc<Session>,
        (table, partition): (&str, u16),
        delete: pondra_parser::ParsedStatement,
        upserts: &[RecordBatch],
        producer: Option<(&str, u64)>,
    ) -> Result<(usize, Option<SegmentPayload>)> {
        let begin = pondra_parser::parse_sql("BEGIN")?.remove(0);
        self.execute_in(session, begin).await?;
        self.execute_in(session, delete).await?;
        let (rows, payload) = match upserts.iter().any(|b| b.num_rows() > 0) {
            true => {
                let rows = self
                    .append_in_partition(session, (table, partition), upserts)
                    .await?;
                // The segment the transaction appended last is the upserted rows'.
                let transaction = session
                    .take_transaction()
                    .expect("a transaction was begun in this session");
                let view = transaction.view().clone();
                session.put_transaction(Some(transaction));
                let id = view.table(table).map(|t| t.id);
                let last = id.and_then(|id| view.segments(id).last().map(|s| s.payload.clone()));
                (rows, last)
            }
            false => (0, None),
        };
        if let Some((producer, sequence)) = producer {
            let mut transaction = session
                .take_transaction()
                .expect("a transaction was begun in this session");
            let claim = vec![Change::ProducerSequence {
                producer: producer.to_string(),
                sequence,
            }];
            let pending = transaction.base().commit + 1;
            let view = self
                .catalog
                .with_changes(transaction.view(), claim.clone(), pending);
            let added = view.map(|view| transaction.add(claim, view));
            session.put_transaction(Some(transaction));
            added?;
        }
        Ok((rows, payload))
    }

    /// Appends `batches` to `table` as `append` does, in the session's transaction when one is
    /// open (COPY FROM STDIN inside BEGIN ... COMMIT); returns the rows appended.
    pub async fn append_in(
        &self,
        session: &Session,
        table: &str,
        batches: &[RecordBatch],
    ) -> Result<usize> {
        self.append_in_partition(session, (table, 0), batches).await
    }

    /// As `append_in`, to the table's Kafka partition `partition` (ADR 0079).
    async fn append_in_partition(
        &self,
        session: &Session,
        (table, partition): (&str, u16),
        batches: &[RecordBatch],
    ) -> Result<usize> {
        let Some(mut transaction) = session.take_transaction() else {
            let appended = self.append_written(table, partition, batches, None, None);
            return match appended.await?.0 {
                AppendOutcome::Appended(rows) => Ok(rows),
                AppendOutcome::Duplicate => Ok(0),
            };
        };
        let appended = match transaction.is_aborted() {
            true => Err(NodeError::Aborted),
            false => {
                self.append_to(&mut transaction, (table, partition), batches)
                    .await
            }
        };
        if appended.is_err() {
            transaction.abort();
        }
        session.put_transaction(Some(transaction));
        appended
    }

    async fn append_to(
        &self,
        transaction: &mut Transaction,
        (table, partition): (&str, u16),
        batches: &[RecordBatch],
    ) -> Result<usize> {
        let snapshot = transaction.view().clone();
        let table = appendable(&snapshot, table)?;
        let conformed = conform(&table, batches)?;
        let (rows, mut changes) = self
            .insert_changes(&snapshot, &table, &conformed, Vec::new(), false)
            .await?;
        to_partition(&mut changes, table.id, partition);
        let pending = transaction.base().commit + 1;
        let view = self
            .catalog
            .with_changes(&snapshot, changes.clone(), pending)?;
        transaction.add(changes, view);
        Ok(rows)
    }
}

/// Why an append's commit was not made.
enum NotAppended {
    /// Its producer's sequence number was committed first, by a retry of it or a later append.
    Duplicate,
    Failed(NodeError),
}

impl From<NodeError> for NotAppended {
    fn from(error: NodeError) -> Self {
        NotAppended::Failed(error)
    }
}

impl From<pondra_catalog::CatalogError> for NotAppended {
    fn from(error: pondra_catalog::CatalogError) -> Self {
        NotAppended::Failed(error.into())
    }
}

/// Sends the rows `changes` append to table `table_id` to Kafka partition `partition`.
fn to_partition(changes: &mut [Change], table_id: u64, partition: u16) {
    for change in changes {
        if let Change::AppendSegment {
            table_id: id,
            partition: to,
            ..
        } = change
            && *id == table_id
        {
            *to = partition;
        }
    }
}

/// The payload of the segment `changes` append to table `table_id`.
fn appended_payload(changes: &[Change], table_id: u64) -> Option<SegmentPayload> {
    changes.iter().find_map(|change| match change {
        Change::AppendSegment {
            table_id: id,
            payload,
            ..
        } if *id == table_id => Some(payload.clone()),
        _ => None,
    })
}

/// Whether `producer` has appended `sequence`, or a later number, by the commit of `snapshot`.
fn has_appended(snapshot: &Snapshot, producer: &str, sequence: u64) -> bool {
    snapshot
        .producers
        .get(producer)
        .is_some_and(|last| *last >= sequence)
}

/// The table named `name` of `snapshot`, if rows can be appended to it.
fn appendable(snapshot: &Snapshot, name: &str) -> Result<Arc<TableDef>> {
    let table = snapshot
        .table(name)
        .ok_or_else(|| pondra_catalog::CatalogError::TableNotFound(name.to_string()))?
        .clone();
    if !matches!(table.kind, TableKind::Table) {
        return Err(NodeError::Other(format!(
            "cannot append to {}: it is a view",
            table.name
        )));
    }
    Ok(table)
}

/// `batches` in the columns and types of `table`, matched by name.
fn conform(table: &TableDef, batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    let schema = table.arrow_schema();
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let mut conformed = Vec::with_capacity(batches.len());
    for batch in batches {
        for field in batch.schema().fields() {
            if schema.field_with_name(field.name()).is_err() {
                return Err(NodeError::Other(format!(
                    "table {} has no column named {}",
                    table.name,
                    field.name()
                )));
            }
        }
        let columns = schema
            .fields()
            .iter()
            .map(|field| match batch.column_by_name(field.name()) {
                Some(column) => cast_with_options(column, field.data_type(), &options)
                    .map_err(|e| NodeError::Other(format!("column {}: {e}", field.name()))),
                None => Ok(new_null_array(field.data_type(), batch.num_rows())),
            })
            .collect::<Result<Vec<_>>>()?;
        conformed.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(conformed)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use arrow::array::{Int32Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::node::NodeOptions;

    const PRODUCERS: usize = 8;
    const SEQUENCES: u64 = 20;
    const ROWS: usize = 10;

    fn rows(producer: usize, sequence: u64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("producer", DataType::Int32, true),
            Field::new("seq", DataType::Int64, true),
        ]));
        let producers = Int32Array::from(vec![producer as i32; ROWS]);
        let sequences = Int64Array::from(vec![sequence as i64; ROWS]);
        RecordBatch::try_new(schema, vec![Arc::new(producers), Arc::new(sequences)]).unwrap()
    }

    /// Producer `producer`'s appends, in order, each sent twice at once (a client that
    /// retried before its first attempt was answered); how many of each outcome it saw.
    async fn produce(node: Arc<Node>, producer: usize) -> (u64, u64) {
        let name = format!("producer-{producer}");
        let (mut appended, mut duplicates) = (0, 0);
        for sequence in 1..=SEQUENCES {
            let batch = [rows(producer, sequence)];
            let claim = Some((name.as_str(), sequence));
            let (first, retry) = tokio::join!(
                node.append("events", &batch, claim),
                node.append("events", &batch, claim),
            );
            for outcome in [first.unwrap(), retry.unwrap()] {
                match outcome {
                    AppendOutcome::Appended(rows) => {
                        assert_eq!(rows, ROWS);
                        appended += 1;
                    }
                    AppendOutcome::Duplicate => duplicates += 1,
                }
            }
        }
        (appended, duplicates)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_appends_with_sequence_numbers_commit_once_in_shared_commits() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        node.execute("CREATE TABLE events (producer INT, seq BIGINT)")
            .await
            .unwrap();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|producer| tokio::spawn(produce(node.clone(), producer)))
            .collect();
        for producer in producers {
            assert_eq!(producer.await.unwrap(), (SEQUENCES, SEQUENCES));
        }
        let snapshot = node.snapshot();
        let table = snapshot.table("events").unwrap();
        let segments = snapshot.segments(table.id);
        assert_eq!(segments.len(), PRODUCERS * SEQUENCES as usize);
        let commits: BTreeSet<u64> = segments.iter().map(|s| s.commit).collect();
        assert!(
            commits.len() < segments.len(),
            "appends share commits: {} commits for {} appends",
            commits.len(),
            segments.len()
        );
        node.close().await.unwrap();
        drop(node);

        // Reopened, each producer's rows are there once per sequence number.
        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        let results = node
            .execute("SELECT count(*), count(DISTINCT producer * 1000 + seq) FROM events")
            .await
            .unwrap();
        let crate::StatementResult::Rows { batches, .. } = &results[0] else {
            panic!("a query returns rows");
        };
        let expected = (PRODUCERS * SEQUENCES as usize) as i64;
        let column = |i: usize| {
            batches[0]
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .value(0)
        };
        assert_eq!((column(0), column(1)), (expected * ROWS as i64, expected));
        for producer in 0..PRODUCERS {
            let name = format!("producer-{producer}");
            assert_eq!(node.snapshot().producers.get(&name), Some(&SEQUENCES));
        }
        node.close().await.unwrap();
    }
}
