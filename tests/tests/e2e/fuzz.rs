//! The SQL fuzzer against `pondra serve`: mutants of the project's SQL and pathological
//! statements through the Postgres door, and garbage through the HTTP door, on a small TPC-H
//! lake with a 256 MB memory limit and a 1 s statement timeout. It must end with no process
//! death, no panic, no statement answered more than 2 s after its timeout, no 5xx answer,
//! the server's memory within bounds, and a table written before the run holding exactly its
//! rows.
//!
//! `cargo test -p pondra-tests --test e2e fuzz::` runs the fixed seeds of `CI_SEEDS`, 1,500
//! statements each (`PONDRA_FUZZ_STATEMENTS`); `cargo test --release -p pondra-tests --test
//! e2e fuzz:: -- --ignored --nocapture` the long run (100,000) of a random seed it prints.
//! `PONDRA_FUZZ_SEED` replays a seed.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Served, pondra};
use pondra_tests::fuzz::{Fuzzer, corpus};
use tokio_postgres::{Client, NoTls};

/// How long each statement may run.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long after its timeout a statement may take to answer.
/// In a debug build on a loaded two-core machine, a long statement's parse and plan (which
/// checks for its stop less often than execution) take seconds: the bound is wider there, and
/// still far below a statement that does not stop.
const STOP_GRACE: Duration = Duration::from_secs(if cfg!(debug_assertions) { 10 } else { 2 });

/// The server's resident memory may not pass this. Its memory limit is 256 MB: operators that
/// cannot spill may hold 64 MB past it, and allocations checked against it are not held, so
/// several may be in flight at once, and the allocator keeps some freed memory for a while.
const RESIDENT_LIMIT: u64 = 2 << 30;

/// The rows of the table written before the run, which nothing in the corpus names.
const GUARD_ROWS: u64 = 1000;

/// The seeds CI runs: fixed, so that a CI run never fails by chance (the first is the one
/// whose long INSERT once outlasted the time bound of a loaded debug build).
const CI_SEEDS: [u64; 2] = [3_722_359_592, 20_261_206];

/// Statements per CI seed.
const CI_STATEMENTS: u64 = 1_500;

#[test]
fn fuzzed_statements_cost_their_client_an_error_never_the_server() {
    let statements = setting("PONDRA_FUZZ_STATEMENTS").unwrap_or(CI_STATEMENTS);
    match setting("PONDRA_FUZZ_SEED") {
        Some(seed) => run(seed, statements),
        None => CI_SEEDS.iter().for_each(|&seed| run(seed, statements)),
    }
}

/// A random seed, printed to replay it with `PONDRA_FUZZ_SEED`.
#[test]
#[ignore = "long: 100,000 statements"]
fn fuzzed_statements_long_run() {
    let seed = setting("PONDRA_FUZZ_SEED").unwrap_or_else(|| u64::from(rand::random::<u32>()));
    run(seed, setting("PONDRA_FUZZ_STATEMENTS").unwrap_or(100_000));
}

fn setting(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|n| n.parse().ok())
}

/// What the run counted.
#[derive(Default, Debug)]
struct Tally {
    statements: u64,
    ran: u64,
    refused: u64,
    bodies: u64,
    reconnects: u64,
    peak_resident: u64,
}

fn run(seed: u64, statements: u64) {
    println!("fuzz seed {seed} (PONDRA_FUZZ_SEED={seed} replays it)");
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let out = pondra()
        .arg("--dir")
        .arg(&lake)
        .args(["tpch", "gen", "--sf", "0.01"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let guard = format!(
        "CREATE TABLE fuzz_guard AS SELECT i AS id, 'row ' || i AS label \
         FROM generate_series(1, {GUARD_ROWS}) AS g(i); \
         CREATE TABLE fuzz_scratch (id BIGINT)"
    );
    let out = common::sql(&lake, &[&guard]);
    assert!(out.status.success(), "{}", common::stderr(&out));

    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut served = Served::start_logging(
        &lake,
        &[
            "--memory-limit",
            "256MB",
            "--statement-timeout",
            "1s",
            "--tier-secs",
            "2",
        ],
        Stdio::from(log),
    );
    let corpus = corpus(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    println!("corpus of {} statements", corpus.len());
    let mut fuzzer = Fuzzer::new(seed, corpus);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let mut tally = Tally::default();
    let bodies = sample_bodies();
    let mut client = runtime.block_on(connect(&served));
    for index in 0..statements {
        if index % 20 == 19 {
            send_garbage(
                &mut served,
                (&mut fuzzer, &bodies),
                (seed, index),
                &log_path,
            );
            tally.bodies += 1;
        }
        let sql = fuzzer.next_statement();
        let shown: String = sql.chars().take(300).collect();
        tally.statements += 1;
        let answer = runtime.block_on(async {
            tokio::time::timeout(STATEMENT_TIMEOUT + STOP_GRACE, client.simple_query(&sql)).await
        });
        match answer {
            Err(_) => panic!(
                "seed {seed}, statement {index}: no answer {:?} after its timeout: {shown}",
                STOP_GRACE
            ),
            Ok(Ok(_)) => tally.ran += 1,
            Ok(Err(e)) if e.as_db_error().is_some() => tally.refused += 1,
            Ok(Err(e)) => {
                assert!(
                    served.running(),
                    "seed {seed}, statement {index}: the server died ({e}): {shown}"
                );
                tally.reconnects += 1;
                client = runtime.block_on(connect(&served));
            }
        }
        if let Some(resident) = served.resident_bytes() {
            if index % 500 == 0 {
                println!("after {index} statements: resident {} MB", resident >> 20);
            }
            tally.peak_resident = tally.peak_resident.max(resident);
            assert!(
                resident < RESIDENT_LIMIT,
                "seed {seed}, statement {index}: the server holds {resident} bytes: {shown}"
            );
        }
    }
    let guard = runtime.block_on(async {
        // A fuzzed BEGIN may have left the session in a transaction, aborted by a later error.
        client
            .simple_query("ROLLBACK")
            .await
            .expect("ROLLBACK ends any transaction");
        client
            .simple_query("SELECT count(*), sum(id), count(DISTINCT label) FROM fuzz_guard")
            .await
            .expect("the guard table reads")
    });
    let row = guard
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                (0..3)
                    .map(|i| row.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .expect("a row");
    let expected_sum = GUARD_ROWS * (GUARD_ROWS + 1) / 2;
    assert_eq!(
        row,
        [
            GUARD_ROWS.to_string(),
            expected_sum.to_string(),
            GUARD_ROWS.to_string()
        ],
        "seed {seed}: the guard table changed"
    );
    drop(client);
    let stopped = served
        .terminate_within(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("seed {seed}: the server did not stop after SIGTERM"));
    let log = std::fs::read_to_string(&log_path).unwrap();
    let panics: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("panicked") || l.starts_with("internal error"))
        .collect();
    println!(
        "fuzz: {} statements ({} ran, {} refused, {} reconnects), {} HTTP bodies, in {:.1} s; \
         peak resident {} MB; stopped {:?} after SIGTERM",
        tally.statements,
        tally.ran,
        tally.refused,
        tally.reconnects,
        tally.bodies,
        started.elapsed().as_secs_f64(),
        tally.peak_resident >> 20,
        stopped
    );
    assert!(
        panics.is_empty(),
        "seed {seed}: the server panicked:\n{}",
        panics.join("\n")
    );
}

async fn connect(served: &Served) -> Client {
    let (client, connection) = tokio_postgres::connect(&served.pg_config(), NoTls)
        .await
        .expect("connect to the Postgres door");
    tokio::spawn(connection);
    client
}

/// Well-formed bodies for the append door, for the fuzzer to break.
fn sample_bodies() -> Vec<Vec<u8>> {
    use arrow::array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let batch =
        RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as _)])
            .unwrap();
    let mut arrow = Vec::new();
    let mut writer =
        arrow::ipc::writer::StreamWriter::try_new(&mut arrow, &batch.schema()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    vec![
        arrow,
        b"{\"id\": 1}\n{\"id\": 2}\n".to_vec(),
        b"id\n1\n2\n".to_vec(),
    ]
}

/// Sends one garbage body to the HTTP door; any 5xx, or a connection closed without an answer,
/// fails the run (the latter with whether the server still runs and the end of its log).
fn send_garbage(
    served: &mut Served,
    (fuzzer, bodies): (&mut Fuzzer, &[Vec<u8>]),
    (seed, index): (u64, u64),
    log_path: &std::path::Path,
) {
    let body = fuzzer.next_body(bodies);
    let content_type = *fuzzer.pick(&[
        "application/vnd.apache.arrow.stream",
        "application/x-ndjson",
        "text/csv",
        "application/json",
        "text/plain",
    ]);
    let path = *fuzzer.pick(&[
        "/sql",
        "/tables/fuzz_scratch/append",
        "/tables/missing/append",
        "/tables/fuzz_scratch/append?producer=fuzz&seq=x",
    ]);
    let posted = common::try_http_post(&served.doors["http"], path, content_type, &body);
    let (status, answer) = posted.unwrap_or_else(|answer| {
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        // A panic's message, else the end of the log.
        let lines: Vec<&str> = log.lines().collect();
        let from = match lines.iter().rposition(|l| l.contains("panicked at")) {
            Some(at) => at,
            None => lines.len().saturating_sub(40),
        };
        let tail: Vec<&str> = lines[from..].iter().take(400).rev().copied().collect();
        panic!(
            "seed {seed}, body {index}: no HTTP answer from {path} ({content_type}, {} bytes): \
             {answer:?}; server running: {}; its log ends:\n{}",
            body.len(),
            served.running(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    });
    assert!(
        status < 500,
        "seed {seed}, body {index}: {status} from {path} ({content_type}): {answer}"
    );
}
