#!/usr/bin/env bash
# run_instance_id.sh — instance ids on the real broker (README
# "Operations: Scaling"):
#   * without --instance-id and $DPSTREAM_INSTANCE_ID the processor takes
#     the host name (sanitised), says so at startup, and its
#     transactional.id is <group>.<host name> — not a fixed "0" that every
#     other instance would share;
#   * a second processor started with the same id (through
#     $DPSTREAM_INSTANCE_ID) fences the first while it holds an open
#     transaction: the first stops with exit 4, saying that another instance
#     started with its id and what to do, and the second releases the step.
# Needs the broker of scripts/kafka-local.sh.
# Usage: bash run_instance_id.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_instance_id.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-inst-$(cut -c1-8 /proc/sys/kernel/random/uuid)
HOST_ID=$(python3 -c 'import re, socket; print(re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[:64])')
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 1},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"match": "panel", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]}
EOF
"$BIN" gen-panel --n 10 --steps 1 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream panel --close-steps \
    --out "$WORK/step1.jsonl"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step1.jsonl" > /dev/null 2>&1 || fail "produce"

# A: no id given; every transaction waits 15 s before its commit, so that
# B can start while A's first one is open
unset DPSTREAM_INSTANCE_ID
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --idle-timeout-ms 0 --debug-commit-delay-ms 15000 \
    > "$WORK/a.out" 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 60))
until grep -q "assigned 1 partition" "$WORK/run.err"; do
    kill -0 "$RUN_PID" 2> /dev/null || fail "A exited early"
    [ $SECONDS -lt $deadline ] || fail "A was not assigned the partition"
    sleep 0.5
done
grep -qF "instance '$HOST_ID' (this host's name" "$WORK/run.err" || fail "A does not say it took the host name"
grep -qF "transactional.id '$PREFIX.processor.$HOST_ID'" "$WORK/run.err" || fail "A's transactional.id is not <group>.<host>"
sleep 3   # A has consumed step 1 and sits in its open transaction

# B: the same id, from the environment
DPSTREAM_INSTANCE_ID=$HOST_ID "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --idle-timeout-ms 0 \
    > "$WORK/b.out" 2> "$WORK/b.err" &
B_PID=$!
RUN_PIDS+=("$B_PID")
rc=0
deadline=$((SECONDS + 90))
while kill -0 "$RUN_PID" 2> /dev/null; do
    [ $SECONDS -lt $deadline ] || fail "A kept running after B took its instance id"
    sleep 1
done
wait "$RUN_PID" || rc=$?
RUN_PID=
[ $rc -eq 4 ] || fail "A exited $rc after being fenced, want 4"
grep -qF "fenced: another instance started with instance id '$HOST_ID'" "$WORK/run.err" \
    || fail "A does not say it was fenced by an instance with its id"
grep -q "give each its own --instance-id" "$WORK/run.err" || fail "A does not say what to do"
grep -qF "instance '$HOST_ID' (given)" "$WORK/b.err" || { FAIL_LOGS=("$WORK/b.err"); fail "B did not take the given id"; }

# B goes on: step 1 is released once
deadline=$((SECONDS + 90))
while :; do
    kill -0 "$B_PID" 2> /dev/null || { FAIL_LOGS=("$WORK/b.err"); fail "B exited"; }
    n=0
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err"; then
        n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
    fi
    [ "$n" -ge 1 ] && break
    [ $SECONDS -lt $deadline ] || { FAIL_LOGS=("$WORK/b.err"); fail "B did not release step 1"; }
    sleep 1
done
[ "$n" -eq 1 ] || fail "step 1 released $n times"
kill -TERM "$B_PID"
wait "$B_PID" || { FAIL_LOGS=("$WORK/b.err"); fail "B exit status after SIGTERM"; }
echo "PASS run_instance_id: the default id is the host name ($HOST_ID); a second instance with it fenced the first (exit 4, said so)"
