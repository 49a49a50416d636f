#!/usr/bin/env bash
# run_idle_close.sh — the step timer closes steps through the log
# (docs/design.md §2): with --idle-timeout-ms T a step closes T after it opened,
# whoever reported (docs/privacy.md §1: the boundary depends on no one's
# data).  Input without any CLOSE_STEP marker is fed a step ahead — step
# t + 1's reports arrive while step t is open and are held (lookahead 1) —
# and one individual stops reporting after step 1; the processor must
# append a CLOSE_STEP marker for each stream's open step to the input
# partition, close the step when it reads the marker back, and release
# exactly what `dpstream replay` releases for the input with those markers
# in place.  Also checks that the markers really are in the input topic.
# Usage: bash run_idle_close.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_idle_close.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-idle-$SUFFIX
KEY=1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100
SEED=1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e1d1e
STEPS=4      # steps with data
HORIZON=5    # step 5 has none: the timer closes it all the same
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [
   {"match": "win/idle", "synthesizer": "window",
    "config": {"horizon": $HORIZON, "k": 2, "categories": 2, "rho": 0.5}},
   {"match": "cum/idle", "synthesizer": "cumulative",
    "config": {"horizon": $HORIZON, "rho": 0.5}}
 ]}
EOF
for s in win/idle cum/idle; do
    "$BIN" gen-panel --n 20 --steps $STEPS --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" \
        --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
# Per step: both streams' reports, minus u20's after step 1 (u20 stays in
# the roster and is imputed).  expected.jsonl = the input as the log will
# hold it: steps 1 and 2 are produced together, then step t + 2 right
# after step t is released, so marker t follows step t + 1's reports.
python3 - "$WORK" "$STEPS" "$HORIZON" <<'EOF'
import sys, json
w, steps, horizon = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for f in ("win_idle", "cum_idle") for l in open(f"{w}/{f}.jsonl")]
expected = []
def markers(t):
    return [json.dumps({"stream": s, "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":"))
            for s in ("win/idle", "cum/idle")]
for t in range(1, steps + 1):
    lines = [json.dumps(r, separators=(",", ":")) for r in rows
             if r["step"] == t and not (t > 1 and r["entity"] == "u20")]
    open(f"{w}/step{t}.jsonl", "w").write("\n".join(lines) + "\n")
    expected += lines
    if t >= 2:
        expected += markers(t - 1)
expected += markers(steps)
expected += sum((markers(t) for t in range(steps + 1, horizon + 1)), [])
open(f"{w}/expected.jsonl", "w").write("\n".join(expected) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/expected.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
[ "$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")" -eq $((2 * HORIZON)) ] || fail "replay did not release every step"

"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id idle --idle-timeout-ms 5000 \
    --progress-ms 5000 > "$WORK/run.out" 2> "$WORK/run.err" &
RUN_PID=$!
produced=0
produce_step() {
    "$BIN" produce --config "$WORK/config.json" --input "$WORK/step$1.jsonl" --partitions 2 \
        > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce step $1"; }
    produced=$((produced + $(wc -l < "$WORK/step$1.jsonl")))
}
produce_step 1
produce_step 2
for t in $(seq 1 $HORIZON); do
    deadline=$((SECONDS + 90))
    while :; do
        kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
        n=0
        if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err"; then
            n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
        fi
        [ "$n" -ge $((2 * t)) ] && break
        [ $SECONDS -lt $deadline ] || fail "step $t was not closed by the step timer ($n releases)"
        sleep 0.5
    done
    [ $((t + 2)) -le $STEPS ] && produce_step $((t + 2))
done
kill -TERM "$RUN_PID"
rc=0
wait "$RUN_PID" || rc=$?
RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"

markers=$(grep -c "appended CLOSE_STEP" "$WORK/run.err" || true)
[ "$markers" -ge $((2 * HORIZON)) ] || fail "only $markers step-timer markers logged"
in_topic=$(kcat -b "$BOOT" -C -t "$PREFIX.updates" -e -q -f '%o\n' 2>/dev/null | wc -l)
[ "$in_topic" -eq $((produced + markers)) ] \
    || fail "input topic holds $in_topic messages, expected $produced updates + $markers markers"

"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "final export"; }
python3 - "$WORK" <<'EOF' || fail "idle-closed releases differ from replay of the marked log"
import sys, json, collections
w = sys.argv[1]
def by_stream(path):
    g = collections.defaultdict(list)
    for line in open(path):
        g[json.loads(line)["stream"]].append(line)
    return g
ok = True
for f in ("releases.jsonl", "budget.jsonl"):
    if by_stream(f"{w}/replay/{f}") != by_stream(f"{w}/out/{f}"):
        print(f"{f} differs"); ok = False
if open(f"{w}/dl.jsonl").read():
    print("unexpected dead letters"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "PASS run_idle_close: $((2 * HORIZON)) steps (the last without any report) closed by $markers appended CLOSE_STEP markers, identical to replay"
