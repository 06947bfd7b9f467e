//! The 22 TPC-H queries over a generated lake, checked against the reference answers
//! (`tpch/answers/sf<N>/q<N>.csv`: decimals exact, doubles rounded to 6 places).

use crate::common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use pondra_cluster::{Node, NodeOptions};
use pondra_tests::map_cells;

fn cells(batches: &[RecordBatch]) -> Vec<Vec<(String, bool)>> {
    map_cells(batches, |column, _, row, text| {
        let exact = matches!(column.data_type(), DataType::Decimal128(..));
        (text, exact && !column.is_null(row))
    })
}

fn same_value(actual: &str, exact: bool, expected: &str) -> bool {
    if exact || actual == expected {
        return actual == expected;
    }
    match (actual.parse::<f64>(), expected.parse::<f64>()) {
        (Ok(a), Ok(e)) => (a - e).abs() <= 1e-6 * e.abs().max(1.0),
        _ => false,
    }
}

fn check(query: usize, batches: &[RecordBatch], answers: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(answers.join(format!("q{query}.csv"))).unwrap();
    let mut reader = csv_rows(&text);
    reader.remove(0);
    let actual = cells(batches);
    if actual.len() != reader.len() {
        return Err(format!(
            "q{query}: {} rows, expected {}",
            actual.len(),
            reader.len()
        ));
    }
    for (i, (a, e)) in actual.iter().zip(&reader).enumerate() {
        if a.len() != e.len() {
            return Err(format!(
                "q{query} row {i}: {} columns, expected {}",
                a.len(),
                e.len()
            ));
        }
        for ((value, exact), expected) in a.iter().zip(e) {
            if !same_value(value, *exact, expected) {
                return Err(format!(
                    "q{query} row {i}: got {:?}, expected {e:?}",
                    a.iter().map(|c| &c.0).collect::<Vec<_>>()
                ));
            }
        }
    }
    Ok(())
}

/// Splits CSV text into rows of fields (quoted fields may hold commas).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => fields.push(std::mem::take(&mut field)),
                other => field.push(other),
            }
        }
        fields.push(field);
        rows.push(fields);
    }
    rows
}

/// Where the data comes from.
enum Source {
    /// Generated into a lake.
    Lake,
    /// Generated as `<table>.parquet` files and read in place.
    ParquetFiles,
    /// Generated into a lake in a bucket of a real S3 API (moto's server), read through the
    /// object cache.
    Bucket,
}

/// A lake under `lake/` of a new bucket of `s3`, with an object cache in `cache`.
fn bucket_lake(s3: &common::s3::S3, cache: &Path) -> pondra_storage::Lake {
    let bucket = s3.bucket("tpch");
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&s3.endpoint)
        .with_allow_http(true)
        .with_bucket_name(&bucket)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_region("us-east-1")
        .build()
        .unwrap();
    let store = object_store::prefix::PrefixStore::new(store, "lake");
    let cache = pondra_storage::ObjectCache::new(cache.to_path_buf(), 1 << 30).unwrap();
    pondra_storage::Lake::from_store(Arc::new(store), format!("s3://{bucket}/lake"))
        .with_cache(Some(Arc::new(cache)))
}

fn run_scale(sf: f64, answers: &str, source: Source) {
    run_scale_within(sf, answers, source, NodeOptions::default(), |_, _| {});
}

/// Checks the answers of a node opened with `options`, then calls `after` with it.
fn run_scale_within(
    sf: f64,
    answers: &str,
    source: Source,
    options: NodeOptions,
    after: impl FnOnce(&Arc<Node>, &tokio::runtime::Runtime),
) {
    let answers = Path::new(env!("CARGO_MANIFEST_DIR")).join(answers);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let node = match source {
        Source::Bucket => {
            let lake = bucket_lake(common::s3::S3::start(), dir.path());
            let node = runtime.block_on(Node::open(lake, options)).unwrap();
            runtime
                .block_on(pondra_tpch::generate(&node, sf, |_| {}))
                .unwrap();
            node
        }
        Source::Lake => {
            let node = runtime
                .block_on(Node::open_folder(dir.path(), options))
                .unwrap();
            runtime
                .block_on(pondra_tpch::generate(&node, sf, |_| {}))
                .unwrap();
            node
        }
        Source::ParquetFiles => {
            pondra_tpch::write_parquet_dir(dir.path(), sf).unwrap();
            let node = runtime.block_on(Node::open_in_memory(options)).unwrap();
            for table in pondra_tpch::TABLES {
                let path = dir.path().join(format!("{table}.parquet"));
                node.register_parquet(table, path.to_str().unwrap())
                    .unwrap();
            }
            node
        }
    };
    let mut failures = Vec::new();
    for query in 1..=22 {
        match runtime.block_on(pondra_tpch::run_queries(&node, &[query], 0)) {
            Ok(timings) => {
                if let Err(e) = check(query, &timings[0].rows, &answers) {
                    failures.push(e);
                }
            }
            Err(e) => failures.push(format!("q{query}: {e}")),
        }
    }
    after(&node, &runtime);
    runtime.block_on(node.close()).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tpch_sf0_1_answers_over_a_lake() {
    let answers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tpch/answers/sf0.1");
    let options = NodeOptions::default();
    run_scale_within(
        0.1,
        "tpch/answers/sf0.1",
        Source::Lake,
        options,
        |node, runtime| {
            // Cut into three parts, all run here (ADR 0076): the same answers, to the bit.
            let session = pondra_cluster::Session::new(None);
            let run = |sql: &str| -> Result<Vec<RecordBatch>, String> {
                let mut rows = Vec::new();
                for statement in pondra_cluster::parse_sql(sql).map_err(|e| e.to_string())? {
                    let result = runtime.block_on(node.execute_in(&session, statement));
                    if let pondra_cluster::StatementResult::Rows { batches, .. } =
                        result.map_err(|e| e.to_string())?
                    {
                        rows = batches;
                    }
                }
                Ok(rows)
            };
            let text =
                |rows: &[RecordBatch]| arrow::util::pretty::pretty_format_batches(rows).unwrap();
            let mut failures = Vec::new();
            for query in 1..=22 {
                let sql = pondra_tpch::query(query).unwrap();
                run("RESET debug_spread_parts").unwrap();
                let alone = run(sql).unwrap();
                run("SET debug_spread_parts = 3").unwrap();
                let cut = run(sql).unwrap();
                if let Err(e) = check(query, &cut, &answers) {
                    failures.push(format!("cut into parts: {e}"));
                } else if text(&alone).to_string() != text(&cut).to_string() {
                    failures.push(format!("q{query} cut into parts: other bits than alone"));
                }
            }
            // Gathered parts spill to disk when the memory pool refuses them, as joins do.
            run("SET debug_force_external = true").unwrap();
            for query in [1, 3, 18] {
                let cut = run(pondra_tpch::query(query).unwrap()).unwrap();
                if let Err(e) = check(query, &cut, &answers) {
                    failures.push(format!("cut into parts, spilled: {e}"));
                }
            }
            run("SET debug_force_external = false").unwrap();
            let plan = run(&format!("EXPLAIN {}", pondra_tpch::query(1).unwrap())).unwrap();
            let plan = text(&plan).to_string();
            assert!(plan.contains("Gather: 3 parts"), "{plan}");
            // Lineitem joined to orders: both sliced, exchanged on the order key.
            let plan = run(&format!("EXPLAIN {}", pondra_tpch::query(18).unwrap())).unwrap();
            let plan = text(&plan).to_string();
            assert!(plan.contains("Exchange"), "{plan}");
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        },
    );
}

#[test]
fn tpch_sf0_1_answers_over_a_lake_in_a_bucket() {
    run_scale(0.1, "tpch/answers/sf0.1", Source::Bucket);
}

#[test]
fn tpch_sf0_1_answers_over_parquet_files() {
    run_scale(0.1, "tpch/answers/sf0.1", Source::ParquetFiles);
}

/// Within 4 MB, the joins and aggregations of most queries spill to disk (q18's grouping by
/// order and its joins among them), and every answer is the same.
#[test]
fn tpch_sf0_1_answers_over_parquet_files_within_4_mb() {
    let memory = pondra_cluster::MemoryPool::new(4 << 20);
    let options = NodeOptions {
        memory: memory.clone(),
        ..NodeOptions::default()
    };
    let source = Source::ParquetFiles;
    run_scale_within(
        0.1,
        "tpch/answers/sf0.1",
        source,
        options,
        |node, runtime| {
            let sql = format!("EXPLAIN ANALYZE {}", pondra_tpch::query(18).unwrap());
            let results = runtime.block_on(node.execute(&sql)).unwrap();
            let pondra_cluster::StatementResult::Rows { batches, .. } = &results[0] else {
                panic!("EXPLAIN ANALYZE returns rows");
            };
            let plan = arrow::util::pretty::pretty_format_batches(batches)
                .unwrap()
                .to_string();
            assert!(
                plan.contains("HashJoin") && plan.contains("spilled="),
                "{plan}"
            );
            assert_eq!(memory.used(), 0);
        },
    );
}

/// Scale 1: run before closing TPC-H work (`cargo test --release -p pondra-tests --test e2e tpch::
/// -- --ignored`).
#[test]
#[ignore]
fn tpch_sf1_answers_over_a_lake() {
    run_scale(1.0, "tpch/answers/sf1", Source::Lake);
}

#[test]
#[ignore]
fn tpch_sf1_answers_over_a_lake_in_a_bucket() {
    run_scale(1.0, "tpch/answers/sf1", Source::Bucket);
}

#[test]
#[ignore]
fn tpch_sf1_answers_over_parquet_files() {
    run_scale(1.0, "tpch/answers/sf1", Source::ParquetFiles);
}
