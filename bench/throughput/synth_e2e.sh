#!/usr/bin/env bash
# synth_e2e.sh — one synthesizer end to end through `dpstream run` on the
# local broker (issue 41 §2; bench/RESULTS.md "every synthesizer through
# Kafka"), beside the fair ceiling of the same workload and the same
# synthesizers offline, in one run:
#
#   workload — SIZE individuals reporting every step (`cumulative`: bits,
#              `adaptive`: 256 categories; `dpstream gen-panel`, Markov, stay
#              0.9) or SIZE rows / points in all, SIZE/T a step
#              (`marginal`, `spatial`, `hypercube`:
#              bench/throughput/synth_workload.py), T steps, then L more for
#              the latency phase; every step M updates and its CLOSE_STEP
#              marker, produced before the processor starts (one partition);
#   offline  — `dpstream replay` of the same T steps (JSON parsing and the
#              JSON output included): updates/s and peak RSS; and the
#              synthesizer alone (bench_throughput_synth: the same lines
#              parsed before the clock, then the step gate's offers and
#              closes — issue 41's "own ingest rate measured offline");
#   e2e      — `dpstream run` from an empty state topic: steady updates/s
#              over steps 2..T ((T-1)(M+1) messages between the json log's
#              step_released events of steps 1 and T; each is logged after
#              its transaction committed), and over all T steps from
#              restore_done; the process's peak RSS;
#   state    — the state topic's committed record bytes (keys + values, as
#              kcat reads them) produced after step 1's release up to step
#              T's, per steady step;
#   copy     — bench_throughput --copy-of: the bare librdkafka
#              consume→produce pipeline (copy_pipeline.h) over the same
#              updates topic, committing per step a transaction of exactly the
#              messages and bytes dpstream's held (the processor idles
#              meanwhile);
#   latency  — L steps, one at a time: the step's updates (one fewer than M,
#              so no roster or per-step count completes the step before its
#              marker), a settle of 3× their ingest time at the steady
#              rate (≥ 1 s), then the marker; latency is the marker's
#              CreateTime (set when `dpstream produce` hands it to
#              librdkafka) to the step_released event's time;
#   restore  — kill -9, then a second instance with the same instance id:
#              start → "restored" (which waits out the killed member's
#              session.timeout.ms, librdkafka's default 45 s unless the
#              config's "kafka" object sets it) and restore_start →
#              restore_done (json log), and its peak RSS (VmHWM) once
#              restored.
# PERF=FILE records the processor's profile (perf record -g) over the e2e
# phase.
#
# Prints one RESULT line (with the load average before and after).  Not a
# test: numbers depend on the machine and its load.  Topics have a unique
# prefix and are deleted at the end with the consumer group (drop_topics.py), through the
# project's Python venv (confluent-kafka; scripts/install-deps.sh); the
# broker is never started or stopped here.
# SYNTH marginal-forest: `marginal` with `method: forest` (synth_workload.py).
# OUTPUT=delta (spatial, hypercube): the stream's `output` is `delta` instead
# of the default `full` (the synthesizer alone runs the same config).
# Usage: bash synth_e2e.sh path/to/dpstream SYNTH [SIZE (1000000)] [T (10)] [L (5)]
set -euo pipefail
BIN=$(realpath "${1:?usage: synth_e2e.sh path/to/dpstream SYNTH [SIZE] [T] [L]}")
SYNTH=${2:?usage: synth_e2e.sh path/to/dpstream SYNTH [SIZE] [T] [L]}
SIZE=${3:-1000000} T=${4:-10} L=${5:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH=${BENCH:-$(dirname "$BIN")/bench_throughput}
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
STREAM=e2e/$SYNTH
KIND=${SYNTH%-forest}   # the synthesizer: marginal-forest is `marginal`
case $SYNTH in
    cumulative | adaptive) M=$SIZE ;;
    marginal | marginal-forest | spatial | hypercube) M=$((SIZE / T)) ;;
    *) echo "synth_e2e.sh: SYNTH is one of cumulative adaptive marginal marginal-forest spatial hypercube" >&2; exit 2 ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/synth-e2e.XXXXXX")
PID=
PREFIX=bench-e2e-$$-$(date +%s)
cleanup() {
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
    rm -rf "$WORK"
    "$PY" "$HERE/drop_topics.py" "$BOOT" "$PREFIX" . "$PREFIX.processor" ||
        echo "could not delete the topics $PREFIX.*" >&2
}
trap cleanup EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the workload: T + L steps of M updates and a marker each ---------------------
SCFG=$(python3 "$HERE/synth_workload.py" config "$SYNTH" --per-step "$M" --steps $((T + L)))
if [ -n "${OUTPUT:-}" ]; then
    SCFG=$(python3 -c 'import json, sys; c = json.loads(sys.argv[1]); c["output"] = sys.argv[2]; print(json.dumps(c))' \
        "$SCFG" "$OUTPUT")
fi
printf '{"topics": {"prefix": "%s", "partitions": 1},\n "streams": [{"match": "%s", "synthesizer": "%s", "config": %s}]}\n' \
    "$PREFIX" "$STREAM" "$KIND" "$SCFG" > "$WORK/config.json"
case $SYNTH in
    cumulative) "$BIN" gen-panel --n "$M" --steps $((T + L)) --categories 2 --stay 0.9 --seed-hex "$SEED" \
                    --stream "$STREAM" --close-steps --out "$WORK/all.jsonl" ;;
    adaptive) "$BIN" gen-panel --n "$M" --steps $((T + L)) --categories 256 --stay 0.9 --seed-hex "$SEED" \
                  --stream "$STREAM" --close-steps --out "$WORK/all.jsonl" ;;
    *) python3 "$HERE/synth_workload.py" "$SYNTH" --per-step "$M" --steps $((T + L)) > "$WORK/all.jsonl" ;;
esac
head -n $(((M + 1) * T)) "$WORK/all.jsonl" > "$WORK/tp.jsonl"
for j in $(seq 1 "$L"); do   # step T+j: its first M-1 updates, then its marker
    sed -n "$(((M + 1) * (T + j - 1) + 1)),$(((M + 1) * (T + j) - 2))p" "$WORK/all.jsonl" > "$WORK/lat$j.jsonl"
    sed -n "$(((M + 1) * (T + j)))p" "$WORK/all.jsonl" > "$WORK/mark$j.jsonl"
done
rm "$WORK/all.jsonl"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/tp.jsonl" --partitions 1 > /dev/null

# --- offline: dpstream replay of the same T steps ---------------------------------
r0=$(date +%s%N)
/usr/bin/time -f '%M' -o "$WORK/replay.rss" "$BIN" replay --config "$WORK/config.json" --input "$WORK/tp.jsonl" \
    --out "$WORK/replay" --key-hex "$KEY" > /dev/null
replay_s=$(echo "($(date +%s%N) - $r0) / 10^9" | bc -l)
replay_rss=$(($(tail -1 "$WORK/replay.rss") / 1024))
rm -rf "$WORK/replay"
# --- offline: the synthesizer alone (bench_throughput_synth: parsed before the clock) ---
ingest_rate=$("$(dirname "$BIN")/bench_throughput_synth" --config "$WORK/config.json" --input "$WORK/tp.jsonl" \
    --repeat 1 | sed -n 's/.* \([0-9]*\) upd\/s with the closes.*/\1/p')
rm -f "$WORK/tp.jsonl"

kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
released() { grep -c "\"event\":\"step_released\".*\"step\":$2[,}]" "$1" || true; }
run() {   # $1 = log file; waits until step $2 is released, or for "restored" if $2 = 0
    : > "$1"
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id e2e --idle-timeout-ms 0 \
        --log-level info --log-format json 2> "$1" > /dev/null &
    PID=$!
    wait_for "$1" "$2"
}
wait_for() {
    local deadline=$((SECONDS + 1800))
    until if [ "$2" = 0 ]; then grep -q "restore_done" "$1"; else [ "$(released "$1" "$2")" -ge 1 ]; fi; do
        kill -0 "$PID" 2>/dev/null || { tail "$1" >&2; echo "dpstream exited early" >&2; exit 1; }
        [ $SECONDS -lt $deadline ] || { echo "timed out" >&2; exit 1; }
        sleep 0.05
    done
}
# the ms timestamps (UTC epoch) of json log events: "EVENT" or "EVENT:STEP"
ts_ms() {
    python3 - "$@" <<'EOF'
import sys, json, datetime
log, want = sys.argv[1], sys.argv[2:]
got = {}
for line in open(log):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    t = int(datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp() * 1000)
    for k in (e.get("event"), f'{e.get("event")}:{e.get("step")}'):
        got.setdefault(k, t)
print(" ".join(str(got[w]) for w in want))
EOF
}

# --- e2e (PERF=FILE: perf record -g of the processor until step T is released) ----
if [ -n "${PERF:-}" ]; then
    : > "$WORK/a.err"
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id e2e --idle-timeout-ms 0 \
        --log-level info --log-format json 2> "$WORK/a.err" > /dev/null &
    PID=$!
    perf record -F 999 -g -o "$PERF" -p "$PID" 2> /dev/null &
    PERF_PID=$!
    wait_for "$WORK/a.err" "$T"
    kill -INT "$PERF_PID"
    wait "$PERF_PID" || true
else
    run "$WORK/a.err" "$T"
fi
run_hwm=$(($(kb "$PID" VmHWM) / 1024))
read -r t_ready t_1 t_T < <(ts_ms "$WORK/a.err" restore_done step_released:1 "step_released:$T")
e2e_steady=$(((M + 1) * (T - 1) * 1000 / (t_T - t_1)))
e2e_total=$(((M + 1) * T * 1000 / (t_T - t_ready)))
state_b=$(kcat -C -b "$BOOT" -t "$PREFIX.state" -X isolation.level=read_committed -o beginning -e -q -f '%T %S\n' |
    awk -v a="$t_1" -v b="$t_T" '$1 > a && $1 <= b && $2 > 0 {s += $2} END {printf "%d", s}')
state_per_step=$((state_b / (T - 1)))

# --- copy: the fair ceiling of the same workload ----------------------------------
"$BENCH" --copy-of "$PREFIX" --stream "$STREAM" --per-step $((M + 1)) --steps "$T" > "$WORK/copy.out"
copy_rate=$(sed -n 's/^RESULT copy-of .*: copy \([0-9]*\) msg\/s.*/\1/p' "$WORK/copy.out")
[ -n "$copy_rate" ] || { cat "$WORK/copy.out" >&2; echo "no copy figure" >&2; exit 1; }

# --- latency: L steps, one at a time ----------------------------------------------
settle=$(((M * 3000) / e2e_steady))
[ "$settle" -ge 1000 ] || settle=1000
lats=()
for j in $(seq 1 "$L"); do
    "$BIN" produce --config "$WORK/config.json" --input "$WORK/lat$j.jsonl" > /dev/null
    sleep "$(echo "$settle / 1000" | bc -l)"
    "$BIN" produce --config "$WORK/config.json" --input "$WORK/mark$j.jsonl" > /dev/null
    wait_for "$WORK/a.err" $((T + j))
    mk=$(kcat -C -b "$BOOT" -t "$PREFIX.updates" -p 0 -o -1 -c 1 -e -q -f '%T\n')
    rel=$(ts_ms "$WORK/a.err" "step_released:$((T + j))")
    lats+=($((rel - mk)))
done
lat_sorted=$(printf '%s\n' "${lats[@]}" | sort -n | tr '\n' ' ')
lat_p50=$(printf '%s\n' "${lats[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
lat_max=$(printf '%s\n' "${lats[@]}" | sort -n | tail -1)
dlq=$(kcat -C -b "$BOOT" -t "$PREFIX.deadletter" -o beginning -e -q -f '.\n' | wc -l)

# --- restore after kill -9 -----------------------------------------------------------
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
PID=
t0=$(date +%s%N)
run "$WORK/b.err" 0
restored_s=$(echo "($(date +%s%N) - $t0) / 10^9" | bc -l)
rst_hwm=$(($(kb "$PID" VmHWM) / 1024))
read -r r_a r_b < <(ts_ms "$WORK/b.err" restore_start restore_done)
kill -TERM "$PID"
wait "$PID" || true
PID=

printf 'RESULT synth_e2e %s: M=%d updates/step, T=%d (+%d latency steps); e2e %d upd/s steady (steps 2..T), %d from restore_done; copy %d msg/s (e2e/copy %.3f); offline replay %.0f upd/s (%.2f s, peak RSS %d MB; e2e/replay %.3f); offline synthesizer alone %d upd/s (e2e/ingest %.3f); latency marker->committed release p50 %d ms, max %d ms (%s; settle %d ms); state %.3f MB per steady step; run peak RSS %d MB; kill -9 -> restored %.2f s (restore_start->restore_done %d ms), peak RSS %d MB; dead letters %s; load %s -> %s\n' \
    "$SYNTH" "$M" "$T" "$L" "$e2e_steady" "$e2e_total" "$copy_rate" "$(echo "$e2e_steady / $copy_rate" | bc -l)" \
    "$(echo "$M * $T / $replay_s" | bc -l)" "$replay_s" "$replay_rss" "$(echo "$e2e_steady * $replay_s / ($M * $T)" | bc -l)" \
    "$ingest_rate" "$(echo "$e2e_steady / $ingest_rate" | bc -l)" \
    "$lat_p50" "$lat_max" "$lat_sorted" "$settle" "$(echo "$state_per_step / 10^6" | bc -l)" "$run_hwm" \
    "$restored_s" "$((r_b - r_a))" "$rst_hwm" "$dlq" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
