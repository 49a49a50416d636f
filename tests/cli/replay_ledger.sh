#!/usr/bin/env bash
# replay_ledger.sh — `dpstream replay --ledger FILE` (issue 12.4): the
# ledger records every released step's key fingerprint and input digest,
# and refuses (exit 1, naming the stream and step) to release a step again
#   * under the same key from different input (the same noise over other
#     data would reveal the difference exactly), or
#   * from the same input under another key (a second spend);
# an identical re-run is allowed (same bytes, nothing new revealed), and so
# is changed input under a rotated key — after which the ledger still
# refuses both cases against the earlier release (it keeps every key and
# input a step was released under, not only the last).
# Usage: bash replay_ledger.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: replay_ledger.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
K1=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
K2=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e20
K3=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e21
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
"$BIN" gen-panel --n 30 --steps 4 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream p --close-steps \
    > "$WORK/d.jsonl"
# D3: another panel (another seed): every step's input differs from D's
"$BIN" gen-panel --n 30 --steps 4 --categories 2 --stay 0.8 --seed-hex "${SEED/5eed/6eed}" --stream p \
    --close-steps > "$WORK/d3.jsonl"
# D2: one person's step-3 answer flipped
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
out = []
for line in open(f"{w}/d.jsonl"):
    o = json.loads(line)
    if o.get("entity") == "u7" and o["step"] == 3:
        o["value"] = 1 - o["value"]
    out.append(json.dumps(o, separators=(",", ":")))
open(f"{w}/d2.jsonl", "w").write("\n".join(out) + "\n")
PY
cat > "$WORK/config.json" <<'JSON'
{"streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 4, "k": 1, "rho": 1}}]}
JSON
run() {   # $1 input, $2 key, $3 out dir -> exit status
    local rc=0
    "$BIN" replay --config "$WORK/config.json" --input "$WORK/$1" --out "$WORK/$3" --key-hex "$2" \
        --ledger "$WORK/ledger.jsonl" > /dev/null 2> "$WORK/$3.err" || rc=$?
    echo "$rc"
}
[ "$(run d.jsonl "$K1" a)" -eq 0 ] || fail "first release refused"
[ "$(wc -l < "$WORK/ledger.jsonl")" -eq 5 ] || fail "ledger does not hold its salt and the 4 released steps"
[ "$(run d.jsonl "$K1" b)" -eq 0 ] || fail "an identical re-run was refused"
cmp -s "$WORK/a/releases.jsonl" "$WORK/b/releases.jsonl" || fail "identical re-run released other bytes"
[ "$(run d2.jsonl "$K1" c)" -eq 5 ] || fail "changed input under the same key was released"
grep -q "stream 'p' step 3 was already released under this key from different input" "$WORK/c.err" \
    || { cat "$WORK/c.err" >&2; fail "wrong refusal for changed input"; }
[ ! -e "$WORK/c/releases.jsonl" ] && [ ! -e "$WORK/c/releases.jsonl.partial" ] \
    || fail "a refused replay left (partial) output files behind"
[ "$(run d.jsonl "$K2" d)" -eq 5 ] || fail "the same input under another key was released"
grep -q "stream 'p' step 1 was already released from this input under another key" "$WORK/d.err" \
    || { cat "$WORK/d.err" >&2; fail "wrong refusal for another key"; }
# D2's steps 1-2 are D's input: under K2 they are a second spend
[ "$(run d2.jsonl "$K2" e)" -eq 5 ] || fail "input partly released under another key was released"
grep -q "stream 'p' step 1 was already released from this input under another key" "$WORK/e.err" \
    || { cat "$WORK/e.err" >&2; fail "wrong refusal for partly released input under another key"; }
# changed input under a rotated key is allowed...
[ "$(run d3.jsonl "$K2" g)" -eq 0 ] || { cat "$WORK/g.err" >&2; fail "changed input under a rotated key was refused"; }
# ...and the ledger has not forgotten K1's release of D because of it
[ "$(run d.jsonl "$K3" i)" -eq 5 ] || fail "after a rotation, the old input under a third key was released"
grep -q "stream 'p' step 1 was already released from this input under another key" "$WORK/i.err" \
    || { cat "$WORK/i.err" >&2; fail "wrong refusal for the old input under a third key"; }
[ "$(run d2.jsonl "$K1" h)" -eq 5 ] || fail "after a rotation, changed input under the old key was released"
grep -q "stream 'p' step 3 was already released under this key from different input" "$WORK/h.err" \
    || { cat "$WORK/h.err" >&2; fail "wrong refusal for changed input under the old key"; }
[ "$(run d3.jsonl "$K2" j)" -eq 0 ] || fail "an identical re-run under the rotated key was refused"
echo "garbage" >> "$WORK/ledger.jsonl"
[ "$(run d.jsonl "$K1" f)" -eq 3 ] && grep -q "not a ledger line" "$WORK/f.err" || fail "a damaged ledger was accepted"
echo "replay_ledger: OK"
