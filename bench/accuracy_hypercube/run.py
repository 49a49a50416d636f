#!/usr/bin/env python3
"""run.py — issue 17: seed 004's accuracy claim for `hypercube` (He, Vershynin,
Zhu 2024, Theorem 1.1, eq. (1.1)) measured with bench_accuracy_hypercube:

    E W1(true_t, synthetic_t) ≲ log(t)·(εt)^(−1/d)                 d >= 2
    E W1(true_t, synthetic_t) ≲ log³(εt)·log^1.5(t)·(εt)^(−1)      d = 1

  python3 bench/accuracy_hypercube/run.py [--bin build/bench_accuracy_hypercube]
        [--work /tmp/accuracy_hypercube] [--t-max 131072] [--keys 5] [--epsilons 0.5,1,2]
        [--streams2 uniform,clustered,drifting,clmfires] [--streams1 uniform,clustered,drifting]
        [--grid 362] [--exact-max 2048] [--subsample 2048] [--out RESULTS.md] [--reuse] [--no-validate]
        [--variant dense|paper]   (none: the synthesizer's default, "dense" since issue 38; the
                                   RESULTS.md figures before issue 38 are "paper")

Streams (seeded, deterministic; files in --work):
  uniform    iid uniform on [0,1]^d
  clustered  a mixture of 3 Gaussian blobs (weights .5/.3/.2), clipped to the cube
  drifting   one Gaussian blob (sd .08) whose centre moves linearly from .15·1 to .85·1
             over the stream, clipped
  clmfires   REAL: the 8488 forest-fire locations of spatstat.data's `clmfires`
             (Castilla-La Mancha, Debian r-cran-spatstat.data), rescaled by the
             observation window's public bounding box (xrange, yrange — not the
             data's min/max), streamed in a fixed random order; d = 2 only.  It
             has fewer points than --t-max, so it stops at 8488.
Every (stream, d, ε, key) is one bench run (nice -n 10, one at a time), with
points_per_step = t_max/128 (the documented setting; 66 for clmfires) and
evaluations at t = 64·2^k and at the last t.  The uniform baseline and the
subsample reference do not depend on ε, so they are computed in the runs of
the first ε only.

Analysis per (stream, d, ε): W1 averaged over keys at each t (mean
[min–max]); the least-squares slope of log(W1/log t) against log t over the
top five octaves of the stream, t ∈ [t_end/32, t_end] (the theorem is
asymptotic; its C_ε of Remark 1.2 is below 10 for these ε, but the hidden
constants are not — see the section's interpretation), compared with −1/d
(pass: within ±0.1); the same slope over the top three octaves (the local
trend); the constant c in W1 ≈ c·log(t)·(εt)^(−1/d) as the median over the fit
range of W1/(log(t)(εt)^(−1/d)); for d = 1 also the slope and constant of the
full d = 1 rate; and at the last t the exponent of W1 against ε (the rate's
(εt)^(−1/d) predicts −1/d for d >= 2).  Logs are natural.

W1 (bench_accuracy_hypercube.c): ℓ∞ metric, both full sets, no subsampling;
exact for d = 1 and for d = 2 up to --exact-max points, above that exact on
the two measures rounded to a non-dyadic grid (G = 181 or --grid), with a
check at t <= --exact-max (grid against exact) and single evaluations at
G = 2·--grid (--no-validate skips them).  The subsample column shows what a
size-n subsample evaluation would have added.  No third-party Python
packages (no numpy/scipy needed)."""
import argparse
import datetime
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# --- streams ----------------------------------------------------------------------------------

BLOBS = {   # (centre, sd, weight) per dimension
    1: [((0.20,), 0.05, 0.5), ((0.55,), 0.08, 0.3), ((0.85,), 0.04, 0.2)],
    2: [((0.25, 0.30), 0.05, 0.5), ((0.70, 0.75), 0.08, 0.3), ((0.75, 0.25), 0.04, 0.2)],
}


def clip(v):
    return min(1.0, max(0.0, v))


def gen_uniform(n, d, rng):
    return [tuple(rng.random() for _ in range(d)) for _ in range(n)]


def gen_clustered(n, d, rng):
    blobs = BLOBS[d]
    weights = [b[2] for b in blobs]
    out = []
    for _ in range(n):
        c, sd, _ = rng.choices(blobs, weights)[0]
        out.append(tuple(clip(rng.gauss(c[k], sd)) for k in range(d)))
    return out


def gen_drifting(n, d, rng):
    out = []
    for i in range(n):
        c = 0.15 + 0.70 * i / max(1, n - 1)
        out.append(tuple(clip(rng.gauss(c, 0.08)) for _ in range(d)))
    return out


def load_clmfires(rng):
    """The points rescaled by the window's bounding box, in a fixed random order."""
    r = ("library(spatstat.data); data(clmfires); w <- clmfires$window; "
         "cat(w$xrange, w$yrange, '\\n'); "
         "write.table(cbind(clmfires$x, clmfires$y), sep=',', row.names=FALSE, col.names=FALSE)")
    try:
        out = subprocess.run(["Rscript", "-e", r], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"run.py: cannot read clmfires with Rscript (Debian r-cran-spatstat.data): {e}")
    lines = out.strip().splitlines()
    x0, x1, y0, y1 = (float(v) for v in lines[0].split())
    pts = []
    for l in lines[1:]:
        x, y = (float(v) for v in l.split(","))
        p = ((x - x0) / (x1 - x0), (y - y0) / (y1 - y0))
        if not (0 <= p[0] <= 1 and 0 <= p[1] <= 1):
            sys.exit("run.py: a clmfires point lies outside its window's box")
        pts.append(p)
    rng.shuffle(pts)
    return pts, (x0, x1, y0, y1)


def make_stream(work, name, d, n):
    """Writes the stream's CSV (once per length: the drift spans the stream) and
    returns (path, number of points)."""
    path = os.path.join(work, f"{name}_d{d}_t{n}.csv")
    seed = {"uniform": 101, "clustered": 202, "drifting": 303, "clmfires": 404}[name] + 1000 * d
    rng = random.Random(seed)
    if name == "clmfires":
        pts, _ = load_clmfires(rng)
    else:
        pts = {"uniform": gen_uniform, "clustered": gen_clustered, "drifting": gen_drifting}[name](n, d, rng)
    if not os.path.exists(path):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            for p in pts:
                f.write(",".join(repr(v) for v in p) + "\n")
        os.replace(tmp, path)
    return path, min(n, len(pts))


# --- runs -------------------------------------------------------------------------------------

FIELDS = ["stream", "eps", "d", "key", "t", "w1", "method", "depth", "step_s", "w1_uniform", "disc", "w1_err",
          "w1_check", "w1_sub", "n_sub", "released"]


def parse(out):
    rows = []
    for line in out.splitlines():
        v = line.split()
        if len(v) != len(FIELDS):
            continue
        r = dict(zip(FIELDS, v))
        for k in FIELDS:
            if k in ("stream", "method"):
                continue
            r[k] = float(r[k]) if k not in ("d", "key", "t", "n_sub", "released") else int(r[k])
        rows.append(r)
    return rows


def run_bench(a, path, name, d, eps, key, n, b, extra, log):
    vtag = f"_{a.variant}" if a.variant else ""
    out_path = os.path.join(a.work, "runs", f"{name}_d{d}_t{a.t_max}_e{eps:g}_k{key}{vtag}{extra.get('tag', '')}.txt")
    if a.reuse and os.path.exists(out_path):
        with open(out_path) as f:
            text = f.read()
        dt = [float(l.split()[2]) for l in text.splitlines() if l.startswith("# wall_s")]
        return parse(text), (dt[0] if dt else 0.0)
    cmd = ["nice", "-n", "10", a.bin, "--points", path, "--dims", str(d), "--epsilon", f"{eps:g}",
           "--points-per-step", str(b), "--max-depth", str(a.max_depth), "--key", str(key), "--stream", name,
           "--t-max", str(n), "--grid", str(a.grid), "--exact-max", str(a.exact_max)]
    cmd += extra.get("args", [])
    cmd += ["--variant", a.variant] if a.variant else []
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"run.py: {' '.join(cmd)} failed:\n{p.stderr}")
    if p.stderr.strip():
        log.append(f"{name} d={d} eps={eps:g} key={key}: {p.stderr.strip()}")
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(p.stdout + f"# wall_s {dt:.1f}\n")
    os.replace(tmp, out_path)
    return parse(p.stdout), dt


# --- analysis ---------------------------------------------------------------------------------

def lsq_slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else float("nan")


def rate(t, eps, d):
    """The theorem's rate without its constant (eq. 1.1)."""
    if d >= 2:
        return math.log(t) * (eps * t) ** (-1.0 / d)
    return math.log(eps * t) ** 3 * math.log(t) ** 1.5 / (eps * t)


def fit(ts, ws, eps, d, lo, hi):
    """slope of log(W1/log t) vs log t, constant c (median of W1/(log t·(εt)^(−1/d))),
    and for d = 1 the slope/constant of the full rate, over lo <= t <= hi."""
    pts = [(t, w) for t, w in zip(ts, ws) if lo <= t <= hi and w > 0]
    if len(pts) < 2:
        return None
    xs = [math.log(t) for t, _ in pts]
    s = lsq_slope(xs, [math.log(w / math.log(t)) for t, w in pts])
    c = statistics.median(w / (math.log(t) * (eps * t) ** (-1.0 / d)) for t, w in pts)
    s_full = lsq_slope(xs, [math.log(w / (rate(t, eps, d) * eps * t)) for t, w in pts]) if d == 1 else None
    c_full = statistics.median(w / rate(t, eps, d) for t, w in pts) if d == 1 else None
    return s, c, s_full, c_full


def mmm(vals, f="{:.4f}"):
    vals = [v for v in vals if v == v]
    if not vals:
        return "–"
    m = statistics.mean(vals)
    if len(vals) == 1:
        return f.format(m)
    return f"{f.format(m)} [{f.format(min(vals))}–{f.format(max(vals))}]"


def t_label(t):
    k = round(math.log2(t))
    return f"2^{k}" if 2 ** k == t else str(t)


def analyse(a, runs, streams_n, validation, checks, eps_list, keys):
    md = []
    summary = []
    for d in (2, 1):
        for name in (a.streams2 if d == 2 else a.streams1):
            if (name, d) not in streams_n:
                continue
            n_end = streams_n[(name, d)]
            by = {}   # eps -> t -> [row per key]
            for eps in eps_list:
                for key in keys:
                    for r in runs.get((name, d, eps, key), []):
                        by.setdefault(eps, {}).setdefault(r["t"], []).append(r)
            ts = sorted(by[eps_list[0]])
            base = {t: [r["w1_uniform"] for r in by[eps_list[0]][t]] for t in ts}
            sub = {t: [r["w1_sub"] for r in by[eps_list[0]][t]] for t in ts}
            md.append(f"\n#### {name}, d = {d} (t_end = {n_end}, {len(keys)} keys)\n")
            head = "| t | " + " | ".join(f"W1 ε={e:g}" for e in eps_list) + " | uniform baseline |"
            if d == 2:
                head += " subsample floor (n=%d) | W1 method | max Δ halving G |" % a.subsample
            md.append(head)
            md.append("|" + "---|" * (head.count("|") - 1))
            for t in ts:
                cells = [mmm([r["w1"] for r in by[e].get(t, [])]) for e in eps_list]
                line = f"| {t_label(t)} | " + " | ".join(cells) + f" | {mmm(base[t])} |"
                if d == 2:
                    allr = [r for e in eps_list for r in by[e].get(t, [])]
                    methods = sorted({r["method"] for r in allr})
                    errs = [r["w1_err"] for r in allr if r["method"].startswith("grid")]
                    line += f" {mmm(sub[t])} | {'/'.join(methods)} | {max(errs):.4f} |" if errs else \
                        f" {mmm(sub[t])} | {'/'.join(methods)} | – |"
                md.append(line)
            lo, hi = ts[-1] / 32, ts[-1]
            for eps in eps_list:
                mean_w = [statistics.mean(r["w1"] for r in by[eps][t]) for t in ts]
                f5 = fit(ts, mean_w, eps, d, lo, hi)
                f3 = fit(ts, mean_w, eps, d, ts[-1] / 8, hi)
                per_key = []
                for key in keys:
                    kr = {r["t"]: r["w1"] for r in runs.get((name, d, eps, key), [])}
                    fk = fit(ts, [kr.get(t, float("nan")) for t in ts], eps, d, lo, hi)
                    if fk:
                        per_key.append(fk[0])
                last = by[eps][ts[-1]]
                summary.append(dict(stream=name, d=d, eps=eps, slope=f5[0], keys=per_key, slope3=f3[0], c=f5[1],
                                    s_full=f5[2], c_full=f5[3], w_end=statistics.mean(r["w1"] for r in last),
                                    base_end=statistics.mean(base[ts[-1]]), t_end=ts[-1],
                                    step_s=statistics.mean(r["step_s"] for r in last),
                                    depth=statistics.mean(r["depth"] for r in last), lo=lo))
    # the summary table
    out = []
    out.append("| stream | d | ε | fit range t | slope of log(W1/log t) [per-key min–max] | target −1/d | "
               "pass ±0.1 | slope, top 3 octaves | c = median W1/(log t·(εt)^(−1/d)) | W1 at t_end vs uniform "
               "baseline | depth, s/step at t_end |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in summary:
        target = -1.0 / s["d"]
        ok = abs(s["slope"] - target) <= 0.1
        keys_s = f"[{min(s['keys']):.2f}–{max(s['keys']):.2f}]" if s["keys"] else ""
        out.append(f"| {s['stream']} | {s['d']} | {s['eps']:g} | {int(s['lo'])}–{s['t_end']} | {s['slope']:.3f} "
                   f"{keys_s} | {target:.2f} | {'PASS' if ok else 'FAIL'} | {s['slope3']:.3f} | {s['c']:.3g} | "
                   f"{s['w_end']:.4f} vs {s['base_end']:.4f} | {s['depth']:.0f}, {s['step_s']:.3f} |")
    d1 = [s for s in summary if s["d"] == 1]
    if d1:
        out.append("\nd = 1 against its full rate log³(εt)·log^1.5(t)/(εt): slope of "
                   "log(W1/(log³(εt)·log^1.5 t)) vs log t (target −1) and "
                   "c₁ = median W1/(log³(εt)·log^1.5(t)/(εt)):\n")
        out.append("| stream | ε | slope | pass ±0.1 | c₁ |")
        out.append("|---|---|---|---|---|")
        for s in d1:
            out.append(f"| {s['stream']} | {s['eps']:g} | {s['s_full']:.3f} | "
                       f"{'PASS' if abs(s['s_full'] + 1) <= 0.1 else 'FAIL'} | {s['c_full']:.3g} |")
    # the ε-dependence at fixed t: the rate's (εt)^(−1/d) predicts W1 ∝ ε^(−1/d) (d = 1: with log³(εt))
    out.append("\nε-dependence at t_end: least-squares exponent of W1 (key mean) against ε, and the rate's:\n")
    out.append("| stream | d | t_end | " + " | ".join(f"W1 ε={e:g}" for e in eps_list) + " | exponent | rate's |")
    out.append("|---|---|---|" + "---|" * len(eps_list) + "---|---|")
    for key in sorted({(s["stream"], s["d"]) for s in summary}, key=lambda k: (-k[1], k[0])):
        rows = sorted((s for s in summary if (s["stream"], s["d"]) == key), key=lambda s: s["eps"])
        if len(rows) < 2:
            continue
        le = [math.log(s["eps"]) for s in rows]
        got = lsq_slope(le, [math.log(s["w_end"]) for s in rows])
        want = lsq_slope(le, [math.log(rate(rows[0]["t_end"], s["eps"], key[1])) for s in rows])
        out.append(f"| {key[0]} | {key[1]} | {rows[0]['t_end']} | " + " | ".join(f"{s['w_end']:.4f}" for s in rows) +
                   f" | {got:.2f} | {want:.2f} |")
    # the solver checks
    chk = []
    if checks:
        worst = max(checks, key=lambda c: abs(c[3] - c[2]))
        chk.append(f"- Grid vs exact where both exist (d = 2, t ≤ {a.exact_max}, first ε, key 1, G = {a.grid}): "
                   f"max |W1_grid − W1_exact| = {abs(worst[3] - worst[2]):.5f} ({worst[0]}, t = {worst[1]}: "
                   f"{worst[2]:.5f} exact vs {worst[3]:.5f} grid); {len(checks)} comparisons.")
    for v in validation:
        chk.append(f"- Resolution check ({v['stream']}, d = 2, ε = {v['eps']:g}, key 1, t = {v['t']}): "
                   f"grid{v['G']} W1 = {v['w_hi']:.5f} vs the sweep's {v['method']} W1 = {v['w_lo']:.5f} "
                   f"(difference {abs(v['w_hi'] - v['w_lo']):.5f} = {abs(v['w_hi'] - v['w_lo']) / v['w_hi']:.1%}; "
                   f"the sweep's Δ halving G was {v['err']:.5f}).")
    return md, out, chk, summary


def host():
    mem, osname = "?", platform.system()
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GB"
        with open("/etc/os-release") as f:
            osname = dict(l.rstrip().split("=", 1) for l in f if "=" in l).get("PRETTY_NAME", osname).strip('"')
    except OSError:
        pass
    return f"{os.cpu_count()} vCPU, {mem} RAM, {osname}, {platform.machine()}, kernel {platform.release()}"


# --- main -------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(HERE, "../../build/bench_accuracy_hypercube"))
    ap.add_argument("--work", default="/tmp/accuracy_hypercube")
    ap.add_argument("--t-max", type=int, default=1 << 17)
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--epsilons", default="0.5,1,2")
    ap.add_argument("--streams2", default="uniform,clustered,drifting,clmfires")
    ap.add_argument("--streams1", default="uniform,clustered,drifting")
    ap.add_argument("--max-depth", type=int, default=20)
    ap.add_argument("--grid", type=int, default=362)
    ap.add_argument("--exact-max", type=int, default=2048)
    ap.add_argument("--subsample", type=int, default=2048)
    ap.add_argument("--out", default=None, help="write the markdown tables here too")
    ap.add_argument("--reuse", action="store_true", help="reuse finished runs in --work/runs")
    ap.add_argument("--variant", default=None, help="hypercube's variant (paper, the default, or dense; issue 38)")
    ap.add_argument("--no-validate", action="store_true", help="skip the resolution check on a grid twice as fine")
    a = ap.parse_args()
    a.streams2 = [s for s in a.streams2.split(",") if s]
    a.streams1 = [s for s in a.streams1.split(",") if s]
    if not os.access(a.bin, os.X_OK):
        sys.exit(f"run.py: no benchmark binary at {a.bin}: cmake --build build --target bench_accuracy_hypercube")
    os.makedirs(os.path.join(a.work, "runs"), exist_ok=True)
    eps_list = [float(e) for e in a.epsilons.split(",")]
    keys = list(range(1, a.keys + 1))
    t_start = time.time()
    load0 = os.getloadavg()
    if subprocess.run([a.bin, "--selftest"], capture_output=True, text=True).returncode != 0:
        sys.exit("run.py: the W1 solvers' self-test failed")

    streams_n, runs, log, checks, run_s = {}, {}, [], [], []
    plan = [(2, s) for s in a.streams2] + [(1, s) for s in a.streams1 if s != "clmfires"]
    for d, name in plan:
        path, n = make_stream(a.work, name, d, a.t_max)
        if n < a.t_max:
            print(f"{name}: {n} points < t_max = {a.t_max}: the stream stops at t = {n}", flush=True)
        streams_n[(name, d)] = n
        b = max(1, n // 128)
        for i, eps in enumerate(eps_list):
            for key in keys:
                extra = []
                if i == 0:   # ε-independent references once per (stream, d, key)
                    extra += ["--subsample", str(a.subsample)] if d == 2 else []
                    extra += ["--check", "1"] if key == 1 and d == 2 else []
                else:
                    extra += ["--baseline", "0"]
                rows, dt = run_bench(a, path, name, d, eps, key, n, b, {"args": extra}, log)
                runs[(name, d, eps, key)] = rows
                run_s.append(dt)
                if rows and i == 0 and key == 1 and d == 2:
                    checks += [(name, r["t"], r["w1"], r["w1_check"]) for r in rows if r["w1_check"] == r["w1_check"]]
                last = rows[-1] if rows else None
                print(f"{name} d={d} eps={eps:g} key={key}: " +
                      (f"t={last['t']} W1={last['w1']:.4f} ({last['method']}) uniform={last['w1_uniform']:.4f} "
                       f"{dt:.1f}s" if last else "no output"), flush=True)
    validation = []
    if not a.no_validate:   # the same releases (same steps, same keys) on a grid twice as fine
        eps = 1.0 if 1.0 in eps_list else eps_list[0]
        for name, t in (("uniform", a.t_max // 4), ("uniform", a.t_max), ("clustered", a.t_max)):
            if name not in a.streams2 or t > streams_n[(name, 2)] or t <= a.exact_max:
                continue
            path = os.path.join(a.work, f"{name}_d2_t{a.t_max}.csv")
            G = 2 * a.grid
            rows, dt = run_bench(a, path, name, 2, eps, 1, t, max(1, streams_n[(name, 2)] // 128),
                                 {"tag": f"_grid{G}_t{t}", "args": ["--eval-from", str(t), "--grid", str(G),
                                                                   "--grid-min", str(G), "--baseline", "0"]}, log)
            run_s.append(dt)
            ref = [r for r in runs[(name, 2, eps, 1)] if r["t"] == t]
            if rows and ref:
                validation.append(dict(stream=name, eps=eps, t=t, G=G, w_hi=rows[-1]["w1"], w_lo=ref[0]["w1"],
                                       method=ref[0]["method"], err=ref[0]["w1_err"]))
                print(f"validation {name} t={t}: grid{G} {rows[-1]['w1']:.5f} vs {ref[0]['w1']:.5f} ({dt:.1f}s)",
                      flush=True)
    wall = time.time() - t_start
    with open(os.path.join(a.work, "raw_results.txt"), "w") as f:   # every evaluation, for re-analysis
        f.write("# " + " ".join(FIELDS) + "\n")
        for k in sorted(runs):
            for r in runs[k]:
                f.write(" ".join(str(r[x]) for x in FIELDS) + "\n")
    load1 = os.getloadavg()
    md, summ, chk, _ = analyse(a, runs, streams_n, validation, checks, eps_list, keys)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = []
    text.append(f"Command: `python3 bench/accuracy_hypercube/run.py --t-max {a.t_max} --keys {a.keys} "
                f"--epsilons {a.epsilons}`  \nDate: {now}; {len(run_s)} runs, one at a time (nice -n 10), "
                f"{sum(run_s) / 60:.1f} min in total (this invocation: {wall / 60:.1f} min wall"
                f"{', finished runs reused' if a.reuse else ''}); load average {load0[0]:.2f} at start, "
                f"{load1[0]:.2f} at the end.  ")
    text.append(f"Host: {host()}.  ")
    text.append(f"Setting: points_per_step = t_max/128 ({max(1, a.t_max // 128)}; 66 for clmfires), max_depth = "
                f"{a.max_depth}, output full; W1 under ℓ∞ between the true first t points and the full release "
                f"(t points); d = 1 exact (sorting); d = 2 exact assignment for t ≤ {a.exact_max}, above it exact "
                f"transport on the measures rounded to a G×G grid (G = {a.grid // 2}, or {a.grid} when "
                f"{a.grid // 2}·W1 < 5; non-dyadic sizes, see accuracy_hypercube.c; "
                f"'Δ halving G' = |W1_G − W1_G/2|, an indicator of the rounding error, checked against G = "
                f"{2 * a.grid} below); no subsampling.\n")
    text.append("**Slopes and constants** (key-averaged W1; slope of log(W1/log t) vs log t by least squares):\n")
    text += summ
    text.append("\n**Solver checks**\n")
    text += chk
    text.append(f"- Subsample floor: exact W1 between two independent size-{a.subsample} subsamples of the same "
                "true points (column 'subsample floor'): what evaluating on size-n subsamples would have added; "
                "the sweep does not subsample.")
    text.append("\n**W1 by t** (mean [min–max] over keys):")
    text += md
    if log:
        text.append("\nMessages from the runs:\n")
        text += [f"- {l}" for l in log]
    out = "\n".join(text) + "\n"
    print(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(out)


if __name__ == "__main__":
    main()
