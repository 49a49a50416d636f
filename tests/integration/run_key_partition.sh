#!/usr/bin/env bash
# run_key_partition.sh — one stream, one partition, one owner (issue 12.3),
# on the real local broker with two `dpstream run` instances in one group:
#   * stream s/a is produced normally (key = stream id, so the default
#     partitioner puts it in its home partition of the 2);
#   * copies of its updates are written with kcat (raw Avro bytes taken
#     from the topic itself): one with a null key and one keyed by another
#     stream id into the home partition, and the whole stream again, keyed
#     s/a, into the other partition — what a producer with its own
#     partitioner, or one keying by entity, would do;
#   * every copy is dead-lettered as KEY_MISMATCH, whichever instance owns
#     the partition; the synthetic topic holds exactly one release series
#     for s/a (each step once), with budget events that add up once.
# Before the check, each instance built its own state for s/a from its own
# partition and released the stream twice over.
# Usage: bash run_key_partition.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_key_partition.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-key-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
FAIL_LOGS=("$WORK/a.err" "$WORK/b.err")

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "streams": [{"prefix": "s/", "synthesizer": "window",
              "config": {"horizon": 3, "k": 1, "categories": 2, "rho": 0.5}}]}
EOF
"$BIN" gen-panel --n 12 --steps 3 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream s/a --close-steps \
    --out "$WORK/panel.jsonl"
N_IN=$(wc -l < "$WORK/panel.jsonl")
"$BIN" produce --config "$WORK/config.json" --input "$WORK/panel.jsonl" --partitions 2 \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }
HOME_P=$(kcat -b "$BOOT" -C -t "$PREFIX.updates" -e -q -f '%p\n' 2>/dev/null | sort -u)
[ "$(echo "$HOME_P" | wc -l)" -eq 1 ] || fail "the stream's updates are not in one partition: $HOME_P"
OTHER_P=$((1 - HOME_P))

# --- the copies, raw Avro bytes out of the topic --------------------------------
msg() {   # $1 = offset in the home partition -> file
    kcat -b "$BOOT" -C -t "$PREFIX.updates" -p "$HOME_P" -o "$1" -c 1 -e -q -f '%s' > "$WORK/m$1.bin" 2>/dev/null
    echo "$WORK/m$1.bin"
}
put() {   # $1 = partition, $2 = key or "" for null, $3 = file
    if [ -n "$2" ]; then
        kcat -b "$BOOT" -P -t "$PREFIX.updates" -p "$1" -k "$2" "$3"
    else
        kcat -b "$BOOT" -P -t "$PREFIX.updates" -p "$1" "$3"
    fi
}
put "$HOME_P" "" "$(msg 0)"            # null key
put "$HOME_P" "s/b" "$(msg 1)"         # another stream's key
for ((o = 0; o < N_IN; o++)); do       # the whole stream again, in the other partition
    put "$OTHER_P" "s/a" "$(msg $o)"
done
EXPECT_DL=$((2 + N_IN))

# --- two instances, one partition each --------------------------------------------
start() {
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id "$1" --idle-timeout-ms 0 \
        --dlq-commit-ms 300 >> "$WORK/$1.out" 2>> "$WORK/$1.err" &
    RUN_PIDS+=($!)
}
start a
start b
deadline=$((SECONDS + 150))
while :; do
    n=0 d=0
    if "$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > /dev/null 2>> "$WORK/export.err"; then
        n=$(grep -c '"type":"manifest"' "$WORK/out/releases.jsonl" || true)
        d=$(wc -l < "$WORK/dl.jsonl")
    fi
    [ "$n" -ge 3 ] && [ "$d" -ge "$EXPECT_DL" ] && break
    [ $SECONDS -lt $deadline ] || fail "timed out: $n releases, $d dead letters (want 3 and $EXPECT_DL)"
    sleep 2
done
sleep 3   # a second release series, if any, would show up now
for p in "${RUN_PIDS[@]}"; do kill -TERM "$p"; done
for p in "${RUN_PIDS[@]}"; do wait "$p" || fail "an instance exited non-zero"; done
RUN_PIDS=()
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > "$WORK/export.out" 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export found duplicate or inconsistent releases"; }

python3 - "$WORK" "$EXPECT_DL" "$OTHER_P" <<'EOF' || fail "more than one release series, or copies not dead-lettered"
import collections, json, sys
w, expect_dl, other = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
man = [json.loads(l) for l in open(f"{w}/out/releases.jsonl") if '"type":"manifest"' in l]
steps = collections.Counter((m["stream"], m["step"]) for m in man)
if sorted(steps) != [("s/a", 1), ("s/a", 2), ("s/a", 3)] or any(v != 1 for v in steps.values()):
    print("manifests:", dict(steps)); ok = False
bud = [json.loads(l) for l in open(f"{w}/out/budget.jsonl")]
if [b["step"] for b in bud] != [1, 2, 3] or abs(bud[-1]["spent_total"] - 0.5) > 1e-9:
    print("budget events:", [(b["step"], b["spent_total"]) for b in bud]); ok = False
dl = [json.loads(l) for l in open(f"{w}/dl.jsonl")]
reasons = collections.Counter(d["reason"] for d in dl)
if reasons != {"KEY_MISMATCH": expect_dl}:
    print("dead letters:", dict(reasons), "want", expect_dl, "KEY_MISMATCH"); ok = False
if sum(1 for d in dl if d["partition"] == other) != expect_dl - 2:
    print("not every copy in the other partition was refused"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "run_key_partition: OK (one release series; $EXPECT_DL copies dead-lettered as KEY_MISMATCH)"
