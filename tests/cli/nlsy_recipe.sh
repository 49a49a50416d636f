#!/usr/bin/env bash
# nlsy_recipe.sh — runs connectors/recipes/nlsy/make_updates.sh on the real NLSY
# "Males" panel (scripts/install-deps.sh installs Rscript and the plm
# package).  Without them it FAILS under CI=true (CI runs every test; a
# missing prerequisite is a missing install step) and otherwise prints
# SKIP and exits 77 (ctest: SKIP_RETURN_CODE 77), for a developer's tree.
# Checks: 545 men x 8 years per stream, a CLOSE_STEP per year, union and
# married shares per year in the updates equal R's own tables (computed
# independently from the package data), 8 releases per stream, and the
# per-step export holds exactly the replayed records.
# Usage: bash nlsy_recipe.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: nlsy_recipe.sh path/to/dpstream}
if ! command -v Rscript > /dev/null || ! Rscript -e 'quit(status = !requireNamespace("plm", quietly = TRUE))' > /dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: nlsy_recipe needs Rscript and the R package plm, which scripts/install-deps.sh installs" >&2
        exit 1
    fi
    echo "SKIP: nlsy_recipe needs Rscript and the R package plm (bash scripts/install-deps.sh)"
    exit 77
fi
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$SRC/connectors/recipes/nlsy/make_updates.sh" --out "$WORK/out" --dpstream "$BIN" --no-install > "$WORK/log" 2>&1 \
    || fail "recipe failed: $(cat "$WORK/log")"

# R's tables of the package data, independently of the recipe's CSV
Rscript -e 'data("Males", package = "plm");
  for (v in c("union", "married")) { t <- tapply(Males[[v]] == "yes", Males$year, sum);
    cat(paste(v, names(t), t, sep = ","), sep = "\n") }' > "$WORK/r_counts.csv"

python3 - "$WORK" <<'EOF'
import collections, json, sys
w = sys.argv[1]
want = {}
for line in open(f"{w}/r_counts.csv"):
    v, year, n = line.strip().split(",")
    want[(f"nlsy/{v}", int(year) - 1979)] = int(n)
reports = collections.Counter()
yes = collections.Counter()
closes = collections.defaultdict(list)
entities = collections.defaultdict(set)
for l in open(f"{w}/out/nlsy.updates.jsonl"):
    u = json.loads(l)
    if u["kind"] == "CLOSE_STEP":
        closes[u["stream"]].append(u["step"])
        continue
    assert u["kind"] == "REPORT" and u["value"] in (0, 1), u
    reports[(u["stream"], u["step"])] += 1
    yes[(u["stream"], u["step"])] += u["value"]
    entities[u["stream"]].add(u["entity"])
for s in ("nlsy/union", "nlsy/married"):
    assert closes[s] == list(range(1, 9)), (s, closes[s])
    assert len(entities[s]) == 545, (s, len(entities[s]))
    for step in range(1, 9):
        assert reports[(s, step)] == 545, (s, step, reports[(s, step)])
        assert yes[(s, step)] == want[(s, step)], (s, step, yes[(s, step)], want[(s, step)])
assert open(f"{w}/out/rejects.jsonl").read() == ""
# 8 releases per stream; the per-step export equals the replayed records
rel = collections.defaultdict(list)
for l in open(f"{w}/out/replay/releases.jsonl"):
    r = json.loads(l)
    if r["type"] == "manifest":
        rel[r["stream"]].append(r["step"])
assert rel["nlsy/union"] == list(range(1, 9)) and rel["nlsy/married"] == list(range(1, 9)), rel
import csv, os
for s, d in (("nlsy/union", "nlsy%2Funion"), ("nlsy/married", "nlsy%2Fmarried")):
    recs = collections.defaultdict(list)
    for l in open(f"{w}/out/replay/releases.jsonl"):
        r = json.loads(l)
        if r["type"] == "record" and r["stream"] == s:
            v = r.get("value", r.get("row"))
            recs[r["step"]].append([r["synthetic_id"]] + (v if isinstance(v, list) else [v]))
    for step in range(1, 9):
        rows = list(csv.reader(open(f"{w}/out/export/{d}/step-{step:04d}.csv")))[1:]
        assert [[int(x) for x in row] for row in rows] == recs.get(step, []), (s, step)
print("nlsy_recipe: 2 streams x 8 years x 545 men match R's tables; 16 releases exported")
EOF
