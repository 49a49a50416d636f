#!/usr/bin/env bash
# readme_release_timing.sh — the README's privacy section states the
# release-timing channel (issue 36 item 7; docs/privacy.md §1 counts "the
# time a release appears" among what a stream publishes), and its figures
# are the ones bench/RESULTS.md "release timing (issue 36 item 7)" measured:
#   * a bullet in "Privacy semantics in plain words" names the Kafka
#     timestamp (CreateTime), the topic setting `message.timestamp.type=
#     LogAppendTime` and what it does not remove, and the benchmark;
#   * hypercube's "released A–B ms later (C–D ms later committed)" are the
#     min–max of the per-step B − A columns of RESULTS' step table;
#     marginal's "committed a–b → c–d ms" are steps 2 and 8's seen medians;
#     hypercube's "x–y ms instead of u–v ms" are the new-level and the other
#     steps' manifest medians; "within ±N ms" is the largest |B − A| at the
#     manifest of every scenario said not to depend on the data;
#   * every other range in the bullet appears verbatim in RESULTS.
# Usage: bash readme_release_timing.sh [path/to/dpstream]   (the binary is not used)
set -euo pipefail
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$SRC/README.md" "$SRC/bench/RESULTS.md" "$SRC" <<'PY'
import os, re, sys
readme, results, src = (open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3])
def fail(msg):
    sys.exit("FAIL: " + msg)
# the privacy section and its timing bullet
m = re.search(r"^## Privacy semantics in plain words\n(.*?)^## ", readme, re.S | re.M)
if not m:
    fail("README has no 'Privacy semantics in plain words' section")
sec = m.group(1)
b = re.search(r"^\* \*\*Release timing[^\n]*\n(?:  [^\n]*\n)*", sec, re.M)
if not b:
    fail("the privacy section has no '* **Release timing' bullet")
bullet = " ".join(b.group(0).split())
for must in ("CreateTime", "`message.timestamp.type=LogAppendTime`", "read_committed", "CLOSE_STEP",
             "`bench/release_timing/run.sh`", "release timing (issue 36 item 7)", "hypercube", "fixed public schedule"):
    if must not in bullet:
        fail(f"the release-timing bullet does not say {must!r}")
if not os.path.exists(os.path.join(src, "bench/release_timing/run.sh")):
    fail("bench/release_timing/run.sh is missing")
# RESULTS' section and its tables
r = re.search(r"^## release timing \(issue 36 item 7\)\n(.*?)(?=^## |\Z)", results, re.S | re.M)
if not r:
    fail("bench/RESULTS.md has no '## release timing (issue 36 item 7)' section")
res = r.group(1)
res_flat = " ".join(res.split())
def num(x):
    return float(x.replace("−", "-").replace("+", ""))
def mmm(cell):   # "min / median / max"
    return [num(v) for v in cell.split("/")]
steps, summary = {}, {}
for line in res.splitlines():
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) != 7 and len(c) != 8:
        continue
    s = re.match(r"(marginal|hypercube) (\d+)( \(new level\))?$", c[0])
    if s and len(c) == 7:
        d = [num(v) for v in c[6].split("/")]
        steps[(s.group(1), int(s.group(2)))] = {"new": bool(s.group(3)), "A": mmm(c[2]), "B": mmm(c[3]),
                                                "As": mmm(c[4]), "Bs": mmm(c[5]), "d": d}
    elif len(c) == 8 and re.match(r"(window|cumulative|adaptive)", c[0]):
        summary[c[0]] = [num(v) for v in c[6].split("/")]
hyp = {t: v for (sc, t), v in steps.items() if sc == "hypercube"}
mar = {t: v for (sc, t), v in steps.items() if sc == "marginal"}
if len(hyp) < 5 or len(mar) < 5 or len(summary) < 4:
    fail(f"could not read RESULTS' tables: {len(hyp)} hypercube steps, {len(mar)} marginal, {len(summary)} summary rows")
def rng(xs):
    return f"{min(xs):g}–{max(xs):g}"
checks = 0
def expect(pattern, want, what):
    global checks
    m = re.search(pattern, bullet)
    if not m:
        fail(f"the bullet does not state {what} (/{pattern}/)")
    got = "–".join(m.groups()) if len(m.groups()) == 2 else m.group(1)
    if got != want:
        fail(f"{what}: README says {got}, RESULTS' tables give {want}")
    checks += 1
expect(r"released (\d+)–(\d+) ms later", rng([v["d"][0] for v in hyp.values()]), "hypercube's B − A at the manifest")
expect(r"\((\d+)–(\d+) ms later committed\)", rng([v["d"][1] for v in hyp.values()]), "hypercube's B − A committed")
first, last = min(mar), max(mar)
expect(r"committed (\d+)–(\d+) →", rng([mar[first]["As"][1], mar[first]["Bs"][1]]), f"marginal step {first}'s seen medians")
expect(r"→ (\d+)–(\d+) ms after the marker", rng([mar[last]["As"][1], mar[last]["Bs"][1]]), f"marginal step {last}'s seen medians")
expect(r"(\d+)–(\d+) ms instead of", rng([x for v in hyp.values() if v["new"] for x in (v["A"][1], v["B"][1])]),
       "hypercube's new-level steps (manifest medians)")
expect(r"instead of (\d+)–(\d+) ms", rng([x for v in hyp.values() if not v["new"] for x in (v["A"][1], v["B"][1])]),
       "hypercube's other steps (manifest medians)")
flat = [abs(v[0]) for v in summary.values()] + [abs(v["d"][0]) for v in mar.values()]
expect(r"within ±(\d+) ms", f"{max(flat):g}", "the largest |B − A| at the manifest of the data-independent scenarios")
# and every other range in the bullet is RESULTS' own
for x in re.findall(r"\d+(?:\.\d+)?–\d+(?:\.\d+)?", bullet):
    if x not in res_flat:
        fail(f"the bullet's figure {x} is not in RESULTS' release-timing section")
    checks += 1
print(f"readme_release_timing: the privacy section states the release-timing channel; {checks} figures agree with bench/RESULTS.md")
PY
