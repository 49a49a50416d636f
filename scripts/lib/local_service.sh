# local_service.sh — what scripts/kafka-local.sh and scripts/registry-local.sh
# share: one background Java service on 127.0.0.1 with a state directory, a
# pid file checked against the process's command line, a lock serialising
# start/stop, readiness polling and a SIGTERM-then-SIGKILL stop.
#
# Sourced, not run.  The sourcing script sets, before calling anything here:
#   svc_name        prefix of every message ("kafka-local")
#   svc_what        what the service is in messages ("the broker")
#   svc_where       where it answers ("127.0.0.1:39092")
#   state pidfile logfile start_timeout stop_timeout
#   svc_cmdline     a grep pattern its command line must match (so a pid
#                   reused by an unrelated process is not taken for it)
# and defines `answers` (exit 0 when the service responds).

say() { echo "$svc_name: $*" >&2; }
die() { say "$*"; exit 1; }

need() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found (scripts/install-deps.sh installs it)"
}

# Serialise start/stop/reset of one state directory: parallel test runners
# must not launch the same service twice.  The descriptor is closed in the
# service's environment (svc_launch) so the lock dies with the script.
lock_state() {
    mkdir -p "$state"
    exec 9>"$state/.lock"
    flock -w 300 9 || die "timed out waiting for the lock on $state"
}

# Prints the service's pid if our process is alive.
svc_pid() {
    [ -f "$pidfile" ] || return 1
    local pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$svc_cmdline" || return 1
    echo "$pid"
}

port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

log_tail() {
    if [ -f "$logfile" ]; then
        say "last 60 lines of $logfile:"
        tail -n 60 "$logfile" >&2
    fi
}

# svc_launch COMMAND...: start it in the background, logging to $logfile.
# setsid: it leaves this script's process group, so a Ctrl-C or a test
# runner killing its job does not take the shared service down.  The inner
# shell writes its own pid, then execs the command under that pid.
svc_launch() {
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$@" \
        </dev/null >>"$logfile" 2>&1 9>&- 8>&- &
    local i
    for i in $(seq 1 50); do
        [ -s "$pidfile" ] && break
        sleep 0.1
    done
}

svc_wait_ready() {
    local deadline=$((SECONDS + start_timeout))
    while [ $SECONDS -lt $deadline ]; do
        if answers; then return 0; fi
        if ! svc_pid >/dev/null; then
            log_tail
            die "$svc_what exited during startup"
        fi
        sleep 0.5
    done
    log_tail
    die "$svc_what did not answer at $svc_where within ${start_timeout}s"
}

svc_stop() {
    lock_state
    local pid
    if ! pid=$(svc_pid); then
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
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    fi
    rm -f "$pidfile"
    say "stopped (pid $pid)"
}

# Exit status: 0 running and answering, 1 running but not answering, 3 not running.
svc_status() {
    local pid
    if ! pid=$(svc_pid); then
        echo "not running (state $state)"
        return 3
    fi
    if answers; then
        echo "running (pid $pid), answering at $svc_where"
        return 0
    fi
    echo "running (pid $pid) but not answering at $svc_where"
    return 1
}

# The script's usage: its header comment, from line 2 to the first non-comment line.
svc_usage() {
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1" >&2
    exit 2
}
