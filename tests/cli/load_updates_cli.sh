#!/usr/bin/env bash
# load_updates_cli.sh — `dpstream load --format updates` (what `dpstream
# produce` runs, into Kafka), no broker:
#   * update JSON lines loaded as they are reproduce themselves byte for
#     byte (gen-panel's canonical lines, CLOSE_STEP markers included);
#   * a line that is not a valid update stops the load with exit 1 and
#     update_json's own message with its line number; nothing is summarised;
#   * the options that make no sense for update lines are usage errors
#     (exit 2): a mapping, --close-steps, --raw-invalid without Kafka;
#   * produce's own checks still come first (exit 2 for a missing config).
# Usage: bash load_updates_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: load_updates_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BIN" gen-panel --n 40 --steps 4 --categories 3 --stay 0.8 --seed-hex $K --stream p --close-steps \
    --out "$WORK/in.jsonl"
"$BIN" load --format updates --input "$WORK/in.jsonl" --out "$WORK/out.jsonl" --quiet > "$WORK/sum" \
    || fail "load --format updates: exit $?"
cmp -s "$WORK/in.jsonl" "$WORK/out.jsonl" || fail "update lines do not reproduce themselves"
grep -q "^load: 164 rows, 164 updates written, 0 CLOSE_STEP markers, 0 rejected, 1 streams$" "$WORK/sum" \
    || fail "summary: $(cat "$WORK/sum")"

{ head -3 "$WORK/in.jsonl"; echo '{"stream":"p","step":1,"kind":"REPORT","valu":1}'; tail -n +4 "$WORK/in.jsonl"; } \
    > "$WORK/bad.jsonl"
rc=0
"$BIN" load --format updates --input "$WORK/bad.jsonl" --out "$WORK/o2.jsonl" > "$WORK/out" 2> "$WORK/err" || rc=$?
[ $rc -eq 1 ] || fail "a bad update line: exit $rc, want 1"
grep -qx 'dpstream load: line 4: unknown field "valu"' "$WORK/err" || fail "a bad update line: $(cat "$WORK/err")"
[ ! -s "$WORK/out" ] || fail "a failed load printed a summary: $(cat "$WORK/out")"

usage() {   # $1 = what, $2 = text stderr must contain, rest = arguments of load
    local what=$1 text=$2 rc=0; shift 2
    "$BIN" load --format updates --input "$WORK/in.jsonl" "$@" > /dev/null 2> "$WORK/err" || rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
    grep -qF -- "$text" "$WORK/err" || fail "$what: $(cat "$WORK/err")"
}
usage "a mapping" "no mapping" --stream-column s --out "$WORK/x"
usage "--close-steps" "--close-steps needs a mapping" --close-steps --out "$WORK/x"
usage "--raw-invalid to a file" "--raw-invalid applies to --format updates into Kafka" --raw-invalid --out "$WORK/x"
usage "an unknown format" "--format must be csv, jsonl or updates" --format xml --out "$WORK/x"

rc=0
"$BIN" produce --config "$WORK/none.json" --input "$WORK/in.jsonl" > /dev/null 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "dpstream produce: cannot open $WORK/none.json" "$WORK/err" \
    || fail "produce with a missing config: exit $rc, $(cat "$WORK/err")"
echo "PASS: load_updates_cli"
