#!/usr/bin/env bash
# run.sh — release timing (issue 36 item 7): the time from a step's
# CLOSE_STEP marker to its committed release, for two inputs of the same
# public shape that differ in their data (bench/release_timing/inputs.py),
# on the local broker; plus `dpstream replay` CPU of the same inputs
# (compute alone, no Kafka).  Prints the machine, then driver.py's tables.
#
#   bash bench/release_timing/run.sh [OUTDIR] [-- driver args]
#     default driver args: --scenarios window,cumulative,marginal,hypercube,adaptive
#                          --n 50000 --steps 8 --reps 5 --gap-s 1.5
#
# Needs a build (build/dpstream), the broker of scripts/kafka-local.sh (its
# bootstrap, or $DPSTREAM_BOOTSTRAP_SERVERS; 127.0.0.1 only) and the venv of
# scripts/install-deps.sh (confluent-kafka, fastavro).  Each run makes its
# own topics (prefix rt-…); nothing else on the broker is touched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$(mktemp -d /tmp/release-timing.XXXXXX)}
shift || true
[ "${1:-}" = "--" ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--scenarios window,cumulative,marginal,hypercube,adaptive --n 50000 --steps 8 --reps 5 --gap-s 1.5)
BIN=${BIN:-$ROOT/build/dpstream}
[ -x "$BIN" ] || { echo "run.sh: build $BIN first (bash scripts/build.sh release)" >&2; exit 2; }
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import confluent_kafka, fastavro' 2>/dev/null || { echo "run.sh: no confluent-kafka/fastavro in $PY (bash scripts/install-deps.sh)" >&2; exit 2; }
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
case "$BOOT" in 127.0.0.1:*) ;; *) echo "run.sh: refusing a broker not on 127.0.0.1: $BOOT" >&2; exit 2 ;; esac
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
mkdir -p "$OUT"
echo "release_timing: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg); $BIN; results in $OUT"
"$PY" "$ROOT/bench/release_timing/driver.py" kafka "$BIN" "$OUT/kafka.jsonl" "${ARGS[@]}"
"$PY" "$ROOT/bench/release_timing/driver.py" offline "$BIN" "$OUT/offline.jsonl" "${ARGS[@]}"
echo "release_timing: done $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$ROOT/bench/release_timing/driver.py" report "$OUT/kafka.jsonl" "$OUT/offline.jsonl"
