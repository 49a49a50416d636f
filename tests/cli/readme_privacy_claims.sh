#!/usr/bin/env bash
# readme_privacy_claims.sh — what the README's privacy section says is
# public is what the synthesizers publish (issue 36 item 5).
#
#   1. hypercube: nothing fixes the number of points a step holds, and the
#      release carries it exactly.  Two inputs that differ in whether one
#      person's point is present give record counts that differ by exactly
#      one under every key — so the README must say presence is not
#      protected, and must not say the number of points per step is fixed.
#   2. marginal / spatial: a row's (point's) insert and its later delete are
#      two events, each accepted and each charged at event level — the
#      README must say a lifetime costs 2ε and name max_rows_per_user: 2
#      (sensitivity: 2 for spatial).
# Usage: bash readme_privacy_claims.sh path/to/dpstream
set -euo pipefail
BIN=${1:?usage: readme_privacy_claims.sh path/to/dpstream}
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
status=0
fail() { echo "FAIL: $*" >&2; status=1; }

# --- 1. hypercube publishes each step's exact point count ------------------------------------
python3 - "$WORK" <<'PY'
import json, random, sys
work = sys.argv[1]
rng = random.Random(5)
pts = {(i, t): [round(rng.random(), 4), round(rng.random(), 4)] for i in range(20) for t in range(1, 4)}
for name, with_x in (("h1.jsonl", False), ("h2.jsonl", True)):
    out = []
    for t in range(1, 4):
        for i in range(20):
            out.append({"stream": "hy", "step": t, "kind": "REPORT", "entity": f"h{i}", "point": pts[i, t]})
        if with_x and t == 2:
            out.append({"stream": "hy", "step": t, "kind": "REPORT", "entity": "X", "point": [0.5, 0.5]})
        out.append({"stream": "hy", "step": t, "kind": "CLOSE_STEP"})
    open(f"{work}/{name}", "w").write("".join(json.dumps(o) + "\n" for o in out))
json.dump({"streams": [{"match": "hy", "synthesizer": "hypercube",
                        "config": {"epsilon": 1, "points_per_step": 30, "max_depth": 8}}]},
          open(f"{work}/cfg.json", "w"))
PY
for k in 1 2 3 4 5; do
    key=$(printf '%064x' "$k")
    for d in h1 h2; do
        "$BIN" replay --config "$WORK/cfg.json" --input "$WORK/$d.jsonl" --out "$WORK/$d.$k" --key-hex "$key" > /dev/null
    done
    diffs=$(python3 - "$WORK/h1.$k/releases.jsonl" "$WORK/h2.$k/releases.jsonl" <<'PY'
import json, sys
def counts(p):
    return [o["record_count"] for o in map(json.loads, open(p)) if o["type"] == "manifest"]
a, b = counts(sys.argv[1]), counts(sys.argv[2])
print(" ".join(str(y - x) for x, y in zip(a, b)))
PY
)
    [ "$diffs" = "0 1 1" ] || fail "hypercube key $k: record counts with and without one point differ by '$diffs', not '0 1 1'"
done
echo "hypercube: one point more is one record more at its step and after, under every key (presence is published)"

# --- the README says so -------------------------------------------------------------------------
readme=$SRC/README.md
privacy=$(awk '/^## Privacy semantics in plain words/{on=1; next} /^## /{on=0} on' "$readme" | tr '\n' ' ' | tr -s ' ')
[ -n "$privacy" ] || fail "README has no privacy section"
if grep -qi "number of points per step is fixed" <<<"$privacy"; then
    fail "README claims the number of points per step is fixed (nothing enforces it; hypercube publishes it)"
fi
grep -qi "presence is not protected" <<<"$privacy" || fail "README's hypercube entry does not say presence is not protected"
grep -q "2ε" <<<"$privacy" || fail "README does not say a row's or point's insert + delete costs 2ε"
grep -qF 'max_rows_per_user: 2' <<<"$privacy" || fail "README does not point to max_rows_per_user: 2"
grep -qF 'sensitivity: 2' <<<"$privacy" || fail "README does not point to spatial's sensitivity: 2"
[ "$status" = 0 ] && echo "README privacy section: presence (hypercube) and lifetimes (marginal, spatial) stated"
exit $status
