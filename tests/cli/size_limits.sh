#!/usr/bin/env bash
# size_limits.sh — the house size rules hold (issue 37): no .c or .h file
# under processor/ or connectors/ over 800 lines, and no C function there
# over 150 lines, counted from the first line of its declaration to its
# closing brace (tests/cli/lib/size_limits.py scans the brace blocks; it
# names each breach).  No exceptions are listed: a file or function over
# the limit is split at its seams.
# Usage: bash size_limits.sh [path/to/dpstream]   (the binary is not used)
set -euo pipefail
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
exec python3 "$SRC/tests/cli/lib/size_limits.py" "$SRC"
