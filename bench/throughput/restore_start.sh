#!/usr/bin/env bash
# restore_start.sh — start → assigned with an empty state topic
# (bench/RESULTS.md, issue 42): for each P given, a fresh deployment whose
# updates topic has P partitions and holds nothing; `dpstream run` starts,
# joins its group, restores (nothing) and is assigned all P partitions.
# From its JSON log (log events, log.h): subscribed (the consumer
# subscribed), restore_start (the group handed it the partitions: the join
# is done), restore_done, rebalance_assign.  Prints one RESULT line per P:
# process start → subscribed, subscribed → restore_start (the group join),
# restore_start → restore_done (the restore), and process start →
# rebalance_assign.  Not a test: numbers depend on the machine.  Topics
# have a unique prefix and are deleted at the end (Python venv,
# confluent-kafka; scripts/install-deps.sh).
# Usage: bash restore_start.sh path/to/dpstream [P ...]   (default 4 16 64)
set -euo pipefail
BIN=$(realpath "${1:?usage: restore_start.sh path/to/dpstream [P ...]}")
shift
[ $# -gt 0 ] || set -- 4 16 64
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
WORK=$(mktemp -d)
PID=
PREFIX=bench-start-$$-$(date +%s)
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
cleanup() {
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
    rm -rf "$WORK"
    "$PY" - "$BOOT" "$PREFIX" <<'PYEOF' || echo "could not delete the topics $PREFIX-*" >&2
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
topics = [t for t in a.list_topics(timeout=20).topics if t.startswith(sys.argv[2] + "-")]
for f in (a.delete_topics(topics, operation_timeout=60).values() if topics else []):
    f.result()
PYEOF
}
trap cleanup EXIT
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
ms() { python3 -c 'import sys, datetime; print(int(datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp() * 1000))' "$1"; }
for P in "$@"; do
    cat > "$WORK/c$P.json" <<JEOF
{"topics": {"prefix": "$PREFIX-$P", "partitions": $P},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"prefix": "r/", "synthesizer": "window", "config": {"horizon": 4, "k": 3, "categories": 2, "rho": 0.5}}]}
JEOF
    for round in 1 2; do   # round 1 creates the topics; round 2 starts on existing (empty) ones
        log=$WORK/run$P.$round.err
        t0=$(date +%s%3N)
        "$BIN" run --config "$WORK/c$P.json" --key-hex "$KEY" --instance-id start --idle-timeout-ms 0 \
            --log-format json 2> "$log" > /dev/null &
        PID=$!
        deadline=$((SECONDS + 120))
        until grep -q '"event":"rebalance_assign"' "$log"; do
            kill -0 "$PID" 2>/dev/null || { tail "$log" >&2; echo "dpstream exited early" >&2; exit 1; }
            [ $SECONDS -lt $deadline ] || { echo "timed out" >&2; exit 1; }
            sleep 0.05
        done
        kill -TERM "$PID"; wait "$PID" || true; PID=
        ev() { ms "$(grep "\"event\":\"$1\"" "$log" | head -1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')"; }
        sub=$(ev subscribed) rs=$(ev restore_start) rd=$(ev restore_done) as=$(ev rebalance_assign)
        echo "RESULT start: P=$P round $round ($([ $round = 1 ] && echo "topics created" || echo "topics exist")):" \
             "start→subscribed $((sub - t0)) ms, group join (subscribed→restore_start) $((rs - sub)) ms," \
             "restore (restore_start→restore_done) $((rd - rs)) ms, start→assigned $((as - t0)) ms"
    done
done
