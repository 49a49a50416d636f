#!/usr/bin/env bash
# inspect_snapshot.sh — `dpstream inspect-snapshot` and `--log-format json`
# on the real local broker:
#   * the processor runs with a state key (sealed snapshots) over a small
#     panel (two window and one cumulative stream, from gen-panel) with
#     --log-format json: every stderr line is a JSON object (Python's json),
#     with a step_released event for every (stream, step), restore and
#     shutdown events;
#   * inspect-snapshot with the state key: for every stream the ledger it
#     prints (spent, total, units, every entry) equals the stream's budget
#     events on the budget topic — the last one's totals and status, each
#     charged step's spend — and the open step, the key fingerprint and the
#     input offsets agree; the text form says the same; nothing of the state
#     is printed unless --dump-state is given (and then it is labelled);
#     its refusals are JSON events too under --log-format json;
#   * refusals: a wrong state key (exit 5, the seal does not authenticate),
#     no state key (exit 2), another noise key (exit 5), a stream with no
#     snapshot (exit 1); the processor itself refuses the wrong state key
#     with exit 5 and a JSON "fatal" line.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash inspect_snapshot.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: inspect_snapshot.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-inspect-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
KEY2=${KEY%?}0
SEED=1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "streams": [
   {"prefix": "win/", "synthesizer": "window",
    "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative",
    "config": {"horizon": 5, "rho": 0.25}}
 ]}
EOF
"$BIN" keygen --out "$WORK/state.key" 2> /dev/null
"$BIN" keygen --out "$WORK/other.key" 2> /dev/null
: > "$WORK/input.jsonl"
for s in win/a win/b; do
    "$BIN" gen-panel --n 40 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps \
        >> "$WORK/input.jsonl"
done
"$BIN" gen-panel --n 40 --steps 5 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream cum/a --close-steps \
    >> "$WORK/input.jsonl"
EXPECT=17   # 6 + 6 + 5 releases
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 > /dev/null 2> "$WORK/produce.err" \
    || { cat "$WORK/produce.err" >&2; fail "produce failed"; }

# --- run to the end with sealed snapshots and JSON logs ---------------------------------------
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --state-key-file "$WORK/state.key" --instance-id insp \
    --idle-timeout-ms 0 --progress-ms 2000 --log-format json > "$WORK/run.out" 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 180))
while :; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
    erc=0
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || erc=$?
    if [ "$erc" -eq 0 ] && [ "$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)" -ge "$EXPECT" ]; then
        break
    fi
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases"
    sleep 2
done
kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?
RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || fail "final export"

python3 - "$WORK/run.err" "$KEY" <<'EOF' || fail "the processor's JSON log"
import json, sys, collections
path, key = sys.argv[1], sys.argv[2]
ok, ev = True, collections.defaultdict(list)
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    try:
        o = json.loads(line)
    except ValueError as e:
        print(f"line {n} is not JSON: {e}: {line[:200]}"); ok = False; continue
    if list(o)[:3] != ["ts", "level", "event"] or list(o)[-1] != "msg":
        print(f"line {n}: fields {list(o)}"); ok = False
    if key in line:
        print(f"line {n} holds the noise key"); ok = False
    ev[o["event"]].append(o)
rel = collections.defaultdict(list)
for o in ev["step_released"]:
    rel[o["stream"]].append(o["step"])
want = {"win/a": list(range(1, 7)), "win/b": list(range(1, 7)), "cum/a": list(range(1, 6))}
if dict(rel) != want:
    print(f"step_released events {dict(rel)}"); ok = False
for e in ("startup", "subscribed", "restore_start", "restore_done", "rebalance_assign", "partition_resume", "shutdown"):
    if not ev[e]:
        print(f"no {e} event"); ok = False
if not any("sealed with the state key" in o["msg"] for o in ev["startup"]):
    print("the startup summary does not say the state is sealed"); ok = False
if not any(o["msg"] == "stopped cleanly" for o in ev["shutdown"]):
    print("no clean shutdown event"); ok = False
sys.exit(0 if ok else 1)
EOF

# --- inspect: the ledger is the budget topic's ------------------------------------------------
inspect() { "$BIN" inspect-snapshot --config "$WORK/config.json" --timeout-ms 60000 "$@"; }
inspect --state-key-file "$WORK/state.key" --key-hex "$KEY" --json > "$WORK/inspect.json" 2> "$WORK/inspect.err" \
    || { cat "$WORK/inspect.err" >&2; fail "inspect-snapshot: exit $?"; }
python3 - "$WORK/inspect.json" "$WORK/out/budget.jsonl" <<'EOF' || fail "inspected ledgers differ from the budget topic"
import json, sys, collections
doc = json.load(open(sys.argv[1]))
events = collections.defaultdict(list)
for line in open(sys.argv[2]):
    e = json.loads(line)
    events[e["stream"]].append(e)
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print(msg); ok = False
streams = {s["stream"]: s for s in doc["streams"]}
check(sorted(streams) == ["cum/a", "win/a", "win/b"], f"streams {sorted(streams)}")
for sid, s in streams.items():
    ev = sorted(events[sid], key=lambda e: e["step"])
    last = ev[-1]
    led = s["ledger"]
    check(s["error"] is None and s["authenticated"] and s["sealed"], f"{sid}: not opened: {s['error']}")
    check(s["noise_key_checked"] is True and s["key_fingerprint"] == last["key_fingerprint"], f"{sid}: key")
    check(led["spent"] == last["spent_total"] and led["budget"] == last["budget_total"],
          f"{sid}: ledger {led['spent']} of {led['budget']}, budget topic {last['spent_total']} of {last['budget_total']}")
    check(led["spent_units"] == last["spent_units_total"] and led["budget_units"] == last["budget_units"],
          f"{sid}: ledger units {led['spent_units']}/{led['budget_units']}")
    check(led["model"] == last["model"], f"{sid}: model")
    check(led["exhausted"] == (last["status"] == "EXHAUSTED") == s["exhausted"], f"{sid}: exhausted")
    charged = [(e["step"], e["spent_step"], e["spent_units_step"]) for e in ev if e["spent_units_step"] > 0]
    entries = [(x["step"], x["amount"], x["units"]) for x in led["entries"]]
    check(entries == charged, f"{sid}: ledger entries {entries} vs charged steps {charged}")
    check(s["last_closed_step"] == last["step"] and s["open_step"] == last["step"] + 1, f"{sid}: steps")
    check(s["plan"]["budget_total"] == last["budget_total"] and s["plan"]["mechanism"] == last["mechanism"],
          f"{sid}: plan")
    check(s["input_offset"] > 0 and s["progress"] is not None and s["progress"]["position"] >= s["input_offset"],
          f"{sid}: offsets {s['input_offset']} {s['progress']}")
    check(s["updates_topic"].endswith(".updates") and "private_state_hex" not in s, f"{sid}: extra fields")
sys.exit(0 if ok else 1)
EOF

# the text form: the same ledger, no state bytes
inspect --state-key-file "$WORK/state.key" --stream win/a > "$WORK/inspect.txt" 2> "$WORK/inspect_txt.err" \
    || fail "inspect-snapshot (text): exit $?"
grep -q "^stream 'win/a'  window$" "$WORK/inspect.txt" || fail "text: no stream line"
grep -q "not checked: no --key-file" "$WORK/inspect.txt" || fail "text: the noise key should be unchecked"
spent=$(python3 -c 'import json,sys; print(repr([s for s in json.load(open(sys.argv[1]))["streams"] if s["stream"] == "win/a"][0]["ledger"]["spent"]))' "$WORK/inspect.json")
grep -q "zcdp: spent $spent of 0.5" "$WORK/inspect.txt" || fail "text: ledger line ($spent): $(grep ledger "$WORK/inspect.txt")"
[ "$(grep -c "^stream '" "$WORK/inspect.txt")" -eq 1 ] || fail "--stream win/a printed other streams"
if grep -q "PRIVATE" "$WORK/inspect.txt"; then fail "text: private state printed without --dump-state"; fi

# --dump-state: the state, labelled, and only then
inspect --state-key-file "$WORK/state.key" --stream win/a --json --dump-state > "$WORK/dump.json" 2> "$WORK/dump.err" \
    || fail "--dump-state: exit $?"
grep -q "printed the PRIVATE state of stream 'win/a'" "$WORK/dump.err" || fail "--dump-state: no warning on stderr"
python3 - "$WORK/dump.json" "$WORK/inspect.json" "$WORK/inspect.txt" <<'EOF' || fail "--dump-state"
import json, sys
dump = json.load(open(sys.argv[1]))["streams"][0]["private_state_hex"]
assert len(dump) > 200, "no state dumped"
# a slice from the middle of the state must not appear in the default outputs
probe = dump[len(dump) // 2: len(dump) // 2 + 48]
for path in sys.argv[2:]:
    assert probe not in open(path).read(), f"state bytes in {path}"
EOF
inspect --state-key-file "$WORK/state.key" --stream win/a --dump-state > "$WORK/dump.txt" 2> /dev/null \
    || fail "--dump-state (text): exit $?"
grep -q "PRIVATE STATE (--dump-state)" "$WORK/dump.txt" || fail "--dump-state (text): not labelled"

# --- refusals ------------------------------------------------------------------------------------
expect_exit() {   # $1 = code, $2 = what, $3 = text stderr must hold, rest = inspect arguments
    local want=$1 what=$2 needle=$3; shift 3
    local rc=0
    inspect "$@" > "$WORK/x.out" 2> "$WORK/x.err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "$what: exit $rc, want $want ($(head -c 300 "$WORK/x.err"))"
    grep -qF -- "$needle" "$WORK/x.err" || fail "$what: stderr lacks '$needle': $(head -c 300 "$WORK/x.err")"
}
expect_exit 5 "a wrong state key" "does not authenticate under the configured state key" \
    --state-key-file "$WORK/other.key" --json
python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["streams"]:
    assert s["error"] and not s["authenticated"] and "ledger" not in s, s
' "$WORK/x.out" || fail "a wrong state key: a ledger was printed"
rc=0
inspect --state-key-file "$WORK/other.key" --stream win/a --log-format json > /dev/null 2> "$WORK/xj.err" || rc=$?
[ "$rc" -eq 5 ] || fail "a wrong state key (JSON log): exit $rc"
python3 - "$WORK/xj.err" <<'EOF' || fail "inspect-snapshot's refusal under --log-format json"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
refused = [o for o in lines if o["event"] == "snapshot_refused"]
assert len(refused) == 1 and refused[0]["stream"] == "win/a" and refused[0]["step"] == 6, lines
EOF
expect_exit 2 "no state key" "give the state key (--state-key-file)"
expect_exit 5 "another noise key" "another noise key" --state-key-file "$WORK/state.key" --key-hex "$KEY2"
expect_exit 1 "a stream without a snapshot" "no snapshot of stream 'win/zzz'" \
    --state-key-file "$WORK/state.key" --stream win/zzz

# the processor refuses the wrong state key too, with a JSON fatal line
rc=0
timeout 120 "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --state-key-file "$WORK/other.key" \
    --instance-id insp2 --idle-timeout-ms 0 --log-format json > /dev/null 2> "$WORK/refused.err" || rc=$?
[ "$rc" -eq 5 ] || fail "run with the wrong state key: exit $rc, want 5"
python3 - "$WORK/refused.err" <<'EOF' || fail "run's refusal under --log-format json"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
fatal = [o for o in lines if o["event"] == "fatal"]
assert len(fatal) == 1 and fatal[0]["level"] == "error" and "authenticate" in fatal[0]["msg"], fatal
EOF
echo "PASS inspect_snapshot: ledgers equal the budget topic for 3 streams; JSON logs parse; refusals as documented"
