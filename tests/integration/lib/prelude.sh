# prelude.sh — sourced by the integration tests (not a test itself: ctest
# registers only tests/integration/*.sh).  Expects ROOT (the repo root).
# Provides WORK (a scratch dir removed on exit unless KEEP_WORK is set),
# RUN_PID (a processor to kill -9 on exit if still running), fail MSG, and
# BOOT / DPSTREAM_BOOTSTRAP_SERVERS for the local broker of
# scripts/kafka-local.sh — refusing anything that is not on 127.0.0.1.
WORK=$(mktemp -d)
RUN_PID=
cleanup() {
    if [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null; then kill -KILL "$RUN_PID" 2>/dev/null || true; fi
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$WORK/run.err" ] && grep -v DEBUG "$WORK/run.err" | tail -25 >&2; exit 1; }

BOOT=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
case "$BOOT" in 127.0.0.1:*) ;; *) fail "refusing to use a broker that is not on 127.0.0.1: $BOOT" ;; esac
export DPSTREAM_BOOTSTRAP_SERVERS=$BOOT
kcat -b "$BOOT" -L -m 5 > /dev/null 2>&1 || fail "no Kafka broker answers on $BOOT (scripts/kafka-local.sh start)"
