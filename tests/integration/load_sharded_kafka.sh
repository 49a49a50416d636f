#!/usr/bin/env bash
# load_sharded_kafka.sh — `dpstream load` of a sharded route on the real
# local broker (docs/kafka.md §10), a 4-partition updates topic:
#   * every update of the sharded stream is keyed stream id ‖ 0x00 ‖ entity
#     id and sits in the partition librdkafka's default partitioner
#     (consistent_random: CRC32 of the key mod 4) gives that key; its
#     entities spread over all 4 partitions and each stays in one;
#   * each of its CLOSE_STEP markers (key stream id ‖ 0x00) is on every
#     partition, after that partition's updates of the step, in step order;
#   * the unsharded stream of the same CSV is keyed by its stream id, all
#     in one partition, one marker per step;
#   * the summary counts each marker once (12 = 6 steps × 2 streams).
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash load_sharded_kafka.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: load_sharded_kafka.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=i40shard$(cut -c1-8 /proc/sys/kernel/random/uuid)
FAIL_LOGS=("$WORK/load.err")

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 4},
 "streams": [{"prefix": "panel/", "synthesizer": "window", "sharded": true,
              "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}},
             {"match": "plain", "synthesizer": "window",
              "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}}]}
EOF
"$BIN" gen-panel --n 60 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream panel/a --out "$WORK/a.jsonl"
"$BIN" gen-panel --n 20 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream plain --out "$WORK/b.jsonl"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
rows = [json.loads(l) for s in "ab" for l in open(f"{w}/{s}.jsonl")]
rows.sort(key=lambda r: r["step"])
with open(f"{w}/panel.csv", "w") as f:
    f.write("stream,year,person,status\n")
    for r in rows:
        f.write(f"{r['stream']},{2010 + r['step']},{r['entity']},{r['value']}\n")
EOF
"$BIN" load --input "$WORK/panel.csv" --stream-column stream --step-column year --step-origin 2011 \
    --entity-column person --value-column status --close-steps --config "$WORK/config.json" \
    > "$WORK/load.out" 2> "$WORK/load.err" || fail "load: exit $?"
grep -q "load: 480 rows, 480 updates written, 12 CLOSE_STEP markers, 0 rejected, 2 streams" "$WORK/load.out" \
    || fail "load summary: $(cat "$WORK/load.out")"

# partition, offset, key length, key, value length, value — binary safe
kcat -b "$BOOT" -C -t "$PREFIX.updates" -e -q -f '%p %o %K %S\n%k%s\n' > "$WORK/dump.bin" \
    || fail "kcat could not read $PREFIX.updates"
python3 - "$WORK/dump.bin" <<'EOF' || fail "the topic's layout"
import sys, zlib
data = open(sys.argv[1], "rb").read()
msgs, i = [], 0
while i < len(data):
    nl = data.index(b"\n", i)
    p, o, kl, vl = (int(x) for x in data[i:nl].split())
    i = nl + 1
    key = data[i:i + kl]; i += kl
    val = data[i:i + vl]; i += vl + 1
    msgs.append((p, o, key, val))
msgs.sort(key=lambda m: (m[0], m[1]))
P = 4
home = lambda key: zlib.crc32(key) % P
problems = []
def check(cond, what):
    if not cond:
        problems.append(what)
sh = [m for m in msgs if m[2].startswith(b"panel/a\0")]
plain = [m for m in msgs if m[2] == b"plain"]
check(len(sh) + len(plain) == len(msgs), "messages with other keys")
data_sh = [m for m in sh if m[2] != b"panel/a\0"]
markers = [m for m in sh if m[2] == b"panel/a\0"]
check(len(data_sh) == 360, f"{len(data_sh)} sharded updates, want 360")
check(all(m[0] == home(m[2]) for m in data_sh), "a sharded update outside its key's partition")
parts = {m[0] for m in data_sh}
check(parts == set(range(P)), f"sharded updates only on partitions {sorted(parts)}")
ent_part = {}
for m in data_sh:
    ent_part.setdefault(m[2], set()).add(m[0])
check(len(ent_part) == 60 and all(len(s) == 1 for s in ent_part.values()), "an entity on two partitions")
check(len(markers) == 6 * P, f"{len(markers)} sharded markers, want {6 * P}")
for p in range(P):
    mine = [m for m in sh if m[0] == p]
    # per partition: 6 markers, in order, each after that step's updates (the step is the
    # Avro value's second field: zig-zag varint after the stream string)
    def step_of(v):
        n = v[0] >> 1
        b = v[1 + n]
        return b >> 1
    seen_marker = 0
    for m in mine:
        s = step_of(m[3])
        if m[2] == b"panel/a\0":
            check(s == seen_marker + 1, f"partition {p}: marker of step {s} after {seen_marker}")
            seen_marker = s
        else:
            check(s == seen_marker + 1, f"partition {p}: an update of step {s} after the marker of {seen_marker}")
    check(seen_marker == 6, f"partition {p}: last marker {seen_marker}")
check(len(plain) == 120 + 6 and {m[0] for m in plain} == {home(b"plain")}, "the unsharded stream moved")
if problems:
    print("\n".join(problems[:20]))
    sys.exit(1)
EOF
echo "PASS: load_sharded_kafka"
