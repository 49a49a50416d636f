#!/usr/bin/env python3
"""run.py — `adaptive` on the moving-objects grid stream (issue 16): DSAT,
DSFT, the fixed-interval sampler, BD and BA over ε and noise keys, and —
when given a compiled streamdp-benchmark (Java; docs/peers.md §2's RunOne) —
its DSAT, BD and BA on the same true histograms, side by side.

  python3 bench/accuracy_adaptive/run.py [--bin build/bench_accuracy_adaptive] [--epsilons 0.5,1,2]
        [--keys 5] [--w 20] [--peer DIR] [--peer-iters 20]

DIR: a streamdp-benchmark checkout with RunOne.java compiled into DIR/build
(javac -sourcepath src -cp lib/colt.jar:lib/commons-math3-3.6.1.jar
src/experiment/RunOne.java -d build).  Their mechanisms are w-event (their
DSAT too, and not DP: docs/peers.md §2); ours DSAT/DSFT are user-level over the
whole horizon (a far stronger guarantee at the same ε), BD/BA w-event.
BD/BA run twice: with Kellaris et al.'s ε/2 for the tests and with the
Java's split (tests w·ε/U), so the side-by-side is like for like."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def ours(a, method, eps, key, extra=()):
    out = subprocess.run([a.bin, "--method", method, "--epsilon", str(eps), "--w", str(a.w), "--key", str(key),
                          *extra], check=True, capture_output=True, text=True).stdout
    m = re.search(r"MAE ([\d.]+) ARE ([\d.]+) range ([\d.]+) releases (\d+) time/step ([\d.]+)", out)
    return [float(m.group(i)) for i in range(1, 6)]


def peer_time_per_step(a, truth, mech, eps, steps):
    """Their time per step: wall time of `iters` runs minus a 1-run process (JVM start, their noise pool),
    over the extra runs' steps (a process-level figure: RunOne prints no timing)."""
    import time
    cp = ":".join(os.path.join(a.peer, p) for p in ("lib/colt.jar", "lib/commons-math3-3.6.1.jar", "build"))
    def wall(iters):
        t0 = time.perf_counter()
        subprocess.run(["java", "-cp", cp, "experiment.RunOne", truth, mech, str(a.w), str(eps), str(iters), "0"],
                       check=True, capture_output=True)
        return time.perf_counter() - t0
    one, many = min(wall(1) for _ in range(3)), min(wall(201) for _ in range(3))
    return max(many - one, 0) / (200 * steps)


def peer(a, truth, mech, eps):
    cp = ":".join(os.path.join(a.peer, p) for p in ("lib/colt.jar", "lib/commons-math3-3.6.1.jar", "build"))
    out = subprocess.run(["java", "-cp", cp, "experiment.RunOne", truth, mech, str(a.w), str(eps),
                          str(a.peer_iters), "0"], check=True, capture_output=True, text=True).stdout
    m = re.search(r"meanMAE=([\d.]+)\s+meanARE=([\d.]+)", out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../../build/bench_accuracy_adaptive"))
    ap.add_argument("--epsilons", default="0.5,1,2")
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--w", type=int, default=20)
    ap.add_argument("--peer", default=None)
    ap.add_argument("--peer-iters", type=int, default=20)
    ap.add_argument("--ws", default="10,20,40,80", help="the w sweep at eps 1 (w-event DSAT, BD, BA)")
    ap.add_argument("--adult", default=None, help="connectors/recipes/adult output (--attributes age,occupation,sex): "
                                                  "also run the census-like churn stream (census.py)")
    a = ap.parse_args()
    U = 256
    java_split = f"{min(a.w / U, 0.5):.6f}"   # the Java's: w·ε/U for the tests, ε/2 when that leaves < ε/2
    truth = os.path.join(tempfile.mkdtemp(), "truth.csv")
    subprocess.run([a.bin, "--truth", truth], check=True)
    print("method eps | MAE | ARE | range-query error | releases | time/step (mean [min-max] over keys)")
    runs = [("dsat", ()), ("dsft", ()), ("fixed", ()), ("bd", ()), ("ba", ()),
            ("bd", ("--test-fraction", java_split)), ("ba", ("--test-fraction", java_split))]
    res = {}
    for eps in [float(e) for e in a.epsilons.split(",")]:
        for method, extra in runs:
            r = [ours(a, method, eps, k, extra) for k in range(1, a.keys + 1)]
            res[method, extra, eps] = r
            label = method + (" (tests w/U)" if extra else "")
            cells = [f"{statistics.mean(x[i] for x in r):.3f} [{min(x[i] for x in r):.3f}-{max(x[i] for x in r):.3f}]"
                     for i in range(3)]
            print(f"{label} {eps:g} | {' | '.join(cells)} | {statistics.mean(x[3] for x in r):.1f} | "
                  f"{statistics.mean(x[4] for x in r) * 1e3:.3f} ms", flush=True)
        if a.peer:
            for mech, ourm in (("DSAT", "dsat"), ("BD", "bd"), ("BA", "ba")):
                mae, are = peer(a, truth, mech, eps)
                extra = ("--test-fraction", java_split) if ourm != "dsat" else ()
                o = res[ourm, extra, eps]
                tps = peer_time_per_step(a, truth, mech, eps, 200) if eps == 1.0 else None
                print(f"  side by side, eps {eps:g}: streamdp-benchmark {mech} (w-event{', NOT DP' if mech == 'DSAT' else ''})"
                      f" MAE {mae:.3f} ARE {are:.4f}" + (f" time/step {tps * 1e3:.4f} ms" if tps is not None else "") +
                      f"  |  ours {ourm}{' (user-level)' if ourm == 'dsat' else ''}"
                      f" MAE {statistics.mean(x[0] for x in o):.3f} ARE {statistics.mean(x[1] for x in o):.4f}"
                      f" time/step {statistics.mean(x[4] for x in o) * 1e3:.3f} ms", flush=True)
    sweep_w(a, truth)
    if a.adult:
        census(a)


def sweep_w(a, truth):
    """ε = 1, w-event: our DSAT (C = max(2, w/10) per window), BD and BA with the Java's test split, and theirs."""
    print("\nvs w at eps 1, w-event (tests w/U for BD, BA) | MAE (ARE), mean over keys | streamdp-benchmark MAE (ARE)")
    for w in [int(x) for x in a.ws.split(",")]:
        C = str(max(2, w // 10))
        split = f"{min(w / 256, 0.5):.6f}"
        line = [f"w {w}"]
        for method, extra in (("dsat", ("--w-event", "1", "--releases", C)), ("bd", ("--test-fraction", split)),
                              ("ba", ("--test-fraction", split))):
            b = argparse.Namespace(**vars(a))
            b.w = w
            r = [ours(b, method, 1.0, k, extra) for k in range(1, a.keys + 1)]
            line.append(f"{method} {statistics.mean(x[0] for x in r):.3f} ({statistics.mean(x[1] for x in r):.3f})")
        if a.peer:
            b = argparse.Namespace(**vars(a))
            b.w = w
            for mech in ("DSAT", "BD", "BA"):
                mae, are = peer(b, truth, mech, 1.0)
                line.append(f"their {mech} {mae:.3f} ({are:.3f})")
        print(" | ".join(line), flush=True)


def census(a):
    """The census-like churn stream (census.py): DSAT, DSFT at three T, fixed, BD, BA at ε = 1, and theirs."""
    truth = os.path.join(tempfile.mkdtemp(), "census.csv")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "census.py"), "--adult", a.adult,
                    "--out", truth], check=True)
    U = len(open(truth).readline().split(","))
    print(f"\ncensus-like churn stream (Adult, {U} bins, 200 steps, INSERT/DELETE), eps 1 | MAE | ARE | range | "
          f"releases")
    split = f"{min(a.w / U, 0.5):.6f}"   # the Java's split: w·ε/U for the tests, ε/2 when that leaves < ε/2
    # The two "release every step" baselines (README's guide): user-level C = 200 releases at ε/200 each,
    # and w-event ε/w per step — the fixed sampler's C = 200 at ε' = ε·200/w draws the same DLap(w/ε).
    every = [("fixed", ("--releases", "200"), 1.0, "every step at eps/200 (user-level)"),
             ("fixed", ("--releases", "200"), 200.0 / a.w, f"every step at eps/w (w-event, w = {a.w})")]
    runs = [("dsat", ()), ("dsat", ("--w-event", "1", "--releases", str(max(2, a.w // 10)))),
            ("dsft", ("--threshold", "0.01")), ("dsft", ("--threshold", "0.025")),
            ("dsft", ("--threshold", "0.1")), ("fixed", ()), ("bd", ("--test-fraction", split)),
            ("ba", ("--test-fraction", split))]
    for method, extra, eps, label in [(m, e, 1.0, None) for m, e in runs] + every:
        r = [ours(a, method, eps, k, ("--truth-in", truth, "--n-min", "5000") + extra) for k in range(1, a.keys + 1)]
        label = label or method + (f" T={extra[1]}" if method == "dsft" else " (w-event)" if extra else "")
        print(f"{label} | " + " | ".join(f"{statistics.mean(x[i] for x in r):.3f}" for i in range(3)) +
              f" | {statistics.mean(x[3] for x in r):.1f}", flush=True)
    if a.peer:
        for mech in ("DSAT", "BD", "BA"):
            mae, are = peer(a, truth, mech, 1.0)
            print(f"  streamdp-benchmark {mech} (w-event w={a.w}): MAE {mae:.3f} ARE {are:.4f}", flush=True)


if __name__ == "__main__":
    main()
