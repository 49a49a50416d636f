#!/usr/bin/env bash
# run_registry_outage.sh — a schema registry that stops answering mid-run
# fails the processor closed, and nothing is lost or dead-lettered for it:
#   1. a private registry (scripts/registry-local.sh on its own port and
#      state directory, so the shared one is untouched) gets dpstream's
#      schemas; step 1 of a window stream is produced on dpstream's own
#      schema and released;
#   2. step 2 is serialized with a newer Update schema (confluent-kafka's
#      AvroSerializer registers it), the registry is stopped, then step 2's
#      bytes are produced: the processor meets a writer schema id it has
#      not seen, cannot fetch it, and exits 4 naming the registry request —
#      no release of step 2, no dead letter;
#   3. the registry comes back (in-memory: the same registrations in the
#      same order give the same ids) and a new run releases step 2 from
#      the uncommitted input: releases and budget events equal `dpstream
#      replay` of the whole input.
# Usage: bash run_registry_outage.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_registry_outage.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import confluent_kafka, fastavro, requests' 2>/dev/null \
    || fail "needs the venv of scripts/install-deps.sh ($PY with confluent-kafka, fastavro, requests)"

export DPSTREAM_REGISTRY_PORT=${DPSTREAM_OUTAGE_REGISTRY_PORT:-39181}
export DPSTREAM_REGISTRY_DIR=$WORK/registry
registry() { bash "$ROOT/scripts/registry-local.sh" "$@"; }
trap 'registry stop > /dev/null 2>&1 || true; cleanup' EXIT
registry start 2> "$WORK/registry.err" || { cat "$WORK/registry.err" >&2; fail "could not start a private registry"; }
REG=$(registry url)

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-regout-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a0a7a
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 1},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "schema_registry": {"url": "$REG", "request.timeout.ms": 2000, "max.retries": 2, "retries.wait.ms": 200},
 "streams": [{"prefix": "win/", "synthesizer": "window", "config": {"horizon": 3, "k": 2, "categories": 2, "rho": 0.5}}]}
EOF
"$BIN" gen-panel --n 12 --steps 2 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream win/a --close-steps \
    --out "$WORK/input.jsonl"
grep '"step":1,' "$WORK/input.jsonl" > "$WORK/step1.jsonl"
grep '"step":2,' "$WORK/input.jsonl" > "$WORK/step2.jsonl"
[ "$(cat "$WORK/step1.jsonl" "$WORK/step2.jsonl" | wc -l)" -eq "$(wc -l < "$WORK/input.jsonl")" ] || fail "split of the input"
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null

register_all() {   # dpstream's six schemas, then the newer Update: the same order each time
    "$BIN" produce --config "$WORK/config.json" --input "$1" > /dev/null 2>> "$WORK/produce.err" \
        || { cat "$WORK/produce.err" >&2; fail "dpstream produce"; }
    "$PY" "$ROOT/tests/integration/lib/registry_clients.py" serialize "$REG" "$PREFIX.updates" "$ROOT/schemas" \
        "$WORK/step2.jsonl" "$WORK/step2.json" > /dev/null 2>> "$WORK/py.err" || { cat "$WORK/py.err" >&2; fail "serialize"; }
}
releases() {
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" \
        || return 1
    grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true
}

: > "$WORK/empty.jsonl"
register_all "$WORK/step1.jsonl"
NEWER=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))[0][1][2:10], 16))' "$WORK/step2.json")
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id outage --idle-timeout-ms 0 \
    --dlq-commit-ms 300 > /dev/null 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 120))
until [ "$(releases)" = 1 ]; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for the release of step 1"
    sleep 1
done

registry stop 2> /dev/null
"$PY" "$ROOT/tests/integration/lib/registry_clients.py" produce-raw "$BOOT" "$PREFIX.updates" "$WORK/step2.json" \
    2>> "$WORK/py.err" || { cat "$WORK/py.err" >&2; fail "produce-raw"; }
rc=0
timeout 60 tail --pid="$RUN_PID" -f /dev/null || fail "the processor still runs 60 s after meeting an unknown id with the registry away"
wait "$RUN_PID" || rc=$?; RUN_PID=
[ "$rc" -eq 4 ] || fail "processor exited $rc with the registry away, want 4"
grep -q "schema registry GET $REG/schemas/ids/$NEWER: .*after 3 attempts" "$WORK/run.err" \
    || fail "the fatal error does not name the registry request"
# export needs the registry too: count on the topics themselves
count() {   # $1 = topic suffix, $2 = dpstream.type header value
    kcat -b "$BOOT" -C -t "$PREFIX.$1" -o beginning -e -q -X isolation.level=read_committed -f '%h\n' 2>/dev/null \
        | grep -c "dpstream.type=$2" || true
}
[ "$(count synthetic ReleaseManifest)" = 1 ] || fail "step 2 was released without its writer schema"
[ "$(count deadletter DeadLetter)" = 0 ] || fail "updates were dead-lettered because the registry was away"

# back: a fresh in-memory registry; the same registrations give the same ids
registry start 2>> "$WORK/registry.err" || fail "could not restart the private registry"
register_all "$WORK/empty.jsonl"
again=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))[0][1][2:10], 16))' "$WORK/step2.json")
[ "$again" = "$NEWER" ] || fail "the restarted registry gave the newer schema id $again, not $NEWER"
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id outage --idle-timeout-ms 0 \
    --dlq-commit-ms 300 > /dev/null 2>> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 120))
until [ "$(releases)" = 2 ]; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early after the registry came back"
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for the release of step 2"
    sleep 1
done
kill -TERM "$RUN_PID"; rc=0; wait "$RUN_PID" || rc=$?; RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
releases > /dev/null || fail "export"
for f in releases.jsonl budget.jsonl; do
    cmp -s <(sort "$WORK/replay/$f") <(sort "$WORK/out/$f") || fail "$f differs from replay"
done
[ ! -s "$WORK/dl.jsonl" ] || fail "dead letters after recovery: $(head -3 "$WORK/dl.jsonl")"
echo "PASS run_registry_outage: the registry away stopped the processor (exit 4, no dead letter, no release);" \
     "after it came back the uncommitted step was released as replay says"
