//! One tick of a task (ADR 0081): the task's statement, its row in `pondra_task_runs` and the
//! claim of the tick (`TaskTick`) commit in one transaction, so that they commit together or
//! not at all. A commit that finds the tick claimed by another is dropped: the tick ran there.
//! A statement that fails commits the claim with the error alone. A `CALL` of a Python
//! procedure cannot be held in a transaction: its tick is claimed first, then run, so it runs
//! once at most.

use std::sync::Arc;

use pondra_catalog::{CatalogError, Change, FunctionLanguage, TableKind, TaskDef};
use pondra_parser::Statement;

use super::RUNS_TABLE;
use super::schedule::civil_from_days;
use crate::node::Node;
use crate::sessions::session::Session;
use crate::{NodeError, Result};

impl Node {
    /// Runs `task`'s tick scheduled at `scheduled` (microseconds). With `claim` the tick is
    /// the schedule's and is claimed with its changes; without (EXECUTE TASK) it is a run
    /// outside the schedule, logged alone.
    pub(crate) async fn run_tick(
        self: &Arc<Self>,
        task: &TaskDef,
        scheduled: i64,
        claim: bool,
    ) -> Result<()> {
        let tick = Change::TaskTick {
            name: task.name.clone(),
            scheduled,
        };
        let python = calls_python_procedure(self, &task.statement);
        if claim && python {
            match self.commit_task_changes(vec![tick.clone()]).await {
                Ok(()) => {}
                Err(e) if claimed_elsewhere(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        let session = Session::new(None);
        let started = pondra_planner::now_micros();
        self.run_text(&session, "BEGIN").await?;
        let statement = pondra_parser::parse_sql(&task.statement)?.remove(0);
        let outcome = Box::pin(self.execute_in(&session, statement)).await;
        let error = outcome.err().map(|e| e.to_string());
        if error.is_some() {
            // The failed statement's changes go; the run's row and the claim stay.
            self.run_text(&session, "ROLLBACK").await?;
            self.run_text(&session, "BEGIN").await?;
        }
        let finished = pondra_planner::now_micros();
        let row = format!(
            "INSERT INTO {RUNS_TABLE} VALUES ({}, {}, {}, {}, {}, {}, {})",
            text(&task.name),
            timestamp(scheduled),
            timestamp(started),
            timestamp(finished),
            text(&crate::node::node_name()),
            text(if error.is_some() {
                "failed"
            } else {
                "succeeded"
            }),
            error.as_deref().map_or("NULL".to_string(), text),
        );
        self.run_text(&session, &row).await?;
        if claim && !python {
            let mut transaction = session.take_transaction();
            if let Some(open) = transaction.as_mut() {
                let view = open.view().as_ref().clone();
                open.add(vec![tick], view);
            }
            session.put_transaction(transaction);
        }
        match self.run_text(&session, "COMMIT").await {
            Ok(()) => Ok(()),
            Err(e) if claim && claimed_elsewhere(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn run_text(self: &Arc<Self>, session: &Arc<Session>, sql: &str) -> Result<()> {
        let statement = pondra_parser::parse_sql(sql)?.remove(0);
        Box::pin(self.execute_in(session, statement)).await?;
        Ok(())
    }
}

/// Whether a commit failed because the tick was claimed by another commit.
fn claimed_elsewhere(error: &NodeError) -> bool {
    matches!(
        error,
        NodeError::SerializationFailure | NodeError::Catalog(CatalogError::TickTaken { .. })
    )
}

/// Whether `statement` is a `CALL` of a Python procedure (every overload of its name Python).
fn calls_python_procedure(node: &Node, statement: &str) -> bool {
    let Ok(mut parsed) = pondra_parser::parse_sql(statement) else {
        return false;
    };
    let Some(Statement::Sql(sql)) = parsed.pop().map(|p| p.statement) else {
        return false;
    };
    let Some(call) = crate::sessions::procedures::call_of(&sql) else {
        return false;
    };
    let Ok(name) = pondra_planner::object_name(&call.name) else {
        return false;
    };
    let snapshot = node.snapshot();
    let overloads = snapshot.procedures_named(&name);
    !overloads.is_empty()
        && overloads.iter().all(|p| {
            matches!(
                p.kind,
                TableKind::Procedure {
                    language: FunctionLanguage::Python,
                    ..
                }
            )
        })
}

/// `value` as a SQL string literal.
fn text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Microseconds since the epoch as a TIMESTAMPTZ literal, in UTC.
pub(crate) fn timestamp(micros: i64) -> String {
    let (days, of_day) = (
        micros.div_euclid(86_400_000_000),
        micros.rem_euclid(86_400_000_000),
    );
    let (year, month, day) = civil_from_days(days);
    let seconds = of_day / 1_000_000;
    format!(
        "TIMESTAMPTZ '{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:06}+00'",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        of_day % 1_000_000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_timestamp_is_written_in_utc_to_the_microsecond() {
        let micros = 1_796_551_650_000_000 + 42;
        assert_eq!(
            super::timestamp(micros),
            "TIMESTAMPTZ '2026-12-06 10:07:30.000042+00'"
        );
    }
}
