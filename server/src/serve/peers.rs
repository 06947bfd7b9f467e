//! The other nodes of the cluster as a node's spread queries reach them (ADR 0076): the live
//! members the membership knows, and a part asked of one over its Flight door's `do_exchange`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, FlightDescriptor};
use futures::TryStreamExt;
use pondra_cluster::{Delivery, PartRequest, Peer, Peers};

use super::membership::Membership;

/// The command a part request's descriptor carries.
pub const PART_COMMAND: &str = "pondra.part";

/// The command a delivery of an exchange's rows carries.
pub const DELIVERY_COMMAND: &str = "pondra.shuffle";

/// A member takes part in spread queries while it was heard from this recently. Generous: a
/// node busy with long queries on few cores answers its polls late, and a part asked of a
/// node that is gone fails at once and runs on the coordinator.
const LIVE: Duration = Duration::from_secs(10);

/// How long connecting to another node's Flight door may take.
const CONNECT: Duration = Duration::from_secs(2);

pub struct FlightPeers {
    pub membership: Arc<Membership>,
    /// The token the nodes of the cluster present to each other.
    pub token: Option<String>,
}

impl Peers for FlightPeers {
    fn own_name(&self) -> String {
        self.membership.advertise().to_string()
    }

    fn peers(&self) -> Vec<Peer> {
        let own = self.membership.advertise();
        self.membership
            .members()
            .into_iter()
            .filter(|m| m.addr != own && m.last_seen_ms < LIVE.as_millis() as u64)
            .filter_map(|m| {
                Some(Peer {
                    flight: m.flight?,
                    cores: m.cores.unwrap_or(1).max(1),
                    name: m.addr,
                })
            })
            .collect()
    }

    fn own_flight(&self) -> String {
        self.membership.flight().to_string()
    }

    fn run_part(
        &self,
        peer: &Peer,
        request: &PartRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>, String>> + Send + 'static>> {
        let (flight, token) = (peer.flight.clone(), self.token.clone());
        let body = serde_json::to_vec(request);
        Box::pin(async move {
            let first = first_message(PART_COMMAND, body.map_err(|e| e.to_string())?);
            exchange(flight, token, vec![first]).await
        })
    }

    fn deliver(
        &self,
        flight: &str,
        delivery: &Delivery,
        rows: Vec<RecordBatch>,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>> {
        let (flight, token) = (flight.to_string(), self.token.clone());
        let body = serde_json::to_vec(delivery);
        Box::pin(async move {
            let first = first_message(DELIVERY_COMMAND, body.map_err(|e| e.to_string())?);
            let schema = match rows.first() {
                Some(batch) => batch.schema(),
                None => Arc::new(arrow::datatypes::Schema::empty()),
            };
            let data: Vec<FlightData> = FlightDataEncoderBuilder::new()
                .with_schema(schema)
                .with_dictionary_handling(DictionaryHandling::Resend)
                .build(futures::stream::iter(rows.into_iter().map(Ok)))
                .try_collect()
                .await
                .map_err(|e| e.to_string())?;
            let messages = std::iter::once(first).chain(data).collect();
            let answer = exchange(flight, token, messages).await?;
            assert!(answer.is_empty(), "a delivery is answered with no rows");
            Ok(())
        })
    }
}

/// The first message of a `do_exchange` call: its command and its request as JSON.
fn first_message(command: &str, body: Vec<u8>) -> FlightData {
    FlightData {
        flight_descriptor: Some(FlightDescriptor::new_cmd(command.to_string())),
        app_metadata: body.into(),
        ..Default::default()
    }
}

/// Sends `messages` to the node whose Flight door is at `flight` with `do_exchange`: the rows
/// it answers with.
fn exchange(
    flight: String,
    token: Option<String>,
    messages: Vec<FlightData>,
) -> futures::future::BoxFuture<'static, Result<Vec<RecordBatch>, String>> {
    Box::pin(async move {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{flight}"))
            .map_err(|e| e.to_string())?
            .connect_timeout(CONNECT)
            .connect()
            .await
            .map_err(|e| format!("cannot reach the node: {e}"))?;
        let mut call = tonic::Request::new(futures::stream::iter(messages));
        if let Some(token) = token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| "the token is not a header value".to_string())?;
            call.metadata_mut().insert("authorization", value);
        }
        let mut client = FlightServiceClient::new(channel)
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX);
        let answer = client
            .do_exchange(call)
            .await
            .map_err(|status| status.message().to_string())?;
        let data = answer
            .into_inner()
            .map_err(|status| FlightError::Tonic(Box::new(status)));
        FlightRecordBatchStream::new_from_flight_data(data)
            .try_collect()
            .await
            .map_err(|e| e.to_string())
    })
}
