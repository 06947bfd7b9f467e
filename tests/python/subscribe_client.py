"""Live queries against `pondra serve`: COPY (SUBSCRIBE TO view) TO STDOUT through psycopg and
GET /views/<name>/changes as server-sent events, each receiving every change of a view.

Usage: subscribe_client.py PG_PORT HTTP_ADDRESS. Prints how long each change took to reach
each client after its statement returned; exits non-zero on the first mismatch.
"""

import json
import queue
import sys
import threading
import time
import urllib.request

import psycopg

port = int(sys.argv[1])
http = sys.argv[2]
connect = dict(host="127.0.0.1", port=port, user="analyst", dbname="lake")
PATIENCE = 20  # seconds a change may take before the test fails (not a speed bar)


def copy_changes(out):
    """Each line of the COPY as (commit, diff, k, total), as text."""
    with psycopg.connect(**connect, autocommit=True) as conn:
        with conn.cursor().copy("COPY (SUBSCRIBE TO totals) TO STDOUT") as copy:
            for row in copy.rows():
                out.put((time.perf_counter(), tuple(row)))


def http_changes(out):
    """Each row of each `change` event, as (commit, diff, k, total) in text."""
    with urllib.request.urlopen(f"http://{http}/views/totals/changes") as events:
        kind = None
        for raw in events:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and kind == "change":
                body = json.loads(line.split(":", 1)[1])
                now = time.perf_counter()
                for row in body["rows"]:
                    cells = (row["_commit_version"], row["_diff"], row["k"], row["total"])
                    out.put((now, tuple(None if c is None else str(c) for c in cells)))


def expect(name, feed, wanted, since):
    """Waits for `wanted` rows (diff, k, total) from `feed`, in any order, all of one commit."""
    got = []
    latest = since
    while len(got) < len(wanted):
        try:
            at, row = feed.get(timeout=PATIENCE)
        except queue.Empty:
            sys.exit(f"{name}: waited for {wanted}, got {got}")
        got.append(row)
        latest = at
    commits = {row[0] for row in got}
    assert len(commits) == 1, f"{name}: one commit per change, got {got}"
    rows = sorted(row[1:] for row in got)
    assert rows == sorted(wanted), f"{name}: wanted {sorted(wanted)}, got {rows}"
    return (latest - since) * 1e3, int(commits.pop())


with psycopg.connect(**connect, autocommit=True) as conn:
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT, v INT)")
    cur.execute(
        "CREATE MATERIALIZED VIEW totals AS SELECT k, sum(v) AS total FROM t GROUP BY k"
    )
    cur.execute("INSERT INTO t VALUES (1, 10)")
    feeds = {"psycopg": queue.Queue(), "http": queue.Queue()}
    for target, feed in [(copy_changes, feeds["psycopg"]), (http_changes, feeds["http"])]:
        threading.Thread(target=target, args=(feed,), daemon=True).start()
    started = time.perf_counter()
    last = {}
    for name, feed in feeds.items():
        _, last[name] = expect(name, feed, [("1", "1", "10")], started)

    steps = [
        ("INSERT INTO t VALUES (1, 5)", [("-1", "1", "10"), ("1", "1", "15")]),
        ("INSERT INTO t VALUES (2, 7), (2, 1)", [("1", "2", "8")]),
        ("UPDATE t SET v = v + 1 WHERE k = 2", [("-1", "2", "8"), ("1", "2", "10")]),
        ("DELETE FROM t WHERE k = 1", [("-1", "1", "15")]),
    ]
    for sql, wanted in steps:
        cur.execute(sql)
        done = time.perf_counter()
        for name, feed in feeds.items():
            elapsed, commit = expect(name, feed, wanted, done)
            assert commit > last[name], f"{name}: commits go forward"
            last[name] = commit
            print(f"{name}: {sql}: {elapsed:.1f} ms")
    # A change to another table is no change of the view.
    cur.execute("CREATE TABLE other (x INT)")
    cur.execute("INSERT INTO other VALUES (1)")
    cur.execute("INSERT INTO t VALUES (3, 3)")
    for name, feed in feeds.items():
        expect(name, feed, [("1", "3", "3")], time.perf_counter())
    # A subscription to nothing is refused.
    try:
        with cur.copy("COPY (SUBSCRIBE TO missing) TO STDOUT") as copy:
            list(copy.rows())
        sys.exit("a subscription to a missing view was accepted")
    except psycopg.Error as error:
        assert "missing does not exist" in str(error), error
print("ok")
