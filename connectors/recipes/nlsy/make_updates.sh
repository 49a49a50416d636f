#!/usr/bin/env bash
# make_updates.sh — turn the NLSY "Males" panel (R package plm, Debian
# r-cran-plm) into dpstream updates, then run them through the sample
# configuration offline.  See README.md.
#
#   connectors/recipes/nlsy/make_updates.sh [--out DIR] [--dpstream PATH] [--no-install] [--no-replay]
#
#   --out DIR        where to write (default ./nlsy-out)
#   --dpstream PATH  the dpstream binary (default: build/dpstream, then $PATH)
#   --no-install     do not apt-get install r-base-core r-cran-plm when missing (exit 3 instead)
#   --no-replay      stop after writing the update file
#
# Writes DIR/males.csv (the panel; fetched from the installed R package,
# never committed), DIR/nlsy.updates.jsonl (streams nlsy/union and
# nlsy/married, one REPORT per man and year + a CLOSE_STEP per year),
# DIR/rejects.jsonl, and unless --no-replay: DIR/noise.key (fresh, 0600),
# DIR/replay/ (releases, budget) and DIR/export/ (per-step CSV files).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=./nlsy-out
DPSTREAM=""
INSTALL=1
REPLAY=1
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=${2:?--out needs a directory}; shift 2 ;;
        --dpstream) DPSTREAM=${2:?--dpstream needs a path}; shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        --no-replay) REPLAY=0; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "make_updates.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$DPSTREAM" ]; then
    if [ -x "$HERE/../../../build/dpstream" ]; then DPSTREAM="$HERE/../../../build/dpstream"
    elif command -v dpstream > /dev/null; then DPSTREAM=$(command -v dpstream)
    else echo "make_updates.sh: no dpstream binary: build it (scripts/build.sh) or pass --dpstream" >&2; exit 2
    fi
fi

have_plm() { command -v Rscript > /dev/null && Rscript -e 'quit(status = !requireNamespace("plm", quietly = TRUE))' > /dev/null 2>&1; }
if ! have_plm; then
    if [ $INSTALL -eq 0 ]; then
        echo "make_updates.sh: Rscript with the plm package is not installed (apt-get install r-base-core r-cran-plm)" >&2
        exit 3
    fi
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    echo "make_updates.sh: installing r-base-core r-cran-plm (Debian packages)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends r-base-core r-cran-plm
    have_plm || { echo "make_updates.sh: plm still not loadable after install" >&2; exit 3; }
fi

mkdir -p "$OUT"
Rscript "$HERE/export_males.R" "$OUT/males.csv"

# one load per stream; both read the same CSV (sorted by year), so each
# stream's CLOSE_STEP for a year follows that year's 545 reports
: > "$OUT/nlsy.updates.jsonl"
: > "$OUT/rejects.jsonl"
for var in union married; do
    "$DPSTREAM" load --input "$OUT/males.csv" --mapping "$HERE/mapping-$var.json" --close-steps --quiet \
        --rejects "$OUT/rejects.$var.jsonl" --out "$OUT/updates.$var.jsonl"
    cat "$OUT/updates.$var.jsonl" >> "$OUT/nlsy.updates.jsonl"
    cat "$OUT/rejects.$var.jsonl" >> "$OUT/rejects.jsonl"
    rm -f "$OUT/updates.$var.jsonl" "$OUT/rejects.$var.jsonl"
done
echo "make_updates.sh: $(wc -l < "$OUT/nlsy.updates.jsonl") update lines -> $OUT/nlsy.updates.jsonl"

[ $REPLAY -eq 1 ] || exit 0
[ -f "$OUT/noise.key" ] || "$DPSTREAM" keygen --out "$OUT/noise.key" > /dev/null
"$DPSTREAM" replay --config "$HERE/dpstream.json" --input "$OUT/nlsy.updates.jsonl" \
    --out "$OUT/replay" --key-file "$OUT/noise.key"
"$DPSTREAM" export --from-replay "$OUT/replay" --out "$OUT/export" --layout per-step
echo "make_updates.sh: synthetic releases per year in $OUT/export/<stream>/step-NNNN.csv," \
     "budget events in $OUT/export/budget.jsonl"
