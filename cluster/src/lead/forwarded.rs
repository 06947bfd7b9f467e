//! Commits other processes prepared (ADR 0053): a node that does not lead, or `pondra sql`
//! while a leader lives, prepares its changes against a snapshot it holds and hands them to
//! the leader, which orders them here with its own.

use pondra_catalog::{CatalogError, Change, ForwardedCommit};

use crate::node::Node;
use crate::sessions::transaction::{objects_named, rebase};
use crate::{NodeError, Result};

/// Why a forwarded commit was not committed now.
enum NotCommitted {
    /// Its (producer, sequence) is committed already: a retry.
    Retried,
    Failed(NodeError),
}

impl From<CatalogError> for NotCommitted {
    fn from(error: CatalogError) -> Self {
        NotCommitted::Failed(error.into())
    }
}

impl Node {
    /// Commits `forwarded`, rebased from the snapshot it was prepared against onto the latest
    /// (a change conflicting with a commit since fails with SQLSTATE 40001, as does a base
    /// older than the snapshots this node keeps). Returns the commit that holds it; a retry of
    /// a commit made already is answered with the latest commit and commits nothing.
    ///
    /// The objects the changes name are the sender's: it deletes them when the commit fails,
    /// never this node, since a retry names the same objects as the attempt that committed.
    pub async fn commit_forwarded(&self, forwarded: ForwardedCommit) -> Result<u64> {
        let ForwardedCommit {
            base,
            mut changes,
            producer,
            sequence,
        } = forwarded;
        let claim = producer.clone();
        let already = move |snapshot: &pondra_catalog::Snapshot| {
            snapshot
                .producers
                .get(&claim)
                .is_some_and(|&s| s >= sequence)
        };
        let latest = self.snapshot();
        if already(&latest) {
            return Ok(latest.commit);
        }
        // A commit naming an object that is not there would leave a table unreadable.
        for path in objects_named(&changes) {
            if !self.lake.exists(&path).await? {
                return Err(NodeError::Other(format!(
                    "the commit names {path}, which the lake does not hold"
                )));
            }
        }
        let Some(base) = self.catalog.snapshot_at(base) else {
            return Err(NodeError::SerializationFailure);
        };
        changes.push(Change::ProducerSequence {
            producer: producer.clone(),
            sequence,
        });
        let committed = self
            .catalog
            .commit_with(move |latest| {
                if already(latest) {
                    return Err(NotCommitted::Retried);
                }
                rebase(&base, latest, changes).map_err(NotCommitted::Failed)
            })
            .await;
        match committed {
            Ok(commit) => Ok(commit),
            Err(NotCommitted::Retried) => Ok(self.snapshot().commit),
            Err(NotCommitted::Failed(error)) => Err(error),
        }
    }
}
