#!/usr/bin/env bash
# http_assets.sh — the live page the binary serves is the one in
# processor/app/web/: processor/app/http_assets.c must be what embed.py
# generates from index.html, app.js and style.css (edit those, rerun it);
# and the binary's `run --help` documents --http.
# Usage: bash http_assets.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: http_assets.sh path/to/dpstream}
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 "$SRC/processor/app/web/embed.py" --check || { echo "FAIL: http_assets.c is stale" >&2; exit 1; }
"$BIN" run --help | grep -q -- "--http HOST:PORT" || { echo "FAIL: run --help does not document --http" >&2; exit 1; }
echo "PASS http_assets"
