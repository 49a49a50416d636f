#!/usr/bin/env bash
# run_sharded_roles_sealed.sh — the two roles with a state key (docs/kafka.md
# §10, issue 40 §3): 2 `run --role ingest` instances and 1 `run --role
# release` instance over the input of run_sharded_roles.sh (a sharded
# window, a sharded cumulative and an unsharded stream, 4 partitions), all
# with --state-key-file.  Then:
#   * every instance says at startup that its state is sealed;
#   * every statistics record in <prefix>.stats is sealed (the header's
#     sealed byte is 1): 48 of them (2 streams × 6 steps × 4 shards);
#   * the committed releases and budget events are byte-identical to
#     `dpstream replay` of the same input (sealing changes no output);
#   * `inspect-snapshot --state-key-file` reads each shard's sealed
#     ingest-role snapshot and, with --release-state, each release stream's
#     sealed release half and merger state; without the state key it
#     refuses (exit 2) and says to give it.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_roles_sealed.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles_sealed.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
FAIL_LOGS=("$WORK/in1.err" "$WORK/in2.err" "$WORK/rel.err")
"$BIN" keygen --out "$WORK/state.key" 2> /dev/null
roles_config
roles_input 60
roles_start ingest roles-in1 in1 --state-key-file "$WORK/state.key"
roles_start ingest roles-in2 in2 --state-key-file "$WORK/state.key"
roles_start release roles-rel rel --state-key-file "$WORK/state.key"
roles_produce
roles_wait_all 180
roles_stop_all
for i in in1 in2 rel; do
    grep -q "sealed with the state key" "$WORK/$i.err" || fail "instance $i does not say its state is sealed"
done

# --- the statistics records are sealed -------------------------------------------------------
kcat -b "$BOOT" -C -t "$PREFIX.stats" -o beginning -e -q -f '%S\n%s' > "$WORK/stats.bin" \
    || fail "kcat could not read $PREFIX.stats"
python3 - "$WORK/stats.bin" <<'PY' || fail "the statistics records are not all sealed"
import struct, sys
data, recs = open(sys.argv[1], "rb").read(), []
while data:
    nl = data.index(b"\n")
    n = int(data[:nl])
    recs.append(data[nl + 1:nl + 1 + n])
    data = data[nl + 1 + n:]
# "DPS1" ‖ blob(topic) ‖ blob(stream) ‖ u64 step ‖ u32 shard ‖ u32 shard count ‖ u8 sealed (little-endian)
flags = []
for v in recs:
    assert v[:4] == b"DPS1", v[:4]
    o = 4
    for _ in range(2):
        o += 8 + struct.unpack("<Q", v[o:o + 8])[0]
    flags.append(v[o + 16])
assert len(flags) == 48, f"{len(flags)} statistics records, expected 48"
assert set(flags) == {1}, f"sealed bytes {sorted(set(flags))}"
PY

roles_same_as_replay

# --- inspect-snapshot opens the sealed state with the state key, and only with it ------------
roles_inspect true --state-key-file "$WORK/state.key"
rc=0
"$BIN" inspect-snapshot --config "$WORK/config.json" --key-hex "$KEY" --release-state > /dev/null \
    2> "$WORK/nokey.err" || rc=$?
[ "$rc" -eq 2 ] || fail "inspect-snapshot --release-state of sealed state without the key: exit $rc, expected 2"
grep -q "give the state key" "$WORK/nokey.err" || fail "no hint to give the state key: $(cat "$WORK/nokey.err")"
echo "ok: 2 ingest + 1 release instances with a state key: 48 sealed statistics records, $EXPECT steps" \
    "byte-identical to replay, the sealed role state read by inspect-snapshot"
