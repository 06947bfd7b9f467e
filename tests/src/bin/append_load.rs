//! A load of exactly-once HTTP appends from many producers, for `bench/http_appends.py
//! --client`: a client whose own cost is small beside the server's, unlike Python's threads.
//!
//! Usage: append-load HOST:PORT TABLE PRODUCERS IN_FLIGHT SECONDS [RATE]. Each producer sends
//! 10-row JSON batches with `producer` and `seq` (and `follows` with more than one in flight,
//! ADR 0078) on IN_FLIGHT keep-alive connections, as fast as they are acknowledged or at RATE
//! batches/s in all (each batch's latency then counts from its time). Prints one line:
//! batches/s, median and p99 latency.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Load {
    address: String,
    table: String,
    producers: usize,
    in_flight: usize,
    seconds: f64,
    rate: Option<f64>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: append-load HOST:PORT TABLE PRODUCERS IN_FLIGHT SECONDS [RATE]");
        std::process::exit(2);
    }
    let number = |i: usize| args[i].parse::<f64>().expect("a number");
    let load = Arc::new(Load {
        address: args[0].clone(),
        table: args[1].clone(),
        producers: number(2) as usize,
        in_flight: number(3) as usize,
        seconds: number(4),
        rate: args.get(5).map(|r| r.parse().expect("a rate")),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let sequences = Arc::new(Mutex::new(vec![0u64; load.producers]));
    let begun = Instant::now();
    let threads: Vec<_> = (0..load.producers)
        .flat_map(|p| std::iter::repeat_n(p, load.in_flight))
        .map(|producer| {
            let (load, stop, sequences) = (load.clone(), stop.clone(), sequences.clone());
            std::thread::spawn(move || send(&load, producer, &stop, &sequences, begun))
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(load.seconds));
    stop.store(true, Ordering::Relaxed);
    let mut latencies: Vec<f64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a sender"))
        .collect();
    let seconds = begun.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "{:.0} batches/s, median {:.1} ms, p99 {:.1} ms",
        latencies.len() as f64 / seconds,
        at(0.5) * 1000.0,
        at(0.99) * 1000.0
    );
}

/// One connection of `producer`: its appends' latencies, in seconds.
fn send(
    load: &Load,
    producer: usize,
    stop: &AtomicBool,
    sequences: &Mutex<Vec<u64>>,
    begun: Instant,
) -> Vec<f64> {
    let stream = TcpStream::connect(&load.address).expect("the server");
    stream.set_nodelay(true).expect("nodelay");
    let mut reader = BufReader::new(stream.try_clone().expect("a reader"));
    let mut writer = stream;
    let interval = load.rate.map(|rate| load.producers as f64 / rate);
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let seq = {
            let mut sequences = sequences.lock().expect("sequences");
            sequences[producer] += 1;
            sequences[producer]
        };
        let due = interval.map(|interval| {
            let offset = producer as f64 * interval / load.producers as f64;
            begun + Duration::from_secs_f64(offset + seq as f64 * interval)
        });
        if let Some(due) = due {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        let row = format!("{{\"producer\":{producer},\"seq\":{seq},\"note\":\"n\"}}\n");
        let body = row.repeat(10);
        let follows = match load.in_flight {
            1 => String::new(),
            _ => format!("&follows={}", seq - 1),
        };
        let request = format!(
            "POST /tables/{}/append?producer=r{}-{producer}&seq={seq}{follows} HTTP/1.1\r\n\
             Host: {}\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n{body}",
            load.table,
            load.in_flight,
            load.address,
            body.len()
        );
        let started = due.unwrap_or_else(Instant::now);
        writer
            .write_all(request.as_bytes())
            .expect("a request sent");
        let status = read_response(&mut reader);
        assert_eq!(status, 200, "append {seq} of producer {producer}");
        latencies.push(started.elapsed().as_secs_f64());
    }
    latencies
}

/// Reads one HTTP response; returns its status.
fn read_response(reader: &mut BufReader<TcpStream>) -> u16 {
    let mut line = String::new();
    reader.read_line(&mut line).expect("a status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("a header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("a body");
    status
}
