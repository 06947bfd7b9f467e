//! A catalog another process writes (ADR 0053): read through SlateDB's reader, which fences no
//! one, with every commit handed to the leader, which orders it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::timeout;

use object_store::ObjectStore;
use pondra_storage::Lake;
use slatedb::{DbReader, DbReaderMode};

use crate::catalog::{CATALOG_PATH, Catalog, Change, Mode, bounded, load_snapshot};
use crate::error::{CatalogError, Result};
use crate::published::Published;
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

/// How long a commit waits for the leader's stream to bring it before reading the catalog
/// from the lake.
const STREAM_PATIENCE: Duration = Duration::from_millis(500);

pub(crate) struct Forwarding {
    store: Arc<dyn ObjectStore>,
    /// None on a node that only reads (`pondra serve --read-only`).
    leader: Option<Arc<dyn Leader>>,
    producer: String,
    next_sequence: AtomicU64,
    /// Whether the leader's stream feeds this catalog; if not, it reads the catalog from the
    /// lake after each commit.
    streamed: bool,
    /// One commit at a time: each prepares against the snapshot the one before left.
    turn: tokio::sync::Mutex<()>,
}

impl Catalog {
    /// Opens the catalog of a lake another process leads, to read it and, unless `leader` is
    /// none, to hand commits to `leader` under the producer name `producer` (unique to this
    /// process). No stream of commits feeds it: it reads the catalog again after each of its
    /// own commits.
    pub async fn open_forwarding(
        lake: &Lake,
        leader: Option<Arc<dyn Leader>>,
        producer: String,
        retain: Duration,
    ) -> Result<Catalog> {
        let store = lake.store();
        let snapshot = read_snapshot(&store).await?;
        let forwarding = Forwarding::new(store, leader, producer, false);
        Ok(Catalog {
            mode: std::sync::RwLock::new(Arc::new(Mode::Forwarding(forwarding))),
            current: Arc::new(Mutex::new(Published::new(Arc::new(snapshot)))),
            retain,
            fenced: Default::default(),
        })
    }

    /// Hands commits to `leader` from now on (none: refuses them), closing the catalog's writer
    /// if this process held it (ADR 0053: a leader another process replaced). The leader's
    /// stream is to feed the catalog from now on (`apply_streamed`).
    pub async fn follow(&self, lake: &Lake, leader: Option<Arc<dyn Leader>>, producer: String) {
        let forwarding = Forwarding::new(lake.store(), leader, producer, true);
        let earlier = std::mem::replace(
            &mut *self.mode.write().expect("mode lock"),
            Arc::new(Mode::Forwarding(forwarding)),
        );
        if let Mode::Writer { db, .. } = &*earlier {
            // Fenced already, most likely: closing only stops its tasks.
            let _ = tokio::time::timeout(Duration::from_secs(1), db.close()).await;
        }
    }

    /// Reads the catalog from the lake and takes it unless this catalog holds it already: a
    /// follower too far behind its leader's stream, or following a new leader.
    pub async fn reload(&self, lake: &Lake) -> Result<()> {
        let snapshot = read_snapshot(&lake.store()).await?;
        self.current
            .lock()
            .expect("snapshot lock")
            .adopt(Arc::new(snapshot));
        Ok(())
    }

    /// Whether this process writes the catalog itself (it leads).
    pub fn leads(&self) -> bool {
        matches!(&*self.mode(), Mode::Writer { .. })
    }
}

impl Forwarding {
    fn new(
        store: Arc<dyn ObjectStore>,
        leader: Option<Arc<dyn Leader>>,
        producer: String,
        streamed: bool,
    ) -> Forwarding {
        Forwarding {
            store,
            leader,
            producer,
            streamed,
            next_sequence: AtomicU64::new(1),
            turn: tokio::sync::Mutex::new(()),
        }
    }

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
        let Some(leader) = &self.leader else {
            return Err(CatalogError::ReadOnly.into());
        };
        let _turn = self.turn.lock().await;
        let base = current.lock().expect("snapshot lock").latest.clone();
        let changes = prepare(&base)?;
        let commit = ForwardedCommit {
            base: base.commit,
            changes,
            producer: self.producer.clone(),
            sequence: self.next_sequence.fetch_add(1, Ordering::Relaxed),
        };
        let committed = leader.commit(commit).await?;
        self.wait_for(current, committed).await?;
        Ok(committed)
    }

    /// Waits until this catalog holds commit `committed`: brought by the leader's stream, or,
    /// when that is slow or absent, read from the lake.
    async fn wait_for(&self, current: &Mutex<Published>, committed: u64) -> Result<()> {
        let held = || current.lock().expect("snapshot lock").latest.commit >= committed;
        // Resolves once the stream has brought the commit.
        let streamed = || async {
            while !held() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        let started = tokio::time::Instant::now();
        if held() || (self.streamed && timeout(STREAM_PATIENCE, streamed()).await.is_ok()) {
            return Ok(());
        }
        // Reading the catalog from a bucket takes a while: the stream may bring the commit
        // first, and then the read is not waited for.
        loop {
            let snapshot = tokio::select! {
                snapshot = read_snapshot(&self.store) => snapshot?,
                () = streamed(), if self.streamed => return Ok(()),
            };
            let read = snapshot.commit;
            current
                .lock()
                .expect("snapshot lock")
                .adopt(Arc::new(snapshot));
            if held() {
                return Ok(());
            }
            if started.elapsed() > CATCH_UP {
                return Err(CatalogError::Store(format!(
                    "the leader committed {committed}, but the catalog still reads {read}"
                )));
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
