#!/usr/bin/env python3
"""make_marginal_table.py — the PSID "Wages" panel shipped with the R package plm (Cornwell and Rupert
1988: 595 heads of household observed every year 1976-1982, 4 165 rows) as a categorical table for
`marginal`: a second held-out check of bench_accuracy_marginal (its methods are tuned on Adult only;
this table is read only to report, never to choose a setting).

  python3 connectors/recipes/wages/make_marginal_table.py --out DIR [--wages wages.csv]

Without --wages it exports the data set with Rscript (needs plm: scripts/install-deps.sh installs it).
plm's Wages has no id or year column: its rows are the 595 people in turn, each one's 7 years in order,
so row i is person i // 7 + 1 in year 1976 + i % 7. Writes DIR/table.csv and DIR/attributes.json in
bench_accuracy_marginal's format (connectors/recipes/marginal_table.py: streams wages/by-year, 7 steps
of 595; wages/randomized-bs50, 84 steps; wages/randomized-bs200, 21 steps; order seed 39).

12 attributes. The binning is fixed here from what the variables mean (chosen before any run):
  exp      years of full-time work experience: <5, 5-9, 10-19, 20-29, 30-39, >=40 (career stages)
  wks      weeks worked in the year: <40, 40-47, 48-51, 52 (part year ... every week)
  ed       years of education: <12 (no high-school diploma), 12 (high school), 13-15 (some college),
           16 (college), >=17 (graduate)
  lwage    log wage: quarter-log steps from 6.0 to 7.5 (each ~28 % higher): <6, 6-6.25, ..., >=7.5
  bluecol, ind (manufacturing), south, smsa, married, sex, union, black: as given (2 categories each).
The privacy unit the benchmark uses is a row (one person-year), as for Adult."""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from marginal_table import bin_labels, bin_of, encode_categories, export_plm, main  # noqa: E402

EXP_EDGES = [5, 10, 20, 30, 40]
WKS_EDGES = [40, 48, 52]
ED_EDGES = [12, 13, 16, 17]
LWAGE_EDGES = [6.0, 6.25, 6.5, 6.75, 7.0, 7.25, 7.5]
NO_YES = ["no", "yes"]
DOMAIN = [
    ("exp", bin_labels(EXP_EDGES)),
    ("wks", ["<40", "40-47", "48-51", "52"]),
    ("bluecol", NO_YES),
    ("ind", ["0", "1"]),
    ("south", NO_YES),
    ("smsa", NO_YES),
    ("married", NO_YES),
    ("sex", ["male", "female"]),
    ("union", NO_YES),
    ("ed", ["<12", "12", "13-15", "16", ">=17"]),
    ("black", NO_YES),
    ("lwage", bin_labels(LWAGE_EDGES)),
]
BINNED = {"exp": lambda x: bin_of(x, EXP_EDGES), "wks": lambda x: bin_of(x, WKS_EDGES),
          "ed": lambda x: bin_of(x, ED_EDGES), "lwage": lambda x: bin_of(x, LWAGE_EDGES)}


def encode_rows(rows):
    if len(rows) != 4165:
        sys.exit(f"make_marginal_table: {len(rows)} rows, expected 595 x 7 = 4165")
    return [(f"w{i // 7 + 1}-{1976 + i % 7}", i % 7 + 1, encode_categories(r, DOMAIN, BINNED))
            for i, r in enumerate(rows)]


if __name__ == "__main__":
    main("wages", lambda out: export_plm("Wages", out), encode_rows, DOMAIN)
