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

svc_name=registry-local
svc_what="the registry"
svc_where=$url
svc_cmdline="-Dquarkus.http.port=$port .*quarkus-run.jar"
. "$root/scripts/lib/local_service.sh"

for v in "$port" "$start_timeout"; do
    [[ $v =~ ^[0-9]+$ ]] || die "not a number: '$v'"
done

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

answers() {
    "$CURL" -fsS -m 5 -o /dev/null "$url/subjects" 2>/dev/null
}

launch() {
    svc_launch "$JAVA" -Xmx"$heap" -Djava.awt.headless=true \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        -jar "$appdir/quarkus-run.jar"
}

# --- commands --------------------------------------------------------------

cmd_start() {
    need "$JAVA"; need "$CURL"; need flock; need setsid
    lock_state
    local pid
    if pid=$(svc_pid); then
        svc_wait_ready
        say "already running (pid $pid) at $url"
        return 0
    fi
    rm -f "$pidfile"
    port_busy "$port" && die "port $port is in use by another process; set DPSTREAM_REGISTRY_PORT"
    build_app
    : >"$logfile"
    say "starting Apicurio Registry $APICURIO_VERSION at $url"
    launch
    pid=$(svc_pid) || { log_tail; die "the registry did not start"; }
    svc_wait_ready
    say "ready (pid $pid) at $url"
}

case "${1:-}" in
    start)  cmd_start ;;
    stop)   svc_stop ;;
    status) svc_status ;;
    build)  build_app; echo "$appdir" ;;
    url)    echo "$url" ;;
    log)    tail -n "${2:-60}" "$logfile" ;;
    *)      svc_usage "$0" ;;
esac
