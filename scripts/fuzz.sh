#!/usr/bin/env bash
# Build the libFuzzer harnesses of tests/fuzz/ with clang (ASan + UBSan)
# into build-fuzz/ and fuzz each for SECONDS (default 60) through ctest.
# scripts/test.sh runs it between the two test builds; install-deps.sh
# installs clang and its fuzzer runtime.
#   Usage: scripts/fuzz.sh [SECONDS] [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
dir=${2:-$root/build-fuzz}
CC=clang cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPSTREAM_FUZZ=ON \
    -DDPSTREAM_FUZZ_SECONDS="$seconds" > /dev/null
cmake --build "$dir" -j"$(nproc)" > /dev/null
cd "$dir"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$(nproc)"
