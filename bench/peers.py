"""Runs the 22 TPC-H queries on DuckDB or Polars over tpchgen-cli Parquet files, as
`pondra tpch run --parquet` does: one warm-up pass, then the best of N timed passes per query.

Usage: peers.py ENGINE DATA_DIR QUERIES_DIR RUNS
Prints `q<N>\t<seconds>` per query (`q<N>\tn/a` when the engine cannot run it), then
`total\t<seconds>` and `peak_mb\t<MB>` (this process's peak resident memory).
"""

import resource
import sys
import time
from pathlib import Path

engine, data, queries_dir, runs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]
queries = {n: (queries_dir / f"q{n}.sql").read_text() for n in range(1, 23)}

if engine == "duckdb":
    import duckdb

    conn = duckdb.connect()
    for table in TABLES:
        conn.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{data / (table + '.parquet')}')")

    def run(sql):
        conn.execute(sql).fetchall()

elif engine == "polars":
    import polars as pl

    context = pl.SQLContext(
        {table: pl.scan_parquet(data / f"{table}.parquet") for table in TABLES}, eager=False
    )

    def run(sql):
        context.execute(sql).collect()

else:
    sys.exit(f"unknown engine {engine}")

total = 0.0
for n in range(1, 23):
    try:
        run(queries[n])  # warm-up
        best = float("inf")
        for _ in range(runs):
            started = time.perf_counter()
            run(queries[n])
            best = min(best, time.perf_counter() - started)
        total += best
        print(f"q{n}\t{best:.3f}", flush=True)
    except Exception as e:  # an engine that cannot run a query is reported, not fatal
        print(f"q{n}\tn/a", flush=True)
        print(f"q{n}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
print(f"total\t{total:.3f}")
print(f"peak_mb\t{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
