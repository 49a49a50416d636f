"""forest_sim.py — a SIMULATION (numpy, not dpstream's code) of where issue 39 could go next:
`marginal`'s last-step AvgWE if the table were kept as a forest of 2-way marginals, each cell by a
continual counter, instead of Alg. 3's per-step selections.

  ~/.cache/dpstream/mbienv/bin/python bench/accuracy_marginal/forest_sim.py EPS STREAM KEYS
  ADULT_DIR=DIR (default /tmp/adult-lead): connectors/recipes/adult/make_updates.py --out DIR

Counters are `simple` (every step's increment gets fresh Laplace noise, pure ε; continuous Laplace
here, the product's are discrete), the budget split evenly over the m marginals a row event touches
(a forest's edges plus the 1-way marginal of every attribute no edge covers: ε/m each), the
last-step table is never sampled (the model's expected 2-way marginals are scored), and the edges are
chosen by the TRUE mutual information (an oracle: a private selection would spend a share of ε —
the open part).  AvgWE is bench_accuracy_marginal's (mean over the 91 pairs of Σ|q(f)−q(g)|/(|W|·n)).
`independent` is simulated the same way as a check against the C figures."""
import csv, json, os, sys, itertools
import numpy as np

DATA = os.environ.get("ADULT_DIR", "/tmp/adult-lead")   # make_updates.py --out DIR

eps = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
stream = sys.argv[2] if len(sys.argv) > 2 else "adult/randomized-bs200"
keys = int(sys.argv[3]) if len(sys.argv) > 3 else 3
attrs = json.load(open(os.path.join(DATA, "attributes.json")))
names = [a["name"] for a in attrs]
K = [len(a["categories"]) for a in attrs]
d = len(K)
rows, steps = [], []
for r in csv.DictReader(open(os.path.join(DATA, "adult.csv"))):
    if r["stream"] == stream:
        rows.append([int(r[n]) for n in names]); steps.append(int(r["step"]))
X = np.array(rows); S = np.array(steps); T = S.max(); n = len(X)
pairs = list(itertools.combinations(range(d), 2))

def pair_table(i, j, mask=None):
    x = X if mask is None else X[mask]
    t = np.zeros((K[i], K[j])); np.add.at(t, (x[:, i], x[:, j]), 1); return t

true = {p: pair_table(*p) for p in pairs}

def avgwe(model):
    return np.mean([np.abs(true[p] - model[p]).sum() / true[p].size / n for p in pairs])

def noisy_prefix(shape, scale, rng):
    # simple counter: every step's increment gets fresh Laplace(scale) per cell; prefix to T
    return rng.laplace(0, scale, size=(T,) + shape).sum(axis=0)

def project(v, total):
    # Euclidean projection onto {x >= 0, sum x = total}
    u = np.sort(v.ravel())[::-1]; css = np.cumsum(u) - total
    r = np.nonzero(u * np.arange(1, u.size + 1) > css)[0][-1]
    th = css[r] / (r + 1.0); return np.maximum(v - th, 0)

def independent(rng):
    marg = []
    for a in range(d):
        h = np.bincount(X[:, a], minlength=K[a]).astype(float)
        marg.append(h + noisy_prefix((K[a],), d / eps, rng))
    inv = np.array([1.0 / k for k in K])
    N = sum(m.sum() / k for m, k in zip(marg, K)) / inv.sum()
    p = [project(m, N) / N for m in marg]
    return {(i, j): np.outer(p[i], p[j]) * n for i, j in pairs}

def mutual_info(t):
    p = t / t.sum(); pi = p.sum(1, keepdims=True); pj = p.sum(0, keepdims=True)
    nz = p > 0; return (p[nz] * np.log(p[nz] / (pi @ pj)[nz])).sum()

def forest_model(E, rng, noise=1.0):
    """Edges E (a forest; a spanning tree covers every attribute) + 1-way counters for the attributes no edge
    covers; m = |E| + |isolated| counters at ε/m each (noise 0: the exact model of that forest)."""
    covered = {a for e in E for a in e}
    iso = [a for a in range(d) if a not in covered]
    m = len(E) + len(iso)
    tab = {(i, j): true[(i, j)] + noisy_prefix((K[i], K[j]), noise * m / eps, rng) for (i, j) in E}
    one = {a: np.bincount(X[:, a], minlength=K[a]) + noisy_prefix((K[a],), noise * m / eps, rng) for a in iso}
    N = np.mean([t.sum() for t in tab.values()] + [o.sum() for o in one.values()])
    node = {a: project(o, N) / N for a, o in one.items()}
    for a in covered:
        ms = [t.sum(1) if i == a else t.sum(0) for (i, j), t in tab.items() if a in (i, j)]
        node[a] = project(np.mean(ms, axis=0), N) / N
    cond = {}
    for (i, j), t in tab.items():
        t = project(t, N) / N
        for a, b, tt in ((i, j, t), (j, i, t.T)):
            rs = tt.sum(1, keepdims=True)
            cond[(a, b)] = np.where(rs > 1e-12, tt / np.maximum(rs, 1e-300), node[b][None, :])
    adj = {a: [] for a in range(d)}
    for i, j in E: adj[i].append(j); adj[j].append(i)
    model = {}
    for i in range(d):
        joint = {i: np.diag(node[i])}; stack = [i]
        while stack:
            a = stack.pop()
            for b in adj[a]:
                if b not in joint: joint[b] = joint[a] @ cond[(a, b)]; stack.append(b)
        for j in range(i + 1, d):
            model[(i, j)] = joint[j] * n if j in joint else np.outer(node[i], node[j]) * n
    return model

def forest(cmax=float("inf")):
    """Kruskal on the true mutual information (the oracle), pairs of at most cmax cells."""
    parent = list(range(d))
    def find(a):
        while parent[a] != a: parent[a] = parent[parent[a]]; a = parent[a]
        return a
    E = []
    for w, (i, j) in sorted(((w, p) for p, w in mi.items()), reverse=True):
        if K[i] * K[j] <= cmax and find(i) != find(j): parent[find(i)] = find(j); E.append((i, j))
    return E

mi = {p: mutual_info(true[p]) for p in pairs}
E_oracle = forest()
print(f"{stream} eps {eps}: n {n}, T {T}; oracle tree edges:", [(names[i], names[j]) for i, j in E_oracle])
exact_ind = {(i, j): np.outer(true[(i, j)].sum(1), true[(i, j)].sum(0)) / n for i, j in pairs}
res = {"independent": [], "tree(oracle edges)": [], "tree(small-domain edges)": []}
# public, data-independent tree alternative: a chain over the attributes sorted by domain size (no selection cost)
order = sorted(range(d), key=lambda a: K[a])
E_public = [(min(a, b), max(a, b)) for a, b in zip(order, order[1:])]
for key in range(keys):
    rng = np.random.default_rng(1000 + key)
    res["independent"].append(avgwe(independent(rng)))
    res["tree(oracle edges)"].append(avgwe(forest_model(E_oracle, rng)))
    res["tree(small-domain edges)"].append(avgwe(forest_model(E_public, rng)))
print(f"  exact independence {avgwe(exact_ind):.5f}; exact oracle tree {avgwe(forest_model(E_oracle, np.random.default_rng(0), noise=0.0)):.5f}")
for k, v in res.items():
    print(f"  {k:28s} AvgWE {np.mean(v):.5f} (keys {len(v)})")

for cmax in (20, 40, 100, 300, 1000):
    E = forest(cmax)
    v = [avgwe(forest_model(E, np.random.default_rng(2000 + k))) for k in range(keys)]
    print(f"  forest, pairs of <= {cmax:4d} cells ({len(E):2d} edges)  AvgWE {np.mean(v):.5f} (keys {keys})")
