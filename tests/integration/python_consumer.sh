#!/usr/bin/env bash
# python_consumer.sh — the wire contract is enough (issue 13.7): a consumer
# written with stock Python clients (confluent-kafka + fastavro, in the
# venv scripts/install-deps.sh makes) from the README and schemas/*.avsc
# alone — connectors/examples/consume_releases.py — rebuilds every release
# of `dpstream run` from the synthetic topic, checks chunk counts, record
# counts and the BLAKE2b checksum, and gets exactly the records `dpstream
# replay` writes for the same input and key.
# Usage: bash python_consumer.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: python_consumer.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import confluent_kafka, fastavro' 2>/dev/null \
    || fail "the Python consumer needs the venv of scripts/install-deps.sh ($PY with confluent-kafka and fastavro)"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-py-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
cat > "$WORK/config.json" <<JSON
{"topics": {"prefix": "$PREFIX"}, "kafka": {"session.timeout.ms": "6000"},
 "streams": [{"prefix": "w/", "synthesizer": "window", "config": {"horizon": 4, "k": 2, "categories": 3, "rho": 1}},
             {"prefix": "c/", "synthesizer": "cumulative", "config": {"horizon": 4, "rho": 1}}]}
JSON
for s in w/a c/a; do
    "$BIN" gen-panel --n 30 --steps 4 --categories $([ "$s" = w/a ] && echo 3 || echo 2) --stay 0.8 \
        --seed-hex "$SEED" --stream "$s" --close-steps
done > "$WORK/input.jsonl"
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 > /dev/null 2>&1 \
    || fail "produce"
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id py --chunk-records 7 --idle-timeout-ms 0 \
    > /dev/null 2> "$WORK/run.err" &
RUN_PID=$!
deadline=$((SECONDS + 120))
until "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>&1 \
      && [ "$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl")" -ge 8 ]; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for 8 releases"
    sleep 1
done
kill -TERM "$RUN_PID"; wait "$RUN_PID" || fail "processor exit"; RUN_PID=
"$PY" "$ROOT/connectors/examples/consume_releases.py" --bootstrap "$BOOT" --topic "$PREFIX.synthetic" \
    --schemas "$ROOT/schemas" > "$WORK/py.jsonl" 2> "$WORK/py.err" || { cat "$WORK/py.err" >&2; fail "consumer"; }
python3 - "$WORK" <<'PY' || fail "the Python consumer's releases differ from replay"
import collections, json, sys
w = sys.argv[1]
want = collections.defaultdict(list)
for l in open(f"{w}/replay/releases.jsonl"):
    o = json.loads(l)
    if o["type"] == "record":
        v = o.get("value", o.get("row", o.get("point")))
        want[(o["stream"], o["step"])].append([o["synthetic_id"], v])
got = {}
for l in open(f"{w}/py.jsonl"):
    o = json.loads(l)
    got[(o["stream"], o["step"])] = o["records"]
keys = sorted(set(want) | {k for k in got if got[k]})
bad = [k for k in keys if got.get(k) != want.get(k)]
print(f"python_consumer: {len(got)} releases rebuilt, {sum(map(len, got.values()))} records; {len(bad)} differ")
sys.exit(1 if bad or len(got) != 8 else 0)
PY
echo "PASS python_consumer"
