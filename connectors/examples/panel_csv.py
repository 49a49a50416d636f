#!/usr/bin/env python3
r"""panel_csv.py — `dpstream gen-panel` update JSON lines (stdin) -> the
README's example panel.csv (stdout): one row per person and year,
columns year,person,status with status as a label, the shape of a survey
extract a user would start from.

    dpstream gen-panel --n 300 --steps 6 --categories 2 --stay 0.9 \
        --seed-hex 0101010101010101010101010101010101010101010101010101010101010101 \
      | python3 connectors/examples/panel_csv.py > connectors/examples/panel.csv

tests/cli/readme_walk.sh regenerates it this way and compares it with the
committed copy.  Year = 2000 + step − 1 (mapping.json's origin 2000);
category 0 is "employed", 1 "unemployed"."""
import json
import sys

LABELS = ["employed", "unemployed"]


def main():
    out = sys.stdout
    out.write("year,person,status\n")
    for n, line in enumerate(sys.stdin, 1):
        u = json.loads(line)
        if u.get("kind", "REPORT") != "REPORT":
            continue   # markers: load --close-steps writes its own
        v = u["value"]
        if not isinstance(v, int) or not 0 <= v < len(LABELS):
            sys.exit(f"panel_csv.py: line {n}: value {v!r} is not a category of {LABELS}")
        out.write(f"{1999 + u['step']},{u['entity']},{LABELS[v]}\n")


if __name__ == "__main__":
    main()
