//! One client's bad statement costs that client an error, never the server: statements nested
//! too deep are refused, allocations past the memory limit fail alone, cancels, timeouts,
//! disconnects and SIGTERM stop what runs, a LIMIT stops the work below it, and a panic comes
//! back as an error. Each against `pondra serve` on a small TPC-H lake, through the Postgres
//! door (tokio-postgres) and the HTTP door.

use crate::common;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Served, pondra};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// A TPC-H lake at scale 0.01, made once and copied for each test.
fn tpch_lake() -> &'static Path {
    static LAKE: OnceLock<tempfile::TempDir> = OnceLock::new();
    LAKE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let lake = dir.path().join("lake");
        let out = pondra()
            .arg("--dir")
            .arg(&lake)
            .args(["tpch", "gen", "--sf", "0.01"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        dir
    })
    .path()
}

/// A server on a fresh copy of the TPC-H lake, with `args`.
fn serve(args: &[&str]) -> (tempfile::TempDir, Served) {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&tpch_lake().join("lake"), &dir.path().join("lake"));
    let served = Served::start(&dir.path().join("lake"), args);
    (dir, served)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(served: &Served) -> Client {
    let (client, connection) = tokio_postgres::connect(&served.pg_config(), NoTls)
        .await
        .expect("connect to the Postgres door");
    tokio::spawn(connection);
    client
}

/// The first column of the first row of `sql`'s answer.
async fn scalar(client: &Client, sql: &str) -> Result<String, String> {
    let messages = client.simple_query(sql).await.map_err(error_text)?;
    messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("NULL").to_string()),
            _ => None,
        })
        .ok_or_else(|| "no rows".to_string())
}

/// A client error's text, with the server's message when there is one.
fn error_text(error: tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// Awaits `work`, failing the test if it takes more than 10 s: what should stop a statement
/// must not leave the test waiting for ever when it does not.
async fn bounded<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .expect("the statement stopped")
}

const ENDLESS: &str =
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";

#[test]
fn statements_nested_too_deep_are_refused_and_the_server_answers_on() {
    let (_dir, served) = serve(&[]);
    runtime().block_on(async {
        let client = connect(&served).await;
        let deep_sum = format!("SELECT 1{}", " + 1".repeat(100_000));
        let many_arms = vec!["SELECT 1"; 10_000].join(" UNION ALL ");
        let parentheses = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
        let deep_join = format!(
            "SELECT 1 FROM {}",
            (0..1_500)
                .map(|i| format!("region r{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for sql in [&deep_sum, &many_arms, &parentheses, &deep_join] {
            let error = scalar(&client, sql).await.unwrap_err();
            assert!(
                error.contains("statement too deeply nested (limit 1000)"),
                "{error}"
            );
            assert!(error.contains("54001"), "{error}");
        }
        // Just within the limits: answered.
        let sum = format!("SELECT 1{}", " + 1".repeat(900));
        assert_eq!(scalar(&client, &sum).await.unwrap(), "901");
        let arms = vec!["SELECT 1"; 900].join(" UNION ALL ");
        let rows = client.simple_query(&arms).await.unwrap();
        let rows = rows
            .iter()
            .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
            .count();
        assert_eq!(rows, 900);
        assert_eq!(
            scalar(&client, "SELECT count(*) FROM nation")
                .await
                .unwrap(),
            "25"
        );
    });
}

#[test]
fn an_allocation_past_the_memory_limit_fails_alone_while_others_answer() {
    let (_dir, served) = serve(&["--memory-limit", "1GB"]);
    runtime().block_on(async {
        let greedy = connect(&served).await;
        let other = connect(&served).await;
        let huge = tokio::spawn(async move {
            let mut errors = Vec::new();
            for sql in [
                "SELECT length(repeat('x', 2000000000))",
                "SELECT string_agg(repeat('x', 100000), ',') FROM lineitem",
                "SELECT count(*) FROM generate_series(1, 1000000000)",
            ] {
                errors.push(scalar(&greedy, sql).await.unwrap_err());
            }
            errors
        });
        // The second client keeps getting answers meanwhile.
        for _ in 0..20 {
            assert_eq!(
                scalar(&other, "SELECT count(*) FROM region").await.unwrap(),
                "5"
            );
        }
        for error in huge.await.unwrap() {
            assert!(
                error.contains("out of memory: the statement needed more than 1.0 GiB"),
                "{error}"
            );
            assert!(error.contains("53200"), "{error}");
        }
        assert_eq!(
            scalar(&other, "SELECT count(*) FROM nation").await.unwrap(),
            "25"
        );
    });
    assert!(
        served.resident_bytes().unwrap() < 3 << 30,
        "the server holds {} bytes",
        served.resident_bytes().unwrap()
    );
}

#[test]
fn a_limit_over_a_forty_way_cross_join_answers_and_a_long_join_chain_plans_quickly() {
    let (_dir, served) = serve(&[]);
    runtime().block_on(async {
        let client = connect(&served).await;
        // Without a bound these run for ever: the cross join has 25^40 rows.
        client
            .simple_query("SET statement_timeout = '10s'")
            .await
            .unwrap();
        let cross = format!(
            "SELECT n39.n_name FROM {} LIMIT 1",
            (0..40)
                .map(|i| format!("nation n{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(scalar(&client, &cross).await.unwrap(), "ALGERIA");
        let chain = format!(
            "SELECT count(*) FROM nation n0 {}",
            (1..200)
                .map(|i| format!(
                    "JOIN nation n{i} ON n{}.n_nationkey = n{i}.n_nationkey",
                    i - 1
                ))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let planning = Instant::now();
        scalar(&client, &format!("EXPLAIN {chain}")).await.unwrap();
        let planned = planning.elapsed();
        assert!(planned < Duration::from_secs(1), "planned in {planned:?}");
        assert_eq!(scalar(&client, &chain).await.unwrap(), "25");
    });
}

#[test]
fn a_cancel_request_and_a_statement_timeout_stop_an_endless_query_within_a_second() {
    let (_dir, served) = serve(&[]);
    runtime().block_on(async {
        let client = connect(&served).await;
        let cancel = client.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let sent = Instant::now();
            cancel.cancel_query(NoTls).await.unwrap();
            sent
        });
        let error = bounded(scalar(&client, ENDLESS)).await.unwrap_err();
        let stopped = canceller.await.unwrap().elapsed();
        assert!(
            error.contains("canceling statement due to user request (57014)"),
            "{error}"
        );
        assert!(
            stopped < Duration::from_secs(1),
            "stopped {stopped:?} after the cancel"
        );

        client
            .simple_query("SET statement_timeout = '300ms'")
            .await
            .unwrap();
        assert_eq!(
            scalar(&client, "SHOW statement_timeout").await.unwrap(),
            "300ms"
        );
        let started = Instant::now();
        let error = bounded(scalar(&client, ENDLESS)).await.unwrap_err();
        assert!(
            error.contains("canceling statement due to statement timeout (57014)"),
            "{error}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(1300),
            "{:?}",
            started.elapsed()
        );
        // The session goes on.
        client
            .simple_query("SET statement_timeout = 0")
            .await
            .unwrap();
        assert_eq!(
            scalar(&client, "SELECT count(*) FROM region")
                .await
                .unwrap(),
            "5"
        );
    });
}

#[test]
fn an_error_quoting_a_huge_input_is_cut_short_and_answered_at_once() {
    let (_dir, served) = serve(&["--statement-timeout", "5s"]);
    let huge_name = format!("SELECT * FROM \"{}\"", "t".repeat(1_000_000));
    let statements = [
        "SELECT 'a' ~ repeat('x', 100000000)",
        "SELECT CAST(repeat('9', 10000000) AS INT)",
        huge_name.as_str(),
    ];
    runtime().block_on(async {
        let client = connect(&served).await;
        for sql in statements {
            let started = Instant::now();
            let error = bounded(scalar(&client, sql)).await.unwrap_err();
            assert!(
                error.len() < 6_000,
                "{} bytes of error for {}...: {}...",
                error.len(),
                &sql[..40],
                &error[..200]
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?} for {}...",
                started.elapsed(),
                &sql[..40]
            );
        }
        assert_eq!(scalar(&client, "SELECT 1").await.unwrap(), "1");
    });
}

#[test]
fn the_server_wide_timeout_applies_to_every_door() {
    let (_dir, served) = serve(&["--statement-timeout", "300ms"]);
    let address = served.doors["http"].clone();
    let started = Instant::now();
    let (status, body) = common::http_post(&address, "/sql", "text/plain", ENDLESS.as_bytes());
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("canceling statement due to statement timeout"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_millis(1300));
    runtime().block_on(async {
        let client = connect(&served).await;
        let error = bounded(scalar(&client, ENDLESS)).await.unwrap_err();
        assert!(error.contains("statement timeout"), "{error}");
    });
}

/// How many statements the server is running, from `/stats`.
fn statements_running(served: &Served) -> u64 {
    let (body, _) = common::curl(&[&served.url("/stats")]);
    let (_, rest) = body
        .split_once("\"statements_running\":")
        .expect("/stats counts running statements");
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().expect("a count")
}

/// Polls `/stats` until no statement runs; returns how long that took, if within `patience`.
fn until_idle(served: &Served, patience: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < patience {
        if statements_running(served) == 0 {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn a_client_that_disconnects_stops_its_statement_on_either_door() {
    let (_dir, served) = serve(&[]);
    runtime().block_on(async {
        let client = connect(&served).await;
        let running = tokio::spawn(async move { scalar(&client, ENDLESS).await });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(statements_running(&served), 1);
        // Dropping the task drops the client and its connection: the socket closes.
        running.abort();
        let _ = running.await;
    });
    let idle = until_idle(&served, Duration::from_secs(3)).expect("the statement stopped");
    assert!(
        idle < Duration::from_secs(1),
        "stopped {idle:?} after the disconnect"
    );

    // HTTP: a client that gives up on its request.
    let started = Instant::now();
    let (_, status) = common::curl(&[
        "-m",
        "0.5",
        "-X",
        "POST",
        &served.url("/sql"),
        "-d",
        ENDLESS,
    ]);
    assert_eq!(status, 0, "curl gave up");
    let idle = until_idle(&served, Duration::from_secs(3)).expect("the statement stopped");
    assert!(
        idle < Duration::from_secs(1),
        "stopped {idle:?} after the disconnect"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn sigterm_stops_running_statements_and_the_server() {
    let (_dir, mut served) = serve(&[]);
    let config = served.pg_config();
    let runtime = runtime();
    let running = runtime.spawn(async move {
        let (client, connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
        tokio::spawn(connection);
        scalar(&client, ENDLESS).await
    });
    std::thread::sleep(Duration::from_millis(500));
    let exited = served
        .terminate_within(Duration::from_secs(10))
        .expect("the server exits after SIGTERM");
    assert!(
        exited < Duration::from_secs(2),
        "exited {exited:?} after SIGTERM"
    );
    let answer = runtime.block_on(running).unwrap();
    assert!(answer.is_err(), "{answer:?}");
}

#[test]
fn a_panic_inside_a_statement_comes_back_as_an_error_and_the_server_answers_on() {
    let (_dir, served) = serve(&[]);
    runtime().block_on(async {
        let client = connect(&served).await;
        let error = scalar(&client, "SELECT pondra_panic(n_name) FROM nation")
            .await
            .unwrap_err();
        assert!(
            error.contains("internal error: pondra_panic: ALGERIA (XX000)"),
            "{error}"
        );
        assert_eq!(
            scalar(&client, "SELECT count(*) FROM nation")
                .await
                .unwrap(),
            "25"
        );
    });
    let (body, status) = common::curl(&[
        "-X",
        "POST",
        &served.url("/sql"),
        "-d",
        "SELECT pondra_panic(r_name) FROM region",
    ]);
    assert_eq!(status, 400);
    assert!(body.contains("internal error: pondra_panic"), "{body}");
    let (body, status) = common::curl(&["-X", "POST", &served.url("/sql"), "-d", "SELECT 1"]);
    assert_eq!((status, body.contains("[[1]]")), (200, true), "{body}");
}

#[test]
fn garbage_sent_over_http_gets_a_client_error_and_changes_nothing() {
    let (_dir, served) = serve(&[]);
    let address = served.doors["http"].clone();
    let before = common::curl(&[
        "-X",
        "POST",
        &served.url("/sql"),
        "-d",
        "SELECT count(*) FROM region",
    ]);
    let mut arrow = Vec::new();
    {
        use arrow::array::{Int64Array, RecordBatch, StringArray};
        use std::sync::Arc;
        let batch = RecordBatch::try_from_iter([
            ("r_regionkey", Arc::new(Int64Array::from(vec![9])) as _),
            ("r_name", Arc::new(StringArray::from(vec!["X"])) as _),
        ])
        .unwrap();
        let mut writer =
            arrow::ipc::writer::StreamWriter::try_new(&mut arrow, &batch.schema()).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
    }
    let good: Vec<(&str, Vec<u8>)> = vec![
        ("application/vnd.apache.arrow.stream", arrow),
        (
            "application/x-ndjson",
            b"{\"r_regionkey\": 9, \"r_name\": \"X\"}\n".to_vec(),
        ),
        ("text/csv", b"r_regionkey,r_name\n9,X\n".to_vec()),
    ];
    let mut rng: rand::rngs::StdRng = rand::SeedableRng::seed_from_u64(22);
    use rand::Rng;
    for round in 0..300 {
        let (content_type, body) = &good[round % good.len()];
        let mut body = body.clone();
        match round % 4 {
            0 => body.truncate(rng.random_range(0..body.len())),
            1 => {
                let at = rng.random_range(0..body.len());
                body[at] = rng.random();
            }
            2 => {
                body = (0..rng.random_range(1..2048))
                    .map(|_| rng.random())
                    .collect()
            }
            _ => body
                .splice(0..0, (0..8).map(|_| rng.random::<u8>()))
                .for_each(drop),
        }
        let path = match round % 3 {
            0 => "/tables/no_such_table/append",
            _ => "/tables/region/append?producer=p&seq=1",
        };
        let (status, answer) = common::http_post(&address, path, content_type, &body);
        if status == 200 {
            // A mutation may leave a valid body: then it was appended, which the count shows.
            continue;
        }
        assert!(
            (400..500).contains(&status),
            "{status} for round {round}: {answer}"
        );
        let (status, answer) = common::http_post(&address, "/sql", "text/plain", &body);
        assert!(status < 500, "{status} for round {round}: {answer}");
    }
    let after = common::curl(&[
        "-X",
        "POST",
        &served.url("/sql"),
        "-d",
        "SELECT count(*) FROM region",
    ]);
    // Every garbage append was refused; at most the one exactly-once batch got through.
    assert!(
        after == before || after.0.contains("[[6]]"),
        "{before:?} then {after:?}"
    );
}
