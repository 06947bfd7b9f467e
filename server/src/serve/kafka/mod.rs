//! The Kafka door (ADR 0077): Kafka's wire protocol on `--kafka-port`. A connection's requests
//! are read ahead and decoded, carried out one after another and answered in order, as a
//! broker does; the messages are encoded and decoded by the `kafka-protocol` crate.

mod batches;
mod changes;
mod fetch;
mod groups;
mod produce;
mod read_ahead;
mod rows;
mod topics;

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, RequestKind, ResponseHeader, ResponseKind,
};
use kafka_protocol::protocol::{Encodable, decode_request_header_from_buffer};
use pondra_cluster::Node;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{KafkaOptions, Server};

/// The largest request read: a produce request holds a client's batches for several
/// partitions (librdkafka's `message.max.bytes` is 1 MB by default, Kafka's socket limit
/// 100 MB).
const MAX_REQUEST_BYTES: usize = 100 << 20;

/// The megabytes of requests all connections may hold at once: past it a connection waits
/// before it reads its next request, so many large requests cannot exhaust memory.
const REQUEST_MEGABYTES: u32 = 1024;

/// The APIs the door answers and the versions of each it reads. Produce and Fetch stop before
/// v13, which names topics by id.
const APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 7),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 4),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 7),
];

/// What every connection of the door shares.
pub(super) struct KafkaDoor {
    pub server: Arc<Server>,
    pub node: Arc<Node>,
    pub options: KafkaOptions,
    /// The consumer groups this node coordinates while it leads the lake.
    groups: groups::Groups,
    /// Megabytes of requests being read or answered (`REQUEST_MEGABYTES`).
    request_budget: Arc<tokio::sync::Semaphore>,
    /// Runs of rows read for Fetch, for the next Fetches to slice.
    read_ahead: Arc<read_ahead::ReadAhead>,
    /// Windows of change events read for Fetch of `<table>.changes`.
    change_windows: changes::ChangeWindows,
}

/// Serves Kafka clients on `listener` until `stop` turns true.
pub async fn run(
    listener: TcpListener,
    server: Arc<Server>,
    options: KafkaOptions,
    mut stop: watch::Receiver<bool>,
) {
    let node = match server.lakes.node(None).await {
        Ok(node) => node,
        Err(e) => {
            eprintln!("kafka: no lake to serve: {e}");
            return;
        }
    };
    let door = Arc::new(KafkaDoor {
        server,
        node,
        options,
        groups: Default::default(),
        request_budget: Arc::new(tokio::sync::Semaphore::new(REQUEST_MEGABYTES as usize)),
        read_ahead: Default::default(),
        change_windows: Default::default(),
    });
    let connections_stop = stop.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    let door = door.clone();
                    let stop = connections_stop.clone();
                    tokio::spawn(async move {
                        if let Err(e) = door.connection(socket, stop).await {
                            eprintln!("kafka connection: {e}");
                        }
                    });
                }
                Err(e) => eprintln!("kafka accept: {e}"),
            },
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// Requests a connection may have read and not yet answered: librdkafka sends up to five
/// produce requests at once per connection.
const MAX_IN_FLIGHT: usize = 5;

/// A request read and decoded, waiting for its turn to be answered.
enum Prepared {
    /// An answer known at once.
    Ready(BytesMut),
    Request {
        api: ApiKey,
        version: i16,
        correlation: i32,
        body: Box<PreparedBody>,
    },
}

enum PreparedBody {
    /// A produce request with its records decoded into rows ahead of their turn.
    Produce(produce::PreparedProduce),
    Other(Box<RequestKind>),
}

impl KafkaDoor {
    /// Reads requests from `socket` and answers each, in order, until the client leaves. Up to
    /// `MAX_IN_FLIGHT` requests are read ahead and decoded while earlier ones are answered;
    /// they are carried out one after another, in the order they came, save that an
    /// idempotent producer's batches in line let the next request go before they commit.
    async fn connection(
        self: Arc<Self>,
        socket: TcpStream,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), String> {
        socket.set_nodelay(true).map_err(|e| e.to_string())?;
        let (mut reader, mut writer) = socket.into_split();
        let (answers, mut answered) =
            tokio::sync::mpsc::channel::<tokio::task::JoinHandle<Answer>>(MAX_IN_FLIGHT);
        let writing = tokio::spawn(async move {
            while let Some(task) = answered.recv().await {
                let answer = task.await.map_err(|e| format!("a request failed: {e}"))??;
                if let Some(bytes) = answer {
                    writer.write_all(&bytes).await.map_err(|e| e.to_string())?;
                }
            }
            Ok::<(), String>(())
        });
        let mut previous: Option<tokio::sync::oneshot::Receiver<()>> = None;
        let read = loop {
            let size = tokio::select! {
                size = reader.read_i32() => match size {
                    Ok(size) => size,
                    // The client closed the connection between requests.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break Ok(()),
                    Err(e) => break Err(e.to_string()),
                },
                _ = stop.wait_for(|s| *s) => break Ok(()),
            };
            // A request holds at least its API key, version and correlation id.
            let Some(size) = usize::try_from(size)
                .ok()
                .filter(|&size| (8..=MAX_REQUEST_BYTES).contains(&size))
            else {
                break Err(format!(
                    "a request of {size} bytes: the limit is {MAX_REQUEST_BYTES}"
                ));
            };
            let megabytes = (size >> 20) as u32 + 1;
            let budget = match self
                .request_budget
                .clone()
                .acquire_many_owned(megabytes)
                .await
            {
                Ok(budget) => budget,
                Err(e) => break Err(e.to_string()),
            };
            let mut request = vec![0u8; size];
            if let Err(e) = reader.read_exact(&mut request).await {
                break Err(e.to_string());
            }
            let (release, next) = tokio::sync::oneshot::channel();
            let before = previous.replace(next);
            let door = self.clone();
            let task = tokio::spawn(async move {
                let _budget = budget;
                let prepared = door.clone().prepare(Bytes::from(request)).await;
                // Carried out once the request read before it lets it go: when done, or (a
                // produce of idempotent batches) once its batches are in line (ADR 0078).
                if let Some(before) = before {
                    let _ = before.await;
                }
                let mut release = Release(Some(release));
                match prepared {
                    Ok(prepared) => door.answer(prepared, &mut release).await,
                    Err(e) => Err(e),
                }
            });
            if answers.send(task).await.is_err() {
                break Ok(());
            }
        };
        drop(answers);
        let written = writing.await.map_err(|e| e.to_string())?;
        read.and(written)
    }

    /// Reads a request's header and body; a produce request's records are decoded too (on a
    /// thread of its own: JSON decoding takes a while). An error closes the connection, as a
    /// broker does with a request it cannot read.
    async fn prepare(self: Arc<Self>, mut request: Bytes) -> Result<Prepared, String> {
        let (key, version) = ((&request[0..2]).get_i16(), (&request[2..4]).get_i16());
        let Ok(api) = ApiKey::try_from(key) else {
            return Err(format!("an unknown API key {key}"));
        };
        let Some(&(_, min, max)) = APIS.iter().find(|(a, _, _)| *a == api) else {
            return Err(format!("{api:?} is not served by this door (ADR 0077)"));
        };
        if api == ApiKey::ApiVersions && !(min..=max).contains(&version) {
            // Clients send their newest ApiVersions first and fall back on this answer.
            let correlation = (&request[4..8]).get_i32();
            let answer = api_versions(ResponseError::UnsupportedVersion.code());
            let answer = ResponseKind::ApiVersions(answer);
            return frame(ApiKey::ApiVersions, 0, correlation, answer).map(Prepared::Ready);
        }
        if !(min..=max).contains(&version) {
            return Err(format!(
                "{api:?} version {version}: this door reads {min} to {max}"
            ));
        }
        let header = decode_request_header_from_buffer(&mut request)
            .map_err(|e| format!("a malformed request header: {e}"))?;
        let body = RequestKind::decode(api, &mut request, version)
            .map_err(|e| format!("a malformed {api:?} request: {e}"))?;
        let body = match body {
            RequestKind::Produce(produce) => {
                let door = self.clone();
                let decoded = tokio::task::spawn_blocking(move || door.prepare_produce(produce));
                PreparedBody::Produce(decoded.await.map_err(|e| e.to_string())?)
            }
            other => PreparedBody::Other(Box::new(other)),
        };
        Ok(Prepared::Request {
            api,
            version,
            correlation: header.correlation_id,
            body: Box::new(body),
        })
    }

    /// The framed answer to a prepared request; none for a produce with `acks = 0`. The next
    /// request is let go by `release` once this one no longer needs to come first.
    async fn answer(&self, prepared: Prepared, release: &mut Release) -> Answer {
        let (api, version, correlation, body) = match prepared {
            Prepared::Ready(answer) => return Ok(Some(answer)),
            Prepared::Request {
                api,
                version,
                correlation,
                body,
            } => (api, version, correlation, body),
        };
        let body = match *body {
            PreparedBody::Produce(prepared) => {
                let acks = prepared.acks;
                let response = self.produce(prepared, release).await;
                if acks == 0 {
                    return Ok(None);
                }
                return frame(api, version, correlation, ResponseKind::Produce(response)).map(Some);
            }
            PreparedBody::Other(body) => *body,
        };
        let response = match body {
            RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions(0)),
            RequestKind::Metadata(request) => {
                ResponseKind::Metadata(self.metadata(request, version).await)
            }
            RequestKind::CreateTopics(request) => {
                ResponseKind::CreateTopics(self.create_topics(request).await)
            }
            RequestKind::FindCoordinator(request) => {
                ResponseKind::FindCoordinator(self.find_coordinator(request, version))
            }
            RequestKind::JoinGroup(request) => {
                ResponseKind::JoinGroup(self.join_group(request).await)
            }
            RequestKind::SyncGroup(request) => {
                ResponseKind::SyncGroup(self.sync_group(request).await)
            }
            RequestKind::Heartbeat(request) => ResponseKind::Heartbeat(self.heartbeat(request)),
            RequestKind::LeaveGroup(request) => {
                ResponseKind::LeaveGroup(self.leave_group(request, version))
            }
            RequestKind::OffsetCommit(request) => {
                ResponseKind::OffsetCommit(self.offset_commit(request).await)
            }
            RequestKind::OffsetFetch(request) => {
                ResponseKind::OffsetFetch(self.offset_fetch(request))
            }
            RequestKind::InitProducerId(request) => {
                ResponseKind::InitProducerId(produce::init_producer_id(request))
            }
            RequestKind::Fetch(request) => ResponseKind::Fetch(self.fetch(request).await),
            RequestKind::ListOffsets(request) => {
                ResponseKind::ListOffsets(self.list_offsets(request).await)
            }
            _ => unreachable!("only the APIs listed are decoded"),
        };
        frame(api, version, correlation, response).map(Some)
    }
}

/// Lets the request after this one on its connection be carried out: when called, or when
/// dropped.
pub(super) struct Release(Option<tokio::sync::oneshot::Sender<()>>);

impl Release {
    pub fn now(&mut self) {
        if let Some(release) = self.0.take() {
            let _ = release.send(());
        }
    }
}

/// A request's framed answer (none for a produce with `acks = 0`), or why the connection
/// closes.
type Answer = Result<Option<BytesMut>, String>;

/// The answer to ApiVersions: every API the door serves with its versions.
fn api_versions(error_code: i16) -> ApiVersionsResponse {
    let mut answer = ApiVersionsResponse::default();
    answer.error_code = error_code;
    answer.api_keys = APIS
        .iter()
        .map(|&(api, min, max)| {
            let mut version = ApiVersion::default();
            version.api_key = api as i16;
            version.min_version = min;
            version.max_version = max;
            version
        })
        .collect();
    answer
}

/// A response with its header, behind its size.
fn frame(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    response: ResponseKind,
) -> Result<BytesMut, String> {
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    // Room for the records a Fetch answers, so the answer is not copied as it grows; the size
    // is written in front once known.
    let mut framed = BytesMut::with_capacity(4 + records_size(&response) + 1024);
    framed.put_i32(0);
    header
        .encode(&mut framed, api.response_header_version(version))
        .and_then(|()| response.encode(&mut framed, version))
        .map_err(|e| format!("cannot encode the {api:?} answer: {e}"))?;
    let size =
        i32::try_from(framed.len() - 4).map_err(|_| format!("an {api:?} answer over 2 GB"))?;
    framed[..4].copy_from_slice(&size.to_be_bytes());
    Ok(framed)
}

/// The bytes of the records a Fetch answer carries (none for other answers).
fn records_size(response: &ResponseKind) -> usize {
    match response {
        ResponseKind::Fetch(fetch) => fetch
            .responses
            .iter()
            .flat_map(|topic| &topic.partitions)
            .map(|p| p.records.as_ref().map_or(0, |r| r.len() + 64))
            .sum(),
        _ => 0,
    }
}
