#!/usr/bin/env bash
# kafka_topics.sh — one topic policy for every command, on the real broker:
#   * `produce`, `load` (with a config, and by --topic alone) and `run`
#     create the topics they need that are missing, with the config's
#     topics.partitions / topics.replication_factor (defaults: 4 and the
#     broker's), the state topic compacted — never by broker auto-creation
#     — and leave existing topics as they are;
#   * `export` against topics that do not exist stops (exit 4) and leaves
#     no file behind.
# (The flush's "waiting for N acknowledgements" needs acknowledgements that
# do not come, which a shared single broker cannot be made to withhold —
# min.insync.replicas is capped at the replication factor: that is
# tests/unit/test_kafka_util.c, on librdkafka's mock cluster.)
# Needs the broker of scripts/kafka-local.sh and kafka_admin (built next to
# the dpstream binary).  Usage: bash kafka_topics.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: kafka_topics.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
ADMIN=$(dirname "$BIN")/kafka_admin
[ -x "$ADMIN" ] || fail "kafka_admin not built next to $BIN"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)

config() {   # $1 = prefix, $2 = extra "topics" members, $3 = extra top-level members
    cat > "$WORK/$1.json" <<EOF
{"topics": {"prefix": "$1"$2}${3:-},
 "streams": [{"prefix": "p", "synthesizer": "window", "config": {"horizon": 3, "k": 1, "rho": 1}}]}
EOF
}
partitions() { "$ADMIN" "$BOOT" partitions "$1"; }
"$BIN" gen-panel --n 5 --steps 2 --categories 2 --stay 0.8 --seed-hex "$KEY" --stream p --close-steps \
    > "$WORK/in.jsonl"
echo '{"stream": "p", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/map.json"
printf 'person,t,v\na,1,0\nb,1,1\n' > "$WORK/rows.csv"

# --- produce: the config's partitions and replication; --partitions overrides ---------
P=it-topics-prod-$SUFFIX
config "$P" ', "partitions": 3, "replication_factor": 1'
"$BIN" produce --config "$WORK/$P.json" --input "$WORK/in.jsonl" > /dev/null 2> "$WORK/produce.err" \
    || fail "produce: $(cat "$WORK/produce.err")"
[ "$(partitions "$P.updates")" = 3 ] || fail "produce created $P.updates with $(partitions "$P.updates") partitions, not 3"
[ "$("$ADMIN" "$BOOT" replication "$P.updates")" = 1 ] || fail "produce: replication factor"
grep -q "created topic $P.updates (partitions 3, replication factor 1)" "$WORK/produce.err" \
    || fail "produce did not say what it created: $(cat "$WORK/produce.err")"
# an existing topic is left as it is (and not "created" again)
"$BIN" produce --config "$WORK/$P.json" --input "$WORK/in.jsonl" --partitions 7 > /dev/null 2> "$WORK/produce2.err" \
    || fail "produce into an existing topic: $(cat "$WORK/produce2.err")"
[ "$(partitions "$P.updates")" = 3 ] || fail "produce changed an existing topic"
! grep -q "created topic" "$WORK/produce2.err" || fail "produce re-created an existing topic"
P2=it-topics-prod2-$SUFFIX
config "$P2" ''
"$BIN" produce --config "$WORK/$P2.json" --input "$WORK/in.jsonl" --partitions 5 > /dev/null 2>&1 || fail "produce --partitions"
[ "$(partitions "$P2.updates")" = 5 ] || fail "--partitions 5 gave $(partitions "$P2.updates")"

# --- load: with a config, and by --topic alone (the default, 4) -----------------------
L=it-topics-load-$SUFFIX
config "$L" ', "partitions": 2'
"$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" --config "$WORK/$L.json" --quiet \
    > /dev/null 2> "$WORK/load.err" || fail "load: $(cat "$WORK/load.err")"
[ "$(partitions "$L.updates")" = 2 ] || fail "load created $L.updates with $(partitions "$L.updates") partitions, not 2"
"$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" --topic "$L.bare" --bootstrap-servers "$BOOT" --quiet \
    > /dev/null 2> "$WORK/load2.err" || fail "load --topic: $(cat "$WORK/load2.err")"
[ "$(partitions "$L.bare")" = 4 ] || fail "load --topic created $L.bare with $(partitions "$L.bare") partitions, not 4"
[ "$(kcat -b "$BOOT" -C -t "$L.bare" -e -q -f '%o\n' 2> /dev/null | wc -l)" -eq 2 ] || fail "load --topic: 2 rows expected"

# --- export before anything exists: exit 4, nothing written --------------------------
E=it-topics-none-$SUFFIX
config "$E" ''
rc=0
"$BIN" export --config "$WORK/$E.json" --out "$WORK/none" > /dev/null 2> "$WORK/export.err" || rc=$?
[ $rc -eq 4 ] || fail "export of missing topics exited $rc: $(cat "$WORK/export.err")"
grep -q "topic $E.synthetic does not exist" "$WORK/export.err" || fail "export: $(cat "$WORK/export.err")"
[ ! -e "$WORK/none" ] || fail "export of missing topics left $(ls -A "$WORK/none" | tr '\n' ' ') behind"
partitions "$E.synthetic" > /dev/null 2>&1 && fail "export created $E.synthetic"

# --- run: every topic it needs, the updates topic included, the state compacted -------
R=it-topics-run-$SUFFIX
config "$R" ', "partitions": 3'
"$BIN" run --config "$WORK/$R.json" --key-hex "$KEY" --instance-id topics --idle-timeout-ms 0 \
    > "$WORK/run.out" 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 60))
until grep -q "consuming $R.updates" "$WORK/run.err"; do
    kill -0 "$RUN_PID" 2> /dev/null || fail "run exited early"
    [ $SECONDS -lt $deadline ] || fail "run did not start consuming"
    sleep 0.5
done
kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "run exit status after SIGTERM"
RUN_PID=
for t in updates synthetic budget deadletter state; do
    [ "$(partitions "$R.$t")" = 3 ] || fail "run created $R.$t with $(partitions "$R.$t") partitions, not 3"
done
[ "$("$ADMIN" "$BOOT" config "$R.state" cleanup.policy)" = compact ] || fail "state topic not compacted"
[ "$("$ADMIN" "$BOOT" config "$R.synthetic" cleanup.policy)" = delete ] || fail "synthetic topic compacted"
# now export finds them: an empty export, exit 0
"$BIN" export --config "$WORK/$R.json" --out "$WORK/empty" > /dev/null 2> "$WORK/export2.err" \
    || fail "export of empty topics: $(cat "$WORK/export2.err")"

echo "PASS kafka_topics: produce, load and run create what is missing as configured; export of nothing writes nothing"
