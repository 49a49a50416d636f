#!/usr/bin/env bash
# readme_walk.sh — the README, run verbatim, against the real broker: every
# block marked `<!-- readme-walk -->` or `<!-- readme-walk: kafka -->`
# (tests/cli/lib/readme_blocks.py) runs in README order in a fresh
# directory, installed with the README's own `cmake --install`, with the
# README's variables pointing at the test broker (BOOTSTRAP) and at topics
# of this run alone (TOPICS, unique per run so reruns never meet old
# state).  Every block must succeed — "Run against your Kafka" ends by
# diffing the releases `run` committed against the offline replay's, and
# "Scaling out" the releases of two `--role ingest` instances and one
# `--role release` instance of a sharded route against the same — and
# the Kafka walk's outputs are checked here once more: six steps, NONE
# before k, and per-step files equal to the replay's.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash readme_walk.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: readme_walk.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/cli/lib/readme_walk.sh"
FAIL_LOGS=("$WORK/walk.err")

export BOOTSTRAP=$BOOT
export TOPICS=readme$(cut -c1-8 /proc/sys/kernel/random/uuid)
unset DPSTREAM_BOOTSTRAP_SERVERS   # the README sets it from BOOTSTRAP
readme_walk all "$BIN" "$ROOT" "$WORK" || fail "a README block failed"
grep -q '^== README block .*kafka)$' "$WORK/walk.err" || fail "no kafka block ran"
grep -q '^same bytes as the offline replay$' "$WORK/walk.out" || fail "the walk did not compare Kafka with replay"
grep -q '^sharded: same bytes as the offline replay$' "$WORK/walk.out" \
    || fail "the walk's \"Scaling out\" (two ingest instances, one release) did not compare with replay"

R=$WORK/repo
python3 - "$R" <<'PY' || fail "the Kafka walk's releases"
import json, sys
r = sys.argv[1]
man = [json.loads(l) for l in open(f"{r}/kafka-releases/manifests.jsonl")]
assert [m["step"] for m in man] == list(range(1, 7)), [m["step"] for m in man]
assert [m["mode"] for m in man] == ["NONE", "NONE", "FULL", "DELTA", "DELTA", "DELTA"], [m["mode"] for m in man]
rep = [l for l in open(f"{r}/replay/releases.jsonl") if '"type":"manifest"' in l]
assert [json.loads(l) for l in rep] == man, "Kafka manifests differ from the replay's"
PY
echo "readme_walk: ok ($(grep -c '^== README block' "$WORK/walk.err") blocks, topics $TOPICS.*)"
