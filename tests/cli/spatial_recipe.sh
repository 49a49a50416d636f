#!/usr/bin/env bash
# spatial_recipe.sh — connectors/recipes/spatial/make_updates.py end to end:
#   * motion-circles on a miniature of the authors' layout (a CSV of
#     inserts/deletes and an ESRI .shp/.dbf pair of query rectangles built
#     here, byte by byte, from the format's specification): the min-max
#     rescaling, the steps (first 10 % then 500 per step, padded with the
#     authors' empty batches), every delete matching an insert, and the
#     query rectangles and sizes read back exactly;
#   * circles (our generator): every point in [0,1]^2, deletes only of
#     present points, and a replay through `spatial` with no rejects, one
#     release per step, byte-identical under the same key and different
#     under another;
#   * clmfires (Debian's r-cran-spatstat.data): 8488 fires over 120 months
#     through `dpstream load --step-column month` and `replay`: 120
#     releases, the last EXHAUSTED, no rejects.
# Usage: bash spatial_recipe.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: spatial_recipe.sh path/to/dpstream}
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
REC="$SRC/connectors/recipes/spatial/make_updates.py"
KEY1=$(printf '%064d' 1)
KEY2=$(printf '%064d' 2)

# --- motion-circles on a miniature repository -----------------------------------------
python3 - "$WORK/repo" <<'EOF'
import os, random, struct, sys
d = os.path.join(sys.argv[1], "data/motion_circles")
os.makedirs(d)
rnd = random.Random(5)
pts = [(rnd.uniform(-1, 1), rnd.uniform(-2, 3)) for _ in range(3000)]
rows = [(x, y, 1) for x, y in pts] + [(x, y, -1) for x, y in pts[:1000]]
with open(os.path.join(d, "motion_circles.csv"), "w") as f:
    f.write("x,y,move,label\n")
    for x, y, m in rows:
        f.write(f"{x!r},{y!r},{m},0\n")
rects = [(0.1, 0.2, 0.13, 0.22, "small"), (0.5, 0.5, 0.6, 0.58, "medium"), (0.0, 0.7, 0.3, 1.0, "large")]
recs = b""
for i, (x1, y1, x2, y2, _) in enumerate(rects):   # polygon records: type 5, box, 1 part, 5 points
    ring = [(x1, y1), (x1, y2), (x2, y2), (x2, y1), (x1, y1)]
    body = struct.pack("<i4d2i", 5, x1, y1, x2, y2, 1, 5) + struct.pack("<i", 0)
    body += b"".join(struct.pack("<2d", *p) for p in ring)
    recs += struct.pack(">2i", i + 1, len(body) // 2) + body
header = struct.pack(">7i", 9994, 0, 0, 0, 0, 0, (100 + len(recs)) // 2) + struct.pack("<2i", 1000, 5)
header += struct.pack("<8d", 0, 0, 1, 1, 0, 0, 0, 0)
open(os.path.join(d, "motion_circles_queries.shp"), "wb").write(header + recs)
fields = [(b"FID", b"N", 10), (b"size", b"C", 10)]
hlen, rlen = 32 + 32 * len(fields) + 1, 1 + sum(f[2] for f in fields)
dbf = struct.pack("<B3BIHH20x", 3, 124, 1, 1, len(rects), hlen, rlen)
for name, typ, ln in fields:
    dbf += struct.pack("<11sc4xB15x", name, typ, ln)
dbf += b"\r"
for i, r in enumerate(rects):
    dbf += b" " + str(i).rjust(10).encode() + r[4].ljust(10).encode()
open(os.path.join(d, "motion_circles_queries.dbf"), "wb").write(dbf + b"\x1a")
EOF
python3 "$REC" motion-circles --repo "$WORK/repo" --out "$WORK/mc" 2> "$WORK/mc.log" || fail "motion-circles: $(cat "$WORK/mc.log")"
python3 - "$WORK/mc" <<'EOF' || fail "motion-circles output"
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/points.csv")))
assert len(rows) == 4000, len(rows)
xs, ys = [float(r["x"]) for r in rows], [float(r["y"]) for r in rows]
assert min(xs) == 0 and max(xs) == 1 and min(ys) == 0 and max(ys) == 1, "rescaled to [0,1]"
steps = [int(r["step"]) for r in rows]
assert steps.count(1) == 400 and max(steps) == 9 and steps.count(9) == 100, (steps.count(1), max(steps))
meta = json.load(open(f"{d}/stream.json"))
assert meta["steps"] == 1 + 4000 // 500 == 9, meta          # main.py's n_batches counts the first rows too
live = {}
for r in rows:
    k = (r["x"], r["y"])
    live[k] = live.get(k, 0) + int(r["move"])
    assert live[k] >= 0, "a delete before its insert"
q = list(csv.DictReader(open(f"{d}/queries.csv")))
assert [(float(r["x1"]), float(r["y1"]), float(r["x2"]), float(r["y2"]), r["size"]) for r in q] == \
    [(0.1, 0.2, 0.13, 0.22, "small"), (0.5, 0.5, 0.6, 0.58, "medium"), (0.0, 0.7, 0.3, 1.0, "large")], q
EOF

# --- circles: our generator, through replay -------------------------------------------
python3 "$REC" circles --out "$WORK/c" --n 3000 --seed 3 2> "$WORK/c.log" || fail "circles: $(cat "$WORK/c.log")"
python3 - "$WORK/c" <<'EOF' || fail "circles output"
import csv, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/points.csv")))
assert len(rows) == 9000, len(rows)
live = {}
for r in rows:
    x, y = float(r["x"]), float(r["y"])
    assert 0 <= x <= 1 and 0 <= y <= 1
    live[(r["x"], r["y"])] = live.get((r["x"], r["y"]), 0) + int(r["move"])
    assert live[(r["x"], r["y"])] >= 0
assert sum(live.values()) == 3000
EOF
STEPS=$(python3 -c "import json; print(json.load(open('$WORK/c/stream.json'))['steps'])")
for k in 1 1b 2; do
    key=$KEY1; [ "$k" = 2 ] && key=$KEY2
    "$BIN" replay --config "$WORK/c/dpstream.json" --input "$WORK/c/updates.jsonl" --out "$WORK/r$k" --key-hex "$key" > /dev/null
done
[ ! -s "$WORK/r1/rejected.jsonl" ] || fail "circles: rejects: $(head -2 "$WORK/r1/rejected.jsonl")"
[ "$(grep -c '"type":"manifest"' "$WORK/r1/releases.jsonl")" -eq "$STEPS" ] || fail "circles: not one release per step"
cmp -s "$WORK/r1/releases.jsonl" "$WORK/r1b/releases.jsonl" || fail "circles: same key, different releases"
cmp -s "$WORK/r1/releases.jsonl" "$WORK/r2/releases.jsonl" && fail "circles: another key, same releases"
tail -1 "$WORK/r1/budget.jsonl" | grep -q '"status":"EXHAUSTED"' || fail "circles: the last step is not EXHAUSTED"

python3 "$REC" circles --out "$WORK/ci" --n 2000 --seed 3 --insert-only 2> "$WORK/ci.log" || fail "circles --insert-only"
python3 - "$WORK/ci" <<'EOF' || fail "circles --insert-only output"
import csv, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/points.csv")))
assert len(rows) == 4000 and all(r["move"] == "1" for r in rows), len(rows)
EOF

# --- clmfires: Debian's spatstat.data through load and replay ------------------------------
python3 "$REC" clmfires --out "$WORK/clm" 2> "$WORK/clm.log" || fail "clmfires: $(cat "$WORK/clm.log")"
[ "$(tail -n +2 "$WORK/clm/clmfires.csv" | wc -l)" -eq 8488 ] || fail "clmfires: not 8488 fires"
"$BIN" load --input "$WORK/clm/clmfires.csv" --stream clm/fires --step-column month --entity-column id \
    --kind INSERT --point-columns x,y --close-steps --out "$WORK/clm/updates.jsonl" --quiet
"$BIN" replay --config "$WORK/clm/dpstream.json" --input "$WORK/clm/updates.jsonl" --out "$WORK/rc" \
    --key-hex "$KEY1" > /dev/null
[ ! -s "$WORK/rc/rejected.jsonl" ] || fail "clmfires: rejects: $(head -2 "$WORK/rc/rejected.jsonl")"
[ "$(grep -c '"type":"manifest"' "$WORK/rc/releases.jsonl")" -eq 120 ] || fail "clmfires: not 120 releases"
tail -1 "$WORK/rc/budget.jsonl" | grep -q '"status":"EXHAUSTED"' || fail "clmfires: the last month is not EXHAUSTED"
echo "PASS spatial_recipe"
