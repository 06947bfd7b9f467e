"""Point writes and reads on a keyed table through the Postgres door, small table against large.

Usage: point_writes.py PONDRA [--small ROWS] [--large ROWS] [--ops N] [--views] [--joins
                       [--join-extremes]]

Two `pondra serve` processes run side by side, one on a lake whose keyed table holds --small
rows and one holding --large rows (loaded, then CHECKPOINTed into Parquet). One psycopg client
per server, in autocommit, runs each statement kind --ops times on random keys, alternating
between the two servers so that both see the same machine. It prints each kind's median latency
on both and the ratio large / small: a point write that does not grow with the table keeps the
ratio near 1. Last, it runs EXPLAIN ANALYZE of a point read on the large table and prints the
engine's own time for it.

With --views, both tables carry two materialized views (by a bucket of the key with count,
sum, min and max, and over the whole table), which every point write keeps current (ADR 0049),
and one more kind runs: an UPDATE of the row holding a bucket's least value, which takes the
bucket's new least value from the view's count table (ADR 0052).

With --joins, both lakes also hold a dimension table `labels` of one row per ten rows of `kv`
(`kv.k % groups = labels.g`, so each label row joins ten rows at either size) and a view over
the join grouped by label, with count and sum (and min and max with --join-extremes) (ADR 0054). Every point write to `kv`
keeps it current, and one more kind runs: an UPDATE of one label row, which moves its ten
joined rows from one group of the view to another. A view that costs in proportion to the
change keeps its ratio near 1 although the large lake joins 200 times more rows.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import psycopg

STATEMENTS = {
    "upsert (ON CONFLICT DO UPDATE)": "INSERT INTO kv VALUES (%(k)s, %(v)s, 'u') "
    "ON CONFLICT (k) DO UPDATE SET v = excluded.v, note = excluded.note",
    "upsert (INSERT of a held key)": "INSERT INTO kv VALUES (%(k)s, %(v)s, 'i')",
    "UPDATE by key": "UPDATE kv SET v = v + 1 WHERE k = %(k)s",
    "DELETE by key": "DELETE FROM kv WHERE k = %(k)s",
    "point read": "SELECT v, note FROM kv WHERE k = %(k)s",
}


VIEWS = (
    "CREATE MATERIALIZED VIEW kv_buckets AS SELECT k % 100 AS bucket, count(*) AS n, "
    "sum(v) AS total, min(v) AS lo, max(v) AS hi FROM kv GROUP BY k % 100; "
    "CREATE MATERIALIZED VIEW kv_totals AS SELECT count(*) AS n, sum(v) AS total, "
    "min(v) AS lo, max(v) AS hi FROM kv; "
)


# With --views: an UPDATE that raises a bucket's least value, so that the view looks up that
# bucket's next value in its count table (ADR 0052).
VIEW_STATEMENTS = {
    "UPDATE of a bucket's min": "UPDATE kv SET v = v + 1 WHERE k = %(k)s",
}


# With --joins: an UPDATE of one dimension row, which moves the rows it joins between groups.
JOIN_STATEMENTS = {
    "UPDATE of a joined label row": "UPDATE labels SET label = 'moved ' || (%(v)s %% 50) "
    "WHERE g = %(k)s",
}


def joins(rows, extremes):
    groups = rows // 10
    extra = ", min(kv.v) AS lo, max(kv.v) AS hi" if extremes else ""
    return (
        "CREATE TABLE labels (g BIGINT PRIMARY KEY, label VARCHAR); "
        f"INSERT INTO labels SELECT i, 'label ' || (i % 100) FROM generate_series(0, {groups - 1}) "
        "g(i); CREATE MATERIALIZED VIEW kv_by_label AS SELECT labels.label, count(*) AS n, "
        f"sum(kv.v) AS total{extra} FROM kv JOIN labels "
        f"ON kv.k % {groups} = labels.g GROUP BY labels.label; "
    )


def load(pondra, lake, rows, views, with_joins, extremes):
    sql = (
        "CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT, note VARCHAR); "
        f"INSERT INTO kv SELECT i, i, 'row ' || i FROM generate_series(1, {rows}) g(i); "
        + (VIEWS if views else "")
        + (joins(rows, extremes) if with_joins else "")
        + "CHECKPOINT"
    )
    subprocess.run([pondra, "--dir", lake, "sql", sql], check=True, stdout=subprocess.DEVNULL)


def serve(pondra, lake):
    command = [pondra, "--dir", lake, "serve", "--http-port", "0", "--pg-port", "0"]
    command += ["--flight-port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    address = None
    for line in process.stdout:
        line = line.strip()
        if line.startswith("pg listening on "):
            address = line.removeprefix("pg listening on ")
        if line == "ready":
            break
    host, port = address.rsplit(":", 1)
    return process, f"host={host} port={port} user=bench dbname=lake"


def timed(connection, sql, params):
    started = time.perf_counter()
    cursor = connection.execute(sql, params)
    if cursor.description is not None:
        cursor.fetchall()
    return (time.perf_counter() - started) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--views", action="store_true")
    parser.add_argument("--joins", action="store_true")
    parser.add_argument("--join-extremes", action="store_true")
    args = parser.parse_args()
    random.seed(7)
    with tempfile.TemporaryDirectory() as root:
        sizes = {"small": args.small, "large": args.large}
        servers, connections = {}, {}
        for name, rows in sizes.items():
            lake = os.path.join(root, name)
            load(args.pondra, lake, rows, args.views, args.joins, args.join_extremes)
            servers[name], dsn = serve(args.pondra, lake)
            connections[name] = psycopg.connect(dsn, autocommit=True)
        try:
            print(f"{'statement':32} {'small ms':>9} {'large ms':>9} {'ratio':>6}")
            # The bucket-min UPDATE first, while keys 1 to 100 hold their buckets' minima.
            statements = {**(VIEW_STATEMENTS if args.views else {}), **STATEMENTS}
            if args.joins:
                statements = {**JOIN_STATEMENTS, **statements}
            for kind, sql in statements.items():
                samples = {name: [] for name in sizes}
                # The rows holding each bucket's least value are keys 1 to 100.
                most = 100 if kind in VIEW_STATEMENTS else None
                for op in range(args.ops + 20):
                    for name, rows in sizes.items():
                        if kind in JOIN_STATEMENTS:
                            params = {"k": random.randint(0, rows // 10 - 1), "v": op}
                        else:
                            params = {"k": random.randint(1, most or rows), "v": op}
                        elapsed = timed(connections[name], sql, params)
                        if op >= 20:
                            samples[name].append(elapsed)
                small = statistics.median(samples["small"])
                large = statistics.median(samples["large"])
                print(f"{kind:32} {small:9.3f} {large:9.3f} {large / small:6.2f}")
            key = random.randint(1, args.large)
            plan = connections["large"].execute(
                f"EXPLAIN ANALYZE SELECT v, note FROM kv WHERE k = {key}"
            ).fetchall()
            total = next(row[0] for row in plan if row[0].startswith("Total:"))
            print(f"point read on {args.large} rows, engine time: {total}")
        finally:
            for connection in connections.values():
                connection.close()
            for process in servers.values():
                process.terminate()
                process.wait()


if __name__ == "__main__":
    sys.exit(main())
