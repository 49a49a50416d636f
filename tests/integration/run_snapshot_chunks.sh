#!/usr/bin/env bash
# run_snapshot_chunks.sh — chunked snapshots on the real broker: with a
# tiny --snapshot-chunk-bytes every snapshot is split into several Snapshot
# messages (state_record.h), and
#   * no state-topic message carries more than the chunk size of state
#     (message size bounded), while snapshots really are chunked (more
#     Snapshot messages than closed steps, chunk keys present);
#   * after kill -9 (inside open transactions, --debug-commit-delay-ms) and
#     restart, streams are restored from the assembled chunks and the
#     committed outputs are byte-identical to `dpstream replay`, stream by
#     stream, each step released once (export checks).
# Kill points depend on timing; they decide only when the kill happens.
# Usage: bash run_snapshot_chunks.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_snapshot_chunks.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-snapchunk-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
CHUNK=200

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "streams": [
   {"prefix": "win/", "synthesizer": "window",
    "config": {"horizon": 6, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "config": {"horizon": 6, "rho": 0.25}}
 ]}
EOF
for s in win/a win/b cum/a; do
    "$BIN" gen-panel --n 40 --steps 6 --categories 2 --stay 0.85 --seed-hex "$SEED" \
        --stream "$s" --close-steps --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
python3 - "$WORK" <<'EOF'
import sys
w = sys.argv[1]
ls = [open(f"{w}/{s}.jsonl").read().splitlines() for s in ("win_a", "win_b", "cum_a")]
out = []
while any(ls):
    for l in ls:
        if l: out.append(l.pop(0))
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
EXPECT=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
[ "$EXPECT" -eq 18 ] || fail "replay released $EXPECT steps, expected 18"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }

start() {
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id snapchunk --chunk-records 8 \
        --snapshot-chunk-bytes "$CHUNK" --idle-timeout-ms 0 --progress-ms 5000 --dlq-commit-ms 300 \
        --debug-commit-delay-ms 700 --log-level debug >> "$WORK/run.out" 2>> "$WORK/run.err" &
    RUN_PID=$!
}
released() {
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err"; then
        grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
    else
        echo 0
    fi
}

# --- two kill -9 while steps are being committed, then run to the end -------------
# Each kill waits until some steps are committed (so the next start must
# restore chunked snapshots), then lands 0.3 s later, mostly inside an
# open transaction (--debug-commit-delay-ms).
for target in 3 9; do
    start
    deadline=$((SECONDS + 120))
    until [ "$(released)" -ge "$target" ]; do
        kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $target releases before a kill"
        sleep 0.5
    done
    sleep 0.3
    kill -KILL "$RUN_PID" 2>/dev/null || true
    wait "$RUN_PID" 2>/dev/null || true
    RUN_PID=
    echo "kill -9 after >= $target committed steps: $(released) of $EXPECT steps committed"
done
start
deadline=$((SECONDS + 180))
while :; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
    [ "$(released)" -ge "$EXPECT" ] && break
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases"
    sleep 2
done
sleep 1
kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?; RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export found an inconsistent or duplicated release"; }

grep -o "restored [0-9]* stream(s)" "$WORK/run.err" | tr '\n' ';'; echo
grep -q "restored [1-9][0-9]* stream(s)" "$WORK/run.err" || fail "no restart restored a stream from the state topic"
grep -q "snapshot of stream '.*': chunk 1 of" "$WORK/run.err" || fail "no snapshot was split into chunks"

# --- the state topic: bounded Snapshot messages, more of them than closes -----------
kcat -b "$BOOT" -C -t "$PREFIX.state" -o beginning -e -q -X isolation.level=read_committed \
    -f '%S %h\n' 2>/dev/null > "$WORK/state.msgs"
python3 - "$WORK/state.msgs" "$CHUNK" "$EXPECT" <<'EOF' || fail "state topic check"
import sys
sizes = [int(l.split()[0]) for l in open(sys.argv[1]) if "dpstream.type=Snapshot" in l]
chunk, steps = int(sys.argv[2]), int(sys.argv[3])
# a chunk message = its state piece (<= chunk) + public fields (ids, topic,
# synthesizer, varints: well under 200 bytes here)
limit = chunk + 200
big = [s for s in sizes if s > limit]
print(f"{len(sizes)} Snapshot messages for {steps} committed steps; largest {max(sizes)} bytes (limit {limit})")
if big or len(sizes) <= steps:
    sys.exit(1)
EOF

python3 - "$WORK" <<'EOF' || fail "Kafka outputs differ from replay"
import sys, json, collections
w = sys.argv[1]
def by_stream(path):
    g = {}   # per stream, in any order: the output topics order only within a partition
    for line in open(path):
        g.setdefault(json.loads(line)["stream"], []).append(line)
    return g
ok = True
for f in ["releases.jsonl", "budget.jsonl"]:
    if by_stream(f"{w}/replay/{f}") != by_stream(f"{w}/out/{f}"):
        print(f"{f} differs from replay"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "PASS run_snapshot_chunks: 2 kills -9; $EXPECT releases identical to replay with snapshots in chunks of $CHUNK state bytes"
