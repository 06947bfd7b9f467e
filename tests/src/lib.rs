//! End-to-end tests of Pondra across crates; the tests live in `tests/`. What the sqllogictest
//! harnesses share is here.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_cluster::{Node, StatementResult};

/// A failed statement, as the sqllogictest runner reports it.
#[derive(Debug)]
pub struct SqlError(pub String);

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SqlError {}

/// Runs `sql` on `node`: the schema and rows of its last statement, or `None` when that
/// statement returns no rows.
pub fn run_sql(
    node: &Node,
    runtime: &tokio::runtime::Runtime,
    sql: &str,
) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
    let results = runtime
        .block_on(node.execute(sql))
        .map_err(|e| SqlError(e.to_string()))?;
    Ok(match results.into_iter().last() {
        Some(StatementResult::Rows { schema, batches }) => Some((schema, batches)),
        _ => None,
    })
}
