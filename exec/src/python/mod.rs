//! Python functions (ADR 0081): each call of a batch of rows goes to a warm worker process,
//! never into the server. An exception fails the statement with Python's message; a crash
//! costs the worker, which is replaced; a stopped statement (its timeout, a cancel) kills the
//! worker it was waiting on.

mod pool;
mod wire;

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Field, Schema};
use pondra_planner::{PythonCall, PythonFunction};

use crate::{ExecError, Result};
use pool::Failure;
use wire::Payload;

/// The values of `call` over `rows` rows whose arguments are `args`.
pub(crate) fn evaluate_python(
    call: &PythonCall,
    args: Vec<ArrayRef>,
    rows: usize,
) -> Result<ArrayRef> {
    let function = &call.function;
    if rows == 0 {
        // A batch a filter emptied: no call, no worker.
        return Ok(arrow::array::new_empty_array(&function.returns));
    }
    let fields: Vec<Field> = function
        .parameters
        .iter()
        .zip(&args)
        .map(|(name, arg)| Field::new(name, arg.data_type().clone(), true))
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), args, &options)?;
    let control = crate::control::current();
    let control = control.as_deref();
    let mut lent = pool::lend(control)?;
    let result = run(function, &batch, &mut lent, control);
    if matches!(result, Err(Failure::Stopped(_) | Failure::Died(_))) {
        lent.discard();
    }
    let result = result.map_err(|failure| match failure {
        Failure::Stopped(reason) => ExecError::Stopped(reason),
        Failure::Died(why) => ExecError::Execution(format!(
            "the Python worker running {} died: {why}; a new one takes the next call",
            function.name
        )),
    })??;
    if result.len() != rows {
        return Err(ExecError::Execution(format!(
            "Python function {} returned {} values for {rows} rows",
            function.name,
            result.len()
        )));
    }
    crate::expr::cast_value(&result, &function.returns, false).map_err(|e| {
        ExecError::Execution(format!(
            "Python function {} returned values that are not {}: {e}",
            function.name,
            crate::casts::sql_name(&function.returns)
        ))
    })
}

/// Compiles `function` on the worker if it is new there, then calls it on `batch`. The outer
/// error is the worker's fate; the inner one the function's own failure.
fn run(
    function: &PythonFunction,
    batch: &RecordBatch,
    lent: &mut pool::Lent,
    control: Option<&crate::control::StatementControl>,
) -> std::result::Result<Result<ArrayRef>, Failure> {
    let worker = lent.worker();
    let id = function_id(function);
    if !worker.defined.contains(&id) {
        let define = serde_json::json!({
            "op": "define",
            "id": id,
            "name": function.name,
            "parameters": function.parameters,
            "source": function.source,
            "vectorized": function.vectorized,
        });
        let reply = worker.request(&define, &Payload::Bytes(Vec::new()), control)?;
        if let Some(error) = failed(function, &reply.header, "does not compile") {
            return Ok(Err(error));
        }
        worker.defined.insert(id);
    }
    let payload = match worker.pyarrow {
        true => Payload::Arrow(batch.clone()),
        false => match wire::arguments_as_json(batch) {
            Ok(json) => Payload::Bytes(json),
            Err(e) => return Ok(Err(e)),
        },
    };
    let call = serde_json::json!({"op": "call", "id": id, "rows": batch.num_rows()});
    let reply = worker.request(&call, &payload, control)?;
    if let Some(error) = failed(function, &reply.header, "failed") {
        return Ok(Err(error));
    }
    let result = match &reply.payload {
        Payload::Arrow(result) => wire::result_column(result),
        Payload::Bytes(json) => wire::result_from_json(json),
    };
    Ok(result.map_err(|e| {
        ExecError::Execution(format!(
            "Python function {} returned values that are not {}: {e}",
            function.name,
            crate::casts::sql_name(&function.returns)
        ))
    }))
}

/// The statement's error when a reply reports Python's: its message, and the line of the body
/// it was raised on.
fn failed(function: &PythonFunction, header: &serde_json::Value, what: &str) -> Option<ExecError> {
    if header["ok"].as_bool() == Some(true) {
        return None;
    }
    let message = header["message"].as_str().unwrap_or("an unknown error");
    let traceback = header["traceback"].as_str().unwrap_or_default();
    let place = body_line(&function.name, traceback)
        .filter(|_| what == "failed")
        .map(|line| format!(" (line {line} of its body)"))
        .unwrap_or_default();
    Some(ExecError::Execution(format!(
        "Python function {} {what}: {message}{place}",
        function.name
    )))
}

/// The line of the function's body a traceback's innermost frame in it points at. The body
/// is compiled after one line, its `def`.
fn body_line(name: &str, traceback: &str) -> Option<usize> {
    let file = format!("File \"<function {name}>\", line ");
    let at = traceback.rfind(&file)? + file.len();
    let digits: String = traceback[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse::<usize>()
        .ok()?
        .checked_sub(1)
        .filter(|&line| line > 0)
}

/// What a worker knows a compiled function by: its whole definition, so that a replaced
/// function is compiled again.
fn function_id(function: &PythonFunction) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    function.hash(&mut hasher);
    hasher.finish() >> 11
}

#[cfg(test)]
mod tests {
    use super::body_line;

    #[test]
    fn a_traceback_points_at_the_line_of_the_body() {
        let traceback = "Traceback (most recent call last):\n  File \"worker\", line 80, in call\n  File \"<function f>\", line 3, in f\nZeroDivisionError";
        assert_eq!(body_line("f", traceback), Some(2));
        assert_eq!(body_line("g", traceback), None);
    }
}
