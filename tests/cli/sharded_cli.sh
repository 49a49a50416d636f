#!/usr/bin/env bash
# sharded_cli.sh — a route with "sharded": true (docs/kafka.md §10), no
# broker:
#   * check-config accepts it for window and cumulative, says how its keys
#     spread it over the partitions and names the roles' topics (text; not
#     for a config without sharded routes) and "sharded": true (--json,
#     false on the other routes);
#   * it refuses, exit 2 naming the JSON path, a synthesizer that does not
#     shard by entity (hypercube), close_on_complete_roster, max_streams
#     and a non-boolean;
#   * `run` (--role all) refuses a sharded route with exit 2 before it touches Kafka
#     (it belongs to the ingest and release roles), and runs none of it;
#   * `replay` reads one log and treats a sharded route as one stream: the
#     same releases, budget events and rejections as the unsharded route
#     (the reference a sharded run must equal).
# Usage: bash sharded_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: sharded_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
W='{"horizon": 12, "k": 3, "rho": 0.5}'

cat > "$WORK/good.json" <<EOF
{"topics": {"prefix": "sc"},
 "streams": [
   {"match": "panel", "synthesizer": "window", "sharded": true, "config": $W},
   {"prefix": "cum/", "synthesizer": "cumulative", "sharded": true, "config": {"horizon": 8, "rho": 1}},
   {"match": "plain", "synthesizer": "window", "config": $W}
 ]}
EOF
"$BIN" check-config --config "$WORK/good.json" > "$WORK/plan.txt" || fail "check-config: exit $?"
[ "$(grep -c "sharded     keyed by stream id, a 0x00 byte and entity id" "$WORK/plan.txt")" -eq 2 ] \
    || fail "text plan: $(cat "$WORK/plan.txt")"
grep -q "every CLOSE_STEP marker goes to every partition" "$WORK/plan.txt" || fail "text plan: markers"
grep -q "sharded routes: statistics sc.stats (exact statistics of personal data.*release state sc.release-state" \
    "$WORK/plan.txt" || fail "text plan: the roles' topics"
cat > "$WORK/plain.json" <<EOF
{"topics": {"prefix": "sc"}, "streams": [{"match": "plain", "synthesizer": "window", "config": $W}]}
EOF
"$BIN" check-config --config "$WORK/plain.json" | grep -q "sharded routes:" && fail "an unsharded config names the roles' topics"
"$BIN" check-config --config "$WORK/good.json" --json > "$WORK/plan.json" || fail "--json: exit $?"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [s["sharded"] for s in d["streams"]] == [True, True, False], d["streams"]
' "$WORK/plan.json" || fail "JSON plan: sharded flags"

refused() {   # $1 = route JSON, $2 = text of the message
    printf '{"streams": [%s]}\n' "$1" > "$WORK/bad.json"
    local rc=0
    "$BIN" check-config --config "$WORK/bad.json" > /dev/null 2> "$WORK/err" || rc=$?
    [ $rc -eq 2 ] || fail "$2: exit $rc, want 2"
    grep -qF -- "$2" "$WORK/err" || fail "$2: $(cat "$WORK/err")"
}
refused '{"match": "h", "synthesizer": "hypercube", "sharded": true, "config": {"epsilon": 2}}' \
    'streams[0].sharded: synthesizer "hypercube" does not shard by entity'
refused "{\"match\": \"a\", \"synthesizer\": \"window\", \"sharded\": true, \"close_on_complete_roster\": true, \"config\": $W}" \
    'streams[0].sharded: not with close_on_complete_roster'
refused "{\"prefix\": \"a\", \"synthesizer\": \"window\", \"sharded\": true, \"max_streams\": 3, \"config\": $W}" \
    'streams[0].sharded: not with max_streams'
refused "{\"match\": \"a\", \"synthesizer\": \"window\", \"sharded\": \"yes\", \"config\": $W}" \
    'streams[0].sharded: must be true or false'

# run: refused before any connection (the bootstrap address answers nothing)
rc=0
DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 "$BIN" run --config "$WORK/good.json" --key-hex "$KEY" \
    > /dev/null 2> "$WORK/run.err" || rc=$?
[ $rc -eq 2 ] || fail "run of a sharded route: exit $rc, want 2 ($(cat "$WORK/run.err"))"
grep -qF 'streams[0] is sharded: the single process (--role all) does not serve sharded routes' "$WORK/run.err" \
    || fail "run: $(cat "$WORK/run.err")"
! grep -q "cannot reach" "$WORK/run.err" || fail "run tried Kafka first"
# replay: sharded or not, one log, the same bytes
"$BIN" gen-panel --n 80 --steps 5 --categories 2 --stay 0.8 --seed-hex "$KEY" --stream panel --close-steps \
    --out "$WORK/panel.jsonl"
sed 's/"sharded": true, //' "$WORK/good.json" > "$WORK/unsharded.json"
! grep -q sharded "$WORK/unsharded.json" || fail "unsharded config still sharded"
for c in good unsharded; do
    "$BIN" replay --config "$WORK/$c.json" --input "$WORK/panel.jsonl" --out "$WORK/rep-$c" --key-hex "$KEY" \
        > /dev/null || fail "replay with $c.json: exit $?"
done
[ "$(grep -c '"type":"manifest"' "$WORK/rep-good/releases.jsonl")" -eq 5 ] || fail "replay released no 5 steps"
for f in releases.jsonl budget.jsonl rejected.jsonl; do
    cmp -s "$WORK/rep-good/$f" "$WORK/rep-unsharded/$f" || fail "replay $f differs when the route is sharded"
done
echo "PASS: sharded_cli"
