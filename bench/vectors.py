"""Vector search (ADR 0082) side by side with pgvector's HNSW on PostgreSQL: the same seeded
vectors (1 M of 128 dimensions by default, in clusters around 1,000 centres, each cluster
spread along 16 directions of its own) in a Pondra table and
in a PostgreSQL table, an HNSW index on each (m = 16, ef_construction = 64, squared
Euclidean, pgvector's defaults), then the 10 nearest rows to each of QUERIES vectors.

Printed: each side's index build time; for each `hnsw.ef_search` of EF_SEARCH (both sides
take pgvector's setting) the queries per second through the index and recall@10 against the
exact answer (computed here with numpy); Pondra's exact-scan queries per second (the same query
without the index); and the ratios, queries/s compared at the same recall: each side's fastest
setting whose recall reaches `--recall`. Pondra runs as `pondra serve` on a fresh
lake and PostgreSQL on a fresh cluster, both asked over the Postgres protocol by psycopg, one
query at a time.

PostgreSQL with pgvector is found through `--pg-bin` (the folder of `initdb`, `pg_ctl`, for
example /usr/lib/postgresql/15/bin) with pgvector installed into it: on Debian 12,
`apt install postgresql-15 postgresql-server-dev-15`, then pgvector's source (0.8) built with
`make && make install`. Without `--pg-bin` only Pondra is measured. PostgreSQL refuses to run
as root: run the script as another user, or give `--pg-user` to run the server as that user.

Usage: bench/vectors.py PONDRA_BINARY [--rows N] [--queries N] [--pg-bin DIR] [--pg-user U].
Needs numpy, pyarrow and psycopg in the Python that runs it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq

DIMENSIONS = 128
K = 10
EF_SEARCH = (40, 64, 100, 200, 400)


def vectors(rows, seed):
    """Rows around 1,000 centres, each varying along 16 directions of its own (as embeddings
    of one topic do) plus a little noise in every dimension. The centres and directions come
    from seed 7, the rows from `seed`."""
    shape = np.random.default_rng(7)
    centres = shape.normal(0, 1, (1000, DIMENSIONS)).astype(np.float32)
    directions = shape.normal(0, 0.25, (1000, 16, DIMENSIONS)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((rows, DIMENSIONS), dtype=np.float32)
    for start in range(0, rows, 100_000):
        picks = rng.integers(0, len(centres), min(100_000, rows - start))
        latent = rng.normal(0, 1, (len(picks), 1, 16)).astype(np.float32)
        spread = (latent @ directions[picks])[:, 0, :]
        noise = rng.normal(0, 0.02, (len(picks), DIMENSIONS)).astype(np.float32)
        out[start:start + len(picks)] = centres[picks] + spread + noise
    return out


def literal(vector):
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def exact_answers(data, queries):
    answers = []
    norms = (data * data).sum(axis=1)
    for query in queries:
        distances = norms - 2 * data @ query
        answers.append(set(np.argpartition(distances, K)[:K].tolist()))
    return answers


def run_queries(connection, sql, queries):
    found = []
    started = time.perf_counter()
    for query in queries:
        rows = connection.execute(sql.format(literal(query))).fetchall()
        found.append({row[0] for row in rows})
    return len(queries) / (time.perf_counter() - started), found


def recall(found, truth):
    return sum(len(f & t) for f, t in zip(found, truth)) / (K * len(truth))


def sweep(connection, sql, queries, truth):
    """Queries/s and recall@10 at each `hnsw.ef_search` of EF_SEARCH, after a warm-up."""
    run_queries(connection, sql, queries[:10])
    points = {}
    for ef in EF_SEARCH:
        connection.execute(f"SET hnsw.ef_search = {ef}")
        qps, found = run_queries(connection, sql, queries)
        points[ef] = (qps, recall(found, truth))
    return points


def at_recall(points, target):
    """The fastest (queries/s, recall, ef_search) whose recall reaches `target`, if any."""
    reaching = [(qps, found, ef) for ef, (qps, found) in points.items() if found >= target]
    return max(reaching, default=None)


def report(name, result):
    print(f"{name}: build {result['build_s']:.1f} s")
    for ef, (qps, found) in result["points"].items():
        print(f"  ef_search {ef:4}: {qps:6.0f} queries/s, recall@10 {found:.3f}")


def serve_pondra(binary, folder):
    log_path = os.path.join(folder, "pondra.out")
    log = open(log_path, "w+")
    process = subprocess.Popen([binary, "--dir", os.path.join(folder, "lake"), "serve", "--http-port", "0",
                                "--pg-port", "0", "--flight-port", "0"], stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    while "ready" not in open(log_path).read():
        assert process.poll() is None and time.time() - started < 60, "pondra serve did not start"
        time.sleep(0.1)
    pg = next(line.split(" listening on ")[1] for line in open(log_path).read().splitlines()
              if line.startswith("pg listening on "))
    host, port = pg.rsplit(":", 1)
    connection = psycopg.connect(host=host, port=int(port), user="pondra", dbname="pondra", autocommit=True)
    return process, connection


def measure_pondra(binary, folder, data_path, queries, truth):
    process, pondra = serve_pondra(binary, folder)
    try:
        pondra.execute(f"CREATE TABLE items (id BIGINT, embedding FLOAT[{DIMENSIONS}])")
        pondra.execute(f"INSERT INTO items SELECT id, embedding FROM read_parquet('{data_path}')")
        pondra.execute("CHECKPOINT")
        sql = "SELECT id FROM items ORDER BY embedding <-> '{}' LIMIT 10"
        exact_qps, _ = run_queries(pondra, sql, queries[: max(3, len(queries) // 50)])
        started = time.perf_counter()
        pondra.execute("CREATE INDEX items_hnsw ON items USING HNSW (embedding) "
                       "WITH (metric = 'l2sq', m = 16, ef_construction = 64)")
        build = time.perf_counter() - started
        return {"build_s": build, "points": sweep(pondra, sql, queries, truth), "exact_qps": exact_qps}
    finally:
        process.terminate()
        process.wait()


def as_user(user, command):
    return command if user is None else ["runuser", "-u", user, "--"] + command


def measure_pgvector(pg_bin, user, folder, data, queries, truth):
    cluster = os.path.join(folder, "pg")
    os.makedirs(cluster)
    if user is not None:
        shutil.chown(folder, user)
        shutil.chown(cluster, user)
    port = 55432
    subprocess.run(as_user(user, [os.path.join(pg_bin, "initdb"), "-D", cluster, "-A", "trust", "-U", "bench"]),
                   check=True, stdout=subprocess.DEVNULL)
    options = f"-p {port} -k {cluster} -c maintenance_work_mem=2GB -c shared_buffers=2GB"
    subprocess.run(as_user(user, [os.path.join(pg_bin, "pg_ctl"), "-D", cluster, "-o", options, "-w",
                                  "-l", os.path.join(cluster, "log"), "start"]), check=True,
                   stdout=subprocess.DEVNULL)
    try:
        pg = psycopg.connect(host=cluster, port=port, user="bench", dbname="postgres", autocommit=True)
        pg.execute("CREATE EXTENSION vector")
        pg.execute(f"CREATE TABLE items (id bigint, embedding vector({DIMENSIONS}))")
        with pg.cursor().copy("COPY items (id, embedding) FROM STDIN") as copy:
            for row, vector in enumerate(data):
                copy.write_row((row, literal(vector)))
        started = time.perf_counter()
        pg.execute("CREATE INDEX ON items USING hnsw (embedding vector_l2_ops) "
                   "WITH (m = 16, ef_construction = 64)")
        build = time.perf_counter() - started
        sql = "SELECT id FROM items ORDER BY embedding <-> '{}' LIMIT 10"
        return {"build_s": build, "points": sweep(pg, sql, queries, truth)}
    finally:
        subprocess.run(as_user(user, [os.path.join(pg_bin, "pg_ctl"), "-D", cluster, "-m", "fast", "stop"]),
                       stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--pg-bin")
    parser.add_argument("--pg-user")
    parser.add_argument("--recall", type=float, default=0.95)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="vectors-")
    os.chmod(folder, 0o755)
    data = vectors(args.rows, 7)
    queries = vectors(args.queries, 8)
    truth = exact_answers(data, queries)
    data_path = os.path.join(folder, "vectors.parquet")
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), DIMENSIONS).cast(pa.list_(pa.float32()))
    pq.write_table(pa.table({"id": np.arange(args.rows), "embedding": embedding}), data_path)

    pondra = measure_pondra(args.binary, folder, data_path, queries, truth)
    print(f"rows {args.rows}, {DIMENSIONS} dimensions, {args.queries} queries of the 10 nearest")
    report("pondra", pondra)
    best = at_recall(pondra["points"], args.recall)
    print(f"pondra exact scan: {pondra['exact_qps']:.1f} queries/s", end="")
    if best is not None:
        print(f"; the index at recall@10 >= {args.recall} answers {best[0] / pondra['exact_qps']:.0f} x as many")
    print()
    if args.pg_bin is None:
        return
    pgvector = measure_pgvector(args.pg_bin, args.pg_user, folder, data, queries, truth)
    report("pgvector", pgvector)
    theirs = at_recall(pgvector["points"], args.recall)
    print(f"ratios (pondra / pgvector): build time {pondra['build_s'] / pgvector['build_s']:.2f}")
    for name, side in (("pondra", best), ("pgvector", theirs)):
        if side is None:
            print(f"  {name} reaches no recall@10 >= {args.recall} at these settings")
        else:
            print(f"  {name} at recall@10 >= {args.recall}: ef_search {side[2]}, {side[0]:.0f} queries/s "
                  f"(recall {side[1]:.3f})")
    if best is not None and theirs is not None:
        print(f"  queries/s at recall@10 >= {args.recall}: {best[0] / theirs[0]:.2f}")

if __name__ == "__main__":
    sys.exit(main())
