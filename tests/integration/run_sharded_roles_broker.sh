#!/usr/bin/env bash
# run_sharded_roles_broker.sh — the two roles through a broker restart
# (docs/kafka.md §10, issue 40 §3): 2 `run --role ingest` instances and 1
# `run --role release` instance over the input of run_sharded_roles.sh (a
# sharded window, a sharded cumulative and an unsharded stream, 4
# partitions) with 12 steps, every transaction held open a while
# (--debug-commit-delay-ms; 3.5 s for the first ingest instance); once some
# steps are released and the first ingest instance holds a transaction
# open, the broker is stopped (controlled shutdown), kept down past the
# group session timeout, and started again on the same data.  Then:
#   * the stop landed mid-run: some steps were released before it, and
#     some only after the start; and inside a transaction: the one held
#     open was still open when the broker was down, and ended after it
#     came back — committed (librdkafka retries EndTxn until the
#     coordinator answers again, what happened in the runs here) or failed,
#     then aborted and rewound to the last committed state;
#   * every instance rode it out — none exited — and finishes on SIGTERM
#     with exit 0;
#   * the committed releases and budget events are byte-identical to
#     `dpstream replay` of the same input — nothing lost, nothing twice.
# The test runs its OWN broker (scripts/kafka-local.sh on free ports in a
# scratch directory, reset on exit), so the suite's shared broker is never
# stopped.  Only talks to 127.0.0.1.
# Usage: bash run_sharded_roles_broker.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles_broker.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
DPSTREAM_KAFKA_DIR=$(mktemp -d)
DPSTREAM_KAFKA_PORT=$(free_port)
DPSTREAM_KAFKA_CONTROLLER_PORT=$(free_port)
until [ "$DPSTREAM_KAFKA_CONTROLLER_PORT" != "$DPSTREAM_KAFKA_PORT" ]; do DPSTREAM_KAFKA_CONTROLLER_PORT=$(free_port); done
export DPSTREAM_KAFKA_DIR DPSTREAM_KAFKA_PORT DPSTREAM_KAFKA_CONTROLLER_PORT
broker() { bash "$ROOT/scripts/kafka-local.sh" "$@"; }
own_broker_gone() { broker reset > /dev/null 2>&1 || true; rm -rf "$DPSTREAM_KAFKA_DIR"; }
trap own_broker_gone EXIT
broker start > /dev/null || { broker log >&2 || true; exit 1; }
DPSTREAM_BOOTSTRAP_SERVERS=$(broker bootstrap)
export DPSTREAM_BOOTSTRAP_SERVERS
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
trap 'cleanup; own_broker_gone' EXIT
ROLES_STEPS=12
roles_config
roles_input 100
FAIL_LOGS=("$WORK/in1.err" "$WORK/in2.err" "$WORK/rel.err")
roles_start ingest roles-in1 in1 --debug-commit-delay-ms 3500
roles_start ingest roles-in2 in2 --debug-commit-delay-ms 300
roles_start release roles-rel rel --debug-commit-delay-ms 300
roles_produce

deadline=$((SECONDS + 120))
until before=$(roles_released); [ "$before" -ge 4 ]; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for the first releases"
    sleep 0.5
done
until roles_holding "$WORK/in1.err"; do
    [ $SECONDS -lt $deadline ] || fail "the first ingest instance held no transaction open"
    sleep 0.05
done
broker stop > /dev/null
roles_holding "$WORK/in1.err" || fail "the first ingest instance's held transaction ended before the broker stopped"
held_at=$(grep -c . "$WORK/in1.err")
sleep 10   # past session.timeout.ms (6000): the groups' members expire at the start
for p in "${RUN_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "an instance (pid $p) exited while the broker was down"; done
broker start > /dev/null || { broker log >&2; fail "the broker did not start again"; }
after=$(roles_released)
echo "broker stopped with $before of $EXPECT releases committed, started again with $after"
[ "$after" -lt "$EXPECT" ] || fail "the broker stop came after the run was done ($after releases at the start)"
for i in in1 in2 rel; do
    grep -q "brokers are down" "$WORK/$i.err" || fail "instance $i never saw the broker go down"
done
roles_wait_all 300
roles_stop_all
# the held transaction's end (the first after the stop) and what followed it
fate=$(tail -n +"$held_at" "$WORK/in1.err" | grep -o "held transaction [a-z ]*" | head -1)
case "$fate" in
"held transaction committed") ;;
"held transaction failed to commit")
    tail -n +"$held_at" "$WORK/in1.err" | grep -q "transaction aborted: rewinding" \
        || fail "the first ingest instance did not rewind after its transaction failed" ;;
*) fail "the transaction open across the outage never ended: '$fate'" ;;
esac
aborted=$(cat "$WORK"/in1.err "$WORK"/in2.err "$WORK"/rel.err | grep -c "transaction aborted: rewinding" || true)
roles_same_as_replay
echo "ok: a broker restart mid-run ($before of $EXPECT steps released before the stop, $after at the start;" \
    "a transaction open across it: ${fate#held transaction }; $aborted transaction(s) aborted and rewound);" \
    "byte-identical to replay"
