//! A catalog another process writes (ADR 0053): read through SlateDB's reader, which fences no
//! one, with every commit handed to the leader, which orders it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::ObjectStore;
use pondra_storage::Lake;
use slatedb::{DbReader, DbReaderMode};

use crate::catalog::{CATALOG_PATH, Catalog, Change, Mode, bounded, load_snapshot};
use crate::committer::Published;
use crate::error::{CatalogError, Result};
use crate::snapshot::Snapshot;
use crate::wire::ForwardedCommit;

/// The process that leads a lake, as a catalog that does not lead reaches it.
pub trait Leader: Send + Sync {
    /// Commits `commit` at the leader: its number once durable, or `CatalogError::Conflict`
    /// when it conflicts with a commit made since its base. Sending the same (producer,
    /// sequence) again is safe: it commits once.
    fn commit(
        &self,
        commit: ForwardedCommit,
    ) -> Pin<Box<dyn Future<Output = Result<u64>> + Send + '_>>;
}

/// How long a reader may lag the commit it was told of before a commit gives up on reading
/// its own write.
const CATCH_UP: Duration = Duration::from_secs(5);

pub(crate) struct Forwarding {
    store: Arc<dyn ObjectStore>,
    leader: Arc<dyn Leader>,
    producer: String,
    next_sequence: AtomicU64,
    /// One commit at a time: each prepares against the snapshot the one before left.
    turn: tokio::sync::Mutex<()>,
}

impl Catalog {
    /// Opens the catalog of a lake another process leads, to read it and to hand commits to
    /// `leader` under the producer name `producer` (unique to this process).
    pub async fn open_forwarding(
        lake: &Lake,
        leader: Arc<dyn Leader>,
        producer: String,
        retain: Duration,
    ) -> Result<Catalog> {
        let store = lake.store();
        let snapshot = read_snapshot(&store).await?;
        let forwarding = Forwarding {
            store,
            leader,
            producer,
            next_sequence: AtomicU64::new(1),
            turn: tokio::sync::Mutex::new(()),
        };
        Ok(Catalog {
            mode: Mode::Forwarding(forwarding),
            current: Arc::new(Mutex::new(Published::new(Arc::new(snapshot)))),
            retain,
        })
    }

    /// Whether this process writes the catalog itself (it leads).
    pub fn leads(&self) -> bool {
        matches!(self.mode, Mode::Writer { .. })
    }
}

impl Forwarding {
    /// Commits the changes `prepare` makes for the latest snapshot this process holds, at the
    /// leader (which rebases them on its own latest), then reads the catalog again so that
    /// the next statement sees the commit.
    pub(crate) async fn commit_with<E, F>(
        &self,
        current: &Mutex<Published>,
        prepare: F,
    ) -> std::result::Result<u64, E>
    where
        E: From<CatalogError>,
        F: FnOnce(&Snapshot) -> std::result::Result<Vec<Change>, E>,
    {
        let _turn = self.turn.lock().await;
        let base = current.lock().expect("snapshot lock").latest.clone();
        let changes = prepare(&base)?;
        let commit = ForwardedCommit {
            base: base.commit,
            changes,
            producer: self.producer.clone(),
            sequence: self.next_sequence.fetch_add(1, Ordering::Relaxed),
        };
        let committed = self.leader.commit(commit).await?;
        let started = tokio::time::Instant::now();
        loop {
            let snapshot = read_snapshot(&self.store).await?;
            if snapshot.commit >= committed {
                current
                    .lock()
                    .expect("snapshot lock")
                    .replace(Arc::new(snapshot));
                return Ok(committed);
            }
            if started.elapsed() > CATCH_UP {
                return Err(CatalogError::Store(format!(
                    "the leader committed {committed}, but the catalog still reads {}",
                    snapshot.commit
                ))
                .into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The latest snapshot of the catalog in `store`, read without writing anything.
async fn read_snapshot(store: &Arc<dyn ObjectStore>) -> Result<Snapshot> {
    let reader = DbReader::builder(CATALOG_PATH, store.clone())
        .with_reader_mode(DbReaderMode::FollowLatest)
        .build();
    let reader = bounded("opening a reader of", reader).await?;
    let scan = bounded("reading", reader.scan(..)).await?;
    let snapshot = load_snapshot(scan).await;
    // A reader writes nothing: closing it can only fail to stop its own tasks.
    let _ = reader.close().await;
    snapshot
}
