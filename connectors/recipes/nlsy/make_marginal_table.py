#!/usr/bin/env python3
"""make_marginal_table.py — the NLSY "Males" panel (plm; 545 young men, 1980-1987) as a categorical
table for `marginal`: the held-out check of bench_accuracy_marginal (its methods are tuned on Adult
only; this table is read only to report, never to choose a setting).

  python3 connectors/recipes/nlsy/make_marginal_table.py --out DIR [--males males.csv]

Without --males it runs export_males.R (needs Rscript with plm: make_updates.sh says how to install).
Writes DIR/table.csv (stream,step,id,<10 attributes>) and DIR/attributes.json ([{name, categories}])
in bench_accuracy_marginal's format (--data DIR --table table.csv). Two insert-only streams:
  males/by-year         the panel's own order: step y = the 545 rows of year 1979+y (8 steps)
  males/randomized-bs50 the 4 360 rows in a fixed pseudo-random order (seed 39), 50 a step (88 steps)
  males/randomized-bs200 the same order, 200 a step (22 steps)
The domain is fixed in this file, not read from the data: school 3-16 years, experience 0-18 years,
log hourly wage in 9 bins at fixed edges, residence with a "missing" category (1 245 rows have none).
The privacy unit the benchmark uses is a row (one man-year), as for Adult; protecting each man's whole
history would need max_rows_per_user = 8 (group privacy over his 8 rows)."""
import os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from marginal_table import bin_of, encode_categories, main  # noqa: E402  (connectors/recipes/)

WAGE_EDGES = [0.0, 0.5, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5]          # log hourly wage: 9 bins
DOMAIN = [
    ("school", [str(v) for v in range(3, 17)]),
    ("exper", [str(v) for v in range(0, 19)]),
    ("union", ["no", "yes"]),
    ("ethn", ["other", "black", "hisp"]),
    ("married", ["no", "yes"]),
    ("health", ["no", "yes"]),
    ("wage", ["<0"] + [f"{a}-{b}" for a, b in zip(WAGE_EDGES, WAGE_EDGES[1:])] + [">=2.5"]),
    ("industry", ["Agricultural", "Mining", "Construction", "Trade", "Transportation", "Finance",
                  "Business_and_Repair_Service", "Personal_Service", "Entertainment", "Manufacturing",
                  "Professional_and_Related Service", "Public_Administration"]),
    ("occupation", ["Professional, Technical_and_kindred", "Managers, Officials_and_Proprietors",
                    "Sales_Workers", "Clerical_and_kindred", "Craftsmen, Foremen_and_kindred",
                    "Operatives_and_kindred", "Laborers_and_farmers", "Farm_Laborers_and_Foreman",
                    "Service_Workers"]),
    ("residence", ["missing", "rural_area", "north_east", "nothern_central", "south"]),
]


def encode_rows(rows):
    wage = {"wage": lambda x: bin_of(x, WAGE_EDGES)}
    return [(f"m{r['nr']}-{r['year']}", int(r["year"]) - 1979, encode_categories(r, DOMAIN, wage)) for r in rows]


if __name__ == "__main__":
    main("males", lambda out: subprocess.run(["Rscript", os.path.join(HERE, "export_males.R"), out], check=True),
         encode_rows, DOMAIN)
