#!/usr/bin/env bash
# exit_codes.sh — one exit-code table for every subcommand (README "Exit
# codes"; issue 13.10): 0 success, 1 ran but did not add up, 2 usage or
# configuration, 3 a file could not be read or written, 4 Kafka, 5 a
# privacy refusal.  Each code is provoked here through the commands that
# can return it without a broker (4 is checked on the real broker by
# tests/integration, where `run` refuses another key with 5 as well).
# Usage: bash exit_codes.sh /path/to/dpstream
set -uo pipefail
BIN=${1:?usage: exit_codes.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
K2=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e20
expect() {   # $1 = code, $2 = what, rest = command
    local want=$1 what=$2; shift 2
    "$@" > /dev/null 2> "$WORK/err"; local got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, want $want ($(head -c 300 "$WORK/err"))" >&2
        fails=$((fails + 1))
    fi
}
printf '{"streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]}\n' \
    > "$WORK/c.json"
"$BIN" gen-panel --n 5 --steps 2 --categories 2 --stay 0.8 --seed-hex $K --stream p --close-steps > "$WORK/in.jsonl"
echo '{"stream": "s", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/map.json"
printf 'person,t,v\na,1,0\n' > "$WORK/ok.csv"

expect 0 "replay"                 "$BIN" replay --config "$WORK/c.json" --input "$WORK/in.jsonl" --out "$WORK/o" --key-hex $K
# input of which not one line is used (a config for other stream ids): 1, and
# the outputs are still there to say why
printf '{"streams": [{"match": "other", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]}\n' \
    > "$WORK/other.json"
expect 1 "replay: every line rejected" "$BIN" replay --config "$WORK/other.json" --input "$WORK/in.jsonl" \
                                  --out "$WORK/rej" --key-hex $K
grep -q "were rejected and none was used" "$WORK/err" || { echo "FAIL: replay: no message for all-rejected input" >&2; fails=$((fails + 1)); }
[ "$(wc -l < "$WORK/rej/rejected.jsonl")" -eq "$(wc -l < "$WORK/in.jsonl")" ] \
    || { echo "FAIL: replay: rejected.jsonl missing or short after an all-rejected run" >&2; fails=$((fails + 1)); }
# one usable line is a replay (the rest are data)
{ head -n 1 "$WORK/in.jsonl"; echo '{"stream":"nobody","step":1,"kind":"REPORT","entity":"x","value":0}'; } > "$WORK/one.jsonl"
expect 0 "replay: one line used"  "$BIN" replay --config "$WORK/c.json" --input "$WORK/one.jsonl" --out "$WORK/o3" --key-hex $K
expect 2 "replay: unknown option" "$BIN" replay --bogus
expect 2 "replay: bad config"     "$BIN" replay --config "$WORK/map.json" --input "$WORK/in.jsonl" --out "$WORK/o" --key-hex $K
expect 3 "replay: missing input"  "$BIN" replay --config "$WORK/c.json" --input "$WORK/none" --out "$WORK/o" --key-hex $K
expect 3 "replay: unwritable out" "$BIN" replay --config "$WORK/c.json" --input "$WORK/in.jsonl" --out /proc/nope --key-hex $K
expect 0 "replay with a ledger"   "$BIN" replay --config "$WORK/c.json" --input "$WORK/in.jsonl" --out "$WORK/o1" \
                                  --key-hex $K --ledger "$WORK/l"
expect 5 "replay: ledger refusal" "$BIN" replay --config "$WORK/c.json" --input "$WORK/in.jsonl" --out "$WORK/o2" \
                                  --key-hex $K2 --ledger "$WORK/l"
expect 0 "load"                   "$BIN" load --input "$WORK/ok.csv" --mapping "$WORK/map.json" --out "$WORK/u.jsonl"
expect 2 "load: bad mapping"      "$BIN" load --input "$WORK/ok.csv" --mapping "$WORK/c.json" --out "$WORK/u.jsonl"
expect 3 "load: missing input"    "$BIN" load --input "$WORK/none.csv" --mapping "$WORK/map.json" --out "$WORK/u.jsonl"
expect 3 "load: unwritable out"   "$BIN" load --input "$WORK/ok.csv" --mapping "$WORK/map.json" --out /proc/nope/u.jsonl
printf 'a,b\n1,2\n' > "$WORK/nohdr.csv"
expect 1 "load: column missing"   "$BIN" load --input "$WORK/nohdr.csv" --mapping "$WORK/map.json" --out "$WORK/u.jsonl"
expect 3 "export: missing replay" "$BIN" export --from-replay "$WORK/none" --out "$WORK/x"
head -n 3 "$WORK/o/releases.jsonl" > "$WORK/cut.jsonl"; mkdir -p "$WORK/cut"; cp "$WORK/cut.jsonl" "$WORK/cut/releases.jsonl"
: > "$WORK/cut/budget.jsonl"
expect 1 "export: a cut release"  "$BIN" export --from-replay "$WORK/cut" --out "$WORK/x2"
expect 3 "keygen: file exists"    "$BIN" keygen --out "$WORK/c.json"
expect 2 "keygen: no --out"       "$BIN" keygen
expect 2 "sample: bad key"        "$BIN" sample --dist dlap --scale 1 --count 1 --key-hex 12
[ $fails -eq 0 ] || { echo "$fails exit code(s) wrong" >&2; exit 1; }
echo "exit_codes: every code as documented"
