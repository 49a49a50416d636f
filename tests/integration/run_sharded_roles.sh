#!/usr/bin/env bash
# run_sharded_roles.sh — the two roles on the real local broker
# (docs/kafka.md §10): a sharded `window` and a sharded `cumulative`
# stream, and an unsharded `window` stream, on a 4-partition updates topic;
# 2 `run --role ingest` instances and 1 `run --role release` instance.
#   * both ingest instances own partitions before the input is written,
#     and each closes shard steps (publishes statistics): the work really
#     was split;
#   * the release instance releases every step of the sharded streams from
#     all 4 shards' statistics; the ingest role serves the unsharded stream
#     itself, as `--role all` would;
#   * the releases and budget events read back from the output topics are
#     byte-identical to `dpstream replay` of the same input (which treats a
#     sharded route as one stream), stream by stream;
#   * `--role all` refuses the sharded configuration, naming the roles.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_roles.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-roles-$(cut -c1-8 /proc/sys/kernel/random/uuid)
FAIL_LOGS=("$WORK/in1.err" "$WORK/in2.err" "$WORK/rel.err")

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 4},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "delta": 1e-6,
 "streams": [
   {"prefix": "win/", "synthesizer": "window", "sharded": true,
    "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "sharded": true,
    "config": {"horizon": 6, "rho": 0.25}},
   {"match": "plain", "synthesizer": "window",
    "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}}
 ]}
EOF

# --- the refusal of the single process ----------------------------------------------
rc=0
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id all > /dev/null 2> "$WORK/all.err" || rc=$?
[ "$rc" -eq 2 ] || fail "--role all with a sharded route: exit $rc, expected 2"
grep -q "run --role ingest instances and --role release instances" "$WORK/all.err" \
    || fail "--role all's refusal does not point to the roles: $(cat "$WORK/all.err")"

# --- input: 3 streams, 6 steps, CLOSE_STEP markers -----------------------------------
"$BIN" gen-panel --n 60 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream win/a --close-steps \
    --out "$WORK/w.jsonl"
"$BIN" gen-panel --n 50 --steps 6 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream cum/a --close-steps \
    --out "$WORK/c.jsonl"
"$BIN" gen-panel --n 20 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream plain --close-steps \
    --out "$WORK/p.jsonl"
python3 - "$WORK" <<'EOF'
import sys
w = sys.argv[1]
lines = {s: open(f"{w}/{s}.jsonl").read().splitlines() for s in "wcp"}
out = []
while any(lines.values()):   # interleaved
    for s in "wcp":
        if lines[s]:
            out.append(lines[s].pop(0))
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" \
    > /dev/null
EXPECT=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
[ "$EXPECT" -eq 18 ] || fail "replay released $EXPECT steps, expected 18"

# --- the instances ---------------------------------------------------------------------
start() {   # $1 = role, $2 = instance id, $3 = log name
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --role "$1" --instance-id "$2" \
        --chunk-records 7 --idle-timeout-ms 0 --progress-ms 2000 --dlq-commit-ms 300 \
        >> "$WORK/$3.out" 2>> "$WORK/$3.err" &
    RUN_PIDS+=($!)
}
wait_log() {   # $1 = log, $2 = pattern, $3 = what
    local deadline=$((SECONDS + 90))
    until grep -q "$2" "$WORK/$1.err" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $3"
        sleep 1
    done
}
start ingest roles-in1 in1
wait_log in1 "assigned [1-9]" "the first ingest instance's partitions"
start ingest roles-in2 in2
wait_log in2 "assigned [1-9]" "the second ingest instance's partitions"
# the first instance's share after the second joined
deadline=$((SECONDS + 60))
until [ "$(grep -c 'assigned [1-9]' "$WORK/in1.err")" -ge 2 ]; do
    [ $SECONDS -lt $deadline ] || fail "the first ingest instance was not reassigned after the second joined"
    sleep 1
done
start release roles-rel rel
wait_log rel "assigned [1-9]" "the release instance's partitions"

"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 4 \
    > "$WORK/produce.out" 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }

deadline=$((SECONDS + 180))
while :; do
    for p in "${RUN_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "an instance exited early"; done
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err"; then
        n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
        [ "$n" -lt "$EXPECT" ] || break
    fi
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases (have ${n:-0})"
    sleep 2
done
sleep 2   # anything extra (a bug) shows up
for p in "${RUN_PIDS[@]}"; do kill -TERM "$p"; done
for p in "${RUN_PIDS[@]}"; do rc=0; wait "$p" || rc=$?; [ "$rc" -eq 0 ] || fail "an instance exited $rc on SIGTERM"; done
RUN_PIDS=()
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export found an inconsistent release"; }

# --- the work was split, and done by the roles it belongs to ---------------------------------
for i in in1 in2; do
    n=$(grep -c "statistics published" "$WORK/$i.err" || true)
    [ "$n" -gt 0 ] || fail "ingest instance $i closed no shard step: it owned no partition of the input"
done
total=$(cat "$WORK/in1.err" "$WORK/in2.err" | grep -c "statistics published" || true)
[ "$total" -eq 48 ] || fail "the ingest instances published $total shard statistics, expected 48 (2 sharded streams × 6 steps × 4 shards)"
rel=$(grep -c "of sharded stream .* from 4 shards" "$WORK/rel.err" || true)
[ "$rel" -eq 12 ] || fail "the release instance released $rel sharded steps, expected 12"
plain=$(cat "$WORK/in1.err" "$WORK/in2.err" | grep -c "released step [0-9]* of stream 'plain'" || true)
[ "$plain" -eq 6 ] || fail "the ingest role released $plain steps of the unsharded stream, expected 6"

# --- byte-identical to replay, stream by stream ------------------------------------------------
python3 - "$WORK" <<'EOF' || fail "the roles' outputs differ from replay"
import sys, json
w = sys.argv[1]
def by_stream(path):
    g = {}
    for line in open(path):
        g.setdefault(json.loads(line)["stream"], []).append(line)
    return g
ok = True
for f in ["releases.jsonl", "budget.jsonl"]:
    a, b = by_stream(f"{w}/replay/{f}"), by_stream(f"{w}/out/{f}")
    if sorted(a) != sorted(b):
        print(f"{f}: streams differ: {sorted(a)} vs {sorted(b)}"); ok = False; continue
    for s in a:
        if a[s] != b[s]:
            print(f"{f}: stream {s}: {len(a[s])} replay lines vs {len(b[s])} Kafka lines differ"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "ok: 2 ingest + 1 release instances, 18 steps byte-identical to replay"
