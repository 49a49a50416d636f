#!/usr/bin/env bash
# check_config.sh — `dpstream check-config`: a good configuration with all
# six synthesizers (window, cumulative with budget_group, marginal,
# spatial, adaptive user-level and w-event, hypercube) is valid and its
# plan is printed (text and --json, the JSON parsed by Python), with the
# figures the maths gives; the plan's per-step spends are what a replay's
# budget events then publish, step by step; configurations that run and
# replay refuse are refused with the same exit code (2) and the same
# message naming the JSON path — a malformed file, a bad value, a plan
# refused for privacy (cumulative add/remove neighbours would publish n
# exactly) and a budget the exact samplers cannot honour; a missing file
# is exit 3.  marginal's method "independent" plans d counters of ε/d a
# step.  A stream under unsafe_paper_variant (adaptive's DSAT, spatial's
# published PrivTree input) is valid but gets a WARNING line on stderr, and
# its plan says dp 0 (the good config's say dp 1); spatial's old
# `"variant": "paper"` is refused with a message naming the new switch.
#
# No configuration can overspend: every synthesizer derives its per-step
# spends from the declared total and its accountant checks the plan
# (test_synth_plan checks the spends add up to it), so the refusals a
# configuration can meet are the privacy and range checks tested here.
# Usage: bash check_config.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: check_config.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff

cat > "$WORK/good.json" <<'EOF'
{"topics": {"prefix": "cc"},
 "delta": 1e-6,
 "streams": [
   {"match": "panel-a", "synthesizer": "window",
    "config": {"horizon": 12, "k": 3, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "max_streams": 4, "budget_group": true,
    "config": {"horizon": 8, "rho": 1.0, "counter": "honaker"}},
   {"prefix": "mar/", "synthesizer": "marginal",
    "config": {"attributes": [{"name": "a", "categories": ["0", "1", "2"]}, {"name": "b", "categories": ["0", "1"]},
                              {"name": "c", "categories": ["0", "1", "2", "3"]}],
               "horizon": 8, "epsilon": 2, "selections_per_step": 2, "counter": "tree",
               "method": "select_measure_fit"}},
   {"prefix": "spa/", "synthesizer": "spatial",
    "config": {"box": [[0, 10], [0, 10]], "epsilon": 1, "horizon": 8, "init_steps": 2, "max_depth": 10,
               "counter": {"kind": "block", "block": 3}}},
   {"prefix": "ada/", "synthesizer": "adaptive",
    "config": {"categories": 3, "epsilon": 1, "horizon": 8, "n_min": 30, "max_releases": 4,
               "decision_fraction": 0.3}},
   {"prefix": "adw/", "synthesizer": "adaptive", "lookahead": 0,
    "config": {"categories": 3, "epsilon": 1, "horizon": 8, "method": "ba", "privacy": "w_event", "w": 3}},
   {"prefix": "hyp/", "synthesizer": "hypercube",
    "config": {"box": [[0, 10], [0, 10]], "epsilon": 2, "points_per_step": 40, "max_depth": 8}}
 ]}
EOF

# --- text ---------------------------------------------------------------------------------
"$BIN" check-config --config "$WORK/good.json" > "$WORK/plan.txt" 2> "$WORK/plan.err" \
    || { cat "$WORK/plan.err" >&2; fail "good config: exit $?"; }
[ ! -s "$WORK/plan.err" ] || fail "good config wrote to stderr: $(cat "$WORK/plan.err")"
grep -q "good.json: valid; 7 stream route(s)" "$WORK/plan.txt" || fail "no validity line"
for s in 'match "panel-a" -> window' 'prefix "cum/" -> cumulative' 'prefix "mar/" -> marginal' \
         'prefix "spa/" -> spatial' 'prefix "ada/" -> adaptive' 'prefix "adw/" -> adaptive' 'prefix "hyp/" -> hypercube'; do
    grep -qF "$s" "$WORK/plan.txt" || fail "text plan lacks '$s'"
done
grep -q "rho 0.5 (zCDP) over 12 steps" "$WORK/plan.txt" || fail "text plan: window budget"
grep -q "steps 3-12: 0.05 each" "$WORK/plan.txt" || fail "text plan: window spends"
grep -q "sigma2 20, n_pad" "$WORK/plan.txt" || fail "text plan: window noise"
grep -q "budget_group: the budget below is each stream's share" "$WORK/plan.txt" || fail "text plan: budget group"
grep -q "reports for a later step are rejected (FUTURE_STEP)" "$WORK/plan.txt" || fail "text plan: lookahead 0"

# --- JSON: the figures the maths gives ---------------------------------------------------------
"$BIN" check-config --config "$WORK/good.json" --json > "$WORK/plan.json" || fail "--json: exit $?"
python3 - "$WORK/plan.json" <<'EOF' || fail "JSON plan"
import json, math, sys
doc = json.load(open(sys.argv[1]))
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print(msg); ok = False
check(doc["valid"] is True and doc["topics"]["state"] == "cc.state" and doc["wire"] == "plain", "header")
st = {s["index"]: s for s in doc["streams"]}
check(len(st) == 7, f"{len(st)} streams")
def spends(s):
    return [(r["first"], r["last"], r["spend"]) for r in s["spends"]]
# window: sigma^2 = (T-k+1)/rho under replace neighbours; nothing before k; rho/(T-k+1) after
w = st[0]
check(w["synthesizer"] == "window" and w["match"] == "panel-a", "window route")
check(w["model"] == "zcdp" and w["budget_total"] == 0.5 and w["horizon"] == 12, "window budget")
check(spends(w) == [(1, 2, 0.0), (3, 12, 0.05)], f"window spends {spends(w)}")
check(w["noise"]["sigma2"] == 20 and w["noise"]["n_pad"] >= 1, f"window noise {w['noise']}")
check(w["accuracy"]["beta"] == 0.05 and w["accuracy"]["max_abs_error"] > 0, "window accuracy")
rho, d = 0.5, 1e-6
check(abs(w["eps_simple"] - (rho + 2 * math.sqrt(rho * math.log(1 / d)))) < 1e-9, "window eps_simple")
check(0 < w["eps_cks"] < w["eps_simple"], "window eps_cks")
# cumulative in a budget group of 4: each stream's rho is 1/4, every step spends, in all exactly 1/4
c = st[1]
check(c["budget_total"] == 0.25 and c["budget_group"] is True and c["max_streams"] == 4, "cumulative share")
per_step = [sp for (a, b, sp) in spends(c) for t in range(a, b + 1)]
check(len(per_step) == 8 and spends(c)[0][0] == 1 and spends(c)[-1][1] == 8, f"cumulative runs {spends(c)}")
check(abs(sum(per_step) - 0.25) < 1e-12, "cumulative spends do not add up to the share")
check(c["mechanism"] == "cumulative/honaker" and c["accuracy"]["max_abs_error"] > 0, "cumulative mechanism")
# marginal: parallel, each step the whole epsilon, K = 2 selections and measurements of eps/4
m = st[2]
check(m["composition"] == "parallel" and spends(m) == [(1, 8, 2.0)], f"marginal spends {spends(m)}")
check(m["spend"]["per_selection"] == 0.5 and m["noise"]["selection_epsilon"] == 0.5, "marginal split")
check(m["delta"] is None and m["eps_simple"] is None and m["eps_cks"] == 2, "marginal pure epsilon")
# spatial: init_steps 2 releases nothing at step 1
sp = st[3]
check(spends(sp) == [(1, 1, 0.0), (2, 8, 1.0)], f"spatial spends {spends(sp)}")
check(sp["spend"]["tree_epsilon"] + sp["spend"]["count_epsilon"] == 1 and sp["accuracy"]["leaf_count_scale"] == 2,
      "spatial split")
check(sp["noise"]["dp"] == 1 and st[4]["noise"]["dp"] == 1, "spatial / adaptive: dp 1")
# adaptive user-level: decisions + C releases = epsilon; no fixed schedule
a = st[4]
check(a["spends"] == [] and a["composition"] == "sequential", "adaptive schedule")
check(abs(a["spend"]["decision_epsilon"] + 4 * a["spend"]["release_epsilon"] - 1) < 1e-12, "adaptive split")
check(abs(a["noise"]["distance_sensitivity"] - 2 / 30) < 1e-15, "adaptive sensitivity")
aw = st[5]
check(aw["composition"] == "w_event" and aw["noise"]["dissimilarity_scale"] == 6 and aw["lookahead"] == 0,
      "adaptive w-event")
# w-event: per-step snapshots by default (one report, one snapshot), an exact ledger per window of 3 * 2^20 units
check("only the reports made in its step" in aw["unit"] and aw["noise"]["release_sensitivity"] == 1 and
      aw["spend"]["budget_units_window"] == 3 * 2 ** 20, f"adaptive w-event unit and ledger: {aw['unit']}")
# hypercube: no horizon, series bounded by epsilon
h = st[6]
check(h["horizon"] is None and h["spend"]["series_sum"] <= 2 and h["noise"]["dims"] == 2, "hypercube")
for s in doc["streams"]:
    check(s["public_inputs"] and s["spend_rule"] and s["mechanism"], f"streams[{s['index']}] incomplete")
sys.exit(0 if ok else 1)
EOF

# --- the plan is what a replay then spends, step by step -----------------------------------------
"$BIN" gen-panel --n 50 --steps 12 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream panel-a --close-steps \
    > "$WORK/in.jsonl"
"$BIN" gen-panel --n 50 --steps 8 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream cum/x --close-steps \
    >> "$WORK/in.jsonl"
"$BIN" replay --config "$WORK/good.json" --input "$WORK/in.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null \
    || fail "replay of the good config"
python3 - "$WORK/plan.json" "$WORK/replay/budget.jsonl" <<'EOF' || fail "replay spends differ from the plan"
import json, sys
plan = {s.get("match") or s.get("prefix"): s for s in json.load(open(sys.argv[1]))["streams"]}
route = {"panel-a": "panel-a", "cum/x": "cum/"}
ok, seen = True, 0
for line in open(sys.argv[2]):
    e = json.loads(line)
    p = plan[route[e["stream"]]]
    run = [r for r in p["spends"] if r["first"] <= e["step"] <= (r["last"] or e["step"])]
    if len(run) != 1 or run[0]["spend"] != e["spent_step"]:
        print(f"{e['stream']} step {e['step']}: spent {e['spent_step']}, plan {run}"); ok = False
    if e["budget_total"] != p["budget_total"] or e["mechanism"] != p["mechanism"]:
        print(f"{e['stream']}: budget/mechanism {e['budget_total']} {e['mechanism']}"); ok = False
    for k, v in p["noise"].items():
        if k in e["noise"] and not k.endswith("_max") and e["noise"][k] != v:
            print(f"{e['stream']} step {e['step']}: noise {k} {e['noise'][k]} vs plan {v}"); ok = False
    seen += 1
if seen != 20:
    print(f"{seen} budget events, expected 20"); ok = False
sys.exit(0 if ok else 1)
EOF

# --- unsafe_paper_variant: valid, but warned about and dp 0 ----------------------------------------
cat > "$WORK/unsafe.json" <<'EOF'
{"streams": [
   {"match": "w", "synthesizer": "window", "config": {"horizon": 4, "k": 2, "rho": 0.5}},
   {"prefix": "ada/", "synthesizer": "adaptive",
    "config": {"categories": 3, "epsilon": 1, "horizon": 8, "n_min": 30, "unsafe_paper_variant": true}},
   {"match": "spa", "synthesizer": "spatial", "config": {"epsilon": 1, "unsafe_paper_variant": true}}
 ]}
EOF
for form in text json; do
    flag=; [ "$form" = json ] && flag=--json
    "$BIN" check-config --config "$WORK/unsafe.json" $flag > "$WORK/u.out" 2> "$WORK/u.err" \
        || fail "unsafe config ($form): exit $?: $(cat "$WORK/u.err")"
    for s in 'WARNING: streams[1] prefix "ada/" (adaptive): unsafe_paper_variant is NOT differentially private' \
             'WARNING: streams[2] match "spa" (spatial): unsafe_paper_variant is NOT differentially private'; do
        grep -qF "$s" "$WORK/u.err" || fail "unsafe config ($form): no '$s' on stderr: $(cat "$WORK/u.err")"
    done
    [ "$(grep -c WARNING "$WORK/u.err")" -eq 2 ] || fail "unsafe config ($form): a warning for the window stream"
done
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert [s["noise"].get("dp") for s in d["streams"]] == [None, 0, 0], d' \
    "$WORK/u.out" || fail "unsafe config: the plans do not say dp 0"
# replay and run say it too, before they read or consume anything: replay on
# stderr as check-config does, run as a warn-level log event (text and JSON)
printf '' > "$WORK/empty.jsonl"
"$BIN" replay --config "$WORK/unsafe.json" --input "$WORK/empty.jsonl" --out "$WORK/ur" --key-hex "$KEY" \
    > /dev/null 2> "$WORK/ur.err" || fail "unsafe config: replay exit $?: $(cat "$WORK/ur.err")"
[ "$(grep -c 'WARNING: streams\[[12]\] .*unsafe_paper_variant is NOT differentially private' "$WORK/ur.err")" -eq 2 ] \
    || fail "unsafe config: replay does not warn for both routes: $(cat "$WORK/ur.err")"
for fmt in text json; do
    # 127.0.0.1:1 refuses connections: the run stops (exit 4) after its start-up checks
    DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 "$BIN" run --config "$WORK/unsafe.json" --key-hex "$KEY" \
        --connect-timeout-ms 1000 --log-format "$fmt" > /dev/null 2> "$WORK/urun.err" || true
    pat='warn: streams\[[12]\] .*unsafe_paper_variant is NOT differentially private'
    [ "$fmt" = json ] && pat='"level":"warn","event":"not_differentially_private","msg":"streams\[[12]\] .*NOT differentially private'
    [ "$(grep -c "$pat" "$WORK/urun.err")" -eq 2 ] || fail "unsafe config: run ($fmt log) does not warn for both routes: $(head -c 2000 "$WORK/urun.err")"
done

# --- refusals: the same code and message as run / replay -----------------------------------------
refused() {   # $1 = what, $2 = config file, $3 = text the message must hold
    local rc=0
    "$BIN" check-config --config "$2" > "$WORK/r.out" 2> "$WORK/r.err" || rc=$?
    [ "$rc" -eq 2 ] || fail "$1: check-config exit $rc, want 2"
    grep -qF -- "$3" "$WORK/r.err" || fail "$1: message does not name '$3': $(cat "$WORK/r.err")"
    [ ! -s "$WORK/r.out" ] || fail "$1: printed a plan for an invalid config"
    local rrc=0
    "$BIN" replay --config "$2" --input "$WORK/in.jsonl" --out "$WORK/rr" --key-hex "$KEY" > /dev/null 2> "$WORK/rr.err" || rrc=$?
    [ "$rrc" -eq "$rc" ] || fail "$1: replay exits $rrc, check-config $rc"
    [ "$(sed 's/^dpstream replay: //' "$WORK/rr.err")" = "$(sed 's/^dpstream check-config: //' "$WORK/r.err")" ] \
        || fail "$1: check-config and replay say different things: $(cat "$WORK/r.err") / $(cat "$WORK/rr.err")"
    local jrc=0
    "$BIN" check-config --config "$2" --json > "$WORK/r.json" 2> /dev/null || jrc=$?
    [ "$jrc" -eq 2 ] || fail "$1: --json exit $jrc"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["valid"] is False and sys.argv[2] in d["error"], d' \
        "$WORK/r.json" "$3" || fail "$1: --json error document"
}
printf '{"streams": [{"match": "w", "synthesizer": "window", "config": {"horizon": 4, "k": 2, "rho": 0.5}}' \
    > "$WORK/truncated.json"
refused "malformed JSON" "$WORK/truncated.json" "not valid JSON (line 1"
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
good = json.load(open(f"{w}/good.json"))
bad = json.loads(json.dumps(good)); bad["streams"][2]["config"]["selections_per_step"] = 9
json.dump(bad, open(f"{w}/bad_value.json", "w"))
bad = json.loads(json.dumps(good)); del bad["streams"][2]["config"]["method"]
json.dump(bad, open(f"{w}/old_default.json", "w"))
bad = json.loads(json.dumps(good)); bad["streams"][1]["config"] = {"horizon": 8, "rho": 1.0, "neighbors": "add_remove"}
json.dump(bad, open(f"{w}/add_remove.json", "w"))
bad = json.loads(json.dumps(good)); bad["streams"][0]["config"]["rho"] = 1e-30
json.dump(bad, open(f"{w}/tiny_budget.json", "w"))
bad = json.loads(json.dumps(good)); bad["streams"][4]["config"]["colour"] = "red"
json.dump(bad, open(f"{w}/unknown_key.json", "w"))
bad = json.loads(json.dumps(good)); bad["streams"][3]["config"]["variant"] = "paper"
json.dump(bad, open(f"{w}/variant_paper.json", "w"))
EOF
refused "a value out of range" "$WORK/bad_value.json" "streams[2].config: marginal: selections_per_step"
# the default method is forest (issue 39 item 4): a key of Alg. 3's without "method" was written for the old default
refused "a key of the old default (Alg. 3) without method" "$WORK/old_default.json" \
    'streams[2].config: marginal: selections_per_step is a key of methods "select_measure_fit" and "mwem" and the configuration names no method: the default method changed to "forest"'
refused "a plan refused for privacy" "$WORK/add_remove.json" 'streams[1].config: cumulative: neighbors "add_remove" is refused'
refused "a budget the samplers cannot honour" "$WORK/tiny_budget.json" "streams[0].config: window: rho = 1e-30"
refused "an unknown key" "$WORK/unknown_key.json" "streams[4].config"
refused "spatial's old variant paper" "$WORK/variant_paper.json" \
    'streams[3].config: spatial: "variant": "paper" is now written "unsafe_paper_variant": true'
rc=0; "$BIN" check-config --config "$WORK/none.json" > /dev/null 2> "$WORK/n.err" || rc=$?
[ "$rc" -eq 3 ] || fail "missing config file: exit $rc, want 3"
rc=0; "$BIN" check-config > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "no --config: exit $rc, want 2"

# --- marginal's method "independent" (issue 39): d counters of eps/d a step; an attribute in no workload refused
cat > "$WORK/indep.json" <<'EOF'
{"streams": [{"match": "ind", "synthesizer": "marginal",
  "config": {"attributes": [{"name": "a", "categories": ["0", "1", "2"]}, {"name": "b", "categories": ["0", "1"]},
                            {"name": "c", "categories": ["0", "1", "2", "3"]}, {"name": "e", "categories": ["0", "1"]}],
             "horizon": 5, "epsilon": 2, "method": "independent", "counter": "tree"}}]}
EOF
"$BIN" check-config --config "$WORK/indep.json" > "$WORK/indep.txt" || fail "independent: exit $?"
grep -q "marginal/counters/discrete_laplace" "$WORK/indep.txt" || fail "independent: text plan names no counters mechanism"
# --- and method "forest" (issue 39): the plan names the counters + exponential mechanism and its keys; epoch 0
# keeps the d 1-ways at (1 - s)·eps/d; the forest keys are refused without the method
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
cfg = json.load(open(f"{w}/indep.json"))
c = cfg["streams"][0]["config"]
c["method"] = "forest"; c["forest_edges"] = 2; c["forest_select_share"] = 0.2
json.dump(cfg, open(f"{w}/forest.json", "w"))
c["method"] = "independent"
json.dump(cfg, open(f"{w}/forest_keys_indep.json", "w"))
EOF
for p in indep forest; do
    "$BIN" check-config --config "$WORK/$p.json" --json > "$WORK/${p}_plan.json" || fail "$p --json: exit $?"
done
python3 - "$WORK/indep_plan.json" "$WORK/forest_plan.json" <<'EOF' || fail "independent / forest JSON plans"
import json, sys
for path, mech in zip(sys.argv[1:], ("marginal/counters/discrete_laplace", "marginal/counters+exponential/discrete_laplace")):
    m = json.load(open(path))["streams"][0]
    spends = [(r["first"], r["last"], r["spend"]) for r in m["spends"]]
    assert m["mechanism"] == mech, m["mechanism"]
    assert m["composition"] == "parallel" and spends == [(1, 5, 2.0)], spends
    sp, noise = m["spend"], m["noise"]
    if "forest" not in path:
        assert sp["attributes"] == 4 and sp["per_attribute"] == 0.5, sp
        assert "selection_epsilon" not in noise and noise["measurement_scale"] == 2.0, noise
        assert "1-way" in m["spend_rule"], m["spend_rule"]
        continue
    assert sp["forest_edges"] == 2 and sp["forest_pair_cells"] == 100 and sp["forest_select_share"] == 0.2, sp
    assert abs(sp["per_attribute"] - 0.8 * 2 / 4) < 1e-6, sp
    assert abs(noise["selection_epsilon"] - 0.2 * 2 / 2) < 1e-5, noise
    assert "edge selection" in m["spend_rule"], m["spend_rule"]
EOF
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
cfg = json.load(open(f"{w}/indep.json"))
cfg["streams"][0]["config"]["workloads"] = [["a", "b"], ["b", "c"]]
json.dump(cfg, open(f"{w}/indep_uncovered.json", "w"))
EOF
refused "independent with an attribute in no workload" "$WORK/indep_uncovered.json" \
    'streams[0].config: marginal: method "independent" reads attribute "e"'

refused "forest keys without method forest" "$WORK/forest_keys_indep.json" \
    'streams[0].config: marginal: forest_edges is a key of method "forest" only'

# --- marginal's estimate "all_measurements" (issue 39 item 1): post-processing, so the plan is Alg. 3's; refused
# with a method that keeps no measurements, and drift_rows_per_step refused without it
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
cfg = json.load(open(f"{w}/indep.json"))
c = cfg["streams"][0]["config"]
c["method"] = "select_measure_fit"
json.dump(cfg, open(f"{w}/est_sel.json", "w"))
c["estimate"] = "all_measurements"; c["drift_rows_per_step"] = 50
json.dump(cfg, open(f"{w}/est_all.json", "w"))
c["method"] = "independent"
json.dump(cfg, open(f"{w}/est_indep.json", "w"))
c["method"] = "select_measure_fit"; del c["estimate"]
json.dump(cfg, open(f"{w}/est_drift_alone.json", "w"))
c["estimate"] = "every"
json.dump(cfg, open(f"{w}/est_unknown.json", "w"))
EOF
"$BIN" check-config --config "$WORK/est_sel.json" --json > "$WORK/est_sel_plan.json" || fail "estimate selected: exit $?"
"$BIN" check-config --config "$WORK/est_all.json" --json > "$WORK/est_all_plan.json" || fail "estimate all: exit $?"
python3 - "$WORK" <<'EOF' || fail "estimate all_measurements changes the plan"
import json, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/{n}.json"))["streams"][0] for n in ("est_sel_plan", "est_all_plan"))
for k in ("spends", "spend", "noise", "mechanism", "composition", "budget_total"):
    assert a.get(k) == b.get(k), (k, a.get(k), b.get(k))
EOF
refused "estimate all_measurements with method independent" "$WORK/est_indep.json" \
    'streams[0].config: marginal: estimate "all_measurements" refits select_measure_fit'
refused "drift_rows_per_step without estimate all_measurements" "$WORK/est_drift_alone.json" \
    'streams[0].config: marginal: drift_rows_per_step bounds'
refused "an unknown estimate" "$WORK/est_unknown.json" 'streams[0].config: marginal: estimate'
echo "check_config: plans as the maths and the replay say; refusals as run/replay"
