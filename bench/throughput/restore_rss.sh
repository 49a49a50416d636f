#!/usr/bin/env bash
# restore_rss.sh — memory and time of a restore (bench/RESULTS.md,
# throughput): S window streams of N individuals each (k = 3, c = 2), each
# in its own partition of a P-partition updates topic (S <= P; default
# S = P), run through `dpstream run` for T steps on the local broker; then
#   steady   — the instance's RSS once every step is released (its state:
#              P synthesizers of N individuals, plus librdkafka and buffers);
#   restore  — a second instance (same instance id) restores all P
#              partitions from the state topic: its peak RSS (VmHWM) by the
#              time the restore is done, and its RSS right after.
# The difference peak - after is what the restore holds on top of the
# restored state; the restore's time is from the start of the second
# instance to its "restored" line (group join included), and the restore
# itself from its restore_start to its restore_done event (json log).
#   bare     — a bare consumer (kcat, read_committed, every partition from
#              the beginning to the end) reading the same state topic: the
#              floor a restore is compared with.
# Prints one RESULT line.  Not a test: numbers depend on the machine.  Topics have a
# unique prefix and are deleted at the end with the consumer group (~450 MB
# of broker disk per run at the defaults), through the project's Python
# venv (confluent-kafka; scripts/install-deps.sh).
# Usage: bash restore_rss.sh path/to/dpstream [N] [P] [T] [S]
set -euo pipefail
BIN=$(realpath "${1:?usage: restore_rss.sh path/to/dpstream [N] [P] [T]}")
N=${2:-1000000} P=${3:-4} T=${4:-2}
S=${5:-$P}
[ "$S" -le "$P" ] || { echo "S (streams) must be at most P (partitions)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
WORK=$(mktemp -d)
PID=
PREFIX=bench-rss-$$-$(date +%s)
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
cleanup() {
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
    rm -rf "$WORK"
    "$PY" "$ROOT/bench/throughput/drop_topics.py" "$BOOT" "$PREFIX" . "$PREFIX.processor" ||
        echo "could not delete the topics $PREFIX.*" >&2
}
trap cleanup EXIT
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": $P},
 "streams": [{"prefix": "r/", "synthesizer": "window",
              "config": {"horizon": $((T + 2)), "k": 3, "categories": 2, "rho": 0.005, "neighbors": "replace"}}]}
EOF
# S stream ids, each in its own partition (the default partitioner: crc32(key) mod P)
python3 - "$P" "$S" > "$WORK/streams" <<'EOF'
import sys, zlib
p, n, got, i = int(sys.argv[1]), int(sys.argv[2]), {}, 0
while len(got) < n:
    s = f"r/{i}"
    got.setdefault(zlib.crc32(s.encode()) % p, s)
    i += 1
print("\n".join(got[k] for k in sorted(got)))
EOF
: > "$WORK/input.jsonl"
while read -r s; do
    "$BIN" gen-panel --n "$N" --steps "$T" --categories 2 --stay 0.9 --seed-hex "$SEED" --stream "$s" \
        --close-steps >> "$WORK/input.jsonl"
done < "$WORK/streams"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions "$P" > /dev/null
rm "$WORK/input.jsonl"

kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
run() {   # $1 = log file; waits for the grep pattern $2 to appear $3 times
    : > "$1"
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id rss --idle-timeout-ms 0 \
        --log-level info --log-format json 2> "$1" > /dev/null &
    PID=$!
    local deadline=$((SECONDS + 900))
    until [ "$(grep -c "$2" "$1" || true)" -ge "$3" ]; do
        kill -0 "$PID" 2>/dev/null || { tail "$1" >&2; echo "dpstream exited early" >&2; exit 1; }
        [ $SECONDS -lt $deadline ] || { echo "timed out" >&2; exit 1; }
        sleep 0.2
    done
}
stop() { kill -TERM "$PID"; wait "$PID" || true; PID=; }

run "$WORK/a.err" "released step $T of stream" "$S"
sleep 1
steady=$(kb "$PID" VmRSS) steady_hwm=$(kb "$PID" VmHWM)
stop
t0=$(date +%s.%N)
run "$WORK/b.err" "restored $S stream(s)" 1
secs=$(echo "$(date +%s.%N) - $t0" | bc)
peak=$(kb "$PID" VmHWM) after=$(kb "$PID" VmRSS)
stop
grep -q "restored $S stream(s)" "$WORK/b.err" || { echo "the second instance did not restore $S streams" >&2; exit 1; }
restore_ms=$(python3 - "$WORK/b.err" <<'EOF'
import sys, json, datetime
ts = {}
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") in ("restore_start", "restore_done") and e["event"] not in ts:
        ts[e["event"]] = datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))
print(int((ts["restore_done"] - ts["restore_start"]).total_seconds() * 1000))
EOF
)
read_info=$(grep -o '[0-9]* records read from [0-9]* of [0-9]* state partitions' "$WORK/b.err" | head -1 || true)
# the floor: a bare consumer reading the same committed state
b0=$(date +%s%N)
kcat -C -b "$BOOT" -t "$PREFIX.state" -X isolation.level=read_committed -o beginning -e -q -f '%S\n' > "$WORK/bare.sizes"
bare_ms=$((($(date +%s%N) - b0) / 1000000))
bare_mb=$(awk '$1 > 0 {s += $1} END {printf "%.1f", s / 1048576}' "$WORK/bare.sizes")
echo "RESULT restore RSS: P=$P partitions, S=$S streams of N=$N (window k=3), T=$T: steady RSS $((steady / 1024)) MB" \
     "(peak while running $((steady_hwm / 1024)) MB); restore: peak $((peak / 1024)) MB, after $((after / 1024)) MB," \
     "peak - after $(((peak - after) / 1024)) MB; start to restored $(printf %.1f "$secs") s;" \
     "restore_start to restore_done $restore_ms ms ($read_info); bare consumer (kcat) $bare_ms ms for $bare_mb MB"
