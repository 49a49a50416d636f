#!/usr/bin/env bash
# pinned.sh — bench_throughput's dpstream-vs-ceiling ratios measured fairly
# (issue 20 §1, issue 41 §1): the broker on its own CPU, the clients (the
# raw consumer, dpstream and the copy pipeline, one after the other inside
# bench_throughput) on another, so none competes with the broker.  b/a
# compares dpstream with a raw consume of the same topic under the same
# librdkafka settings; b/c with the copy pipeline (copy_pipeline.h), which
# consumes the same topic and commits, per step, a transaction of exactly
# the messages and bytes dpstream's held — the fair ceiling.
#
#   bash bench/throughput/pinned.sh [PAIRS=3] [-- bench_throughput args]
#
# Needs the local broker (scripts/kafka-local.sh start; its
# DPSTREAM_KAFKA_DIR / DPSTREAM_KAFKA_PORT select which one, and the bench
# talks to that one unless DPSTREAM_BOOTSTRAP_SERVERS says otherwise) and
# a build (build/bench_throughput).  Runs PAIRS pinned runs (broker on
# CPU 0, bench on CPU 1), each one raw pass, one dpstream pass and one copy
# pass on the same topic, then one unpinned run (UNPINNED=0 skips it);
# prints every run's RESULT lines and min / median / max of the steady
# wall-clock ratios b/a and b/c, of the clients' CPU-seconds per message
# dpstream / raw and dpstream / copy (process CPU of the bench process
# alone, not the machine's), and of each pass's CPU µs per message.  The
# broker's affinity is put back at the end.  Default size n = 10^6, T =
# 10, window k = 3, plain framing (bench_throughput's defaults unless
# overridden after --).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAIRS=${1:-3}
shift || true
[ "${1:-}" = "--" ] && shift
BENCH=${BENCH:-$ROOT/build/bench_throughput}
[ -x "$BENCH" ] || { echo "pinned.sh: build $BENCH first (bash scripts/build.sh release)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "pinned.sh: needs 2 CPUs" >&2; exit 2; }
PID=$(cat "${DPSTREAM_KAFKA_DIR:-/tmp/dpstream-kafka}/kafka.pid" 2>/dev/null || true)
export DPSTREAM_BOOTSTRAP_SERVERS=${DPSTREAM_BOOTSTRAP_SERVERS:-$(bash "$ROOT/scripts/kafka-local.sh" bootstrap)}
[ -n "$PID" ] && kill -0 "$PID" 2>/dev/null || { echo "pinned.sh: no local broker (scripts/kafka-local.sh start)" >&2; exit 2; }
OLD=$(taskset -pc "$PID" | sed 's/.*: //')
restore() { taskset -a -pc "$OLD" "$PID" > /dev/null 2>&1 || true; }
trap restore EXIT
OUT=$(mktemp)
echo "pinned.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pinned.sh: broker $DPSTREAM_BOOTSTRAP_SERVERS, pid $PID on CPU 0 (all its threads), bench_throughput on CPU 1"
taskset -a -pc 0 "$PID" > /dev/null
for i in $(seq "$PAIRS"); do
    taskset -c 1 "$BENCH" --no-latency "$@" | tee -a "$OUT.pinned" | grep '^RESULT'
done
restore
touch "$OUT.unpinned"
if [ "${UNPINNED:-1}" != 0 ]; then
    echo "pinned.sh: unpinned run (broker and bench share both CPUs)"
    "$BENCH" --no-latency "$@" | tee -a "$OUT.unpinned" | grep '^RESULT'
fi
python3 - "$OUT.pinned" "$OUT.unpinned" <<'PY'
import re, statistics, sys
def parse(path):
    rows, ceil = [], []
    for l in open(path):
        m = re.search(r"ratio b/a ([0-9.]+) \(steady wall\).*per CPU-second: raw ([0-9.]+), end-to-end ([0-9.]+)", l)
        if m:
            ba, raw_cpu, e2e_cpu = float(m.group(1)), float(m.group(2)), float(m.group(3))
            rows.append((ba, raw_cpu / e2e_cpu))   # CPU-s per message: dpstream / raw
        m = re.search(r"^RESULT ceiling .* b/c ([0-9.]+); process CPU us per message \(steady\): raw ([0-9.]+), "
                      r"dpstream ([0-9.]+), copy ([0-9.]+); CPU dpstream/copy ([0-9.]+)", l)
        if m:
            ceil.append(tuple(float(g) for g in m.groups()))   # b/c, us raw, us dpstream, us copy, dpstream/copy
    return rows, ceil
def mmm(xs):
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"
(p, pc), (u, uc) = parse(sys.argv[1]), parse(sys.argv[2])
if p:
    print(f"PINNED   ({len(p)} runs) b/a min/median/max {mmm([r[0] for r in p])}; "
          f"client CPU per message dpstream/raw {mmm([r[1] for r in p])}")
if pc:
    print(f"PINNED   ({len(pc)} runs) b/c min/median/max {mmm([r[0] for r in pc])}; "
          f"client CPU per message dpstream/copy {mmm([r[4] for r in pc])}; CPU us per message "
          f"raw {mmm([r[1] for r in pc])}, dpstream {mmm([r[2] for r in pc])}, copy {mmm([r[3] for r in pc])}")
if u:
    print(f"UNPINNED ({len(u)} run)   b/a {u[0][0]:.3f}; client CPU per message dpstream/raw {u[0][1]:.3f}")
if uc:
    print(f"UNPINNED ({len(uc)} run)   b/c {uc[0][0]:.3f}; client CPU per message dpstream/copy {uc[0][4]:.3f}")
PY
rm -f "$OUT" "$OUT.pinned" "$OUT.unpinned"
