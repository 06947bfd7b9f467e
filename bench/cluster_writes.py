"""Writes on one node against an earlier build, and through a follower against the leader.

Usage: cluster_writes.py PONDRA [--before PONDRA] [--ops N]

With --before, two single servers run side by side, this build and the earlier one, each on a
lake of its own. One psycopg client each, in autocommit, runs single-row INSERTs --ops times,
alternating between the two so that both see the same machine, and one HTTP client each
appends batches of 1,000 rows; it prints each kind's median latency on both and the ratio
this / before (a single node that is no slower at writing keeps it near 1).

Then a leader and a follower share one lake (ADR 0053): INSERTs through each, alternating,
with the ratio follower / leader (a write through a follower pays one HTTP round trip to the
leader and the wait for the leader's stream); and how long a row written through the leader
takes to be read on the follower (its median and its worst).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import psycopg

CREATE = "CREATE TABLE events (id BIGINT, kind VARCHAR, at TIMESTAMP)"
INSERT = "INSERT INTO events VALUES (%(id)s, 'click', TIMESTAMP '2026-12-01 10:00:00')"


def serve(pondra, lake, extra=()):
    command = [pondra, "--dir", lake, "serve", "--http-port", "0", "--pg-port", "0"]
    command += ["--flight-port", "0", *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    doors = {}
    for line in process.stdout:
        line = line.strip()
        if " listening on " in line:
            door, address = line.split(" listening on ")
            doors[door] = address
        if line == "ready":
            break
    host, port = doors["pg"].rsplit(":", 1)
    dsn = f"host={host} port={port} user=bench dbname=lake"
    return process, dsn, doors["http"]


def timed(connection, sql, params=None):
    started = time.perf_counter()
    cursor = connection.execute(sql, params)
    if cursor.description is not None:
        cursor.fetchall()
    return (time.perf_counter() - started) * 1e3


def append(http, rows, start):
    body = "".join(
        json.dumps({"id": start + i, "kind": "view", "at": "2026-12-01 10:00:00"}) + "\n"
        for i in range(rows)
    ).encode()
    request = urllib.request.Request(
        f"http://{http}/tables/events/append",
        data=body,
        headers={"Content-Type": "application/x-ndjson"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request) as answer:
        answer.read()
    return (time.perf_counter() - started) * 1e3


def line(kind, first, second, names):
    a, b = statistics.median(first), statistics.median(second)
    print(f"{kind:34} {names[0]} {a:8.3f} ms  {names[1]} {b:8.3f} ms  ratio {b / a:5.2f}")


def against_before(pondra, before, ops, root):
    servers, connections, doors = {}, {}, {}
    for name, binary in (("before", before), ("this", pondra)):
        servers[name], dsn, doors[name] = serve(binary, os.path.join(root, name))
        connections[name] = psycopg.connect(dsn, autocommit=True)
        connections[name].execute(CREATE)
    try:
        inserts = {name: [] for name in servers}
        appends = {name: [] for name in servers}
        for op in range(ops + 20):
            for name in servers:
                elapsed = timed(connections[name], INSERT, {"id": op})
                if op >= 20:
                    inserts[name].append(elapsed)
        for op in range(ops // 4 + 5):
            for name in servers:
                elapsed = append(doors[name], 1_000, op * 1_000)
                if op >= 5:
                    appends[name].append(elapsed)
        names = ("before", "this")
        line("single-row INSERT (pg)", inserts["before"], inserts["this"], names)
        line("append of 1,000 rows (HTTP)", appends["before"], appends["this"], names)
    finally:
        for connection in connections.values():
            connection.close()
        for process in servers.values():
            process.terminate()
            process.wait()


def leader_and_follower(pondra, ops, root):
    lake = os.path.join(root, "shared")
    leader, leader_dsn, _ = serve(pondra, lake)
    follower, follower_dsn, _ = serve(pondra, lake)
    to_leader = psycopg.connect(leader_dsn, autocommit=True)
    to_follower = psycopg.connect(follower_dsn, autocommit=True)
    try:
        to_leader.execute(CREATE)
        samples = {"leader": [], "follower": []}
        for op in range(ops + 20):
            for name, connection in (("leader", to_leader), ("follower", to_follower)):
                elapsed = timed(connection, INSERT, {"id": op})
                if op >= 20:
                    samples[name].append(elapsed)
        line("INSERT through", samples["leader"], samples["follower"], ("leader", "follower"))
        seen = []
        for op in range(ops):
            marker = 10_000_000 + op
            to_leader.execute(INSERT, {"id": marker})
            started = time.perf_counter()
            while to_follower.execute(
                "SELECT count(*) FROM events WHERE id = %(id)s", {"id": marker}
            ).fetchone()[0] == 0:
                pass
            seen.append((time.perf_counter() - started) * 1e3)
        print(
            f"a row written on the leader, read on the follower after: median "
            f"{statistics.median(seen):.1f} ms, worst {max(seen):.1f} ms ({ops} rows)"
        )
    finally:
        to_leader.close()
        to_follower.close()
        for process in (follower, leader):
            process.terminate()
            process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--before")
    parser.add_argument("--ops", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        if args.before:
            against_before(args.pondra, args.before, args.ops, root)
        leader_and_follower(args.pondra, args.ops, root)


if __name__ == "__main__":
    sys.exit(main())
