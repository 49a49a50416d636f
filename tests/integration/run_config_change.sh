#!/usr/bin/env bash
# run_config_change.sh — a stream's budget and plan are fixed when it
# starts (README "Operations"); on the real broker:
#   * a window stream (rho 0.5) releases two steps, the processor stops;
#   * restarted with rho 1 — and with the budget given as epsilon — the
#     processor refuses the stream's state: exit 5, a message naming the
#     stream, the changed fields with their old and new values, and what to
#     do (a new stream id; budgets cannot be raised in place);
#   * restarted with the original configuration it resumes, releases the
#     remaining steps, and the outputs are exactly `dpstream replay`'s.
# Needs the broker of scripts/kafka-local.sh.
# Usage: bash run_config_change.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_config_change.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-cfg-$(cut -c1-8 /proc/sys/kernel/random/uuid)
config() {   # $1 = file, $2 = the budget members of the window config
    cat > "$WORK/$1" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 1},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"match": "panel", "synthesizer": "window", "config": {"horizon": 4, "k": 2, $2}}]}
EOF
}
config config.json '"rho": 0.5'
config rho1.json '"rho": 1'
config eps.json '"epsilon": 2'
"$BIN" gen-panel --n 30 --steps 4 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream panel --close-steps \
    --out "$WORK/all.jsonl"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
rows = open(f"{w}/all.jsonl").read().splitlines()
open(f"{w}/first.jsonl", "w").write("\n".join(r for r in rows if json.loads(r)["step"] <= 2) + "\n")
open(f"{w}/rest.jsonl", "w").write("\n".join(r for r in rows if json.loads(r)["step"] > 2) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/all.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null

releases() {
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || { echo 0; return; }
    grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
}
run_until() {   # $1 = releases to wait for
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id cfg --idle-timeout-ms 0 \
        > "$WORK/run.out" 2>> "$WORK/run.err" &
    RUN_PID=$!
    local deadline=$((SECONDS + 90))
    until [ "$(releases)" -ge "$1" ]; do
        kill -0 "$RUN_PID" 2> /dev/null || fail "processor exited early"
        [ $SECONDS -lt $deadline ] || fail "$1 releases did not appear"
        sleep 1
    done
    kill -TERM "$RUN_PID"
    wait "$RUN_PID" || fail "processor exit status after SIGTERM"
    RUN_PID=
}
"$BIN" produce --config "$WORK/config.json" --input "$WORK/first.jsonl" > /dev/null 2>&1 || fail "produce"
run_until 2   # steps 1 (nothing to release before k = 2, an empty manifest) and 2

refused() {   # $1 = config file, $2 = the change the message must name
    local rc=0
    timeout 120 "$BIN" run --config "$WORK/$1" --key-hex "$KEY" --instance-id cfg --idle-timeout-ms 0 \
        > /dev/null 2> "$WORK/refused.err" || rc=$?
    FAIL_LOGS=("$WORK/refused.err")
    [ $rc -eq 5 ] || fail "$1: exited $rc, want 5"
    grep -qF "window stream 'panel': its snapshot was written under another configuration ($2)" "$WORK/refused.err" \
        || fail "$1: the message does not name the change $2"
    grep -q "budgets cannot be raised in place .* new stream id" "$WORK/refused.err" || fail "$1: no advice"
    FAIL_LOGS=("$WORK/run.err")
}
refused rho1.json "rho 0.5 -> 1"
refused eps.json "rho 0.5 -> (absent), epsilon (absent) -> 2"
[ "$(releases)" -eq 2 ] || fail "a refused restart released something"

# the original configuration resumes where the stream stopped
"$BIN" produce --config "$WORK/config.json" --input "$WORK/rest.jsonl" > /dev/null 2>&1 || fail "produce rest"
run_until 4
python3 - "$WORK" <<'EOF' || fail "outputs differ from replay"
import sys
w = sys.argv[1]
for f in ("releases.jsonl", "budget.jsonl"):
    assert open(f"{w}/replay/{f}").read() == open(f"{w}/out/{f}").read(), f
EOF
echo "PASS run_config_change: rho and epsilon changes refused (exit 5) naming the field, old and new value; the original config resumed"
