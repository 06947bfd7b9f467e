//! A node's role in the cluster changes (ADR 0053): a follower takes the lead when the leader's
//! lease lapses, and a leader another process replaced follows it. Between the two, the
//! follower's catalog is fed by the leader's stream of commits.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pondra_catalog::{Applied, CommitsAfter, Leader, StreamedCommit};

use crate::Result;
use crate::node::{Node, producer_name};

impl Node {
    /// Leads term `term`, which this process won: opens the catalog's writer, fencing the
    /// leader before, and commits from now on.
    pub async fn take_over(&self, term: u64) -> Result<()> {
        assert!(
            term > self.term().number,
            "a node takes over only a later term"
        );
        self.catalog.lead(&self.lake).await?;
        self.term.store(term, Ordering::SeqCst);
        Ok(())
    }

    /// Follows the leader of term `term`: commits go to `leader` (none: refused, on a node that
    /// only reads), and the leader's stream is to feed the catalog. A leader that steps down
    /// closes its writer here.
    pub async fn follow(&self, leader: Option<Arc<dyn Leader>>, term: u64) {
        self.catalog
            .follow(&self.lake, leader, producer_name())
            .await;
        self.term.fetch_max(term, Ordering::SeqCst);
    }

    /// Moves the catalog's recent commits out of its write-ahead log, so that a follower
    /// taking the lead opens it quickly; the commit this flush reached.
    pub async fn flush_catalog_log(&self) -> Result<u64> {
        let commit = self.snapshot().commit;
        self.catalog.flush_log().await?;
        Ok(commit)
    }

    /// Whether this node leads but another writer has opened the catalog since: it is to
    /// follow.
    pub fn is_fenced(&self) -> bool {
        self.catalog.is_fenced()
    }

    /// The commits after `after`, for a follower's stream.
    pub fn commits_after(&self, after: u64) -> CommitsAfter {
        self.catalog.commits_after(after)
    }

    /// Waits, at most `patience`, for a commit after `after`; returns whether one came.
    pub async fn wait_for_commit_after(&self, after: u64, patience: Duration) -> bool {
        self.catalog.wait_for_commit_after(after, patience).await
    }

    /// Applies commits of the leader's stream, in order; on a gap, reads the catalog from the
    /// lake instead. Returns the commit the node then holds.
    pub async fn apply_streamed(&self, commits: Vec<StreamedCommit>) -> Result<u64> {
        for commit in commits {
            match self.catalog.apply_streamed(Arc::new(commit))? {
                Applied::Applied | Applied::Held => {}
                Applied::Gap => {
                    self.catalog.reload(&self.lake).await?;
                    break;
                }
            }
        }
        Ok(self.snapshot().commit)
    }

    /// Reads the catalog from the lake: a follower too far behind the stream, or following
    /// a new leader.
    pub async fn reload_catalog(&self) -> Result<()> {
        Ok(self.catalog.reload(&self.lake).await?)
    }
}
