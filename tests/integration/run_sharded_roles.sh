#!/usr/bin/env bash
# run_sharded_roles.sh — the two roles on the real local broker
# (docs/kafka.md §10): a sharded `window` and a sharded `cumulative`
# stream, and an unsharded `window` stream, on a 4-partition updates topic;
# 2 `run --role ingest` instances and 1 `run --role release` instance.
#   * both ingest instances own partitions before the input is written,
#     and each closes shard steps (publishes statistics): the work really
#     was split; 48 statistics records in all (2 streams × 6 steps × 4
#     shards: every shard, every step);
#   * the release instance releases every step of the sharded streams from
#     all 4 shards' statistics; the ingest role serves the unsharded stream
#     itself, as `--role all` would;
#   * the releases and budget events read back from the output topics are
#     byte-identical to `dpstream replay` of the same input (which treats a
#     sharded route as one stream), stream by stream;
#   * `--role all` refuses the sharded configuration, naming the roles;
#   * `inspect-snapshot` reads each shard's ingest-role snapshot (one per
#     partition, no ledger) and, with --release-state, each release
#     stream's release half and merger state;
#   * a statistics record with its MAC broken stops a release instance
#     with exit 5, naming shard and step, and nothing more is released
#     (run_sharded_roles_crash.sh does the same with a repeated record).
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_roles.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
FAIL_LOGS=("$WORK/in1.err" "$WORK/in2.err" "$WORK/rel.err")
roles_config

# --- the refusal of the single process ----------------------------------------------
rc=0
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id all > /dev/null 2> "$WORK/all.err" || rc=$?
[ "$rc" -eq 2 ] || fail "--role all with a sharded route: exit $rc, expected 2"
grep -q "run --role ingest instances and --role release instances" "$WORK/all.err" \
    || fail "--role all's refusal does not point to the roles: $(cat "$WORK/all.err")"

roles_input 60

# --- the instances: both ingest instances own partitions before any input ---------------
roles_start ingest roles-in1 in1
roles_wait_log in1 "assigned [1-9]" "the first ingest instance's partitions"
roles_start ingest roles-in2 in2
roles_wait_log in2 "assigned [1-9]" "the second ingest instance's partitions"
roles_wait_log in1 "assigned [1-9]" "the first ingest instance's share after the second joined" 2
roles_start release roles-rel rel
roles_wait_log rel "assigned [1-9]" "the release instance's partitions"
roles_produce

roles_wait_all 180
roles_stop_all

# --- the work was split, and done by the roles it belongs to ---------------------------------
for i in in1 in2; do
    n=$(grep -c "statistics published" "$WORK/$i.err" || true)
    [ "$n" -gt 0 ] || fail "ingest instance $i closed no shard step: it owned no partition of the input"
done
total=$(cat "$WORK/in1.err" "$WORK/in2.err" | grep -c "statistics published" || true)
[ "$total" -eq 48 ] || fail "the ingest instances published $total shard statistics, expected 48 (2 sharded streams × 6 steps × 4 shards)"
rel=$(grep -c "of sharded stream .* from 4 shards" "$WORK/rel.err" || true)
[ "$rel" -eq 12 ] || fail "the release instance released $rel sharded steps, expected 12"
plain=$(cat "$WORK/in1.err" "$WORK/in2.err" | grep -c "released step [0-9]* of stream 'plain'" || true)
[ "$plain" -eq 6 ] || fail "the ingest role released $plain steps of the unsharded stream, expected 6"

roles_same_as_replay

# --- inspect-snapshot reads each role's state ----------------------------------------------
# the state topic: each sharded stream's 4 shards (ingest-role snapshots,
# no ledger), each in its own partition, and the unsharded stream's
# combined one; --release-state: each sharded stream's release half
# (ledger spent to its budget, step 7 next) and merger state
roles_inspect false

# --- fail closed: a statistics record with a broken MAC stops the release instance ---------
roles_refuse_record forged "fails authentication"
echo "ok: 2 ingest + 1 release instances, 18 steps byte-identical to replay; a forged statistics record refused"
