#!/usr/bin/env python3
"""census.py — a census-like stream with insert/delete churn in periods (seed
003 §7.1's setting) from the real Adult rows, as true histograms for
bench_accuracy_adaptive --truth-in (which turns them into INSERT/DELETE
updates) and for streamdp-benchmark's RunOne (which reads them directly).

  python3 bench/accuracy_adaptive/census.py --adult DIR --out FILE [--steps 200] [--start 10000]

DIR: connectors/recipes/adult/make_updates.py --attributes age,occupation,sex output.
Bins: occupation (15) × sex (2) = 30, less those empty at every step.  Step 1 holds `start` rows drawn at
random (seed 7, public); every later step deletes a share of the present
rows and inserts as many from the rest, the newcomers taken in increasing
age (so the population drifts older): 5 % in busy periods, 0.5 % in quiet
ones, alternating every 20 steps.  One line per step: the 30 counts."""
import argparse
import csv
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--adult", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--start", type=int, default=10000)
    a = ap.parse_args()
    rows = []
    with open(f"{a.adult}/adult.csv") as f:
        for r in csv.DictReader(f):
            if r["stream"] == "adult/randomized-bs50":
                rows.append((int(r["age"]), int(r["occupation"]) * 2 + int(r["sex"])))
    rnd = random.Random(7)
    rnd.shuffle(rows)
    present, pool = rows[:a.start], sorted(rows[a.start:])   # the pool in increasing age
    out = []
    for t in range(1, a.steps + 1):
        if t > 1:
            share = 0.05 if (t // 20) % 2 else 0.005
            k = min(int(round(share * len(present))), len(pool))
            for _ in range(k):
                present.pop(rnd.randrange(len(present)))
            present += pool[:k]
            pool = pool[k:]
        h = [0] * 30
        for _, b in present:
            h[b] += 1
        out.append(h)
    # bins that are empty at every step are left out: relative errors divide by a bin's total
    keep = [b for b in range(30) if any(h[b] for h in out)]
    with open(a.out, "w") as f:
        for h in out:
            f.write(",".join(str(h[b]) for b in keep) + "\n")


if __name__ == "__main__":
    main()
