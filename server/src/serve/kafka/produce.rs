//! Produce and InitProducerId (ADR 0077): each partition's batches written to its table in one
//! commit each, exactly once per idempotent producer's sequence numbers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse, ProducerId,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use pondra_cluster::{LinePlace, NodeError, TableDef};

use super::batches::{BatchHeader, check_batches};
use super::rows::{BadRecord, Writes, writes};
use super::topics::{Refusal, partition_in};
use super::{KafkaDoor, Release};

/// How long a node that follows waits for a producer's last commits before it calls a batch
/// that seems to skip sequence numbers a gap.
const GAP_PATIENCE: Duration = Duration::from_secs(3);

/// InitProducerId: a producer id unique across the cluster's nodes and restarts: the wall
/// clock's milliseconds above 16 random bits. Transactions are refused by name.
pub(super) fn init_producer_id(request: InitProducerIdRequest) -> InitProducerIdResponse {
    let mut response = InitProducerIdResponse::default();
    if request
        .transactional_id
        .as_ref()
        .is_some_and(|id| !id.0.is_empty())
    {
        response.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        response.producer_id = ProducerId(-1);
        response.producer_epoch = -1;
        return response;
    }
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let random = i64::from(rand::random::<u16>());
    response.producer_id = ProducerId(((millis << 16) | random) & i64::MAX);
    response.producer_epoch = 0;
    response
}

/// What became of one partition's records.
struct Produced {
    error: Option<Refusal>,
    bad_record: Option<usize>,
    /// The offset the records written start at, when known (not for a retry's).
    base_offset: Option<u64>,
}

impl Produced {
    fn ok(base_offset: Option<u64>) -> Produced {
        Produced {
            error: None,
            bad_record: None,
            base_offset,
        }
    }

    fn refused(error: ResponseError, message: impl Into<String>) -> Produced {
        Produced {
            error: Some((error, message.into())),
            bad_record: None,
            base_offset: None,
        }
    }
}

/// A produce request decoded ahead of its turn to be written: each partition's batches as
/// the rows they write to the table they go to, when that table already exists.
pub(super) struct PreparedProduce {
    pub acks: i16,
    topics: Vec<(TopicName, Vec<PreparedPartition>)>,
}

struct PreparedPartition {
    index: i32,
    records: Bytes,
    /// The batches decoded for the table with this id; none when its table did not exist yet
    /// or the partition is refused.
    decoded: Option<(u64, Result<Vec<DecodedBatch>, Produced>)>,
}

/// One record batch: its header and what its records write (or the record that cannot be).
type DecodedBatch = (BatchHeader, Result<Writes, BadRecord>);

impl KafkaDoor {
    /// Decodes a produce request's records against the tables as they stand: the work that
    /// may run while the connection's earlier requests are written.
    pub(super) fn prepare_produce(&self, request: ProduceRequest) -> PreparedProduce {
        let snapshot = self.node.snapshot();
        let topics = request
            .topic_data
            .into_iter()
            .map(|topic| {
                let table = snapshot.table(topic.name.0.as_str()).cloned();
                let partitions = topic
                    .partition_data
                    .into_iter()
                    .map(|partition| {
                        let records = partition.records.unwrap_or_default();
                        let decoded = match &table {
                            Some(table)
                                if partition_in(table.partitions, partition.index).is_ok() =>
                            {
                                Some((table.id, decode_partition(table, &records)))
                            }
                            _ => None,
                        };
                        PreparedPartition {
                            index: partition.index,
                            records,
                            decoded,
                        }
                    })
                    .collect();
                (topic.name, partitions)
            })
            .collect();
        PreparedProduce {
            acks: request.acks,
            topics,
        }
    }

    /// Produce: each partition's records written, in the order the request lists them. The
    /// request's last batch lets the next request go once it is in its producer's line.
    pub(super) async fn produce(
        &self,
        prepared: PreparedProduce,
        release: &mut Release,
    ) -> ProduceResponse {
        let mut response = ProduceResponse::default();
        let last_topic = prepared.topics.len().saturating_sub(1);
        for (at, (topic, partitions)) in prepared.topics.into_iter().enumerate() {
            let last_partition = partitions.len().saturating_sub(1);
            let name = topic.0.as_str().to_string();
            let table = self.table_for(&name, self.options.auto_create).await;
            let mut answer = TopicProduceResponse::default();
            answer.name = topic;
            for (place, partition) in partitions.into_iter().enumerate() {
                let last = at == last_topic && place == last_partition;
                let release = last.then_some(&mut *release);
                let index = partition.index;
                let produced = match &table {
                    Err((error, message)) => Produced::refused(*error, message.clone()),
                    Ok(table) => match partition_in(table.partitions, index) {
                        Err(error) => Produced::refused(
                            error,
                            format!("{name} has {} partitions: no {index}", table.partitions),
                        ),
                        Ok(at) => {
                            // Decoded again when the table was created, or replaced, since.
                            let batches = match partition.decoded {
                                Some((id, batches)) if id == table.id => batches,
                                _ => decode_partition(table, &partition.records),
                            };
                            self.produce_partition((table, at), batches, release).await
                        }
                    },
                };
                if let Some((error, message)) = &produced.error {
                    eprintln!("kafka: a produce to {name} refused ({error:?}): {message}");
                }
                answer
                    .partition_responses
                    .push(partition_response(partition.index, produced));
            }
            response.responses.push(answer);
        }
        response
    }

    /// Writes one partition's batches to the table, each exactly once.
    async fn produce_partition(
        &self,
        table: (&TableDef, u16),
        batches: Result<Vec<DecodedBatch>, Produced>,
        mut release: Option<&mut Release>,
    ) -> Produced {
        let batches = match batches {
            Ok(batches) => batches,
            Err(refused) => return refused,
        };
        let mut base_offset = None;
        let last = batches.len().saturating_sub(1);
        for (at, (header, writes)) in batches.into_iter().enumerate() {
            let release = release.as_deref_mut().filter(|_| at == last);
            let produced = self.produce_batch(table, &header, writes, release).await;
            if produced.error.is_some() {
                return produced;
            }
            base_offset = base_offset.or(produced.base_offset);
        }
        Produced::ok(base_offset)
    }

    /// Writes one batch to a partition of a table, unless its producer wrote it already.
    async fn produce_batch(
        &self,
        (table, partition): (&TableDef, u16),
        header: &BatchHeader,
        writes: Result<Writes, BadRecord>,
        release: Option<&mut Release>,
    ) -> Produced {
        let (claim, place) = match self.claim((table, partition), header).await {
            Ok(Claim::None) => (None, None),
            Ok(Claim::Line(place)) => {
                let claim = (place.producer().to_string(), place.sequence());
                (Some(claim), Some(place))
            }
            Ok(Claim::Duplicate) => return Produced::ok(None),
            Err(refused) => return refused,
        };
        // In line: the next request's batches may take their places behind this one.
        if let (Some(release), Some(_)) = (release, &place) {
            release.now();
        }
        let writes = match writes {
            Ok(writes) => writes,
            Err(BadRecord { index, message }) => {
                return Produced {
                    error: Some((ResponseError::InvalidRecord, message)),
                    bad_record: Some(index),
                    base_offset: None,
                };
            }
        };
        let claim = claim
            .as_ref()
            .map(|(name, sequence)| (name.as_str(), *sequence));
        let written = self
            .node
            .upsert_and_delete(
                (&table.name, partition),
                writes.delete,
                &writes.rows,
                claim,
                place,
            )
            .await;
        match written {
            Ok((_, base_offset)) => Produced::ok(base_offset),
            Err(e) => {
                let error = match e {
                    NodeError::Storage(_) | NodeError::Internal(_) => {
                        ResponseError::KafkaStorageError
                    }
                    NodeError::SerializationFailure => ResponseError::KafkaStorageError,
                    NodeError::OutOfOrder(_) => ResponseError::OutOfOrderSequenceNumber,
                    _ => ResponseError::InvalidRecord,
                };
                Produced::refused(error, e.to_string())
            }
        }
    }

    /// An idempotent producer's claim for a batch: its place in the producer's line (ADR
    /// 0078), behind the batch it follows, which this node holds in line or the lake keeps.
    /// None for a producer that is not idempotent; `Duplicate` for a retry of a batch written
    /// already; OUT_OF_ORDER_SEQUENCE_NUMBER for a gap. A node that follows may not hold the
    /// producer's last commits yet (its previous batch went through another node): it waits
    /// for them a while before it calls a gap.
    /// Sequence numbers are a partition's, as in Kafka.
    async fn claim(
        &self,
        (table, partition): (&TableDef, u16),
        header: &BatchHeader,
    ) -> Result<Claim, Produced> {
        if header.producer_id < 0 {
            return Ok(Claim::None);
        }
        let name = format!(
            "kafka:{}:{}:{}:{partition}",
            header.producer_id, header.producer_epoch, table.name
        );
        let base = u64::try_from(header.base_sequence).map_err(|_| {
            Produced::refused(
                ResponseError::OutOfOrderSequenceNumber,
                format!("a negative sequence number {}", header.base_sequence),
            )
        })?;
        if header.records == 0 {
            return Err(Produced::refused(
                ResponseError::InvalidRecord,
                "an idempotent producer's batch of no records",
            ));
        }
        // The catalog keeps the number after the last sequence written; a batch starts there.
        let after = base + header.records as u64;
        let patience = match self.node.leads() {
            true => Duration::ZERO,
            false => GAP_PATIENCE,
        };
        match self.node.take_place(&name, after, base, patience).await {
            Ok(Some(place)) => Ok(Claim::Line(place)),
            Ok(None) => Ok(Claim::Duplicate),
            Err(e) => Err(Produced::refused(
                ResponseError::OutOfOrderSequenceNumber,
                e.to_string(),
            )),
        }
    }
}

/// What an idempotent producer's batch claims.
enum Claim {
    /// Not an idempotent producer's.
    None,
    /// A retry of a batch written already.
    Duplicate,
    /// Its place in its producer's line.
    Line(LinePlace),
}

/// A partition's record batches checked, decoded and turned into the rows they write to
/// `table`; a refusal for the partition when its bytes are not batches this door takes.
fn decode_partition(table: &TableDef, records: &Bytes) -> Result<Vec<DecodedBatch>, Produced> {
    let headers = check_batches(records)
        .map_err(|message| Produced::refused(ResponseError::CorruptMessage, message))?;
    if headers.iter().any(|h| h.transactional) {
        return Err(Produced::refused(
            ResponseError::TransactionalIdAuthorizationFailed,
            "transactional producers are not served (ADR 0077)",
        ));
    }
    let mut bytes = records.clone();
    let sets = RecordBatchDecoder::decode_all(&mut bytes)
        .map_err(|e| Produced::refused(ResponseError::CorruptMessage, e.to_string()))?;
    Ok(headers
        .into_iter()
        .zip(sets)
        .map(|(header, set)| (header, writes(table, &set.records)))
        .collect())
}

fn partition_response(index: i32, produced: Produced) -> PartitionProduceResponse {
    let mut response = PartitionProduceResponse::default();
    response.index = index;
    // -1 says "not known": a retry's, or rows tiered before their answer was made.
    response.base_offset = produced.base_offset.map_or(-1, |o| o as i64);
    response.log_append_time_ms = -1;
    response.log_start_offset = -1;
    if let Some((error, message)) = produced.error {
        response.error_code = error.code();
        if let Some(index) = produced.bad_record {
            let mut record = BatchIndexAndErrorMessage::default();
            record.batch_index = index as i32;
            record.batch_index_error_message = Some(StrBytes::from_string(message.clone()));
            response.record_errors.push(record);
        }
        response.error_message = Some(StrBytes::from_string(message));
    }
    response
}
