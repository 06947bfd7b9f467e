//! The other nodes of the cluster as a node's spread queries reach them (ADR 0076): the live
//! members the membership knows, and a part asked of one over its Flight door's `do_exchange`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, FlightDescriptor};
use futures::TryStreamExt;
use pondra_cluster::{PartRequest, Peer, Peers};

use super::membership::Membership;

/// The command a part request's descriptor carries.
pub const PART_COMMAND: &str = "pondra.part";

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

    fn run_part(
        &self,
        peer: &Peer,
        request: &PartRequest,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>, String>> + Send + 'static>> {
        let url = format!("http://{}", peer.flight);
        let token = self.token.clone();
        let body = serde_json::to_vec(request);
        Box::pin(async move {
            let body = body.map_err(|e| e.to_string())?;
            let channel = tonic::transport::Endpoint::from_shared(url)
                .map_err(|e| e.to_string())?
                .connect_timeout(CONNECT)
                .connect()
                .await
                .map_err(|e| format!("cannot reach the node: {e}"))?;
            let first = FlightData {
                flight_descriptor: Some(FlightDescriptor::new_cmd(PART_COMMAND)),
                app_metadata: body.into(),
                ..Default::default()
            };
            let mut call = tonic::Request::new(futures::stream::iter(vec![first]));
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
}
