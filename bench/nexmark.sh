#!/usr/bin/env bash
# Nexmark over the same events on three engines, one query at a time: Pondra keeping the
# query's materialized views current on every commit (each commit durable before the next),
# DuckDB appending each commit to a database file and computing the query again, and Pathway
# running it over all events at once.
# Usage: bench/nexmark.sh [EVENTS] [BATCH] [QUERIES]   (default 10000000 100000 "q0 ... q9")
# Prints events per second per query and engine, Pondra's ratio to the faster peer, and each
# engine's rows in the result (they must agree). Events go to $BENCH_DATA (default
# ~/.cache/pondra-bench/nexmark-<EVENTS>-<BATCH>).
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-10000000}"
batch="${2:-100000}"
queries="${3:-q0 q1 q2 q3 q4 q5 q7 q8 q9}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pondra-target}"
venv="${BENCH_VENV:-$HOME/.cache/pondra-bench-venv}"
data="${BENCH_DATA:-$HOME/.cache/pondra-bench/nexmark-$events-$batch}"

[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check duckdb pathway pyarrow
cargo build --release -q -p pondra-server
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A copy, so that a build during the run does not change the binary under it.
pondra="$work/pondra"
cp "$CARGO_TARGET_DIR/release/pondra" "$pondra"
if [[ ! -f "$data/bid.parquet" ]]; then
    "$pondra" --dir "$work/generating" nexmark gen --events "$events" --batch "$batch" --parquet "$data" >&2
    rm -rf "$work/generating"
fi

echo "Nexmark, $events events in commits of $batch, $(nproc) cores; events/s per engine" >&2
printf '%5s %12s %12s %12s %13s  %s\n' query pondra duckdb pathway pondra/best "rows (pondra duckdb pathway)"
for q in $queries; do
    rm -rf "$work/lake"
    line="$("$pondra" --dir "$work/lake" nexmark replay --from "$data" --sql "bench/nexmark/$q.sql" | tail -1)"
    pondra_rate="$(sed -E 's/.* ([0-9]+) events\/s$/\1/' <<< "$line")"
    view="$(grep -o 'VIEW [a-z0-9_]*' "bench/nexmark/$q.sql" | tail -1 | cut -d' ' -f2)"
    pondra_rows="$("$pondra" --dir "$work/lake" sql --format csv "SELECT count(*) FROM $view" | tail -1)"
    rm -rf "$work/lake"
    declare -A rate=() rows=()
    for engine in duckdb pathway; do
        mkdir -p "$work/$engine"
        status=0
        "$venv/bin/python" bench/nexmark_peers.py "$engine" "$data" "$q" "$work/$engine" \
            > "$work/$engine.out" 2> "$work/$engine.err" || status=$?
        if [[ $status == 0 ]]; then
            seconds="$(awk -F'\t' '$1 == "seconds" {print $2}' "$work/$engine.out")"
            rate[$engine]="$(awk -v s="$seconds" -v n="$events" 'BEGIN {printf "%.0f", n / s}')"
            rows[$engine]="$(awk -F'\t' '$1 == "rows" {print $2}' "$work/$engine.out")"
        else
            # 137: killed, which on this machine means out of memory.
            rate[$engine]="failed"
            [[ $status == 137 ]] && rate[$engine]="killed"
            rows[$engine]="n/a"
            grep -v -e INFO -e WARNING "$work/$engine.err" | tail -3 >&2 || true
        fi
        rm -rf "${work:?}/$engine"
    done
    best="$(printf '%s\n' "${rate[duckdb]}" "${rate[pathway]}" | grep -E '^[0-9]+$' | sort -n | tail -1 || true)"
    ratio="n/a"
    [[ -n "$best" ]] && ratio="$(awk -v p="$pondra_rate" -v b="$best" 'BEGIN {printf "%.2f", p / b}')"
    printf '%5s %12s %12s %12s %13s  %s %s %s\n' "$q" "$pondra_rate" "${rate[duckdb]}" \
        "${rate[pathway]}" "$ratio" "$pondra_rows" "${rows[duckdb]}" "${rows[pathway]}"
done
