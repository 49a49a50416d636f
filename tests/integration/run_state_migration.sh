#!/usr/bin/env bash
# run_state_migration.sh — a state topic of the earlier layout (records
# placed by key hash, no layout marker: what every dpstream before issue 42
# wrote) is refused, and `dpstream migrate-state` makes it usable
# (README "Operations", state_layout.h):
#   * a deployment releases step 1 of three streams on a 3-partition
#     updates topic and stops;
#   * its state is copied the way the earlier layout placed it — every
#     committed record into the partition its key hashes to (librdkafka's
#     default partitioner), no marker — into a topic LEGACY;
#   * `run` with "topics": {"state": LEGACY} refuses at once (exit 5), naming
#     the topic and `dpstream migrate-state`, and releases nothing;
#   * `migrate-state --to NEW` copies it (exit 0); again into NEW is refused
#     (not empty, exit 4);
#   * `run` with "state": NEW restores the three streams from their
#     committed offsets and releases step 2, and all releases and budget
#     events equal `dpstream replay` of both steps stream by stream (no step
#     released twice, none lost).
# Usage: bash run_state_migration.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_state_migration.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import confluent_kafka' 2>/dev/null \
    || fail "needs the venv of scripts/install-deps.sh ($PY with confluent-kafka)"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a
PREFIX=it-migrate-$(cut -c1-8 /proc/sys/kernel/random/uuid)
config() {   # $1 = file, $2 = state topic (empty: the prefix's)
    local state=${2:+, \"state\": \"$2\"}
    cat > "$1" <<JEOF
{"topics": {"prefix": "$PREFIX", "partitions": 3$state},
 "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"prefix": "s/", "synthesizer": "window", "config": {"horizon": 4, "k": 2, "categories": 2, "rho": 1}}]}
JEOF
}
config "$WORK/config.json" ""
config "$WORK/legacy.json" "$PREFIX.state-legacy"
config "$WORK/new.json" "$PREFIX.state-new"
for s in s/a s/b s/c; do
    "$BIN" gen-panel --n 20 --steps 2 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps \
        --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
python3 - "$WORK" <<'PYEOF'
import sys, json
w = sys.argv[1]
rows = [l for s in "abc" for l in open(f"{w}/s_{s}.jsonl")]
step = lambda t: [l for l in rows if json.loads(l)["step"] == t]
open(f"{w}/step1.jsonl", "w").write("".join(step(1)))
open(f"{w}/step2.jsonl", "w").write("".join(step(2)))
open(f"{w}/all.jsonl", "w").write("".join(step(1) + step(2)))
PYEOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/all.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
[ "$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")" -eq 6 ] || fail "replay did not release 6 steps"

releases() {   # committed manifests on the output topic
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" || { echo 0; return; }
    grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
}
run_until() {   # $1 = config, $2 = releases to wait for, $3 = log
    "$BIN" run --config "$1" --key-hex "$KEY" --instance-id migrate --idle-timeout-ms 0 > /dev/null 2> "$3" &
    RUN_PID=$!
    FAIL_LOGS=("$3")
    local deadline=$((SECONDS + 90))
    until [ "$(releases)" -ge "$2" ]; do
        kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
        [ $SECONDS -lt $deadline ] || fail "only $(releases) of $2 steps released"
        sleep 1
    done
    kill -TERM "$RUN_PID"
    wait "$RUN_PID" || fail "processor exit $? after SIGTERM"
    RUN_PID=
}

# --- step 1 under the co-partitioned layout --------------------------------------------
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step1.jsonl" > /dev/null 2>&1 || fail "produce step 1"
run_until "$WORK/config.json" 3 "$WORK/run1.err"

# --- the same state as the earlier layout wrote it -------------------------------------------
"$PY" - "$BOOT" "$PREFIX" <<'PYEOF' || fail "could not build the earlier-layout state topic"
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
boot, prefix = sys.argv[1], sys.argv[2]
src, dst = prefix + ".state", prefix + ".state-legacy"
a = AdminClient({"bootstrap.servers": boot})
for f in a.create_topics([NewTopic(dst, 3, 1, config={"cleanup.policy": "compact"})]).values():
    f.result()
c = Consumer({"bootstrap.servers": boot, "group.id": "it-migrate-copy", "isolation.level": "read_committed",
              "enable.partition.eof": True, "enable.auto.commit": False})
parts = c.list_topics(src, timeout=20).topics[src].partitions
c.assign([TopicPartition(src, p, 0) for p in parts])
p = Producer({"bootstrap.servers": boot, "enable.idempotence": True})
eof, n = set(), 0
while len(eof) < len(parts):
    m = c.poll(5)
    if m is None:
        continue
    if m.error():
        eof.add(m.partition())
        continue
    if m.key().startswith(b"__dpstream.layout/"):
        continue
    while True:   # the earlier layout: partition by key hash (no partition given)
        try:
            p.produce(dst, key=m.key(), value=m.value(), headers=m.headers())
            break
        except BufferError:
            p.poll(0.1)
    n += 1
assert p.flush(30) == 0 and n > 0
print(f"copied {n} records by key hash", file=sys.stderr)
PYEOF

# --- refused, then migrated ---------------------------------------------------------------------
"$BIN" produce --config "$WORK/config.json" --input "$WORK/step2.jsonl" > /dev/null 2>&1 || fail "produce step 2"
rc=0
timeout 60 "$BIN" run --config "$WORK/legacy.json" --key-hex "$KEY" --instance-id migrate --idle-timeout-ms 0 \
    > /dev/null 2> "$WORK/legacy.err" || rc=$?
FAIL_LOGS=("$WORK/legacy.err")
[ $rc -eq 5 ] || fail "run on the earlier-layout state topic exited $rc, want 5 (refused)"
grep -q "the state topic $PREFIX.state-legacy \(does not start with a layout marker\|holds records but none in partition 0\)" \
    "$WORK/legacy.err" \
    || fail "the refusal does not name the topic and the reason"
grep -q "dpstream migrate-state" "$WORK/legacy.err" || fail "the refusal does not say how to migrate"
[ "$(releases)" -eq 3 ] || fail "the refused run released something"

"$BIN" migrate-state --config "$WORK/legacy.json" --to "$PREFIX.state-new" > "$WORK/migrate.out" 2> "$WORK/migrate.err" \
    || { FAIL_LOGS=("$WORK/migrate.err"); fail "migrate-state failed"; }
grep -q "^copied [1-9][0-9]* state records" "$WORK/migrate.out" || fail "migrate-state did not say what it copied"
rc=0
"$BIN" migrate-state --config "$WORK/legacy.json" --to "$PREFIX.state-new" > /dev/null 2> "$WORK/migrate2.err" || rc=$?
[ $rc -eq 4 ] && grep -q "is not empty" "$WORK/migrate2.err" || fail "a second migration into the same topic was not refused ($rc)"

run_until "$WORK/new.json" 6 "$WORK/run2.err"
grep -q "restored 3 stream(s)" "$WORK/run2.err" || fail "the migrated state did not restore the three streams"
[ "$(grep -c "resuming at offset" "$WORK/run2.err")" -ge 1 ] || fail "no partition resumed from its committed offset"
python3 - "$WORK" <<'PYEOF' || fail "releases after the migration differ from replay"
import sys, json, collections
w = sys.argv[1]
def group(path):
    g = collections.defaultdict(list)
    for line in open(path):
        g[json.loads(line)["stream"]].append(line)
    return dict(g)
ok = all(group(f"{w}/replay/{f}") == group(f"{w}/out/{f}") for f in ("releases.jsonl", "budget.jsonl"))
sys.exit(0 if ok else 1)
PYEOF
"$PY" - "$BOOT" "$PREFIX" <<'PYEOF' || echo "could not delete the topics $PREFIX.*" >&2
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
topics = [t for t in a.list_topics(timeout=20).topics if t.startswith(sys.argv[2] + ".")]
for f in (a.delete_topics(topics, operation_timeout=60).values() if topics else []):
    f.result()
PYEOF
echo "PASS run_state_migration: the earlier layout refused (exit 5), migrate-state copied it, the restart resumed and released step 2 identical to replay"
