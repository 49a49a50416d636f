#!/usr/bin/env bash
# run_snapshot_chunks.sh — incremental, chunked snapshots on the real
# broker: with a tiny --snapshot-chunk-bytes every snapshot is cut into
# content chunks and a manifest split over several Snapshot messages
# (state_cas.h, state_record.h), and
#   * no state-topic message carries more than the chunk size of state
#     (message size bounded), while snapshots really are chunked;
#   * snapshots are incremental: some step writes fewer bytes of new chunks
#     than its state has, and tombstones drop the chunks a manifest no
#     longer names, so the committed topic holds, per stream, exactly the
#     chunks of its newest manifest;
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
grep -q "snapshot of stream '.*': manifest piece 1 of" "$WORK/run.err" || fail "no manifest was split into pieces"
# "snapshot of stream 'S': N-byte state in M chunks, W new (B bytes), ..."
python3 - "$WORK/run.err" <<'EOF' || fail "snapshots are not incremental"
import re, sys
rows = re.findall(r"snapshot of stream '([^']*)': (\d+)-byte state in (\d+) chunks, (\d+) new",
                  open(sys.argv[1]).read())
inc = [r for r in rows if int(r[3]) < int(r[2])]
print(f"{len(rows)} snapshots written; {len(inc)} of them rewrote only some of their chunks "
      f"(new/all: {' '.join(r[3] + '/' + r[2] for r in rows)})")
sys.exit(0 if rows and inc else 1)
EOF

# --- the state topic: bounded messages, chunks and tombstones -----------------------
kcat -b "$BOOT" -C -t "$PREFIX.state" -o beginning -e -q -X isolation.level=read_committed \
    -f '%S %h\n' 2>/dev/null > "$WORK/state.msgs"
python3 - "$WORK/state.msgs" "$CHUNK" "$EXPECT" <<'EOF' || fail "state topic check"
import sys
rows = [l.split() for l in open(sys.argv[1]) if "dpstream.type=Snapshot" in l]
sizes = [int(r[0]) for r in rows if int(r[0]) >= 0]
tombstones = sum(1 for r in rows if int(r[0]) < 0)
chunks = sum(1 for r in rows if "dpstream.type=SnapshotChunk" in r[1] and int(r[0]) >= 0)
chunk, steps = int(sys.argv[2]), int(sys.argv[3])
# a message = its piece of state or manifest (<= chunk) + public fields
# (ids, topic, synthesizer, varints) + the seal or MAC: under 200 bytes here
limit = chunk + 200
big = [s for s in sizes if s > limit]
print(f"{len(sizes)} snapshot messages ({chunks} content chunks, {tombstones} tombstones) for {steps} committed "
      f"steps; largest {max(sizes)} bytes (limit {limit})")
sys.exit(1 if big or len(sizes) <= steps or chunks == 0 or tombstones == 0 else 0)
EOF
# Compaction keeps exactly what the newest manifests name: per stream, the
# live content-chunk keys (newest value not a tombstone) are as many as the
# distinct chunks of its last snapshot (the last debug line about it).
# newest_per_key: the state topic's newest value size per key (both checks below read it)
cat > "$WORK/state_keys.py" <<'EOF'
def newest_per_key(path):
    # "%K %k %S\n": the key's length first, as keys are binary (a digest
    # may hold a newline byte)
    b, at, out = open(path, "rb").read(), 0, {}
    while at < len(b):
        sp = b.index(b" ", at)
        n = int(b[at:sp])
        k = b[sp + 1:sp + 1 + n]
        nl = b.index(b"\n", sp + 2 + n)
        out[k] = int(b[sp + 2 + n:nl])
        at = nl + 1
    return out
EOF
kcat -b "$BOOT" -C -t "$PREFIX.state" -o beginning -e -q -X isolation.level=read_committed \
    -f '%K %k %S\n' 2>/dev/null > "$WORK/state.keys"
PYTHONPATH="$WORK" python3 - "$WORK/state.keys" "$WORK/run.err" <<'EOF' || fail "the state topic holds chunks no manifest names"
import re, sys
from state_keys import newest_per_key
newest = newest_per_key(sys.argv[1])
live = {}
for k, size in newest.items():
    i = k.find(b"\xff")
    if i >= 0 and len(k) - i == 33 and size >= 0:
        live[k[:i].decode()] = live.get(k[:i].decode(), 0) + 1
last = {}
for s, n in re.findall(r"snapshot of stream '([^']*)': \d+-byte state in (\d+) chunks", open(sys.argv[2]).read()):
    last[s] = int(n)
print("live content chunks per stream:", live, "; distinct chunks of the last manifests:", last)
sys.exit(0 if live == last else 1)
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

# --- a content chunk missing from the topic: the restore refuses, naming it ---------
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
PYTHONPATH="$WORK" "$PY" - "$BOOT" "$PREFIX.state" "$WORK/state.keys" <<'EOF' || fail "could not delete a chunk"
import sys, zlib
from confluent_kafka import Producer
from state_keys import newest_per_key
newest = newest_per_key(sys.argv[3])
victim = sorted(k for k, n in newest.items() if k.startswith(b"win/a\xff") and len(k) == 5 + 33 and n >= 0)[0]
p = Producer({"bootstrap.servers": sys.argv[1]})
# into win/a's state partition: that of its updates partition (the default
# partitioner, crc32 of the stream id; state_layout.h)
n = len(p.list_topics(sys.argv[2], timeout=20).topics[sys.argv[2]].partitions)
p.produce(sys.argv[2], key=victim, value=None, partition=zlib.crc32(b"win/a") % n)
sys.exit(1 if p.flush(30) else 0)
EOF
rc=0
timeout 120 "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id snapchunk \
    --snapshot-chunk-bytes "$CHUNK" --idle-timeout-ms 0 > /dev/null 2> "$WORK/missing.err" || rc=$?
FAIL_LOGS=("$WORK/missing.err")
[ $rc -eq 5 ] || fail "a start with a chunk missing exited $rc, want 5"
grep -q "snapshot of stream 'win/a' at step 6: chunk [0-9]* of [0-9]* (digest [0-9a-f]*\.\.\.) is missing from the state topic; refusing to restore a partial state" \
    "$WORK/missing.err" || fail "the refusal does not name the missing chunk"
grep -o "chunk [0-9]* of [0-9]* (digest [0-9a-f]*\.\.\.) is missing[^;]*" "$WORK/missing.err" | head -1

echo "PASS run_snapshot_chunks: 2 kills -9; $EXPECT releases identical to replay with incremental snapshots in chunks of $CHUNK state bytes; compaction keeps exactly the manifests' chunks; a missing chunk is refused by name"
