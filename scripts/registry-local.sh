#!/usr/bin/env bash
# A real schema registry on 127.0.0.1 for the integration tests: Apicurio
# Registry 2.4.2 (in-memory storage), serving the Confluent-compatible API at
# /apis/ccompat/v7, built from Maven Central artifacts alone — no Docker.
# The build recipe (scripts/registry/: pom.xml, settings.xml and the extra
# application properties) and why it looks the way it does: pom.xml's comments.
#
# Usage: scripts/registry-local.sh start|stop|status|build|url|log
#   start   build the app if needed, start it in the background, wait until
#           the ccompat API answers.  Idempotent.
#   stop    SIGTERM, SIGKILL after a timeout.
#   status  exit 0 if our registry runs and answers, 1 if the process runs but
#           does not answer, 3 if it is not running.
#   build   only build the app into the cache.
#   url     print the Confluent-compatible base URL.
#   log     print the registry log tail.
#
# The registry keeps its schemas in memory: a restart forgets them (tests
# register what they need, under unique subjects, so sharing one is safe).
#
# Environment (defaults):
#   DPSTREAM_REGISTRY_PORT=39081
#   DPSTREAM_REGISTRY_DIR=/tmp/dpstream-registry   state: pid, log
#   DPSTREAM_CACHE=$HOME/.cache/dpstream            built app (outside the build tree)
#   DPSTREAM_M2_REPO=$HOME/.m2/repository           Maven's local repository for the build
#   DPSTREAM_REGISTRY_HEAP=512m
#   DPSTREAM_REGISTRY_START_TIMEOUT=90             seconds to wait for readiness
#   JAVA=java  MVN=mvn  CURL=curl
set -euo pipefail

APICURIO_VERSION=2.4.2.Final
root=$(cd "$(dirname "$0")/.." && pwd)
recipe=$root/scripts/registry

port=${DPSTREAM_REGISTRY_PORT:-39081}
state=${DPSTREAM_REGISTRY_DIR:-/tmp/dpstream-registry}
cache=${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}
appdir=$cache/apicurio-$APICURIO_VERSION
heap=${DPSTREAM_REGISTRY_HEAP:-512m}
start_timeout=${DPSTREAM_REGISTRY_START_TIMEOUT:-90}
stop_timeout=30
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
CURL=${CURL:-curl}

pidfile=$state/registry.pid
logfile=$state/registry.log
url="http://127.0.0.1:$port/apis/ccompat/v7"

say() { echo "registry-local: $*" >&2; }
die() { say "$*"; exit 1; }
need() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found (scripts/install-deps.sh installs it)"
}

for v in "$port" "$start_timeout"; do
    [[ $v =~ ^[0-9]+$ ]] || die "not a number: '$v'"
done

lock_state() {
    mkdir -p "$state"
    exec 9>"$state/.lock"
    flock -w 300 9 || die "timed out waiting for the lock on $state"
}

# --- build -----------------------------------------------------------------

build_app() {
    if [ -f "$appdir/.complete" ]; then return 0; fi
    need "$MVN"; need unzip
    mkdir -p "$cache"
    exec 8>"$cache/.apicurio-$APICURIO_VERSION.lock"
    flock -w 900 8 || die "timed out waiting for the registry build lock"
    if [ -f "$appdir/.complete" ]; then exec 8>&-; return 0; fi
    say "building Apicurio Registry $APICURIO_VERSION into $appdir (first run only, ~2 min)"
    local work="$appdir.build.$$" mvnlog="$cache/apicurio-$APICURIO_VERSION-build.log"
    rm -rf "$work"
    mkdir -p "$work/src/main/resources"
    cp "$recipe/pom.xml" "$recipe/settings.xml" "$work/"
    local m2=${DPSTREAM_M2_REPO:-${HOME:-/tmp}/.m2/repository}
    # The app jar's own application.properties is the base configuration;
    # it must be in the local repository before it can be unpacked.
    if ! "$MVN" -B -q -Dstyle.color=never -s "$work/settings.xml" -Dmaven.repo.local="$m2" \
            org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get \
            -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION" -Dtransitive=false \
            >"$mvnlog" 2>&1; then
        tail -n 40 "$mvnlog" >&2; rm -rf "$work"
        die "maven could not fetch apicurio-registry-app (is Maven Central reachable?); log: $mvnlog"
    fi
    local jar="$m2/io/apicurio/apicurio-registry-app/$APICURIO_VERSION/apicurio-registry-app-$APICURIO_VERSION.jar"
    unzip -p "$jar" application.properties >"$work/src/main/resources/application.properties" \
        || { rm -rf "$work"; die "no application.properties in $jar"; }
    # Its legacy-jar packaging lines would override the fast-jar the runner needs.
    sed -i 's/^%prod.quarkus.package.type=legacy-jar/#&/; s/^%dev.quarkus.package.type=legacy-jar/#&/' \
        "$work/src/main/resources/application.properties"
    cat "$recipe/application.extra.properties" >>"$work/src/main/resources/application.properties"
    if ! (cd "$work" && "$MVN" -B -q -Dstyle.color=never -s settings.xml -Dmaven.repo.local="$m2" \
            package -DskipTests) >>"$mvnlog" 2>&1; then
        tail -n 40 "$mvnlog" >&2; rm -rf "$work"
        die "building the registry failed; log: $mvnlog"
    fi
    [ -f "$work/target/quarkus-app/quarkus-run.jar" ] || { rm -rf "$work"; die "quarkus-run.jar missing after the build"; }
    rm -rf "$appdir"
    mv "$work/target/quarkus-app" "$appdir"
    rm -rf "$work"
    touch "$appdir/.complete"
    exec 8>&-
}

# --- process state ---------------------------------------------------------

# Our registry's pid; the command line is checked so a reused pid of an
# unrelated process is not taken for it.
registry_pid() {
    [ -f "$pidfile" ] || return 1
    local pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-Dquarkus.http.port=$port .*quarkus-run.jar" || return 1
    echo "$pid"
}

answers() {
    "$CURL" -fsS -m 5 -o /dev/null "$url/subjects" 2>/dev/null
}

port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

log_tail() {
    if [ -f "$logfile" ]; then
        say "last 40 lines of $logfile:"
        tail -n 40 "$logfile" >&2
    fi
}

launch() {
    # setsid: the registry leaves this script's process group, so a test
    # runner killing its job does not take the shared registry down.
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" \
        "$JAVA" -Xmx"$heap" -Djava.awt.headless=true \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        -jar "$appdir/quarkus-run.jar" \
        </dev/null >>"$logfile" 2>&1 9>&- 8>&- &
    local i
    for i in $(seq 1 50); do
        [ -s "$pidfile" ] && break
        sleep 0.1
    done
}

wait_ready() {
    local deadline=$((SECONDS + start_timeout))
    while [ $SECONDS -lt $deadline ]; do
        if answers; then return 0; fi
        registry_pid >/dev/null || { log_tail; die "the registry exited during startup"; }
        sleep 0.5
    done
    log_tail
    die "the registry did not answer at $url within ${start_timeout}s"
}

# --- commands --------------------------------------------------------------

cmd_start() {
    need "$JAVA"; need "$CURL"; need flock; need setsid
    lock_state
    local pid
    if pid=$(registry_pid); then
        wait_ready
        say "already running (pid $pid) at $url"
        return 0
    fi
    rm -f "$pidfile"
    port_busy "$port" && die "port $port is in use by another process; set DPSTREAM_REGISTRY_PORT"
    build_app
    : >"$logfile"
    say "starting Apicurio Registry $APICURIO_VERSION at $url"
    launch
    pid=$(registry_pid) || { log_tail; die "the registry did not start"; }
    wait_ready
    say "ready (pid $pid) at $url"
}

cmd_stop() {
    lock_state
    local pid
    if ! pid=$(registry_pid); then
        rm -f "$pidfile"
        say "not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + stop_timeout))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
    if kill -0 "$pid" 2>/dev/null; then
        say "no exit ${stop_timeout}s after SIGTERM; sending SIGKILL to $pid"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    say "stopped (pid $pid)"
}

cmd_status() {
    local pid
    if ! pid=$(registry_pid); then
        echo "not running (state $state)"
        return 3
    fi
    if answers; then
        echo "running (pid $pid), answering at $url"
        return 0
    fi
    echo "running (pid $pid) but not answering at $url"
    return 1
}

case "${1:-}" in
    start)  cmd_start ;;
    stop)   cmd_stop ;;
    status) cmd_status ;;
    build)  build_app; echo "$appdir" ;;
    url)    echo "$url" ;;
    log)    tail -n "${2:-60}" "$logfile" ;;
    *)      awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2 ;;
esac
