#!/usr/bin/env bash
# run_end_to_end.sh — `dpstream run` on the real local Kafka broker,
# checked against `dpstream replay` on the same input and key:
#   * four streams (two window, two cumulative) over a 4-partition updates
#     topic, plus bad input of every kind the replay also rejects;
#   * a fifth stream produced as one contiguous block, so that the
#     processor ingests it in long runs (handle_batch), whose route closes
#     a step when its roster is complete (close_on_complete_roster), with a
#     report that follows its step's roster completion in the same run:
#     sequential handling calls it LATE, and so must the batched path;
#   * the processor runs until every step is released, then SIGTERM:
#     exit 0, group left;
#   * committed outputs (read_committed, `dpstream export`): every step
#     released exactly once, chunks and record counts match each manifest
#     (export checks), budget spends add up to each stream's rho and the
#     last event says EXHAUSTED;
#   * the releases and budget events of every stream are byte-identical
#     to `dpstream replay` (compared stream by stream: Kafka orders only
#     within a partition);
#   * every rejected input is in the dead-letter topic with the reason the
#     replay gives it (as a multiset per reason), with its source offset;
#   * a restart restores every stream from the state topic and releases
#     nothing twice (outputs unchanged).
# Needs the broker of scripts/kafka-local.sh (scripts/test.sh starts it);
# only ever talks to 127.0.0.1.  Topic names carry a random suffix, which
# names topics only and never affects an output.
# Usage: bash run_end_to_end.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_end_to_end.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-e2e-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"bootstrap.servers": "127.0.0.1:1", "session.timeout.ms": "6000",
           "group.id": "$PREFIX.group"},
 "delta": 1e-6,
 "streams": [
   {"match": "win/solo", "synthesizer": "window", "close_on_complete_roster": true,
    "config": {"horizon": 6, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "win/", "synthesizer": "window",
    "config": {"horizon": 6, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative",
    "config": {"horizon": 6, "rho": 0.25}}
 ]}
EOF
# (bootstrap.servers in the file is deliberately wrong: the environment
# override DPSTREAM_BOOTSTRAP_SERVERS must win.)

# --- input: four streams, interleaved, with bad lines ---------------------------
for s in win/a win/b cum/a cum/b win/solo; do
    "$BIN" gen-panel --n 40 --steps 6 --categories 2 --stay 0.85 --seed-hex "$SEED" \
        --stream "$s" --close-steps --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
python3 - "$WORK" <<'EOF'
import sys, json
w = sys.argv[1]
streams = ["win_a", "win_b", "cum_a", "cum_b"]
lines = {s: open(f"{w}/{s}.jsonl").read().splitlines() for s in streams}
out = []
# round-robin interleave, so streams sharing a partition alternate
i = 0
while any(lines.values()):
    for s in streams:
        if lines[s]:
            out.append(lines[s].pop(0))
    i += 1
    if i == 30:   # bad input in the middle of step 1
        out.append('{"stream":"win/a","step":1,"kind":"REPORT","entity":"u1","value":1}')      # DUPLICATE_REPORT
        out.append('{"stream":"other/x","step":1,"kind":"REPORT","entity":"u1","value":0}')    # UNKNOWN_STREAM
        out.append('{"stream":"win/b","step":1,"kind":"REPORT","entity":"u9","value":7}')      # OUT_OF_DOMAIN
        out.append('{"stream":"cum/a","step":3,"kind":"REPORT","entity":"u2","value":1}')      # FUTURE_STEP
        out.append('this is not an update')                                                   # MALFORMED
    if i == 150:  # late data and a wrong-kind update after step 1 closed
        out.append('{"stream":"win/a","step":1,"kind":"REPORT","entity":"u3","value":0}')      # LATE
        out.append('{"stream":"cum/b","step":4,"kind":"INSERT","row":[1]}')                    # FUTURE_STEP or WRONG_KIND
        out.append('{"stream":"win/b","step":2,"kind":"REPORT","entity":"nobody","value":0}')  # UNKNOWN_ENTITY or LATE
# after the horizon: EXHAUSTED
out.append('{"stream":"cum/a","step":7,"kind":"REPORT","entity":"u1","value":1}')
# win/solo in one block; right after the last report of step 2 (which
# completes the roster and so closes the step) a second report for step 2
solo = open(f"{w}/win_solo.jsonl").read().splitlines()
step2 = [k for k, l in enumerate(solo) if json.loads(l).get("step") == 2 and json.loads(l)["kind"] == "REPORT"]
again = json.loads(solo[step2[0]])
again["value"] = 1 - again["value"]
solo.insert(step2[-1] + 1, json.dumps(again, separators=(",", ":")))
out.extend(solo)
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF

"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
EXPECT_RELEASES=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
EXPECT_REJECTS=$(wc -l < "$WORK/replay/rejected.jsonl")
[ "$EXPECT_RELEASES" -eq 30 ] || fail "replay released $EXPECT_RELEASES steps, expected 30"
grep -q '"reason":"LATE".*win/solo\|win/solo.*"reason":"LATE"' "$WORK/replay/rejected.jsonl" \
    || fail "replay does not reject win/solo's report after its roster completed as LATE"
[ "$EXPECT_REJECTS" -ge 8 ] || fail "replay rejected only $EXPECT_REJECTS lines"

"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 4 --raw-invalid \
    > "$WORK/produce.out" 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }

# --- run until everything is released --------------------------------------------
run_processor() {
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id e2e \
        --chunk-records 7 --idle-timeout-ms 0 --progress-ms 2000 --dlq-commit-ms 300 \
        >> "$WORK/run.out" 2>> "$WORK/run.err" &
    RUN_PID=$!
}
wait_for_releases() {   # $1 = expected manifests, $2 = expected dead letters
    local deadline=$((SECONDS + 180))
    while [ $SECONDS -lt $deadline ]; do
        kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
        local erc=0
        "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" || erc=$?
        if [ "$erc" -eq 0 ]; then
            local n d
            n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
            d=$(wc -l < "$WORK/dl.jsonl")
            if [ "$n" -ge "$1" ] && [ "$d" -ge "$2" ]; then return 0; fi
        fi
        sleep 2
    done
    fail "timed out waiting for $1 releases and $2 dead letters"
}
stop_processor() {
    kill -TERM "$RUN_PID"
    local rc=0
    wait "$RUN_PID" || rc=$?
    RUN_PID=
    [ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
}

run_processor
wait_for_releases "$EXPECT_RELEASES" "$EXPECT_REJECTS"
sleep 1   # let anything extra (a bug) show up before we stop
stop_processor
grep -q "stopped cleanly" "$WORK/run.err" || fail "no clean-shutdown line"
grep -q "progress:" "$WORK/run.err" || fail "no progress line at info level"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export found an inconsistent release"; }

# --- compare with replay, stream by stream -------------------------------------------
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
    if sorted(a) != sorted(b):
        print(f"{f}: streams differ: {sorted(a)} vs {sorted(b)}"); ok = False; continue
    for s in a:
        if a[s] != b[s]:
            print(f"{f}: stream {s}: {len(a[s])} replay lines vs {len(b[s])} Kafka lines differ"); ok = False
# each step once, in order; spends add up to the budget; last event EXHAUSTED
rho = {"win": 0.5, "cum": 0.25}
for s, evs in by_stream(f"{w}/out/budget.jsonl").items():
    evs = [json.loads(e) for e in evs]
    steps = [e["step"] for e in evs]
    if steps != list(range(1, 7)):
        print(f"budget {s}: steps {steps}"); ok = False
    total = sum(e["spent_step"] for e in evs)
    if abs(total - rho[s[:3]]) > 1e-9 or abs(evs[-1]["spent_total"] - rho[s[:3]]) > 1e-9:
        print(f"budget {s}: spends add up to {total}, expected {rho[s[:3]]}"); ok = False
    if evs[-1]["status"] != "EXHAUSTED" or any(e["status"] != "ACTIVE" for e in evs[:-1]):
        print(f"budget {s}: statuses {[e['status'] for e in evs]}"); ok = False
# dead letters: same reasons as the replay's rejections, source offsets unique
rej = collections.Counter(json.loads(l)["reason"] for l in open(f"{w}/replay/rejected.jsonl"))
dl = [json.loads(l) for l in open(f"{w}/dl.jsonl")]
got = collections.Counter(d["reason"] for d in dl)
if rej != got:
    print(f"dead letters {dict(got)} vs replay rejections {dict(rej)}"); ok = False
offs = [(d["partition"], d["offset"]) for d in dl]
if len(set(offs)) != len(offs):
    print("a dead letter was published twice"); ok = False
if any(not d["topic"].endswith(".updates") for d in dl):
    print("dead letter without its source topic"); ok = False
bad = [d for d in dl if d["reason"] == "MALFORMED"]
if not bad or bytes.fromhex(bad[0]["raw_hex"]) != b"this is not an update":
    print("MALFORMED dead letter does not carry the raw bytes"); ok = False
sys.exit(0 if ok else 1)
EOF

# --- restart: restores from the state topic, releases nothing twice ------------------
cp -r "$WORK/out" "$WORK/out1"
cp "$WORK/dl.jsonl" "$WORK/dl1.jsonl"
run_processor
deadline=$((SECONDS + 60))
until grep -q "restored 5 stream(s)" "$WORK/run.err"; do
    [ $SECONDS -lt $deadline ] || fail "restart did not restore the 5 streams"
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early on restart"
    sleep 1
done
sleep 4
stop_processor
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" || fail "export after restart"
for f in releases.jsonl budget.jsonl; do
    cmp -s "$WORK/out1/$f" "$WORK/out/$f" || fail "restart changed $f"
done
cmp -s "$WORK/dl1.jsonl" "$WORK/dl.jsonl" || fail "restart changed the dead letters"
[ ! -e "$WORK/out/deadletter.jsonl" ] || fail "dead letters were written into the shared output directory"
# every budget event names the key by its fingerprint, never the key
python3 - "$WORK" "$KEY" <<'EOF' || fail "budget events do not carry the key's fingerprint"
import json, sys
w, key = sys.argv[1], sys.argv[2]
fps = {json.loads(l)["key_fingerprint"] for l in open(f"{w}/out/budget.jsonl")}
sys.exit(0 if len(fps) == 1 and len(next(iter(fps))) == 32 and next(iter(fps)) not in key else 1)
EOF

# --- refusals: another key, another updates topic, with the state already there -----
refused() {   # $1 = what, $2 = log, $3.. = the run command; the run must exit non-zero naming a stream
    local rc=0
    timeout 90 "${@:3}" > /dev/null 2> "$2" || rc=$?
    [ "$rc" -eq 5 ] || fail "$1: processor did not refuse with exit 5 (a privacy refusal; exit $rc)"
    grep -q "stream 'win/\\|stream 'cum/" "$2" || { tail -5 "$2" >&2; fail "$1: the refusal does not name the stream"; }
}
KEY2=${KEY%?}0
refused "restart with another key" "$WORK/key2.err" \
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY2" --instance-id e2e --idle-timeout-ms 0
grep -q "another noise key" "$WORK/key2.err" || fail "restart with another key: wrong reason"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
c = json.load(open(f"{w}/config.json"))
c["topics"]["updates"] = c["topics"]["prefix"] + ".updates-v2"
json.dump(c, open(f"{w}/config2.json", "w"))
EOF
# as many partitions as the state topic (a differing count is refused
# before any state is read: run_partition_change.sh)
"$BIN" produce --config "$WORK/config2.json" --input "$WORK/win_a.jsonl" --partitions 4 > /dev/null 2>&1 \
    || fail "produce to the renamed updates topic"
refused "changed updates topic" "$WORK/topic2.err" \
    "$BIN" run --config "$WORK/config2.json" --key-hex "$KEY" --instance-id e2e2 --idle-timeout-ms 0
grep -q "built from updates topic" "$WORK/topic2.err" || fail "changed updates topic: wrong reason"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" || fail "export after refusals"
for f in releases.jsonl budget.jsonl; do
    cmp -s "$WORK/out1/$f" "$WORK/out/$f" || fail "a refused start released something ($f)"
done
echo "PASS run_end_to_end: $EXPECT_RELEASES releases and $EXPECT_REJECTS dead letters identical to replay; restart exact"
