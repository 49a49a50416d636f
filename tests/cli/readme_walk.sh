#!/usr/bin/env bash
# readme_walk.sh — the README, run verbatim, without a broker:
#   * every block marked `<!-- readme-walk -->` (tests/cli/lib/readme_blocks.py)
#     runs in README order in a fresh directory, installed with the README's
#     own `cmake --install build --prefix ~/.local` (HOME is a scratch dir),
#     and must succeed; its outputs are then checked (the install, the
#     replayed and exported releases, window's NONE manifests before k and
#     the single layout's long table);
#   * the shipped example panel.csv is what the command in
#     connectors/examples/panel_csv.py's header makes;
#   * the README's "A secured cluster" config, as written, is accepted by
#     librdkafka (only the connection to an address nobody listens on
#     fails), while the bare "security.protocol": "SASL_SSL" it replaced is
#     refused for want of a Kerberos keytab.
# The blocks marked `kafka` run in tests/integration/readme_walk.sh.
# Usage: bash readme_walk.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: readme_walk.sh path/to/dpstream}")
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$SRC/tests/cli/lib/readme_walk.sh"
unset DPSTREAM_BOOTSTRAP_SERVERS

readme_walk offline "$BIN" "$SRC" "$WORK" || fail "a README block failed (above)"
R=$WORK/repo H=$WORK/home/.local
[ -x "$H/bin/dpstream" ] || fail "cmake --install put no dpstream in ~/.local/bin"
for f in schemas/ReleaseManifest.avsc examples/panel.csv examples/mapping.json examples/consume_releases.py; do
    cmp -s "$H/share/dpstream/$f" "$SRC/$(case $f in schemas/*) echo "$f" ;; *) echo "connectors/$f" ;; esac)" \
        || fail "installed share/dpstream/$f differs from the source tree's"
done
"$H/bin/dpstream" --version | grep -Eq '^dpstream [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version of the installed binary"
[ -s "$R/out/releases.jsonl" ] || fail "the offline example wrote no out/releases.jsonl"

python3 - "$R" <<'PY'
import csv, json, os, sys
r = sys.argv[1]
def check(c, msg):
    if not c:
        sys.exit("FAIL: " + msg)
# the offline example (k = 3, 12 steps) and the load example (k = 3, 6 steps)
for rel, steps in ((f"{r}/out/releases.jsonl", 12), (f"{r}/replay/releases.jsonl", 6)):
    man = [json.loads(l) for l in open(rel) if '"type":"manifest"' in l]
    check([m["step"] for m in man] == list(range(1, steps + 1)), f"{rel}: steps {[m['step'] for m in man]}")
    modes = [m["mode"] for m in man]
    check(modes == ["NONE", "NONE", "FULL"] + ["DELTA"] * (steps - 3), f"{rel}: modes {modes}")
    check(all(m["record_count"] == 0 for m in man[:2]) and man[2]["record_count"] > 0, f"{rel}: record counts")
# loaded from the shipped panel.csv: 300 people x 6 years
upd = [json.loads(l) for l in open(f"{r}/employment.jsonl")]
check(sum(u["kind"] == "REPORT" for u in upd) == 1800, "employment.jsonl: expected 1800 reports")
# per-step export: one file per step, header-only before k
for step in range(1, 7):
    rows = list(csv.reader(open(f"{r}/releases/employment/step-{step:04d}.csv")))
    check((len(rows) == 1) == (step < 3), f"per-step file of step {step}: {len(rows)} lines")
# single: the long table holds exactly the replay's records, one value a line
truth = []
for l in open(f"{r}/replay/releases.jsonl"):
    o = json.loads(l)
    if o["type"] == "record":
        v = o.get("value", o.get("row"))
        for c, x in enumerate(v if isinstance(v, list) else [v], 1):
            truth.append([str(o["step"]), str(o["synthetic_id"]), str(c), str(x)])
rows = list(csv.reader(open(f"{r}/releases-long/employment.csv")))
check(rows[0] == ["step", "synthetic_id", "component", "value"], f"single header {rows[0]}")
check(rows[1:] == truth, "single layout differs from the replay's records")
check({r[2] for r in rows[1:] if r[0] == "3"} == {"1", "2", "3"}, "step 3 rows should have 3 components")
PY

# --- the shipped panel.csv is what its documented command makes ---------------------------
cmdline=$(sed -n '/^    dpstream gen-panel/,/panel\.csv$/p' "$SRC/connectors/examples/panel_csv.py" | sed 's/^    //')
[ -n "$cmdline" ] || fail "no generating command in connectors/examples/panel_csv.py's header"
case "$cmdline" in *'> connectors/examples/panel.csv') ;; *) fail "unexpected command: $cmdline" ;; esac
(cd "$SRC" && PATH="$(dirname "$BIN"):$PATH" bash -euo pipefail -c "${cmdline%> connectors/examples/panel.csv}> $WORK/panel.csv") \
    || fail "the panel.csv command failed"
cmp -s "$WORK/panel.csv" "$SRC/connectors/examples/panel.csv" \
    || fail "connectors/examples/panel.csv is not what its documented command makes"

# --- the security example -----------------------------------------------------------------
python3 "$SRC/tests/cli/lib/readme_blocks.py" "$SRC/README.md" security "$WORK/secure.json"
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
c = json.load(open(f"{w}/secure.json"))
k = c["kafka"]
assert k["security.protocol"] == "SASL_SSL" and k["sasl.mechanisms"].startswith("SCRAM-"), k
del k["sasl.mechanisms"], k["sasl.username"], k["sasl.password"]
json.dump(c, open(f"{w}/kerberos.json", "w"))
PY
"$BIN" check-config --config "$WORK/secure.json" > /dev/null || fail "check-config refuses the security example"
sec_load() {
    local rc=0
    DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 "$BIN" load --input "$SRC/connectors/examples/panel.csv" \
        --mapping "$SRC/connectors/examples/mapping.json" --config "$1" --connect-timeout-ms 1500 --quiet \
        > /dev/null 2> "$2" || rc=$?
    echo "$rc"
}
rc=$(sec_load "$WORK/secure.json" "$WORK/secure.err")
[ "$rc" = 4 ] && grep -q 'cannot reach 127.0.0.1:1 (sasl_ssl://' "$WORK/secure.err" \
    || fail "the security example: exit $rc, $(cat "$WORK/secure.err")"
grep -q 'cannot create' "$WORK/secure.err" && fail "librdkafka refused the security example: $(cat "$WORK/secure.err")"
rc=$(sec_load "$WORK/kerberos.json" "$WORK/kerberos.err")
grep -q 'cannot create the producer.*kerberos' "$WORK/kerberos.err" \
    || fail "control: bare SASL_SSL was expected to need Kerberos: exit $rc, $(cat "$WORK/kerberos.err")"
echo "readme_walk: ok ($(grep -c '^== README block' "$WORK/walk.err") blocks, security example accepted)"
