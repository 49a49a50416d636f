#!/usr/bin/env bash
# demo_cli.sh — `dpstream demo`, the embedded default:
#   * the Kafka demo (real processor on librdkafka's in-process mock
#     cluster, no broker) exits 0 within 30 s and prints all 12 months and
#     the budget ledger;
#   * determinism invariant: same input + same key => same releases, so
#     its per-month tables and ledger are identical, character for
#     character, to the offline demo's (`--offline`, synthesizers driven
#     directly) — for the built-in DEMO key and for another key;
#   * the comparison can fail: a different key changes the synthetic
#     columns (and only those: the true columns stay);
#   * the third stream, a table through `marginal`, prints 12 months;
#   * the fourth, check-ins through `spatial`, prints 12 months;
#   * the fifth, transport modes through `adaptive`, prints 12 months, at
#     most 4 of them new releases;
#   * the sixth, parcel drop-offs through `hypercube`, prints 12 months,
#     each release with exactly as many synthetic drop-offs as true ones.
# Usage: bash demo_cli.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: demo_cli.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

KEY2=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0

# Everything after the title line (which names the mode) must agree.
body() { tail -n +2 "$1"; }

run_kafka() {   # out-file, extra args...
    local out=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    timeout 30 "$BIN" demo "$@" > "$out" 2> "$out.err" || { cat "$out.err" >&2; fail "kafka demo $* failed or took over 30 s"; }
    t1=$(date +%s%N)
    echo "kafka demo $*: $(( (t1 - t0) / 1000000 )) ms"
}

run_kafka "$WORK/kafka.txt"
"$BIN" demo --offline > "$WORK/offline.txt" || fail "offline demo failed"

head -1 "$WORK/kafka.txt" | grep -q "mock cluster" || fail "the default demo does not say it runs on the mock cluster"
head -1 "$WORK/offline.txt" | grep -q "offline" || fail "--offline does not say it is offline"
grep -qE '^ +12 ' "$WORK/kafka.txt" || fail "kafka demo did not print month 12"
grep -q "Privacy budget ledger" "$WORK/kafka.txt" || fail "kafka demo did not print the ledger"
grep -q "EXHAUSTED" "$WORK/kafka.txt" || fail "kafka demo ledger does not show the spent budget"
[ "$(grep -cE '^ +[0-9]+  ' "$WORK/kafka.txt")" -eq 12 ] || fail "kafka demo did not print exactly 12 month rows"
diff <(body "$WORK/offline.txt") <(body "$WORK/kafka.txt") > "$WORK/d1" || { cat "$WORK/d1" >&2; fail "kafka and offline demo differ (DEMO key)"; }

# Another key: still identical between the two paths ...
run_kafka "$WORK/kafka2.txt" --key-hex "$KEY2"
"$BIN" demo --offline --key-hex "$KEY2" > "$WORK/offline2.txt" || fail "offline demo (key 2) failed"
diff <(body "$WORK/offline2.txt") <(body "$WORK/kafka2.txt") > "$WORK/d2" || { cat "$WORK/d2" >&2; fail "kafka and offline demo differ (key 2)"; }

# ... and different from the DEMO key's synthetic numbers, while the true
# ones (columns 2, 4, 8, 10, 12 of the month rows from month 3) are equal.
rows() { grep -E '^ +([3-9]|1[0-2])  ' "$1"; }
[ "$(rows "$WORK/offline.txt" | awk '{print $2, $4, $8, $10, $12}')" = \
  "$(rows "$WORK/offline2.txt" | awk '{print $2, $4, $8, $10, $12}')" ] || fail "true columns depend on the key"
[ "$(rows "$WORK/offline.txt" | awk '{print $3, $5, $9, $11, $13}')" != \
  "$(rows "$WORK/offline2.txt" | awk '{print $3, $5, $9, $11, $13}')" ] || fail "synthetic columns do not depend on the key: the comparison above proves nothing"

# The table stream (marginal, its default method forest): 12 months, the true row counts independent
# of the key, the synthetic ones not.
[ "$(grep -c '^  month ' "$WORK/kafka.txt")" -eq 12 ] || fail "kafka demo did not print 12 table months"
grep -q "marginal/counters+exponential/discrete_laplace, spent eps 1 of 1 (EXHAUSTED)" "$WORK/kafka.txt" \
    || fail "the table's ledger line is missing"
trows() { grep '^  month ' "$1" | awk '{print $3}'; }
srows() { grep '^  month ' "$1" | awk '{print $6, $11}'; }
[ "$(trows "$WORK/offline.txt")" = "$(trows "$WORK/offline2.txt")" ] || fail "table: true rows depend on the key"
[ "$(srows "$WORK/offline.txt")" != "$(srows "$WORK/offline2.txt")" ] || fail "table: synthetic columns do not depend on the key"
# The map stream (spatial): 12 months, the true counts independent of the
# key, the synthetic ones not.
[ "$(grep -c '^  map ' "$WORK/kafka.txt")" -eq 12 ] || fail "kafka demo did not print 12 map months"
grep -q "spatial/privtree+discrete_laplace, spent eps 1 of 1 (EXHAUSTED)" "$WORK/kafka.txt" \
    || fail "the map's ledger line is missing"
mtrue() { grep '^  map ' "$1" | awk '{print $3, $13, $15, $17, $20}' | sed 's|/[0-9]*||g'; }
msyn() { grep '^  map ' "$1" | awk '{print $6, $8, $13, $15}'; }
[ "$(mtrue "$WORK/offline.txt")" = "$(mtrue "$WORK/offline2.txt")" ] || fail "map: true counts depend on the key"
[ "$(msyn "$WORK/offline.txt")" != "$(msyn "$WORK/offline2.txt")" ] || fail "map: synthetic columns do not depend on the key"
# The modes stream (adaptive): 12 months, at most 4 new releases, the true
# counts independent of the key.
[ "$(grep -c '^  modes ' "$WORK/kafka.txt")" -eq 12 ] || fail "kafka demo did not print 12 modes months"
[ "$(grep -c '^  modes .*new release' "$WORK/kafka.txt")" -le 4 ] || fail "modes: more than 4 releases"
grep -q "adaptive/dsat+svt+discrete_laplace, spent eps 1 of 1 (EXHAUSTED)" "$WORK/kafka.txt" \
    || fail "the modes ledger line is missing"
atrue() { grep '^  modes ' "$1" | sed -E 's|/-?[0-9]+||g; s|new release||; s|repeat||; s|; L1.*||'; }
[ "$(atrue "$WORK/offline.txt")" = "$(atrue "$WORK/offline2.txt")" ] || fail "modes: true counts depend on the key"
# The drops stream (hypercube): 12 months, every release exactly as many
# synthetic drop-offs as true ones so far, the true shares independent of
# the key, the synthetic ones not.
[ "$(grep -c '^  drops ' "$WORK/kafka.txt")" -eq 12 ] || fail "kafka demo did not print 12 drops months"
grep '^  drops ' "$WORK/kafka.txt" | awk '$3 != $5 { exit 1 }' || fail "drops: a release without exactly t points"
grep -q "hypercube/dense_epoch_counting+discrete_laplace, spent eps 1 of 1" "$WORK/kafka.txt" \
    || fail "the drops ledger line is missing"
dtrue() { grep '^  drops ' "$1" | sed -E 's|/[0-9]+%||g; s|; largest.*||'; }
dsyn() { grep '^  drops ' "$1" | sed -E 's|[0-9]+/||g'; }
[ "$(dtrue "$WORK/offline.txt")" = "$(dtrue "$WORK/offline2.txt")" ] || fail "drops: true shares depend on the key"
[ "$(dsyn "$WORK/offline.txt")" != "$(dsyn "$WORK/offline2.txt")" ] || fail "drops: synthetic shares do not depend on the key"
# Bad usage is refused.
if "$BIN" demo --bogus 2>/dev/null; then fail "unknown option accepted"; fi
echo "PASS demo_cli"
