#!/usr/bin/env bash
# log_format.sh — `--log-format json` (stream/log.h): the real processor,
# on the demo's in-process mock cluster, writes only JSON objects to
# stderr, one per line, each parsed here with Python's json; every line has
# ts (UTC, RFC 3339, milliseconds), level, event and msg; step releases,
# restores and rebalances are events with their stream, step and
# partition; no line holds the noise key.  The text format is unchanged,
# and usage errors of `run` are JSON lines too once the format is json.
# Usage: bash log_format.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: log_format.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

"$BIN" demo --n 300 --key-hex "$KEY" --log-level debug --log-format json > "$WORK/demo.out" 2> "$WORK/demo.err" \
    || { tail -5 "$WORK/demo.err" >&2; fail "demo with --log-format json failed"; }
python3 - "$WORK/demo.err" "$KEY" <<'EOF' || fail "JSON log lines"
import json, re, sys, collections
path, key = sys.argv[1], sys.argv[2]
ok = True
def bad(msg):
    global ok
    print(msg); ok = False
lines = open(path, encoding="utf-8").read().split("\n")
if lines[-1] != "":
    bad("the log does not end with a newline")
events = collections.defaultdict(list)
for n, line in enumerate(lines[:-1], 1):
    try:
        o = json.loads(line)
    except ValueError as e:
        bad(f"line {n} is not JSON ({e}): {line[:200]}"); continue
    if not isinstance(o, dict):
        bad(f"line {n} is not an object"); continue
    keys = list(o)
    if keys[:3] != ["ts", "level", "event"] or keys[-1] != "msg" or not set(keys) <= {"ts", "level", "event", "stream", "step", "partition", "msg"}:
        bad(f"line {n}: fields {keys}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]):
        bad(f"line {n}: ts {o['ts']!r}")
    if o["level"] not in ("error", "warn", "info", "debug"):
        bad(f"line {n}: level {o['level']!r}")
    if "step" in o and not (isinstance(o["step"], int) and o["step"] >= 1):
        bad(f"line {n}: step {o['step']!r}")
    if "partition" in o and not (isinstance(o["partition"], int) and o["partition"] >= 0):
        bad(f"line {n}: partition {o['partition']!r}")
    if key in line or key.upper() in line:
        bad(f"line {n} holds the noise key")
    events[o["event"]].append(o)
for e in ("startup", "subscribed", "restore_start", "restore_done", "partition_resume", "rebalance_assign",
          "step_released", "txn_commit", "budget_exhausted", "progress"):
    if not events[e]:
        bad(f"no {e} event")
# every stream's every step released once, with its stream and step as fields
rel = collections.defaultdict(list)
for o in events["step_released"]:
    if o["level"] != "info" or "stream" not in o or "step" not in o:
        bad(f"step_released without stream/step at info: {o}"); continue
    rel[o["stream"]].append(o["step"])
    if f"step {o['step']} of stream '{o['stream']}'" not in o["msg"]:
        bad(f"step_released msg disagrees with its fields: {o}")
if sorted(rel) != ["demo/cumulative", "demo/drops", "demo/map", "demo/modes", "demo/table", "demo/window"]:
    bad(f"released streams {sorted(rel)}")
for s, steps in rel.items():
    if steps != list(range(1, len(steps) + 1)) or len(steps) < 12:
        bad(f"{s}: released steps {steps}")
if any("partition" not in o for o in events["partition_resume"]):
    bad("partition_resume without its partition")
if any("stream" not in o or "step" not in o for o in events["budget_exhausted"]):
    bad("budget_exhausted without stream/step")
sys.exit(0 if ok else 1)
EOF

# the default stays the historical text format
"$BIN" demo --n 300 --key-hex "$KEY" --log-level info > /dev/null 2> "$WORK/text.err" || fail "demo (text) failed"
[ -s "$WORK/text.err" ] || fail "demo at info level logged nothing"
if grep -v -E '^dpstream (error|warn|info|debug): ' "$WORK/text.err" | grep -q .; then
    grep -v -E '^dpstream (error|warn|info|debug): ' "$WORK/text.err" | head -3 >&2
    fail "text log lines not in the 'dpstream <level>: ' format"
fi
grep -q "^dpstream info: released step 12 of stream 'demo/window'$" "$WORK/text.err" || fail "no step release in the text log"

# usage and configuration errors: one JSON line each under json, exit 2
rc=0; "$BIN" run --log-format json --bogus x > /dev/null 2> "$WORK/u.err" || rc=$?
[ "$rc" -eq 2 ] || fail "run --bogus: exit $rc"
python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["event"] == "cli_error" and o["level"] == "error" and "--bogus" in o["msg"], o
' "$WORK/u.err" || fail "run --bogus under json: $(cat "$WORK/u.err")"
rc=0; "$BIN" run --config /nonexistent.json --key-hex "$KEY" --log-format json > /dev/null 2> "$WORK/c.err" || rc=$?
[ "$rc" -eq 2 ] || fail "run with a missing config: exit $rc"
python3 -c 'import json, sys; o = json.loads(open(sys.argv[1]).read()); assert "nonexistent" in o["msg"], o' \
    "$WORK/c.err" || fail "config error under json: $(cat "$WORK/c.err")"
rc=0; "$BIN" run --log-format yaml --config x > /dev/null 2> "$WORK/f.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "log-format must be text or json" "$WORK/f.err" || fail "unknown --log-format: exit $rc"
echo "log_format: JSON lines parse, carry their events and fields; text unchanged"
