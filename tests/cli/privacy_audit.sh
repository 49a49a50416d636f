#!/usr/bin/env bash
# privacy_audit.sh — an auditor's check that nothing a release publishes,
# and no decision about anybody else's update, depends exactly on one
# person's data (docs/privacy.md §1; issue 12 items 1 and 2).  Neighbouring
# inputs D / D2 are replayed under many keys by privacy_audit.py, which
# flags any field that is constant across keys but differs between D and
# D2, and any difference in the decisions about other people's updates.
#
#   1. window, k = 1, T = 3, 22 people: 20 of them send their step-3 report
#      before the step-2 marker; D2 adds person B's step-2 report.  When a
#      complete roster closed the step, B's report flipped all 20 between
#      accepted and FUTURE_STEP, and the manifest's count of imputed people
#      differed.
#   2. cumulative over 5 steps, 30 people: D2 changes one person's bits and
#      drops one of that person's reports (imputed).
#   3. window under add/remove neighbours: D2 is D without one person.  Its
#      release must reveal n only through the charged noise (n* is the sum of
#      the noisy pattern counts), so nothing may be exact and different.
#   4. marginal: D2 adds one person's row (inserted at step 2, deleted at
#      step 3) to 30 people's inserts and entity-matched deletes.  The row
#      count is the rounded noisy total; no field may be exact and
#      different, and nobody else's delete may change its verdict.
#      4b. the same for method "independent" (1-way counters, product rows).
#      4c. the same for estimate "all_measurements" (the release refitted to
#          every kept measurement, weights from public quantities only).
#      4d. the same for method "forest" (epoch counters, the edges picked at
#          step 4 by exponential mechanisms from epoch 1's rows — steps 2–3,
#          where the neighbour's row is inserted and deleted — tree rows;
#          selection share 0.5, so that ~30 rows a step clear the public
#          rule deciding whether epoch 1 feeds a selection, and horizon 5 so
#          that its horizon rule, 3·2 <= T + 1, lets it: docs/privacy.md §5).
#   5. spatial (safe variant, user-level s = 2): D2 adds one person's point
#      (inserted at step 2, deleted at step 3) to 40 people's points and
#      entity-matched deletes.  The tree's shape, the leaf counts and the
#      points are noisy; nothing may be exact and different, and nobody
#      else's delete may change its verdict.
#   6. adaptive (DSAT, user-level, and BD, w-event): D2 adds one user's whole
#      series of reports to 60 users' drifting reports.  Whether a step
#      releases is the SVT's (or the dissimilarity test's) noisy output, the
#      released counts are noisy; nothing may be exact and different.
#   7. hypercube (d = 2, replacement neighbours): D2 replaces one person's
#      point at step 2 by a far-away one; 30 points a step and a 31st that
#      every step rejects (the step is full).  Every cell's count is noisy,
#      t and the depth are public; nothing may be exact and different, and
#      the rejects must not change.
#   8. marginal, an entity-less DELETE (issue 36): Bob deletes a row without
#      naming an entity at step 3; D2 adds Alice's anonymous insert of that
#      row at step 2.  Matched by value, Bob's delete was used with Alice
#      and NOT_PRESENT without her — Alice's data deciding about Bob; it
#      must be ENTITY_REQUIRED in both.
#   9. spatial (event-level), the same with a point.
# Usage: bash privacy_audit.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: privacy_audit.sh path/to/dpstream}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KEYS=${PRIVACY_AUDIT_KEYS:-24}

python3 - "$WORK" <<'PY'
import json, random, sys
work = sys.argv[1]
def line(stream, step, kind, entity=None, value=None):
    o = {"stream": stream, "step": step, "kind": kind}
    if entity is not None:
        o["entity"] = entity
        o["value"] = value
    return json.dumps(o, separators=(",", ":"))

# 1. window: the early step-3 reports
rng = random.Random(7)
people = [f"p{i:02d}" for i in range(22)]
B = "p21"
val = {(p, t): rng.randrange(2) for p in people for t in (1, 2, 3)}
val[B, 2] = val[B, 1]   # what carry-forward imputes: D and D2 differ only in whether B reported
def window_input(with_b):
    out = [line("w", 1, "REPORT", p, val[p, 1]) for p in people]
    out.append(line("w", 1, "CLOSE_STEP"))
    out += [line("w", 2, "REPORT", p, val[p, 2]) for p in people if p != B]
    if with_b:
        out.append(line("w", 2, "REPORT", B, val[B, 2]))
    early = people[:20]
    out += [line("w", 3, "REPORT", p, val[p, 3]) for p in early]
    out.append(line("w", 2, "CLOSE_STEP"))
    out += [line("w", 3, "REPORT", p, val[p, 3]) for p in people if p not in early]
    out.append(line("w", 3, "CLOSE_STEP"))
    return out
for name, with_b in (("w1.jsonl", False), ("w2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(window_input(with_b)) + "\n")

# 2. cumulative: one person's bits changed and one report missing
people = [f"c{i:02d}" for i in range(30)]
bits = {(p, t): rng.randrange(2) for p in people for t in range(1, 6)}
def cumul_input(neighbour):
    out = []
    for t in range(1, 6):
        for p in people:
            b = bits[p, t]
            if neighbour and p == "c07":
                if t == 3:
                    continue          # missing: imputed by carry-forward
                b = 1 - b
            out.append(line("c", t, "REPORT", p, b))
        out.append(line("c", t, "CLOSE_STEP"))
    return out
for name, nb in (("c1.jsonl", False), ("c2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(cumul_input(nb)) + "\n")

# 3. window, add/remove: one person fewer
people = [f"a{i:02d}" for i in range(40)]
vals = {(p, t): rng.randrange(2) for p in people for t in range(1, 5)}
def ar_input(without):
    out = []
    for t in range(1, 5):
        out += [line("wa", t, "REPORT", p, vals[p, t]) for p in people if p != without]
        out.append(line("wa", t, "CLOSE_STEP"))
    return out
for name, who in (("a1.jsonl", None), ("a2.jsonl", "a13")):
    open(f"{work}/{name}", "w").write("\n".join(ar_input(who)) + "\n")

# 4. marginal: one person's row more (an insert and its delete)
people = [f"m{i:02d}" for i in range(30)]
rows = {(p, t): [rng.randrange(2), rng.randrange(3), rng.randrange(2)] for p in people for t in range(1, 5)}
def row_line(step, kind, entity, row):
    return json.dumps({"stream": "m", "step": step, "kind": kind, "entity": entity, "row": row}, separators=(",", ":"))
def marginal_input(with_x):
    out = []
    for t in range(1, 5):
        out += [row_line(t, "INSERT", p, rows[p, t]) for p in people]
        if t > 1:   # every third person deletes last step's row; p00 also tries a row it never had
            out += [row_line(t, "DELETE", p, rows[p, t - 1]) for p in people[::3]]
            out.append(row_line(t, "DELETE", "m00", [1, 2, 1]))
        if with_x and t == 2:
            out.append(row_line(t, "INSERT", "mX", [1, 2, 1]))
        if with_x and t == 3:
            out.append(row_line(t, "DELETE", "mX", [1, 2, 1]))
        out.append(json.dumps({"stream": "m", "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":")))
    return out
for name, with_x in (("m1.jsonl", False), ("m2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(marginal_input(with_x)) + "\n")
marginal_base = marginal_input(False)   # for case 8 (the globals are reused below)
# 4b. the same neighbours for marginal's method "independent" (stream "mi")
for name in ("m1.jsonl", "m2.jsonl"):
    objs = [json.loads(l) for l in open(f"{work}/{name}").read().splitlines()]
    for o in objs:
        o["stream"] = "mi"
    open(f"{work}/i{name}", "w").write("\n".join(json.dumps(o, separators=(",", ":")) for o in objs) + "\n")
# 4d. the same neighbours for marginal's method "forest" (stream "mf")
for name in ("m1.jsonl", "m2.jsonl"):
    objs = [json.loads(l) for l in open(f"{work}/{name}").read().splitlines()]
    for o in objs:
        o["stream"] = "mf"
    open(f"{work}/f{name}", "w").write("\n".join(json.dumps(o, separators=(",", ":")) for o in objs) + "\n")
# 4c. the same neighbours for marginal's estimate "all_measurements" (stream "me")
for name in ("m1.jsonl", "m2.jsonl"):
    objs = [json.loads(l) for l in open(f"{work}/{name}").read().splitlines()]
    for o in objs:
        o["stream"] = "me"
    open(f"{work}/e{name}", "w").write("\n".join(json.dumps(o, separators=(",", ":")) for o in objs) + "\n")

# 5. spatial: one person's point more (an insert and its delete)
people = [f"s{i:02d}" for i in range(40)]
pts = {(p, t): [round(rng.random(), 4), round(rng.random() ** 2, 4)] for p in people for t in range(1, 5)}
def pt_line(step, kind, entity, pt, stream="sp"):
    return json.dumps({"stream": stream, "step": step, "kind": kind, "entity": entity, "point": pt},
                      separators=(",", ":"))
def spatial_input(with_x, stream="sp"):
    out = []
    for t in range(1, 5):
        out += [pt_line(t, "INSERT", p, pts[p, t], stream) for p in people[: 20 + 5 * t]]
        if t > 1:   # every fourth person deletes last step's point; s00 also tries a point it never had
            out += [pt_line(t, "DELETE", p, pts[p, t - 1], stream) for p in people[: 20 + 5 * (t - 1)][::4]]
            out.append(pt_line(t, "DELETE", "s00", [0.5, 0.5], stream))
        if with_x and t == 2:
            out.append(pt_line(t, "INSERT", "sX", [0.9, 0.1], stream))
        if with_x and t == 3:
            out.append(pt_line(t, "DELETE", "sX", [0.9, 0.1], stream))
        out.append(json.dumps({"stream": stream, "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":")))
    return out
for name, with_x in (("s1.jsonl", False), ("s2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(spatial_input(with_x)) + "\n")
spatial_base = spatial_input(False, "spe")   # for case 9, on an event-level stream

# 6. adaptive: one user's whole series more
people = [f"d{i:02d}" for i in range(60)]
def adaptive_input(with_x):
    out = []
    for t in range(1, 9):
        for stream in ("ad", "adw"):
            who = people + (["dX"] if with_x else [])
            for p in who:
                v = 3 if p == "dX" else (int(p[1:]) * 7 + (t // 3) * (int(p[1:]) % 3)) % 4
                out.append(json.dumps({"stream": stream, "step": t, "kind": "REPORT", "entity": p, "value": v},
                                      separators=(",", ":")))
            out.append(json.dumps({"stream": stream, "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":")))
    return out
for name, with_x in (("d1.jsonl", False), ("d2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(adaptive_input(with_x)) + "\n")

# 7. hypercube: one person's point replaced
hpts = {(i, t): [round(rng.random() ** 2, 4), round(rng.random(), 4)] for i in range(31) for t in range(1, 7)}
def hypercube_input(with_x):
    out = []
    for t in range(1, 7):
        for i in range(31):   # the 31st is one too many: rejected in both
            e, p = f"h{i:02d}", hpts[i, t]
            if i == 5 and t == 2:
                e, p = "hX", ([0.95, 0.9] if with_x else [0.05, 0.1])
            out.append(json.dumps({"stream": "hy", "step": t, "kind": "REPORT", "entity": e, "point": p},
                                  separators=(",", ":")))
        out.append(json.dumps({"stream": "hy", "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":")))
    return out
for name, with_x in (("h1.jsonl", False), ("h2.jsonl", True)):
    open(f"{work}/{name}", "w").write("\n".join(hypercube_input(with_x)) + "\n")

# 8, 9. an entity-less DELETE: Bob's (step 3) of the value Alice inserts
# anonymously at step 2 in D2 only
def with_lines(lines, stream, extra):
    """lines with extra[t] inserted before stream's CLOSE_STEP of step t."""
    out = []
    for l in lines:
        o = json.loads(l)
        if o["stream"] == stream and o["kind"] == "CLOSE_STEP":
            out += extra.get(o["step"], [])
        out.append(l)
    return out
def anon(stream, step, kind, field, value):
    return json.dumps({"stream": stream, "step": step, "kind": kind, field: value}, separators=(",", ":"))
for prefix, stream, field, value, base in (("me", "m", "row", [0, 2, 1], marginal_base),
                                           ("se", "spe", "point", [0.3, 0.6], spatial_base)):
    bob, alice = anon(stream, 3, "DELETE", field, value), anon(stream, 2, "INSERT", field, value)
    for name, extra in ((f"{prefix}1.jsonl", {3: [bob]}), (f"{prefix}2.jsonl", {2: [alice], 3: [bob]})):
        open(f"{work}/{name}", "w").write("\n".join(with_lines(base, stream, extra)) + "\n")
PY

cat > "$WORK/config.json" <<'JSON'
{"streams": [
  {"match": "w", "synthesizer": "window", "config": {"horizon": 3, "k": 1, "categories": 2, "rho": 1}},
  {"match": "c", "synthesizer": "cumulative", "config": {"horizon": 5, "rho": 1}},
  {"match": "wa", "synthesizer": "window", "config": {"horizon": 4, "k": 2, "rho": 1, "neighbors": "add_remove"}},
  {"match": "m", "synthesizer": "marginal", "config": {"attributes": [{"name": "a", "categories": ["0", "1"]},
     {"name": "b", "categories": ["0", "1", "2"]}, {"name": "c", "categories": ["0", "1"]}],
     "horizon": 4, "epsilon": 1, "selections_per_step": 2, "method": "select_measure_fit"}},
  {"match": "mi", "synthesizer": "marginal", "config": {"attributes": [{"name": "a", "categories": ["0", "1"]},
     {"name": "b", "categories": ["0", "1", "2"]}, {"name": "c", "categories": ["0", "1"]}],
     "horizon": 4, "epsilon": 1, "method": "independent"}},
  {"match": "mf", "synthesizer": "marginal", "config": {"attributes": [{"name": "a", "categories": ["0", "1"]},
     {"name": "b", "categories": ["0", "1", "2"]}, {"name": "c", "categories": ["0", "1"]}],
     "horizon": 5, "epsilon": 1, "method": "forest", "forest_edges": 2,
     "forest_select_share": 0.5}},
  {"match": "me", "synthesizer": "marginal", "config": {"attributes": [{"name": "a", "categories": ["0", "1"]},
     {"name": "b", "categories": ["0", "1", "2"]}, {"name": "c", "categories": ["0", "1"]}],
     "horizon": 4, "epsilon": 1, "selections_per_step": 2, "estimate": "all_measurements",
     "method": "select_measure_fit"}},
  {"match": "sp", "synthesizer": "spatial", "config": {"epsilon": 1, "sensitivity": 2, "max_depth": 8}},
  {"match": "spe", "synthesizer": "spatial", "config": {"epsilon": 1, "max_depth": 8}},
  {"match": "ad", "synthesizer": "adaptive", "config": {"categories": 4, "epsilon": 1, "horizon": 8, "n_min": 20,
     "max_releases": 3, "decision_fraction": 0.3}},
  {"match": "adw", "synthesizer": "adaptive", "config": {"categories": 4, "epsilon": 1, "horizon": 8, "method": "bd",
     "privacy": "w_event", "w": 3}},
  {"match": "hy", "synthesizer": "hypercube", "config": {"epsilon": 1, "points_per_step": 30, "max_depth": 8}}
]}
JSON

status=0
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/w1.jsonl" "$WORK/w2.jsonl" p21 "$KEYS" "$WORK" \
    || { echo "FAIL: window neighbours (early reports, one person's step-2 report)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/c1.jsonl" "$WORK/c2.jsonl" c07 "$KEYS" "$WORK" \
    || { echo "FAIL: cumulative neighbours (one person's bits changed, one report missing)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/a1.jsonl" "$WORK/a2.jsonl" a13 "$KEYS" "$WORK" \
    || { echo "FAIL: window under add/remove neighbours (one person removed)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/m1.jsonl" "$WORK/m2.jsonl" mX "$KEYS" "$WORK" \
    || { echo "FAIL: marginal neighbours (one person's row inserted and deleted)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/im1.jsonl" "$WORK/im2.jsonl" mX "$KEYS" "$WORK" \
    || { echo "FAIL: marginal independent neighbours (one person's row inserted and deleted)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/fm1.jsonl" "$WORK/fm2.jsonl" mX "$KEYS" "$WORK" \
    || { echo "FAIL: marginal forest neighbours (one person's row inserted and deleted)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/em1.jsonl" "$WORK/em2.jsonl" mX "$KEYS" "$WORK" \
    || { echo "FAIL: marginal all_measurements neighbours (one person's row inserted and deleted)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/s1.jsonl" "$WORK/s2.jsonl" sX "$KEYS" "$WORK" \
    || { echo "FAIL: spatial neighbours (one person's point inserted and deleted)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/d1.jsonl" "$WORK/d2.jsonl" dX "$KEYS" "$WORK" \
    || { echo "FAIL: adaptive neighbours (one user's series added)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/h1.jsonl" "$WORK/h2.jsonl" hX "$KEYS" "$WORK" \
    || { echo "FAIL: hypercube neighbours (one person's point replaced)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/me1.jsonl" "$WORK/me2.jsonl" mA "$KEYS" "$WORK" \
    || { echo "FAIL: marginal entity-less DELETE (another person's anonymous insert of the row)" >&2; status=1; }
python3 "$HERE/privacy_audit.py" "$BIN" "$WORK/config.json" "$WORK/se1.jsonl" "$WORK/se2.jsonl" sA "$KEYS" "$WORK" \
    || { echo "FAIL: spatial entity-less DELETE (another person's anonymous insert of the point)" >&2; status=1; }
exit $status
