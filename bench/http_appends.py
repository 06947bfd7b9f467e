"""Group commit under many producers: PRODUCERS threads append small batches (10 JSON rows)
over HTTP to one `pondra serve` on a folder, each exactly once (`producer` and `seq`), one
batch in flight per producer, for SECONDS; prints acknowledged batches/s and the append
latency's median and p99.

Usage: bench/http_appends.py PONDRA [--producers 32] [--seconds 10]. Run it with any Python 3.
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--producers", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
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
        latencies, stop, lock = [], threading.Event(), threading.Lock()

        def produce(producer):
            connection = http.client.HTTPConnection(host, int(port))
            for seq in range(1, 1 << 62):
                if stop.is_set():
                    return
                rows = "".join(json.dumps({"producer": producer, "seq": seq, "note": "n"}) + "\n"
                               for _ in range(10))
                started = time.perf_counter()
                connection.request("POST", f"/tables/small/append?producer=p{producer}&seq={seq}",
                                   rows, {"Content-Type": "application/x-ndjson"})
                answer = connection.getresponse()
                answer.read()
                assert answer.status == 200, answer.status
                with lock:
                    latencies.append(time.perf_counter() - started)

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(args.producers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        stop.set()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        latencies.sort()
        print(f"{args.producers} producers, one batch of 10 rows in flight each, {seconds:.1f} s: "
              f"{len(latencies) / seconds:,.0f} batches/s, median "
              f"{latencies[len(latencies) // 2] * 1000:.1f} ms, "
              f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
