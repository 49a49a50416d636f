#!/usr/bin/env python3
"""guide_plots.py — the two plots of README's "Choosing a synthesizer" (issue 38),
drawn with R (Rscript, already needed for clmfires; base graphics, cairo PNG).

  python3 bench/guide_plots.py [--keys 5] [--out docs] [--work /tmp/guide_plots]

1. docs/guide_small_t.png: range-query relative error against t for `spatial`,
   `hypercube` (variants dense, the default, and paper) and the uniform
   baseline (true count, uniform points) on the same stream — clmfires, 300
   points a step, ε = 1 and 4 — from bench/accuracy_hypercube/vs_spatial.py
   (seed 002's metric; mean over keys).
2. docs/guide_adaptive.png: `adaptive`'s methods against releasing every step,
   MAE over ε on bench_accuracy_adaptive's moving-objects grid (5 000 users,
   16×16 bins, 200 steps; mean over keys).  User-level over the horizon:
   DSAT, DSFT, a fixed release every 10 steps (C = 20 at ε/20), and every step
   (C = 200 at ε/200).  w-event (w = 20): BD, BA, and every step at ε/w (the
   bench's fixed sampler with C = 200 releases at ε' = 10ε: the same
   DLap(w/ε) per bin and step)."""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))


def small_t(a):
    path = os.path.join(a.work, "small_t.csv")
    subprocess.run([sys.executable, os.path.join(HERE, "accuracy_hypercube/vs_spatial.py"), "--streams", "clmfires",
                    "--epsilons", "1,4", "--keys", str(a.keys), "--variants", "dense,paper", "--work", a.work,
                    "--csv", path], check=True, capture_output=True)
    rows = list(csv.DictReader(open(path)))
    agg = {}
    for r in rows:
        agg.setdefault((float(r["eps"]), r["method"], int(r["step"])), []).append(float(r["err"]))
    out = os.path.join(a.work, "small_t_mean.csv")
    with open(out, "w") as f:
        f.write("eps,method,t,err\n")
        for (eps, m, step), v in sorted(agg.items()):
            f.write(f"{eps:g},{m},{step * 300},{statistics.mean(v)}\n")
    return out


def adaptive(a):
    b = os.path.join(ROOT, "build/bench_accuracy_adaptive")
    runs = [("DSAT (user-level)", "dsat", [], 1), ("DSFT (user-level)", "dsft", [], 1),
            ("every 10 steps, C = 20 (user-level)", "fixed", ["--releases", "20"], 1),
            ("every step, C = 200 (user-level)", "fixed", ["--releases", "200"], 1),
            ("BD (w-event, w = 20)", "bd", [], 1), ("BA (w-event, w = 20)", "ba", [], 1),
            ("every step at eps/w (w-event, w = 20)", "fixed", ["--releases", "200"], 10)]
    out = os.path.join(a.work, "adaptive.csv")
    with open(out, "w") as f:
        f.write("method,eps,mae\n")
        for label, m, extra, scale in runs:
            for eps in (0.5, 1, 2, 4):
                maes = []
                for k in range(1, a.keys + 1):
                    o = subprocess.run([b, "--method", m, "--epsilon", str(eps * scale), "--key", str(k), *extra],
                                       check=True, capture_output=True, text=True).stdout
                    maes.append(float(re.search(r"MAE ([\d.]+)", o).group(1)))
                f.write(f"\"{label}\",{eps},{statistics.mean(maes)}\n")
    return out


R = r"""
args <- commandArgs(TRUE)
d <- read.csv(args[1]); png(args[2], width = 1100, height = 460, type = "cairo", pointsize = 15)
par(mfrow = c(1, 2), mar = c(4.2, 4.2, 2.5, 1))
meth <- c("uniform", "spatial", "hypercube/paper", "hypercube/dense")
lab <- c("uniform points, true count", "spatial (add/remove events)", "hypercube, variant paper",
         "hypercube, variant dense (default)")
col <- c("grey40", "#1b9e77", "#d95f02", "#7570b3"); lty <- c(2, 1, 1, 1); pch <- c(NA, 17, 15, 16)
for (e in sort(unique(d$eps))) {
  s <- d[d$eps == e, ]
  plot(NA, xlim = range(s$t), ylim = c(0, max(s$err) * 1.05), xlab = "t (points so far; 300 a step)",
       ylab = "range-query relative error", main = sprintf("clmfires, epsilon = %g", e))
  for (i in seq_along(meth)) { m <- s[s$method == meth[i], ]; m <- m[order(m$t), ]
    lines(m$t, m$err, col = col[i], lty = lty[i], lwd = 2); if (!is.na(pch[i])) points(m$t, m$err, col = col[i], pch = pch[i]) }
  if (e == min(d$eps)) legend("topright", lab, col = col, lty = lty, pch = pch, lwd = 2, bty = "n", cex = 0.85)
}
invisible(dev.off())
a <- read.csv(args[3]); png(args[4], width = 800, height = 520, type = "cairo", pointsize = 15)
par(mar = c(4.2, 4.2, 2.5, 1))
ms <- unique(a$method); col <- c("#1b9e77", "#66a61e", "#e6ab02", "grey40", "#7570b3", "#e7298a", "grey60")
lty <- c(1, 1, 1, 2, 1, 1, 3)
plot(NA, xlim = range(a$eps), ylim = range(a$mae), log = "xy", xlab = "epsilon", ylab = "MAE per bin and step",
     main = "adaptive on the moving-objects grid (5 000 users, 256 bins, 200 steps)")
for (i in seq_along(ms)) { m <- a[a$method == ms[i], ]; lines(m$eps, m$mae, col = col[i], lty = lty[i], lwd = 2)
  points(m$eps, m$mae, col = col[i], pch = 16) }
legend("topright", ms, col = col, lty = lty, lwd = 2, bty = "n", cex = 0.8)
invisible(dev.off())
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    ap.add_argument("--work", default="/tmp/guide_plots")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    s, ad = small_t(a), adaptive(a)
    script = os.path.join(a.work, "plots.R")
    open(script, "w").write(R)
    subprocess.run(["Rscript", script, s, os.path.join(a.out, "guide_small_t.png"), ad,
                    os.path.join(a.out, "guide_adaptive.png")], check=True)
    print(open(ad).read())


if __name__ == "__main__":
    main()
