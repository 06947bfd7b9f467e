"""Python functions (ADR 0081) side by side with DuckDB's: the same seeded doubles (10 M by
default) in a Pondra table and in a DuckDB table, and `SELECT sum(f(x))` where f is

- vectorized: `pc.add(pc.multiply(x, 2.0), 1.0)` on pyarrow arrays, in Pondra a function with
  `OPTIONS (vectorized = true)` and in DuckDB `create_function(..., type='arrow')`;
- scalar: `x * 2.0 + 1.0` on Python floats, row by row, in Pondra a plain `LANGUAGE python`
  function and in DuckDB `create_function(..., type='native')`, over the first tenth of the
  rows (a Python call per row is slow in both).

Pondra's queries run twice: over the table's rows in the log tail, as written, then after a
CHECKPOINT over its Parquet file, as tiering leaves it. Each query runs once to warm up (Pondra starts its workers, DuckDB its interpreter state),
then the best of RUNS is kept. Pondra runs as `pondra serve` on a fresh lake, asked over its
Postgres port; its workers use this script's Python (PONDRA_PYTHON). The figure is Pondra's
time over DuckDB's: below 1 means Pondra is faster.

Usage: bench/python_functions.py PONDRA_BINARY [--rows N] [--runs N]. Needs duckdb, pyarrow,
numpy and psycopg in the Python that runs it.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import duckdb
import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

VECTORIZED_BODY = "import pyarrow.compute as pc\nreturn pc.add(pc.multiply(x, 2.0), 1.0)"
SCALAR_BODY = "return x * 2.0 + 1.0"


def serve(binary, folder):
    log_path = os.path.join(folder, "pondra.out")
    log = open(log_path, "w+")
    env = dict(os.environ, PONDRA_PYTHON=sys.executable)
    process = subprocess.Popen([binary, "--dir", os.path.join(folder, "lake"), "serve", "--http-port", "0",
                                "--pg-port", "0", "--flight-port", "0"], stdout=log, stderr=subprocess.STDOUT,
                               env=env)
    started = time.time()
    while "ready" not in open(log_path).read():
        assert process.poll() is None and time.time() - started < 60, "pondra serve did not start"
        time.sleep(0.1)
    pg = next(line.split(" listening on ")[1] for line in open(log_path).read().splitlines()
              if line.startswith("pg listening on "))
    host, port = pg.rsplit(":", 1)
    return process, psycopg.connect(host=host, port=int(port), user="pondra", dbname="pondra", autocommit=True)


def best(runs, query):
    query()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = query()
        times.append(time.perf_counter() - started)
    return min(times), answer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="python-functions-")
    values = np.random.default_rng(7).random(args.rows)
    data = os.path.join(folder, "values.parquet")
    pq.write_table(pa.table({"x": values, "n": np.arange(args.rows)}), data)
    scalar_rows = args.rows // 10

    process, pondra = serve(args.binary, folder)
    try:
        pondra.execute(f"CREATE TABLE t AS SELECT x, n FROM read_parquet('{data}')")
        pondra.execute(f"CREATE FUNCTION fv(x DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$\n{VECTORIZED_BODY}\n$$ "
                       "OPTIONS (vectorized = true)")
        pondra.execute(f"CREATE FUNCTION fs(x DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$\n{SCALAR_BODY}\n$$")
        ours = {}
        for state in ["log tail", "parquet"]:
            if state == "parquet":
                pondra.execute("CHECKPOINT")
            ours[state] = (
                best(args.runs, lambda: pondra.execute("SELECT sum(fv(x)) FROM t").fetchone()[0]),
                best(args.runs, lambda: pondra.execute(
                    f"SELECT sum(fs(x)) FROM t WHERE n < {scalar_rows}").fetchone()[0]),
            )
    finally:
        process.terminate()
        process.wait()

    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE t AS SELECT x, n FROM read_parquet('{data}')")
    double = duckdb.sqltype("DOUBLE")
    duck.create_function("fv", lambda x: pc.add(pc.multiply(x, 2.0), 1.0), [double], double, type="arrow")
    duck.create_function("fs", lambda x: x * 2.0 + 1.0, [double], double, type="native")
    duck_vectorized = best(args.runs, lambda: duck.execute("SELECT sum(fv(x)) FROM t").fetchone()[0])
    duck_scalar = best(args.runs, lambda: duck.execute(
        f"SELECT sum(fs(x)) FROM t WHERE n < {scalar_rows}").fetchone()[0])

    for state, (vectorized, scalar) in ours.items():
        for (name, rows, (our_time, our_sum), (their_time, their_sum)) in [
            ("vectorized (arrow)", args.rows, vectorized, duck_vectorized),
            ("scalar (per row)", scalar_rows, scalar, duck_scalar),
        ]:
            assert abs(our_sum - their_sum) <= 1e-6 * abs(their_sum), (name, our_sum, their_sum)
            print(f"{name:<20} {rows:>11,} rows  pondra ({state:<8}) {our_time:7.3f} s  duckdb {their_time:7.3f} s  "
                  f"ratio {our_time / their_time:.2f}")


if __name__ == "__main__":
    main()
