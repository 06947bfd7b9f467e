//! A load test of `pondra serve` over HTTP on loopback: 8 clients mixing appends and small
//! queries. It checks that every acknowledged row is there afterwards, and prints commits per
//! second and latency percentiles. CI runs it for a few seconds; the figures in docs/status.md
//! come from `PONDRA_LOAD_SECS=60 cargo test --release -p pondra-tests --test load -- --nocapture`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::Served;

const CLIENTS: usize = 8;
const ROWS_PER_APPEND: usize = 10;

/// One HTTP/1.1 request on a kept-alive connection; returns the status and body.
fn request(
    stream: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, String) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let socket = stream.get_mut();
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(body.as_bytes()).unwrap();
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
    let seconds: u64 = std::env::var("PONDRA_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
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
