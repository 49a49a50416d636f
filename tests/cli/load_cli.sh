#!/usr/bin/env bash
# load_cli.sh — `dpstream load` and `dpstream export --from-replay`, no broker:
#   * round trip gen-panel -> CSV (labels, quoted fields, CRLF) -> load ->
#     byte-identical to gen-panel's own update file (same CLOSE_STEP markers);
#     -> replay -> export reproduces releases.jsonl and budget.jsonl byte for
#     byte; per-step / single layouts hold exactly replay's records;
#   * a releases.jsonl cut inside a release: that release is never written
#     (exit 1), the complete ones are;
#   * mapping flags == mapping file; JSONL input == CSV input;
#   * timestamp steps (ISO-8601 with offsets, epoch ms), gap markers,
#     STEP_BACKWARDS / STEP_GAP / every row reject with its line number in
#     --rejects and on stderr; fatal errors exit non-zero.
# Usage: bash load_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: load_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- round trip ---------------------------------------------------------------------
"$BIN" gen-panel --n 60 --steps 6 --categories 3 --stay 0.8 --seed-hex "$SEED" \
    --stream panel --close-steps --out "$WORK/panel.jsonl"
python3 - "$WORK" <<'EOF'
import csv, json, sys
w = sys.argv[1]
rows = [json.loads(l) for l in open(f"{w}/panel.jsonl")]
labels = ["employed", "unemployed", "out of labour force"]
with open(f"{w}/panel.csv", "w", newline="") as f:
    out = csv.writer(f, lineterminator="\r\n")
    out.writerow(["person", "year", "status", "comment"])
    for r in rows:
        if r["kind"] != "REPORT":
            continue
        # a quoted comment with a comma, doubled quotes and a line break
        out.writerow([r["entity"], 1999 + r["step"], labels[r["value"]], 'x, "y"\nz'])
with open(f"{w}/panel.in.jsonl", "w") as f:
    for r in rows:
        if r["kind"] == "REPORT":
            f.write(json.dumps({"person": r["entity"], "year": 1999 + r["step"], "status": labels[r["value"]]}) + "\n")
EOF
cat > "$WORK/map.json" <<'EOF'
{"stream": "panel",
 "step": {"column": "year", "origin": 2000},
 "entity": {"column": "person"},
 "payload": {"type": "category", "column": "status",
             "labels": {"employed": 0, "unemployed": 1, "out of labour force": 2}}}
EOF
"$BIN" load --input "$WORK/panel.csv" --mapping "$WORK/map.json" --close-steps --quiet \
    --out "$WORK/loaded.jsonl" > "$WORK/load.out"
cmp -s "$WORK/panel.jsonl" "$WORK/loaded.jsonl" || fail "CSV -> load does not reproduce gen-panel's updates"
grep -q "load: 360 rows, 360 updates written, 6 CLOSE_STEP markers, 0 rejected, 1 streams" "$WORK/load.out" \
    || fail "load summary: $(cat "$WORK/load.out")"
"$BIN" load --input "$WORK/panel.in.jsonl" --mapping "$WORK/map.json" --close-steps --quiet \
    --out "$WORK/loaded2.jsonl" > /dev/null
cmp -s "$WORK/panel.jsonl" "$WORK/loaded2.jsonl" || fail "JSONL input differs from CSV input"

cat > "$WORK/config.json" <<'EOF'
{"topics": {"prefix": "test"}, "delta": 1e-6,
 "streams": [{"match": "panel", "synthesizer": "window",
              "config": {"horizon": 6, "k": 2, "categories": 3, "rho": 0.5}}]}
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/loaded.jsonl" --out "$WORK/rep" --key-hex "$KEY" > /dev/null
[ "$(grep -c '"type":"manifest"' "$WORK/rep/releases.jsonl")" -eq 6 ] || fail "replay did not release 6 steps"
"$BIN" export --from-replay "$WORK/rep" --out "$WORK/exp" > "$WORK/export.out"
cmp -s "$WORK/rep/releases.jsonl" "$WORK/exp/releases.jsonl" || fail "export releases.jsonl differs from replay's"
cmp -s "$WORK/rep/budget.jsonl" "$WORK/exp/budget.jsonl" || fail "export budget.jsonl differs from replay's"
grep -q "export: 6 releases" "$WORK/export.out" || fail "export summary: $(cat "$WORK/export.out")"

"$BIN" export --from-replay "$WORK/rep" --out "$WORK/exp_ps" --layout per-step --format jsonl > /dev/null
cat "$WORK"/exp_ps/panel/step-*.jsonl | cmp -s - <(grep '"type":"record"' "$WORK/rep/releases.jsonl") \
    || fail "per-step JSONL files do not hold replay's records"
cmp -s "$WORK/exp_ps/manifests.jsonl" <(grep '"type":"manifest"' "$WORK/rep/releases.jsonl") \
    || fail "per-step manifests.jsonl differs"
"$BIN" export --from-replay "$WORK/rep" --out "$WORK/exp_csv" --layout per-step > /dev/null
"$BIN" export --from-replay "$WORK/rep" --out "$WORK/exp_single" --layout single > /dev/null
python3 - "$WORK" <<'EOF'
import csv, json, sys, os
w = sys.argv[1]
truth = {}
for l in open(f"{w}/rep/releases.jsonl"):
    r = json.loads(l)
    if r["type"] != "record":
        continue
    v = r.get("value", r.get("row"))
    v = v if isinstance(v, list) else [v]
    truth.setdefault(r["step"], []).append((r["synthetic_id"], v))
# per-step CSV: one file per released step, header + records
for step in range(1, 7):
    p = f"{w}/exp_csv/panel/step-{step:04d}.csv"
    assert os.path.exists(p), p
    rows = list(csv.reader(open(p)))
    got = [(int(x[0]), [int(y) for y in x[1:]]) for x in rows[1:]]
    assert got == truth.get(step, []), (step, got[:3], truth.get(step, [])[:3])
# single CSV: a tidy long table, one scalar per line (component 1.. of a record;
# window's step-k rows have k components, later steps one)
rows = list(csv.reader(open(f"{w}/exp_single/panel.csv")))
assert rows[0] == ["step", "synthetic_id", "component", "value"], rows[0]
assert all(len(r) == 4 for r in rows), "a line of the long table without 4 cells"
got = {}
for s, i, c, v in rows[1:]:
    recs = got.setdefault(int(s), [])
    if int(c) == 1:
        recs.append((int(i), []))
    assert recs and recs[-1][0] == int(i) and len(recs[-1][1]) == int(c) - 1, (s, i, c)
    recs[-1][1].append(int(v))
assert got == {k: v for k, v in truth.items() if v}, "single CSV differs"
assert {len(v) for s, r in got.items() for _, v in r} == {2, 1}, "expected k = 2 rows at step 2, then scalars"
assert not [f for f in os.listdir(f"{w}/exp_csv/panel") if f.endswith(".tmp")]
EOF

# --- a cut releases.jsonl never yields a partial release ------------------------------------
mkdir -p "$WORK/cut"
cp "$WORK/rep/budget.jsonl" "$WORK/cut/"
# keep everything up to the 4th manifest, then half of the 5th release's records
python3 - "$WORK" <<'EOF'
import sys
w = sys.argv[1]
lines = open(f"{w}/rep/releases.jsonl").read().splitlines(keepends=True)
out, manifests = [], 0
for i, l in enumerate(lines):
    out.append(l)
    if '"type":"manifest"' in l:
        manifests += 1
        if manifests == 4:
            rest = [x for x in lines[i + 1:] if '"type":"record"' in x]
            n5 = 0
            for x in lines[i + 1:]:
                if '"type":"manifest"' in x:
                    break
                n5 += 1
            assert n5 >= 2, n5
            out += lines[i + 1:i + 1 + n5 // 2]
            break
open(f"{w}/cut/releases.jsonl", "w").write("".join(out))
open(f"{w}/cut/expect.jsonl", "w").write("".join(lines[:len(out) - 0]))
EOF
set +e
"$BIN" export --from-replay "$WORK/cut" --out "$WORK/exp_cut" --layout per-step --format jsonl \
    > "$WORK/cut.out" 2> "$WORK/cut.err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "export of a cut file exited $rc, want 1"
grep -q "step 5 incomplete, not written" "$WORK/cut.err" || fail "cut release not reported: $(cat "$WORK/cut.err")"
[ -e "$WORK/exp_cut/panel/step-0005.jsonl" ] && fail "a partial release was written"
[ -e "$WORK/exp_cut/panel/step-0004.jsonl" ] || fail "complete releases before the cut were not written"
cmp -s "$WORK/exp_cut/panel/step-0004.jsonl" "$WORK/exp_ps/panel/step-0004.jsonl" || fail "step 4 differs after a cut"

# --- flags == mapping file -------------------------------------------------------------------
"$BIN" load --input "$WORK/panel.in.jsonl" --stream panel --step-column year --step-origin 2000 \
    --entity-column person --value-column status --quiet --out "$WORK/flags.jsonl" 2> "$WORK/flags.err" > /dev/null
# without labels every status is rejected as not an integer, on its own line
[ "$(grep -c 'BAD_NUMBER' "$WORK/flags.err")" -eq 360 ] || fail "flag mapping without labels should reject every row"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
with open(f"{w}/panel.num.csv", "w") as f:
    f.write("person,year,code\n")
    for l in open(f"{w}/panel.jsonl"):
        r = json.loads(l)
        if r["kind"] == "REPORT":
            f.write(f"{r['entity']},{1999 + r['step']},{r['value']}\n")
EOF
"$BIN" load --input "$WORK/panel.num.csv" --stream panel --step-column year --step-origin 2000 \
    --entity-column person --value-column code --close-steps --quiet --out "$WORK/flags2.jsonl" > /dev/null
cmp -s "$WORK/panel.jsonl" "$WORK/flags2.jsonl" || fail "flag mapping differs from gen-panel"

# --- timestamps, markers, rejects with line numbers -------------------------------------------
# line numbers count physical lines: the quoted field on line 3 spans lines 3-4
cat > "$WORK/events.csv" <<'EOF'
ts,user,op,x,y,region
2024-01-01T00:10:00Z,a,+,0.5,0.25,"north
east"
2024-01-01T00:59:59.999+00:00,b,+,0.1,0.2,south
2024-01-01T03:30:00+02:00,c,-,0.3,0.4,south
2024-01-01T01:00:00Z,d,+,nan,0.4,south
2024-01-01T01:20:00Z,e,?,0.3,0.4,south
2024-01-01T01:30:00,f,+,0.3,0.4,south
2023-12-31T23:00:00Z,g,+,0.3,0.4,south
2024-01-01T01:40:00Z,h,+,0.3
2024-01-01T01:45:00Z,i,+,"0.3"x,0.4,south
2024-01-01T01:50:00Z,,+,0.3,0.4,south
2024-01-01T05:00:00Z,j,+,0.7,0.8,south
2024-01-01T04:00:00Z,k,+,0.7,0.8,south
2024-03-01T04:00:00Z,l,+,0.7,0.8,south
EOF
cat > "$WORK/events.map.json" <<'EOF'
{"stream": "geo",
 "step": {"time_column": "ts", "origin": "2024-01-01T00:00:00Z", "length": "1h"},
 "entity": {"column": "user"},
 "kind": {"column": "op", "labels": {"+": "INSERT", "-": "DELETE"}},
 "payload": {"type": "point", "columns": ["x", "y"]}}
EOF
set +e
"$BIN" load --input "$WORK/events.csv" --mapping "$WORK/events.map.json" --close-steps --max-gap 100 \
    --rejects "$WORK/rejects.jsonl" --out "$WORK/events.jsonl" > "$WORK/events.out" 2> "$WORK/events.err"
rc=$?
set -e
[ $rc -eq 0 ] || fail "load with rejected rows exited $rc: $(cat "$WORK/events.err")"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
rej = [json.loads(l) for l in open(f"{w}/rejects.jsonl")]
got = [(r["line"], r["reason"]) for r in rej]
want = [(6, "BAD_NUMBER"), (7, "BAD_KIND"), (8, "BAD_TIMESTAMP"), (9, "BEFORE_ORIGIN"),
        (10, "FIELD_COUNT"), (11, "BAD_RECORD"), (12, "MISSING_VALUE"), (14, "STEP_BACKWARDS"),
        (15, "STEP_GAP")]
assert got == want, got
assert all(r["text"] for r in rej)
assert rej[0]["raw"].startswith("2024-01-01T01:00:00Z,d,+,nan"), rej[0]
err = open(f"{w}/events.err").read()
for line, reason in want:
    assert f"line {line}: {reason}:" in err, (line, reason, err)
ups = [json.loads(l) for l in open(f"{w}/events.jsonl")]
# a(step 1), b(step 1), close 1, c (03:30+02:00 = 01:30Z -> step 2), close 2,
# j (05:00Z -> step 6): closes 2..5 were needed -> close 3, 4, 5; then j; close 6 at end
kinds = [(u["kind"], u["step"], u.get("entity")) for u in ups]
assert kinds == [("INSERT", 1, "a"), ("INSERT", 1, "b"), ("CLOSE_STEP", 1, None),
                 ("DELETE", 2, "c"), ("CLOSE_STEP", 2, None), ("CLOSE_STEP", 3, None),
                 ("CLOSE_STEP", 4, None), ("CLOSE_STEP", 5, None), ("INSERT", 6, "j"),
                 ("CLOSE_STEP", 6, None)], kinds
assert ups[0]["event_time"] == 1704067800000 and ups[0]["point"] == [0.5, 0.25], ups[0]
assert ups[3]["event_time"] == 1704072600000, ups[3]
EOF
grep -q "load: 13 rows, 4 updates written, 6 CLOSE_STEP markers, 9 rejected, 1 streams" "$WORK/events.out" \
    || fail "events summary: $(cat "$WORK/events.out")"

# epoch milliseconds, stream from a column, several streams closed in order of appearance
printf 't,s,v\n60000,a,1\n60001,b,0\n120000,a,1\n' > "$WORK/ms.csv"
"$BIN" load --input "$WORK/ms.csv" --stream-column s --time-column t --time-format epoch_ms \
    --step-origin 0 --step-length 60 --value-column v --close-steps --quiet --out "$WORK/ms.jsonl" > /dev/null
python3 - "$WORK" <<'EOF'
import json, sys
ups = [json.loads(l) for l in open(f"{sys.argv[1]}/ms.jsonl")]
got = [(u["stream"], u["step"], u["kind"]) for u in ups]
assert got == [("a", 2, "REPORT"), ("b", 2, "REPORT"), ("a", 2, "CLOSE_STEP"), ("a", 3, "REPORT"),
               ("a", 3, "CLOSE_STEP"), ("b", 2, "CLOSE_STEP")], got
EOF

# --- fatal errors -------------------------------------------------------------------------------
expect_exit() {   # expect_exit CODE description -- command...
    local want=$1 what=$2; shift 3
    set +e; "$@" > /dev/null 2> "$WORK/fatal.err"; local got=$?; set -e
    [ $got -eq "$want" ] || fail "$what: exit $got, want $want ($(cat "$WORK/fatal.err"))"
}
expect_exit 3 "missing input" -- "$BIN" load --input "$WORK/nope.csv" --mapping "$WORK/map.json" --out "$WORK/x.jsonl"
expect_exit 1 "column not in header" -- "$BIN" load --input "$WORK/ms.csv" --mapping "$WORK/map.json" --out "$WORK/x.jsonl"
grep -q 'the header has no column "year"' "$WORK/fatal.err" || fail "missing column not named"
echo '{"stream": "s", "step": {"column": "t"}, "payload": {"type": "category", "column": "v"}, "typo": 1}' > "$WORK/bad.map.json"
expect_exit 2 "bad mapping" -- "$BIN" load --input "$WORK/ms.csv" --mapping "$WORK/bad.map.json" --out "$WORK/x.jsonl"
grep -q 'unknown key "typo"' "$WORK/fatal.err" || fail "bad mapping key not named"
expect_exit 2 "no output" -- "$BIN" load --input "$WORK/ms.csv" --mapping "$WORK/map.json"
printf '' > "$WORK/empty.csv"
expect_exit 1 "empty CSV" -- "$BIN" load --input "$WORK/empty.csv" --mapping "$WORK/map.json" --out "$WORK/x.jsonl"
expect_exit 2 "unknown layout" -- "$BIN" export --from-replay "$WORK/rep" --out "$WORK/x" --layout nope
# --- one rule for ids (issue 13.5): a NUL byte in an id is a bad row, never the end of a load
printf 'person,t,v\nalice,1,0\nb\000b,1,1\ncarol,1,1\n' > "$WORK/nul.csv"
echo '{"stream": "s", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/nul.map.json"
"$BIN" load --input "$WORK/nul.csv" --mapping "$WORK/nul.map.json" --out "$WORK/nul.jsonl" --rejects "$WORK/nul.rej" \
    > /dev/null 2> "$WORK/nul.err" || fail "a NUL in an id stopped the load"
[ "$(wc -l < "$WORK/nul.jsonl")" -eq 2 ] || fail "NUL id: the good rows were not all written"
grep -q '"line":3' "$WORK/nul.rej" && grep -q 'NUL' "$WORK/nul.rej" || fail "NUL id: not reported as a bad row with its line"
echo "load_cli: ok"
