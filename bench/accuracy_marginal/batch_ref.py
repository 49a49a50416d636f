#!/usr/bin/env python3
"""batch_ref.py — batch anchors for `marginal` (issue 39 target 5): Private-PGM's
MST and AIM run once on the true table of the last step of bench_accuracy_marginal's
Adult streams, at the zCDP budget rho that `marginal` spends at each epsilon, scored
with the bench's metric on the same workload.

  # once: the venv of docs/peers.md §3 (mbi 1.0.0 and its pinned stack)
  python3 -m venv ~/.cache/dpstream/mbienv && ~/.cache/dpstream/mbienv/bin/pip install mbi==1.0.0 \\
      jax==0.5.3 jaxlib==0.5.3 numpy==2.2.6 pandas==2.2.3 chex==0.1.89 optax==0.2.4 scipy==1.15.3 networkx==3.4.2
  # once: the data (connectors/recipes/adult/README.md), cached outside the repository
  python3 connectors/recipes/adult/make_updates.py --out ~/.cache/dpstream/adult/full
  # the batch runs: one JSON line per (mechanism, epsilon, seed) appended to --out
  nice -n 10 ~/.cache/dpstream/mbienv/bin/python bench/accuracy_marginal/batch_ref.py run \\
      --data ~/.cache/dpstream/adult/full --out batch.jsonl [--mechanisms mst,aim] [--epsilons 0.5,1,2,4] \\
      [--seeds 0-4] [--aim-max-model-size 80] [--aim-iters 1000] [--aim-rounds 0 (16·d)]
  # `marginal`'s last-step figure, the same metric (today's defaults: K = 4, fit auto, counter simple)
  build/bench_accuracy_marginal --data ~/.cache/dpstream/adult/full --methods select_measure_fit \\
      --selections 4 --last 1 --streams adult/ordered-bs200 --epsilons 1 --keys 5 > marginal.log
  # the table: per stream and epsilon, marginal (if logged) beside MST and AIM, mean and spread over seeds
  ~/.cache/dpstream/mbienv/bin/python bench/accuracy_marginal/batch_ref.py report --data ~/.cache/dpstream/adult/full \\
      --results batch.jsonl [--marginal marginal.log ...]

The table.  Every stream of the recipe inserts all 48 842 rows and deletes none, so
the true table at the last step is the same in all four settings (randomized or
age-sorted, 200 or 50 rows a step); `run` checks that and runs each (mechanism,
epsilon, seed) once, and `report` prints it beside every stream's `marginal` figure.

The budget.  `marginal` run with `epsilon` is eps-DP per event and hence
eps²/2-zCDP (docs/privacy.md, notation); its rho-zCDP mode at rho = eps²/2 splits
rho over the step's K selections and K counters (docs/privacy.md §5).  The batch
mechanisms get the same rho = eps²/2 for the whole table — one run over all rows, so
each row is covered by one rho, as each event is in the stream.  Both are
add/remove-one-row guarantees.

The metric is bench_accuracy_marginal.c's AvgWE (and MaxWE) at step t = the last:
  WE(W) = (1/|W|) Σ_q |q(f_t) − q(g_t)| / n_t over the cells q of W, n_t the true rows,
averaged (max) over all 2-way workloads W of the attributes in attributes.json, g_t
the mechanism's synthetic rows.

The mechanisms (written here following Private-PGM's mechanisms/mst.py and
mechanisms/aim.py, github ryan112358/private-pgm @4d2b3c5, Apache-2.0; McKenna,
Miklau, Sheldon 2021 "Winning the NIST contest…" and McKenna, Mullins, Sheldon,
Miklau 2022 "AIM"), on mbi 1.0.0's estimation.mirror_descent:
  MST: rho/3 to the 1-way marginals (Gaussian, sigma = sqrt(3/(2 rho))), attribute
       values whose noisy count is below 3 sigma merged into one (compress_domain),
       rho/3 to r − 1 exponential-mechanism picks of a maximum spanning tree of
       2-way marginals scored by the L1 error of the 1-way model, rho/3 to measuring
       them; mirror descent (10 000 iterations), synthetic rows, merged values
       drawn uniformly back.
  AIM: rho split over up to 16·d rounds (0.9 to measurements, 0.1 to selection),
       1-way marginals first, then each round the exponential mechanism picks the
       workload-weighted candidate (downward closure of the 2-way workload) whose
       model error minus its expected noise sqrt(2/pi)·sigma·|cl| is largest,
       among those keeping the junction tree under max_model_size·(rho used/rho) MB;
       measure, refit from the previous potentials, halve sigma when the fit did not
       move by the expected noise; the last round uses what is left.
Two departures, both about speed, neither about privacy: the marginal oracle is
mbi's message_passing_stable (the default message_passing_fast once returned NaN
marginals, docs/peers.md §4), and mbi's einsum contraction path search is "greedy"
(mbi 1.0.0 hard-codes "dp"); AIM's max_model_size, iterations per round and rounds
are flags (the published defaults: 80 MB, 1000, 16·d), and `run` records the values
used.  --aim-rounds must be well above d: the d 1-way measurements take d/rounds of
the measurement budget 0.9·rho (rounds = d leaves nothing for a second round).  Noise is numpy's floating-point Gaussian seeded by --seeds: these are utility
references, not DP implementations (docs/peers.md).  No data are written anywhere
but --out (figures only).
"""
import argparse
import csv
import itertools
import json
import math
import os
import sys
import time

import numpy as np

# ----------------------------------------------------------------------------- data


def load_final_tables(data_dir):
    """{stream: int array (rows × d)} of each stream's rows at its last step, and the attribute list."""
    attrs = json.load(open(os.path.join(data_dir, "attributes.json")))
    names = [a["name"] for a in attrs]
    sizes = [len(a["categories"]) for a in attrs]
    rows, last = {}, {}
    with open(os.path.join(data_dir, "adult.csv")) as f:
        r = csv.reader(f)
        head = r.__next__()
        cols = [head.index(n) for n in names]
        for line in r:
            s, step = line[0], int(line[1])
            rows.setdefault(s, []).append((step, [int(line[c]) for c in cols]))
            last[s] = max(last.get(s, 0), step)
    # insert-only streams: the table at the last step holds every row with step <= last
    tables = {s: np.array([v for st, v in rs if st <= last[s]], dtype=np.int64) for s, rs in rows.items()}
    return names, sizes, tables, last


def same_table(a, b):
    if a.shape != b.shape:
        return False
    ka = np.lexsort(a.T[::-1])
    kb = np.lexsort(b.T[::-1])
    return bool(np.array_equal(a[ka], b[kb]))


def avg_max_we(truth, synth, sizes):
    """bench_accuracy_marginal.c's AvgWE and MaxWE over all 2-way workloads (n = true rows)."""
    n = max(len(truth), 1)
    wes = []
    for i, j in itertools.combinations(range(len(sizes)), 2):
        cells = sizes[i] * sizes[j]
        t = np.bincount(truth[:, i] * sizes[j] + truth[:, j], minlength=cells)
        g = np.bincount(synth[:, i] * sizes[j] + synth[:, j], minlength=cells)
        wes.append(np.abs(t - g).sum() / (cells * n))
    return float(np.mean(wes)), float(np.max(wes))


# ----------------------------------------------------------------------------- mbi set-up


def mbi_setup():
    """Import mbi with the greedy einsum path (mbi 1.0.0 hard-codes optimize="dp")."""
    import jax
    import jax.numpy as jnp
    from mbi import marginal_oracles
    from mbi.factor import Factor

    def sum_product_greedy(factors, dom, einsum_fn=jnp.einsum):
        attrs = sorted(set.union(*[set(f.domain) for f in factors]).union(set(dom)))
        mapping = dict(zip(attrs, marginal_oracles._EINSUM_LETTERS))
        convert = lambda d: "".join(mapping[a] for a in d.attributes)
        formula = ",".join(convert(f.domain) for f in factors) + "->" + convert(dom)
        values = einsum_fn(formula, *[f.values for f in factors], optimize="greedy",
                           precision=jax.lax.Precision.HIGHEST)
        return Factor(dom, values)

    marginal_oracles.sum_product = sum_product_greedy
    return marginal_oracles.message_passing_stable


def mirror_descent(domain, measurements, iters, potentials=None):
    from mbi import estimation
    return estimation.mirror_descent(domain, measurements, iters=iters, potentials=potentials,
                                     marginal_oracle=ORACLE)


def exponential_mechanism(keys, q, eps, sensitivity):
    """softmax(eps/(2 Δ) · q): eps-DP, hence eps²/8-zCDP (as Private-PGM's Mechanism)."""
    q = np.asarray(q, dtype=float)
    s = 0.5 * eps / sensitivity * (q - q.max())
    p = np.exp(s - np.logaddexp.reduce(s))
    p /= p.sum()
    return keys[np.random.choice(len(keys), p=p)]


# ----------------------------------------------------------------------------- MST


def mst(data, rho):
    """Following Private-PGM mechanisms/mst.py (@4d2b3c5): 1-ways, compressed domain, a
    spanning tree of 2-ways by the exponential mechanism, mirror descent, synthetic rows."""
    from mbi import LinearMeasurement
    sigma = math.sqrt(3 / (2 * rho))
    log1 = measure(data, [(c,) for c in data.domain], sigma)
    cdata, log1, supports = compress_domain(data, log1)
    edges = mst_select(cdata, rho / 3.0, log1)
    log2 = measure(cdata, edges, sigma)
    model = mirror_descent(cdata.domain, log1 + log2, iters=10000)
    synth = model.synthetic_data()
    return expand_domain(synth.df, supports), {"sigma": sigma, "edges": [list(e) for e in edges]}


def measure(data, cliques, sigma):
    from mbi import LinearMeasurement
    out = []
    for cl in cliques:
        x = np.asarray(data.project(cl).datavector())
        y = x + np.random.normal(0, sigma, x.size)
        out.append(LinearMeasurement(y, cl, stddev=sigma))
    return out


def compress_domain(data, log1):
    """Values whose noisy 1-way count is below 3 sigma become one value; its measurement is
    re-expressed over the new domain with the same noise scale (mst.py's compress_domain)."""
    from mbi import Dataset, Domain, LinearMeasurement
    supports, new = {}, []
    for m in log1:
        col, y = m.clique[0], np.asarray(m.noisy_measurement)
        sup = y >= 3 * m.stddev
        supports[col] = sup
        if sup.all():
            new.append(m)
            continue
        k = y.size - sup.sum()
        y2 = np.append(y[sup], y[~sup].sum() / math.sqrt(k))
        w = np.ones(y2.size)
        w[-1] = 1.0 / math.sqrt(k)
        new.append(LinearMeasurement(y2, m.clique, m.stddev, query=(lambda w: lambda mu: mu.datavector() * w)(w)))
    df = data.df.copy()
    dom = {}
    for col in data.domain:
        sup = supports[col]
        size = int(sup.sum())
        dom[col] = size + (1 if size < sup.size else 0)
        mapping = np.full(sup.size, size)
        mapping[sup] = np.arange(size)
        df[col] = mapping[df[col].to_numpy()]
    return Dataset(df, Domain.fromdict(dom)), new, supports


def expand_domain(df, supports):
    """The merged value back to one of its original values, uniformly (mst.py's reverse_data)."""
    out = np.zeros((len(df), len(supports)), dtype=np.int64)
    for k, (col, sup) in enumerate(supports.items()):
        v = df[col].to_numpy()
        idx, extra = np.where(sup)[0], np.where(~sup)[0]
        merged = v == sup.sum()
        res = np.zeros(len(v), dtype=np.int64)
        res[~merged] = idx[v[~merged]]
        if extra.size:
            res[merged] = np.random.choice(extra, merged.sum())
        out[:, k] = res
    return out


def mst_select(data, rho, log1):
    import networkx as nx
    from scipy.cluster.hierarchy import DisjointSet
    est = mirror_descent(data.domain, log1, iters=2500)
    cands = list(itertools.combinations(data.domain.attrs, 2))
    weights = {}
    for a, b in cands:
        xhat = np.asarray(est.project([a, b]).datavector())
        x = np.asarray(data.project([a, b]).datavector())
        weights[a, b] = np.linalg.norm(x - xhat, 1)
    tree = nx.Graph()
    tree.add_nodes_from(data.domain.attrs)
    ds = DisjointSet(data.domain.attrs)
    r = len(list(nx.connected_components(tree)))
    eps = math.sqrt(8 * rho / (r - 1))
    for _ in range(r - 1):
        cands = [e for e in cands if not ds.connected(*e)]
        e = exponential_mechanism(cands, [weights[e] for e in cands], eps, 1.0)
        tree.add_edge(*e)
        ds.merge(*e)
    return list(tree.edges)


# ----------------------------------------------------------------------------- AIM


def downward_closure(cliques):
    out = set()
    for cl in cliques:
        for r in range(1, len(cl) + 1):
            out.update(itertools.combinations(cl, r))
    return sorted(out, key=len)


def aim(data, rho, max_model_size, iters, rounds):
    """Following Private-PGM mechanisms/aim.py (@4d2b3c5), workload: all 2-way marginals, weight 1."""
    from mbi import LinearMeasurement, junction_tree
    workload = list(itertools.combinations(data.domain.attrs, 2))
    candidates = {cl: float(sum(len(set(cl) & set(w)) for w in workload)) for cl in downward_closure(workload)}
    answers = {cl: np.asarray(data.project(cl).datavector()) for cl in candidates}
    rounds = rounds or 16 * len(data.domain)
    oneway = [cl for cl in candidates if len(cl) == 1]
    sigma = math.sqrt(rounds / (2 * 0.9 * rho))
    eps = math.sqrt(8 * 0.1 * rho / rounds)
    rho_used = len(oneway) * 0.5 / sigma**2
    ms = [LinearMeasurement(answers[cl] + np.random.normal(0, sigma, answers[cl].size), cl, stddev=sigma)
          for cl in oneway]
    model = mirror_descent(data.domain, ms, iters)
    log, terminate = [], False
    while not terminate:
        if rho - rho_used < 2 * (0.5 / sigma**2 + 1.0 / 8 * eps**2):
            remaining = rho - rho_used   # the last round: whatever is left
            sigma = math.sqrt(1 / (2 * 0.9 * remaining))
            eps = math.sqrt(8 * 0.1 * remaining)
            terminate = True
        rho_used += 1.0 / 8 * eps**2 + 0.5 / sigma**2
        size_limit = max_model_size * rho_used / rho
        free = set(downward_closure(model.cliques))
        small = {cl: w for cl, w in candidates.items()
                 if cl in free or junction_tree.hypothetical_model_size(data.domain, model.cliques + [cl]) <= size_limit}
        keys = list(small)
        errs = [small[cl] * (np.linalg.norm(answers[cl] - np.asarray(model.project(cl).datavector()), 1)
                             - math.sqrt(2 / math.pi) * sigma * data.domain.size(cl)) for cl in keys]
        cl = exponential_mechanism(keys, errs, eps, max(small.values()))
        n = data.domain.size(cl)
        ms.append(LinearMeasurement(answers[cl] + np.random.normal(0, sigma, n), cl, stddev=sigma))
        z = np.asarray(model.project(cl).datavector())
        potentials = model.potentials.expand(list(set(m.clique for m in ms)))
        model = mirror_descent(data.domain, ms, iters, potentials=potentials)
        w = np.asarray(model.project(cl).datavector())
        log.append([list(cl), round(sigma, 3)])
        print(f"  aim round {len(log)} ({time.strftime('%H:%M:%S')}): {cl} sigma {sigma:.2f} "
              f"budget {rho_used / rho:.3f}", file=sys.stderr,
              flush=True)
        if np.linalg.norm(w - z, 1) <= sigma * math.sqrt(2 / math.pi) * n:
            sigma /= 2
            eps *= 2
    model = mirror_descent(data.domain, ms, iters, potentials=potentials)
    synth = model.synthetic_data()
    names = list(data.domain.attrs)
    return synth.df[names].to_numpy().astype(np.int64), {"rounds": len(log), "measured": log}


# ----------------------------------------------------------------------------- commands


def parse_seeds(s):
    if "-" in s:
        a, b = s.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in s.split(",")]


def cmd_run(a):
    global ORACLE
    names, sizes, tables, last = load_final_tables(a.data)
    streams = sorted(tables)
    ref = tables[streams[0]]
    for s in streams[1:]:
        if not same_table(ref, tables[s]):
            sys.exit(f"batch_ref: the last-step table of {s} differs from {streams[0]}'s: run per stream")
    ORACLE = mbi_setup()
    import pandas as pd
    from importlib.metadata import version
    from mbi import Dataset, Domain
    data = Dataset(pd.DataFrame(ref, columns=names), Domain(names, sizes))
    print(f"last-step table: {len(ref)} rows, {len(names)} attributes, the same in {', '.join(streams)} "
          f"(last steps {', '.join(str(last[s]) for s in streams)}); mbi {version('mbi')}", flush=True)
    for eps in [float(e) for e in a.epsilons.split(",")]:
        rho = eps * eps / 2
        for mech in a.mechanisms.split(","):
            for seed in parse_seeds(a.seeds):
                np.random.seed(seed)
                t0 = time.time()
                if mech == "mst":
                    synth, info = mst(data, rho)
                    params = {}
                elif mech == "aim":
                    params = {"max_model_size": a.aim_max_model_size, "iters": a.aim_iters,
                              "rounds": a.aim_rounds or 16 * len(names)}
                    synth, info = aim(data, rho, a.aim_max_model_size, a.aim_iters, a.aim_rounds)
                else:
                    sys.exit(f"batch_ref: unknown mechanism {mech}")
                secs = time.time() - t0
                avg, mx = avg_max_we(ref, synth, sizes)
                rec = {"mech": mech, "eps": eps, "rho": rho, "seed": seed, "avgwe": avg, "maxwe": mx,
                       "seconds": secs, "rows": int(len(synth)), "mbi": version("mbi"), "params": params,
                       "info": info}
                print(f"{mech} eps {eps:g} rho {rho:g} seed {seed}: AvgWE {avg:.5f} MaxWE {mx:.5f} "
                      f"({len(synth)} rows) in {secs:.1f} s", flush=True)
                with open(a.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")


def stats(v):
    v = np.asarray(v, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return float(v.mean()), sd, float(v.min()), float(v.max())


def parse_marginal_logs(paths):
    """bench_accuracy_marginal's per-key lines 'key K: STREAM EPS proposed AvgWE MaxWE …' (run with --last 1)."""
    out = {}
    for p in paths or []:
        for line in open(p):
            f = line.split()
            if len(f) >= 6 and f[0] == "key" and f[1].endswith(":") and f[4] == "proposed":
                out.setdefault((f[2], float(f[3])), {})[int(f[1].rstrip(":"))] = float(f[5])
    return out


def cmd_report(a):
    res = [json.loads(l) for l in open(a.results) if l.strip()]
    streams = a.streams.split(",")
    marg = parse_marginal_logs(a.marginal)
    epss = sorted({r["eps"] for r in res} | {e for _, e in marg})
    by = {}
    for r in res:
        by.setdefault((r["mech"], r["eps"]), []).append(r)
    print("| stream | ε | ρ = ε²/2 | marginal last step: AvgWE mean ± sd [keys] | MST: AvgWE mean ± sd (min–max) "
          "[seeds] | marginal ÷ MST | AIM: AvgWE mean ± sd (min–max) [seeds] | marginal ÷ AIM | MST s/run | "
          "AIM s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in streams:
        for e in epss:
            m = marg.get((s, e))
            mm, msd = stats(list(m.values()))[:2] if m else (None, None)
            cells = [f"{mm:.5f} ± {msd:.5f} [{len(m)}]" if m else "—"]
            secs = []
            for mech in ("mst", "aim"):
                rs = by.get((mech, e), [])
                if not rs:
                    cells += ["—", "—"]
                    secs.append("—")
                    continue
                mean, sd, lo, hi = stats([r["avgwe"] for r in rs])
                cells.append(f"{mean:.5f} ± {sd:.5f} ({lo:.5f}–{hi:.5f}) [{len(rs)}]")
                cells.append(f"{mm / mean:.2f}" if mm else "—")
                secs.append(f"{stats([r['seconds'] for r in rs])[0]:.0f}")
            print(f"| {s.replace('adult/', '')} | {e:g} | {e * e / 2:g} | " + " | ".join(cells) + " | "
                  + " | ".join(secs) + " |")
    for mech in ("mst", "aim"):
        ps = {json.dumps(r["params"], sort_keys=True) for r in res if r["mech"] == mech}
        vs = {r["mbi"] for r in res if r["mech"] == mech}
        if ps:
            print(f"{mech}: mbi {', '.join(sorted(vs))}; parameters {'; '.join(sorted(ps))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--mechanisms", default="mst,aim")
    r.add_argument("--epsilons", default="0.5,1,2,4")
    r.add_argument("--seeds", default="0-4")
    r.add_argument("--aim-max-model-size", type=float, default=80.0)
    r.add_argument("--aim-iters", type=int, default=1000)
    r.add_argument("--aim-rounds", type=int, default=0)
    p = sub.add_parser("report")
    p.add_argument("--data", required=False)
    p.add_argument("--results", required=True)
    p.add_argument("--marginal", nargs="*")
    p.add_argument("--streams", default="adult/randomized-bs200,adult/randomized-bs50,adult/ordered-bs200,"
                                        "adult/ordered-bs50")
    a = ap.parse_args()
    cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    main()
