//! Group commit (ADR 0046). Writers hand their commits to one committer task; it takes every
//! commit waiting when it starts as one round, checks each against the snapshot the earlier
//! ones of the round make, and stores the round with one SlateDB write batch and one flush.
//! A writer is answered once the round is durable; a round is applied whole or not at all.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use slatedb::{Db, WriteBatch};
use tokio::sync::{mpsc, oneshot};

use crate::catalog::{Change, apply, bounded, now_ms};
use crate::error::{CatalogError, Result};
use crate::keys;
use crate::published::{Published, StreamedCommit};
use crate::snapshot::Snapshot;

/// A writer's check-and-prepare: from the snapshot the round has made so far, the changes to
/// apply, or why this writer's commit is refused.
pub(crate) type Prepare = Box<dyn FnOnce(&Snapshot) -> Result<Vec<Change>, Refusal> + Send>;

/// Why one writer's commit was not made.
pub(crate) enum Refusal {
    /// Its prepare failed with an error of the writer's own type, which the writer downcasts.
    Prepared(Box<dyn Any + Send>),
    /// Its changes did not apply, or the round's write failed.
    Catalog(CatalogError),
    /// Its prepare panicked: the panic goes back to the writer's task, not the committer's.
    Panicked(Box<dyn Any + Send>),
}

struct Request {
    prepare: Prepare,
    answer: oneshot::Sender<Result<u64, Refusal>>,
}

/// The handle writers submit to; the task behind it ends when the handle is dropped.
pub(crate) struct Committer {
    requests: mpsc::UnboundedSender<Request>,
}

impl Committer {
    /// Starts the committer task of a catalog. It publishes each durable round in `current`.
    /// A write that finds the catalog fenced (another writer opened it) sets `fenced`.
    pub(crate) fn start(
        db: Db,
        current: Arc<Mutex<Published>>,
        retain: Duration,
        fenced: Arc<AtomicBool>,
    ) -> Self {
        let (requests, receiver) = mpsc::unbounded_channel();
        // A task of its own, so that a round, once begun, completes even if the writer that
        // started it stops waiting.
        tokio::spawn(commit_rounds(db, current, retain, fenced, receiver));
        Committer { requests }
    }

    /// Queues a commit now, after every commit queued before it; the answer comes once it is
    /// durable (its commit number) or refused.
    pub(crate) fn hand(
        &self,
        prepare: Prepare,
    ) -> impl std::future::Future<Output = Result<u64, Refusal>> + use<> {
        let (answer, answered) = oneshot::channel();
        let sent = self.requests.send(Request { prepare, answer });
        async move {
            let stopped =
                || Refusal::Catalog(CatalogError::Store("the committer has stopped".into()));
            sent.map_err(|_| stopped())?;
            answered.await.map_err(|_| stopped())?
        }
    }
}

/// The longest a round waits for the writers the round before it answered.
const MAX_LINGER: Duration = Duration::from_millis(2);
/// How long a round waiting for writers waits for the next one before it starts without the
/// rest.
const ARRIVAL_GAP: Duration = Duration::from_micros(500);

/// The committer's loop: every request waiting when a round starts joins it, and those that
/// arrive while it is flushing form the next. A round also waits, briefly, for the writers the
/// previous round answered: a writer that commits again at once (a producer of batches) then
/// joins the next round instead of the one after it, so that busy writers share one flush
/// rather than alternating between two (ADR 0046).
async fn commit_rounds(
    db: Db,
    current: Arc<Mutex<Published>>,
    retain: Duration,
    fenced: Arc<AtomicBool>,
    mut receiver: mpsc::UnboundedReceiver<Request>,
) {
    let mut returning = Returning::none();
    while let Some(first) = receiver.recv().await {
        let requests = returning.take_round(first, &mut receiver).await;
        let answered = requests.len();
        let latest = current.lock().expect("snapshot lock").latest.clone();
        let (round, accepted) = gather(latest, retain, requests);
        if accepted.is_empty() {
            returning = Returning::none();
            continue;
        }
        let (next, batch, streamed) = round.finish();
        let commit = next.commit;
        let flush_started = Instant::now();
        let flushed = bounded("a commit", async {
            db.write(batch).await?;
            db.flush().await
        })
        .await;
        // Those who queued during the flush are counted as well: they are answered next.
        returning = Returning::after(answered + receiver.len(), flush_started.elapsed());
        match flushed {
            Ok(()) => {
                // Published before anyone is answered: a writer reads its own commit.
                current
                    .lock()
                    .expect("snapshot lock")
                    .publish(Arc::new(next), Some(Arc::new(streamed)));
                for answer in accepted {
                    let _ = answer.send(Ok(commit));
                }
            }
            Err(error) => {
                if matches!(error, CatalogError::Fenced(_)) {
                    fenced.store(true, Ordering::SeqCst);
                }
                for answer in accepted {
                    let _ = answer.send(Err(Refusal::Catalog(copy_of(&error))));
                }
            }
        }
    }
}

/// How many writers the next round expects, until when it waits for them, and how long it
/// waits for the next one of them.
struct Returning {
    expected: usize,
    until: Instant,
    gap: Duration,
}

impl Returning {
    /// Expects no one: a round takes what is waiting and starts.
    fn none() -> Returning {
        Returning {
            expected: 0,
            until: Instant::now(),
            gap: ARRIVAL_GAP,
        }
    }

    /// Expects `writers` back within half a flush (at most `MAX_LINGER`) from now: a writer
    /// that commits in a loop comes back within a round trip, and waiting longer than a
    /// fraction of a flush would cost more than a shared flush saves.
    fn after(writers: usize, flush: Duration) -> Returning {
        Returning {
            expected: writers,
            until: Instant::now() + (flush / 2).min(MAX_LINGER),
            gap: ARRIVAL_GAP,
        }
    }

    /// The requests of the next round: `first`, every one waiting, and those that arrive
    /// until the expected number are in, the wait is over, or none came for a gap.
    async fn take_round(
        &self,
        first: Request,
        receiver: &mut mpsc::UnboundedReceiver<Request>,
    ) -> Vec<Request> {
        let mut requests = vec![first];
        loop {
            while let Ok(request) = receiver.try_recv() {
                requests.push(request);
            }
            if requests.len() >= self.expected {
                return requests;
            }
            // Writers coming back arrive close together; a gap means the rest are not coming
            // soon, and waiting on would only delay the ones already here.
            let deadline = self.until.min(Instant::now() + self.gap);
            let deadline = tokio::time::Instant::from_std(deadline);
            match tokio::time::timeout_at(deadline, receiver.recv()).await {
                Ok(Some(request)) => requests.push(request),
                // The wait is over, or every handle is gone: the round starts with these.
                Ok(None) | Err(_) => return requests,
            }
        }
    }
}

/// Runs each request's prepare against the round so far and adds the changes of those that
/// apply; the others are answered with their refusal. Returns the round and the answers owed
/// to the writers it accepted.
fn gather(
    latest: Arc<Snapshot>,
    retain: Duration,
    requests: Vec<Request>,
) -> (Round, Vec<oneshot::Sender<Result<u64, Refusal>>>) {
    let mut round = Round::new(latest, retain);
    let mut accepted = Vec::with_capacity(requests.len());
    for Request { prepare, answer } in requests {
        let prepared = catch_unwind(AssertUnwindSafe(|| prepare(&round.next)))
            .unwrap_or_else(|panic| Err(Refusal::Panicked(panic)));
        match prepared.and_then(|changes| round.add(changes).map_err(Refusal::Catalog)) {
            Ok(()) => accepted.push(answer),
            Err(refusal) => {
                let _ = answer.send(Err(refusal));
            }
        }
    }
    debug_assert_eq!(round.accepted.len(), accepted.len());
    (round, accepted)
}

/// The commit a round builds: the latest snapshot with the accepted writers' changes applied,
/// and the write batch that stores them.
struct Round {
    start: Arc<Snapshot>,
    /// The commit time of every segment of the round.
    now: u64,
    retain: Duration,
    next: Snapshot,
    batch: WriteBatch,
    /// The changes of each writer accepted so far, in order: when a later writer's changes
    /// fail half applied, the round is rebuilt from `start` with these.
    accepted: Vec<Vec<Change>>,
}

impl Round {
    fn new(start: Arc<Snapshot>, retain: Duration) -> Round {
        let mut next = (*start).clone();
        next.commit += 1;
        Round {
            start,
            now: now_ms(),
            retain,
            next,
            batch: WriteBatch::new(),
            accepted: Vec::new(),
        }
    }

    /// Applies one writer's changes after those accepted so far; on an error none of them
    /// stays applied.
    fn add(&mut self, changes: Vec<Change>) -> Result<()> {
        let kept = changes.clone();
        for change in changes {
            if let Err(error) = apply(
                &mut self.next,
                &mut self.batch,
                change,
                self.now,
                self.retain,
            ) {
                self.rebuild();
                return Err(error);
            }
        }
        self.accepted.push(kept);
        Ok(())
    }

    /// Starts the round over from its start snapshot with the accepted changes.
    fn rebuild(&mut self) {
        let mut next = (*self.start).clone();
        next.commit += 1;
        let mut batch = WriteBatch::new();
        for change in self.accepted.iter().flatten() {
            apply(&mut next, &mut batch, change.clone(), self.now, self.retain)
                .expect("changes that applied in this order apply again");
        }
        self.next = next;
        self.batch = batch;
    }

    /// The snapshot the round makes, the batch that stores it (with the commit counters), and
    /// the round as the stream carries it to followers.
    fn finish(mut self) -> (Snapshot, WriteBatch, StreamedCommit) {
        assert_eq!(
            self.next.commit,
            self.start.commit + 1,
            "a round is one commit"
        );
        self.batch
            .put(keys::LAST_COMMIT, self.next.commit.to_be_bytes());
        self.batch
            .put(keys::NEXT_TABLE_ID, self.next.next_table_id.to_be_bytes());
        let streamed = StreamedCommit {
            commit: self.next.commit,
            time_ms: self.now,
            retain_ms: self.retain.as_millis() as u64,
            changes: self.accepted.into_iter().flatten().collect(),
        };
        (self.next, self.batch, streamed)
    }
}

/// The error a round's write failed with, for one of its writers.
fn copy_of(error: &CatalogError) -> CatalogError {
    match error {
        CatalogError::Fenced(message) => CatalogError::Fenced(message.clone()),
        CatalogError::Store(message) => CatalogError::Store(message.clone()),
        other => CatalogError::Store(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use pondra_storage::Lake;

    use super::*;
    use crate::catalog::Catalog;
    use crate::types::{SegmentPayload, TableDef, TableKind};

    const WRITERS: usize = 48;
    /// Every this-many-th writer's prepare refuses its commit.
    const REFUSED_EVERY: usize = 10;
    /// The writer whose changes fail half applied (a second table of an existing name).
    const HALF_APPLIED: usize = 7;

    fn table(name: &str) -> Change {
        Change::CreateTable {
            def: TableDef::new(name.into(), Vec::new(), TableKind::Table),
            initial: None,
        }
    }

    fn append(table_id: u64) -> Change {
        Change::AppendSegment {
            table_id,
            rows: 1,
            payload: SegmentPayload::Inline(Bytes::from_static(b"rows")),
            ranges: vec![Some((1, 2)), None],
            column_ids: Vec::new(),
            partition: 0,
        }
    }

    fn sequence(producer: &str, sequence: u64) -> Change {
        Change::ProducerSequence {
            producer: producer.into(),
            sequence,
        }
    }

    /// Writer `i`'s commit: an append and its own producer's sequence number, or a refusal.
    fn writer_changes(i: usize, table_id: u64, snapshot: &Snapshot) -> Result<Vec<Change>> {
        if i.is_multiple_of(REFUSED_EVERY) {
            return Err(CatalogError::Store(format!("writer {i} refuses")));
        }
        let mut changes = vec![append(table_id), sequence(&format!("writer-{i}"), 1)];
        if i == HALF_APPLIED {
            changes.push(table("events"));
        }
        // Two writers claim one sequence number: the later one sees the earlier's in the round.
        if i == 1 || i == 2 {
            if snapshot
                .producers
                .get("claimed")
                .is_some_and(|last| *last >= 5)
            {
                return Err(CatalogError::Store("sequence 5 already claimed".into()));
            }
            changes.push(sequence("claimed", 5));
        }
        Ok(changes)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_commits_share_rounds_and_a_refused_one_leaves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open_folder(dir.path()).unwrap();
        let catalog = Arc::new(Catalog::open(&lake, Duration::from_secs(60)).await.unwrap());
        catalog.commit(vec![table("events")]).await.unwrap();
        let table_id = catalog.snapshot().table("events").unwrap().id;

        // A first commit holds the committer until every writer has queued behind it, so
        // that they all wait for the same round.
        let queued = Arc::new(AtomicUsize::new(0));
        let holder = {
            let (catalog, queued) = (catalog.clone(), queued.clone());
            tokio::spawn(async move {
                catalog
                    .commit_with(move |_| {
                        while queued.load(Ordering::SeqCst) < WRITERS {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        std::thread::sleep(Duration::from_millis(20));
                        Ok::<_, CatalogError>(vec![append(table_id)])
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let writers: Vec<_> = (0..WRITERS)
            .map(|i| {
                let (catalog, queued) = (catalog.clone(), queued.clone());
                tokio::spawn(async move {
                    queued.fetch_add(1, Ordering::SeqCst);
                    catalog
                        .commit_with(move |snapshot| writer_changes(i, table_id, snapshot))
                        .await
                })
            })
            .collect();
        let held = holder.await.unwrap().unwrap();
        let mut rounds = BTreeSet::new();
        let mut committed = Vec::new();
        for (i, writer) in writers.into_iter().enumerate() {
            match writer.await.unwrap() {
                Ok(commit) => {
                    rounds.insert(commit);
                    committed.push(i);
                }
                Err(e) => {
                    // Of writers 1 and 2, whichever queued second loses the claimed number.
                    let refused = i % REFUSED_EVERY == 0 || i == HALF_APPLIED || i == 1 || i == 2;
                    assert!(refused, "writer {i} failed: {e}");
                }
            }
        }
        let claimants = committed.iter().filter(|i| **i == 1 || **i == 2).count();
        assert_eq!(claimants, 1, "one of two writers claiming a number commits");
        assert_eq!(rounds.len(), 1, "every writer queued behind one round");
        assert!(rounds.iter().all(|round| *round > held));
        let expected = (0..WRITERS)
            .filter(|i| i % REFUSED_EVERY != 0 && *i != HALF_APPLIED && *i != 2)
            .count();
        // (Writer 1 or writer 2 stands for the claimant that committed.)
        assert_eq!(committed.len(), expected);

        // Reopened, the lake holds exactly the accepted commits.
        let last = *rounds.last().unwrap();
        catalog.close().await.unwrap();
        drop(catalog);
        let reopened = Catalog::open(&lake, Duration::from_secs(60)).await.unwrap();
        let snapshot = reopened.snapshot();
        assert_eq!(snapshot.commit, last);
        assert_eq!(snapshot.segments(table_id).len(), committed.len() + 1);
        // Each segment's column ranges came back with it.
        let ranges = vec![Some((1, 2)), None];
        assert!(
            snapshot
                .segments(table_id)
                .iter()
                .all(|s| s.ranges == ranges)
        );
        let round: Vec<u32> = snapshot
            .segments(table_id)
            .iter()
            .filter(|s| s.commit == last)
            .map(|s| s.index)
            .collect();
        assert_eq!(round, (0..committed.len() as u32).collect::<Vec<_>>());
        for i in 0..WRITERS {
            let producer = format!("writer-{i}");
            let expected = committed.contains(&i).then_some(&1);
            assert_eq!(snapshot.producers.get(&producer), expected, "{producer}");
        }
        assert_eq!(snapshot.producers.get("claimed"), Some(&5));
        assert_eq!(snapshot.tables.len(), 1);
        reopened.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_panicking_prepare_reaches_its_writer_and_the_committer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open_folder(dir.path()).unwrap();
        let catalog = Arc::new(Catalog::open(&lake, Duration::from_secs(60)).await.unwrap());
        let panicking = {
            let catalog = catalog.clone();
            tokio::spawn(async move {
                catalog
                    .commit_with(|_| -> Result<Vec<Change>> { panic!("prepare panicked") })
                    .await
            })
        };
        let panic = panicking.await.unwrap_err();
        assert!(panic.is_panic());
        let commit = catalog.commit(vec![table("after")]).await.unwrap();
        assert_eq!(catalog.snapshot().commit, commit);
        catalog.close().await.unwrap();
    }

    /// A request whose prepare changes nothing, and the receiver its answer comes to.
    fn request() -> (Request, oneshot::Receiver<Result<u64, Refusal>>) {
        let (answer, answered) = oneshot::channel();
        let prepare: Prepare = Box::new(|_| Ok(Vec::new()));
        (Request { prepare, answer }, answered)
    }

    #[tokio::test]
    async fn a_round_waits_for_the_writers_it_expects_and_no_longer() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let (first, _a) = request();
        let (waiting, _b) = request();
        sender.send(waiting).unwrap();
        // Two expected back within a long wait: the late one arrives after 20 ms and joins.
        let returning = Returning {
            expected: 3,
            until: Instant::now() + Duration::from_secs(30),
            gap: Duration::from_secs(30),
        };
        let late = {
            let sender = sender.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let (late, _answered) = request();
                sender.send(late).unwrap();
            })
        };
        let round = returning.take_round(first, &mut receiver).await;
        assert_eq!(round.len(), 3);
        late.await.unwrap();

        // Once the wait is over, or no one came for a gap, a round starts with what is there.
        let started = Instant::now();
        let (first, _c) = request();
        assert_eq!(
            Returning::none()
                .take_round(first, &mut receiver)
                .await
                .len(),
            1
        );
        let expired = Returning {
            expected: 5,
            until: Instant::now(),
            gap: Duration::from_secs(30),
        };
        let (first, _d) = request();
        assert_eq!(expired.take_round(first, &mut receiver).await.len(), 1);
        let gap = Returning {
            expected: 5,
            until: Instant::now() + Duration::from_secs(30),
            gap: Duration::from_millis(10),
        };
        let (first, _e) = request();
        assert_eq!(gap.take_round(first, &mut receiver).await.len(), 1);
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
