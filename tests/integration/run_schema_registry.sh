#!/usr/bin/env bash
# run_schema_registry.sh — the config's "schema_registry" on the real broker
# and a real schema registry (scripts/registry-local.sh: Apicurio 2.4.2's
# Confluent-compatible API), with stock Confluent clients on both sides
# (tests/integration/lib/registry_clients.py):
#   * dpstream registers its six schemas itself, under TopicRecordNameStrategy
#     subjects, each set to BACKWARD compatibility;
#   * a producer on confluent-kafka's AvroSerializer writes the input with
#     three Update schemas in turn — dpstream's, a newer one (an added
#     optional field) and an older one (no event_time) — and every update
#     is read: the releases equal `dpstream replay` of the same input;
#   * an incompatible Update schema (step a string) is refused under
#     dpstream's subject (HTTP 409), and its messages, registered by the
#     producer under another subject, are dead-lettered as
#     INCOMPATIBLE_SCHEMA with a reason naming the writer schema id;
#   * a consumer on confluent-kafka's AvroDeserializer reads the synthetic
#     topic through the registry (both record types) and gets the replay's
#     records; every frame carries the id dpstream registered.
# Topic names carry a random suffix, so the shared broker and registry are safe.
# Usage: bash run_schema_registry.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_schema_registry.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import confluent_kafka, fastavro, requests' 2>/dev/null \
    || fail "needs the venv of scripts/install-deps.sh ($PY with confluent-kafka, fastavro, requests)"
REG=${DPSTREAM_REGISTRY_URL:-$(bash "$ROOT/scripts/registry-local.sh" url)}
case "$REG" in http://127.0.0.1:*) ;; *) fail "refusing a schema registry that is not on 127.0.0.1: $REG" ;; esac
curl -fsS -m 5 -o /dev/null "$REG/subjects" || fail "no schema registry answers at $REG (scripts/registry-local.sh start)"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-registry-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=7e577e577e577e577e577e577e577e577e577e577e577e577e577e577e577e57
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX", "partitions": 2},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "schema_registry": {"url": "$REG", "request.timeout.ms": 5000, "max.retries": 2, "retries.wait.ms": 200},
 "streams": [
   {"prefix": "win/", "synthesizer": "window",
    "config": {"horizon": 4, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "config": {"horizon": 4, "rho": 0.25}}
 ]}
EOF
for s in win/a cum/a; do
    "$BIN" gen-panel --n 20 --steps 4 --categories 2 --stay 0.85 --seed-hex "$SEED" \
        --stream "$s" --close-steps --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
# interleaved, so each of the three schemas carries updates of both streams
paste -d '\n' "$WORK/win_a.jsonl" "$WORK/cum_a.jsonl" | grep -v '^$' > "$WORK/input.jsonl"
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
EXPECT=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
[ "$EXPECT" -eq 8 ] || fail "replay released $EXPECT steps, expected 8"
[ ! -s "$WORK/replay/rejected.jsonl" ] || fail "replay rejected input lines"

# dpstream registers its schemas (and creates the updates topic) first, as
# a deployment would before producers start: the BACKWARD level it sets is
# what refuses the incompatible schema below.
: > "$WORK/empty.jsonl"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/empty.jsonl" > /dev/null 2> "$WORK/produce.err" \
    || { cat "$WORK/produce.err" >&2; fail "dpstream produce (registration) failed"; }
declare -A SUBJECT=([Update]=updates [SyntheticRecord]=synthetic [ReleaseManifest]=synthetic
                    [BudgetEvent]=budget [DeadLetter]=deadletter [Snapshot]=state)
declare -A ID
for t in "${!SUBJECT[@]}"; do
    subj="$PREFIX.${SUBJECT[$t]}-org.dpstream.v1.$t"
    ID[$t]=$(curl -fsS "$REG/subjects/$subj/versions/1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') \
        || fail "subject $subj is not registered"
    level=$(curl -fsS "$REG/config/$subj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["compatibilityLevel"])')
    [ "$level" = BACKWARD ] || fail "subject $subj has compatibility $level, expected BACKWARD"
done

"$PY" "$ROOT/tests/integration/lib/registry_clients.py" produce "$BOOT" "$REG" "$PREFIX.updates" "$ROOT/schemas" \
    "$WORK/input.jsonl" "$WORK/ids.json" 2> "$WORK/py.err" || { cat "$WORK/py.err" >&2; fail "the Python producer failed"; }
read -r OWN NEWER OLDER BAD REFUSED < <(python3 -c '
import json, sys; d = json.load(open(sys.argv[1]))
print(d["own"], d["newer"], d["older"], d["incompatible"], d["refused_status"])' "$WORK/ids.json")
[ "$REFUSED" = 409 ] || fail "the registry did not refuse the incompatible Update under dpstream's subject (got $REFUSED)"
[ "$NEWER" != "${ID[Update]}" ] && [ "$OLDER" != "${ID[Update]}" ] && [ "$NEWER" != "$OLDER" ] \
    || fail "the evolved schemas did not get ids of their own (own ${ID[Update]}, newer $NEWER, older $OLDER)"

"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id registry --chunk-records 5 \
    --idle-timeout-ms 0 --dlq-commit-ms 300 >> "$WORK/run.out" 2>> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 180))
while :; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "processor exited early"
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err"; then
        n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
        d=$(wc -l < "$WORK/dl.jsonl")
        if [ "$n" -ge "$EXPECT" ] && [ "$d" -ge 3 ]; then break; fi
    fi
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases and 3 dead letters"
    sleep 2
done
kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?; RUN_PID=
[ "$rc" -eq 0 ] || fail "processor exited $rc after SIGTERM"
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export failed"; }

python3 - "$WORK" "$BAD" <<'EOF' || fail "Kafka outputs differ from replay"
import sys, json
w, bad = sys.argv[1], sys.argv[2]
def by_stream(path):
    g = {}
    for line in open(path):
        g.setdefault(json.loads(line)["stream"], []).append(line)
    return g
ok = True
for f in ["releases.jsonl", "budget.jsonl"]:
    if by_stream(f"{w}/replay/{f}") != by_stream(f"{w}/out/{f}"):
        print(f"{f} differs from replay"); ok = False
dl = [json.loads(l) for l in open(f"{w}/dl.jsonl")]
if [d["reason"] for d in dl] != ["INCOMPATIBLE_SCHEMA"] * 3:
    print(f"dead letters: {[d['reason'] for d in dl]}"); ok = False
for d in dl:
    if f"writer schema id {bad} " not in d["text"]:
        print(f"dead letter text does not name writer schema id {bad}: {d['text']}"); ok = False
sys.exit(0 if ok else 1)
EOF
for id in "$NEWER" "$OLDER"; do
    grep -q "writer schema id $id are read through Avro schema resolution" "$WORK/run.err" \
        || fail "no log line says writer schema id $id was resolved"
done

# the stock consumer: AvroDeserializer, writer schemas from the registry
"$PY" "$ROOT/tests/integration/lib/registry_clients.py" consume "$BOOT" "$REG" "$PREFIX.synthetic" "$EXPECT" \
    "$WORK/py.jsonl" > "$WORK/py.ids" 2> "$WORK/py.err" || { cat "$WORK/py.err" >&2; fail "the Python consumer failed"; }
python3 - "$WORK" <<'EOF' || fail "the stock consumer's releases differ from replay"
import collections, json, sys
w = sys.argv[1]
want = collections.defaultdict(list)
for l in open(f"{w}/replay/releases.jsonl"):
    o = json.loads(l)
    if o["type"] == "record":
        want[(o["stream"], o["step"])].append([o["synthetic_id"], o.get("value", o.get("row", o.get("point")))])
got = {(o["stream"], o["step"]): o["records"] for o in map(json.loads, open(f"{w}/py.jsonl"))}
keys = sorted(set(want) | {k for k in got if got[k]})
bad = [k for k in keys if got.get(k) != want.get(k)]
if bad:
    print(f"releases differ at {bad[:3]}"); sys.exit(1)
EOF
want_ids=$(python3 -c 'import sys; print(sorted(map(int, sys.argv[1:])))' "${ID[SyntheticRecord]}" "${ID[ReleaseManifest]}")
[ "$(tr -d ' ' < "$WORK/py.ids")" = "$(tr -d ' ' <<<"$want_ids")" ] \
    || fail "synthetic topic frames carry ids $(cat "$WORK/py.ids"), expected $want_ids"
echo "PASS run_schema_registry: $EXPECT releases identical to replay through Update schemas $OWN/$NEWER/$OLDER;" \
     "3 updates of incompatible schema $BAD dead-lettered; the stock AvroDeserializer reads the synthetic topic"
