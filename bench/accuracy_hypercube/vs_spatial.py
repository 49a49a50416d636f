#!/usr/bin/env python3
"""vs_spatial.py — issue 38: `hypercube` against `spatial` and the uniform
baseline on the same insert-only point stream, by seed 002's range-query
relative error (bench_accuracy_spatial's metric), at every step.

  python3 bench/accuracy_hypercube/vs_spatial.py [--streams clmfires,motion,circles,drops]
        [--epsilons 1,4] [--keys 5] [--variants paper,dense] [--per-step 300] [--steps 12]
        [--phdstream-repo /work/.mirror/k-girish+phdstream/repo] [--work /tmp/hc_vs_spatial]
        [--bin build/bench_accuracy_spatial] [--md]

Streams (d = 2, on [0,1]^2, --steps steps of --per-step points, inserts only):
  clmfires  REAL: spatstat.data's clmfires forest fires (Debian r-cran-spatstat.data,
            via Rscript), rescaled by the window's public bounding box, in a fixed
            random order (seed 404), the first steps·per_step of them
  motion    the PHDStream authors' motion_circles stream (k-girish/phdstream,
            data/motion_circles; make_updates.py motion-circles), its inserted
            points in stream order
  circles   our generator of the authors' concentric circles (make_updates.py's
            `circles`): the outer circle's points, then the inner's (a shift)
  drops     the demo's parcel drop-offs (processor/demo/demo_hypercube.c's
            mixture on [0,10]^2, its month-t share 10+4t % in the new district),
            redrawn here with Python's random (seed 38), rescaled to [0,1]^2
Queries: the authors' range queries (10 000 small, 5 000 medium, 1 000 large
rectangles of motion_circles_queries.shp), the same for every stream.
Methods: `spatial` (variant safe, counter simple, horizon = the steps),
`hypercube` (points_per_step = per_step, max_depth 20; each --variants entry
passed as "variant", default paper,dense; "V:key=n:…" adds numeric keys, e.g.
dense:split_threshold=0), `uniform` (the true
count of uniform points: a data-independent baseline that knows the count).
Prints per (stream, ε, method) the error at each step (mean of the S/M/L
rel_err, mean over keys) and the ratios the issue's targets name.

  --dims 1 or 3: `hypercube` against the uniform baseline only (no `spatial`
  there), by bench_range_hypercube (axis-aligned boxes of volume 10^-4..10^-1,
  its own queries); streams clmfires (d = 1: the x coordinate; d = 3: x, y and
  the day of the year / 366) and clustered (3 Gaussian blobs, weights
  .5/.3/.2, sd .04–.08, clipped; seed 202 + 1000·d)."""
import argparse
import csv
import math
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))


def clmfires_points():
    r = ("library(spatstat.data); data(clmfires); w <- clmfires$window; "
         "cat(w$xrange, w$yrange, '\\n'); "
         "write.table(cbind(clmfires$x, clmfires$y), sep=',', row.names=FALSE, col.names=FALSE)")
    out = subprocess.run(["Rscript", "-e", r], check=True, capture_output=True, text=True).stdout.strip().splitlines()
    x0, x1, y0, y1 = (float(v) for v in out[0].split())
    pts = [((float(a) - x0) / (x1 - x0), (float(b) - y0) / (y1 - y0)) for a, b in (l.split(",") for l in out[1:])]
    random.Random(404).shuffle(pts)
    return pts


def motion_points(work, repo):
    d = os.path.join(work, "motion_src")
    if not os.path.exists(os.path.join(d, "points.csv")):
        subprocess.run([sys.executable, os.path.join(ROOT, "connectors/recipes/spatial/make_updates.py"), "motion-circles",
                        "--repo", repo, "--out", d], check=True, capture_output=True)
    return [(float(r["x"]), float(r["y"])) for r in csv.DictReader(open(os.path.join(d, "points.csv")))
            if int(r["move"]) > 0]


def circles_points(n):
    rnd = random.Random(1)

    def point(radius):   # make_updates.py circles: radii 1, .667, noise .05, public box [-1.25,1.25]^2
        t = rnd.uniform(0, 2 * math.pi)
        x, y = radius * math.cos(t) + rnd.gauss(0, 0.05), radius * math.sin(t) + rnd.gauss(0, 0.05)
        return tuple(min(1.0, max(0.0, round((v + 1.25) / 2.5, 9))) for v in (x, y))

    return [point(1.0) for _ in range(n // 2)] + [point(0.667) for _ in range(n - n // 2)]


def drops_points(steps, per):
    rnd = random.Random(38)

    def near(c, w):   # demo_hypercube.c: c + (sum of three uniforms − 1.5)·w, clipped to [0, 10]
        return min(10.0, max(0.0, c + (sum(rnd.random() for _ in range(3)) - 1.5) * w))

    pts = []
    for t in range(1, steps + 1):
        new = 10 + 4 * t
        for _ in range(per):
            r = rnd.randrange(100)
            if r < new:
                p = (near(7.5, 2.5), near(7.0, 2.5))
            elif r < new + 15:
                p = (near(5, 10), near(5, 10))
            else:
                p = (near(3.0, 3.0), near(3.5, 3.0))
            pts.append((p[0] / 10, p[1] / 10))
    return pts


def clmfires_points_3d():
    r = ("library(spatstat.data); data(clmfires); w <- clmfires$window; "
         "cat(w$xrange, w$yrange, '\\n'); "
         "write.table(cbind(clmfires$x, clmfires$y, as.numeric(format(clmfires$marks$date, '%j'))), "
         "sep=',', row.names=FALSE, col.names=FALSE)")
    out = subprocess.run(["Rscript", "-e", r], check=True, capture_output=True, text=True).stdout.strip().splitlines()
    x0, x1, y0, y1 = (float(v) for v in out[0].split())
    pts = [((float(a) - x0) / (x1 - x0), (float(b) - y0) / (y1 - y0), float(c) / 366)
           for a, b, c in (l.split(",") for l in out[1:])]
    random.Random(404).shuffle(pts)
    return pts


def clustered_points(n, d):
    rnd = random.Random(202 + 1000 * d)
    blobs = [((0.25, 0.30, 0.6), 0.05, 0.5), ((0.70, 0.75, 0.3), 0.08, 0.3), ((0.75, 0.25, 0.8), 0.04, 0.2)]
    out = []
    for _ in range(n):
        c, sd, _ = rnd.choices(blobs, [b[2] for b in blobs])[0]
        out.append(tuple(min(1.0, max(0.0, rnd.gauss(c[k], sd))) for k in range(d)))
    return out


def run_d(a, d, variants):
    """d = 1 or 3: hypercube's variants against the uniform baseline (bench_range_hypercube)."""
    b = os.path.join(os.path.dirname(a.bin), "bench_range_hypercube")
    n = a.steps * a.per_step
    streams = {"clmfires": lambda: [p[:d] if d == 1 else p for p in clmfires_points_3d()],
               "clustered": lambda: clustered_points(n, d)}
    for name in a.streams.split(","):
        if name not in streams:
            continue
        path = os.path.join(a.work, f"{name}_d{d}.csv")
        with open(path, "w") as f:
            for i, p in enumerate(streams[name]()[:n]):
                f.write(f"{i // a.per_step + 1}," + ",".join(repr(v) for v in p) + "\n")
        for eps in (float(e) for e in a.epsilons.split(",")):
            res = {}
            for label, method, variant in [("uniform", "uniform", None)] + [
                    (f"hypercube/{v}", "hypercube", v) for v in variants]:
                runs = []
                for k in range(1, a.keys + 1):
                    cmd = ["nice", "-n", "10", b, "--points", path, "--dims", str(d), "--method", method,
                           "--epsilon", str(eps), "--key", str(k)] + (["--variant", variant] if variant else [])
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                    runs.append({int(r.split()[4]): statistics.mean(float(v) for v in r.split()[6:9])
                                 for r in out.splitlines()})
                res[label] = runs
            steps = sorted(res["uniform"][0])
            mean = {l: [statistics.mean(r[s] for r in runs) for s in steps] for l, runs in res.items()}
            print(f"\n## {name} d={d} eps={eps:g} ({a.keys} keys; mean of S/M/L rel_err)")
            print("| step | t | " + " | ".join(mean) + " |")
            for i, s in enumerate(steps):
                print(f"| {s} | {s * a.per_step} | " + " | ".join(f"{mean[l][i]:.3f}" for l in mean) + " |")
            for l in mean:
                if l.startswith("hypercube"):
                    above = sum(mean[l][i] > mean["uniform"][i] for i in range(len(steps)))
                    worst = max(mean[l][i] / mean["uniform"][i] for i in range(len(steps)))
                    print(f"{l} d={d}: above uniform at {above}/{len(steps)} steps (worst {worst:.2f}x); last step "
                          f"{mean[l][-1] / mean['uniform'][-1]:.2f}x uniform", flush=True)


def write_stream(work, name, pts, steps, per, queries):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    pts = pts[:steps * per]
    if len(pts) < steps * per:
        sys.exit(f"vs_spatial.py: {name} has {len(pts)} points, fewer than {steps}·{per}")
    with open(os.path.join(d, "points.csv"), "w") as f:
        f.write("step,move,x,y\n")
        for i, (x, y) in enumerate(pts):
            f.write(f"{i // per + 1},1,{x!r},{y!r}\n")
    with open(os.path.join(d, "stream.json"), "w") as f:
        f.write('{"steps": %d}\n' % steps)
    with open(os.path.join(d, "queries.csv"), "w") as f:
        f.write(queries)
    return d


def run(a, data, method, eps, key, variant=None):
    cmd = ["nice", "-n", "10", a.bin, "--data", data, "--method", method, "--epsilon", str(eps), "--key", str(key),
           "--every", "1", "--max-depth", "20"]
    if variant:
        cmd += ["--variant", variant]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [l.split() for l in out.splitlines() if l.strip()]
    # step 1 is not evaluated by --every (t > 1 only); the bench evaluates steps 2..; add step 1 below
    return {int(r[4]): (statistics.mean(float(v) for v in r[5:8]), [float(v) for v in r[5:8]], int(r[8]))
            for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", default="clmfires,motion,circles,drops")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--variants", default="paper,dense")
    ap.add_argument("--per-step", type=int, default=300)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--phdstream-repo", default="/work/.mirror/k-girish+phdstream/repo")
    ap.add_argument("--work", default="/tmp/hc_vs_spatial")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bench_accuracy_spatial"))
    ap.add_argument("--csv", default=None, help="write every (stream, eps, method, key, step, err) row here")
    ap.add_argument("--dims", type=int, default=2, help="1 or 3: against the uniform baseline only")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.dims != 2:
        return run_d(a, a.dims, a.variants.split(","))
    motion_q = os.path.join(a.work, "motion_src", "queries.csv")
    motion_points(a.work, a.phdstream_repo)
    queries = open(motion_q).read()
    n = a.steps * a.per_step
    gens = {"clmfires": clmfires_points, "motion": lambda: motion_points(a.work, a.phdstream_repo),
            "circles": lambda: circles_points(n), "drops": lambda: drops_points(a.steps, a.per_step)}
    methods = [("spatial", "phdstream", None), ("uniform", "uniform", None)]
    for v in a.variants.split(","):
        methods.append((f"hypercube/{v}", "hypercube", v))
    out_rows = []
    for name in a.streams.split(","):
        data = write_stream(a.work, name, gens[name](), a.steps, a.per_step, queries)
        for eps in (float(e) for e in a.epsilons.split(",")):
            res = {}
            for label, method, variant in methods:
                runs = [run(a, data, method, eps, k, variant) for k in range(1, a.keys + 1)]
                res[label] = runs
                for k, r in enumerate(runs, 1):
                    for step, (m, sml, syn) in sorted(r.items()):
                        out_rows.append([name, eps, label, k, step, m] + sml + [syn])
            steps = sorted(res["uniform"][0])
            mean = {l: [statistics.mean(r[s][0] for r in runs) for s in steps] for l, runs in res.items()}
            print(f"\n## {name} eps={eps:g} ({a.keys} keys; error = mean of S/M/L rel_err, mean over keys)")
            print("| step | t | " + " | ".join(mean) + " | " +
                  " | ".join(f"{l}/uniform" for l in mean if l.startswith("hypercube")) + " |")
            for i, s in enumerate(steps):
                ratios = [mean[l][i] / mean["uniform"][i] for l in mean if l.startswith("hypercube")]
                print(f"| {s} | {s * a.per_step} | " + " | ".join(f"{mean[l][i]:.3f}" for l in mean) + " | " +
                      " | ".join(f"{x:.2f}" for x in ratios) + " |")
            for l in mean:
                if not l.startswith("hypercube"):
                    continue
                above = sum(mean[l][i] > mean["uniform"][i] for i in range(len(steps)))
                worst = max(mean[l][i] / mean["uniform"][i] for i in range(len(steps)))
                last = [statistics.mean(r[steps[-1]][1][z] for r in res[l]) for z in range(3)]
                sp = [statistics.mean(r[steps[-1]][1][z] for r in res["spatial"]) for z in range(3)]
                print(f"{l}: above uniform at {above}/{len(steps)} steps (worst {worst:.2f}x); last step "
                      f"{mean[l][-1] / mean['uniform'][-1]:.2f}x uniform, {mean[l][-1] / mean['spatial'][-1]:.2f}x "
                      f"spatial (S/M/L {last[0]:.3f}/{last[1]:.3f}/{last[2]:.3f} vs spatial "
                      f"{sp[0]:.3f}/{sp[1]:.3f}/{sp[2]:.3f}); spatial/uniform {mean['spatial'][-1] / mean['uniform'][-1]:.2f}",
                      flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["stream", "eps", "method", "key", "step", "err", "err_s", "err_m", "err_l", "synthetic"])
            w.writerows(out_rows)


if __name__ == "__main__":
    main()
