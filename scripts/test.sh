#!/usr/bin/env bash
# The README's test command: set up, build, and run every test suite.
#   1. install the Debian packages (idempotent; install-deps.sh --tests)
#   2. build the -Werror build and the ASan+UBSan build
#   3. start the local Apache Kafka broker (KRaft, 127.0.0.1) and the local
#      schema registry (scripts/registry-local.sh) if integration tests
#      exist and they are not running, and stop what it started afterwards
#   4. run ctest in both builds, and between them the libFuzzer harnesses
#      (scripts/fuzz.sh: clang build in build-fuzz/, 60 s each); the run
#      ends with ctest's summary line of the ASan build
# `--quick`: the unit and CLI tests of the release build only (no broker,
# no sanitizers, no fuzzing; a few minutes) — the loop while editing.
# CI runs the whole thing (no flag).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ "${1:-}" = --quick ]; then
  bash scripts/install-deps.sh --recipes || exit 1
  bash scripts/build.sh release || exit 1
  echo "== ctest --quick: unit and CLI tests, release build =="
  cd build && exec ctest --output-on-failure -j"$(nproc)" -L 'unit|cli'
fi
[ $# -eq 0 ] || { echo "usage: $0 [--quick]" >&2; exit 2; }

bash scripts/install-deps.sh --tests || exit 1
bash scripts/build.sh release || exit 1
bash scripts/build.sh asan || exit 1

broker_started=0
registry_started=0
cleanup() {
  if [ "$registry_started" = 1 ]; then bash scripts/registry-local.sh stop >/dev/null 2>&1 || true; fi
  if [ "$broker_started" = 1 ]; then bash scripts/kafka-local.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
if ls tests/integration/*.sh >/dev/null 2>&1 && [ -f scripts/kafka-local.sh ]; then
  if ! bash scripts/kafka-local.sh status >/dev/null 2>&1; then
    # The broker this run starts is its own, on an empty data directory:
    # every test creates uniquely named topics and none needs to survive,
    # while a data directory kept across runs grows by ~1 000 partitions a
    # suite (14 230 and 645 MB after a dozen on one machine, when startup and
    # topic creation got slow enough for a test's first produce to time out).
    # A broker already running (yours) is used as it is and left alone.
    export DPSTREAM_KAFKA_DIR=${DPSTREAM_TEST_KAFKA_DIR:-/tmp/dpstream-kafka-test}
    bash scripts/kafka-local.sh reset >/dev/null 2>&1 || true
    bash scripts/kafka-local.sh start || { echo "test.sh: could not start the local Kafka broker" >&2; exit 1; }
    broker_started=1
  fi
fi
if ls tests/integration/*.sh >/dev/null 2>&1 && [ -f scripts/registry-local.sh ]; then
  if ! bash scripts/registry-local.sh status >/dev/null 2>&1; then
    bash scripts/registry-local.sh start || { echo "test.sh: could not start the local schema registry" >&2; exit 1; }
    registry_started=1
  fi
fi

jobs=$(nproc)
status=0
echo "== ctest: release build (-Werror) =="
(cd build && ctest --output-on-failure -j"$jobs") || status=1
echo "== fuzz: libFuzzer harnesses (clang, ASan+UBSan), ${DPSTREAM_FUZZ_SECONDS:-60} s each =="
bash scripts/fuzz.sh "${DPSTREAM_FUZZ_SECONDS:-60}" || status=1
echo "== ctest: ASan+UBSan build =="
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs") || status=1
exit $status
