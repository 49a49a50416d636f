#!/usr/bin/env bash
# load_memory.sh — `dpstream load` memory does not grow with the length of
# a line (issue 13.3): a CSV with a 100 MB line of commas and a JSONL with
# a 100 MB line are each loaded; the over-long record is reported as a bad
# row (TOO_LONG) with its line number, the rows around it are loaded, and
# the process's peak RSS stays under 150 MB (it was 1.6 GB).
# Usage: bash load_memory.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: load_memory.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
big = 100 * 1024 * 1024
with open(f"{w}/big.csv", "w") as f:
    f.write("person,t,v\na,1,0\n")
    f.write("," * big + "\n")
    f.write("b,1,1\n")
with open(f"{w}/big.jsonl", "w") as f:
    f.write('{"person":"a","t":1,"v":0}\n')
    f.write('{"person":"' + "x" * big + '","t":1,"v":1}\n')
    f.write('{"person":"b","t":1,"v":1}\n')
PY
echo '{"stream": "s", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/map.json"
status=0
for name in big.csv big.jsonl; do   # one measuring process each: ru_maxrss of children is a running max
python3 - "$BIN" "$WORK" "$name" <<'PY' || status=1
import json, resource, subprocess, sys
binary, w, name = sys.argv[1], sys.argv[2], sys.argv[3]
ok = True
if True:
    r = subprocess.run([binary, "load", "--input", f"{w}/{name}", "--mapping", f"{w}/map.json",
                        "--out", f"{w}/{name}.out", "--rejects", f"{w}/{name}.rej", "--quiet"],
                       capture_output=True, text=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = open(f"{w}/{name}.out").read().splitlines() if r.returncode == 0 else []
    rej = [json.loads(l) for l in open(f"{w}/{name}.rej")] if r.returncode == 0 else []
    print(f"load_memory: {name}: exit {r.returncode}, {len(rows)} updates, rejects "
          f"{[(x['line'], x['reason']) for x in rej]}, peak RSS {peak_mb:.0f} MB")
    if r.returncode != 0 or len(rows) != 2 or [(x["line"], x["reason"]) for x in rej] != [(3 if name.endswith("csv") else 2, "TOO_LONG")]:
        print("  FAIL:", r.stderr[-300:]); ok = False
    if peak_mb >= 150:
        print(f"  FAIL: peak RSS {peak_mb:.0f} MB >= 150 MB"); ok = False
sys.exit(0 if ok else 1)
PY
done
exit $status
