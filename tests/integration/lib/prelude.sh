# prelude.sh — sourced by the integration tests (not a test itself: ctest
# registers only tests/integration/*.sh).  Expects ROOT (the repo root).
# Provides WORK (a scratch dir removed on exit unless KEEP_WORK is set),
# RUN_PID and RUN_PIDS (processes to kill -9 on exit if still running),
# FAIL_LOGS (logs whose tails `fail` prints; default $WORK/run.err), fail MSG, and
# BOOT / DPSTREAM_BOOTSTRAP_SERVERS for the local broker of
# scripts/kafka-local.sh — refusing anything that is not on 127.0.0.1.
WORK=$(mktemp -d)
RUN_PID=
RUN_PIDS=()
FAIL_LOGS=("$WORK/run.err")
cleanup() {
    local p
    for p in $RUN_PID "${RUN_PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
    done
    # a killed process (a browser) may still be writing below WORK for a moment
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK" 2>/dev/null || { sleep 1; rm -rf "$WORK" 2>/dev/null; } || true
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    local f
    for f in "${FAIL_LOGS[@]}"; do
        [ -f "$f" ] || continue
        [ ${#FAIL_LOGS[@]} -eq 1 ] || echo "--- $(basename "$f")" >&2
        grep -v -e DEBUG -e CONFWARN "$f" | tail -25 >&2
    done
    exit 1
}

BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
case "$BOOT" in 127.0.0.1:*) ;; *) fail "refusing to use a broker that is not on 127.0.0.1: $BOOT" ;; esac
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
kcat -b "$BOOT" -L -m 5 > /dev/null 2>&1 || fail "no Kafka broker answers on $BOOT (scripts/kafka-local.sh start)"
