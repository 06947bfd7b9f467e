//! End-to-end tests of Pondra across crates; the tests live in `tests/`. What the sqllogictest
//! harnesses share is here, and the SQL fuzzer (`fuzz`).

pub mod duckdb_slt;
pub mod fuzz;
pub mod query_generator;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_cluster::{Node, Session, StatementResult};
use std::sync::Arc;

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
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    sql: &str,
) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
    run_sql_in(node, runtime, &Session::new(None), sql)
}

/// `run_sql` in `session`, whose transaction and temporary tables the statements share.
pub fn run_sql_in(
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    session: &Arc<Session>,
    sql: &str,
) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
    let results = runtime
        .block_on(async {
            let mut results = Vec::new();
            for statement in pondra_cluster::parse_sql(sql)? {
                results.push(node.execute_in(session, statement).await?);
            }
            Ok::<_, pondra_cluster::NodeError>(results)
        })
        .map_err(|e| SqlError(e.to_string()))?;
    Ok(match results.into_iter().last() {
        Some(StatementResult::Rows { schema, batches }) => Some((schema, batches)),
        _ => None,
    })
}

/// The rows a query answers, each as its cells joined by tabs, sorted: for comparing a view
/// with its query.
pub fn sorted_rows(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, sql: &str) -> Vec<String> {
    let (_, batches) = run_sql(node, runtime, sql).unwrap().expect("rows");
    let mut rows: Vec<String> = map_cells(&batches, |_, _, _, text| text)
        .into_iter()
        .map(|row| row.join("\t"))
        .collect();
    rows.sort();
    rows
}

/// Every cell of `batches`, row by row, written by `write(column, column index, row, text)`
/// where `text` is Arrow's display of the value (`NULL` for nulls).
pub fn map_cells<T>(
    batches: &[RecordBatch],
    write: impl Fn(&dyn arrow::array::Array, usize, usize, String) -> T,
) -> Vec<Vec<T>> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("displayable column"))
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .enumerate()
                    .map(|(i, (column, f))| {
                        write(column.as_ref(), i, row, f.value(row).to_string())
                    })
                    .collect(),
            );
        }
    }
    rows
}
