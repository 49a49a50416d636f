#!/usr/bin/env python3
"""make_updates.py — point streams for the `spatial` synthesizer (seed 002).
See README.md.  Data sets are never committed: they are read from where the
caller fetched them, or generated.

  make_updates.py motion-circles --repo PATH --out DIR
      The PHDStream authors' own stream, data/motion_circles/ of
      k-girish/phdstream (PATH: a checkout, or a bare git directory such as
      the `fetch` tool's mirror): 74 907 inserts/deletes of points, rescaled
      per column to [0,1] as the authors did (their pickle equals the CSV
      min-max rescaled), and their 16 000 range queries.  Steps as in their
      main.py: the first int(0.1 * rows) rows are step 1, then 500 rows per
      step; their run has 149 batches after the first (the last 14 empty),
      so the stream has 150 steps, steps 137..150 closed with no data.
  make_updates.py circles --out DIR [--n 50000] [--seed 1] [--insert-only]
      Our own generator of the paper's two concentric-circle scenarios
      (seed 002 §5.1, the authors' toy_dataset.moving_from_one_cluster_to_others):
      points of the outer circle are inserted; then, one by one, a point of
      the outer circle is deleted and a point of the inner circle inserted
      ("with deletion"), or with --insert-only the inner circle's points are
      inserted after the outer ones and nothing is deleted.
      Radii 1 and 0.667, Gaussian noise 0.05, rescaled by the PUBLIC box
      [-1.25, 1.25]^2 -> [0,1]^2 (no data-dependent rescaling).
  make_updates.py clmfires --out DIR [--rscript Rscript]
      Forest fires in Castilla-La Mancha 1998-2007 (spatstat.data's clmfires,
      Debian r-cran-spatstat.data), one row per fire with its date: written
      as clmfires.csv for `dpstream load --time-column` (one step per month).

Every subcommand writes DIR/points.csv (step,move,x,y; move +1 insert / -1
delete), DIR/updates.jsonl (INSERT/DELETE updates, each with an entity,
and a CLOSE_STEP per step, for `dpstream replay`), DIR/dpstream.json (a
config routing the stream to `spatial`), DIR/stream.json (its name and
number of steps, some of which may be empty) and, where the source has
them, DIR/queries.csv (x1,y1,x2,y2,size).
"""
import argparse
import csv
import io
import json
import math
import os
import random
import struct
import subprocess
import sys

STEP0_SHARE = 0.1
BATCH = 500


def git_or_file(repo, path):
    """The bytes of path in a checkout, or at HEAD of a (bare) git directory."""
    full = os.path.join(repo, path)
    if os.path.exists(full):
        return open(full, "rb").read()
    return subprocess.run(["git", "--git-dir", repo, "show", f"HEAD:{path}"], check=True,
                          capture_output=True).stdout


def shp_rectangles(shp):
    """Bounding boxes of the polygon records of an ESRI shapefile (.shp bytes):
    the authors' queries are axis-aligned rectangles, so a record's box is
    the rectangle.  Header 100 bytes; each record: 8-byte header (big
    endian number, length in 16-bit words), then shape type and the box
    (4 little-endian doubles)."""
    out, off = [], 100
    while off + 8 <= len(shp):
        _, words = struct.unpack(">ii", shp[off:off + 8])
        body = shp[off + 8:off + 8 + 2 * words]
        if struct.unpack("<i", body[:4])[0] != 0:   # 0 = null shape
            out.append(struct.unpack("<4d", body[4:36]))
        off += 8 + 2 * words
    return out


def dbf_column(dbf, name):
    """One character column of a dBASE III table (.dbf bytes)."""
    nrec, hlen, rlen = struct.unpack("<IHH", dbf[4:12])
    fields, off, pos = [], 32, 1
    while dbf[off] != 0x0D:
        fname = dbf[off:off + 11].split(b"\0")[0].decode()
        flen = dbf[off + 16]
        fields.append((fname, pos, flen))
        pos += flen
        off += 32
    for fname, fpos, flen in fields:
        if fname == name:
            return [dbf[hlen + i * rlen + fpos:hlen + i * rlen + fpos + flen].decode().strip() for i in range(nrec)]
    raise SystemExit(f"make_updates: the .dbf has no column {name!r} (has {[f[0] for f in fields]})")


def write_stream(out, stream, steps, config, queries=None):
    """steps: list (step 1..) of lists of (move, x, y)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "points.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "move", "x", "y"])
        for t, rows in enumerate(steps, 1):
            for move, x, y in rows:
                w.writerow([t, move, repr(x), repr(y)])
    # Every insert is its own entity ("p<n>"), and a delete names the entity
    # of the oldest live insert of its point: dpstream refuses a DELETE
    # without an entity (ENTITY_REQUIRED — matched by value it would depend
    # on who else holds the point).  The sources have no ids; pairing by
    # value keeps the stream the one they describe.
    live, n = {}, 0
    with open(os.path.join(out, "updates.jsonl"), "w") as f:
        for t, rows in enumerate(steps, 1):
            for move, x, y in rows:
                held = live.setdefault((x, y), [])
                if move > 0 or not held:   # an unmatched delete gets a fresh entity: NOT_PRESENT
                    entity, n = f"p{n}", n + 1
                    if move > 0:
                        held.append(entity)
                else:
                    entity = held.pop(0)
                f.write(json.dumps({"stream": stream, "step": t, "kind": "INSERT" if move > 0 else "DELETE",
                                    "entity": entity, "point": [x, y]}, separators=(",", ":")) + "\n")
            f.write(json.dumps({"stream": stream, "step": t, "kind": "CLOSE_STEP"}, separators=(",", ":")) + "\n")
    json.dump({"streams": [{"match": stream, "synthesizer": "spatial", "config": config}]},
              open(os.path.join(out, "dpstream.json"), "w"), indent=1)
    json.dump({"stream": stream, "steps": len(steps), "updates": sum(len(r) for r in steps)},
              open(os.path.join(out, "stream.json"), "w"))
    if queries:
        with open(os.path.join(out, "queries.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["x1", "y1", "x2", "y2", "size"])
            w.writerows(queries)
    n = sum(len(r) for r in steps)
    print(f"make_updates: {out}: {n} updates over {len(steps)} steps"
          + (f", {len(queries)} queries" if queries else ""), file=sys.stderr)


def batches(rows, first):
    """Step 1 = rows[:first], then BATCH rows per step."""
    steps = [rows[:first]]
    for i in range(first, len(rows), BATCH):
        steps.append(rows[i:i + BATCH])
    return steps


def motion_circles(a):
    raw = git_or_file(a.repo, "data/motion_circles/motion_circles.csv").decode()
    r = list(csv.DictReader(io.StringIO(raw)))
    xs, ys = [float(x["x"]) for x in r], [float(x["y"]) for x in r]
    # the authors' rescaling (data-dependent: the min and max of the whole
    # stream), kept only so that their queries apply to the same points
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    rows = [(int(float(x["move"])), (float(x["x"]) - x0) / (x1 - x0), (float(x["y"]) - y0) / (y1 - y0)) for x in r]
    first = int(STEP0_SHARE * len(rows))
    steps = batches(rows, first)
    # main.py: n_batches = len(all) // 500 counts the initial rows too, so
    # its last batches are empty; they still close (and count noise)
    n_batches = len(rows) // BATCH
    steps += [[] for _ in range(1 + n_batches - len(steps))]
    shp = git_or_file(a.repo, "data/motion_circles/motion_circles_queries.shp")
    dbf = git_or_file(a.repo, "data/motion_circles/motion_circles_queries.dbf")
    rects = shp_rectangles(shp)
    sizes = dbf_column(dbf, "size") if b"size" in dbf[:4096] else ["?"] * len(rects)
    queries = [(x1, y1, x2, y2, s) for (x1, y1, x2, y2), s in zip(rects, sizes)]
    cfg = {"box": [[0, 1], [0, 1]], "epsilon": 1.0, "max_depth": 20, "counter": "simple", "horizon": len(steps)}
    write_stream(a.out, "circles/motion", steps, cfg, queries)


def circles(a):
    rnd = random.Random(a.seed)

    def point(radius):
        t = rnd.uniform(0, 2 * math.pi)
        x, y = radius * math.cos(t) + rnd.gauss(0, 0.05), radius * math.sin(t) + rnd.gauss(0, 0.05)
        # the PUBLIC box [-1.25, 1.25]^2, clamped: no data-dependent scaling
        return tuple(min(1.0, max(0.0, round((v + 1.25) / 2.5, 9))) for v in (x, y))

    outer = [point(1.0) for _ in range(a.n)]
    inner = [point(0.667) for _ in range(a.n)]
    rows = [(1,) + p for p in outer]
    for i in range(a.n):
        if not a.insert_only:
            rows.append((-1,) + outer[i])
        rows.append((1,) + inner[i])
    steps = batches(rows, int(STEP0_SHARE * len(rows)))
    cfg = {"box": [[0, 1], [0, 1]], "epsilon": 1.0, "max_depth": 20, "counter": "simple", "horizon": len(steps)}
    write_stream(a.out, "circles/inserts" if a.insert_only else "circles/generated", steps, cfg)


def clmfires(a):
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "clmfires.csv")
    script = ("suppressMessages(library(spatstat.data)); data(clmfires); m <- clmfires$marks; "
              "w <- clmfires$window$xrange; h <- clmfires$window$yrange; "
              "d <- data.frame(x = clmfires$x, y = clmfires$y, date = format(m$date, '%Y-%m-%d'), "
              "cause = m$cause, burnt = m$burnt.area); "
              f"write.csv(d, '{path}', row.names = FALSE); "
              "cat(w, h, '\\n')")
    res = subprocess.run([a.rscript, "-e", script], check=True, capture_output=True, text=True)
    xr0, xr1, yr0, yr1 = map(float, res.stdout.split())
    rows = list(csv.DictReader(open(path)))
    # one step per month from January 1998 (the data's first month; public)
    for r in rows:
        y, m = int(r["date"][:4]), int(r["date"][5:7])
        r["month"] = (y - 1998) * 12 + m
    rows.sort(key=lambda r: (r["month"], r["date"]))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "month", "date", "x", "y", "cause", "burnt"])
        for i, r in enumerate(rows):
            w.writerow([f"fire{i}", r["month"], r["date"], r["x"], r["y"], r["cause"], r["burnt"]])
    # the window's bounding box (the region's map, public), rounded out to km
    box = [[math.floor(xr0), math.ceil(xr1)], [math.floor(yr0), math.ceil(yr1)]]
    months = max(r["month"] for r in rows)
    cfg = {"box": box, "epsilon": 1.0, "max_depth": 16, "counter": "simple", "horizon": months}
    json.dump({"streams": [{"match": "clm/fires", "synthesizer": "spatial", "config": cfg}]},
              open(os.path.join(a.out, "dpstream.json"), "w"), indent=1)
    print(f"make_updates: {path}: {len(rows)} fires over {months} months, box {box}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("motion-circles")
    p.add_argument("--repo", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("circles")
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=50000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--insert-only", action="store_true")
    p = sub.add_parser("clmfires")
    p.add_argument("--out", required=True)
    p.add_argument("--rscript", default="Rscript")
    a = ap.parse_args()
    {"motion-circles": motion_circles, "circles": circles, "clmfires": clmfires}[a.cmd](a)


if __name__ == "__main__":
    main()
