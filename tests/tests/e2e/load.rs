//! Load tests of `pondra serve` over HTTP on loopback, each checking that every acknowledged
//! row is there afterwards, after a restart too, and printing throughput and latency:
//!
//! - 8 clients mixing appends and small queries (commits per second);
//! - 32 producers posting 100-row Arrow batches with sequence numbers, which group commit (ADR 0046)
//!   gathers into shared catalog commits (batches per second; the target is 5,000 on a folder
//!   in a release build), on a folder and on a bucket of moto's S3 server.
//!
//! CI runs each for a few seconds; set `PONDRA_LOAD_SECS` for longer runs. The figures in
//! docs/status.md come from `PONDRA_LOAD_SECS=60 cargo test --release -p pondra-tests --test
//! load -- --nocapture --test-threads 1`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::writer::StreamWriter;
use arrow::record_batch::RecordBatch;
use common::Served;
use common::s3::S3;

const CLIENTS: usize = 8;
const ROWS_PER_APPEND: usize = 10;

const PRODUCERS: usize = 32;
const ROWS_PER_BATCH: usize = 100;
const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";
/// Every this-many-th batch of a producer is sent again, as a client retrying after a lost
/// answer would; the server must drop it.
const RETRY_EVERY: u64 = 50;

/// The tests take turns: each measures the machine alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long a test runs: `PONDRA_LOAD_SECS`, or `default` seconds.
fn load_seconds(default: u64) -> u64 {
    std::env::var("PONDRA_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One HTTP/1.1 request on a kept-alive connection; returns the status and body.
fn request(
    stream: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    content_type: &str,
    body: impl AsRef<[u8]>,
) -> (u16, String) {
    let body = body.as_ref();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // One write: a body sent after its head would wait for the head's acknowledgement, which
    // the server delays (Nagle's algorithm against delayed ACKs, 40 ms a request).
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    stream.get_mut().write_all(&message).unwrap();
    let mut status_line = String::new();
    stream.read_line(&mut status_line).unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1e3
}

#[test]
fn concurrent_appends_and_queries_lose_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let seconds = load_seconds(5);
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &["--tier-secs", "2"]);
    let address = served.doors["http"].clone();
    let connect = || BufReader::new(TcpStream::connect(&address).unwrap());
    let mut setup = connect();
    let (status, body) = request(
        &mut setup,
        "POST",
        "/sql",
        "text/plain",
        "CREATE TABLE events (client INT, seq BIGINT, value DOUBLE)",
    );
    assert_eq!(status, 200, "{body}");

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let mut stream = connect();
            std::thread::spawn(move || {
                let mut appends = Vec::new();
                let mut queries = Vec::new();
                let mut acknowledged = 0u64;
                let mut seq = 0u64;
                while Instant::now() < deadline {
                    // Three appends for every query.
                    if seq % 4 != 3 {
                        let rows: String = (0..ROWS_PER_APPEND)
                            .map(|i| {
                                format!(
                                    "{{\"client\":{client},\"seq\":{seq},\"value\":{}}}\n",
                                    i as f64 * 0.5
                                )
                            })
                            .collect();
                        let path = format!("/tables/events/append?producer=c{client}&seq={seq}");
                        let sent = Instant::now();
                        let (status, body) =
                            request(&mut stream, "POST", &path, "application/x-ndjson", &rows);
                        appends.push(sent.elapsed());
                        assert_eq!(status, 200, "{body}");
                        assert!(body.contains("\"duplicate\":false"), "{body}");
                        acknowledged += ROWS_PER_APPEND as u64;
                    } else {
                        let sql = format!(
                            "SELECT count(*), max(seq) FROM events WHERE client = {client}"
                        );
                        let sent = Instant::now();
                        let (status, body) =
                            request(&mut stream, "POST", "/sql", "text/plain", &sql);
                        queries.push(sent.elapsed());
                        assert_eq!(status, 200, "{body}");
                    }
                    seq += 1;
                }
                (acknowledged, appends, queries)
            })
        })
        .collect();
    let mut appends = Vec::new();
    let mut queries = Vec::new();
    let mut acknowledged = Vec::new();
    for worker in workers {
        let (rows, a, q) = worker.join().unwrap();
        acknowledged.push(rows);
        appends.extend(a);
        queries.extend(q);
    }
    let elapsed = started.elapsed().as_secs_f64();
    appends.sort();
    queries.sort();
    println!(
        "load: {CLIENTS} clients, {elapsed:.1} s: {} appends ({:.0} commits/s, {} rows each), {} queries; \
         append p50 {:.2} ms p99 {:.2} ms; query p50 {:.2} ms p99 {:.2} ms",
        appends.len(),
        appends.len() as f64 / elapsed,
        ROWS_PER_APPEND,
        queries.len(),
        percentile(&appends, 0.5),
        percentile(&appends, 0.99),
        percentile(&queries, 0.5),
        percentile(&queries, 0.99),
    );

    // Every acknowledged row is there, after a restart too.
    let check = |served: &Served| {
        let mut stream = BufReader::new(TcpStream::connect(&served.doors["http"]).unwrap());
        for (client, rows) in acknowledged.iter().enumerate() {
            let sql = format!("SELECT count(*) FROM events WHERE client = {client}");
            let (_, body) = request(&mut stream, "POST", "/sql", "text/plain", &sql);
            assert!(
                body.ends_with(&format!("\"rows\":[[{rows}]]}}")),
                "client {client}: {body}"
            );
        }
    };
    check(&served);
    assert!(served.stop().success());
    let served = Served::start(dir.path(), &[]);
    check(&served);
}

/// `ROWS_PER_BATCH` rows of `producer`'s batch `seq`, as an Arrow IPC stream: what a
/// producer of batches sends.
fn batch_rows(producer: usize, seq: u64) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("producer", DataType::Int32, true),
        Field::new("seq", DataType::Int64, true),
        Field::new("value", DataType::Float64, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![producer as i32; ROWS_PER_BATCH])),
        Arc::new(Int64Array::from(vec![seq as i64; ROWS_PER_BATCH])),
        Arc::new(Float64Array::from_iter_values(
            (0..ROWS_PER_BATCH).map(|i| i as f64 + 0.25),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let mut writer = StreamWriter::try_new(Vec::new(), &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.into_inner().unwrap()
}

/// What one producer saw: the batches acknowledged (numbered 1 up) and each one's latency.
struct Produced {
    batches: u64,
    latencies: Vec<Duration>,
}

/// Posts `producer`'s batches, numbered from 1, until `deadline`, each once it has the answer
/// to the one before; every `RETRY_EVERY`th is posted twice, and the second must be dropped.
fn produce(address: &str, producer: usize, deadline: Instant) -> Produced {
    let mut stream = BufReader::new(TcpStream::connect(address).unwrap());
    let mut latencies = Vec::new();
    let mut seq = 0;
    while Instant::now() < deadline {
        seq += 1;
        let rows = batch_rows(producer, seq);
        let path = format!("/tables/readings/append?producer=p{producer}&seq={seq}");
        let sent = Instant::now();
        let (status, body) = request(&mut stream, "POST", &path, ARROW_STREAM, &rows);
        latencies.push(sent.elapsed());
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"duplicate\":false"), "{body}");
        if seq % RETRY_EVERY == 0 {
            let (status, body) = request(&mut stream, "POST", &path, ARROW_STREAM, &rows);
            assert_eq!(status, 200, "{body}");
            assert!(
                body.contains("\"duplicate\":true"),
                "a retry was appended: {body}"
            );
        }
    }
    Produced {
        batches: seq,
        latencies,
    }
}

#[test]
fn producers_posting_batches_in_parallel_lose_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    producers_lose_nothing("a folder", || Served::start(&lake, &[]));
}

/// The same producers on a lake in a bucket of moto's S3 server: every commit is a WAL object
/// put over HTTP, so the figures say what group commit gathers when a flush is slow.
#[test]
fn producers_posting_batches_to_a_bucket_lose_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s3 = S3::start();
    let lake = format!("s3://{}/lake", s3.bucket("load"));
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path().to_str().unwrap();
    producers_lose_nothing("moto's S3 server", || {
        Served::start_at(&lake, &s3.env(), &["--cache-dir", cache])
    });
}

/// Runs `PRODUCERS` producers against the server `start` makes, prints the figures, and checks
/// that every acknowledged batch is there once, before and after a restart.
fn producers_lose_nothing(place: &str, start: impl Fn() -> Served) {
    let seconds = load_seconds(3);
    let served = start();
    let address = served.doors["http"].clone();
    let mut setup = BufReader::new(TcpStream::connect(&address).unwrap());
    let create = "CREATE TABLE readings (producer INT, seq BIGINT, value DOUBLE)";
    let (status, body) = request(&mut setup, "POST", "/sql", "text/plain", create);
    assert_eq!(status, 200, "{body}");

    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|producer| {
            let address = address.clone();
            std::thread::spawn(move || produce(&address, producer, deadline))
        })
        .collect();
    let produced: Vec<Produced> = producers.into_iter().map(|p| p.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies: Vec<Duration> = produced.iter().flat_map(|p| p.latencies.clone()).collect();
    latencies.sort();
    let batches = latencies.len();
    let (_, stats) = request(&mut setup, "GET", "/stats", "text/plain", "");
    let commits: u64 = stats
        .split_once("\"commits\":")
        .and_then(|(_, rest)| rest.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no commit count in {stats}"));
    println!(
        "group commit on {place}: {PRODUCERS} producers, {elapsed:.1} s: {batches} batches of \
         {ROWS_PER_BATCH} rows ({:.0} batches/s, {:.0} rows/s) in {commits} commits \
         ({:.1} batches each); latency p50 {:.2} ms p99 {:.2} ms",
        batches as f64 / elapsed,
        (batches * ROWS_PER_BATCH) as f64 / elapsed,
        batches as f64 / commits as f64,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    );

    // Each producer's acknowledged batches are there once each, after a restart too.
    let check = |served: &Served| {
        let mut stream = BufReader::new(TcpStream::connect(&served.doors["http"]).unwrap());
        for (producer, produced) in produced.iter().enumerate() {
            let sql = format!(
                "SELECT count(*), count(DISTINCT seq), max(seq) FROM readings WHERE producer = {producer}"
            );
            let (_, body) = request(&mut stream, "POST", "/sql", "text/plain", &sql);
            let batches = produced.batches;
            let rows = batches * ROWS_PER_BATCH as u64;
            assert!(
                body.ends_with(&format!("\"rows\":[[{rows},{batches},{batches}]]}}")),
                "producer {producer}: {body}"
            );
        }
    };
    check(&served);
    assert!(served.stop().success());
    let served = start();
    check(&served);
}
