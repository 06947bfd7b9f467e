use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use pondra_storage::Lake;
use slatedb::config::{
    CompactorOptions, FlushOptions, FlushType, GarbageCollectorOptions, Settings,
};
use slatedb::{Db, WriteBatch};

use roaring::RoaringBitmap;

use crate::committer::{Committer, Prepare, Refusal};
use crate::deletions::Container;
use crate::error::{CatalogError, Result};
use crate::keys;
use crate::published::Published;
use crate::snapshot::Snapshot;
use crate::types::{DataFile, LogSegment, SegmentPayload, TableDef};

mod deleting;

/// The folder inside the lake that holds the SlateDB database.
pub(crate) const CATALOG_PATH: &str = "catalog";

/// How long any one catalog store operation may take before it is reported as failed, so that
/// a store that stops answering becomes an error instead of a hang.
const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long closing waits for background work before the process leaves without it.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Runs a catalog store operation under [`STORE_TIMEOUT`].
pub(crate) async fn bounded<T>(
    what: &str,
    operation: impl std::future::Future<Output = std::result::Result<T, slatedb::Error>>,
) -> Result<T> {
    match tokio::time::timeout(STORE_TIMEOUT, operation).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(CatalogError::Store(format!(
            "the catalog store did not finish {what} within {} s",
            STORE_TIMEOUT.as_secs()
        ))),
    }
}

/// One change in a commit. A commit applies all of its changes or none. Serializable, for a
/// node that does not lead to hand its commit to the leader (ADR 0053).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Change {
    /// Creates a table, with the rows it starts with; its `id` is assigned by the commit.
    CreateTable {
        def: TableDef,
        initial: Option<(u64, SegmentPayload)>,
    },
    /// Drops a table with its log segments and files; its objects are deleted after the retention.
    DropTable { name: String },
    /// Creates a schema (`CREATE SCHEMA`); its id is assigned by the commit.
    CreateSchema { name: String },
    /// Drops a schema, which must hold no table by then.
    DropSchema { name: String },
    /// Appends rows to a table's log tail, with the ranges of their integer and date columns
    /// (`column_ranges`; empty when not gathered).
    AppendSegment {
        table_id: u64,
        rows: u64,
        payload: SegmentPayload,
        ranges: Vec<Option<(i64, i64)>>,
        /// The ids of the columns the rows hold ([`TableDef::stored_column_ids`]).
        column_ids: Vec<u32>,
        /// The Kafka partition the rows are appended to (ADR 0079): 0 unless produced to another.
        #[serde(default, skip_serializing_if = "is_partition_zero")]
        partition: u16,
    },
    /// Replaces log segments and files of a table with new files (tiering and compaction).
    /// The replaced objects are deleted after the retention, with their deletion vectors.
    Replace {
        table_id: u64,
        /// (commit, index) of each log segment removed.
        segments: Vec<(u64, u32)>,
        /// Paths of the data files removed.
        files: Vec<String>,
        added: Vec<DataFile>,
        /// How many rows of the removed containers were deleted when their rows were read
        /// (and left out of `added`): if more are by now, the change is refused, as it would
        /// bring deleted rows back.
        deleted: u64,
    },
    /// Records what a commit changed in a table's rows, for its change feed (ADR 0048): the
    /// rows it removed and added, each with its change type.
    RecordChanges {
        table_id: u64,
        rows: u64,
        payload: SegmentPayload,
        /// The ids of the table's columns the records hold ([`TableDef::stored_column_ids`]).
        column_ids: Vec<u32>,
    },
    /// Marks rows of one container of a table deleted (ADR 0048): refused if one of them
    /// already is (a concurrent statement deleted it), or if the container is gone (tiering
    /// moved its rows). A container whose every row is deleted is removed.
    DeleteRows {
        table_id: u64,
        container: Container,
        #[serde(with = "crate::wire::bitmap")]
        rows: RoaringBitmap,
    },
    /// Makes `added` the whole content of a table: every log segment and file it holds when
    /// the change applies is removed (UPDATE, DELETE, an upsert that replaced rows). Unlike a
    /// `Replace` listed earlier, it stays right if tiering moved segments into files since.
    ReplaceAll { table_id: u64, added: Vec<DataFile> },
    /// Replaces the definition of an existing table, keeping its id and rows (indexes).
    AlterTable { def: TableDef },
    /// Gives a table or view another name, keeping its id, rows and files.
    RenameTable { from: String, to: String },
    /// Records the sequence number a producer's append carried, in the commit of the append, so
    /// that a retry of it is recognized.
    ProducerSequence { producer: String, sequence: u64 },
    /// Records the greatest event time a commit wrote to a watermarked table and how many of
    /// its rows were late (ADR 0055): the table keeps the greatest of all and the sum.
    EventTime {
        table_id: u64,
        greatest: i64,
        late_rows: u64,
    },
    /// Forgets objects that have been deleted.
    ForgetGarbage { entries: Vec<(u64, String)> },
    /// Records the offsets a Kafka consumer group committed (ADR 0077).
    ConsumerOffsets { offsets: Vec<ConsumerOffset> },
    /// Saves a console notebook, a JSON document, under its name (ADR 0080).
    SaveNotebook { name: String, body: String },
    /// Removes a console notebook.
    DropNotebook { name: String },
    /// Creates, replaces, suspends or resumes a task (ADR 0081); its last tick never moves
    /// back.
    SaveTask { task: crate::TaskDef },
    /// Removes a task.
    DropTask { name: String },
    /// Claims the tick of task `name` scheduled at `scheduled` (microseconds): refused unless
    /// the task's last tick is before it, so a tick's changes commit once at most.
    TaskTick { name: String, scheduled: i64 },
    /// Records the graph of a data file for a vector index (ADR 0082); a graph of a file or
    /// index gone since it was built is not recorded (its object is listed for deletion).
    AddIndexGraph {
        table_id: u64,
        index: String,
        graph: crate::IndexGraph,
    },
    /// Creates or replaces a secret (ADR 0082), its options sealed.
    SaveSecret { secret: crate::SealedSecret },
    /// Removes a secret.
    DropSecret { name: String },
    /// Keeps answers of language models (ADR 0082); an answer already kept stays as it is.
    SaveAnswers { answers: Vec<crate::ModelAnswer> },
}

/// The offset a consumer group committed for a topic's partition (ADR 0077), with the text
/// its client keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConsumerOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    #[serde(default)]
    pub metadata: Option<String>,
}

/// The catalog of one lake: a SlateDB database plus the latest snapshot in memory.
///
/// Commits are ordered here, by one committer that groups the commits waiting into rounds
/// (ADR 0046); the process that holds the catalog open is the lake's only writer (opening it
/// fences any earlier writer).
pub struct Catalog {
    /// Changes when this process takes the lead or hands it over (ADR 0053).
    pub(crate) mode: std::sync::RwLock<Arc<Mode>>,
    /// Shared with the committer, which publishes each round once it is durable.
    pub(crate) current: Arc<Mutex<Published>>,
    pub(crate) retain: Duration,
    /// Set when a write of this process's writer found another writer had opened the catalog.
    pub(crate) fenced: Arc<std::sync::atomic::AtomicBool>,
}

/// How a catalog commits.
pub(crate) enum Mode {
    /// This process writes the catalog: it leads.
    Writer { db: Db, committer: Committer },
    /// Another process leads; this one reads the catalog and hands its commits to the leader
    /// (ADR 0053).
    Forwarding(crate::forwarding::Forwarding),
}

impl Catalog {
    /// Opens the lake's catalog for writing, fencing any earlier writer, and loads it into memory.
    /// Objects replaced by later commits are kept for `retain` before they are deleted.
    pub async fn open(lake: &Lake, retain: Duration) -> Result<Catalog> {
        let db = open_writer(lake).await?;
        let snapshot = load_snapshot(db.scan(..).await?).await?;
        let current = Arc::new(Mutex::new(Published::new(Arc::new(snapshot))));
        let fenced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let committer = Committer::start(db.clone(), current.clone(), retain, fenced.clone());
        Ok(Catalog {
            mode: std::sync::RwLock::new(Arc::new(Mode::Writer { db, committer })),
            current,
            retain,
            fenced,
        })
    }

    pub(crate) fn mode(&self) -> Arc<Mode> {
        self.mode.read().expect("mode lock").clone()
    }

    /// Takes the catalog's writer for this process, which fences any earlier writer, and
    /// commits from now on (ADR 0053: a follower that took the lead). The snapshot this
    /// catalog holds gives way to the one in the lake, which is the same or later.
    pub async fn lead(&self, lake: &Lake) -> Result<()> {
        let db = open_writer(lake).await?;
        // A follower fed by the stream holds the latest commit already, most often: reading
        // the whole catalog again is then not needed.
        let held = self.snapshot().commit;
        let last = match db.get(keys::LAST_COMMIT).await? {
            Some(value) => decode_u64(keys::LAST_COMMIT, &value)?,
            None => 0,
        };
        if last < held {
            return Err(CatalogError::Store(format!(
                "the catalog's last commit is {last}, before commit {held} this node applied"
            )));
        }
        if last > held {
            let snapshot = load_snapshot(db.scan(..).await?).await?;
            self.current
                .lock()
                .expect("snapshot lock")
                .adopt(Arc::new(snapshot));
        }
        self.fenced
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let committer = Committer::start(
            db.clone(),
            self.current.clone(),
            self.retain,
            self.fenced.clone(),
        );
        *self.mode.write().expect("mode lock") = Arc::new(Mode::Writer { db, committer });
        Ok(())
    }

    /// The latest committed state.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.lock().expect("snapshot lock").latest.clone()
    }

    /// The snapshot of commit `commit`: the latest, or one of the last few before it; none for
    /// an older one (ADR 0053).
    pub fn snapshot_at(&self, commit: u64) -> Option<Arc<Snapshot>> {
        self.current.lock().expect("snapshot lock").at(commit)
    }

    /// Applies `changes` atomically and durably; returns the number of the commit that holds
    /// them (which may hold other writers' changes too: ADR 0046).
    ///
    /// Returns only once the commit is durable in the lake.
    pub async fn commit(&self, changes: Vec<Change>) -> Result<u64> {
        self.commit_with(move |_| Ok::<_, CatalogError>(changes))
            .await
    }

    /// Commits the changes `prepare` returns for the latest snapshot, with no commit between
    /// the two: `prepare` may check what the latest snapshot holds (a transaction's conflicts)
    /// and fail, and then nothing of it is committed. Returns the commit number once durable.
    ///
    /// Commits waiting together are grouped into one round (ADR 0046): `prepare` then sees the
    /// snapshot the earlier commits of the round make, whose `commit` is the round's, above
    /// every commit made before. A refused commit leaves the others of its round unaffected.
    pub async fn commit_with<E, F>(&self, prepare: F) -> std::result::Result<u64, E>
    where
        E: From<CatalogError> + Send + 'static,
        F: FnOnce(&Snapshot) -> std::result::Result<Vec<Change>, E> + Send + 'static,
    {
        self.commit_in_turn(prepare, std::future::ready(()), || {})
            .await
    }

    /// As `commit_with`, handed to the committer only once `turn` is done, and `handed` called
    /// as soon as it has been (ADR 0078): commits handed over one after another keep that
    /// order in the committer, and may share a round. A node that forwards its commits calls
    /// `handed` once the commit is done, since the leader may receive forwarded commits in
    /// another order than they were sent.
    pub async fn commit_in_turn<E, F>(
        &self,
        prepare: F,
        turn: impl std::future::Future<Output = ()> + Send,
        handed: impl FnOnce() + Send,
    ) -> std::result::Result<u64, E>
    where
        E: From<CatalogError> + Send + 'static,
        F: FnOnce(&Snapshot) -> std::result::Result<Vec<Change>, E> + Send + 'static,
    {
        turn.await;
        let mode = self.mode();
        let committer = match &*mode {
            Mode::Writer { committer, .. } => committer,
            Mode::Forwarding(forwarding) => {
                let committed = forwarding.commit_with(&self.current, prepare).await;
                handed();
                return committed;
            }
        };
        let prepare: Prepare = Box::new(move |snapshot| {
            prepare(snapshot).map_err(|error| Refusal::Prepared(Box::new(error)))
        });
        let answered = committer.hand(prepare);
        handed();
        match answered.await {
            Ok(commit) => Ok(commit),
            Err(Refusal::Prepared(error)) => Err(*error
                .downcast::<E>()
                .expect("a prepare fails with its writer's error type")),
            Err(Refusal::Catalog(error)) => Err(error.into()),
            Err(Refusal::Panicked(panic)) => std::panic::resume_unwind(panic),
        }
    }

    /// `snapshot` with `changes` applied in memory only: what a transaction reads (ADR 0045).
    /// Nothing is written; tables created get the ids a commit right now would give them.
    ///
    /// The changes take commit number `commit`: a transaction gives every statement's the one
    /// past its base, so that the segments its statements add are named by the commit it will
    /// be until it is (`rebase` renames them then).
    pub fn with_changes(
        &self,
        snapshot: &Snapshot,
        changes: Vec<Change>,
        commit: u64,
    ) -> Result<Snapshot> {
        assert!(
            commit >= snapshot.commit,
            "changes come after what they change"
        );
        let mut next = snapshot.clone();
        next.commit = commit;
        let now = now_ms();
        let mut discarded = WriteBatch::new();
        for change in changes {
            apply(&mut next, &mut discarded, change, now, self.retain)?;
        }
        Ok(next)
    }

    /// Writes the catalog's recent commits out of SlateDB's write-ahead log into a table, so
    /// that the next writer to open the catalog (a follower taking the lead) replays few WAL
    /// files: on a bucket each is a GET (ADR 0053). Nothing to do on a catalog that does not
    /// lead.
    pub async fn flush_log(&self) -> Result<()> {
        let mode = self.mode();
        let Mode::Writer { db, .. } = &*mode else {
            return Ok(());
        };
        let flush = db.flush_with_options(FlushOptions {
            flush_type: FlushType::MemTable,
        });
        let flushed = bounded("flushing", flush).await;
        if let Err(CatalogError::Fenced(_)) = &flushed {
            self.fenced.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        flushed
    }

    /// Whether this process leads but another writer has opened the catalog since: its
    /// commits fail, and it is to follow (ADR 0053).
    pub fn is_fenced(&self) -> bool {
        self.leads() && self.fenced.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Closes the database, flushing what it holds in memory.
    ///
    /// Every commit is already durable in the WAL; flushing the memtable only makes the next
    /// open cheaper. Right after a writer was killed, the flush can wait seconds on the store's
    /// background work; past [`CLOSE_GRACE`] the process leaves without it: the store is built
    /// to be stopped at any point, and the next writer replays the WAL.
    pub async fn close(&self) -> Result<()> {
        let mode = self.mode();
        let Mode::Writer { db, .. } = &*mode else {
            return Ok(());
        };
        let close = async {
            db.flush_with_options(FlushOptions {
                flush_type: FlushType::MemTable,
            })
            .await?;
            db.close().await
        };
        match tokio::time::timeout(CLOSE_GRACE, close).await {
            Ok(result) => Ok(result?),
            Err(_) => Ok(()),
        }
    }
}

/// Opens the lake's catalog as its writer, fencing any earlier one.
async fn open_writer(lake: &Lake) -> Result<Db> {
    let settings = Settings {
        // Every short-lived process (`pondra sql`) leaves an L0 table behind when it closes;
        // a quick compactor and a higher stall threshold keep writers from waiting seconds
        // for L0 to drain.
        l0_max_ssts: 32,
        compactor_options: Some(CompactorOptions {
            poll_interval: Duration::from_millis(200),
            ..Default::default()
        }),
        garbage_collector_options: Some(GarbageCollectorOptions {
            // A folder cannot do conditional overwrites, which boundary files need; the
            // stores of buckets can (ADR 0046).
            boundary_files_enabled: !lake.is_folder(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let db = bounded(
        "opening",
        Db::builder(CATALOG_PATH, lake.store())
            .with_settings(settings)
            .build(),
    )
    .await?;
    Ok(db)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Applies one change to `next` and records it in `batch`; on an error, both may hold part of
/// the change, and the caller starts over.
pub(crate) fn apply(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    change: Change,
    now: u64,
    retain: Duration,
) -> Result<()> {
    let deadline = now + retain.as_millis() as u64;
    match change {
        Change::CreateTable { mut def, initial } => {
            if next.tables.contains_key(&def.name) {
                return Err(CatalogError::TableExists(def.name));
            }
            check_schema_of(next, &def.name)?;
            next.next_table_id += 1;
            def.id = next.next_table_id;
            batch.put(
                keys::table(&def.name),
                serde_json::to_vec(&def).expect("json"),
            );
            let table_id = def.id;
            next.defined_at.insert(def.name.clone(), next.commit);
            next.rows_changed_at.insert(table_id, next.commit);
            next.tables.insert(def.name.clone(), Arc::new(def));
            if let Some((rows, payload)) = initial {
                let append = Change::AppendSegment {
                    table_id,
                    rows,
                    payload,
                    ranges: Vec::new(),
                    column_ids: Vec::new(),
                    partition: 0,
                };
                apply(next, batch, append, now, retain)?;
            }
        }
        Change::DropTable { name } => {
            let def = next
                .tables
                .remove(&name)
                .ok_or_else(|| CatalogError::TableNotFound(name.clone()))?;
            batch.delete(keys::table(&name));
            next.defined_at.insert(name.clone(), next.commit);
            next.rows_changed_at.remove(&def.id);
            if next.event_times.remove(&def.id).is_some() {
                batch.delete(keys::event_time(def.id));
            }
            let counted: Vec<(u64, u16)> = next
                .next_offsets
                .keys()
                .filter(|(table_id, _)| *table_id == def.id)
                .copied()
                .collect();
            for (table_id, partition) in counted {
                next.next_offsets.remove(&(table_id, partition));
                batch.delete(keys::next_offset(table_id, partition));
            }
            for segment in next.segments.remove(&def.id).unwrap_or_default().iter() {
                batch.delete(keys::segment(def.id, segment.commit, segment.index));
                if let SegmentPayload::Object(path) = &segment.payload {
                    schedule_delete(next, batch, deadline, path.clone());
                }
            }
            for file in next.files.remove(&def.id).unwrap_or_default().iter() {
                batch.delete(keys::file(def.id, &file.path));
                schedule_delete(next, batch, deadline, file.path.clone());
            }
            crate::vector_index::drop_stale_graphs(next, batch, (def.id, deadline));
            for container in next.deletions.remove(&def.id).unwrap_or_default().keys() {
                batch.delete(keys::deletion(def.id, container));
            }
            for record in next
                .change_records
                .remove(&def.id)
                .unwrap_or_default()
                .iter()
            {
                batch.delete(keys::change_record(def.id, record.commit, record.index));
                if let SegmentPayload::Object(path) = &record.payload {
                    schedule_delete(next, batch, deadline, path.clone());
                }
            }
        }
        Change::AppendSegment {
            table_id,
            rows,
            payload,
            ranges,
            column_ids,
            partition,
        } => {
            let table = table_with_id(next, table_id)?;
            if partition >= table.partitions {
                return Err(CatalogError::NoSuchPartition {
                    table: table.name.clone(),
                    partitions: table.partitions,
                    partition,
                });
            }
            next.rows_changed_at.insert(table_id, next.commit);
            let commit = next.commit;
            // Offsets follow the order commits apply in, on the leader and its followers alike.
            let first = take_offsets(&mut next.next_offsets, batch, (table_id, partition), rows);
            let first_offset = crate::types::lake_offset(partition, first);
            let segments = next.segments.entry(table_id).or_default();
            let segment = LogSegment {
                ranges,
                column_ids,
                first_offset: Some(first_offset),
                ..next_segment(segments.last(), (table_id, commit, now), rows, payload)
            };
            batch.put(
                keys::segment(table_id, commit, segment.index),
                encode_segment(&segment),
            );
            segments.push(segment);
        }
        Change::Replace {
            table_id,
            segments,
            files,
            added,
            deleted,
        } => {
            let table = table_with_id(next, table_id)?;
            let name = table.name.clone();
            let removed_containers = files
                .iter()
                .map(|path| Container::File(path.clone()))
                .chain(
                    segments
                        .iter()
                        .map(|&(commit, index)| Container::Segment { commit, index }),
                );
            if deleting::forget_vectors(next, batch, table_id, removed_containers) != deleted {
                return Err(CatalogError::DeletedConcurrently(name));
            }
            let mut removed_objects = Vec::new();
            let segments_listed = segments.len();
            let listed: HashSet<(u64, u32)> = segments.into_iter().collect();
            if !listed.is_empty() {
                let log = next.segments.entry(table_id).or_default();
                let removed = log.remove_where(|s| listed.contains(&(s.commit, s.index)));
                // A container missing was removed by a commit that deleted its every row
                // since the replacement was planned: a concurrent deletion, planned again.
                if removed.len() < listed.len() {
                    return Err(CatalogError::DeletedConcurrently(name));
                }
                for segment in removed {
                    batch.delete(keys::segment(table_id, segment.commit, segment.index));
                    if let SegmentPayload::Object(path) = segment.payload {
                        removed_objects.push(path);
                    }
                }
            }
            let listed: HashSet<String> = files.into_iter().collect();
            let table_files = Arc::make_mut(next.files.entry(table_id).or_default());
            let (removed, kept): (Vec<DataFile>, Vec<DataFile>) = std::mem::take(table_files)
                .into_iter()
                .partition(|f| listed.contains(&f.path));
            *table_files = kept;
            if removed.len() < listed.len() {
                return Err(CatalogError::DeletedConcurrently(name));
            }
            for file in removed {
                batch.delete(keys::file(table_id, &file.path));
                removed_objects.push(file.path);
            }
            // Files that replace nothing are rows loaded in bulk: they take the next offsets,
            // in order (ADR 0077). Tiered and compacted files carry their rows' own.
            let loaded = listed.is_empty() && segments_listed == 0;
            for mut file in added {
                file.commit = next.commit;
                file.committed_at_ms = now;
                if loaded && file.offsets.is_none() && file.rows > 0 {
                    // Rows loaded in bulk are partition 0's (ADR 0079).
                    let first =
                        take_offsets(&mut next.next_offsets, batch, (table_id, 0), file.rows);
                    file.offsets = Some((first, first + file.rows - 1));
                }
                batch.put(
                    keys::file(table_id, &file.path),
                    serde_json::to_vec(&file).expect("json"),
                );
                table_files.push(file);
            }
            for path in removed_objects {
                schedule_delete(next, batch, deadline, path);
            }
            crate::vector_index::drop_stale_graphs(next, batch, (table_id, deadline));
        }
        Change::ReplaceAll { table_id, added } => {
            table_with_id(next, table_id)?;
            let replace = Change::Replace {
                table_id,
                segments: next
                    .segments(table_id)
                    .iter()
                    .map(|s| (s.commit, s.index))
                    .collect(),
                files: next
                    .files(table_id)
                    .iter()
                    .map(|f| f.path.clone())
                    .collect(),
                added,
                deleted: next.deleted_rows(table_id),
            };
            apply(next, batch, replace, now, retain)?;
            next.rows_changed_at.insert(table_id, next.commit);
        }
        Change::RecordChanges {
            table_id,
            rows,
            payload,
            column_ids,
        } => {
            table_with_id(next, table_id)?;
            let commit = next.commit;
            let records = Arc::make_mut(next.change_records.entry(table_id).or_default());
            let record = LogSegment {
                column_ids,
                ..next_segment(records.last(), (table_id, commit, now), rows, payload)
            };
            batch.put(
                keys::change_record(table_id, commit, record.index),
                encode_segment(&record),
            );
            records.push(record);
        }
        Change::DeleteRows {
            table_id,
            container,
            rows,
        } => {
            deleting::delete_rows(next, batch, (table_id, container, rows), deadline)?;
            crate::vector_index::drop_stale_graphs(next, batch, (table_id, deadline));
        }
        Change::CreateSchema { name } => {
            if next.schemas.contains_key(&name) {
                return Err(CatalogError::SchemaExists(name));
            }
            next.next_table_id += 1;
            let id = next.next_table_id;
            batch.put(keys::schema(&name), id.to_be_bytes());
            next.schemas.insert(name, id);
        }
        Change::DropSchema { name } => {
            if next.schemas.remove(&name).is_none() {
                return Err(CatalogError::SchemaNotFound(name));
            }
            let prefix = format!("{name}.");
            if next.tables.keys().any(|t| t.starts_with(&prefix)) {
                return Err(CatalogError::SchemaNotEmpty(name));
            }
            batch.delete(keys::schema(&name));
        }
        Change::RenameTable { from, to } => {
            if next.tables.contains_key(&to) {
                return Err(CatalogError::TableExists(to));
            }
            check_schema_of(next, &to)?;
            let def = next
                .tables
                .remove(&from)
                .ok_or_else(|| CatalogError::TableNotFound(from.clone()))?;
            let mut def = def.as_ref().clone();
            def.name = to.clone();
            batch.delete(keys::table(&from));
            batch.put(keys::table(&to), serde_json::to_vec(&def).expect("json"));
            next.defined_at.insert(from, next.commit);
            next.defined_at.insert(to.clone(), next.commit);
            next.tables.insert(to, Arc::new(def));
        }
        Change::AlterTable { def } => {
            match next.tables.get(&def.name) {
                Some(old) if old.id == def.id => {}
                _ => return Err(CatalogError::TableNotFound(def.name)),
            }
            next.defined_at.insert(def.name.clone(), next.commit);
            batch.put(
                keys::table(&def.name),
                serde_json::to_vec(&def).expect("json"),
            );
            let table_id = def.id;
            next.tables.insert(def.name.clone(), Arc::new(def));
            crate::vector_index::drop_stale_graphs(next, batch, (table_id, deadline));
        }
        Change::ProducerSequence { producer, sequence } => {
            batch.put(keys::producer(&producer), sequence.to_be_bytes());
            next.producers.insert(producer, sequence);
        }
        Change::EventTime {
            table_id,
            greatest,
            late_rows,
        } => {
            table_with_id(next, table_id)?;
            // Commits of one round, or forwarded ones, may come in any order (ADR 0055).
            let seen = next
                .event_times
                .entry(table_id)
                .and_modify(|seen| {
                    seen.greatest = seen.greatest.max(greatest);
                    seen.late_rows += late_rows;
                })
                .or_insert(crate::EventTime {
                    greatest,
                    late_rows,
                });
            let mut value = seen.greatest.to_be_bytes().to_vec();
            value.extend(seen.late_rows.to_be_bytes());
            batch.put(keys::event_time(table_id), value);
        }
        Change::SaveNotebook { name, body } => {
            batch.put(keys::notebook(&name), body.as_bytes());
            Arc::make_mut(&mut next.notebooks).insert(name, Arc::from(body));
        }
        Change::SaveTask { task } => {
            let task = match next.tasks.get(&task.name) {
                Some(stored) => stored.merged(task),
                None => task,
            };
            let json = serde_json::to_vec(&task).map_err(|e| CatalogError::Store(e.to_string()))?;
            batch.put(keys::task(&task.name), json);
            Arc::make_mut(&mut next.tasks).insert(task.name.clone(), Arc::new(task));
        }
        Change::DropTask { name } => {
            if Arc::make_mut(&mut next.tasks).remove(&name).is_none() {
                return Err(CatalogError::TaskNotFound(name));
            }
            batch.delete(keys::task(&name));
        }
        Change::TaskTick { name, scheduled } => {
            let Some(stored) = next.tasks.get(&name) else {
                return Err(CatalogError::TaskNotFound(name));
            };
            if stored.last_tick >= scheduled {
                return Err(CatalogError::TickTaken {
                    task: name,
                    scheduled,
                });
            }
            let task = crate::TaskDef {
                last_tick: scheduled,
                ..stored.as_ref().clone()
            };
            let json = serde_json::to_vec(&task).map_err(|e| CatalogError::Store(e.to_string()))?;
            batch.put(keys::task(&name), json);
            Arc::make_mut(&mut next.tasks).insert(name, Arc::new(task));
        }
        Change::AddIndexGraph {
            table_id,
            index,
            graph,
        } => {
            let indexed = next.tables.values().any(|t| {
                t.id == table_id
                    && t.indexes
                        .iter()
                        .any(|i| i.name == index && i.vector.is_some())
            });
            let filed = next.files(table_id).iter().any(|f| f.path == graph.file);
            match indexed && filed {
                true => crate::vector_index::add_graph(next, batch, (table_id, index), graph),
                false => schedule_delete(next, batch, deadline, graph.object),
            }
        }
        Change::SaveSecret { secret } => {
            let json = serde_json::to_vec(&secret).expect("json");
            batch.put(keys::secret(&secret.name), json);
            Arc::make_mut(&mut next.secrets).insert(secret.name.clone(), Arc::new(secret));
        }
        Change::DropSecret { name } => {
            if Arc::make_mut(&mut next.secrets).remove(&name).is_none() {
                return Err(CatalogError::SecretNotFound(name));
            }
            batch.delete(keys::secret(&name));
        }
        Change::SaveAnswers { answers } => save_answers(next, batch, answers)?,
        Change::DropNotebook { name } => {
            if Arc::make_mut(&mut next.notebooks).remove(&name).is_none() {
                return Err(CatalogError::NotebookNotFound(name));
            }
            batch.delete(keys::notebook(&name));
        }
        Change::ConsumerOffsets { offsets } => {
            let committed = Arc::make_mut(&mut next.consumer_offsets);
            for offset in offsets {
                let key = keys::consumer_offset(&offset.group, &offset.topic, offset.partition);
                batch.put(key, serde_json::to_vec(&offset).expect("json"));
                let place = (offset.group.clone(), offset.topic.clone(), offset.partition);
                committed.insert(place, offset);
            }
        }
        Change::ForgetGarbage { entries } => {
            for entry in entries {
                batch.delete(keys::garbage(entry.0, &entry.1));
                next.garbage.retain(|g| g != &entry);
            }
        }
    }
    Ok(())
}

/// Keeps the answers not kept yet: an answer never changes under its key (ADR 0082).
fn save_answers(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    answers: Vec<crate::ModelAnswer>,
) -> Result<()> {
    for answer in answers {
        if !crate::is_answer_key(&answer.key) {
            return Err(CatalogError::Corrupt {
                key: keys::answer(&answer.key),
                message: "an answer's key is 64 lowercase hex digits".into(),
            });
        }
        if next.answers.get(&answer.key).is_some() {
            continue;
        }
        batch.put(keys::answer(&answer.key), &answer.value);
        next.answers.insert(answer.key, Bytes::from(answer.value));
    }
    Ok(())
}

/// The segment (or change record) a commit adds after `last`, the table's latest: the commit's
/// first, or one past the last it added. One past, not a count: a transaction may have removed
/// one of its own (ADR 0048).
fn next_segment(
    last: Option<&LogSegment>,
    (table_id, commit, now): (u64, u64, u64),
    rows: u64,
    payload: SegmentPayload,
) -> LogSegment {
    let index = match last {
        Some(last) if last.commit == commit => last.index + 1,
        _ => 0,
    };
    LogSegment {
        table_id,
        commit,
        index,
        rows,
        first_offset: None,
        committed_at_ms: now,
        payload,
        ranges: Vec::new(),
        column_ids: Vec::new(),
    }
}

/// Fails unless the schema a table name names (`<schema>.<table>`) exists.
fn check_schema_of(next: &Snapshot, table: &str) -> Result<()> {
    match table.split_once('.') {
        Some((schema, _)) if !next.schemas.contains_key(schema) => {
            Err(CatalogError::SchemaNotFound(schema.to_string()))
        }
        _ => Ok(()),
    }
}

/// The table of `next` with id `id`, or the error of a change naming a table that is gone.
pub(crate) fn table_with_id(next: &Snapshot, id: u64) -> Result<&Arc<TableDef>> {
    next.table_by_id(id)
        .ok_or_else(|| CatalogError::TableNotFound(format!("with id {id}")))
}

pub(crate) fn schedule_delete(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    deadline: u64,
    path: String,
) {
    batch.put(keys::garbage(deadline, &path), b"");
    next.garbage.push((deadline, path));
}

/// A segment's value: a tag byte (bit 0: 0 inline, 1 object; bit 1: column ranges follow;
/// bit 2: column ids follow), rows and commit time (u64 big-endian), with bit 1 the column
/// ranges (a u16 count, then per column a byte, 1 when a range follows as two i64), with bit 2
/// the column ids (a u16 count, then a u32 each), then the IPC bytes (inline) or the object's
/// path (object).
fn encode_segment(segment: &LogSegment) -> Bytes {
    let mut out = BytesMut::new();
    let (tag, body): (u8, &[u8]) = match &segment.payload {
        SegmentPayload::Inline(bytes) => (0, bytes.as_ref()),
        SegmentPayload::Object(path) => (1, path.as_bytes()),
    };
    let ranged = !segment.ranges.is_empty();
    let identified = !segment.column_ids.is_empty();
    let offset = segment.first_offset.map_or(0, |_| OFFSET);
    out.put_u8(
        tag | if ranged { RANGED } else { 0 } | if identified { IDENTIFIED } else { 0 } | offset,
    );
    out.put_u64(segment.rows);
    out.put_u64(segment.committed_at_ms);
    if ranged {
        out.put_u16(u16::try_from(segment.ranges.len()).expect("under 65,536 columns"));
        for range in &segment.ranges {
            match range {
                Some((least, greatest)) => {
                    out.put_u8(1);
                    out.put_i64(*least);
                    out.put_i64(*greatest);
                }
                None => out.put_u8(0),
            }
        }
    }
    if identified {
        out.put_u16(u16::try_from(segment.column_ids.len()).expect("under 65,536 columns"));
        for id in &segment.column_ids {
            out.put_u32(*id);
        }
    }
    if let Some(first_offset) = segment.first_offset {
        out.put_u64(first_offset);
    }
    out.put_slice(body);
    out.freeze()
}

fn decode_segment(key: &str, value: Bytes) -> Result<LogSegment> {
    let corrupt = |message: &str| CatalogError::Corrupt {
        key: key.to_string(),
        message: message.to_string(),
    };
    let (table_id, commit, index) = keys::parse_segment(key).ok_or_else(|| corrupt("bad key"))?;
    if value.len() < 17 {
        return Err(corrupt("value too short"));
    }
    let rows = u64::from_be_bytes(value[1..9].try_into().expect("8 bytes"));
    let committed_at_ms = u64::from_be_bytes(value[9..17].try_into().expect("8 bytes"));
    let mut body = value.slice(17..);
    let tag = value[0];
    if tag > OBJECT | RANGED | IDENTIFIED | OFFSET {
        return Err(corrupt("unknown payload tag"));
    }
    let mut ranges = Vec::new();
    if tag & RANGED != 0 {
        let short = || corrupt("column ranges cut short");
        let count = body.try_get_u16().map_err(|_| short())?;
        for _ in 0..count {
            ranges.push(match body.try_get_u8().map_err(|_| short())? {
                0 => None,
                _ => {
                    let least = body.try_get_i64().map_err(|_| short())?;
                    Some((least, body.try_get_i64().map_err(|_| short())?))
                }
            });
        }
    }
    let mut column_ids = Vec::new();
    if tag & IDENTIFIED != 0 {
        let short = || corrupt("column ids cut short");
        let count = body.try_get_u16().map_err(|_| short())?;
        for _ in 0..count {
            column_ids.push(body.try_get_u32().map_err(|_| short())?);
        }
    }
    let first_offset = match tag & OFFSET {
        0 => None,
        _ => Some(
            body.try_get_u64()
                .map_err(|_| corrupt("first offset cut short"))?,
        ),
    };
    let payload = match tag & OBJECT {
        0 => SegmentPayload::Inline(body),
        _ => SegmentPayload::Object(
            String::from_utf8(body.to_vec()).map_err(|_| corrupt("object path is not UTF-8"))?,
        ),
    };
    Ok(LogSegment {
        table_id,
        commit,
        index,
        rows,
        first_offset,
        committed_at_ms,
        payload,
        ranges,
        column_ids,
    })
}

/// Takes the next `rows` offsets of a (table, partition) (ADR 0077, 0079); answers the first.
fn take_offsets(
    next_offsets: &mut HashMap<(u64, u16), u64>,
    batch: &mut WriteBatch,
    place: (u64, u16),
    rows: u64,
) -> u64 {
    let first = next_offsets.get(&place).copied().unwrap_or(0);
    assert!(
        first + rows < 1 << crate::types::PARTITION_SHIFT,
        "a partition's offsets past 2^48"
    );
    next_offsets.insert(place, first + rows);
    batch.put(
        keys::next_offset(place.0, place.1),
        (first + rows).to_be_bytes(),
    );
    first
}

fn is_partition_zero(partition: &u16) -> bool {
    *partition == 0
}

/// Bits of a segment's tag byte (see `encode_segment`).
const OBJECT: u8 = 1;
const RANGED: u8 = 2;
const IDENTIFIED: u8 = 4;
/// The segment's first offset follows its column ids (ADR 0077).
const OFFSET: u8 = 8;

fn decode_u64(key: &str, value: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| CatalogError::Corrupt {
        key: key.to_string(),
        message: "expected 8 bytes".into(),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

/// The snapshot a scan of the whole catalog store holds.
pub(crate) async fn load_snapshot(mut iter: slatedb::DbIterator) -> Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    while let Some(kv) = iter.next().await? {
        let key = String::from_utf8_lossy(&kv.key).into_owned();
        let corrupt = |message: String| CatalogError::Corrupt {
            key: key.clone(),
            message,
        };
        if key == keys::LAST_COMMIT {
            snapshot.commit = decode_u64(&key, &kv.value)?;
        } else if key == keys::NEXT_TABLE_ID {
            snapshot.next_table_id = decode_u64(&key, &kv.value)?;
        } else if let Some(name) = key.strip_prefix(keys::SCHEMA_PREFIX) {
            let id = decode_u64(&key, &kv.value)?;
            snapshot.schemas.insert(name.to_string(), id);
        } else if key.starts_with(keys::TABLE_PREFIX) {
            let def: TableDef =
                serde_json::from_slice(&kv.value).map_err(|e| corrupt(e.to_string()))?;
            let def = def.with_column_ids();
            snapshot.tables.insert(def.name.clone(), Arc::new(def));
        } else if key.starts_with(keys::SEGMENT_PREFIX) {
            let segment = decode_segment(&key, kv.value)?;
            snapshot
                .segments
                .entry(segment.table_id)
                .or_default()
                .push(segment);
        } else if key.starts_with(keys::FILE_PREFIX) {
            let file: DataFile =
                serde_json::from_slice(&kv.value).map_err(|e| corrupt(e.to_string()))?;
            Arc::make_mut(snapshot.files.entry(file.table_id).or_default()).push(file);
        } else if let Some(table_id) = key.strip_prefix(keys::EVENT_TIME_PREFIX) {
            let table_id = u64::from_str_radix(table_id, 16).map_err(|e| corrupt(e.to_string()))?;
            let value: [u8; 16] = kv
                .value
                .as_ref()
                .try_into()
                .map_err(|_| corrupt(format!("{} bytes, not 16", kv.value.len())))?;
            let greatest = i64::from_be_bytes(value[..8].try_into().expect("8 bytes"));
            let late_rows = u64::from_be_bytes(value[8..].try_into().expect("8 bytes"));
            let seen = crate::EventTime {
                greatest,
                late_rows,
            };
            snapshot.event_times.insert(table_id, seen);
        } else if key.starts_with(keys::CONSUMER_OFFSET_PREFIX) {
            let offset: ConsumerOffset =
                serde_json::from_slice(&kv.value).map_err(|e| corrupt(e.to_string()))?;
            let place = (offset.group.clone(), offset.topic.clone(), offset.partition);
            Arc::make_mut(&mut snapshot.consumer_offsets).insert(place, offset);
        } else if let Some(rest) = key.strip_prefix(keys::OFFSET_PREFIX) {
            let place = keys::parse_next_offset(rest).ok_or_else(|| corrupt("bad key".into()))?;
            snapshot
                .next_offsets
                .insert(place, decode_u64(&key, &kv.value)?);
        } else if let Some(producer) = key.strip_prefix(keys::PRODUCER_PREFIX) {
            let sequence = decode_u64(&key, &kv.value)?;
            snapshot.producers.insert(producer.to_string(), sequence);
        } else if key.starts_with(keys::CHANGE_PREFIX) {
            let record = decode_segment(&key, kv.value)?;
            let records = snapshot.change_records.entry(record.table_id).or_default();
            Arc::make_mut(records).push(record);
        } else if key.starts_with(keys::DELETION_PREFIX) {
            let (table_id, container) =
                keys::parse_deletion(&key).ok_or_else(|| corrupt("bad key".into()))?;
            let vector = crate::deletions::decode_deletion_vector(&kv.value).map_err(corrupt)?;
            let vectors = snapshot.deletions.entry(table_id).or_default();
            Arc::make_mut(vectors).insert(container, Arc::new(vector));
        } else if key.starts_with(keys::GARBAGE_PREFIX) {
            let entry = keys::parse_garbage(&key).ok_or_else(|| corrupt("bad key".into()))?;
            snapshot.garbage.push(entry);
        } else if key.starts_with(keys::TASK_PREFIX) {
            let task: crate::TaskDef =
                serde_json::from_slice(&kv.value).map_err(|e| corrupt(format!("a task: {e}")))?;
            Arc::make_mut(&mut snapshot.tasks).insert(task.name.clone(), Arc::new(task));
        } else if key.starts_with(keys::INDEX_GRAPH_PREFIX) {
            let graph: crate::IndexGraph = serde_json::from_slice(&kv.value)
                .map_err(|e| corrupt(format!("an index graph: {e}")))?;
            let (table_id, index) = keys::parse_index_graph(&key)
                .ok_or_else(|| corrupt("bad index graph key".into()))?;
            let graphs = Arc::make_mut(&mut snapshot.index_graphs);
            let file = graph.file.clone();
            graphs
                .entry((table_id, index))
                .or_default()
                .insert(file, Arc::new(graph));
        } else if key.starts_with(keys::SECRET_PREFIX) {
            let secret: crate::SealedSecret =
                serde_json::from_slice(&kv.value).map_err(|e| corrupt(format!("a secret: {e}")))?;
            Arc::make_mut(&mut snapshot.secrets).insert(secret.name.clone(), Arc::new(secret));
        } else if let Some(answer) = key.strip_prefix(keys::ANSWER_PREFIX) {
            if !crate::is_answer_key(answer) {
                return Err(corrupt("an answer's key is 64 lowercase hex digits".into()));
            }
            snapshot
                .answers
                .insert(answer.to_string(), kv.value.clone());
        } else if let Some(name) = key.strip_prefix(keys::NOTEBOOK_PREFIX) {
            let body = std::str::from_utf8(&kv.value)
                .map_err(|_| corrupt("a notebook is not UTF-8".into()))?;
            Arc::make_mut(&mut snapshot.notebooks).insert(name.to_string(), Arc::from(body));
        }
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(ranges: Vec<Option<(i64, i64)>>, column_ids: Vec<u32>) -> LogSegment {
        LogSegment {
            ranges,
            column_ids,
            ..next_segment(
                None,
                (7, 9, 1234),
                3,
                SegmentPayload::Object("log/t/a".into()),
            )
        }
    }

    #[test]
    fn segments_round_trip_with_and_without_ranges_and_ids() {
        let key = keys::segment(7, 9, 0);
        for (ranges, ids) in [
            (vec![], vec![]),
            (vec![Some((-1, 5)), None], vec![]),
            (vec![], vec![0, 3, 4]),
            (vec![None, Some((2, 2))], vec![5, 1]),
        ] {
            for first_offset in [None, Some(0), Some(1 << 40)] {
                let written = LogSegment {
                    first_offset,
                    ..segment(ranges.clone(), ids.clone())
                };
                let read = decode_segment(&key, encode_segment(&written)).unwrap();
                assert_eq!(read, written);
            }
            let written = segment(ranges, ids);
            let inline = LogSegment {
                payload: SegmentPayload::Inline(Bytes::from_static(b"ipc")),
                ..written
            };
            assert_eq!(
                decode_segment(&key, encode_segment(&inline)).unwrap(),
                inline
            );
        }
    }

    #[test]
    fn unknown_tags_and_short_ids_are_corrupt() {
        let key = keys::segment(7, 9, 0);
        let mut bytes = encode_segment(&segment(vec![], vec![1, 2])).to_vec();
        bytes[0] = 16;
        assert!(decode_segment(&key, Bytes::from(bytes.clone())).is_err());
        bytes[0] = IDENTIFIED;
        bytes.truncate(17 + 2 + 5);
        assert!(decode_segment(&key, Bytes::from(bytes)).is_err());
    }
}
