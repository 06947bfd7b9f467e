//! A part another node asks of this one (ADR 0076): the statement planned over the snapshot of
//! the coordinator's commit with its settings, cut the same way, checked by the fragment's
//! fingerprint, and run on the asked slice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use pondra_catalog::Snapshot;
use pondra_exec::{Exchanger, StatementControl, StopReason};
use pondra_planner::{OptimizerSettings, Plan, create_physical_plan, fragment_of, with_slice_part};

use super::PartRequest;
use super::exchange::ClusterExchanger;
use crate::node::{CONTROL, Node};
use crate::sessions::session::Session;
use crate::{NodeError, Result};

/// How long a node waits for its catalog to reach the coordinator's commit.
const CATCH_UP: Duration = Duration::from_secs(2);

impl Node {
    /// Runs the part `request` asks for: its rows. Dropped before it finishes (the coordinator
    /// went away), it stops the part.
    pub async fn run_part(self: &Arc<Self>, request: PartRequest) -> Result<Vec<RecordBatch>> {
        if request.part >= request.parts || request.parts < 2 {
            return Err(NodeError::Other(format!(
                "part {} of {} parts is not a part of a spread plan",
                request.part, request.parts
            )));
        }
        let session = Session::new(None);
        session.set_time_zone(request.time_zone.clone());
        session.set_optimizer_settings(OptimizerSettings::disabling(&request.disabled_optimizers)?);
        let control = session.begin(self.options.memory.clone());
        let stop = StopWhenDropped {
            control: control.clone(),
            finished: false,
        };
        let node = self.clone();
        let run = async move { node.run_part_in(&request, &session).await };
        let outcome = tokio::spawn(CONTROL.scope(control, run)).await;
        stop.finish();
        match outcome {
            Ok(rows) => rows,
            Err(e) => Err(NodeError::Other(format!("the part's task failed: {e}"))),
        }
    }

    async fn run_part_in(
        &self,
        request: &PartRequest,
        session: &Session,
    ) -> Result<Vec<RecordBatch>> {
        let snapshot = self.snapshot_of(request.commit).await?;
        let statements = pondra_parser::parse_sql(&request.statement)
            .map_err(|e| NodeError::Other(e.to_string()))?;
        let [statement] = statements.as_slice() else {
            return Err(NodeError::Other("a part runs one statement".into()));
        };
        let Plan::Query(plan) = self.bind_in(
            &snapshot,
            Some(session),
            statement,
            request.statement_micros,
        )?
        else {
            return Err(NodeError::Other("a part runs a query".into()));
        };
        let physical = create_physical_plan(&plan);
        let (fragment, fingerprint) = fragment_of(
            &physical,
            request.parts,
            &request.sliced,
            request.exchange,
            &snapshot,
        )
        .map_err(NodeError::Other)?;
        if fingerprint != request.fingerprint {
            return Err(NodeError::Other(
                "this node plans the statement into another fragment than the coordinator".into(),
            ));
        }
        let exchanger = match request.exchange {
            true => Some(self.part_exchanger(request)?),
            false => None,
        };
        let fragment = with_slice_part(&fragment, request.part);
        let rows = self
            .run_physical(fragment, snapshot, Vec::new(), None, exchanger.clone())
            .await;
        if let (Err(_), Some(exchanger)) = (&rows, exchanger) {
            exchanger.abandon();
        }
        rows
    }

    /// The exchanger of the part `request` asks for, in the coordinator's round.
    fn part_exchanger(&self, request: &PartRequest) -> Result<Arc<dyn Exchanger>> {
        let peers = self.spread.peers();
        let Some(own_flight) = peers.as_ref().map(|p| p.own_flight()) else {
            return Err(NodeError::Other(
                "this node is not in a cluster: it cannot exchange rows".into(),
            ));
        };
        if request.part_nodes.len() != request.parts {
            return Err(NodeError::Other(format!(
                "a part request names {} nodes for {} parts",
                request.part_nodes.len(),
                request.parts
            )));
        }
        Ok(Arc::new(ClusterExchanger {
            mailboxes: self.spread_mailboxes(),
            peers,
            round: request.round,
            part: request.part,
            part_nodes: request.part_nodes.clone(),
            own_flight,
        }))
    }

    /// The snapshot of commit `commit`, once this node's catalog holds it.
    async fn snapshot_of(&self, commit: u64) -> Result<Arc<Snapshot>> {
        let deadline = Instant::now() + CATCH_UP;
        loop {
            if let Some(snapshot) = self.catalog.snapshot_at(commit) {
                return Ok(snapshot);
            }
            let holds = self.snapshot().commit;
            if holds > commit {
                return Err(NodeError::Other(format!(
                    "this node no longer holds commit {commit} (it holds {holds})"
                )));
            }
            if Instant::now() > deadline {
                return Err(NodeError::Other(format!(
                    "this node has not reached commit {commit} (it holds {holds})"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Stops a part whose caller stopped waiting for it.
struct StopWhenDropped {
    control: Arc<StatementControl>,
    finished: bool,
}

impl StopWhenDropped {
    fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        if !self.finished {
            self.control.stop(StopReason::ClientGone);
        }
    }
}
