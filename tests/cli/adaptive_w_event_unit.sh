#!/usr/bin/env bash
# adaptive_w_event_unit.sh — under w-event privacy one report is in one
# snapshot: a user who reports once, at step 1, does not move what
# `adaptive` publishes 19–39 steps later (issue 36 item 1, the audit's own
# case: BD, w = 2, ε = 20, 30 keys).
#
# D: 50 users report every step (40 of them all switch value each step, so
# the histogram moves by 80 in L1 and every method publishes afresh);
# value 3 is nobody's.  D2: D plus user X reporting 3 once, at step 1.
# Read per step: the published count of bin 3 (the last release's, a
# repeat step showing what it repeats), averaged over steps 20–40 and keys.
#
#   step_reports (the w-event default): steps 20–40 see the same data in
#     D and D2; a fresh publication's count.3 is DLap noise around 0 either
#     way.  With ε = 20 BD's publications get at least ε·(1−f)/4 = 2.5
#     (w = 2: half of what the previous step left of 10), a discrete
#     Laplace of scale ≤ 0.4, sd ≤ 0.44; the mean over 30 keys of
#     21-step averages has sd ≤ 0.44/√30 ≈ 0.08, the difference of two
#     ≤ 0.12.  Claim: |mean(D2) − mean(D)| < 0.5 (> 4 sd; one whole count
#     would be 1).
#   standing_values (opt-in): X's value stands in every later snapshot, so
#     the difference is the whole count, ≈ 1.  Claim: > 0.5 — the test can
#     see what it checks for (today's code, which carried every report
#     forward under w-event, fails the first claim by exactly this).
# The same for DSAT under w-event (n_min 40).
# Usage: bash adaptive_w_event_unit.sh path/to/dpstream
set -euo pipefail
BIN=${1:?usage: adaptive_w_event_unit.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KEYS=${AUDIT_KEYS:-30}

python3 - "$BIN" "$WORK" "$KEYS" <<'PY'
import hashlib, json, os, subprocess, sys
binary, work, keys = sys.argv[1], sys.argv[2], int(sys.argv[3])
H = 40

def stream_input(with_x):
    out = []
    for t in range(1, H + 1):
        for u in range(50):
            v = t % 3 if u < 40 else u % 3
            out.append({"stream": "a", "step": t, "kind": "REPORT", "entity": f"u{u}", "value": v})
        if with_x and t == 1:
            out.append({"stream": "a", "step": t, "kind": "REPORT", "entity": "X", "value": 3})
        out.append({"stream": "a", "step": t, "kind": "CLOSE_STEP"})
    path = os.path.join(work, f"in{int(with_x)}.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in out))
    return path

def config(method, snapshot):
    cfg = {"categories": 4, "epsilon": 20, "horizon": H, "method": method, "privacy": "w_event", "w": 2,
           "snapshot": snapshot}
    if method == "dsat":
        cfg.update({"n_min": 40, "decision_fraction": 0.2})
    path = os.path.join(work, f"cfg_{method}_{snapshot}.json")
    with open(path, "w") as f:
        json.dump({"streams": [{"match": "a", "synthesizer": "adaptive", "config": cfg}]}, f)
    return path

def mean_count3(cfg, data):
    total, n, fresh = 0.0, 0, 0
    for k in range(keys):
        key = hashlib.blake2b(f"w-event key {k}".encode(), digest_size=32).hexdigest()
        out = os.path.join(work, "out")
        subprocess.run([binary, "replay", "--config", cfg, "--input", data, "--out", out, "--key-hex", key],
                       check=True, capture_output=True)
        shown = None
        with open(os.path.join(out, "releases.jsonl")) as f:
            for line in f:
                o = json.loads(line)
                if o["type"] != "manifest":
                    continue
                d = o["debias"]
                if d["released"] == 1:
                    shown = d["count.3"]
                    fresh += 2 <= o["step"] < 20
                if 20 <= o["step"] <= H:
                    total += shown
                    n += 1
    assert n == keys * (H - 19), n
    return total / n, fresh

d, d2 = stream_input(False), stream_input(True)
ok = True
for method in ("bd", "dsat"):
    for snapshot, want_moved in (("step_reports", False), ("standing_values", True)):
        cfg = config(method, snapshot)
        (m1, f1), (m2, f2) = mean_count3(cfg, d), mean_count3(cfg, d2)
        diff = m2 - m1
        moved = abs(diff) > 0.5
        verdict = "ok" if moved == want_moved else "FAIL"
        ok &= moved == want_moved
        print(f"{method} {snapshot}: mean count.3 at steps 20-40 {m1:.3f} without X, {m2:.3f} with X "
              f"(difference {diff:+.3f}, {'must exceed' if want_moved else 'must stay within'} 0.5; "
              f"{f1}/{f2} fresh publications at steps 2-19 over {keys} keys) {verdict}")
        if f1 < keys or f2 < keys:
            print(f"  FAIL: the stream did not publish afresh after step 1 under every key")
            ok = False
sys.exit(0 if ok else 1)
PY
