#!/usr/bin/env bash
# run_sharded_roles_crash.sh — crash equivalence of the two roles on the
# real broker (docs/kafka.md §10; docs/design.md §2): 2 `run --role
# ingest` instances and 1 `run --role release` instance over the input of
# run_sharded_roles.sh (a sharded window, a sharded cumulative and an
# unsharded stream, 4 partitions) with 12 steps, every transaction held
# open a while after its outputs are written (--debug-commit-delay-ms);
# kill -9 an instance of each role in turn — an ingest instance, the
# release instance, an ingest instance, ... — each once its incarnation
# has committed a transaction (so the next one
# restores state it wrote: SYI1 shards, SYR1 + DPM1 release streams) and
# its log shows another open at the broker, and restart it with the same
# instance id.  Then:
#   * KILLS kills landed inside an open transaction (the incarnation's last
#     txn_held has no txn_held_end after it, read after the kill; one the
#     commit won the race with is not counted, at most 3 × KILLS tries),
#     all while the run was unfinished (fewer committed releases than the
#     replay's); each role was killed at least twice; a restarted ingest
#     instance and a restarted release instance each restored streams;
#   * the committed releases and budget events are byte-identical to
#     `dpstream replay` of the same input — nothing lost, nothing twice;
#   * a statistics record written again (a step already released) stops a
#     restarted release instance with exit 5, naming shard and step.
# Knob: DPSTREAM_ROLES_KILLS (6, at least 4).
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_roles_crash.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_roles_crash.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
KILLS=${DPSTREAM_ROLES_KILLS:-6}
[ "$KILLS" -ge 4 ] || fail "DPSTREAM_ROLES_KILLS must be >= 4"
ROLES_STEPS=12
roles_config
roles_input 100
roles_produce

declare -A PID INC ROLE=([in1]=ingest [in2]=ingest [rel]=release)
launch() {   # $1 = instance: a new incarnation, its own log
    INC[$1]=$(( ${INC[$1]:-0} + 1 ))
    roles_start "${ROLE[$1]}" "roles-$1" "$1.${INC[$1]}" --debug-commit-delay-ms 400
    PID[$1]=$LAST_PID
    FAIL_LOGS+=("$WORK/$1.${INC[$1]}.err")
}
FAIL_LOGS=()
launch in1; launch in2; launch rel

committed_one() { grep -q "held transaction committed" "$1" 2>/dev/null; }
victim() {   # $1 = role: an instance of it that committed a transaction and holds another open
    local i
    for i in in1 in2 rel; do
        [ "${ROLE[$i]}" = "$1" ] && committed_one "$WORK/$i.${INC[$i]}.err" && roles_holding "$WORK/$i.${INC[$i]}.err" \
            && { echo "$i"; return 0; }
    done
    return 1
}
mid=0 killed_in=0 killed_rel=0 k=0
# A kill that lands just after its transaction committed (the commit won
# the race with kill -9) is a crash all the same, but not counted: the
# loop goes on until KILLS kills landed inside open transactions.
while [ "$mid" -lt "$KILLS" ]; do
    [ "$k" -lt $((3 * KILLS)) ] || fail "only $mid of $k kills landed inside an open transaction"
    role=ingest
    [ $((mid % 2)) -eq 0 ] || role=release
    deadline=$((SECONDS + 60))
    until v=$(victim $role); do
        for i in in1 in2 rel; do kill -0 "${PID[$i]}" 2>/dev/null || fail "$i exited early"; done
        [ $SECONDS -lt $deadline ] || fail "kill $k: no $role instance held a transaction open within 60 s"
        sleep 0.05
    done
    log="$WORK/$v.${INC[$v]}.err"
    kill -KILL "${PID[$v]}"
    wait "${PID[$v]}" 2>/dev/null || true
    n=$(roles_released)
    [ "$n" -lt "$EXPECT" ] || fail "kill $k of $v came after the run was done ($n releases)"
    if roles_holding "$log"; then
        mid=$((mid + 1))
        [ "$role" = ingest ] && killed_in=$((killed_in + 1)) || killed_rel=$((killed_rel + 1))
        echo "kill $k: $v (incarnation ${INC[$v]}) inside an open transaction, $n of $EXPECT releases committed"
    else
        echo "kill $k: $v (incarnation ${INC[$v]}) just after a commit (not counted), $n of $EXPECT releases committed"
    fi
    k=$((k + 1))
    launch "$v"
done
[ "$killed_in" -ge 2 ] && [ "$killed_rel" -ge 2 ] || fail "each role must be killed at least twice"
grep -q "restored [1-9][0-9]* stream(s) from $PREFIX.state " "$WORK"/in[12].[2-9].err \
    || fail "no restarted ingest instance restored a stream"
grep -q "restored [1-9][0-9]* stream(s) from $PREFIX.release-state " "$WORK"/rel.[2-9].err \
    || fail "no restarted release instance restored a stream"

deadline=$((SECONDS + 300))
until [ "$(roles_released)" -ge "$EXPECT" ]; do
    for i in in1 in2 rel; do kill -0 "${PID[$i]}" 2>/dev/null || fail "$i exited early"; done
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $EXPECT releases after the kills"
    sleep 2
done
sleep 2   # anything released twice shows up
for i in in1 in2 rel; do kill -TERM "${PID[$i]}"; done
for i in in1 in2 rel; do rc=0; wait "${PID[$i]}" || rc=$?; [ "$rc" -eq 0 ] || fail "$i exited $rc on SIGTERM"; done
RUN_PIDS=()
roles_same_as_replay
roles_refuse_record repeat "repeats a step already released"
echo "ok: $mid kills -9 inside open transactions (ingest $killed_in, release $killed_rel); $EXPECT steps byte-identical to replay"
