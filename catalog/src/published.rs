//! What a catalog has committed, kept in memory (ADR 0053): the latest snapshot, the ones
//! before it (for rebasing commits prepared against them), and the changes of the recent
//! commits, which followers read as the leader's stream of commits and apply in the same
//! order, so that each follower's snapshot is one the leader had.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::catalog::{Catalog, Change, apply};
use crate::error::{CatalogError, Result};
use crate::snapshot::Snapshot;

/// How many snapshots before the latest a catalog keeps, for rebasing commits prepared against
/// them (ADR 0053).
const RECENT_SNAPSHOTS: usize = 256;

/// How many recent commits a catalog keeps for its stream, and how many bytes of inline rows
/// they may hold (ADR 0053): a follower further behind reloads the catalog from the lake.
const STREAMED_COMMITS: usize = 4096;
const STREAMED_BYTES: usize = 64 << 20;

/// How many commits one answer of the stream carries at most.
const COMMITS_PER_ANSWER: usize = 256;

/// One durable commit as the stream carries it: applying `changes` in order, at commit time
/// `time_ms` with retention `retain_ms`, to the snapshot of the commit before makes the
/// snapshot of this one.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StreamedCommit {
    pub commit: u64,
    pub time_ms: u64,
    pub retain_ms: u64,
    pub changes: Vec<Change>,
}

impl StreamedCommit {
    /// About how much memory the commit holds: its inline rows and a little per change.
    fn approximate_bytes(&self) -> usize {
        self.changes
            .iter()
            .map(|change| {
                let inline = match change {
                    Change::AppendSegment { payload, .. }
                    | Change::RecordChanges { payload, .. }
                    | Change::CreateTable {
                        initial: Some((_, payload)),
                        ..
                    } => match payload {
                        crate::SegmentPayload::Inline(bytes) => bytes.len(),
                        crate::SegmentPayload::Object(_) => 0,
                    },
                    _ => 0,
                };
                inline + 256
            })
            .sum()
    }
}

/// The commits after one a follower holds, as the stream answers.
#[derive(Debug)]
pub enum CommitsAfter {
    /// The next commits, in order (none when the follower holds the latest).
    Commits(Vec<Arc<StreamedCommit>>),
    /// The follower is behind the commits kept: it reloads the catalog from the lake.
    Behind,
}

/// What a streamed commit did to a follower's catalog.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    Applied,
    /// The catalog holds it already.
    Held,
    /// The commit before it is missing: the follower reloads the catalog from the lake.
    Gap,
}

/// The latest committed snapshot, the ones before it back to [`RECENT_SNAPSHOTS`] (they share
/// what they did not change, so keeping them costs little), and the recent commits' changes.
pub(crate) struct Published {
    pub latest: Arc<Snapshot>,
    recent: VecDeque<Arc<Snapshot>>,
    /// Consecutive commits ending at `latest`; empty after a snapshot arrived without its
    /// changes (a reload).
    commits: VecDeque<Arc<StreamedCommit>>,
    commit_bytes: usize,
    /// The latest commit's number, for those waiting for the next.
    changed: watch::Sender<u64>,
}

impl Published {
    pub fn new(latest: Arc<Snapshot>) -> Published {
        let (changed, _) = watch::channel(latest.commit);
        Published {
            latest,
            recent: Default::default(),
            commits: Default::default(),
            commit_bytes: 0,
            changed,
        }
    }

    /// Makes `next` the latest; `streamed` holds the changes that made it from the latest
    /// before, when known.
    pub fn publish(&mut self, next: Arc<Snapshot>, streamed: Option<Arc<StreamedCommit>>) {
        assert!(next.commit > self.latest.commit, "commits only grow");
        let follows = next.commit == self.latest.commit + 1;
        let earlier = std::mem::replace(&mut self.latest, next);
        self.recent.push_back(earlier);
        if self.recent.len() > RECENT_SNAPSHOTS {
            self.recent.pop_front();
        }
        match streamed {
            Some(streamed) if follows => {
                assert_eq!(
                    streamed.commit, self.latest.commit,
                    "a commit's own changes"
                );
                self.commit_bytes += streamed.approximate_bytes();
                self.commits.push_back(streamed);
                while self.commits.len() > STREAMED_COMMITS || self.commit_bytes > STREAMED_BYTES {
                    let oldest = self.commits.pop_front().expect("commits to drop");
                    self.commit_bytes -= oldest.approximate_bytes();
                }
            }
            _ => self.forget_commits(),
        }
        self.changed.send_replace(self.latest.commit);
    }

    /// Takes `next`, read from the lake, as the latest unless this catalog holds it already
    /// (keeping the history that leads to it) or a later one.
    pub fn adopt(&mut self, next: Arc<Snapshot>) {
        if next.commit > self.latest.commit {
            self.publish(next, None);
        }
    }

    fn forget_commits(&mut self) {
        self.commits.clear();
        self.commit_bytes = 0;
    }

    /// The snapshot of commit `commit`, if it is the latest or one kept.
    pub fn at(&self, commit: u64) -> Option<Arc<Snapshot>> {
        if self.latest.commit == commit {
            return Some(self.latest.clone());
        }
        let position = self
            .recent
            .binary_search_by_key(&commit, |s| s.commit)
            .ok()?;
        Some(self.recent[position].clone())
    }

    fn commits_after(&self, after: u64) -> CommitsAfter {
        if after >= self.latest.commit {
            return CommitsAfter::Commits(Vec::new());
        }
        match self.commits.front() {
            Some(first) if first.commit <= after + 1 => {
                let skip = (after + 1 - first.commit) as usize;
                let commits = self.commits.iter().skip(skip).take(COMMITS_PER_ANSWER);
                CommitsAfter::Commits(commits.cloned().collect())
            }
            _ => CommitsAfter::Behind,
        }
    }
}

impl Catalog {
    /// The commits after `after` this catalog keeps, for a follower's stream (ADR 0053).
    pub fn commits_after(&self, after: u64) -> CommitsAfter {
        self.current
            .lock()
            .expect("snapshot lock")
            .commits_after(after)
    }

    /// Waits, at most `patience`, until the catalog holds a commit after `after`; returns
    /// whether it does.
    pub async fn wait_for_commit_after(&self, after: u64, patience: Duration) -> bool {
        let mut changed = self
            .current
            .lock()
            .expect("snapshot lock")
            .changed
            .subscribe();
        let arrived = tokio::time::timeout(patience, changed.wait_for(|&latest| latest > after));
        matches!(arrived.await, Ok(Ok(_)))
    }

    /// Applies a commit of the leader's stream to a catalog that follows (ADR 0053).
    pub fn apply_streamed(&self, streamed: Arc<StreamedCommit>) -> Result<Applied> {
        assert!(!self.leads(), "a leader makes its own commits");
        let mut current = self.current.lock().expect("snapshot lock");
        if streamed.commit <= current.latest.commit {
            return Ok(Applied::Held);
        }
        if streamed.commit != current.latest.commit + 1 {
            return Ok(Applied::Gap);
        }
        let mut next = (*current.latest).clone();
        next.commit = streamed.commit;
        let retain = Duration::from_millis(streamed.retain_ms);
        // The leader's round wrote these keys; a follower writes nothing.
        let mut discarded = slatedb::WriteBatch::new();
        for change in streamed.changes.iter().cloned() {
            apply(&mut next, &mut discarded, change, streamed.time_ms, retain).map_err(|e| {
                CatalogError::Store(format!(
                    "commit {} of the leader's stream does not apply here: {e}",
                    streamed.commit
                ))
            })?;
        }
        current.publish(Arc::new(next), Some(streamed));
        Ok(Applied::Applied)
    }
}
