#!/usr/bin/env python3
"""run.py — seed 002's evaluation of `spatial` on one point stream (issue 15):
PHDStream (safe default and unsafe_paper_variant, NOT DP) and the baselines B1–B3 over
counters, ε and noise keys, by the authors' metric, and — when given the
authors' own runs — side by side with their implementation.

  python3 bench/accuracy_spatial/run.py --data DIR [--bin build/bench_accuracy_spatial]
        [--epsilons 0.5,1,2,4] [--keys 5] [--counters simple,block8]
        [--methods phdstream,phdstream-paper,b1,b2,b3] [--authors SUMMARY.csv]

DIR: connectors/recipes/spatial/make_updates.py motion-circles output.  SUMMARY.csv:
the authors' PHDSTREAM runs on the same stream and queries (columns method,
counter,epsilon,seed,steps,mean_rel_err_small,…,last_rel_err_large,wall_s,
per_step_s_mean), produced by their code in its own venv (docs/peers.md §1).
Per (method, counter, ε): rel_err for small/medium/large queries averaged
over the evaluated steps ("mean") and at the last step ("last"), mean and
min–max over keys, and the method's time per step.  rel_err divides by the
true answer (PrivTree's definition); the side-by-side also shows
rel_err_code, which divides by the synthetic answer as the authors' code
does (src/utils/spatial.py), and compares theirs with ours by that one."""
import argparse
import csv
import os
import statistics
import subprocess
import sys


def run_one(a, method, counter, eps, key):
    out = subprocess.run([a.bin, "--data", a.data, "--method", method, "--counter", counter, "--epsilon", str(eps),
                          "--key", str(key)], check=True, capture_output=True, text=True).stdout
    rows = [l.split() for l in out.splitlines() if l.strip()]
    errs = [[float(r[5]), float(r[6]), float(r[7])] for r in rows]
    code = [[float(r[12]), float(r[13]), float(r[14])] for r in rows]
    mean = [statistics.mean(e[i] for e in errs) for i in range(3)]
    mean_code = [statistics.mean(e[i] for e in code) for i in range(3)]
    return (mean, errs[-1], float(rows[-1][11]), int(rows[-1][9]), int(rows[-1][8]), float(rows[-1][10]),
            mean_code, code[-1])


def fmt(vals):
    m = statistics.mean(vals)
    return f"{m:.3f} [{min(vals):.3f}-{max(vals):.3f}]" if len(vals) > 1 else f"{m:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../../build/bench_accuracy_spatial"))
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--counters", default="simple,block8")
    ap.add_argument("--methods", default="phdstream,phdstream-paper,b1,b2,b3")
    ap.add_argument("--authors", default=None)
    a = ap.parse_args()
    eps_list = [float(e) for e in a.epsilons.split(",")]
    results = {}
    print("method counter eps | rel_err mean over evaluated steps S / M / L (mean [min-max] over keys) | "
          "last step S / M / L | time/step s | synthetic/true points at the end")
    for eps in eps_list:
        for method in a.methods.split(","):
            for counter in a.counters.split(",") if method in ("phdstream", "phdstream-paper", "b3") else ["-"]:
                runs = [run_one(a, method, counter if counter != "-" else "simple", eps, k)
                        for k in range(1, a.keys + 1)]
                results[method, counter, eps] = runs
                mean = [fmt([r[0][i] for r in runs]) for i in range(3)]
                last = [fmt([r[1][i] for r in runs]) for i in range(3)]
                t = statistics.mean(r[2] for r in runs)
                tag = " (NOT DP over time)" if method == "b1" else ""
                print(f"{method}{tag} {counter} {eps:g} | {' / '.join(mean)} | {' / '.join(last)} | {t:.4f} | "
                      f"{statistics.mean(r[3] for r in runs):.0f}/{runs[0][4]}", flush=True)
    if a.authors:
        rows = list(csv.DictReader(open(a.authors)))
        print("\nside by side with the authors' PHDSTREAM (their code, their float Laplace and data-range "
              "rescaling; ours: exact noise, the paper variant and the safe default), same stream and queries:")
        print("rel_err_code (their code's metric) | counter eps | authors mean S/M/L [min-max over seeds] | "
              "ours paper variant | ours safe | time/step authors s, ours s, ratio")
        for counter in a.counters.split(","):
            for eps in eps_list:
                theirs = [r for r in rows if r["counter"].replace("_", "") == counter and float(r["epsilon"]) == eps]
                if not theirs or ("phdstream", counter, eps) not in results:
                    continue
                tm = [fmt([float(r[f"mean_rel_err_{s}"]) for r in theirs]) for s in ("small", "medium", "large")]
                op = [fmt([x[6][i] for x in results["phdstream-paper", counter, eps]]) for i in range(3)]
                os_ = [fmt([x[6][i] for x in results["phdstream", counter, eps]]) for i in range(3)]
                t_theirs = statistics.mean(float(r["per_step_s_mean"]) for r in theirs)
                t_ours = statistics.mean(x[2] for x in results["phdstream", counter, eps])
                print(f"{counter} {eps:g} | {' / '.join(tm)} ({len(theirs)} seeds) | {' / '.join(op)} | "
                      f"{' / '.join(os_)} | {t_theirs:.3f}, {t_ours:.4f}, {t_theirs / t_ours:.0f}x")


if __name__ == "__main__":
    main()
