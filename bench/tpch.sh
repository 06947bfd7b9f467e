#!/usr/bin/env bash
# TPC-H over the same tpchgen-cli Parquet files: DuckDB, Polars and Pondra in one run.
# Usage: bench/tpch.sh SF [RUNS]. Prints one line per query with each engine's best time of
# RUNS hot passes (after a warm-up) and Pondra's ratio to the faster peer, then totals and peak
# memory. Data goes to $BENCH_DATA (default ~/.cache/pondra-bench/sf<SF>).
set -euo pipefail
cd "$(dirname "$0")/.."
sf="${1:?usage: bench/tpch.sh SF [RUNS]}"
runs="${2:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pondra-target}"
venv="${BENCH_VENV:-$HOME/.cache/pondra-bench-venv}"
data="${BENCH_DATA:-$HOME/.cache/pondra-bench/sf$sf}"

[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check duckdb polars tpchgen-cli
if [[ ! -f "$data/lineitem.parquet" ]]; then
    mkdir -p "$data"
    "$venv/bin/tpchgen-cli" parquet -s "$sf" --output-dir "$data"
fi
cargo build --release -q -p pondra-server
pondra="$CARGO_TARGET_DIR/release/pondra"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "TPC-H SF $sf, $(nproc) cores, best of $runs hot runs each; data $data" >&2
"$venv/bin/python" bench/peers.py duckdb "$data" tpch/queries "$runs" > "$out/duckdb" 2> "$out/duckdb.err" || true
"$venv/bin/python" bench/peers.py polars "$data" tpch/queries "$runs" > "$out/polars" 2> "$out/polars.err" || true
/usr/bin/time -f "peak_kb\t%M" -o "$out/pondra.time" \
    "$pondra" tpch run --parquet "$data" --runs "$runs" > "$out/pondra" 2> "$out/pondra.err" || true
awk -F'\t' '{print "peak_mb\t" int($2 / 1024)}' "$out/pondra.time" >> "$out/pondra"

"$venv/bin/python" - "$out" <<'PY'
import sys
from pathlib import Path

out = Path(sys.argv[1])
def load(name):
    values = {}
    for line in (out / name).read_text().splitlines():
        key, _, value = line.partition("\t")
        values[key] = value
    return values

duck, pol, pon = load("duckdb"), load("polars"), load("pondra")
def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None

print(f"{'query':>6} {'duckdb':>9} {'polars':>9} {'pondra':>9} {'pondra/best':>12}")
for n in range(1, 23):
    q = f"q{n}"
    d, p, o = num(duck.get(q)), num(pol.get(q)), num(pon.get(q))
    peers = [v for v in (d, p) if v is not None]
    ratio = f"{o / min(peers):.2f}" if o is not None and peers and min(peers) > 0 else "n/a"
    show = lambda v: f"{v:9.3f}" if v is not None else f"{'n/a':>9}"
    print(f"{q:>6} {show(d)} {show(p)} {show(o)} {ratio:>12}")
totals = [num(x.get("total")) for x in (duck, pol, pon)]
peers = [t for t in totals[:2] if t]
ratio = f"{totals[2] / min(peers):.2f}" if totals[2] and peers else "n/a"
print(f"{'total':>6} {totals[0] or 0:9.3f} {totals[1] or 0:9.3f} {totals[2] or 0:9.3f} {ratio:>12}")
print(f"{'peakMB':>6} {duck.get('peak_mb', 'n/a'):>9} {pol.get('peak_mb', 'n/a'):>9} {pon.get('peak_mb', 'n/a'):>9}")
missing = [f"polars q{n}" for n in range(1, 23) if pol.get(f"q{n}") == "n/a"]
missing += [f"duckdb q{n}" for n in range(1, 23) if duck.get(f"q{n}") == "n/a"]
if missing:
    print("not run (see the engine's error output):", ", ".join(missing))
print("totals are sums over the queries each engine ran")
PY
for engine in duckdb polars pondra; do
    if [[ -s "$out/$engine.err" ]]; then
        echo "--- $engine errors:" >&2
        head -30 "$out/$engine.err" >&2
    fi
done
