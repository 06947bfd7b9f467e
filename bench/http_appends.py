"""Group commit under many producers: PRODUCERS producers append small batches (10 JSON rows)
over HTTP to one `pondra serve` on a folder, each exactly once (`producer` and `seq`), for
SECONDS: first with one batch in flight per producer, then with IN_FLIGHT (each append names
the sequence it follows, `follows`, ADR 0078, and is sent on one of the producer's
connections without waiting for the one before), and then so at RATE batches/s in all, each
sent at its time; prints acknowledged batches/s and the append latency's median and p99 of
each.

Usage: bench/http_appends.py PONDRA [--producers 32] [--seconds 10] [--in-flight 4]
[--rate 5000] [--client target/release/append-load]. Run it with any Python 3. With
`--client`, a Rust client sends the load: Python's threads cost the shared cores more than
the server does (`cargo build --release -p pondra-tests --bin append-load`).
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time


def run(host, port, producers, in_flight, seconds, rate=None):
    """PRODUCERS producers appending for SECONDS with IN_FLIGHT batches in flight each: as fast
    as they are acknowledged, or RATE batches/s in all, each sent at its time (its latency
    then counts from that time, so a late send counts its wait)."""
    latencies, stop, lock = [], threading.Event(), threading.Lock()
    sequences = [0] * producers
    interval = rate and producers / rate  # between one producer's sends
    begun = time.perf_counter()

    def send(producer):
        connection = http.client.HTTPConnection(host, int(port))
        while not stop.is_set():
            with lock:
                sequences[producer] += 1
                seq = sequences[producer]
            due = interval and begun + producer * interval / producers + seq * interval
            if due and due > time.perf_counter():
                time.sleep(due - time.perf_counter())
            rows = "".join(json.dumps({"producer": producer, "seq": seq, "note": "n"}) + "\n"
                           for _ in range(10))
            line = f"&follows={seq - 1}" if in_flight > 1 else ""
            started = due or time.perf_counter()
            connection.request("POST", f"/tables/small/append?producer=p{in_flight}-{producer}"
                               f"&seq={seq}{line}", rows, {"Content-Type": "application/x-ndjson"})
            answer = connection.getresponse()
            body = answer.read()
            assert answer.status == 200, (answer.status, body)
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=send, args=(p,)) for p in range(producers)
               for _ in range(in_flight)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    latencies.sort()
    paced = f" at {rate:,}/s" if rate else ""
    print(f"{producers} producers, {in_flight} batch(es) of 10 rows in flight each{paced}, {seconds:.1f} s: "
          f"{len(latencies) / seconds:,.0f} batches/s, median "
          f"{latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--producers", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--client", help="the append-load binary (tests/src/bin/append_load.rs) "
                        "to send the load instead of Python's threads")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="http-appends-")
    out = open(os.path.join(folder, "serve.out"), "w+")
    server = subprocess.Popen([args.pondra, "--dir", os.path.join(folder, "lake"), "serve",
                               "--http-port", "0", "--pg-port", "0", "--flight-port", "0"],
                              stdout=out, stderr=subprocess.DEVNULL)
    try:
        while "ready" not in open(out.name).read():
            assert server.poll() is None, "pondra serve stopped"
            time.sleep(0.1)
        address = next(line.split(" listening on ")[1] for line in open(out.name).read().splitlines()
                       if line.startswith("http listening on "))
        host, port = address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port))
        connection.request("POST", "/sql", "CREATE TABLE small (producer INT, seq BIGINT, note VARCHAR)")
        assert connection.getresponse().status == 200
        runs = [(1, None), (args.in_flight, None), (args.in_flight, args.rate)]
        for in_flight, rate in runs:
            if args.client:
                command = [args.client, f"{host}:{port}", "small", str(args.producers), str(in_flight),
                           str(args.seconds)] + ([str(rate)] if rate else [])
                answer = subprocess.run(command, capture_output=True, text=True, check=True).stdout
                paced = f" at {rate:,}/s" if rate else ""
                print(f"{args.producers} producers, {in_flight} batch(es) of 10 rows in flight each"
                      f"{paced} (append-load): {answer.strip()}")
            else:
                run(host, port, args.producers, in_flight, args.seconds, rate)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
