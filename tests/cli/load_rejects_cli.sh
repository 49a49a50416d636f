#!/usr/bin/env bash
# (Written by a helper on the layout branch; ported.)
# load_rejects_cli.sh — the exact bytes `dpstream load --rejects` writes:
# one JSON line per rejected row, keys line, reason, text, then "raw" (the
# row as a JSON string) or "raw_hex" when the row is not valid UTF-8, and
# nothing else (no "raw_truncated": the loader keeps whole rows up to its
# record limit).  Rows from CSV (fields re-joined with commas) and JSONL
# (the line as read); the expected lines are written out here, byte for
# byte, so any change of format, escaping or key order fails.
# Usage: bash load_rejects_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: load_rejects_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$WORK/map.json" <<'JSON'
{"stream": {"column": "region"}, "step": {"column": "year", "origin": 2000},
 "entity": {"column": "person"},
 "payload": {"type": "category", "column": "status", "labels": {"employed": 0, "unemployed": 1}}}
JSON
printf 'year,person,status,region\n2000,a,employed,north\n2000,\xff\xfe,bogus\xff,north\n2001,"b ""q""",unemployed,\xffx\n2001,c,retired,"so\tuth"\n2001,e,employed,north\n2000,d,employed,north\n' \
    > "$WORK/rows.csv"
"$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" --close-steps --out "$WORK/u.jsonl" \
    --rejects "$WORK/rejects.jsonl" > "$WORK/out" 2> "$WORK/err" || fail "load exited $?: $(cat "$WORK/err")"
printf '%s\n' \
    '{"line":3,"reason":"BAD_STRING","text":"column \"person\": entity id is not valid UTF-8 or holds a NUL byte","raw_hex":"323030302cfffe2c626f677573ff2c6e6f727468"}' \
    '{"line":4,"reason":"BAD_STRING","text":"column \"region\": stream id is not valid UTF-8 or holds a NUL byte","raw_hex":"323030312c62202271222c756e656d706c6f7965642cff78"}' \
    '{"line":5,"reason":"UNKNOWN_LABEL","text":"column \"status\": \"retired\" is not one of the mapping'"'"'s labels","raw":"2001,c,retired,so\tuth"}' \
    '{"line":7,"reason":"STEP_BACKWARDS","text":"step 1 of stream '"'"'north'"'"' is already closed (current step 2); sort the input by step within each stream","raw":"2000,d,employed,north"}' \
    > "$WORK/want.jsonl"
cmp "$WORK/want.jsonl" "$WORK/rejects.jsonl" || { diff "$WORK/want.jsonl" "$WORK/rejects.jsonl" >&2; fail "CSV rejects differ"; }

printf '{"s":"x","t":1,"e":"a","v":0}\n[1]\n{"s":"x","t":"1.5","e":"\xc3\xa9","v":2}\n' > "$WORK/rows.jsonl"
"$BIN" load --input "$WORK/rows.jsonl" --stream-column s --step-column t --entity-column e --value-column v \
    --out "$WORK/u2.jsonl" --rejects "$WORK/rejects2.jsonl" > "$WORK/out2" 2> "$WORK/err2" \
    || fail "load exited $?: $(cat "$WORK/err2")"
printf '%s\n' \
    '{"line":2,"reason":"BAD_RECORD","text":"not a JSON object","raw":"[1]"}' \
    '{"line":3,"reason":"BAD_NUMBER","text":"column \"t\": step \"1.5\" is not an integer","raw":"{\"s\":\"x\",\"t\":\"1.5\",\"e\":\"é\",\"v\":2}"}' \
    > "$WORK/want2.jsonl"
cmp "$WORK/want2.jsonl" "$WORK/rejects2.jsonl" || { diff "$WORK/want2.jsonl" "$WORK/rejects2.jsonl" >&2; fail "JSONL rejects differ"; }
echo "PASS: load_rejects_cli"
