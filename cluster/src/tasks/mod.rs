//! Tasks (ADR 0081): statements the cluster runs on a schedule. The definitions live in the
//! catalog (`k/<name>`); only the leader's clock runs them, every 250 ms; a tick commits with
//! its statement's changes and claims its scheduled time in the same commit, so a tick runs
//! once, also across failovers, and ticks missed while no leader ran collapse into one.

pub(crate) mod schedule;
#[cfg(test)]
mod simulation;
mod tick;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pondra_catalog::{Change, TaskDef};
use pondra_parser::TaskStatement;

use crate::node::Node;
use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};
use schedule::Schedule;

/// How often the leader's clock looks for due ticks.
pub const CLOCK_PERIOD: Duration = Duration::from_millis(250);

/// The system table each run is logged in.
pub const RUNS_TABLE: &str = "pondra_task_runs";

/// The statement that makes the runs table, with the first task.
const CREATE_RUNS_TABLE: &str = "CREATE TABLE IF NOT EXISTS pondra_task_runs (task VARCHAR, \
     scheduled_at TIMESTAMPTZ, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, node VARCHAR, \
     status VARCHAR, error VARCHAR)";

impl Node {
    /// Runs a task statement for `session`.
    pub(crate) async fn run_task_statement(
        self: &Arc<Self>,
        session: &Arc<Session>,
        statement: &TaskStatement,
    ) -> Result<StatementResult> {
        match statement {
            TaskStatement::Create {
                name,
                or_replace,
                if_not_exists,
                schedule,
                statement,
            } => {
                Schedule::parse(schedule).map_err(NodeError::Other)?;
                let parsed = pondra_parser::parse_sql(statement)?;
                if parsed.len() != 1 {
                    return Err(NodeError::Other(format!(
                        "task {name} runs one statement, not {}",
                        parsed.len()
                    )));
                }
                if self.snapshot().tasks.contains_key(name) {
                    if *if_not_exists {
                        return Ok(done("CREATE TASK"));
                    }
                    if !or_replace {
                        return Err(NodeError::Other(format!("task {name} already exists")));
                    }
                }
                let runs = pondra_parser::parse_sql(CREATE_RUNS_TABLE)?.remove(0);
                Box::pin(self.execute_in(session, runs)).await?;
                let task = TaskDef {
                    name: name.clone(),
                    schedule: schedule.clone(),
                    statement: statement.clone(),
                    suspended: false,
                    last_tick: pondra_planner::now_micros(),
                };
                // A replaced task starts afresh: its ticks before now are not run.
                let mut changes = Vec::new();
                if self.snapshot().tasks.contains_key(name) {
                    changes.push(Change::DropTask { name: name.clone() });
                }
                changes.push(Change::SaveTask { task });
                self.commit_task_changes(changes).await?;
                Ok(done("CREATE TASK"))
            }
            TaskStatement::Alter { name, suspend } => {
                let stored = self.task(name)?;
                let task = TaskDef {
                    suspended: *suspend,
                    // Resumed, it runs from the next tick on, not the ones it slept through.
                    last_tick: match suspend {
                        true => stored.last_tick,
                        false => stored.last_tick.max(pondra_planner::now_micros()),
                    },
                    ..stored
                };
                self.commit_task_changes(vec![Change::SaveTask { task }])
                    .await?;
                Ok(done("ALTER TASK"))
            }
            TaskStatement::Execute { name } => {
                let task = self.task(name)?;
                let now = pondra_planner::now_micros();
                self.run_tick(&task, now, false).await?;
                Ok(done("EXECUTE TASK"))
            }
            TaskStatement::Drop { name, if_exists } => {
                if !self.snapshot().tasks.contains_key(name) {
                    return match if_exists {
                        true => Ok(done("DROP TASK")),
                        false => Err(NodeError::Other(format!("task {name} does not exist"))),
                    };
                }
                let change = Change::DropTask { name: name.clone() };
                self.commit_task_changes(vec![change]).await?;
                Ok(done("DROP TASK"))
            }
        }
    }

    fn task(&self, name: &str) -> Result<TaskDef> {
        self.snapshot()
            .tasks
            .get(name)
            .map(|t| t.as_ref().clone())
            .ok_or_else(|| NodeError::Other(format!("task {name} does not exist")))
    }

    async fn commit_task_changes(&self, changes: Vec<Change>) -> Result<()> {
        let base = self.snapshot();
        let _guard = self.write_lock.write().await;
        self.commit_changes(&base, changes).await?;
        Ok(())
    }

    /// The leader's clock: every [`CLOCK_PERIOD`], each task's due tick is started unless one
    /// of the task's is still running. Ends when the node is dropped.
    pub(crate) async fn run_task_clock(node: Weak<Node>) {
        let running: Arc<Mutex<HashSet<String>>> = Arc::default();
        let mut ticker = tokio::time::interval(CLOCK_PERIOD);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(node) = node.upgrade() else { break };
            if !node.leads() {
                continue;
            }
            let now = pondra_planner::now_micros();
            for task in node.snapshot().tasks.values() {
                let Some(scheduled) = due_tick(task, now) else {
                    continue;
                };
                if !running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(task.name.clone())
                {
                    continue;
                }
                let (node, task, running) = (node.clone(), task.as_ref().clone(), running.clone());
                tokio::spawn(async move {
                    if let Err(e) = node.run_tick(&task, scheduled, true).await {
                        eprintln!("task {}: the tick at {scheduled} failed: {e}", task.name);
                    }
                    running
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&task.name);
                });
            }
        }
    }
}

/// The tick of `task` due at `now`, if one is: none while it is suspended.
pub(crate) fn due_tick(task: &TaskDef, now: i64) -> Option<i64> {
    if task.suspended {
        return None;
    }
    Schedule::parse(&task.schedule)
        .ok()?
        .due(task.last_tick, now)
}
