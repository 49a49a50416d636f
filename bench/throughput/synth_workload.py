#!/usr/bin/env python3
"""synth_workload.py — the update streams bench/throughput/synth_e2e.sh
drives through `dpstream run`, one per synthesizer that takes rows or
points (the panels of `cumulative` and `adaptive` come from `dpstream
gen-panel`).  Every step holds exactly PER_STEP updates and then its
CLOSE_STEP marker, so the copy pipeline (bench/throughput/copy_pipeline.h)
can replay dpstream's transactions step for step.  Deterministic: the same
arguments give the same bytes (random.Random(seed), no clock).

  synth_workload.py marginal  --per-step M --steps T [--seed S]
      INSERTs (anonymous) of rows of the full Adult shape (Private-PGM's
      domain: 14 attributes of sizes 85, 9, 100, 16, 7, 15, 6, 5, 2, 100,
      100, 99, 42, 2), correlated through a latent class of 8 (a generated
      table of Adult's shape: Adult itself has 48 842 rows, not 10^6).
  synth_workload.py marginal-forest --per-step M --steps T [--seed S]
      the same rows, for `marginal` with `method: forest` (stream
      e2e/marginal-forest).
  synth_workload.py spatial   --per-step M --steps T [--seed S]
      INSERTs (entity p<i>) of 2-d points in [0,1]^2 from a mixture of 16
      Gaussian clusters (sd 0.03, clipped into the box).
  synth_workload.py hypercube --per-step M --steps T [--seed S]
      REPORTs of 2-d points from the same mixture.
  synth_workload.py config SYNTH --stream ID --per-step M --steps T
      prints the synthesizer's config object (JSON) for that workload.

Writes JSON lines on stdout, steps 1..T, stream id "e2e/SYNTH".
"""
import argparse
import json
import random
import sys

ADULT_SIZES = [85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2]
ADULT_NAMES = ["age", "workclass", "fnlwgt", "education", "marital-status", "occupation", "relationship", "race",
               "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]


def config(synth, per_step, steps):
    if synth == "cumulative":
        return {"horizon": steps, "rho": 0.005}
    if synth == "adaptive":
        return {"categories": 256, "method": "dsat", "epsilon": 1.0, "horizon": steps, "max_releases": min(10, steps),
                "n_min": 1000}
    if synth in ("marginal", "marginal-forest"):
        attrs = [{"name": n, "categories": [str(i) for i in range(k)]} for n, k in zip(ADULT_NAMES, ADULT_SIZES)]
        method = {"method": "forest"} if synth == "marginal-forest" else {"method": "select_measure_fit", "fit": "pgm"}
        return {"attributes": attrs, "workloads": "all_2way", "horizon": steps, "epsilon": 1.0, **method}
    if synth == "spatial":
        return {"box": [[0, 1], [0, 1]], "epsilon": 1.0, "max_depth": 20, "counter": "simple", "horizon": steps}
    if synth == "hypercube":
        return {"box": [[0, 1], [0, 1]], "epsilon": 1.0, "points_per_step": per_step, "max_depth": 20}
    raise SystemExit(f"synth_workload.py: no config for {synth}")


def clusters(rng):
    return [(rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9)) for _ in range(16)]


def point(rng, cs):
    cx, cy = cs[rng.randrange(len(cs))]
    return [min(max(rng.gauss(cx, 0.03), 0.0), 1.0), min(max(rng.gauss(cy, 0.03), 0.0), 1.0)]


def row(rng):
    z = rng.randrange(8)
    return [(z * k // 8 + rng.randrange(max(1, k // 8))) % k if rng.random() < 0.7 else rng.randrange(k)
            for k in ADULT_SIZES]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("synth")
    ap.add_argument("config_synth", nargs="?")
    ap.add_argument("--per-step", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--stream")
    a = ap.parse_args()
    if a.synth == "config":
        json.dump(config(a.config_synth, a.per_step, a.steps), sys.stdout, separators=(",", ":"))
        print()
        return
    rng = random.Random(a.seed)
    cs = clusters(rng)
    stream = f"e2e/{a.synth}"
    out = sys.stdout
    i = 0
    for t in range(1, a.steps + 1):
        head = f'{{"stream":"{stream}","step":{t},'
        lines = []
        for _ in range(a.per_step):
            i += 1
            if a.synth in ("marginal", "marginal-forest"):
                lines.append(head + '"kind":"INSERT","row":' + json.dumps(row(rng), separators=(",", ":")) + "}")
            elif a.synth == "spatial":
                p = point(rng, cs)
                lines.append(head + f'"kind":"INSERT","entity":"p{i}","point":[{p[0]:.6f},{p[1]:.6f}]}}')
            elif a.synth == "hypercube":
                p = point(rng, cs)
                lines.append(head + f'"kind":"REPORT","point":[{p[0]:.6f},{p[1]:.6f}]}}')
            else:
                raise SystemExit(f"synth_workload.py: unknown workload {a.synth}")
        lines.append(head + '"kind":"CLOSE_STEP"}')
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
