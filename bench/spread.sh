#!/usr/bin/env bash
# Scale-out of spread queries (ADR 0076) on one machine: two `pondra serve` nodes on one TPC-H
# lake, each pinned to a core of its own (taskset). For each query, side by side: the best of
# RUNS on one node and one core (`SET spread = 'never'`), then on both nodes and both cores
# (`SET spread = 'always'`), then as the planner decides (`SET spread = 'auto'`, the default).
# Prints each query's times and ratios to one node, and the totals.
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

# Starts a node pinned to core $1 and waits until it is ready.
start_node() {
    local core="$1" log="$out/node$1"
    taskset -c "$core" "$pondra" --dir "$data/lake" serve --http-port 0 --pg-port 0 \
        --flight-port 0 > "$log.out" 2> "$log.err" &
    pids+=("$!")
    until grep -q '^ready$' "$log.out" 2>/dev/null; do sleep 0.1; done
}

start_node 0
start_node 1
first="$(sed -n 's/^http listening on //p' "$out/node0.out")"
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

print(f"{'query':>6} {'one node':>10} {'always':>10} {'ratio':>6} {'auto':>10} {'ratio':>6}")
totals = [0.0, 0.0, 0.0]
slower = {"always": [], "auto": []}
for n in range(1, 23):
    query = Path(f"tpch/queries/q{n}.sql").read_text().strip().rstrip(";")
    one, rows_one = best("never", query)
    always, rows_always = best("always", query)
    auto, rows_auto = best("auto", query)
    if not rows_one == rows_always == rows_auto:
        raise SystemExit(f"q{n}: the two nodes answered otherwise than one")
    for i, t in enumerate((one, always, auto)):
        totals[i] += t
    for name, t in (("always", always), ("auto", auto)):
        if t > one * 1.05:
            slower[name].append(f"q{n}")
    print(f"{'q' + str(n):>6} {one:10.3f} {always:10.3f} {always / one:6.2f} {auto:10.3f} {auto / one:6.2f}")
one, always, auto = totals
print(f"{'total':>6} {one:10.3f} {always:10.3f} {always / one:6.2f} {auto:10.3f} {auto / one:6.2f}")
for name in ("always", "auto"):
    print(f"slower than one node with spread = '{name}' (by more than 5%): {', '.join(slower[name]) or 'none'}")
PY
