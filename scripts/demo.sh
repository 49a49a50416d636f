#!/usr/bin/env bash
# The README's run command: set up, build, and run the embedded default
# (`dpstream demo`, no broker needed).  It installs only what building
# needs (install-deps.sh's default level): no Java, Maven, R or clang.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh >&2
bash scripts/build.sh release >&2
exec ./build/dpstream demo "$@"
