#!/usr/bin/env bash
# run_sharded_roles_join.sh — the two roles through a rebalance from added
# instances (docs/kafka.md §10, issue 40 §3): 2 `run --role ingest`
# instances and 1 `run --role release` instance over the input of
# run_sharded_roles.sh (a sharded window, a sharded cumulative and an
# unsharded stream, 4 partitions) with 12 steps, every transaction held
# open a while (--debug-commit-delay-ms).  Steps 1-6 are written first;
# once both sharded streams have released a step (so every partition's
# state holds shard snapshots) a third ingest instance and a second
# release instance join, and steps 7-12 are written once they own
# partitions.  Then:
#   * they joined mid-run: fewer steps released than the replay's when
#     they started;
#   * shards moved: the third ingest instance was assigned updates
#     partitions, restored shards from the state topic (SYI1) and published
#     shard statistics; the first two were assigned a smaller share after
#     it joined (together fewer than 4); the second release instance was
#     assigned stats partitions;
#   * no instance exited; each finishes on SIGTERM with exit 0;
#   * the committed releases and budget events are byte-identical to
#     `dpstream replay` of the same input — nothing lost, nothing twice.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_roles_join.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles_join.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
ROLES_STEPS=12
roles_config
roles_input 100
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
lines = open(f"{w}/input.jsonl").read().splitlines()
for name, keep in (("first", lambda s: s <= 6), ("second", lambda s: s > 6)):
    open(f"{w}/{name}.jsonl", "w").write("".join(l + "\n" for l in lines if keep(json.loads(l)["step"])))
PY
FAIL_LOGS=("$WORK/in1.err" "$WORK/in2.err" "$WORK/in3.err" "$WORK/rel.err" "$WORK/rel2.err")
roles_start ingest roles-in1 in1 --debug-commit-delay-ms 300
roles_start ingest roles-in2 in2 --debug-commit-delay-ms 300
roles_wait_log in1 "assigned 2 partition" "the first two ingest instances sharing the 4 partitions"
roles_start release roles-rel rel --debug-commit-delay-ms 300
roles_wait_log rel "assigned 4 partition" "the release instance's partitions"
roles_produce "$WORK/first.jsonl"

# Join once both sharded streams have released a step: a sharded release
# needs every shard's statistics, each committed with its shard's SYI1, so
# every state partition then holds a snapshot for the joiner to restore.
# (Counting all releases is not enough: the unsharded stream's partition can
# release several steps before some shard has closed one.)
deadline=$((SECONDS + 120))
until [ "$(roles_released_of win/a)" -ge 1 ] && [ "$(roles_released_of cum/a)" -ge 1 ]; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for the first sharded releases"
    sleep 0.5
done
before=$(roles_released)
roles_start ingest roles-in3 in3 --debug-commit-delay-ms 300
roles_start release roles-rel2 rel2 --debug-commit-delay-ms 300
echo "a third ingest and a second release instance joined with $before of $EXPECT releases committed"
[ "$before" -lt "$EXPECT" ] || fail "the instances joined after the run was done ($before releases)"
roles_wait_log in3 "assigned [1-9] partition(s) of $PREFIX.updates" "the third ingest instance's partitions"
roles_wait_log rel2 "assigned [1-9] partition(s) of $PREFIX.stats" "the second release instance's partitions"
roles_produce "$WORK/second.jsonl"
roles_wait_all 300
roles_stop_all

# --- shards moved, with their state, and the joined instance did their work ----------
grep -q "restored [1-9][0-9]* stream(s) from $PREFIX.state " "$WORK/in3.err" \
    || fail "the third ingest instance restored no shard: $(grep restored "$WORK/in3.err")"
n3=$(grep -c "statistics published" "$WORK/in3.err" || true)
[ "$n3" -gt 0 ] || fail "the third ingest instance published no shard statistics"
last_share() { grep -o "assigned [0-9]* partition(s) of $PREFIX.updates" "$WORK/$1.err" | tail -1 | cut -d' ' -f2; }
[ $(( $(last_share in1) + $(last_share in2) )) -lt 4 ] \
    || fail "the first two ingest instances still own all 4 partitions ($(last_share in1) + $(last_share in2))"
total=$(cat "$WORK"/in[123].err | grep -c "statistics published" || true)
[ "$total" -ge 96 ] || fail "the ingest instances published $total shard statistics, expected at least 96 (2 × 12 × 4)"
rel2=$(grep -c "of sharded stream .* from 4 shards" "$WORK/rel2.err" || true)
roles_same_as_replay
echo "ok: 2 instances joined mid-run ($before of $EXPECT steps released before); in3 published $n3 shard" \
    "statistics (of $total in all), rel2 released $rel2 steps; byte-identical to replay"
