#!/usr/bin/env bash
# kafka_unreachable.sh — broker away: every Kafka command asks for the
# brokers first and gives up within its connect timeout, with exit 4 (README
# "Exit codes") and one clear line "cannot reach BOOTSTRAP (why; …)" — not
# after librdkafka's 30 s admin or 300 s delivery timeout, and not as a
# screenful of reconnection errors.  `export` leaves no file behind.  No
# broker needed: 127.0.0.1:1 refuses every connection, and a name under
# .invalid never resolves.
# Usage: bash kafka_unreachable.sh /path/to/dpstream
set -uo pipefail
BIN=${1:?usage: kafka_unreachable.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

printf '{"streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]}\n' \
    > "$WORK/c.json"
"$BIN" gen-panel --n 5 --steps 2 --categories 2 --stay 0.8 --seed-hex $K --stream p --close-steps > "$WORK/in.jsonl"
echo '{"stream": "p", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/map.json"
printf 'person,t,v\na,1,0\n' > "$WORK/rows.csv"

# $1 = name, $2 = bootstrap, $3 = most seconds it may take, rest = command
expect_unreachable() {
    local name=$1 boot=$2 most=$3; shift 3
    local start=$SECONDS rc=0
    DPSTREAM_BOOTSTRAP_SERVERS=$boot timeout 120 "$@" > "$WORK/out" 2> "$WORK/err" || rc=$?
    local took=$((SECONDS - start))
    [ $rc -eq 4 ] || bad "$name: exit $rc, want 4 ($(head -c 400 "$WORK/err"))"
    [ $took -le "$most" ] || bad "$name: took $took s, want at most $most"
    grep -q "cannot reach $boot (" "$WORK/err" || bad "$name: no 'cannot reach $boot' line: $(head -c 400 "$WORK/err")"
    # one line, not one per reconnection attempt
    [ "$(wc -l < "$WORK/err")" -le 2 ] || bad "$name: $(wc -l < "$WORK/err") lines on stderr: $(head -c 600 "$WORK/err")"
}
T=(--connect-timeout-ms 2000)
expect_unreachable produce 127.0.0.1:1 8 "$BIN" produce --config "$WORK/c.json" --input "$WORK/in.jsonl" "${T[@]}"
grep -q "Connection refused" "$WORK/err" || bad "produce: the reason (connection refused) is not given"
expect_unreachable load 127.0.0.1:1 8 "$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" \
    --config "$WORK/c.json" "${T[@]}"
expect_unreachable "load --topic" 127.0.0.1:1 8 "$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" \
    --topic t "${T[@]}"
expect_unreachable run 127.0.0.1:1 8 "$BIN" run --config "$WORK/c.json" --key-hex $K "${T[@]}"
expect_unreachable export 127.0.0.1:1 8 "$BIN" export --config "$WORK/c.json" --out "$WORK/x" "${T[@]}"
[ ! -e "$WORK/x" ] || bad "export to an unreachable broker left $WORK/x behind"
expect_unreachable "export --follow" 127.0.0.1:1 8 "$BIN" export --config "$WORK/c.json" --out "$WORK/x" --follow "${T[@]}"
[ ! -e "$WORK/x" ] || bad "export --follow to an unreachable broker left $WORK/x behind"
# a name that does not resolve says so
expect_unreachable "produce, unknown host" nosuchbroker.invalid:9092 8 \
    "$BIN" produce --config "$WORK/c.json" --input "$WORK/in.jsonl" "${T[@]}"
grep -qi "resolve" "$WORK/err" || bad "unknown host: the reason (resolution) is not given: $(cat "$WORK/err")"
# the default timeout is about 10 s
expect_unreachable "run, default timeout" 127.0.0.1:1 25 "$BIN" run --config "$WORK/c.json" --key-hex $K
grep -q "within 10000 ms" "$WORK/err" || bad "default timeout is not 10000 ms: $(cat "$WORK/err")"
# a bad value is a usage error
for cmd in "produce --config $WORK/c.json --input $WORK/in.jsonl" "run --config $WORK/c.json --key-hex $K" \
           "export --config $WORK/c.json --out $WORK/x" \
           "load --input $WORK/rows.csv --mapping $WORK/map.json --config $WORK/c.json"; do
    rc=0
    # shellcheck disable=SC2086
    "$BIN" $cmd --connect-timeout-ms 0 > /dev/null 2>&1 || rc=$?
    [ $rc -eq 2 ] || bad "${cmd%% *} --connect-timeout-ms 0: exit $rc, want 2"
done
[ $fails -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "kafka_unreachable: produce, load, run and export stop within their connect timeout with exit 4 and say why"
