//! A client's session: the settings its statements run under (`statement_timeout`,
//! `default_null_order`, `threads`, `disabled_optimizers`, `hnsw.ef_search`), its variables and the statement it is running, for a cancel request to reach.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use pondra_exec::{MemoryPool, StatementControl, StopReason};
use pondra_parser::{NullOrder, ast};
use pondra_planner::{OptimizerSettings, ScalarValue};

use crate::sessions::temporary::TemporaryTables;
use crate::sessions::transaction::Transaction;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

const STATEMENT_TIMEOUT: &str = "statement_timeout";
const DEFAULT_NULL_ORDER: &str = "default_null_order";
const THREADS: &str = "threads";

/// One client's settings and running statement. Doors keep one per connection (the Postgres
/// wire) or per request (HTTP, Flight SQL); the shell keeps one for its run.
#[derive(Debug, Default)]
pub struct Session {
    /// Statements running longer than this are stopped; `None` for no limit.
    statement_timeout: Mutex<Option<Duration>>,
    /// The statement running now, if any.
    running: Mutex<Option<Arc<StatementControl>>>,
    /// The open transaction, if any. A statement takes it while it runs and gives it back.
    transaction: Mutex<Option<Transaction>>,
    /// Its temporary tables, deleted with it.
    temporary: Mutex<TemporaryTables>,
    /// Where NULLs sort when an ORDER BY does not say (`SET default_null_order`).
    null_order: Mutex<Option<NullOrder>>,
    /// The zone instants are shown and read in (`SET TimeZone`, ADR 0067).
    time_zone: Mutex<String>,
    /// The most threads its statements run on (`SET threads`); `None` for all.
    threads: Mutex<Option<usize>>,
    /// Its variables (`SET VARIABLE`), which `getvariable(name)` reads.
    variables: Mutex<HashMap<String, ScalarValue>>,
    /// What it turned off in the optimizer (`SET disabled_optimizers`).
    optimizer: Mutex<OptimizerSettings>,
    /// Its prepared statements (SQL's PREPARE).
    prepared: Mutex<crate::sessions::prepared::PreparedStatements>,
    /// The PostgreSQL parameters it set, by name (`pg_parameters.rs`).
    parameters: Mutex<HashMap<String, String>>,
    /// Whether its queries spread over the cluster (`SET spread`, ADR 0076).
    spread: Mutex<crate::sessions::spread_setting::SpreadSetting>,
    /// How many candidates its vector index searches weigh (`SET hnsw.ef_search`); `None`
    /// for the default.
    ef_search: Mutex<Option<usize>>,
}

/// Where a session stands, as Postgres's ReadyForQuery tells clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionStatus {
    Idle,
    InTransaction,
    /// In a transaction a failed statement aborted.
    Failed,
}

impl Session {
    /// A session whose statements stop after `statement_timeout` unless it sets another.
    pub fn new(statement_timeout: Option<Duration>) -> Arc<Session> {
        Arc::new(Session {
            statement_timeout: Mutex::new(statement_timeout),
            running: Mutex::new(None),
            transaction: Mutex::new(None),
            temporary: Mutex::new(TemporaryTables::default()),
            null_order: Mutex::new(None),
            time_zone: Mutex::new("UTC".into()),
            variables: Mutex::new(HashMap::new()),
            optimizer: Mutex::new(OptimizerSettings::default()),
            threads: Mutex::new(None),
            prepared: Mutex::new(Default::default()),
            parameters: Mutex::new(HashMap::new()),
            spread: Mutex::new(Default::default()),
            ef_search: Mutex::new(None),
        })
    }

    /// The value the session set for a PostgreSQL parameter, if it set one.
    pub(crate) fn parameter(&self, name: &str) -> Option<String> {
        let parameters = self.parameters.lock().unwrap_or_else(|e| e.into_inner());
        parameters.get(name).cloned()
    }

    pub(crate) fn set_parameter(&self, name: String, value: String) {
        let mut parameters = self.parameters.lock().unwrap_or_else(|e| e.into_inner());
        parameters.insert(name, value);
    }

    pub(crate) fn reset_parameter(&self, name: &str) {
        let mut parameters = self.parameters.lock().unwrap_or_else(|e| e.into_inner());
        parameters.remove(name);
    }

    pub(crate) fn reset_parameters(&self) {
        let mut parameters = self.parameters.lock().unwrap_or_else(|e| e.into_inner());
        parameters.clear();
    }

    /// The session's variables.
    pub fn variables(&self) -> HashMap<String, ScalarValue> {
        self.variables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets variable `name` to `value`, or with none unsets it.
    pub(crate) fn set_variable(&self, name: String, value: Option<ScalarValue>) {
        let mut variables = self.variables.lock().unwrap_or_else(|e| e.into_inner());
        match value {
            Some(value) => variables.insert(name, value),
            None => variables.remove(&name),
        };
    }

    /// What the session turned off in the optimizer.
    pub fn optimizer_settings(&self) -> OptimizerSettings {
        self.optimizer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn set_optimizer_settings(&self, settings: OptimizerSettings) {
        *self.optimizer.lock().unwrap_or_else(|e| e.into_inner()) = settings;
    }

    /// The session's default NULL order, when it set one other than PostgreSQL's.
    pub fn spread_setting(&self) -> crate::sessions::spread_setting::SpreadSetting {
        *self.spread.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_spread_setting(
        &self,
        setting: crate::sessions::spread_setting::SpreadSetting,
    ) {
        *self.spread.lock().unwrap_or_else(|e| e.into_inner()) = setting;
    }

    pub fn null_order(&self) -> Option<NullOrder> {
        let order = *self.null_order.lock().unwrap_or_else(|e| e.into_inner());
        order.filter(|order| *order != NullOrder::POSTGRES)
    }

    /// The zone instants are shown and read in.
    pub fn time_zone(&self) -> String {
        self.time_zone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the zone, a name [`zone_name`](crate::zone_name) gave.
    pub fn set_time_zone(&self, zone: String) {
        *self.time_zone.lock().unwrap_or_else(|e| e.into_inner()) = zone;
    }

    /// Runs `f` on the session's prepared statements.
    pub(crate) fn with_prepared<T>(
        &self,
        f: impl FnOnce(&mut crate::sessions::prepared::PreparedStatements) -> T,
    ) -> T {
        f(&mut self.prepared.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f` on the session's temporary tables.
    pub(crate) fn with_temporary<T>(&self, f: impl FnOnce(&mut TemporaryTables) -> T) -> T {
        f(&mut self.temporary.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether the session is in a transaction, and whether that failed.
    pub fn transaction_status(&self) -> TransactionStatus {
        match self.lock_transaction().as_ref() {
            None => TransactionStatus::Idle,
            Some(t) if t.is_aborted() => TransactionStatus::Failed,
            Some(_) => TransactionStatus::InTransaction,
        }
    }

    fn lock_transaction(&self) -> std::sync::MutexGuard<'_, Option<Transaction>> {
        self.transaction.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The snapshot the open transaction's statements read, if one is open.
    pub fn transaction_view(&self) -> Option<Arc<pondra_catalog::Snapshot>> {
        self.lock_transaction().as_ref().map(|t| t.view().clone())
    }

    /// Takes the open transaction out, for a statement to run in.
    pub(crate) fn take_transaction(&self) -> Option<Transaction> {
        self.lock_transaction().take()
    }

    /// Gives a statement's transaction back (or sets the session's, at BEGIN).
    pub(crate) fn put_transaction(&self, transaction: Option<Transaction>) {
        *self.lock_transaction() = transaction;
    }

    pub fn statement_timeout(&self) -> Option<Duration> {
        *self
            .statement_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// How far the statement running now has read: morsels read and to read so far.
    pub fn progress(&self) -> Option<(u64, u64)> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.as_ref().and_then(|control| control.progress())
    }

    /// How many candidates its vector index searches weigh, if it set that.
    pub fn ef_search(&self) -> Option<usize> {
        *self.ef_search.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_ef_search(&self, ef_search: Option<usize>) {
        *self.ef_search.lock().unwrap_or_else(|e| e.into_inner()) = ef_search;
    }

    /// Stops the statement running now, if any: a cancel request, or its client gone.
    pub fn stop_running(&self, reason: StopReason) -> bool {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.as_ref() {
            Some(control) => {
                control.stop(reason);
                true
            }
            None => false,
        }
    }

    /// The control of a statement starting now in this session.
    pub(crate) fn begin(&self, memory: Arc<MemoryPool>) -> Arc<StatementControl> {
        let threads = *self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let control = StatementControl::start_on(memory, self.statement_timeout(), threads);
        if let Some(ef_search) = self.ef_search() {
            control.set_ef_search(ef_search);
        }
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some(control.clone());
        control
    }

    /// The statement `control` ran has ended.
    pub(crate) fn end(&self, control: &Arc<StatementControl>) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.as_ref().is_some_and(|r| Arc::ptr_eq(r, control)) {
            *running = None;
        }
    }

    /// Runs `SET statement_timeout` or `SHOW statement_timeout`; `None` for other statements.
    pub(crate) fn run_setting(
        &self,
        statement: &ast::Statement,
    ) -> Option<Result<StatementResult>> {
        if crate::sessions::time_zone::is_time_zone_setting(statement) {
            return Some(crate::sessions::time_zone::run_time_zone_setting(
                statement, self,
            ));
        }
        if crate::sessions::optimizer_setting::is_optimizer_setting(statement) {
            return Some(crate::sessions::optimizer_setting::run_optimizer_setting(
                statement, self,
            ));
        }
        if crate::sessions::spread_setting::is_spread_setting(statement) {
            return Some(crate::sessions::spread_setting::run_spread_setting(
                statement, self,
            ));
        }
        if crate::sessions::vector_setting::is_vector_setting(statement) {
            return Some(crate::sessions::vector_setting::run_vector_setting(
                statement, self,
            ));
        }
        match statement {
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) if is_statement_timeout(&variable.to_string()) => {
                Some(self.set_timeout(values).map(|()| done("SET")))
            }
            ast::Statement::ShowVariable { variable }
                if variable.len() == 1 && is_statement_timeout(&variable[0].value) =>
            {
                Some(Ok(self.show_timeout()))
            }
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) if is_null_order(&variable.to_string()) => {
                Some(self.set_null_order(values).map(|()| done("SET")))
            }
            ast::Statement::ShowVariable { variable }
                if variable.len() == 1 && is_null_order(&variable[0].value) =>
            {
                let order = self.null_order().unwrap_or(NullOrder::POSTGRES);
                Some(Ok(one_text(DEFAULT_NULL_ORDER, order.name().to_string())))
            }
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) if is_threads(&variable.to_string()) => {
                Some(self.set_threads(values).map(|()| done("SET")))
            }
            ast::Statement::ShowVariable { variable }
                if variable.len() == 1 && is_threads(&variable[0].value) =>
            {
                let threads = *self.threads.lock().unwrap_or_else(|e| e.into_inner());
                let threads = threads.unwrap_or_else(pondra_exec::process_threads);
                Some(Ok(one_text(THREADS, threads.to_string())))
            }
            _ if crate::sessions::settings::is_process_setting(statement) => None,
            _ if crate::sessions::pg_parameters::is_parameter_statement(statement) => {
                Some(crate::sessions::pg_parameters::run(statement, self))
            }
            _ => None,
        }
    }

    fn set_null_order(&self, values: &[ast::Expr]) -> Result<()> {
        let name = match values {
            [ast::Expr::Value(v)] => match &v.value {
                ast::Value::SingleQuotedString(text) => text.clone(),
                other => other.to_string(),
            },
            [ast::Expr::Identifier(ident)] => ident.value.clone(),
            _ => String::new(),
        };
        let order = match name.to_ascii_lowercase().as_str() {
            "default" => NullOrder::POSTGRES,
            _ => NullOrder::from_name(&name).ok_or_else(|| {
                NodeError::Other(format!(
                    "invalid value for default_null_order: '{name}' (expected nulls_first, \
                     nulls_last, nulls_first_on_asc_last_on_desc or \
                     nulls_last_on_asc_first_on_desc)"
                ))
            })?,
        };
        *self.null_order.lock().unwrap_or_else(|e| e.into_inner()) = Some(order);
        Ok(())
    }

    /// `SET threads = n` (DuckDB's setting): the session's statements run on at most `n`
    /// threads; `DEFAULT` for every thread of the process.
    fn set_threads(&self, values: &[ast::Expr]) -> Result<()> {
        let invalid = || {
            NodeError::Other("SET threads takes a number of threads, 1 or more, or DEFAULT".into())
        };
        let threads = match values {
            [ast::Expr::Identifier(ident)] if ident.value.eq_ignore_ascii_case("default") => None,
            [ast::Expr::Value(v)] => match &v.value {
                ast::Value::Number(text, _) | ast::Value::SingleQuotedString(text) => {
                    let threads: usize = text.trim().parse().map_err(|_| invalid())?;
                    if threads == 0 {
                        return Err(invalid());
                    }
                    Some(threads)
                }
                _ => return Err(invalid()),
            },
            _ => return Err(invalid()),
        };
        *self.threads.lock().unwrap_or_else(|e| e.into_inner()) = threads;
        Ok(())
    }

    fn set_timeout(&self, values: &[ast::Expr]) -> Result<()> {
        let [value] = values else {
            return Err(NodeError::Other(
                "SET statement_timeout takes one value, such as '30s'".into(),
            ));
        };
        let text = match value {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(text) | ast::Value::Number(text, _) => text.clone(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case("default") => {
                "0".into()
            }
            other => other.to_string(),
        };
        let timeout = parse_timeout(&text)?;
        *self
            .statement_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = timeout;
        Ok(())
    }

    fn show_timeout(&self) -> StatementResult {
        let text = match self.statement_timeout() {
            None => "0".to_string(),
            Some(t) if t.as_millis() % 1000 == 0 => format!("{}s", t.as_secs()),
            Some(t) => format!("{}ms", t.as_millis()),
        };
        one_text(STATEMENT_TIMEOUT, text)
    }
}

/// The column a setting statement answers: `SHOW name`'s one, named after it; `None` for
/// the others.
pub(crate) fn setting_schema(statement: &ast::Statement) -> Option<arrow::datatypes::SchemaRef> {
    let ast::Statement::ShowVariable { variable } = statement else {
        return None;
    };
    let name = variable
        .iter()
        .map(|i| i.value.to_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    Some(Arc::new(Schema::new(vec![Field::new(
        name,
        DataType::Utf8,
        false,
    )])))
}

/// A one-row, one-column answer to `SHOW name`.
pub(crate) fn one_text(name: &str, text: String) -> StatementResult {
    let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
    let column = StringArray::from(vec![text]);
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).expect("one text column");
    StatementResult::Rows {
        schema,
        batches: vec![batch],
    }
}

/// The name of the setting `statement` sets, shows or resets (`SET x = ...`, `SHOW x`,
/// `RESET x`), dotted parts joined; `None` for other statements.
pub(crate) fn setting_statement_name(statement: &ast::Statement) -> Option<String> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => {
            Some(variable.to_string())
        }
        ast::Statement::ShowVariable { variable } => Some(
            variable
                .iter()
                .map(|part| part.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
        ),
        ast::Statement::Reset(reset) => match &reset.reset {
            ast::Reset::ConfigurationParameter(name) => Some(name.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `statement` is one a session answers itself (`SET statement_timeout`, the
/// PostgreSQL parameters clients set).
pub fn is_session_setting(statement: &ast::Statement) -> bool {
    if crate::sessions::time_zone::is_time_zone_setting(statement)
        || crate::sessions::optimizer_setting::is_optimizer_setting(statement)
        || crate::sessions::spread_setting::is_spread_setting(statement)
        || crate::sessions::vector_setting::is_vector_setting(statement)
    {
        return true;
    }
    if !crate::sessions::settings::is_process_setting(statement)
        && crate::sessions::pg_parameters::is_parameter_statement(statement)
    {
        return true;
    }
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => {
            let name = variable.to_string();
            is_statement_timeout(&name) || is_null_order(&name) || is_threads(&name)
        }
        ast::Statement::ShowVariable { variable } => {
            let [name] = variable.as_slice() else {
                return false;
            };
            is_statement_timeout(&name.value)
                || is_null_order(&name.value)
                || is_threads(&name.value)
        }
        _ => false,
    }
}

fn is_threads(name: &str) -> bool {
    name.eq_ignore_ascii_case(THREADS)
}

fn is_null_order(name: &str) -> bool {
    name.eq_ignore_ascii_case(DEFAULT_NULL_ORDER)
}

fn is_statement_timeout(name: &str) -> bool {
    name.eq_ignore_ascii_case(STATEMENT_TIMEOUT)
}

/// Reads a timeout as Postgres does: a number of milliseconds, or a number with a unit (`ms`,
/// `s`, `min`, `h`, `d`); 0 means none.
pub fn parse_timeout(text: &str) -> Result<Option<Duration>> {
    let invalid = || {
        NodeError::Other(format!(
            "invalid value for statement_timeout: '{text}' (expected a duration such as 500, \
             '500ms', '30s' or '5min')"
        ))
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let millis_per_unit = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => 1.0,
        "s" => 1e3,
        "min" => 60e3,
        "h" => 3600e3,
        "d" => 86400e3,
        _ => return Err(invalid()),
    };
    let millis = number * millis_per_unit;
    if !(0.0..=i32::MAX as f64).contains(&millis) {
        return Err(invalid());
    }
    Ok((millis >= 1.0).then(|| Duration::from_millis(millis as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_postgres_reads_them() {
        assert_eq!(parse_timeout("0").unwrap(), None);
        assert_eq!(
            parse_timeout("1500").unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_timeout("30s").unwrap(), Some(Duration::from_secs(30)));
        assert_eq!(
            parse_timeout("5min").unwrap(),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            parse_timeout("250ms").unwrap(),
            Some(Duration::from_millis(250))
        );
        for bad in ["", "-1", "5 parsecs", "1e99"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }
}
