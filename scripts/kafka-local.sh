#!/usr/bin/env bash
# A real single-node Apache Kafka 3.9.2 broker (KRaft, combined broker +
# controller) on 127.0.0.1, run from the Maven Central jars — no Docker, no
# tarball.  Integration tests and benchmarks use it.
#
# Usage: scripts/kafka-local.sh start|stop|status|restart|reset|fetch|bootstrap|log
#   start      fetch the jars if needed, format storage, start in the
#              background, wait until `kcat -L` answers.  Idempotent.
#   stop       SIGTERM (controlled shutdown), SIGKILL after a timeout.
#   status     exit 0 if our broker runs and answers, 1 if the process runs
#              but does not answer, 3 if it is not running.
#   restart    stop + start.
#   reset      stop and delete the state directory (data, log, config).
#   fetch      only download the jars into the cache.
#   bootstrap  print the bootstrap address (127.0.0.1:PORT).
#   log        print the broker log tail.
#
# Environment (defaults):
#   DPSTREAM_KAFKA_PORT=39092             client (PLAINTEXT) listener
#   DPSTREAM_KAFKA_CONTROLLER_PORT=39093  KRaft controller listener
#   DPSTREAM_KAFKA_DIR=/tmp/dpstream-kafka      state: config, data, pid, log
#   DPSTREAM_CACHE=$HOME/.cache/dpstream        jar cache (outside the build tree)
#   DPSTREAM_KAFKA_CLUSTER_ID=ZHBzdHJlYW0tbG9jYWwtMQ   (22-char base64url UUID)
#   DPSTREAM_KAFKA_HEAP=512m
#   DPSTREAM_KAFKA_START_TIMEOUT=90       seconds to wait for readiness
#   DPSTREAM_KAFKA_STOP_TIMEOUT=60        seconds before SIGKILL
#   JAVA=java  MVN=mvn  KCAT=kcat
set -euo pipefail

KAFKA_VERSION=3.9.2
root=$(cd "$(dirname "$0")/.." && pwd)
conf_src=$root/scripts/kafka

port=${DPSTREAM_KAFKA_PORT:-39092}
ctl_port=${DPSTREAM_KAFKA_CONTROLLER_PORT:-39093}
state=${DPSTREAM_KAFKA_DIR:-/tmp/dpstream-kafka}
cache=${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}
libs=$cache/kafka-$KAFKA_VERSION/libs
# A fixed id keeps the data directory reusable across restarts and config
# regenerations; it decodes to 16 bytes ("dpstream-local-1").
cluster_id=${DPSTREAM_KAFKA_CLUSTER_ID:-ZHBzdHJlYW0tbG9jYWwtMQ}
heap=${DPSTREAM_KAFKA_HEAP:-512m}
start_timeout=${DPSTREAM_KAFKA_START_TIMEOUT:-90}
stop_timeout=${DPSTREAM_KAFKA_STOP_TIMEOUT:-60}
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
KCAT=${KCAT:-kcat}

pidfile=$state/kafka.pid
logfile=$state/kafka.log
props=$state/server.properties
datadir=$state/data

svc_name=kafka-local
svc_what="the broker"
svc_where=127.0.0.1:$port
svc_cmdline="kafka.Kafka $props"
. "$root/scripts/lib/local_service.sh"

for v in "$port" "$ctl_port" "$start_timeout" "$stop_timeout"; do
    [[ $v =~ ^[0-9]+$ ]] || die "not a number: '$v'"
done
[ "$port" != "$ctl_port" ] || die "broker and controller ports must differ"

# --- jars ------------------------------------------------------------------

fetch_jars() {
    if [ -f "$libs/.complete" ]; then return 0; fi
    need "$MVN"
    mkdir -p "$cache"
    exec 8>"$cache/.kafka-$KAFKA_VERSION.lock"
    flock -w 600 8 || die "timed out waiting for the jar cache lock"
    if [ -f "$libs/.complete" ]; then exec 8>&-; return 0; fi
    say "fetching Apache Kafka $KAFKA_VERSION jars into $libs (first run only)"
    local tmp="$libs.tmp.$$"
    rm -rf "$tmp"
    # Pinned plugin version: the copy is reproducible and needs no settings.xml.
    local mvnlog="$cache/kafka-$KAFKA_VERSION-fetch.log"
    if ! "$MVN" -B -q -Dstyle.color=never -f "$conf_src/pom.xml" \
            org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
            -DoutputDirectory="$tmp" -DincludeScope=runtime >"$mvnlog" 2>&1; then
        rm -rf "$tmp"
        tail -n 40 "$mvnlog" >&2
        die "maven could not fetch the Kafka jars (is Maven Central reachable?); log: $mvnlog"
    fi
    [ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ] || { rm -rf "$tmp"; die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"; }
    [ -f "$tmp/reload4j-1.2.25.jar" ] || { rm -rf "$tmp"; die "reload4j-1.2.25.jar missing after fetch"; }
    touch "$tmp/.complete"
    rm -rf "$libs"
    mv "$tmp" "$libs"
    exec 8>&-
}

# --- process state ---------------------------------------------------------

answers() {
    local out
    out=$("$KCAT" -b "127.0.0.1:$port" -L -m 5 2>/dev/null) || return 1
    grep -q "broker 1 at 127.0.0.1:$port" <<<"$out"
}

write_config() {
    mkdir -p "$datadir"
    # A copy, so a running broker does not depend on the source tree.
    cp "$conf_src/log4j.properties" "$state/log4j.properties"
    sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$ctl_port|g" -e "s|@DATA_DIR@|$datadir|g" \
        "$conf_src/server.properties.in" >"$props.tmp"
    mv "$props.tmp" "$props"
}

format_storage() {
    # --ignore-formatted: a data directory from an earlier run is kept.
    if ! "$JAVA" -Xmx256m -Dlog4j.configuration="file:$state/log4j.properties" \
            -cp "$libs/*" kafka.tools.StorageTool format \
            -t "$cluster_id" -c "$props" --ignore-formatted >>"$logfile" 2>&1; then
        log_tail
        die "formatting storage in $datadir failed (a data dir from another cluster id? try '$0 reset')"
    fi
}

launch() {
    svc_launch "$JAVA" -Xmx"$heap" -Xms"$heap" -XX:+UseG1GC -Djava.awt.headless=true \
        -Dlog4j.configuration="file:$state/log4j.properties" \
        -cp "$libs/*" kafka.Kafka "$props"
}

# --- commands --------------------------------------------------------------

cmd_start() {
    need "$JAVA"; need "$KCAT"; need flock; need setsid
    lock_state
    local pid
    if pid=$(svc_pid); then
        svc_wait_ready
        say "already running (pid $pid) on 127.0.0.1:$port"
        return 0
    fi
    rm -f "$pidfile"
    if port_busy "$port" || port_busy "$ctl_port"; then
        die "port $port or $ctl_port is in use by another process; set DPSTREAM_KAFKA_PORT / DPSTREAM_KAFKA_CONTROLLER_PORT"
    fi
    fetch_jars
    write_config
    : >"$logfile"
    format_storage
    say "starting Apache Kafka $KAFKA_VERSION on 127.0.0.1:$port (controller $ctl_port, state $state)"
    launch
    pid=$(svc_pid) || { log_tail; die "the broker did not start"; }
    svc_wait_ready
    say "ready (pid $pid) in ${SECONDS}s; bootstrap 127.0.0.1:$port"
}

case "${1:-}" in
    start)     cmd_start ;;
    stop)      svc_stop ;;
    status)    svc_status ;;
    restart)   svc_stop; cmd_start ;;
    reset)     svc_stop; rm -rf "$state"; say "removed $state" ;;
    fetch)     fetch_jars; echo "$libs" ;;
    bootstrap) echo "127.0.0.1:$port" ;;
    log)       tail -n "${2:-60}" "$logfile" ;;
    *)         svc_usage "$0" ;;
esac
