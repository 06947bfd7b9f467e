//! Tasks (ADR 0081): a statement the leader runs on a schedule. Each is kept under `k/<name>`
//! as JSON. A tick commits `TaskTick` with the statement's changes; the commit is refused when
//! the task's last tick is not before the tick's scheduled time, so no tick runs twice.

use serde::{Deserialize, Serialize};

/// A task as kept in the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDef {
    pub name: String,
    /// `EVERY n SECONDS|MINUTES|HOURS|DAYS` or `CRON m h dom mon dow`, as written.
    pub schedule: String,
    /// The statement each tick runs.
    pub statement: String,
    pub suspended: bool,
    /// The scheduled time (microseconds since the epoch) of the last tick run, or of the
    /// moment the task was created or resumed: ticks due after it are to run.
    pub last_tick: i64,
}

impl TaskDef {
    /// The task as `change` leaves it when `self` is the stored one: a save never moves the
    /// last tick back, so a tick committed while an ALTER was prepared stays counted.
    pub fn merged(&self, saved: TaskDef) -> TaskDef {
        TaskDef {
            last_tick: saved.last_tick.max(self.last_tick),
            ..saved
        }
    }
}
