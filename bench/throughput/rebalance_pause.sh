#!/usr/bin/env bash
# rebalance_pause.sh — what a rebalance costs the partitions that stay
# (bench/RESULTS.md, issue 42 §4).  Instance A holds all 4 partitions of an
# updates topic, each with a window stream of N individuals (state on the
# state topic); instance B joins the group, and the rebalance moves some of
# A's partitions to B.  From A's json log (rebalance_revoke and
# rebalance_assign carry their callback's time; restore_start/_done): how
# many partitions A had revoked and restored again, and how long A
# consumed nothing — with the eager protocol, from the start of its revoke
# callback to the end of its assign callback (it holds no partition in
# between); with a cooperative one, only its callbacks block it.  And B's
# restore of what it gained.  While B joins, a feeder appends a report to
# every stream each FEED_MS ms (default 4), and A's partition_pause events
# give, per partition A keeps, the gap between the last message it handled
# before the rebalance and the first after: the pause the staying
# partitions see.  STRATEGY: librdkafka's
# partition.assignment.strategy for both (default: librdkafka's, eager
# "range,roundrobin"; or "cooperative-sticky").  Prints RESULT lines.  Not
# a test: numbers depend on the machine.  Topics have a unique prefix and
# are deleted at the end (Python venv, confluent-kafka).
# REBALANCE_LOGS=DIR keeps both instances' logs there.
# Usage: bash rebalance_pause.sh path/to/dpstream [N] [STRATEGY]
set -euo pipefail
BIN=$(realpath "${1:?usage: rebalance_pause.sh path/to/dpstream [N] [STRATEGY]}")
N=${2:-100000} STRATEGY=${3:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
WORK=$(mktemp -d)
PIDS=()
PREFIX=bench-rebal-$$-$(date +%s)
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
    "$PY" - "$BOOT" "$PREFIX" <<'PYEOF' || echo "could not delete the topics $PREFIX.*" >&2
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
topics = [t for t in a.list_topics(timeout=20).topics if t.startswith(sys.argv[2] + ".")]
for f in (a.delete_topics(topics, operation_timeout=60).values() if topics else []):
    f.result()
PYEOF
}
trap cleanup EXIT
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
strategy=${STRATEGY:+, \"partition.assignment.strategy\": \"$STRATEGY\"}
cat > "$WORK/config.json" <<JEOF
{"topics": {"prefix": "$PREFIX", "partitions": 4},
 "kafka": {"session.timeout.ms": "6000"$strategy},
 "streams": [{"prefix": "r/", "synthesizer": "window", "config": {"horizon": 4, "k": 3, "categories": 2, "rho": 0.5}}]}
JEOF
python3 - > "$WORK/streams" <<'PYEOF'
import zlib
got, i = {}, 0
while len(got) < 4:
    got.setdefault(zlib.crc32(f"r/{i}".encode()) % 4, f"r/{i}")
    i += 1
print("\n".join(got[k] for k in sorted(got)))
PYEOF
: > "$WORK/input.jsonl"
while read -r s; do
    "$BIN" gen-panel --n "$N" --steps 2 --categories 2 --stay 0.9 --seed-hex "$SEED" --stream "$s" --close-steps \
        >> "$WORK/input.jsonl"
done < "$WORK/streams"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 4 > /dev/null
start() {   # $1 = instance id
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id "$1" --idle-timeout-ms 0 \
        --log-format json 2> "$WORK/$1.err" > /dev/null &
    PIDS+=($!)
}
wait_for() {   # $1 = log, $2 = pattern, $3 = count
    local deadline=$((SECONDS + 300))
    until [ "$(grep -c "$2" "$1" 2>/dev/null || true)" -ge "$3" ]; do
        [ $SECONDS -lt $deadline ] || { tail "$1" >&2; echo "timed out waiting for $2" >&2; exit 1; }
        sleep 0.2
    done
}
start a
wait_for "$WORK/a.err" "released step 2 of stream" 4
# A steady trickle of step-3 reports to every stream (one per stream every
# FEED_MS ms, new entities) from before B's join to after it, so that each
# partition A keeps has a message to handle at every moment: the gap
# around the rebalance between two handled messages of such a partition
# (A's partition_pause events) is what the rebalance cost it.
FEED_MS=${FEED_MS:-4}
python3 - "$WORK/streams" "$FEED_MS" 2> /dev/null <<'PYEOF' | "$BIN" produce --config "$WORK/config.json" --input - \
        --partitions 4 > /dev/null 2> "$WORK/feed.err" &
import sys, time, json
streams = open(sys.argv[1]).read().split()
gap, i, end = int(sys.argv[2]) / 1000, 0, time.monotonic() + 30
while time.monotonic() < end:
    i += 1
    for s in streams:
        print(json.dumps({"stream": s, "step": 3, "kind": "REPORT", "entity": f"f{i}", "value": i % 2}), flush=True)
    time.sleep(gap)
PYEOF
PIDS+=($!)
FEED=$!
sleep 3
b_start=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
start b
wait_for "$WORK/b.err" '"event":"restore_done"' 1
sleep 8   # a cooperative rebalance takes two rounds
stop_at=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)   # what shutdown revokes is not the rebalance's
kill -TERM "$FEED" 2>/dev/null || true
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" || true; done
PIDS=()
[ -z "${REBALANCE_LOGS:-}" ] || cp "$WORK/a.err" "$WORK/b.err" "$REBALANCE_LOGS/"   # to look at
python3 - "$WORK/a.err" "$WORK/b.err" "$b_start" "${STRATEGY:-default (eager)}" "$stop_at" <<'PYEOF'
import sys, json, re, datetime
def events(path, since, until=sys.argv[5]):
    out = []
    for line in open(path):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if since <= e["ts"] < until:
            e["t"] = datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))
            out.append(e)
    return out
a, b = events(sys.argv[1], sys.argv[3]), events(sys.argv[2], sys.argv[3])
def cb(e):
    m = re.search(r"(\d+) partition\(s\).*callback (\d+) ms", e["msg"])
    return int(m.group(1)), int(m.group(2))
rev = [e for e in a if e["event"] == "rebalance_revoke"]
asg = [e for e in a if e["event"] == "rebalance_assign"]
rst = [e for e in a if e["event"] == "restore_start" and not re.search(r"restoring 0 partition", e["msg"])]
kept = sorted({e["partition"] for e in a if e["event"] == "partition_kept"})
# per partition A handled messages of both before and after the rebalance:
# the longest gap between two of its handled messages across a rebalance
gaps = {}
for e in a:
    if e["event"] == "partition_pause":
        ms = int(re.search(r"handled (\d+) ms after", e["msg"]).group(1))
        gaps[e["partition"]] = max(gaps.get(e["partition"], 0), ms)
revoked = sum(cb(e)[0] for e in rev)
reassigned = sum(cb(e)[0] for e in asg)
blocked = sum(cb(e)[1] for e in rev + asg)
if rev and asg and "eager" in asg[-1]["msg"]:
    first = rev[0]["t"] - datetime.timedelta(milliseconds=cb(rev[0])[1])
    pause = int((asg[-1]["t"] - first).total_seconds() * 1000)
    how = f"no partition held from its revoke callback's start to its assign callback's end: {pause} ms"
else:
    pause = max([cb(e)[1] for e in rev + asg] or [0])
    how = f"the staying partitions wait only while a callback runs: longest {pause} ms"
# B's last restore (a cooperative rebalance first assigns it nothing, then what moves)
bs = [e for e in b if e["event"] == "restore_start"]
bd = [e for e in b if e["event"] == "restore_done"]
b_ms = int((bd[-1]["t"] - bs[-1]["t"]).total_seconds() * 1000) if bs and bd else -1
print(f"RESULT rebalance ({sys.argv[4]}): A had {revoked} partition(s) revoked and {reassigned} (re)assigned "
      f"in {len(rev)} revoke / {len(asg)} assign callbacks ({blocked} ms in them), restores of partitions "
      f"{len(rst)}, partitions kept in memory {kept}; A's pause: {how}; B restored what it gained in {b_ms} ms")
print(f"RESULT staying partitions ({sys.argv[4]}): gap between the last message A handled before the rebalance "
      f"and the first after, per partition A kept: " +
      (", ".join(f"[{k}] {v} ms" for k, v in sorted(gaps.items())) or "none seen"))
PYEOF
