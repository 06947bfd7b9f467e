//! Transactions with snapshot isolation (ADR 0045): a list of catalog changes and the snapshot
//! they make, committed as one lake commit if nothing committed since conflicts with them.

use std::sync::Arc;

use pondra_catalog::{Change, Container, SegmentPayload, Snapshot};

use crate::{NodeError, Result};

/// The message of a commit that lost to a concurrent one (SQLSTATE 40001).
pub const SERIALIZATION_FAILURE: &str = "could not serialize access due to concurrent update";

/// The message of a statement sent to a transaction a failed statement aborted (25P02).
pub const ABORTED: &str =
    "current transaction is aborted, commands ignored until end of transaction block";

/// An open transaction of a session.
#[derive(Clone, Debug)]
pub struct Transaction {
    /// The latest snapshot when it began.
    base: Arc<Snapshot>,
    /// What its statements read: `base` with `changes` applied.
    view: Arc<Snapshot>,
    changes: Vec<Change>,
    /// Per change, whether its statement recorded changes to the table it appends to (ADR
    /// 0048): a plain insert's append records nothing.
    recorded: Vec<bool>,
    savepoints: Vec<Savepoint>,
    /// Set by a failed statement: until ROLLBACK, nothing else runs.
    aborted: bool,
}

/// What a transaction was when a savepoint was set.
#[derive(Clone, Debug)]
struct Savepoint {
    name: String,
    changes: usize,
    view: Arc<Snapshot>,
}

impl Transaction {
    pub fn begin(base: Arc<Snapshot>) -> Transaction {
        Transaction {
            view: base.clone(),
            base,
            changes: Vec::new(),
            recorded: Vec::new(),
            savepoints: Vec::new(),
            aborted: false,
        }
    }

    /// The snapshot its statements read.
    pub fn view(&self) -> &Arc<Snapshot> {
        &self.view
    }

    pub fn base(&self) -> &Arc<Snapshot> {
        &self.base
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// A statement failed: the transaction can only be rolled back now.
    pub fn abort(&mut self) {
        self.aborted = true;
    }

    /// Adds a statement's changes, and the view they make.
    pub fn add(&mut self, changes: Vec<Change>, view: Snapshot) {
        debug_assert!(!self.aborted, "an aborted transaction takes no changes");
        let recorded_tables: Vec<u64> = changes
            .iter()
            .filter_map(|c| match c {
                Change::RecordChanges { table_id, .. } => Some(*table_id),
                _ => None,
            })
            .collect();
        self.recorded.extend(changes.iter().map(|c| match c {
            Change::AppendSegment { table_id, .. } => recorded_tables.contains(table_id),
            _ => true,
        }));
        self.changes.extend(changes);
        self.view = Arc::new(view);
    }

    /// Takes the changes to commit, leaving the transaction empty.
    pub fn take_changes(&mut self) -> Vec<Change> {
        self.recorded.clear();
        std::mem::take(&mut self.changes)
    }

    /// The plain inserts of the transaction into tables another of its statements recorded
    /// changes to: its commit records them too (see `Node::record_plain_inserts`).
    pub fn plain_inserts_to_record(&self) -> Vec<Change> {
        let recorded_tables: Vec<u64> = self
            .changes
            .iter()
            .filter_map(|c| match c {
                Change::RecordChanges { table_id, .. } => Some(*table_id),
                _ => None,
            })
            .collect();
        self.changes
            .iter()
            .zip(&self.recorded)
            .filter(|(change, recorded)| match change {
                Change::AppendSegment { table_id, .. } => {
                    !**recorded && recorded_tables.contains(table_id)
                }
                _ => false,
            })
            .map(|(change, _)| change.clone())
            .collect()
    }

    /// The objects the transaction's changes name, to delete when it is rolled back.
    pub fn objects(&self) -> Vec<String> {
        objects_named(&self.changes)
    }

    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: String) {
        self.savepoints.push(Savepoint {
            name,
            changes: self.changes.len(),
            view: self.view.clone(),
        });
    }

    /// `ROLLBACK TO [SAVEPOINT] name`: drops the changes after it (returning the objects they
    /// named, to delete) and leaves the aborted state; the savepoint stays.
    pub fn rollback_to(&mut self, name: &str) -> Result<Vec<String>> {
        let position = self.find(name)?;
        self.savepoints.truncate(position + 1);
        let savepoint = &self.savepoints[position];
        let dropped = self.changes.split_off(savepoint.changes);
        self.recorded.truncate(savepoint.changes);
        self.view = savepoint.view.clone();
        self.aborted = false;
        Ok(objects_named(&dropped))
    }

    /// `RELEASE [SAVEPOINT] name`: forgets it and the savepoints after it.
    pub fn release(&mut self, name: &str) -> Result<()> {
        let position = self.find(name)?;
        self.savepoints.truncate(position);
        Ok(())
    }

    /// The innermost savepoint of that name, as Postgres picks it.
    fn find(&self, name: &str) -> Result<usize> {
        self.savepoints
            .iter()
            .rposition(|s| s.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| NodeError::Other(format!("savepoint \"{name}\" does not exist")))
    }
}

/// The objects `changes` name: large log segments and data files, written before the commit.
pub fn objects_named(changes: &[Change]) -> Vec<String> {
    let mut objects = Vec::new();
    for change in changes {
        match change {
            Change::CreateTable {
                initial: Some((_, SegmentPayload::Object(path))),
                ..
            }
            | Change::AppendSegment {
                payload: SegmentPayload::Object(path),
                ..
            }
            | Change::RecordChanges {
                payload: SegmentPayload::Object(path),
                ..
            } => objects.push(path.clone()),
            Change::Replace { added, .. } | Change::ReplaceAll { added, .. } => {
                objects.extend(added.iter().map(|f| f.path.clone()))
            }
            Change::AddIndexGraph { graph, .. } => objects.push(graph.object.clone()),
            _ => {}
        }
    }
    objects
}

/// `changes`, prepared against `base`, made ready to apply to `latest`: an error if something
/// committed in between conflicts with them; tables `changes` created get the ids `latest`
/// will give them.
pub fn rebase(base: &Snapshot, latest: &Snapshot, changes: Vec<Change>) -> Result<Vec<Change>> {
    if latest.commit != base.commit {
        for change in &changes {
            check_conflict(base, latest, change)?;
        }
    }
    let changes = own_segments_renamed(base, latest, changes);
    let shift = latest.next_table_id - base.next_table_id;
    if shift == 0 {
        return Ok(changes);
    }
    // Ids above the base's were handed out by this transaction's own CREATEs.
    let renumber = |id: u64| {
        if id > base.next_table_id {
            id + shift
        } else {
            id
        }
    };
    Ok(changes
        .into_iter()
        .map(|change| renumbered(change, &renumber))
        .collect())
}

/// `changes` with the log segments they add named as `latest` will name them. A transaction's
/// statements see the segments its earlier ones appended under the commit one past its base
/// (`Catalog::with_changes`), and may delete rows of them; committed, they take the commit
/// `latest` makes, after the segments other writers of the same round appended to the table.
fn own_segments_renamed(base: &Snapshot, latest: &Snapshot, changes: Vec<Change>) -> Vec<Change> {
    let pending = base.commit + 1;
    let first_index = |table_id: u64| match latest.segments(table_id).last() {
        Some(last) if last.commit == latest.commit => last.index + 1,
        _ => 0,
    };
    changes
        .into_iter()
        .map(|change| match change {
            Change::DeleteRows {
                table_id,
                container: Container::Segment { commit, index },
                rows,
            } if commit == pending => Change::DeleteRows {
                table_id,
                container: Container::Segment {
                    commit: latest.commit,
                    index: first_index(table_id) + index,
                },
                rows,
            },
            other => other,
        })
        .collect()
}

fn renumbered(change: Change, renumber: &dyn Fn(u64) -> u64) -> Change {
    let files = |files: Vec<pondra_catalog::DataFile>| {
        files
            .into_iter()
            .map(|mut f| {
                f.table_id = renumber(f.table_id);
                f
            })
            .collect()
    };
    match change {
        Change::AppendSegment {
            table_id,
            rows,
            payload,
            ranges,
            column_ids,
            partition,
        } => Change::AppendSegment {
            table_id: renumber(table_id),
            rows,
            payload,
            ranges,
            column_ids,
            partition,
        },
        Change::ReplaceAll { table_id, added } => Change::ReplaceAll {
            table_id: renumber(table_id),
            added: files(added),
        },
        Change::Replace {
            table_id,
            segments,
            files: removed,
            added,
            deleted,
        } => Change::Replace {
            table_id: renumber(table_id),
            segments,
            files: removed,
            added: files(added),
            deleted,
        },
        Change::AlterTable { mut def } => {
            def.id = renumber(def.id);
            Change::AlterTable { def }
        }
        Change::DeleteRows {
            table_id,
            container,
            rows,
        } => Change::DeleteRows {
            table_id: renumber(table_id),
            container,
            rows,
        },
        Change::RecordChanges {
            table_id,
            rows,
            payload,
            column_ids,
        } => Change::RecordChanges {
            table_id: renumber(table_id),
            rows,
            payload,
            column_ids,
        },
        other => other,
    }
}

/// An error if what `latest` committed after `base` conflicts with `change` (ADR 0045).
fn check_conflict(base: &Snapshot, latest: &Snapshot, change: &Change) -> Result<()> {
    let since = base.commit;
    // The name of a table the base held by this id; none for one this transaction created.
    let name_in_base = |id: u64| base.table_by_id(id).map(|t| t.name.clone());
    let redefined = |name: &str| latest.defined_at(name) > since;
    let rewritten = |id: u64| latest.rows_changed_at(id) > since;
    let conflict = match change {
        Change::CreateTable { def, .. } => redefined(&def.name),
        Change::DropTable { name } => {
            let id = base.table(name).map(|t| t.id);
            redefined(name) || id.is_some_and(rewritten)
        }
        Change::AlterTable { def } => redefined(&def.name),
        Change::RenameTable { from, to } => redefined(from) || redefined(to),
        Change::CreateSchema { name } | Change::DropSchema { name } => {
            latest.schemas.get(name) != base.schemas.get(name)
        }
        // An append to a keyed or UNIQUE table was checked against the rows it read.
        Change::AppendSegment { table_id, .. } => match base.table_by_id(*table_id) {
            Some(table) if crate::tables::keyed::is_constrained(table) => {
                redefined(&table.name) || rewritten(*table_id)
            }
            Some(table) => redefined(&table.name),
            None => false,
        },
        // The commit refuses rows deleted since by another, or moved (ADR 0048).
        Change::DeleteRows { table_id, .. } | Change::RecordChanges { table_id, .. } => {
            name_in_base(*table_id).is_some_and(|n| redefined(&n))
        }
        Change::ReplaceAll { table_id, .. } | Change::Replace { table_id, .. } => {
            name_in_base(*table_id).is_some_and(|name| redefined(&name) || rewritten(*table_id))
        }
        Change::ProducerSequence { producer, sequence } => latest
            .producers
            .get(producer)
            .is_some_and(|last| last >= sequence),
        // A notebook saved last wins, as a file saved last does; a task's save keeps the
        // latest tick (ADR 0081).
        Change::ForgetGarbage { .. }
        | Change::ConsumerOffsets { .. }
        | Change::SaveNotebook { .. }
        | Change::DropNotebook { .. }
        | Change::SaveTask { .. }
        | Change::DropTask { .. } => false,
        // A secret saved last wins; an answer never changes under its key (ADR 0082).
        Change::SaveSecret { .. } | Change::DropSecret { .. } | Change::SaveAnswers { .. } => false,
        // A graph whose file or index went since is not recorded; its object is deleted
        // (ADR 0082).
        Change::AddIndexGraph { .. } => false,
        // A tick another commit took since is not run again (ADR 0081).
        Change::TaskTick { name, scheduled } => latest
            .tasks
            .get(name)
            .is_none_or(|task| task.last_tick >= *scheduled),
        // Rows were judged late, and windows closed, by the watermark the base held (ADR 0055).
        Change::EventTime { table_id, .. } => {
            latest.event_times.get(table_id) != base.event_times.get(table_id)
        }
    };
    if conflict {
        return Err(NodeError::SerializationFailure);
    }
    Ok(())
}

/// A statement that begins, ends or marks a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransactionControl {
    Begin,
    Commit,
    Rollback,
    Savepoint(String),
    RollbackTo(String),
    Release(String),
}

/// The transaction control `statement` is, if it is one.
pub fn control_of(statement: &pondra_parser::ast::Statement) -> Option<TransactionControl> {
    use pondra_parser::ast::Statement as S;
    Some(match statement {
        S::StartTransaction { .. } => TransactionControl::Begin,
        S::Commit { .. } => TransactionControl::Commit,
        S::Rollback {
            savepoint: Some(name),
            ..
        } => TransactionControl::RollbackTo(name.value.clone()),
        S::Rollback { .. } => TransactionControl::Rollback,
        S::Savepoint { name } => TransactionControl::Savepoint(name.value.clone()),
        S::ReleaseSavepoint { name } => TransactionControl::Release(name.value.clone()),
        _ => return None,
    })
}

impl crate::node::Node {
    /// Runs BEGIN, COMMIT, ROLLBACK, SAVEPOINT, ROLLBACK TO or RELEASE for `session`, with
    /// Postgres's answers: a COMMIT of an aborted transaction rolls it back, and a COMMIT
    /// or ROLLBACK outside one does nothing.
    pub(crate) async fn run_transaction_control(
        &self,
        session: &crate::sessions::session::Session,
        control: TransactionControl,
    ) -> Result<crate::statement_result::StatementResult> {
        use crate::statement_result::done;
        let mut transaction = session.take_transaction();
        let outcome = match (&control, transaction.as_mut()) {
            (TransactionControl::Begin, None) => {
                transaction = Some(Transaction::begin(self.snapshot()));
                Ok(done("BEGIN"))
            }
            (TransactionControl::Begin, Some(_)) => Ok(done("BEGIN")),
            (TransactionControl::Commit | TransactionControl::Rollback, None) => {
                Ok(done(match control {
                    TransactionControl::Commit => "COMMIT",
                    _ => "ROLLBACK",
                }))
            }
            (TransactionControl::Commit, Some(open)) if !open.is_aborted() => {
                let plain_inserts = open.plain_inserts_to_record();
                let mut changes = open.take_changes();
                let base = open.base().clone();
                transaction = None;
                let _guard = self.write_lock.write().await;
                let committed = match self.record_plain_inserts(plain_inserts).await {
                    Ok(records) => {
                        changes.extend(records);
                        self.commit_changes(&base, changes).await
                    }
                    Err(e) => {
                        self.delete_objects(objects_named(&changes)).await;
                        Err(e)
                    }
                };
                match committed {
                    Ok(_) => Ok(done("COMMIT")),
                    // Rows it deleted were deleted or moved since it began (ADR 0048).
                    Err(NodeError::Catalog(
                        pondra_catalog::CatalogError::RowsMoved(_)
                        | pondra_catalog::CatalogError::DeletedConcurrently(_),
                    )) => Err(NodeError::SerializationFailure),
                    Err(e) => Err(e),
                }
            }
            (TransactionControl::Commit | TransactionControl::Rollback, Some(open)) => {
                let objects = open.objects();
                transaction = None;
                self.delete_objects(objects).await;
                Ok(done("ROLLBACK"))
            }
            (TransactionControl::RollbackTo(name), Some(open)) => match open.rollback_to(name) {
                Ok(objects) => {
                    self.delete_objects(objects).await;
                    Ok(done("ROLLBACK"))
                }
                Err(e) => Err(e),
            },
            (TransactionControl::Savepoint(_) | TransactionControl::Release(_), Some(open))
                if open.is_aborted() =>
            {
                Err(NodeError::Aborted)
            }
            (TransactionControl::Savepoint(name), Some(open)) => {
                open.savepoint(name.clone());
                Ok(done("SAVEPOINT"))
            }
            (TransactionControl::Release(name), Some(open)) => {
                open.release(name).map(|()| done("RELEASE"))
            }
            (TransactionControl::Savepoint(_), None) => Err(NodeError::NoTransaction("SAVEPOINT")),
            (TransactionControl::RollbackTo(_), None) => {
                Err(NodeError::NoTransaction("ROLLBACK TO SAVEPOINT"))
            }
            (TransactionControl::Release(_), None) => {
                Err(NodeError::NoTransaction("RELEASE SAVEPOINT"))
            }
        };
        // A savepoint statement that fails aborts the transaction, as any statement does.
        if outcome.is_err()
            && let Some(open) = transaction.as_mut()
        {
            open.abort();
        }
        session.put_transaction(transaction);
        outcome
    }
}
