"""Rows into Polars from Pondra's Python client (Arrow over HTTP) and from psycopg (the
Postgres wire), side by side on one server.

Usage: python_client.py PONDRA [--rows N] [--runs R]

One `pondra serve` on a new lake holds a table of N rows (10 million by default) and four
columns (BIGINT, BIGINT, DOUBLE, VARCHAR). Each run reads all of it into a Polars DataFrame
both ways, alternating: `pondra.connect(url).sql(...).pl()`, and psycopg's `fetchall()` made a
Polars DataFrame. It prints each one's best rows per second and the ratio Pondra / psycopg.
Also the time from `import pondra` to the first answer of `pondra.connect().sql("select 1")`
on a new temporary lake (the binary named by PONDRA, as the wheel's own would run).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


def serve(binary, lake):
    command = [binary, "--dir", lake, "serve", "--http-port", "0", "--pg-port", "0", "--flight-port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    doors = {}
    for line in process.stdout:
        line = line.strip()
        if " listening on " in line:
            door, _, address = line.partition(" listening on ")
            doors[door] = address
        if line == "ready":
            return process, doors
    raise SystemExit("the server did not start")


def first_answer_seconds(binary):
    """Seconds from `import pondra` to the first answer, in a fresh interpreter."""
    script = (
        "import time; t = time.perf_counter(); import pondra; "
        "con = pondra.connect(); con.sql('select 1').fetchall(); "
        "print(time.perf_counter() - t); con.close()"
    )
    env = dict(os.environ, PONDRA_BINARY=binary)
    python_dir = str(Path(__file__).resolve().parents[1] / "python")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=python_dir, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["PONDRA_BINARY"] = args.pondra
    import pondra

    starts = sorted(first_answer_seconds(args.pondra) for _ in range(3))
    print(f"import pondra to the first answer: {starts[1]:.3f} s (median of 3)")

    with tempfile.TemporaryDirectory() as folder:
        process, doors = serve(args.pondra, os.path.join(folder, "lake"))
        try:
            con = pondra.connect(f"http://{doors['http']}")
            con.sql(
                "CREATE TABLE big AS SELECT i AS a, i * 2 AS b, CAST(i AS DOUBLE) / 3 AS c, "
                f"'row ' || i AS d FROM generate_series(1, {args.rows}) AS g(i)"
            )
            host, port = doors["pg"].rsplit(":", 1)
            pg = psycopg.connect(host=host, port=int(port), user="pondra", dbname="pondra", autocommit=True)
            query = "SELECT a, b, c, d FROM big"
            ours, theirs = [], []
            for _ in range(args.runs):
                started = time.perf_counter()
                frame = con.sql(query).pl()
                ours.append(time.perf_counter() - started)
                assert frame.height == args.rows
                started = time.perf_counter()
                with pg.cursor() as cursor:
                    cursor.execute(query)
                    rows = cursor.fetchall()
                frame = polars.DataFrame(rows, schema=["a", "b", "c", "d"], orient="row")
                theirs.append(time.perf_counter() - started)
                assert frame.height == args.rows
            best_ours, best_theirs = min(ours), min(theirs)
            print(f"pondra client (Arrow over HTTP): {args.rows / best_ours:,.0f} rows/s ({best_ours:.2f} s)")
            print(f"psycopg (Postgres wire):         {args.rows / best_theirs:,.0f} rows/s ({best_theirs:.2f} s)")
            print(f"ratio pondra / psycopg: {best_theirs / best_ours:.1f}")
            con.close()
            pg.close()
        finally:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
