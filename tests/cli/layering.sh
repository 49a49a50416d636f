#!/usr/bin/env bash
# layering.sh — dependencies point downward only and no files call each
# other in a circle (README, Architecture), checked on the object files of
# the build that made BIN (tests/cli/lib/layering.py).
# Usage: bash layering.sh /path/to/build/dpstream
set -euo pipefail
BIN=${1:?usage: layering.sh path/to/dpstream}
exec python3 "$(cd "$(dirname "$0")" && pwd)/lib/layering.py" "$(dirname "$BIN")"
