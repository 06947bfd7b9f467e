//! A part's exchanges (ADR 0076): its rows for each other part go to the node running that
//! part (to this node's mailboxes when it runs it too), and it reads what every part
//! delivered to it. A delivery is done once the node holds all its rows; a part whose
//! deliveries fail fails, and its coordinator runs the round again.

use std::sync::Arc;

use arrow::array::RecordBatch;
use pondra_exec::{EXCHANGE_STALL, Exchanger, ExecContext, GatheredParts, MailboxKey, Mailboxes};

use super::{Delivery, Peers};
use crate::node::Node;

/// One part's way to the other parts of its round.
pub(crate) struct ClusterExchanger {
    pub(crate) mailboxes: Arc<Mailboxes>,
    /// The way to the other nodes; none when every part runs here.
    pub(crate) peers: Option<Arc<dyn Peers>>,
    pub(crate) round: u64,
    pub(crate) part: usize,
    /// The Flight door of the node running each part.
    pub(crate) part_nodes: Vec<String>,
    /// This node's Flight door: parts there are delivered to without the network.
    pub(crate) own_flight: String,
}

impl Exchanger for ClusterExchanger {
    fn exchange(
        &self,
        id: usize,
        partitions: Vec<Vec<RecordBatch>>,
        ctx: &ExecContext,
    ) -> pondra_exec::Result<GatheredParts> {
        let parts = self.part_nodes.len();
        assert_eq!(partitions.len(), parts, "a partition per part");
        let mut sending = Vec::new();
        for (to, rows) in partitions.into_iter().enumerate() {
            let key = MailboxKey {
                round: self.round,
                exchange: id,
                to,
            };
            let node = &self.part_nodes[to];
            match (&self.peers, node == &self.own_flight) {
                (_, true) | (None, _) => self.mailboxes.deliver(key, self.part, parts, rows)?,
                (Some(peers), false) => {
                    let delivery = Delivery {
                        round: self.round,
                        exchange: id,
                        from: self.part,
                        to,
                        parts,
                    };
                    sending.push(peers.deliver(node, &delivery, rows));
                }
            }
        }
        // Every delivery at once, each on the runtime; then each awaited.
        let sending: Vec<_> = sending.into_iter().map(|s| ctx.runtime.spawn(s)).collect();
        let mut failure = None;
        for delivery in sending {
            let outcome = ctx.runtime.block_on(delivery);
            let error = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(e) => e.to_string(),
            };
            failure.get_or_insert(error);
        }
        if let Some(e) = failure {
            return Err(pondra_exec::exchange_failure(format!(
                "part {} could not deliver its rows: {e}",
                self.part
            )));
        }
        let key = MailboxKey {
            round: self.round,
            exchange: id,
            to: self.part,
        };
        self.mailboxes.wait_all(key, parts, ctx, EXCHANGE_STALL)
    }

    fn abandon(&self) {
        self.mailboxes.stop_round(self.round);
    }
}

impl Node {
    /// Keeps rows another node's part delivered to a part this node runs (or will).
    pub fn take_delivery(&self, delivery: Delivery, rows: Vec<RecordBatch>) -> crate::Result<()> {
        let key = MailboxKey {
            round: delivery.round,
            exchange: delivery.exchange,
            to: delivery.to,
        };
        self.spread_mailboxes()
            .deliver(key, delivery.from, delivery.parts, rows)
            .map_err(|e| crate::NodeError::Other(e.to_string()))
    }

    pub(crate) fn spread_mailboxes(&self) -> Arc<Mailboxes> {
        self.spread.mailboxes(&self.options.memory)
    }
}
