//! Past the memory limit, sorts, joins and aggregations spill to disk: EXPLAIN ANALYZE says
//! how much, the answers are those of a run in memory, every reservation is given back and no
//! spill file is left behind.

use std::sync::Arc;

use pondra_cluster::{MemoryPool, Node, NodeOptions};
use pondra_tests::{map_cells, run_sql};

const SETUP: &str = "
    CREATE TABLE a AS SELECT i AS id, CASE WHEN i % 97 = 0 THEN NULL ELSE 'k' || (i % 120000) END AS key
        FROM generate_series(1, 200000) AS s(i);
    CREATE TABLE b AS SELECT i AS id, 'k' || (i * 7 % 180000) AS key FROM generate_series(1, 150000) AS s(i);";

/// Each query, and the operator of its plan that must spill under a small limit.
const QUERIES: [(&str, &str); 4] = [
    (
        "SELECT id, key FROM a ORDER BY key DESC, id OFFSET 199990",
        "Sort:",
    ),
    (
        "SELECT count(*), sum(c), max(c) FROM (SELECT key, count(*) AS c FROM a GROUP BY key) AS x",
        "HashAggregate: group=[key",
    ),
    (
        "SELECT count(*), sum(a.id), sum(b.id) FROM a JOIN b ON a.key = b.key",
        "HashJoin Inner",
    ),
    (
        "SELECT count(*), count(a.id), count(b.id) FROM a FULL JOIN b ON a.key = b.key",
        "HashJoin Full",
    ),
];

fn answer(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, sql: &str) -> Vec<Vec<String>> {
    let (_, batches) = run_sql(node, runtime, sql).unwrap().expect("rows");
    map_cells(&batches, |_, _, _, text| text)
}

/// A node of a new lake whose queries reserve from `memory`, with its runtime and folder.
fn node_within(
    memory: &Arc<MemoryPool>,
) -> (Arc<tokio::runtime::Runtime>, tempfile::TempDir, Arc<Node>) {
    let runtime = Arc::new(tokio::runtime::Runtime::new().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let options = NodeOptions {
        memory: memory.clone(),
        ..NodeOptions::default()
    };
    let node = runtime
        .block_on(Node::open_folder(dir.path(), options))
        .unwrap();
    (runtime, dir, node)
}

fn spill_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("pondra-spill-")
        })
        .count()
}

#[test]
fn operators_past_the_memory_limit_spill_and_answer_as_in_memory() {
    let spill_dir = tempfile::tempdir().unwrap();
    let memory = MemoryPool::spilling_into(usize::MAX / 2, spill_dir.path().to_path_buf());
    let (runtime, _dir, node) = node_within(&memory);
    run_sql(&node, &runtime, SETUP).unwrap();
    let in_memory: Vec<_> = QUERIES
        .iter()
        .map(|(sql, _)| answer(&node, &runtime, sql))
        .collect();
    memory.set_limit(1 << 20);
    for ((sql, operator), expected) in QUERIES.iter().zip(&in_memory) {
        assert_eq!(&answer(&node, &runtime, sql), expected, "{sql}");
        let plan = answer(&node, &runtime, &format!("EXPLAIN ANALYZE {sql}"));
        let plan = &plan[0][0];
        let line = plan
            .lines()
            .find(|l| l.trim_start().starts_with(operator))
            .unwrap_or_else(|| panic!("no {operator} in:\n{plan}"));
        assert!(
            line.contains("spilled="),
            "{operator} did not spill:\n{plan}"
        );
        assert_eq!(memory.used(), 0, "reservations held after {sql}");
        assert_eq!(
            spill_files(spill_dir.path()),
            0,
            "spill files left by {sql}"
        );
    }
    runtime.block_on(node.close()).unwrap();
}

#[test]
fn a_limit_too_small_for_a_sort_with_a_limit_keeps_only_its_first_rows() {
    let (runtime, _dir, node) = node_within(&MemoryPool::new(64 << 10));
    run_sql(&node, &runtime, SETUP).unwrap();
    let top = answer(
        &node,
        &runtime,
        "SELECT id FROM a WHERE key IS NOT NULL ORDER BY key DESC, id LIMIT 3",
    );
    assert_eq!(top, [["99999"], ["99998"], ["99997"]]);
    let plan = answer(
        &node,
        &runtime,
        "EXPLAIN ANALYZE SELECT id FROM a ORDER BY key DESC, id LIMIT 3",
    );
    assert!(!plan[0][0].contains("spilled="), "{}", plan[0][0]);
    runtime.block_on(node.close()).unwrap();
}

/// A join whose build side spills keeps its build keys while the pool grants them: the Parquet
/// scan below its probe side still drops, as it reads, the rows whose keys they lack.
#[test]
fn a_spilled_join_still_filters_its_probe_scan_by_key() {
    let memory = MemoryPool::new(usize::MAX / 2);
    let (runtime, dir, node) = node_within(&memory);
    let file = dir.path().join("probe.parquet");
    let setup = format!(
        "CREATE TABLE probe AS SELECT i AS k, i % 10 AS v FROM generate_series(1, 300000) AS s(i);
        COPY probe TO '{}';
        CREATE TABLE build AS SELECT i * 3 AS k, repeat('x', 100) || i AS payload
            FROM generate_series(1, 20000) AS s(i)",
        file.display()
    );
    run_sql(&node, &runtime, &setup).unwrap();
    let sql = format!(
        "SELECT count(*), sum(p.v), max(length(b.payload)) FROM read_parquet('{}') p
        JOIN build b ON p.k = b.k",
        file.display()
    );
    assert_eq!(answer(&node, &runtime, &sql), [["20000", "90000", "105"]]);
    // The build rows (2 MB) do not fit; their keys do.
    memory.set_limit(1 << 20);
    assert_eq!(answer(&node, &runtime, &sql), [["20000", "90000", "105"]]);
    let plan = answer(&node, &runtime, &format!("EXPLAIN ANALYZE {sql}"));
    let plan = &plan[0][0];
    let line = |operator: &str| {
        plan.lines()
            .find(|l| l.trim_start().starts_with(operator))
            .unwrap_or_else(|| panic!("no {operator} in:\n{plan}"))
    };
    assert!(line("HashJoin Inner").contains("spilled="), "{plan}");
    assert!(line("ParquetScan").contains("[rows=20000 "), "{plan}");
    assert_eq!(memory.used(), 0);
    runtime.block_on(node.close()).unwrap();
}
