#!/usr/bin/env bash
# Configure and build dpstream.  Usage: scripts/build.sh [release|asan] [build-dir]
#   release  -Wall -Wextra -Werror, RelWithDebInfo      (default dir: build)
#   asan     the same plus AddressSanitizer+UBSan      (default dir: build-asan)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-release}
case "$flavour" in
  release) dir=${2:-$root/build};      flags=(-DDPSTREAM_WERROR=ON) ;;
  asan)    dir=${2:-$root/build-asan}; flags=(-DDPSTREAM_WERROR=ON -DDPSTREAM_SANITIZE=ON) ;;
  *) echo "usage: $0 [release|asan] [build-dir]" >&2; exit 2 ;;
esac
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
