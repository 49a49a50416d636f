#!/usr/bin/env bash
# run_confluent_framing.sh — the config's "wire" section on the real broker:
# with {"framing": "confluent", "schema_ids": {…}} every Kafka reader and
# writer (produce, run, export) uses Confluent Schema Registry framing:
#   * the committed outputs equal `dpstream replay` stream by stream, and
#     every rejected input is dead-lettered with the replay's reason;
#   * the raw messages start with byte 0x00 and the configured 4-byte
#     big-endian schema id of their type (read with kcat, not with dpstream,
#     so a codec that silently ignored the framing could not pass): input
#     Updates, SyntheticRecord chunks, ReleaseManifests, BudgetEvents,
#     DeadLetters and Snapshots.
# Small on purpose (2 streams); run_end_to_end.sh covers the processor
# itself.  Topic names carry a random suffix.
# Usage: bash run_confluent_framing.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_confluent_framing.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-confluent-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0
# ids chosen so that every byte of the 4-byte field matters
declare -A ID=([Update]=1001 [SyntheticRecord]=16777218 [ReleaseManifest]=70000 [BudgetEvent]=4
               [DeadLetter]=2147483647 [Snapshot]=258)

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "wire": {"framing": "confluent",
          "schema_ids": {"Update": ${ID[Update]}, "SyntheticRecord": ${ID[SyntheticRecord]},
                         "ReleaseManifest": ${ID[ReleaseManifest]}, "BudgetEvent": ${ID[BudgetEvent]},
                         "DeadLetter": ${ID[DeadLetter]}, "Snapshot": ${ID[Snapshot]}}},
 "streams": [
   {"prefix": "win/", "synthesizer": "window",
    "config": {"horizon": 4, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "config": {"horizon": 4, "rho": 0.25}}
 ]}
EOF

for s in win/a cum/a; do
    "$BIN" gen-panel --n 25 --steps 4 --categories 2 --stay 0.85 --seed-hex "$SEED" \
        --stream "$s" --close-steps --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
python3 - "$WORK" <<'EOF'
import sys
w = sys.argv[1]
a = open(f"{w}/win_a.jsonl").read().splitlines()
b = open(f"{w}/cum_a.jsonl").read().splitlines()
out = []
while a or b:
    if a: out.append(a.pop(0))
    if b: out.append(b.pop(0))
out.insert(10, 'not avro at all')                                                      # MALFORMED
out.insert(20, '{"stream":"other/x","step":1,"kind":"REPORT","entity":"u1","value":0}')  # UNKNOWN_STREAM
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
EXPECT=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
EXPECT_DLQ=$(wc -l < "$WORK/replay/rejected.jsonl")
[ "$EXPECT" -eq 8 ] || fail "replay released $EXPECT steps, expected 8"
[ "$EXPECT_DLQ" -eq 2 ] || fail "replay rejected $EXPECT_DLQ lines, expected 2"

"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 --raw-invalid \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }

"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id confluent --chunk-records 5 \
    --idle-timeout-ms 0 --progress-ms 5000 --dlq-commit-ms 300 >> "$WORK/run.out" 2>> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 180))
while :; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err"; then
        n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
        d=$(wc -l < "$WORK/dl.jsonl")
        if [ "$n" -ge "$EXPECT" ] && [ "$d" -ge "$EXPECT_DLQ" ]; then break; fi
    fi
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases"
    sleep 2
done
sleep 1
kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?; RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export failed"; }

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
    a, b = by_stream(f"{w}/replay/{f}"), by_stream(f"{w}/out/{f}")
    if a != b:
        print(f"{f} differs from replay"); ok = False
rej = collections.Counter(json.loads(l)["reason"] for l in open(f"{w}/replay/rejected.jsonl"))
got = collections.Counter(json.loads(l)["reason"] for l in open(f"{w}/dl.jsonl"))
if rej != got:
    print(f"dead letters {dict(got)} vs replay {dict(rej)}"); ok = False
sys.exit(0 if ok else 1)
EOF

# --- the raw frames ------------------------------------------------------------------
# First 5 bytes of the first message of each type on each topic, as hex.
want_hex() { printf '00%08x' "$1"; }
checked=0
check_topic() {   # $1 = topic; every partition, up to 40 messages each
    local topic=$1 parts p off hdr size head type
    parts=$(kcat -b "$BOOT" -L -t "$topic" 2>/dev/null | grep -c 'partition [0-9]* *,' || true)
    [ "$parts" -ge 1 ] || fail "no partitions for $topic"
    for ((p = 0; p < parts; p++)); do
        # offset, size and type of each message (one line each)
        kcat -b "$BOOT" -C -t "$topic" -p "$p" -o beginning -e -q -c 40 -X isolation.level=read_committed \
            -f '%o %S %h\n' 2>/dev/null > "$WORK/msgs" || true
        while read -r off size hdr; do
            [ "$size" -gt 0 ] || continue
            type=${hdr#dpstream.type=}
            # internal, not Avro: never framed (README, Headers and keys)
            case $type in Progress | SnapshotChunk | Layout) continue ;; esac
            [ -n "${ID[$type]:-}" ] || fail "$topic[$p]@$off: unexpected header '$hdr'"
            head=$(kcat -b "$BOOT" -C -t "$topic" -p "$p" -o "$off" -c 1 -e -q -f '%s' 2>/dev/null | head -c 5 | xxd -p)
            [ "$head" = "$(want_hex "${ID[$type]}")" ] \
                || fail "$topic[$p]@$off ($type): starts with $head, expected $(want_hex "${ID[$type]}")"
            checked=$((checked + 1))
            echo "$type" >> "$WORK/types"
        done < "$WORK/msgs"
    done
}
# the updates topic carries no header: every keyed message is an Update
# (the raw invalid line is unkeyed)
read -r UP UO < <(kcat -b "$BOOT" -C -t "$PREFIX.updates" -o beginning -e -q -f '%p %o %k\n' 2>/dev/null \
                  | awk '$3 == "win/a" {print $1, $2; exit}')
[ -n "${UO:-}" ] || fail "no update of win/a found on the updates topic"
head=$(kcat -b "$BOOT" -C -t "$PREFIX.updates" -p "$UP" -o "$UO" -c 1 -e -q -f '%s' | head -c 5 | xxd -p)
[ "$head" = "$(want_hex "${ID[Update]}")" ] || fail "updates topic: an Update starts with $head"
for t in synthetic budget deadletter state; do check_topic "$PREFIX.$t"; done
for t in SyntheticRecord ReleaseManifest BudgetEvent DeadLetter Snapshot; do
    grep -qx "$t" "$WORK/types" || fail "no $t message was checked"
done
echo "PASS run_confluent_framing: $EXPECT releases and $EXPECT_DLQ dead letters identical to replay;" \
     "$checked raw frames carry 0x00 + their configured schema id"
