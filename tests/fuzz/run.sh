#!/usr/bin/env bash
# run.sh — one short libFuzzer run of a harness (scripts/fuzz.sh, ctest in
# the fuzz build): the committed seeds plus the generated ones are copied to
# a scratch corpus (the source tree is never written), the harness runs
# for SECONDS, and any crash, sanitizer report or leak fails the test with
# the reproducer's bytes in hex.
# Usage: run.sh HARNESS NAME SECONDS SEEDS_EXE SOURCE_DIR
set -euo pipefail
HARNESS=$1 NAME=$2 SECONDS_=$3 SEEDS_EXE=$4 SRC=$5
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/corpus" "$WORK/art"
if [ -d "$SRC/tests/fuzz/seeds/$NAME" ]; then cp "$SRC/tests/fuzz/seeds/$NAME/"* "$WORK/corpus/"; fi
"$SEEDS_EXE" "$NAME" "$WORK/corpus"
n=$(ls "$WORK/corpus" | wc -l)
[ "$n" -gt 0 ] || { echo "FAIL: no seeds for $NAME" >&2; exit 1; }
rc=0
"$HARNESS" -max_total_time="$SECONDS_" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$WORK/art/" \
    -print_final_stats=1 "$WORK/corpus" > "$WORK/log" 2>&1 || rc=$?
grep -E '^stat::number_of_executed_units|^Done' "$WORK/log" | head -2 || true
if [ "$rc" -ne 0 ]; then
    tail -40 "$WORK/log" >&2
    for a in "$WORK/art/"*; do [ -e "$a" ] && { echo "reproducer $a:" >&2; xxd "$a" | head -20 >&2; }; done
    echo "FAIL: fuzz $NAME (exit $rc)" >&2
    exit 1
fi
echo "fuzz $NAME: $n seeds, ${SECONDS_} s, no finding"
