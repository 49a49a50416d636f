#!/usr/bin/env bash
# replay_cli.sh — `dpstream replay` end to end (and `gen-panel`):
#   * same key + input → byte-identical releases/budget/rejected files;
#     a different key changes the releases;
#   * every bad line lands in rejected.jsonl with its line number and reason
#     (MALFORMED, UNKNOWN_STREAM, UNKNOWN_ENTITY, DUPLICATE_REPORT,
#     OUT_OF_DOMAIN, LATE, FUTURE_STEP, EXHAUSTED), good lines around them
#     are still used;
#   * each manifest's record_count matches its records, one budget event per
#     manifest, duplicate CLOSE_STEP markers are ignored, and the open step
#     at end of input is not released;
#   * gen-panel is deterministic in its seed.
# Usage: bash replay_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: replay_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KEY1=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
KEY2=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e20
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- gen-panel: deterministic, seed-dependent, usage errors -----------------
"$BIN" gen-panel --n 40 --steps 4 --categories 2 --stay 0.9,0.6 --seed-hex "$SEED" \
    --stream panel --close-steps --out "$WORK/panel.jsonl"
"$BIN" gen-panel --n 40 --steps 4 --categories 2 --stay 0.9,0.6 --seed-hex "$SEED" \
    --stream panel --close-steps > "$WORK/panel2.jsonl"
cmp -s "$WORK/panel.jsonl" "$WORK/panel2.jsonl" || fail "gen-panel is not deterministic"
[ "$(wc -l < "$WORK/panel.jsonl")" -eq $((40 * 4 + 4)) ] || fail "gen-panel line count"
"$BIN" gen-panel --n 40 --steps 4 --categories 2 --stay 0.9,0.6 --seed-hex "${SEED%?}0" \
    --stream panel --close-steps > "$WORK/panel3.jsonl"
cmp -s "$WORK/panel.jsonl" "$WORK/panel3.jsonl" && fail "gen-panel ignores its seed"
if "$BIN" gen-panel --n 40 --steps 4 --categories 2 --stay 1.5 --seed-hex "$SEED" > /dev/null 2>&1; then
    fail "gen-panel accepted --stay 1.5"
fi
"$BIN" gen-panel --n 30 --steps 5 --categories 2 --stay 0.8 --seed-hex "$SEED" \
    --stream cum/a --close-steps > "$WORK/cum.jsonl"

cat > "$WORK/config.json" <<'EOF'
{"topics": {"prefix": "test"},
 "delta": 1e-6,
 "streams": [
   {"match": "panel", "synthesizer": "window",
    "config": {"horizon": 4, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative",
    "config": {"horizon": 6, "rho": 0.5}}
 ]}
EOF

# --- build an input with bad lines at known places ---------------------------
# Expected rejections are written next to the input as "line reason".
python3 - "$WORK" <<'EOF'
import json, sys
work = sys.argv[1]
panel = open(f"{work}/panel.jsonl").read().splitlines()
cum = open(f"{work}/cum.jsonl").read().splitlines()
out, expect = [], []
def add(line, reason=None):
    out.append(line)
    if reason:
        expect.append((len(out), reason))
def rep(stream, step, entity, value):
    return json.dumps({"stream": stream, "step": step, "kind": "REPORT", "entity": entity, "value": value},
                      separators=(",", ":"))
# steps of each generated file, in order
def by_step(lines):
    steps = {}
    for l in lines:
        steps.setdefault(json.loads(l)["step"], []).append(l)
    return steps
P, C = by_step(panel), by_step(cum)
add('{"stream":"panel","step":1,"kind":"REPORT","entity":"u1","value":', "MALFORMED")
add("not json at all", "MALFORMED")
add('{"stream":"panel","step":1,"kind":"REPORT","entity":"u1","valeu":1}', "MALFORMED")
add(rep("nope", 1, "u1", 0), "UNKNOWN_STREAM")
add(rep("cum", 1, "u1", 0), "UNKNOWN_STREAM")          # prefix is "cum/"
add(rep("panel", 3, "u1", 0), "FUTURE_STEP")           # two steps ahead of the open step 1
add(rep("panel", 2, "u998", 0), "UNKNOWN_ENTITY")       # the next step: held, judged when step 2 opens
add("")                                                 # blank lines are skipped
for l in P[1]: add(l)                                   # roster = u1..u40, then CLOSE_STEP
for l in C[1]: add(l)
add(rep("panel", 1, "u2", 1), "LATE")
add(json.dumps({"stream": "panel", "step": 1, "kind": "CLOSE_STEP"}, separators=(",", ":")))  # duplicate: ignored
add(rep("panel", 2, "u999", 0), "UNKNOWN_ENTITY")
add(rep("panel", 2, "u3", 7), "OUT_OF_DOMAIN")
add(rep("panel", 2, "u3", -1), "OUT_OF_DOMAIN")
add(json.dumps({"stream": "panel", "step": 2, "kind": "INSERT", "entity": "u3", "row": [0, 1]}, separators=(",", ":")),
    "WRONG_KIND")
add(json.dumps({"stream": "panel", "step": 3, "kind": "CLOSE_STEP"}, separators=(",", ":")), "FUTURE_STEP")
rest = P[2]
add(rest[0])
add(rest[0], "DUPLICATE_REPORT")
for l in rest[1:]: add(l)      # a complete roster does not close the step (opt-in only): its marker does
for s in (3, 4):
    for l in P[s]: add(l)
add(rep("panel", 5, "u1", 0), "EXHAUSTED")             # horizon 4 used up
for s in (2, 3, 4):
    for l in C[s]: add(l)
# step 5 of cum/a: all but the last report, no marker -> stays open at end of input
for l in C[5][:-2]: add(l)
open(f"{work}/input.jsonl", "w").write("\n".join(out) + "\n")
open(f"{work}/expect.txt", "w").write("".join(f"{n} {r}\n" for n, r in expect))
EOF

# --- run: determinism, key dependence ------------------------------------------
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/run1" --key-hex "$KEY1" > "$WORK/summary1.txt"
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/run2" --key-hex "$KEY1" > /dev/null
printf '%s' "$KEY2" > "$WORK/key2.hex"
chmod 600 "$WORK/key2.hex"
"$BIN" replay --config "$WORK/config.json" --input - --out "$WORK/run3" --key-file "$WORK/key2.hex" < "$WORK/input.jsonl" > /dev/null
for f in releases.jsonl budget.jsonl rejected.jsonl; do
    [ -s "$WORK/run1/$f" ] || fail "$f missing or empty"
    cmp -s "$WORK/run1/$f" "$WORK/run2/$f" || fail "$f differs between two runs with the same key"
done
cmp -s "$WORK/run1/releases.jsonl" "$WORK/run3/releases.jsonl" && fail "a different key gave the same releases"
# rejections do not depend on the key
cmp -s "$WORK/run1/rejected.jsonl" "$WORK/run3/rejected.jsonl" || fail "rejections depend on the key"

# --- content checks -------------------------------------------------------------
python3 - "$WORK" <<'EOF'
import json, sys, collections
work = sys.argv[1]
def fail(msg):
    print("FAIL:", msg, file=sys.stderr); sys.exit(1)
expect = [tuple(l.split()) for l in open(f"{work}/expect.txt")]
expect = [(int(n), r) for n, r in expect]
rej = [json.loads(l) for l in open(f"{work}/run1/rejected.jsonl")]
got = sorted((r["line"], r["reason"]) for r in rej)   # held updates are judged when their step opens
if got != expect:
    fail(f"rejections\n  got    {got}\n  wanted {expect}")
inp = open(f"{work}/input.jsonl").read().split("\n")
for r in rej:
    if r.get("raw") != inp[r["line"] - 1]:
        fail(f"raw of line {r['line']} does not match the input")
    if not r.get("text"):
        fail(f"rejection of line {r['line']} has no text")

records = collections.Counter()
manifests = []
for l in open(f"{work}/run1/releases.jsonl"):
    o = json.loads(l)
    if o["type"] == "record":
        if manifests and (o["stream"], o["step"]) in [(m["stream"], m["step"]) for m in manifests]:
            fail("record after its manifest")
        records[(o["stream"], o["step"])] += 1
    elif o["type"] == "manifest":
        manifests.append(o)
    else:
        fail("unknown release line type " + o["type"])
steps = collections.defaultdict(list)
for m in manifests:
    steps[m["stream"]].append(m["step"])
    if m["record_count"] != records.get((m["stream"], m["step"]), 0):
        fail(f"manifest {m['stream']} step {m['step']}: record_count {m['record_count']} but "
             f"{records.get((m['stream'], m['step']), 0)} records")
if steps["panel"] != [1, 2, 3, 4]:
    fail(f"panel steps released {steps['panel']}")
if steps["cum/a"] != [1, 2, 3, 4]:
    fail(f"cum/a steps released {steps['cum/a']} (step 5 must stay open at end of input)")
# window k=2: nothing at step 1, then the population every step
win = {m["step"]: m for m in manifests if m["stream"] == "panel"}
if win[1]["record_count"] != 0 or win[2]["record_count"] == 0:
    fail("window release sizes")
if not (win[2]["record_count"] == win[3]["record_count"] == win[4]["record_count"]):
    fail("window population changed between steps")
cum = [m for m in manifests if m["stream"] == "cum/a"]
if any(m["record_count"] != 30 for m in cum):
    fail("cumulative population is not the roster size 30")

budget = [json.loads(l) for l in open(f"{work}/run1/budget.jsonl")]
if [(b["stream"], b["step"]) for b in budget] != [(m["stream"], m["step"]) for m in manifests]:
    fail("budget events do not match the releases one to one")
last = [b for b in budget if b["stream"] == "panel"][-1]
if last["status"] != "EXHAUSTED":
    fail("the window stream is not EXHAUSTED after its horizon")
for b in budget:
    if b["spent_total"] > b["budget_total"] * (1 + 1e-9):
        fail("budget overspent")
print("content checks passed:", len(manifests), "releases,", len(rej), "rejections")
EOF
grep -q "duplicate CLOSE_STEP markers ignored" "$WORK/summary1.txt" || fail "summary line missing"

# --- usage and config errors exit 2 with a message ---------------------------------
if "$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/run4" 2> "$WORK/err.txt"; then
    fail "replay without a key succeeded"
fi
grep -q "key" "$WORK/err.txt" || fail "no message about the missing key"
echo '{"streams":[{"match":"s","synthesizer":"nosuch","config":{}}]}' > "$WORK/bad.json"
set +e
"$BIN" replay --config "$WORK/bad.json" --input "$WORK/input.jsonl" --out "$WORK/run5" --key-hex "$KEY1" 2> "$WORK/err.txt"
rc=$?
set -e
[ $rc -eq 2 ] || fail "bad config exit code $rc"
grep -q 'streams\[0\].synthesizer' "$WORK/err.txt" || fail "bad config message: $(cat "$WORK/err.txt")"
echo "replay_cli: OK"

# --- export keeps dead letters (raw rejected input) out of the shared output ----
mkdir -p "$WORK/exp"
rc=0
"$BIN" export --config "$WORK/config.json" --out "$WORK/exp" --dead-letters "$WORK/exp/./dl.jsonl" \
    > /dev/null 2> "$WORK/exp.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "inside --out" "$WORK/exp.err" || fail "export wrote dead letters inside OUT (exit $rc)"
rc=0
"$BIN" export --from-replay "$WORK/run1" --out "$WORK/exp2" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--dead-letters accepted with --from-replay"
"$BIN" export --from-replay "$WORK/run1" --out "$WORK/exp3" > /dev/null || fail "export --from-replay"
[ ! -e "$WORK/exp3/deadletter.jsonl" ] || fail "export wrote a dead-letter file nobody asked for"
echo "replay_cli: export dead-letter rules OK"

# --- a prefix route's stream cap and shared budget (issue 12.5) -----------------
cat > "$WORK/cap.json" <<'JSON'
{"streams": [{"prefix": "g/", "synthesizer": "window", "max_streams": 2, "budget_group": true,
              "config": {"horizon": 2, "k": 1, "rho": 1}}]}
JSON
for s in g/a g/b g/c; do
    "$BIN" gen-panel --n 6 --steps 2 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps
done > "$WORK/cap.jsonl"
"$BIN" replay --config "$WORK/cap.json" --input "$WORK/cap.jsonl" --out "$WORK/cap" --key-hex "$KEY1" > /dev/null
python3 - "$WORK" <<'PY' || fail "max_streams / budget_group"
import collections, json, sys
w = sys.argv[1]
bud = [json.loads(l) for l in open(f"{w}/cap/budget.jsonl")]
rej = collections.Counter((json.loads(json.loads(l)["raw"])["stream"], json.loads(l)["reason"])
                          for l in open(f"{w}/cap/rejected.jsonl"))
ok = sorted({b["stream"] for b in bud}) == ["g/a", "g/b"]
ok = ok and all(b["budget_total"] == 0.5 for b in bud) and bud[-1]["spent_total"] == 0.5
ok = ok and set(rej) == {("g/c", "STREAM_LIMIT")} and rej[("g/c", "STREAM_LIMIT")] == 6 * 2 + 2
sys.exit(0 if ok else 1)
PY
echo "replay_cli: max_streams and budget_group OK"

# --- cumulative with a block counter of block size B >= 2 (issue 13.8) ----------
for B in 2 4 6; do
    cat > "$WORK/blk.json" <<JSON
{"streams": [{"match": "b", "synthesizer": "cumulative",
              "config": {"horizon": 6, "rho": 1, "counter": {"kind": "block", "block": $B}}}]}
JSON
    "$BIN" gen-panel --n 50 --steps 6 --categories 2 --stay 0.7 --seed-hex "$SEED" --stream b --close-steps \
        > "$WORK/blk.jsonl"
    "$BIN" replay --config "$WORK/blk.json" --input "$WORK/blk.jsonl" --out "$WORK/blk$B" --key-hex "$KEY1" > /dev/null \
        || fail "cumulative with block counter B=$B refused"
    [ "$(grep -c '"type":"manifest"' "$WORK/blk$B/releases.jsonl")" -eq 6 ] || fail "block B=$B: not 6 releases"
    grep -q '"step":6,"status":"EXHAUSTED","mechanism":"cumulative/block"' "$WORK/blk$B/budget.jsonl" \
        || fail "block B=$B: no exhausted budget event from the block counter"
done
echo "replay_cli: cumulative with block counters OK"

# --- plans that would write gigabytes are refused up front (issue 13.4) ---------
plan() {   # $1 = window config object -> exit status; stderr in $WORK/plan.err
    printf '{"streams": [{"match": "p", "synthesizer": "window", "config": %s}]}\n' "$1" > "$WORK/plan.json"
    local rc=0
    "$BIN" replay --config "$WORK/plan.json" --input "$WORK/input.jsonl" --out "$WORK/plan.out" --key-hex "$KEY1" \
        > /dev/null 2> "$WORK/plan.err" || rc=$?
    echo $rc
}
[ "$(plan '{"horizon": 4, "k": 1, "rho": 1, "n_pad": 1000000000}')" -eq 2 ] || fail "n_pad 1e9 accepted"
grep -q "window: n_pad: the plan pads every release" "$WORK/plan.err" || fail "n_pad refusal does not name n_pad"
[ ! -e "$WORK/plan.out" ] || fail "a refused plan left output behind"
[ "$(plan '{"horizon": 4, "k": 1, "rho": 1, "categories": 16777216}')" -eq 2 ] || fail "2^24 categories accepted"
grep -q "window: categories:" "$WORK/plan.err" || fail "categories refusal does not name categories"
# accepted: the replay runs (and, the input holding no stream "p", says that
# none of its lines was used: exit 1, not the configuration error 2)
[ "$(plan '{"horizon": 4, "k": 1, "rho": 1, "n_pad": 100000, "max_padding_records": 1000000}')" -eq 1 ] \
    && grep -q "none was used" "$WORK/plan.err" \
    || fail "a plan within a raised max_padding_records was refused: $(cat "$WORK/plan.err")"
# a replay that fails leaves no partial files (outputs are renamed into place at the end)
printf '{"streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 4, "k": 1, "rho": 1}}]}\n' \
    > "$WORK/plan.json"
rm -rf "$WORK/fail.out"; mkdir -p "$WORK/fail.out/releases.jsonl.partial"   # cannot be created: a directory
"$BIN" replay --config "$WORK/plan.json" --input "$WORK/input.jsonl" --out "$WORK/fail.out" --key-hex "$KEY1" \
    > /dev/null 2>&1 && fail "replay into an unwritable output succeeded"
[ -z "$(find "$WORK/fail.out" -type f)" ] || fail "a failed replay left files: $(find "$WORK/fail.out" -type f)"
echo "replay_cli: plan limits and no partial outputs OK"
