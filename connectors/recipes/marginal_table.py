"""marginal_table.py — shared by the recipes that turn a public R panel (package plm) into a categorical
table for bench_accuracy_marginal (nlsy/make_marginal_table.py: Males; wages/make_marginal_table.py:
Wages).  Owns the table format and the streams; calls Rscript (the export) and nothing of dpstream.

A table is DIR/table.csv (stream,step,id,<attributes>: category indices) and DIR/attributes.json
([{name, categories}]), read by `bench_accuracy_marginal --data DIR --table table.csv`.  Three
insert-only streams, PREFIX/…:
  by-year           the panel's own order: step y = every row of the panel's y-th period
  randomized-bs50   all rows in a fixed pseudo-random order (random.Random(seed)), 50 a step
  randomized-bs200  the same order, 200 a step
The domains are fixed by each recipe from the variables' meaning, never read from the data."""
import argparse, csv, json, os, subprocess, sys


def export_plm(dataset, out_csv):
    """Write plm's data set `dataset` as CSV (factors as their labels, NA as "")."""
    r = (f'suppressPackageStartupMessages(data("{dataset}", package = "plm")); '
         f'write.csv({dataset}, "{out_csv}", row.names = FALSE, na = "")')
    subprocess.run(["Rscript", "-e", r], check=True)


def bin_of(x, edges):
    """The bin of x among the fixed edges e_0 < e_1 < …: 0 below e_0, i for e_{i-1} <= x < e_i."""
    v = float(x)
    return sum(1 for e in edges if v >= e)


def bin_labels(edges, fmt=str):
    return [f"<{fmt(edges[0])}"] + [f"{fmt(a)}-{fmt(b)}" for a, b in zip(edges, edges[1:])] + [f">={fmt(edges[-1])}"]


def encode_categories(row, domain, binned):
    """Category indices of one row: binned[name](value) for binned attributes, else the label's index."""
    out = []
    for name, cats in domain:
        if name in binned:
            out.append(binned[name](row[name]))
            continue
        v = row[name] if row[name] != "" else "missing"
        if v not in cats:
            sys.exit(f"marginal_table: {name} = {v!r} is outside the fixed domain")
        out.append(cats.index(v))
    return out


def write_table(out, prefix, domain, enc, seed):
    """enc: [(row id, period 1.., category indices)].  Writes the three streams and attributes.json."""
    import random
    shuffled = list(enc)
    random.Random(seed).shuffle(shuffled)
    with open(os.path.join(out, "table.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stream", "step", "id"] + [n for n, _ in domain])
        for rid, period, vals in sorted(enc, key=lambda e: (e[1], e[0])):
            w.writerow([f"{prefix}/by-year", period, rid] + vals)
        for bs in (50, 200):
            for i, (rid, _, vals) in enumerate(shuffled):
                w.writerow([f"{prefix}/randomized-bs{bs}", i // bs + 1, rid] + vals)
    json.dump([{"name": n, "categories": c} for n, c in domain], open(os.path.join(out, "attributes.json"), "w"),
              indent=1)
    print(f"marginal_table: {len(enc)} rows, {len(domain)} attributes -> {out}/table.csv")


def main(name, export, encode_rows, domain, seed=39):
    """The recipes' command line: --out DIR [--NAME NAME.csv]; without --NAME, export(DIR/NAME.csv) first.
    encode_rows(list of CSV dicts) -> [(row id, period, category indices)]; streams NAME/…"""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--" + name)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    src = getattr(a, name) or os.path.join(a.out, name + ".csv")
    if not getattr(a, name):
        export(src)
    write_table(a.out, name, domain, encode_rows(list(csv.DictReader(open(src)))), seed)
