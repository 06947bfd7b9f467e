//! Running a statement whose top-level WITH holds writes (ADR 0074): every write prepared on
//! one snapshot, its RETURNING rows handed to what reads its CTE name, then one commit.

use std::sync::Arc;

use arrow::array::RecordBatch;
use pondra_catalog::{Change, Snapshot};
use pondra_planner::{LogicalPlan, Plan};

use crate::node::{Node, RETURNED};
use crate::sessions::transaction::Transaction;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// What the statement's own part gave: rows, or a write's tag.
enum Answer {
    Rows(arrow::datatypes::SchemaRef, Vec<RecordBatch>),
    Tag(String),
}

impl Node {
    pub(crate) async fn run_with_writes(
        &self,
        writes: Vec<(usize, Plan)>,
        query: Plan,
        transaction: Option<&mut Transaction>,
        snapshot: Arc<Snapshot>,
    ) -> Result<StatementResult> {
        // Outside a transaction, nothing else commits until these writes have.
        let (guard, snapshot) = match &transaction {
            Some(_) => (None, snapshot),
            None => {
                let (guard, latest) = self.lock_exclusive().await;
                (Some(guard), latest)
            }
        };
        let mut changes = Vec::new();
        let prepared = self
            .prepare_with_writes(writes, query, &snapshot, &mut changes)
            .await;
        let answer = match prepared {
            Ok(answer) => answer,
            Err(e) => {
                let objects = crate::sessions::transaction::objects_named(&changes);
                self.delete_objects(objects).await;
                return Err(e);
            }
        };
        match transaction {
            None => {
                self.commit_changes(&snapshot, changes).await?;
                drop(guard);
            }
            Some(transaction) => {
                let pending = transaction.base().commit + 1;
                let view = self
                    .catalog
                    .with_changes(&snapshot, changes.clone(), pending)?;
                transaction.add(changes, view);
            }
        }
        Ok(match answer {
            Answer::Rows(schema, batches) => StatementResult::Rows { schema, batches },
            Answer::Tag(tag) => done(tag),
        })
    }

    /// Prepares each write and the statement's own part, adding their changes to `changes`.
    async fn prepare_with_writes(
        &self,
        writes: Vec<(usize, Plan)>,
        query: Plan,
        snapshot: &Arc<Snapshot>,
        changes: &mut Vec<Change>,
    ) -> Result<Answer> {
        let mut returned: Vec<(usize, Vec<RecordBatch>)> = Vec::new();
        for (id, write) in writes {
            let handed = Arc::new(returned.clone());
            let (rows, _) = RETURNED
                .scope(handed, self.prepare_returning(write, snapshot, changes))
                .await?;
            returned.push((id, rows));
        }
        let handed = Arc::new(returned);
        match query {
            Plan::Query(plan) => {
                let schema = plan.schema();
                let batches = RETURNED
                    .scope(handed, self.run_query(plan, snapshot.clone(), Vec::new()))
                    .await?;
                Ok(Answer::Rows(schema, batches))
            }
            write => {
                let schema = match &write {
                    Plan::Returning { returning, .. } => Some(returning.schema()),
                    _ => None,
                };
                let (rows, tag) = RETURNED
                    .scope(handed, self.prepare_returning(write, snapshot, changes))
                    .await?;
                Ok(match schema {
                    Some(schema) => Answer::Rows(schema, rows),
                    None => Answer::Tag(tag),
                })
            }
        }
    }

    /// Prepares one write, adding its changes to `changes`; returns what its RETURNING gives
    /// (no rows without one) and its tag.
    async fn prepare_returning(
        &self,
        write: Plan,
        snapshot: &Arc<Snapshot>,
        changes: &mut Vec<Change>,
    ) -> Result<(Vec<RecordBatch>, String)> {
        let (write, returning): (Plan, Option<LogicalPlan>) = match write {
            Plan::Returning { write, returning } => (*write, Some(returning)),
            write => (write, None),
        };
        if !matches!(write, Plan::Insert { .. } | Plan::Rewrite { .. }) {
            return Err(NodeError::Other(
                "only INSERT, UPDATE and DELETE may write inside a WITH".into(),
            ));
        }
        let prepared = self.prepare_write(write, snapshot).await?;
        changes.extend(prepared.changes);
        let rows = match returning {
            Some(returning) => {
                self.run_query(returning, snapshot.clone(), prepared.rows)
                    .await?
            }
            None => Vec::new(),
        };
        Ok((rows, prepared.tag))
    }
}
