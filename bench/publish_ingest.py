"""Ingestion with and without publishing (ADR 0058), side by side.

Usage: publish_ingest.py PONDRA [--seconds S] [--batch ROWS]

Two servers run side by side, each on a lake of its own, tiering every second
(`--tier-secs 1`): one table plain, the other `WITH (publish = 'delta,iceberg')`, so that its
leader writes a Delta commit and an Iceberg version after each tiering pass. One HTTP client
appends batches of ROWS rows (newline-delimited JSON, prepared once) for S seconds, alternating
between the two servers so that both see the same machine. It prints each side's rows per
second, the ratio published / plain (publishing that does not slow ingestion keeps it near 1),
and how many Delta and Iceberg versions the published table got meanwhile.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request

CREATE = "CREATE TABLE events (id BIGINT, kind VARCHAR, amount DOUBLE, at TIMESTAMP)"


def serve(pondra, lake):
    command = [pondra, "--dir", lake, "serve", "--http-port", "0", "--pg-port", "0"]
    command += ["--flight-port", "0", "--tier-secs", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    doors = {}
    for line in process.stdout:
        line = line.strip()
        if " listening on " in line:
            door, address = line.split(" listening on ")
            doors[door] = address
        if line == "ready":
            break
    return process, doors["http"]


def post(url, body, content_type):
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    with urllib.request.urlopen(request) as answer:
        return answer.read()


def batch(rows):
    lines = (
        json.dumps({"id": i, "kind": f"k{i % 13}", "amount": i * 0.25, "at": "2026-12-01 10:00:00"})
        for i in range(rows)
    )
    return ("\n".join(lines) + "\n").encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()
    body = batch(args.batch)
    with tempfile.TemporaryDirectory() as root:
        servers = {}
        for name, options in (("plain", ""), ("published", " WITH (publish = 'delta,iceberg')")):
            lake = os.path.join(root, name)
            process, http = serve(args.pondra, lake)
            servers[name] = (process, http, lake)
            post(f"http://{http}/sql", (CREATE + options).encode(), "text/plain")
        spent = {name: 0.0 for name in servers}
        rows = {name: 0 for name in servers}
        try:
            deadline = time.perf_counter() + 2 * args.seconds
            while time.perf_counter() < deadline:
                for name, (_, http, _) in servers.items():
                    started = time.perf_counter()
                    post(f"http://{http}/tables/events/append", body, "application/x-ndjson")
                    spent[name] += time.perf_counter() - started
                    rows[name] += args.batch
            rates = {name: rows[name] / spent[name] for name in servers}
            for name, rate in rates.items():
                print(f"{name:10} {rows[name]:>10,} rows  {rate:>12,.0f} rows/s")
            print(f"ratio published / plain: {rates['published'] / rates['plain']:.3f}")
            folder = os.path.join(servers["published"][2], "data", "events")
            delta = [f for f in os.listdir(os.path.join(folder, "_delta_log")) if f.endswith(".json")]
            iceberg = [f for f in os.listdir(os.path.join(folder, "metadata")) if f.endswith(".metadata.json")]
            print(f"published meanwhile: {len(delta)} Delta commits, {len(iceberg)} Iceberg versions")
        finally:
            for process, _, _ in servers.values():
                process.terminate()
                process.wait()


if __name__ == "__main__":
    main()
