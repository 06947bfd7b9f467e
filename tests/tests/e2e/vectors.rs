//! Vector search through an HNSW index (ADR 0082), on a lake of a few thousand vectors: the
//! index answers as an exact scan does for nearly every query, reads only the rows its graphs
//! find, follows inserts and deletes, survives a reopen, and goes with DROP INDEX.

use std::sync::Arc;

use pondra_cluster::{Node, NodeOptions};
use pondra_tests::{map_cells, run_sql};

const ROWS: usize = 3_000;
const DIMENSIONS: usize = 8;

/// Seeded vectors in clusters: row `i` is near centre `i % 12`.
fn vector_literal(row: usize) -> String {
    let centre = row % 12;
    let values: Vec<String> = (0..DIMENSIONS)
        .map(|d| {
            let jitter = ((row * 7919 + d * 104_729) % 1000) as f64 / 1000.0 - 0.5;
            format!("{:.4}", (centre * (d + 3) % 17) as f64 + jitter)
        })
        .collect();
    format!("[{}]", values.join(","))
}

fn insert_rows(rows: std::ops::Range<usize>) -> String {
    let values: Vec<String> = rows
        .map(|row| format!("({row}, '{}')", vector_literal(row)))
        .collect();
    format!("INSERT INTO items VALUES {}", values.join(","))
}

fn cells(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, sql: &str) -> Vec<Vec<String>> {
    let (_, batches) = run_sql(node, runtime, sql).unwrap().expect("rows");
    map_cells(&batches, |_, _, _, text| text)
}

fn nearest_ids(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, query: usize) -> Vec<String> {
    let sql = format!(
        "SELECT id FROM items ORDER BY embedding <-> '{}' LIMIT 10",
        vector_literal(query)
    );
    cells(node, runtime, &sql)
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

/// The line of the table scan in EXPLAIN ANALYZE of the nearest rows to row `query`.
fn scan_line(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, query: usize) -> String {
    let sql = format!(
        "EXPLAIN ANALYZE SELECT id FROM items ORDER BY embedding <-> '{}' LIMIT 10",
        vector_literal(query)
    );
    let plan = cells(node, runtime, &sql)[0][0].clone();
    let line = plan
        .lines()
        .find(|l| l.contains("TableScan: items"))
        .expect("a scan");
    line.trim().to_string()
}

/// Rows read by a scan, from its EXPLAIN ANALYZE line.
fn rows_read(line: &str) -> usize {
    let rows = line.split("[rows=").nth(1).expect("rows");
    rows.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn hnsw_index_answers_as_an_exact_scan_and_follows_changes() {
    let runtime = Arc::new(tokio::runtime::Runtime::new().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        runtime
            .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
            .unwrap()
    };
    let node = open();
    run_sql(
        &node,
        &runtime,
        "CREATE TABLE items (id INT, embedding FLOAT[8])",
    )
    .unwrap();
    for chunk in (0..ROWS).step_by(500) {
        run_sql(&node, &runtime, &insert_rows(chunk..chunk + 500)).unwrap();
    }
    run_sql(&node, &runtime, "CHECKPOINT").unwrap();
    let queries: Vec<usize> = (0..20).map(|q| q * 149 + 3).collect();
    let exact: Vec<Vec<String>> = queries
        .iter()
        .map(|&q| nearest_ids(&node, &runtime, q))
        .collect();
    assert!(!scan_line(&node, &runtime, 3).contains("nearest="));

    let create = "CREATE INDEX items_hnsw ON items USING HNSW (embedding) WITH (metric = 'l2sq')";
    run_sql(&node, &runtime, create).unwrap();
    let line = scan_line(&node, &runtime, 3);
    assert!(
        line.contains("nearest=items_hnsw (hnsw, l2sq, k=10)"),
        "{line}"
    );
    // The scan reads the rows the graphs found, not the table.
    assert!(rows_read(&line) < ROWS / 10, "{line}");
    let recall = |node: &Arc<Node>| {
        let mut found = 0;
        for (query, truth) in queries.iter().zip(&exact) {
            let ids = nearest_ids(node, &runtime, *query);
            found += truth.iter().filter(|id| ids.contains(id)).count();
        }
        found as f64 / (queries.len() * 10) as f64
    };
    let indexed = recall(&node);
    assert!(indexed >= 0.95, "recall@10 {indexed}");

    // A deleted row is never returned; a row inserted is found in the log tail, then in a
    // file with its own graph once tiered.
    run_sql(&node, &runtime, "DELETE FROM items WHERE id = 3").unwrap();
    assert!(!nearest_ids(&node, &runtime, 3).contains(&"3".to_string()));
    let insert = format!("INSERT INTO items VALUES (100000, '{}')", vector_literal(3));
    run_sql(&node, &runtime, &insert).unwrap();
    assert_eq!(nearest_ids(&node, &runtime, 3)[0], "100000");
    run_sql(&node, &runtime, "CHECKPOINT").unwrap();
    assert_eq!(nearest_ids(&node, &runtime, 3)[0], "100000");
    // With every row in a file with a graph, the scan reads the 10 nearest over all the files.
    let line = scan_line(&node, &runtime, 3);
    assert_eq!(rows_read(&line), 10, "{line}");
    assert!(
        node.snapshot()
            .files(node.snapshot().table("items").unwrap().id)
            .len()
            >= 2
    );

    // The vectors the index's scan gives, taken from its graphs, are the rows' own.
    let sql = format!(
        "SELECT id, embedding FROM items ORDER BY embedding <-> '{}' LIMIT 10",
        vector_literal(500)
    );
    for row in cells(&node, &runtime, &sql) {
        let stored = format!("SELECT embedding FROM items WHERE id = {}", row[0]);
        assert_eq!(
            cells(&node, &runtime, &stored)[0][0],
            row[1],
            "row {}",
            row[0]
        );
    }

    // The graphs are in the lake: a reopened lake answers through them.
    runtime.block_on(node.close()).unwrap();
    let node = open();
    let line = scan_line(&node, &runtime, 3);
    assert!(line.contains("nearest=items_hnsw"), "{line}");
    assert_eq!(nearest_ids(&node, &runtime, 3)[0], "100000");
    let graphs = node.snapshot().index_graphs.len();
    assert_eq!(graphs, 1, "one index with graphs");

    run_sql(&node, &runtime, "DROP INDEX items_hnsw").unwrap();
    assert!(!scan_line(&node, &runtime, 3).contains("nearest="));
    assert!(node.snapshot().index_graphs.is_empty());
    runtime.block_on(node.close()).unwrap();
}
