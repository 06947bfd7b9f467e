#!/usr/bin/env bash
# Scale-out of spread queries (ADR 0076) on one machine: two `pondra serve` nodes on one TPC-H
# lake, each pinned to a core of its own (taskset). For each query, side by side: the best of
# RUNS on one node and one core (`SET spread = 'never'`), then on both nodes and both cores
# (`SET spread = 'always'`). Prints each query's times and ratio two / one, and the totals.
# Usage: bench/spread.sh SF [RUNS]. The lake goes to $BENCH_DATA (default
# ~/.cache/pondra-bench/spread-sf<SF>).
set -euo pipefail
cd "$(dirname "$0")/.."
sf="${1:?usage: bench/spread.sh SF [RUNS]}"
runs="${2:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pondra-target}"
data="${BENCH_DATA:-$HOME/.cache/pondra-bench/spread-sf$sf}"
cargo build --release -q -p pondra-server
pondra="$CARGO_TARGET_DIR/release/pondra"

if [[ ! -f "$data/generated" ]]; then
    rm -rf "$data"
    mkdir -p "$data"
    "$pondra" --dir "$data/lake" tpch gen --sf "$sf"
    touch "$data/generated"
fi

out="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

# Starts a node pinned to core $1; prints its HTTP address once it is ready.
start_node() {
    local core="$1" log="$out/node$1"
    taskset -c "$core" "$pondra" --dir "$data/lake" serve --http-port 0 --pg-port 0 \
        --flight-port 0 > "$log.out" 2> "$log.err" &
    pids+=("$!")
    until grep -q '^ready$' "$log.out" 2>/dev/null; do sleep 0.1; done
    sed -n 's/^http listening on //p' "$log.out"
}

first="$(start_node 0)"
start_node 1 > /dev/null
echo "TPC-H SF $sf, best of $runs runs; one node on core 0 against two nodes on cores 0 and 1" >&2

python3 - "$first" "$runs" <<'PY'
import http.client
import json
import sys
import time
from pathlib import Path

address, runs = sys.argv[1], int(sys.argv[2])
host, port = address.rsplit(":", 1)

def post(sql):
    connection = http.client.HTTPConnection(host, int(port), timeout=3600)
    connection.request("POST", "/sql", body=sql.encode())
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise SystemExit(f"{answer.status}: {body[:500]!r}")
    return json.loads(body)

def best(spread, query):
    times = []
    rows = None
    for _ in range(runs + 1):  # a warm-up run first
        started = time.perf_counter()
        rows = post(f"SET spread = '{spread}'; {query}")["rows"]
        times.append(time.perf_counter() - started)
    return min(times[1:]), rows

# Both nodes know each other before the first query.
for _ in range(300):
    connection = http.client.HTTPConnection(host, int(port))
    connection.request("GET", "/cluster")
    nodes = json.loads(connection.getresponse().read())["nodes"]
    if sum(1 for n in nodes if n.get("flight")) == 2:
        break
    time.sleep(0.1)
else:
    raise SystemExit("the two nodes did not meet")

print(f"{'query':>6} {'one node':>10} {'two nodes':>10} {'two/one':>8}")
total_one = total_two = 0.0
slower = []
for n in range(1, 23):
    query = Path(f"tpch/queries/q{n}.sql").read_text().strip().rstrip(";")
    one, rows_one = best("never", query)
    two, rows_two = best("always", query)
    if rows_one != rows_two:
        raise SystemExit(f"q{n}: the two nodes answered otherwise than one")
    total_one += one
    total_two += two
    if two > one * 1.05:
        slower.append(f"q{n}")
    print(f"{'q' + str(n):>6} {one:10.3f} {two:10.3f} {two / one:8.2f}")
print(f"{'total':>6} {total_one:10.3f} {total_two:10.3f} {total_two / total_one:8.2f}")
print(f"slower on two nodes (by more than 5%): {', '.join(slower) or 'none'}")
PY
