//! Topics are tables (ADR 0077): Metadata lists the lake's tables, and each table's change
//! feed as `<table>.changes`, with the cluster's live nodes as brokers; CreateTopics or a
//! produce to an unknown topic creates a raw table.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, CreateTopicsResponse, MetadataRequest, MetadataResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use pondra_cluster::{MAX_PARTITIONS, SqlType, TableDef, TableKind, quoted_name};

use super::KafkaDoor;

/// How long a node may go unheard and still be listed as a broker.
const LIVE_MS: u64 = 10_000;

/// The longest topic name Kafka allows.
const MAX_TOPIC_NAME: usize = 249;

/// Why a topic cannot be written: the error code and the message for the client.
pub(super) type Refusal = (ResponseError, String);

/// The ending of the topic of a table's change feed.
const CHANGES_SUFFIX: &str = ".changes";

/// What a topic serves.
pub(super) enum Topic {
    /// A table's rows, by their offsets.
    Rows(Arc<TableDef>),
    /// A table's change feed as Debezium envelopes (read-only).
    Changes(Arc<TableDef>),
}

impl Topic {
    /// How many partitions the topic has: its table's (ADR 0079); a change feed has one.
    pub fn partitions(&self) -> u16 {
        match self {
            Topic::Rows(table) => table.partitions,
            Topic::Changes(_) => 1,
        }
    }
}

/// The partition `index` of a topic with `partitions`, or UNKNOWN_TOPIC_OR_PARTITION.
pub(super) fn partition_in(partitions: u16, index: i32) -> Result<u16, ResponseError> {
    u16::try_from(index)
        .ok()
        .filter(|&p| p < partitions)
        .ok_or(ResponseError::UnknownTopicOrPartition)
}

impl KafkaDoor {
    /// Metadata: the live nodes as brokers, and the topics asked for (every table when none
    /// are named), each with its partitions led by this node.
    pub(super) async fn metadata(
        &self,
        request: MetadataRequest,
        version: i16,
    ) -> MetadataResponse {
        let names: Option<Vec<String>> = request.topics.map(|topics| {
            topics
                .iter()
                .filter_map(|t| t.name.as_ref().map(|n| n.0.as_str().to_string()))
                .collect()
        });
        // Version 0 asks for every topic with an empty list; later versions with none.
        let names = names.filter(|n| version > 0 || !n.is_empty());
        // Before version 4 the broker's setting alone decides auto-creation.
        let create = self.options.auto_create && (version < 4 || request.allow_auto_topic_creation);
        let mut response = MetadataResponse::default();
        response.brokers = self.brokers();
        response.cluster_id = Some(StrBytes::from_static_str("pondra"));
        response.controller_id = BrokerId(self.own_broker_id());
        response.topics = match names {
            None => {
                let snapshot = self.node.snapshot();
                let tables = snapshot.tables.values().filter(|t| producible(t));
                let topics: Vec<(String, u16)> = tables
                    .flat_map(|t| {
                        let changes = format!("{}{CHANGES_SUFFIX}", t.name);
                        [(t.name.clone(), t.partitions), (changes, 1)]
                    })
                    .collect();
                let topic = |(name, partitions): &(String, u16)| self.topic(name, Ok(*partitions));
                topics.iter().map(topic).collect()
            }
            Some(names) => {
                let mut topics = Vec::with_capacity(names.len());
                for name in names {
                    let found = self.topic_for(&name, create).await;
                    let found = found.map(|topic| topic.partitions());
                    topics.push(self.topic(&name, found));
                }
                topics
            }
        };
        response
    }

    /// CreateTopics: a raw table for each topic, with the partitions asked (one by default).
    pub(super) async fn create_topics(&self, request: CreateTopicsRequest) -> CreateTopicsResponse {
        let mut response = CreateTopicsResponse::default();
        for topic in request.topics {
            let name = topic.name.0.as_str().to_string();
            let mut result = CreatableTopicResult::default();
            result.name = topic.name.clone();
            result.num_partitions = topic.num_partitions.max(1);
            result.replication_factor = 1;
            let partitions = match topic.num_partitions {
                -1 => Ok(1),
                n => u16::try_from(n)
                    .ok()
                    .filter(|n| (1..=MAX_PARTITIONS).contains(n))
                    .ok_or_else(|| {
                        let message =
                            format!("a topic has 1 to {MAX_PARTITIONS} partitions here, not {n}");
                        (ResponseError::InvalidPartitions, message)
                    }),
            };
            let refused = match partitions {
                Ok(partitions) => {
                    let created = self.create_raw(&name, partitions, request.validate_only);
                    created.await.err()
                }
                Err(refused) => Some(refused),
            };
            if let Some((error, message)) = refused {
                result.error_code = error.code();
                result.error_message = Some(StrBytes::from_string(message));
            }
            response.topics.push(result);
        }
        response
    }

    /// What a topic reads: a table's rows, or (`<table>.changes`, unless a table has that
    /// name) its change feed; the table is created as a raw one when it is missing and
    /// `create`.
    pub(super) async fn topic_for(&self, topic: &str, create: bool) -> Result<Topic, Refusal> {
        if self.node.snapshot().table(topic).is_none()
            && let Some(table) = self.changes_of(topic)
        {
            return Ok(Topic::Changes(table));
        }
        self.table_for(topic, create).await.map(Topic::Rows)
    }

    /// The table whose change feed `topic` names, if it names one.
    fn changes_of(&self, topic: &str) -> Option<Arc<TableDef>> {
        let name = topic.strip_suffix(CHANGES_SUFFIX)?;
        let snapshot = self.node.snapshot();
        snapshot.table(name).filter(|t| producible(t)).cloned()
    }

    /// The table a topic writes to, created as a raw table when it is missing and `create`.
    pub(super) async fn table_for(
        &self,
        topic: &str,
        create: bool,
    ) -> Result<Arc<TableDef>, Refusal> {
        if let Some(table) = self.node.snapshot().table(topic) {
            return match producible(table) {
                true => Ok(table.clone()),
                false => Err((
                    ResponseError::InvalidTopicException,
                    format!("{topic} is a view: the Kafka door serves tables"),
                )),
            };
        }
        if self.changes_of(topic).is_some() {
            return Err((
                ResponseError::TopicAuthorizationFailed,
                format!("{topic} is a table's change feed, which is read-only"),
            ));
        }
        if !create {
            return Err((
                ResponseError::UnknownTopicOrPartition,
                format!("no table named {topic}"),
            ));
        }
        match self.create_raw(topic, 1, false).await {
            Ok(()) | Err((ResponseError::TopicAlreadyExists, _)) => {}
            Err(refused) => return Err(refused),
        }
        self.node.snapshot().table(topic).cloned().ok_or_else(|| {
            let message = format!("the table {topic} was dropped as it was created");
            (ResponseError::UnknownTopicOrPartition, message)
        })
    }

    /// Creates the raw table `topic(key VARCHAR, value VARCHAR, timestamp TIMESTAMP)` with
    /// `partitions` Kafka partitions.
    async fn create_raw(
        &self,
        topic: &str,
        partitions: u16,
        validate_only: bool,
    ) -> Result<(), Refusal> {
        check_topic_name(topic)?;
        if self.changes_of(topic).is_some() {
            return Err((
                ResponseError::TopicAlreadyExists,
                format!("{topic} is a table's change feed"),
            ));
        }
        if self.node.snapshot().table(topic).is_some() {
            return Err((
                ResponseError::TopicAlreadyExists,
                format!("a table named {topic} exists"),
            ));
        }
        if validate_only {
            return Ok(());
        }
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {} (key VARCHAR, value VARCHAR, timestamp TIMESTAMP) \
             WITH (partitions = {partitions})",
            quoted_name(topic)
        );
        match self.node.execute(&sql).await {
            Ok(_) => Ok(()),
            Err(e) => Err((ResponseError::InvalidTopicException, e.to_string())),
        }
    }

    /// One topic of a Metadata answer: its partitions (as `found`), each led by this node, or
    /// its error.
    fn topic(&self, name: &str, found: Result<u16, Refusal>) -> MetadataResponseTopic {
        let mut topic = MetadataResponseTopic::default();
        topic.name = Some(TopicName(StrBytes::from_string(name.to_string())));
        let partitions = match found {
            Ok(partitions) => partitions,
            Err((error, _)) => {
                topic.error_code = error.code();
                return topic;
            }
        };
        let own = BrokerId(self.own_broker_id());
        topic.partitions = (0..partitions)
            .map(|index| {
                let mut partition = MetadataResponsePartition::default();
                partition.partition_index = i32::from(index);
                partition.leader_id = own;
                partition.leader_epoch = 0;
                partition.replica_nodes = vec![own];
                partition.isr_nodes = vec![own];
                partition
            })
            .collect();
        topic
    }

    /// The live nodes with a Kafka door, this one first.
    fn brokers(&self) -> Vec<MetadataResponseBroker> {
        let members = match &self.server.membership {
            Some(membership) => membership.members(),
            None => Vec::new(),
        };
        let mut addresses: Vec<String> = self.own_address().into_iter().collect();
        for member in members.into_iter().skip(1) {
            if member.last_seen_ms < LIVE_MS
                && let Some(kafka) = member.kafka
                && !addresses.contains(&kafka)
            {
                addresses.push(kafka);
            }
        }
        addresses
            .iter()
            .filter_map(|address| {
                let (host, port) = address.rsplit_once(':')?;
                let mut broker = MetadataResponseBroker::default();
                broker.node_id = BrokerId(broker_id(address));
                broker.host = StrBytes::from_string(host.to_string());
                broker.port = port.parse().ok()?;
                Some(broker)
            })
            .collect()
    }

    fn own_address(&self) -> Option<String> {
        let membership = self.server.membership.as_ref()?;
        membership.kafka().map(str::to_string)
    }

    fn own_broker_id(&self) -> i32 {
        self.own_address().map_or(0, |address| broker_id(&address))
    }
}

/// A node's broker id: a 31-bit hash of its Kafka address (FNV-1a), the same on every node
/// and across restarts.
pub(super) fn broker_id(address: &str) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in address.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash & 0x7fff_ffff) as i32
}

/// Whether rows can be produced to `table`: a table, not a view or a hidden one.
fn producible(table: &TableDef) -> bool {
    matches!(table.kind, TableKind::Table) && !table.is_hidden()
}

/// Whether `table` has the raw form `(key VARCHAR, value VARCHAR, timestamp TIMESTAMP)`.
pub(super) fn is_raw(table: &TableDef) -> bool {
    let expected = [
        ("key", SqlType::Varchar),
        ("value", SqlType::Varchar),
        ("timestamp", SqlType::Timestamp),
    ];
    table.columns.len() == expected.len()
        && table.key.is_empty()
        && table
            .columns
            .iter()
            .zip(expected)
            .all(|(column, (name, sql_type))| column.name == name && column.sql_type == sql_type)
}

/// Kafka's rule for topic names: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
fn check_topic_name(topic: &str) -> Result<(), Refusal> {
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if topic.is_empty()
        || topic.len() > MAX_TOPIC_NAME
        || topic == "."
        || topic == ".."
        || !topic.chars().all(legal)
    {
        return Err((
            ResponseError::InvalidTopicException,
            format!("{topic:?} is not a topic name: 1 to 249 letters, digits, '.', '_' or '-'"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_ids_are_stable_and_positive() {
        assert_eq!(broker_id("127.0.0.1:9092"), broker_id("127.0.0.1:9092"));
        assert_ne!(broker_id("127.0.0.1:9092"), broker_id("127.0.0.1:9093"));
        assert!(broker_id("host:1") >= 0);
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(check_topic_name("events.v1-raw_x").is_ok());
        for bad in ["", ".", "..", "has space", "semi;colon", &"x".repeat(250)] {
            assert!(check_topic_name(bad).is_err(), "{bad:?}");
        }
    }
}
