#!/usr/bin/env bash
# doc_citations.sh — the documents the code cites are in the tree (issue 37
# item 1): every `<path>.md §N` in processor/, connectors/, tests/,
# scripts/, bench/, docker/, docs/, schemas/, README.md and CMakeLists.txt
# names a file of the repository that has a `## §N` heading, and nothing
# cites DESIGN.md, ALGORITHMS.md, KAFKA.md or PEERS.md any more (they lived
# outside the repository; docs/ holds their subjects now).  The check is
# tests/cli/lib/doc_citations.py; it names each dangling citation.
# Usage: bash doc_citations.sh [path/to/dpstream]   (the binary is not used)
set -euo pipefail
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
exec python3 "$SRC/tests/cli/lib/doc_citations.py" "$SRC"
