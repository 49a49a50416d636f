#!/usr/bin/env bash
# run_standby.sh — an instance the group assigns nothing (more instances
# than partitions: README "Operations: Scaling", "the rest stand by") is
# restored at once and keeps running: its restore of no partitions reads
# nothing and asks the broker nothing (librdkafka refuses an empty
# ListOffsets), where it used to retry for 30 s and stop with "restoring
# assigned partitions failed".  Which of the two the group gives the
# partition is the assignor's choice; the other stands by.  Then the worker
# is stopped and the standby takes the partition over and releases the
# next step.
# Usage: bash run_standby.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_standby.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-standby-$(cut -c1-8 /proc/sys/kernel/random/uuid)
cat > "$WORK/config.json" <<JEOF
{"topics": {"prefix": "$PREFIX", "partitions": 1},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"match": "panel", "synthesizer": "window", "config": {"horizon": 4, "k": 1, "rho": 1}}]}
JEOF
"$BIN" gen-panel --n 10 --steps 2 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream panel --close-steps \
    --out "$WORK/panel.jsonl"
python3 - "$WORK" <<'PYEOF'
import sys, json
w = sys.argv[1]
rows = open(f"{w}/panel.jsonl").read().splitlines(True)
for t in (1, 2):
    open(f"{w}/step{t}.jsonl", "w").write("".join(l for l in rows if json.loads(l)["step"] == t))
PYEOF
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step1.jsonl" > /dev/null 2>&1 || fail "produce"
releases() {
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || { echo 0; return; }
    grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
}
start() {   # $1 = instance id
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id "$1" --idle-timeout-ms 0 \
        > /dev/null 2> "$WORK/$1.err" &
    STARTED=$!
    RUN_PIDS+=("$STARTED")
}
wait_log() {   # $1 = log, $2 = pattern, $3 = seconds
    local deadline=$((SECONDS + $3))
    until grep -q "$2" "$1" 2> /dev/null; do
        [ $SECONDS -lt $deadline ] || { FAIL_LOGS=("$1"); fail "'$2' not in $(basename "$1") within $3 s"; }
        sleep 0.2
    done
}
start a
PID_A=$STARTED
wait_log "$WORK/a.err" "assigned 1 partition" 60
deadline=$((SECONDS + 60))
until [ "$(releases)" -ge 1 ]; do
    [ $SECONDS -lt $deadline ] || fail "A did not release step 1"
    sleep 1
done
start b
PID_B=$STARTED
deadline=$((SECONDS + 30))
until grep -q "assigned 0 partition" "$WORK/a.err" "$WORK/b.err"; do
    [ $SECONDS -lt $deadline ] || { FAIL_LOGS=("$WORK/a.err" "$WORK/b.err"); fail "neither instance stood by within 30 s"; }
    sleep 0.2
done
if grep -q "assigned 0 partition" "$WORK/b.err"; then
    standby=b PID_S=$PID_B PID_W=$PID_A
else
    standby=a PID_S=$PID_A PID_W=$PID_B
fi
wait_log "$WORK/$standby.err" "restored 0 stream(s)" 5
sleep 3
kill -0 "$PID_S" 2> /dev/null || { FAIL_LOGS=("$WORK/$standby.err"); fail "the standby ($standby) stopped"; }
! grep -q "restoring assigned partitions failed\|cannot read watermarks" "$WORK/$standby.err" \
    || { FAIL_LOGS=("$WORK/$standby.err"); fail "the standby's empty restore failed"; }

# the worker leaves; the standby takes over and releases step 2
kill -TERM "$PID_W"
wait "$PID_W" || fail "the worker exited $? after SIGTERM"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step2.jsonl" > /dev/null 2>&1 || fail "produce step 2"
deadline=$((SECONDS + 60))
until [ "$(releases)" -ge 2 ]; do
    [ $SECONDS -lt $deadline ] || { FAIL_LOGS=("$WORK/$standby.err"); fail "the standby did not take over and release step 2"; }
    sleep 1
done
grep -q "restored 1 stream(s)" "$WORK/$standby.err" || { FAIL_LOGS=("$WORK/$standby.err"); fail "the standby did not restore the stream"; }
kill -TERM "$PID_S"
wait "$PID_S" || fail "the standby exited $? after SIGTERM"
echo "PASS run_standby: an instance assigned nothing ($standby) restored at once and stood by, then took over and released step 2"
