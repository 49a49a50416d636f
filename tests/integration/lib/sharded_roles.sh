# sharded_roles.sh — sourced by the roles' integration tests
# (run_sharded_roles.sh, run_sharded_roles_crash.sh; not a test itself).
# Expects prelude.sh sourced and BIN, ROOT, WORK set.  Provides KEY, PREFIX,
# roles_config (a sharded window, a sharded cumulative and an unsharded
# window stream on a 4-partition updates topic, ROLES_STEPS steps, 6
# unless set), roles_input (their interleaved input with CLOSE_STEP
# markers, and its replay: EXPECT = 3 × ROLES_STEPS manifests),
# roles_produce [FILE] (the input, or FILE), roles_start ROLE ID LOG [run options] (appends its pid to
# RUN_PIDS, LAST_PID), roles_released (committed manifests now), roles_released_of STREAM
# (that stream's),
# roles_same_as_replay (the committed releases and budget events, stream
# by stream, byte-identical to the replay's), roles_wait_all SECONDS (until
# every step is released, every instance of RUN_PIDS alive), roles_stop_all
# (SIGTERM each, each must exit 0), roles_wait_log LOG PATTERN WHAT [COUNT]
# (until LOG.err shows PATTERN COUNT times, 1 unless given), roles_holding
# LOGFILE (its last transaction mark under --debug-commit-delay-ms is
# txn_held: a transaction open at the broker) and roles_refuse_record.
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
ROLES_SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
PREFIX=it-roles-$(cut -c1-8 /proc/sys/kernel/random/uuid)
ROLES_STEPS=${ROLES_STEPS:-6}

roles_config() {
    cat > "$WORK/config.json" <<JSON
{"topics": {"prefix": "$PREFIX", "partitions": 4},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "delta": 1e-6,
 "streams": [
   {"prefix": "win/", "synthesizer": "window", "sharded": true,
    "config": {"horizon": $ROLES_STEPS, "k": 2, "categories": 3, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "sharded": true,
    "config": {"horizon": $ROLES_STEPS, "rho": 0.25}},
   {"match": "plain", "synthesizer": "window",
    "config": {"horizon": $ROLES_STEPS, "k": 2, "categories": 3, "rho": 0.5}}
 ]}
JSON
}

roles_input() {   # $1 = individuals of the sharded window stream
    "$BIN" gen-panel --n "$1" --steps "$ROLES_STEPS" --categories 3 --stay 0.8 --seed-hex "$ROLES_SEED" --stream win/a \
        --close-steps --out "$WORK/w.jsonl"
    "$BIN" gen-panel --n 50 --steps "$ROLES_STEPS" --categories 2 --stay 0.8 --seed-hex "$ROLES_SEED" --stream cum/a \
        --close-steps --out "$WORK/c.jsonl"
    "$BIN" gen-panel --n 20 --steps "$ROLES_STEPS" --categories 3 --stay 0.8 --seed-hex "$ROLES_SEED" --stream plain \
        --close-steps --out "$WORK/p.jsonl"
    python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
lines = {s: open(f"{w}/{s}.jsonl").read().splitlines() for s in "wcp"}
out = []
while any(lines.values()):   # interleaved
    for s in "wcp":
        if lines[s]:
            out.append(lines[s].pop(0))
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
PY
    "$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" \
        > /dev/null
    EXPECT=$(grep -c '"type":"manifest"' "$WORK/replay/releases.jsonl")
    [ "$EXPECT" -eq $((3 * ROLES_STEPS)) ] || fail "replay released $EXPECT steps, expected $((3 * ROLES_STEPS))"
}

roles_produce() {   # $1 = the input file ($WORK/input.jsonl)
    "$BIN" produce --config "$WORK/config.json" --input "${1:-$WORK/input.jsonl}" --partitions 4 \
        > "$WORK/produce.out" 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }
}

roles_start() {   # $1 = role, $2 = instance id, $3 = log name, then more `run` options
    local role=$1 id=$2 log=$3
    shift 3
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --role "$role" --instance-id "$id" \
        --chunk-records 7 --idle-timeout-ms 0 --progress-ms 2000 --dlq-commit-ms 300 "$@" \
        >> "$WORK/$log.out" 2>> "$WORK/$log.err" &
    LAST_PID=$!
    RUN_PIDS+=("$LAST_PID")
}

roles_released_of() {   # $1 = stream, or "" for all: committed manifests now
    local pat='"type":"manifest"'
    [ -z "${1:-}" ] || pat="$pat,\"stream\":\"$1\""
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err"; then
        grep -c "$pat" "$WORK/out/releases.jsonl" || true
    else
        echo 0
    fi
}

roles_released() {
    roles_released_of ""
}

roles_same_as_replay() {
    "$BIN" export --config "$WORK/config.json" --out "$WORK/out" > /dev/null 2>> "$WORK/export.err" \
        || { cat "$WORK/export.err" >&2; fail "export found an inconsistent release"; }
    python3 "$ROOT/tests/integration/lib/same_by_stream.py" "$WORK/replay" "$WORK/out" \
        || fail "the roles' outputs differ from replay"
}

roles_wait_all() {   # $1 = seconds to wait for EXPECT releases
    local p deadline=$((SECONDS + $1))
    until [ "$(roles_released)" -ge "$EXPECT" ]; do
        for p in "${RUN_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "an instance (pid $p) exited early"; done
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases ($(roles_released) so far)"
        sleep 2
    done
    sleep 2   # anything released twice shows up
}

roles_wait_log() {   # $1 = log, $2 = pattern, $3 = what, $4 = how many times (1)
    local n deadline=$((SECONDS + 90))
    until n=$(grep -c "$2" "$WORK/$1.err" 2>/dev/null || true); [ "${n:-0}" -ge "${4:-1}" ]; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $3"
        sleep 1
    done
}

# roles_inspect SEALED [options] — after a whole run (ROLES_STEPS steps):
# the state topic holds each sharded stream's 4 shards (ingest-role
# snapshots, no ledger, the next step open), each in its own partition, and
# the unsharded stream's combined one; --release-state: each sharded
# stream's release half (ledger spent to its budget, the next step next)
# and merger state; every one authenticated, and sealed iff SEALED is true.
roles_inspect() {
    local sealed=$1
    shift
    "$BIN" inspect-snapshot --config "$WORK/config.json" --key-hex "$KEY" --json "$@" > "$WORK/inspect.json" \
        2> "$WORK/inspect.err" || fail "inspect-snapshot of the ingest state: $(cat "$WORK/inspect.err")"
    "$BIN" inspect-snapshot --config "$WORK/config.json" --key-hex "$KEY" --json --release-state "$@" \
        > "$WORK/inspect-rel.json" 2> "$WORK/inspect-rel.err" \
        || fail "inspect-snapshot --release-state: $(cat "$WORK/inspect-rel.err")"
    python3 - "$WORK" "$ROLES_STEPS" "$sealed" <<'PY' || fail "inspect-snapshot's account of the roles' state"
import json, sys
w, nxt, sealed = sys.argv[1], int(sys.argv[2]) + 1, sys.argv[3] == "true"
ing = json.load(open(f"{w}/inspect.json"))["streams"]
rel = json.load(open(f"{w}/inspect-rel.json"))["streams"]
shards = sorted((s["stream"], s["partition"]) for s in ing if s["kind"] == "ingest" and s["ledger"] is None
                and s["open_step"] == nxt)
assert shards == sorted((x, p) for x in ("cum/a", "win/a") for p in range(4)), shards
assert [(s["stream"], s["kind"]) for s in ing if s["kind"] != "ingest"] == [("plain", "combined")], ing
got = sorted((s["stream"], s["kind"], s["next_release_step"], s["ledger"]["exhausted"]) for s in rel)
assert got == [("cum/a", "release", nxt, True), ("win/a", "release", nxt, True)], got
assert all(s["authenticated"] and s["merger_state_bytes"] > 0 for s in rel), rel
assert all(s["sealed"] == sealed for s in ing + rel), [(s["stream"], s["sealed"]) for s in ing + rel]
PY
}

roles_holding() {   # $1 = log file
    [ "$(grep -o 'holding it [0-9]* ms\|held transaction' "$1" 2>/dev/null | tail -1 | cut -c1-7)" = holding ]
}

roles_stop_all() {
    local p rc
    for p in "${RUN_PIDS[@]}"; do kill -TERM "$p"; done
    for p in "${RUN_PIDS[@]}"; do rc=0; wait "$p" || rc=$?; [ "$rc" -eq 0 ] || fail "pid $p exited $rc on SIGTERM"; done
    RUN_PIDS=()
}

# roles_refuse_record KIND TEXT — fail closed (docs/kafka.md §10): the
# first record of the stats topic written again to its partition, as it
# was (KIND repeat: a step already released) or with its last byte flipped
# (KIND forged: its MAC fails).  A release instance restarted on it (its
# state restored past every genuine record) must stop with exit 5, naming
# the shard and the step and saying TEXT, and release nothing more.  Run
# after every step is released and the instances are stopped; once per
# deployment (the refused record stays in the topic).
roles_refuse_record() {
    local kind=$1 text=$2 part shard step rc=0
    kcat -b "$BOOT" -C -t "$PREFIX.stats" -o beginning -c 1 -e -q -f '%p %K %S\n%k%s\n' > "$WORK/first.bin" \
        || fail "kcat could not read $PREFIX.stats"
    read -r part shard step < <(python3 - "$WORK" "$kind" <<'PY'
import struct, sys
w, kind = sys.argv[1], sys.argv[2]
data = open(f"{w}/first.bin", "rb").read()
nl = data.index(b"\n")
p, kl, vl = (int(x) for x in data[:nl].split())
key, val = data[nl + 1:nl + 1 + kl], data[nl + 1 + kl:nl + 1 + kl + vl]
open(f"{w}/key", "wb").write(key)
open(f"{w}/bad.bin", "wb").write(val if kind == "repeat" else val[:-1] + bytes([val[-1] ^ 1]))
# "DPS1" ‖ blob(topic) ‖ blob(stream) ‖ u64 step ‖ u32 shard ‖ ... (blob: u64 length; little-endian)
o = 4
for _ in range(2):
    o += 8 + struct.unpack("<Q", val[o:o + 8])[0]
step, shard = struct.unpack("<QI", val[o:o + 12])
print(p, shard, step)
PY
)
    [ -n "${step:-}" ] || fail "could not read the first statistics record's header"
    kcat -b "$BOOT" -P -t "$PREFIX.stats" -p "$part" -k "$(cat "$WORK/key")" "$WORK/bad.bin" \
        || fail "kcat could not write the $kind record"
    timeout 120 "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --role release --instance-id roles-rel \
        --idle-timeout-ms 0 > /dev/null 2> "$WORK/$kind.err" || rc=$?
    [ "$rc" -eq 5 ] || fail "a $kind statistics record: the release instance exited $rc, expected 5 ($(tail -3 "$WORK/$kind.err"))"
    [ "$(grep "statistics record refused" "$WORK/$kind.err" | grep -F "step $step from shard $shard" \
         | grep -cF "$text" || true)" -ge 1 ] \
        || fail "the $kind record's refusal does not name shard $shard and step $step and say '$text': $(grep refused "$WORK/$kind.err")"
    [ "$(roles_released)" -eq "$EXPECT" ] || fail "something was released after the $kind record's refusal"
}
