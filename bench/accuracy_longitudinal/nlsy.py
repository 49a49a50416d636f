#!/usr/bin/env python3
"""nlsy.py — `window` and `cumulative` on a named public panel, for README's
"Choosing a synthesizer" (issue 38 item 4), beside the data-independent and
independence baselines.

  python3 bench/accuracy_longitudinal/nlsy.py [--keys 5] [--rho 0.5] [--work /tmp/nlsy_guide]

Data: the NLSY "Males" panel from R's plm (545 young men, 1980-1987, one
step a year), through the project's own recipe (connectors/recipes/nlsy/
make_updates.sh --no-replay, which loads it with `dpstream load`).  Streams:
`nlsy/union` through `window` (k = 2: the four patterns of two consecutive
years) and `nlsy/married` through `cumulative` (tree counters).  ρ = 0.5 is
what pure ε = 1 implies (ε-DP ⇒ ε²/2-zCDP): the guide's "ε = 1" row, stated
as the weaker ρ it is.  Keys 1..K are public test keys (0x01…01 etc.).

Errors (means over steps and keys; n = 545):
  window      mean over steps 2..8 and the 4 patterns of |share − true share|,
              shares from the manifest's debiased counts (count.b − n_pad)
              over their sum (README "Reading the output").
  cumulative  mean over steps 1..8 and c = 1..t of |count.c − true count.c| / n,
              count.c = people whose running count of married years is ≥ c.
Baselines (not private — they use the true data's marginals, so they are
the best any model of their kind can do):
  uniform      shares 1/4 (window); bits i.i.d. 1/2 (cumulative): Bin(t, 1/2);
  independence each year's true rate, years independent: the product of the
               two years' 1-way shares (window); the Poisson-binomial law of
               the running count (cumulative).
A private method that is not below `independence` has learned no more than
the 1-way marginals."""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
RECIPE = os.path.join(ROOT, "connectors/recipes/nlsy")


def truth(csv_path):
    union, married = {}, {}
    for r in csv.DictReader(open(csv_path)):
        step = int(r["year"]) - 1979
        union.setdefault(r["nr"], {})[step] = int(r["union"] == "yes")
        married.setdefault(r["nr"], {})[step] = int(r["married"] == "yes")
    return union, married


def window_truth(union, step):
    n = len(union)
    pat = [0] * 4
    for s in union.values():
        pat[2 * s[step - 1] + s[step]] += 1
    return [p / n for p in pat]


def cumulative_truth(married, step):
    """count.c / n for c = 1..step."""
    n = len(married)
    run = [sum(s[j] for j in range(1, step + 1)) for s in married.values()]
    return [sum(1 for r in run if r >= c) / n for c in range(1, step + 1)]


def poisson_binomial_tail(rates):
    law = [1.0]
    for p in rates:
        law = [(law[k] if k < len(law) else 0) * (1 - p) + (law[k - 1] * p if k else 0) for k in range(len(law) + 1)]
    return [sum(law[c:]) for c in range(1, len(rates) + 1)]


def baselines(union, married, steps):
    n = len(union)
    urate = {t: sum(s[t] for s in union.values()) / n for t in range(1, steps + 1)}
    mrate = {t: sum(s[t] for s in married.values()) / n for t in range(1, steps + 1)}
    w = {"uniform": [], "independence": []}
    for t in range(2, steps + 1):
        true = window_truth(union, t)
        a, b = urate[t - 1], urate[t]
        ind = [(1 - a) * (1 - b), (1 - a) * b, a * (1 - b), a * b]
        w["uniform"] += [abs(0.25 - x) for x in true]
        w["independence"] += [abs(i - x) for i, x in zip(ind, true)]
    c = {"uniform": [], "independence": []}
    for t in range(1, steps + 1):
        true = cumulative_truth(married, t)
        for name, rates in (("uniform", [0.5] * t), ("independence", [mrate[j] for j in range(1, t + 1)])):
            c[name] += [abs(p - x) for p, x in zip(poisson_binomial_tail(rates), true)]
    return {k: statistics.mean(v) for k, v in w.items()}, {k: statistics.mean(v) for k, v in c.items()}


def private_errors(a, union, married, updates, steps):
    cfg = {"streams": [
        {"match": "nlsy/union", "synthesizer": "window",
         "config": {"horizon": steps, "k": 2, "categories": 2, "rho": a.rho}},
        {"match": "nlsy/married", "synthesizer": "cumulative",
         "config": {"horizon": steps, "rho": a.rho, "counter": "tree"}}]}
    cfg_path = os.path.join(a.work, "config.json")
    json.dump(cfg, open(cfg_path, "w"))
    werr, cerr = [], []
    for key in range(1, a.keys + 1):
        out = os.path.join(a.work, f"key{key}")
        subprocess.run([a.bin, "replay", "--config", cfg_path, "--input", updates, "--out", out,
                        "--key-hex", f"{key:02x}" * 32], check=True, capture_output=True)
        for line in open(os.path.join(out, "releases.jsonl")):
            m = json.loads(line)
            if m.get("type") != "manifest":
                continue
            d, t = m["debias"], m["step"]
            if m["stream"] == "nlsy/union" and t >= 2:
                counts = [max(0, d.get(f"count.{b}", 0) - d["n_pad"]) for b in range(4)]
                tot = sum(counts) or 1
                werr += [abs(cb / tot - x) for cb, x in zip(counts, window_truth(union, t))]
            elif m["stream"] == "nlsy/married":
                n = d["population"]
                cerr += [abs(d.get(f"count.{c}", 0) / n - x)
                         for c, x in zip(range(1, t + 1), cumulative_truth(married, t))]
    return statistics.mean(werr), statistics.mean(cerr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=5)
    p.add_argument("--rho", type=float, default=0.5)
    p.add_argument("--bin", default=os.path.join(ROOT, "build/dpstream"))
    p.add_argument("--work", default="/tmp/nlsy_guide")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, "recipe")
    subprocess.run(["bash", os.path.join(RECIPE, "make_updates.sh"), "--out", data, "--no-replay",
                    "--dpstream", a.bin], check=True, capture_output=True)
    union, married = truth(os.path.join(data, "males.csv"))
    steps = 8
    wb, cb = baselines(union, married, steps)
    w, c = private_errors(a, union, married, os.path.join(data, "nlsy.updates.jsonl"), steps)
    print(f"NLSY males (n = {len(union)}, T = {steps}), rho = {a.rho:g}, {a.keys} keys")
    print(f"{'':12} {'private':>9} {'uniform':>9} {'independence':>13}")
    print(f"{'window':12} {w:9.4f} {wb['uniform']:9.4f} {wb['independence']:13.4f}   (mean |pattern share error|, k = 2)")
    print(f"{'cumulative':12} {c:9.4f} {cb['uniform']:9.4f} {cb['independence']:13.4f}   (mean |count.c/n error|)")


if __name__ == "__main__":
    sys.exit(main())
