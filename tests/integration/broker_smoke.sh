#!/usr/bin/env bash
# Smoke test of the local Apache Kafka broker (scripts/kafka-local.sh):
#   1. start it unless it already runs (a second `start` must be a no-op);
#   2. produce 100 keyed messages to a fresh topic with kcat and consume
#      them back: same count, same keys and values, same order;
#   3. produce 100 more inside one Kafka transaction and read them with
#      isolation.level=read_committed — the single-node transaction
#      settings (transaction.state.log.* = 1) are what dpstream's
#      exactly-once commit depends on;
#   4. stop the broker again only if this script started it.
# Usage (from anywhere): bash tests/integration/broker_smoke.sh [dpstream-binary]
# The optional argument (ctest passes the dpstream binary) is not used.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kafka=(bash "$root/scripts/kafka-local.sh")

fail() { echo "broker_smoke: FAIL: $*" >&2; exit 1; }

started_here=0
work=$(mktemp -d)
cleanup() {
    rm -rf "$work"
    if [ "$started_here" = 1 ]; then "${kafka[@]}" stop || true; fi
}
trap cleanup EXIT

if "${kafka[@]}" status >/dev/null 2>&1; then
    echo "broker_smoke: using the running broker"
else
    "${kafka[@]}" start || fail "kafka-local.sh start"
    started_here=1
fi
"${kafka[@]}" start || fail "a second start on a running broker must succeed"
"${kafka[@]}" status || fail "status after start"
bootstrap=$("${kafka[@]}" bootstrap)

# A topic no earlier run used (pid + nanoseconds + random); the broker
# auto-creates it on the first produce.
suffix="$$-$(date +%s%N)-$RANDOM"

roundtrip() {   # roundtrip <topic> plain|txn
    local topic=$1 mode=$2
    local -a pargs=() cargs=()
    if [ "$mode" = txn ]; then
        pargs=(-X "transactional.id=broker-smoke-$suffix")
        cargs=(-X isolation.level=read_committed)
    else
        pargs=(-X enable.idempotence=true)
    fi
    # Fed on stdin: kcat sends each line as one message (a file argument
    # would become a single message).
    for i in $(seq 1 100); do echo "key-$i:value-$i-$topic"; done >"$work/$topic.in"
    kcat -b "$bootstrap" -P -t "$topic" -K: "${pargs[@]}" -X message.timeout.ms=60000 \
        <"$work/$topic.in" || fail "produce to $topic ($mode)"
    # -e: exit at the end of the partition; -c 100 stops early once all
    # arrived; the consumer may briefly see no leader for a new topic, so
    # retry a few times before declaring the messages lost.
    local n=0 attempt
    for attempt in 1 2 3 4 5; do
        timeout 60 kcat -b "$bootstrap" -C -t "$topic" -o beginning -e -c 100 -q \
            -f '%k:%s\n' "${cargs[@]}" >"$work/$topic.out" 2>"$work/$topic.err" || true
        n=$(wc -l <"$work/$topic.out")
        [ "$n" -ge 100 ] && break
        sleep 1
    done
    [ "$n" -eq 100 ] || { cat "$work/$topic.err" >&2; fail "$topic ($mode): consumed $n of 100 messages"; }
    cmp -s "$work/$topic.in" "$work/$topic.out" || {
        diff "$work/$topic.in" "$work/$topic.out" | head >&2
        fail "$topic ($mode): consumed messages differ from the produced ones"
    }
    echo "broker_smoke: $topic ($mode): 100 produced, 100 consumed, identical"
}

roundtrip "dpstream-smoke-$suffix" plain
roundtrip "dpstream-smoke-txn-$suffix" txn

# The topic must be visible in metadata with its one partition.
kcat -b "$bootstrap" -L -t "dpstream-smoke-$suffix" | grep -q "1 partitions" \
    || fail "metadata for dpstream-smoke-$suffix does not show 1 partition"

echo "broker_smoke: PASS"
