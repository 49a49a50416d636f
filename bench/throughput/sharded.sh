#!/usr/bin/env bash
# sharded.sh — `bench_throughput --sharded` (issue 40 §4; docs/kafka.md §10,
# docs/scaling.md §3): one sharded `window` stream (k = 3, 2 categories,
# N individuals reporting every step, T steps, a CLOSE_STEP marker per step
# and partition) on a P-partition updates topic, through the two roles on
# the local broker, once per ingest-instance count I in INSTANCES (default
# "1 2 4"), each run on its own topics:
#
#   setup   — I `dpstream run --role ingest` instances and one `--role
#             release` instance start on the run's empty topics; the run
#             waits until the ingest instances own all P partitions, each
#             at least one (no rebalance inside the measured window);
#   fill    — the instances paused (SIGSTOP: the config's session timeout,
#             300 s, outlasts the fill), `dpstream produce` writes the N × T
#             updates and the markers (JSON lines from `dpstream gen-panel`,
#             encoded as `run` reads them); then all resume together (SIGCONT);
#   window  — steps 2..T: from the release instance's step_released event
#             of step 1 to that of step T (json log; each is logged after
#             its transaction committed): (T-1)·N updates;
#   figures — updates/s over the window; each instance's CPU (utime +
#             stime of /proc/PID/stat, sampled when the release log shows
#             step 1 and step T) per update of the window: per ingest
#             instance against its share (N·(T-1)·owned/P, owned = its
#             partitions), and all ingest instances together; the release
#             instance's CPU per step and its wall time per step (window / (T-1)).
#
# With 2 cores a wall-clock speed-up is bounded; the claim is that no
# stage's CPU per update grows with I.  Prints one RESULT line per run (with
# the load average before and after).  Not a test: numbers depend on the
# machine and its load.  Topics have a unique prefix and are deleted at the
# end (drop_topics.py, the project's Python venv); the broker is never
# started or stopped here.
# Usage: bash sharded.sh path/to/dpstream [N (1000000)] [T (6)] [P (4)] [INSTANCES ("1 2 4")]
set -euo pipefail
BIN=$(realpath "${1:?usage: sharded.sh path/to/dpstream [N] [T] [P] [INSTANCES]}")
N=${2:-1000000} T=${3:-6} P=${4:-4} INSTANCES=${5:-"1 2 4"}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sharded-bench.XXXXXX")
PREFIX=bench-sh-$$-$(date +%s)
PIDS=()
TICK=$(getconf CLK_TCK)
stop_all() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
    "$PY" "$HERE/drop_topics.py" "$BOOT" "$PREFIX" . ||
        echo "could not delete the topics $PREFIX*" >&2
}
trap cleanup EXIT

"$BIN" gen-panel --n "$N" --steps "$T" --categories 2 --stay 0.9 --seed-hex "$SEED" --stream sh/a --close-steps \
    --out "$WORK/in.jsonl"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime of a live process
released() { grep -c "\"event\":\"step_released\".*\"step\":$2[,}]" "$1" 2>/dev/null || true; }
ts_ms() {   # the ms timestamp (UTC epoch) of a json log's step_released event of step $2
    python3 - "$1" "$2" <<'EOF'
import sys, json, datetime
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "step_released" and str(e.get("step")) == sys.argv[2]:
        print(int(datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp() * 1000))
        break
EOF
}
owned() { grep -o "assigned [0-9]*" "$1" | tail -1 | grep -o "[0-9]*$" || echo 0; }

for I in $INSTANCES; do
    R=$PREFIX-i$I
    cat > "$WORK/c$I.json" <<JSON
{"topics": {"prefix": "$R", "partitions": $P},
 "kafka": {"session.timeout.ms": "300000", "group.id": "$R.group"},
 "delta": 1e-6,
 "streams": [{"prefix": "sh/", "synthesizer": "window", "sharded": true,
              "config": {"horizon": $T, "k": 3, "categories": 2, "rho": 1}}]}
JSON
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    "$BIN" run --config "$WORK/c$I.json" --key-hex "$KEY" --role release --instance-id rel --idle-timeout-ms 0 \
        --log-level info --log-format json > /dev/null 2> "$WORK/rel$I.log" &
    REL=$!
    PIDS+=("$REL")
    ING=()
    for k in $(seq 1 "$I"); do
        "$BIN" run --config "$WORK/c$I.json" --key-hex "$KEY" --role ingest --instance-id "in$k" --idle-timeout-ms 0 \
            --log-level info > /dev/null 2> "$WORK/in$I-$k.log" &
        ING+=($!)
        PIDS+=($!)
    done
    # every ingest instance owns partitions, P in all, and it stays so for 3 s
    deadline=$((SECONDS + 120)) stable=0
    while [ $stable -lt 6 ]; do
        [ $SECONDS -lt $deadline ] || { echo "sharded.sh: the ingest instances did not settle" >&2; exit 1; }
        sum=0 ok=1
        for k in $(seq 1 "$I"); do
            o=$(owned "$WORK/in$I-$k.log"); sum=$((sum + o)); [ "$o" -gt 0 ] || ok=0
        done
        if [ $ok = 1 ] && [ $sum -eq "$P" ]; then stable=$((stable + 1)); else stable=0; fi
        sleep 0.5
    done
    # paused (SIGSTOP; the session timeout outlasts the fill) while the topic is filled, then resumed together
    for p in "${PIDS[@]}"; do kill -STOP "$p"; done
    "$BIN" produce --config "$WORK/c$I.json" --input "$WORK/in.jsonl" --partitions "$P" > /dev/null \
        2> "$WORK/produce$I.err" || { echo "sharded.sh: produce failed: $(tail -3 "$WORK/produce$I.err")" >&2; exit 1; }
    for p in "${PIDS[@]}"; do kill -CONT "$p"; done
    t0=$(date +%s%3N)
    declare -a c1 cT
    for step in 1 "$T"; do
        deadline=$((SECONDS + 1800))
        until [ "$(released "$WORK/rel$I.log" "$step")" -ge 1 ]; do
            [ $SECONDS -lt $deadline ] || { echo "sharded.sh: step $step was not released" >&2; exit 1; }
            kill -0 "$REL" 2>/dev/null || { echo "sharded.sh: the release instance stopped" >&2; tail -5 "$WORK/rel$I.log" >&2; exit 1; }
            sleep 0.05
        done
        snap=()
        for p in "$REL" "${ING[@]}"; do snap+=("$(cpu_ticks "$p")"); done
        if [ "$step" = 1 ]; then c1=("${snap[@]}"); else cT=("${snap[@]}"); fi
    done
    t1=$(ts_ms "$WORK/rel$I.log" 1) tT=$(ts_ms "$WORK/rel$I.log" "$T")
    own=()
    for k in $(seq 1 "$I"); do own+=("$(owned "$WORK/in$I-$k.log")"); done
    stop_all
    python3 - "$I" "$N" "$T" "$P" "$TICK" "$t1" "$tT" "$t0" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" \
        "${c1[*]}" "${cT[*]}" "${own[*]}" <<'EOF'
import sys
I, N, T, P, tick, t1, tT, t0 = (int(x) for x in sys.argv[1:9])
load0, load1 = sys.argv[9], sys.argv[10]
c1, cT, own = ([int(x) for x in a.split()] for a in sys.argv[11:14])
win = (tT - t1) / 1000
upd = N * (T - 1)
cpu = [(b - a) / tick for a, b in zip(c1, cT)]   # release, then the ingest instances
per = [cpu[1 + k] / (upd * own[k] / P) * 1e6 for k in range(I)]
print(f"RESULT sharded I={I} ingest + 1 release, P={P}, N={N}, T={T}: {upd / win:,.0f} updates/s over steps 2..T "
      f"({win:.2f} s), {N * T / ((tT - t0) / 1000):,.0f} over all T steps from the resume; ingest CPU/update per instance (us): {', '.join(f'{x:.3f}' for x in per)} "
      f"(partitions {own}); all ingest {sum(cpu[1:]) / upd * 1e6:.3f} us/update ({sum(cpu[1:]):.2f} CPU s); "
      f"release {cpu[0] / (T - 1) * 1000:.1f} CPU ms/step, {win / (T - 1) * 1000:.0f} ms/step wall; "
      f"load {load0} -> {load1}")
EOF
done
