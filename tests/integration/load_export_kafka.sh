#!/usr/bin/env bash
# load_export_kafka.sh — the connectors on the real local broker:
#   CSV --(dpstream load --config: Avro Updates, idempotent producer)--> updates topic
#   --(dpstream run)--> synthetic + budget topics
#   --(dpstream export, read_committed)--> files
# must equal, byte for byte, `dpstream load --out` -> `dpstream replay` on
# the same CSV and key (releases.jsonl and budget.jsonl), and the
# per-step layout written by `export --follow` (stopped by SIGTERM, exit 0)
# must hold exactly the replayed records.  A loader pointed at a dead
# broker must fail fast with exit 4 and say so, not exit 0 or hang.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash load_export_kafka.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: load_export_kafka.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=h10load$(cut -c1-8 /proc/sys/kernel/random/uuid)

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"}, "delta": 1e-6,
 "streams": [{"prefix": "panel/", "synthesizer": "window",
              "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}}]}
EOF
# two streams in one CSV (so two keys, possibly two partitions)
for s in a b; do
    "$BIN" gen-panel --n 50 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream "panel/$s" \
        --out "$WORK/$s.jsonl"
done
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
rows = [json.loads(l) for s in "ab" for l in open(f"{w}/{s}.jsonl")]
rows.sort(key=lambda r: r["step"])   # stable: a's rows before b's within a step
with open(f"{w}/panel.csv", "w") as f:
    f.write("stream,year,person,status\n")
    for r in rows:
        f.write(f"{r['stream']},{2010 + r['step']},{r['entity']},{r['value']}\n")
EOF
LOAD_ARGS=(--input "$WORK/panel.csv" --stream-column stream --step-column year --step-origin 2011
           --entity-column person --value-column status --close-steps --quiet)
"$BIN" load "${LOAD_ARGS[@]}" --out "$WORK/updates.jsonl" > /dev/null
"$BIN" replay --config "$WORK/config.json" --input "$WORK/updates.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
[ "$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")" -eq 12 ] || fail "replay did not release 12 steps"

"$BIN" load "${LOAD_ARGS[@]}" --config "$WORK/config.json" > "$WORK/load.out" 2> "$WORK/load.err" \
    || fail "load to Kafka failed: $(cat "$WORK/load.err")"
grep -q "load: 600 rows, 600 updates written, 12 CLOSE_STEP markers, 0 rejected, 2 streams" "$WORK/load.out" \
    || fail "load summary: $(cat "$WORK/load.out")"

"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id h10 --idle-timeout-ms 0 \
    > "$WORK/run.out" 2> "$WORK/run.err" &
RUN_PID=$!
"$BIN" export --config "$WORK/config.json" --out "$WORK/follow" --layout per-step --format jsonl --follow \
    > "$WORK/follow.out" 2> "$WORK/follow.err" &
FOLLOW_PID=$!
RUN_PIDS+=("$FOLLOW_PID")
deadline=$((SECONDS + 120))
while :; do
    kill -0 "$RUN_PID" 2> /dev/null || fail "processor exited early"
    rc=0
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)" -ge 12 ]; then break; fi
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for 12 releases"
    sleep 2
done
kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "processor exit status after SIGTERM"
sleep 2
kill -TERM "$FOLLOW_PID"
frc=0
wait "$FOLLOW_PID" || frc=$?
[ $frc -eq 0 ] || fail "export --follow exited $frc after SIGTERM: $(cat "$WORK/follow.err")"

python3 - "$WORK" <<'EOF' || fail "Kafka outputs differ from replay"
import collections, glob, json, sys
w = sys.argv[1]
def by_stream(path):
    g = collections.defaultdict(list)
    for line in open(path):
        g[json.loads(line)["stream"]].append(line)
    return g
# Kafka orders only within a partition: compare stream by stream
for name in ("releases.jsonl", "budget.jsonl"):
    a, b = by_stream(f"{w}/replay/{name}"), by_stream(f"{w}/out/{name}")
    assert a == b, name
rep = by_stream(f"{w}/replay/releases.jsonl")
for s, d in (("panel/a", "panel%2Fa"), ("panel/b", "panel%2Fb")):
    want = [l for l in rep[s] if '"type":"record"' in l]
    got = [l for f in sorted(glob.glob(f"{w}/follow/{d}/step-*.jsonl")) for l in open(f)]
    assert got == want, s
EOF

# a dead broker: never a silent exit 0, and no wait for librdkafka's
# delivery timeout either: the loader asks for the brokers first and stops
# within its connect timeout, saying whom it could not reach (exit 4)
set +e
start=$SECONDS
DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 120 "$BIN" load "${LOAD_ARGS[@]}" --config "$WORK/config.json" \
    --connect-timeout-ms 3000 > /dev/null 2> "$WORK/dead.err"
rc=$?
set -e
[ $rc -eq 4 ] || fail "load to a dead broker exited $rc: $(cat "$WORK/dead.err")"
[ $((SECONDS - start)) -lt 20 ] || fail "load to a dead broker took $((SECONDS - start)) s"
grep -q "cannot reach 127.0.0.1:1 (.*Connection refused" "$WORK/dead.err" \
    || fail "no 'cannot reach' message: $(cat "$WORK/dead.err")"
echo "load_export_kafka: ok"
