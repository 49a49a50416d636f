#!/usr/bin/env python3
"""run.py — our pgm fit side by side with Private-PGM (PyPI mbi==1.0.0) on the
same noisy 2-way measurements of the real Adult rows (issue 14).

  python3 bench/pgm_vs_mbi/run.py --data ADULT_DIR [--bin build/bench_pgm_vs_mbi] [--epsilon 1]
                                  [--seeds 3] [--iters 1000] [--ipf 50]

ADULT_DIR is connectors/recipes/adult/make_updates.py's output.  mbi runs in its own
venv, ~/.cache/dpstream/mbienv, with docs/peers.md §3's pins (never in the repo):
  python3 -m venv ~/.cache/dpstream/mbienv && ~/.cache/dpstream/mbienv/bin/pip install mbi==1.0.0 \\
      jax==0.5.3 jaxlib==0.5.3 numpy==2.2.6 pandas==2.2.3 chex==0.1.89 optax==0.2.4 scipy==1.15.3 networkx==3.4.2
Measurements: 8 attributes (3.6 M cells), 10 pairs (a spanning tree plus two
cycles: both fits' exact junction trees are small), Laplace noise of scale
10/ε per cell, numpy seeds 0.. (the same noisy vectors go to both fits).
Scores: AvgWE = mean over all 28 pairs of (mean |fit − true| per cell)/N,
and the same over the 10 measured pairs; wall time of each fit."""
import argparse, csv, itertools, json, os, subprocess, sys, tempfile, time

ATTRS = ["workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex", "income>50K"]
PAIRS = [(0, 1), (1, 2), (2, 4), (4, 6), (3, 1), (5, 4), (7, 1), (3, 0), (7, 3), (6, 7)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../../build/bench_pgm_vs_mbi"))
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--ipf", type=int, default=50)
    ap.add_argument("--mbi-python", default=os.path.expanduser("~/.cache/dpstream/mbienv/bin/python"))
    a = ap.parse_args()
    attrs_all = json.load(open(os.path.join(a.data, "attributes.json")))
    names = [x["name"] for x in attrs_all]
    idx = [names.index(n) for n in ATTRS]
    sizes = [len(attrs_all[i]["categories"]) for i in idx]
    rows = []
    with open(os.path.join(a.data, "adult.csv")) as f:
        r = csv.reader(f)
        head = next(r)
        cols = [head.index(n) for n in ATTRS]
        for line in r:
            if line[0] == "adult/randomized-bs50":
                rows.append([int(line[c]) for c in cols])
    n = len(rows)
    pairs = [tuple(sorted(p)) for p in PAIRS]
    work = tempfile.mkdtemp()
    cfg = {"attributes": [{"name": ATTRS[i], "categories": attrs_all[idx[i]]["categories"]} for i in range(8)],
           "workloads": [[ATTRS[i], ATTRS[j]] for i, j in itertools.combinations(range(8), 2)],
           "horizon": 1, "epsilon": 1, "fit": "pgm", "max_model_cells": 1 << 22,
           "method": "select_measure_fit"}   # the pgm fit is Alg. 3's (the default method is forest)
    json.dump(cfg, open(os.path.join(work, "config.json"), "w"))
    driver = os.path.join(work, "mbi_fit.py")
    open(driver, "w").write(MBI_DRIVER)
    print(f"Adult ({n} rows), {len(ATTRS)} attributes (sizes {sizes}), {len(pairs)} measured pairs, "
          f"Laplace scale {len(pairs) / a.epsilon:g}/cell (eps = {a.epsilon}), {a.seeds} seeds")
    print(f"{'seed':>4} {'fit':>6} {'AvgWE all':>10} {'AvgWE meas':>11} {'noisy meas':>11} {'seconds':>9}")
    tot = {"ours": [0, 0, 0], "mbi": [0, 0, 0]}
    for seed in range(a.seeds):
        r = subprocess.run([a.mbi_python, driver, work, str(seed), str(a.epsilon), str(a.iters), json.dumps(sizes),
                            json.dumps(pairs)], input=json.dumps(rows), capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mbi fit failed: {r.stderr[-800:]}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        truth = {tuple(map(int, k.split(","))): v for k, v in res["truth"].items()}
        t0 = time.time()
        o = subprocess.run([a.bin, os.path.join(work, "config.json"), os.path.join(work, f"meas{seed}.txt"), str(n),
                            str(a.ipf)], capture_output=True, text=True)
        if o.returncode != 0:
            sys.exit(f"our fit failed: {o.stderr}")
        ours, secs = {}, None
        for line in o.stdout.splitlines():
            f = line.split()
            if f[0] == "seconds":
                secs = float(f[1])
                continue
            k = int(f[0])
            ours[tuple(int(x) for x in f[1:1 + k])] = [float(x) for x in f[1 + k:]]
        mbi = {tuple(map(int, k.split(","))): v for k, v in res["fit"].items()}
        def we(fit, keys):
            return sum(sum(abs(x - y) for x, y in zip(fit[p], truth[p])) / len(truth[p]) / n for p in keys) / len(keys)
        allp = list(itertools.combinations(range(8), 2))
        noisy = res["noisy_we"]
        for name, fit, s in (("ours", ours, secs), ("mbi", mbi, res["seconds"])):
            w_all, w_meas = we(fit, allp), we(fit, pairs)
            print(f"{seed:>4} {name:>6} {w_all:>10.5f} {w_meas:>11.5f} {noisy:>11.5f} {s:>9.2f}")
            for i, v in enumerate((w_all, w_meas, s)):
                tot[name][i] += v / a.seeds
    o, m = tot["ours"], tot["mbi"]
    print(f"mean: ours AvgWE {o[0]:.5f} (measured {o[1]:.5f}) in {o[2]:.2f} s; mbi {m[0]:.5f} ({m[1]:.5f}) in "
          f"{m[2]:.2f} s; ours/mbi AvgWE {o[0] / m[0]:.3f}, speed-up {m[2] / o[2]:.1f}x")


MBI_DRIVER = r'''
import itertools, json, sys, time
import numpy as np
import pandas as pd
from mbi import Domain, Dataset, LinearMeasurement, estimation
work, seed, eps, iters = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
sizes, pairs = json.loads(sys.argv[5]), [tuple(p) for p in json.loads(sys.argv[6])]
rows = json.loads(sys.stdin.read())
names = [f"a{i}" for i in range(len(sizes))]
dom = Domain(names, sizes)
data = Dataset(pd.DataFrame(rows, columns=names), dom)
rng = np.random.default_rng(seed)
b = len(pairs) / eps
ms, lines, noisy_we = [], [], 0.0
for (i, j) in pairs:
    x = data.project((names[i], names[j])).datavector()
    y = x + rng.laplace(0, b, x.size)
    ms.append(LinearMeasurement(y, (names[i], names[j]), stddev=2 ** 0.5 * b))
    lines.append(" ".join(["2", str(i), str(j)] + [repr(float(v)) for v in y]))
    noisy_we += np.abs(y - x).mean() / len(rows) / len(pairs)
open(f"{work}/meas{seed}.txt", "w").write("\n".join(lines) + "\n")
t0 = time.time()
model = estimation.mirror_descent(dom, ms, known_total=len(rows), iters=iters)
secs = time.time() - t0
fit, truth = {}, {}
for (i, j) in itertools.combinations(range(len(sizes)), 2):
    cl = (names[i], names[j])
    fit[f"{i},{j}"] = [float(v) for v in model.project(cl).datavector()]
    truth[f"{i},{j}"] = [float(v) for v in data.project(cl).datavector()]
print(json.dumps({"fit": fit, "truth": truth, "seconds": secs, "noisy_we": noisy_we}))
'''

if __name__ == "__main__":
    main()
