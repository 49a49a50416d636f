"""inputs.py — the inputs of bench/release_timing: for each scenario, two
variants A and B of the same public shape (the same configuration, the same
number of steps, the same number and kinds of updates per step, the same
entities) that differ only in the data, in the ways that could change a
close's work:

  window      n people, categories 2, k 3: A every person keeps one value
              (nothing changes), B every value is redrawn each step
  cumulative  n people: A every bit 0, B every bit random
  marginal    n row inserts a step (4 attributes): A every row the same,
              B every row random
  hypercube   n points a step in [0,1]^2: A all in one cell of side 2^-12,
              B uniform
  adaptive    n users, 8 categories, a skewed histogram: A nobody moves, B
              everybody moves one category on each step (the histogram shifts);
              whether a step releases is public: compare like with like

make(scenario, variant, n, steps, seed) -> (route, [[update JSON line, ...] per step])
without the CLOSE_STEP markers (the driver sends each step's marker by itself)."""
import os
import json
import random

STREAM = "rt"

SCENARIOS = ("window", "cumulative", "marginal", "hypercube", "adaptive")


def _line(step, kind, entity, **payload):
    o = {"stream": STREAM, "step": step, "kind": kind, "entity": entity}
    o.update(payload)
    return json.dumps(o, separators=(",", ":"))


def marker(step):
    return json.dumps({"stream": STREAM, "step": step, "kind": "CLOSE_STEP"}, separators=(",", ":"))


def make(scenario, variant, n, steps, seed):
    # hypercube also takes "S<k>": points uniform in one box of side 2^-k
    # (A is S12, B is S0), for how close work scales with the occupied cells
    assert variant in ("A", "B") or (scenario == "hypercube" and variant[0] == "S")
    rng = random.Random(f"{scenario}/{variant}/{seed}")
    people = [f"p{i:07d}" for i in range(n)]
    out = []
    if scenario == "window":
        route = {"match": STREAM, "synthesizer": "window",
                 "config": {"horizon": steps, "k": 3, "categories": 2, "rho": 1}}
        first = {p: rng.randrange(2) for p in people}
        for t in range(1, steps + 1):
            out.append([_line(t, "REPORT", p, value=first[p] if variant == "A" or t == 1 else rng.randrange(2))
                        for p in people])
    elif scenario == "cumulative":
        route = {"match": STREAM, "synthesizer": "cumulative", "config": {"horizon": steps, "rho": 1}}
        for t in range(1, steps + 1):
            out.append([_line(t, "REPORT", p, value=0 if variant == "A" else rng.randrange(2)) for p in people])
    elif scenario == "marginal":
        attrs = [{"name": a, "categories": [str(c) for c in range(k)]} for a, k in zip("abcd", (2, 3, 4, 5))]
        route = {"match": STREAM, "synthesizer": "marginal",
                 "config": {"attributes": attrs, "horizon": steps, "epsilon": 1,
                            # RESULTS' timings are Alg. 3's: named since the default became forest (2026-11-28)
                            "method": "select_measure_fit"}}
        for t in range(1, steps + 1):
            rows = []
            for i, p in enumerate(people):
                row = [1, 2, 3, 4] if variant == "A" else [rng.randrange(k) for k in (2, 3, 4, 5)]
                rows.append(_line(t, "INSERT", f"{p}s{t}", row=row))
            out.append(rows)
    elif scenario == "hypercube":
        # RT_HYPERCUBE_VARIANT picks the rule (default: the synthesizer's default, "dense")
        cfg = {"epsilon": 1, "points_per_step": n, "max_depth": 24}
        if os.environ.get("RT_HYPERCUBE_VARIANT"):
            cfg["variant"] = os.environ["RT_HYPERCUBE_VARIANT"]
        route = {"match": STREAM, "synthesizer": "hypercube", "config": cfg}
        side = 2.0 ** -({"A": 12, "B": 0}[variant] if variant in ("A", "B") else int(variant[1:]))
        lo = (0.3, 0.6) if side < 0.5 else (0.0, 0.0)
        for t in range(1, steps + 1):
            pts = []
            for p in people:
                pt = [lo[0] + rng.random() * side, lo[1] + rng.random() * side]
                pts.append(_line(t, "REPORT", f"{p}s{t}", point=pt))
            out.append(pts)
    elif scenario == "adaptive":
        route = {"match": STREAM, "synthesizer": "adaptive",
                 "config": {"categories": 8, "epsilon": 1, "horizon": steps, "n_min": 20, "max_releases": steps}}
        # a skewed histogram (category c with weight 2^-c); B shifts every
        # user one category on each step, so the histogram moves
        first = {p: min(int(rng.expovariate(0.7)), 7) for p in people}
        for t in range(1, steps + 1):
            out.append([_line(t, "REPORT", p, value=first[p] if variant == "A" else (first[p] + t - 1) % 8)
                        for p in people])
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    return route, out
