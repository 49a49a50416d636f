#!/usr/bin/env bash
# run_partition_change.sh — the updates topic's partition count may not
# change under a running deployment (streams are pinned to partitions by
# their key's hash modulo that count; README "Operations"):
#   * the processor releases a step of two streams on a 2-partition topic;
#   * the topic grows to 3 partitions while it runs: on the rebalance that
#     follows, it stops before consuming anything more — exit 5, a message
#     naming the topics, both counts (the state topic keeps the old one:
#     state partition i holds updates partition i's state) and what to do;
#   * a restart refuses the same way at once, and nothing was released
#     after the change.
# Needs the broker of scripts/kafka-local.sh and kafka_admin (built next to
# the dpstream binary).  Usage: bash run_partition_change.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_partition_change.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
ADMIN=$(dirname "$BIN")/kafka_admin
[ -x "$ADMIN" ] || fail "kafka_admin not built next to $BIN"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-parts-$(cut -c1-8 /proc/sys/kernel/random/uuid)
# a short metadata refresh, so that the running consumer notices the new
# partition within seconds (librdkafka's default is 5 minutes)
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 2},
 "kafka": {"session.timeout.ms": "6000", "topic.metadata.refresh.interval.ms": "2000"},
 "streams": [{"prefix": "s/", "synthesizer": "window", "config": {"horizon": 4, "k": 1, "rho": 1}}]}
EOF
for s in s/a s/b; do
    "$BIN" gen-panel --n 10 --steps 1 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps \
        --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
cat "$WORK/s_a.jsonl" "$WORK/s_b.jsonl" > "$WORK/step1.jsonl"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step1.jsonl" > /dev/null 2>&1 || fail "produce"
[ "$("$ADMIN" "$BOOT" partitions "$PREFIX.updates")" = 2 ] || fail "updates topic not created with 2 partitions"

releases() {
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || { echo 0; return; }
    grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
}
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id parts --idle-timeout-ms 0 \
    > "$WORK/run.out" 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 90))
until [ "$(releases)" -ge 2 ]; do
    kill -0 "$RUN_PID" 2> /dev/null || fail "processor exited early"
    [ $SECONDS -lt $deadline ] || fail "step 1 of both streams was not released"
    sleep 1
done

# grow the topic under the running processor
"$ADMIN" "$BOOT" add-partitions "$PREFIX.updates" 3 || fail "could not add a partition"
rc=0
deadline=$((SECONDS + 120))
while kill -0 "$RUN_PID" 2> /dev/null; do
    [ $SECONDS -lt $deadline ] || fail "the processor kept running after the partition count changed"
    sleep 1
done
wait "$RUN_PID" || rc=$?
RUN_PID=
[ $rc -eq 5 ] || fail "processor exited $rc after the partition count changed, want 5"
want="the updates topic $PREFIX.updates has 3 partitions, but the state topic $PREFIX.state has 2"
grep -qF "$want" "$WORK/run.err" || fail "no message naming the topic and both counts"
grep -q "run the new partitioning as a new deployment .* topics.prefix" "$WORK/run.err" \
    || fail "the message does not say what to do"

# a restart refuses at once
start=$SECONDS
rc=0
timeout 120 "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id parts --idle-timeout-ms 0 \
    > /dev/null 2> "$WORK/run2.err" || rc=$?
[ $rc -eq 5 ] || { FAIL_LOGS=("$WORK/run2.err"); fail "restart exited $rc, want 5"; }
grep -qF "$want" "$WORK/run2.err" || { FAIL_LOGS=("$WORK/run2.err"); fail "restart: no message"; }
[ $((SECONDS - start)) -lt 60 ] || fail "the restart took $((SECONDS - start)) s to refuse"
[ "$(releases)" -eq 2 ] || fail "something was released after the partition count changed"
echo "PASS run_partition_change: 2 -> 3 partitions stopped the running processor (exit 5) and its restart, naming both counts"
