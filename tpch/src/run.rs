//! `pondra tpch run`: one warm-up pass, then the best of N timed passes per query.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use pondra_cluster::{Node, NodeError, StatementResult};

use crate::query;

/// The best time of one query over the timed passes, with the rows of its last run.
pub struct QueryTiming {
    pub query: usize,
    pub best: Duration,
    pub rows: Vec<RecordBatch>,
}

/// Runs `queries` (numbers 1 to 22) once to warm up, then `runs` timed passes.
pub async fn run_queries(
    node: &Arc<Node>,
    queries: &[usize],
    runs: usize,
) -> Result<Vec<QueryTiming>, NodeError> {
    let mut timings = Vec::new();
    for &n in queries {
        let text = query(n).ok_or_else(|| NodeError::Other(format!("no TPC-H query {n}")))?;
        let mut rows = run_one(node, text).await?;
        let mut best = Duration::MAX;
        for _ in 0..runs {
            let started = Instant::now();
            rows = run_one(node, text).await?;
            best = best.min(started.elapsed());
        }
        timings.push(QueryTiming {
            query: n,
            best,
            rows,
        });
    }
    Ok(timings)
}

async fn run_one(node: &Arc<Node>, text: &str) -> Result<Vec<RecordBatch>, NodeError> {
    let mut rows = Vec::new();
    for result in node.execute(text).await? {
        if let StatementResult::Rows { batches, .. } = result {
            rows = batches;
        }
    }
    Ok(rows)
}

/// EXPLAIN ANALYZE of query `n`: its physical plan with each operator's rows and time.
pub async fn explain_query(node: &Arc<Node>, n: usize) -> Result<String, NodeError> {
    let text = query(n).ok_or_else(|| NodeError::Other(format!("no TPC-H query {n}")))?;
    let rows = run_one(node, &format!("EXPLAIN ANALYZE {text}")).await?;
    let mut plan = String::new();
    for batch in &rows {
        let lines = arrow::compute::cast(batch.column(0), &arrow::datatypes::DataType::Utf8)
            .map_err(|e| NodeError::Other(e.to_string()))?;
        let lines = lines
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .expect("cast to strings");
        for line in lines.iter().flatten() {
            plan.push_str(line);
            plan.push('\n');
        }
    }
    Ok(plan)
}
