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
#     for s/a (each step once), with budget events that add up once;
#   * the route caps its streams (max_streams 1, counted per partition, with
#     budget_group: each stream holds the route's budget / 1): s/b, in s/a's
#     partition, is refused as STREAM_LIMIT; s/d, alone in the other
#     partition, is released.
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
 "streams": [{"prefix": "s/", "synthesizer": "window", "max_streams": 1, "budget_group": true,
              "config": {"horizon": 3, "k": 1, "categories": 2, "rho": 0.5}}]}
EOF
"$BIN" gen-panel --n 12 --steps 3 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream s/a --close-steps \
    --out "$WORK/panel.jsonl"
N_IN=$(wc -l < "$WORK/panel.jsonl")
"$BIN" produce --config "$WORK/config.json" --input "$WORK/panel.jsonl" --partitions 2 \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }
HOME_P=$(kcat -b "$BOOT" -C -t "$PREFIX.updates" -e -q -f '%p\n' 2>/dev/null | sort -u)
[ "$(echo "$HOME_P" | wc -l)" -eq 1 ] || fail "the stream's updates are not in one partition: $HOME_P"
# s/b hashes to s/a's partition, s/d to the other one (CRC32 mod 2, librdkafka's default)
for s in s/b s/d; do
    "$BIN" gen-panel --n 5 --steps 3 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps \
        --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
N_B=$(wc -l < "$WORK/s_b.jsonl")
HOME_B=$(python3 -c 'import zlib; print(zlib.crc32(b"s/b") % 2)')
[ "$HOME_B" -eq "$HOME_P" ] || fail "s/b should share the partition of s/a"
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
"$BIN" produce --config "$WORK/config.json" --input "$WORK/s_b.jsonl" > /dev/null 2>&1 || fail "produce s/b"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/s_d.jsonl" > /dev/null 2>&1 || fail "produce s/d"
EXPECT_LIMIT=$N_B

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
    [ "$n" -ge 6 ] && [ "$d" -ge $((EXPECT_DL + EXPECT_LIMIT)) ] && break
    [ $SECONDS -lt $deadline ] || fail "timed out: $n releases, $d dead letters (want 6 and $((EXPECT_DL + EXPECT_LIMIT)))"
    sleep 2
done
sleep 3   # a second release series, if any, would show up now
for p in "${RUN_PIDS[@]}"; do kill -TERM "$p"; done
for p in "${RUN_PIDS[@]}"; do wait "$p" || fail "an instance exited non-zero"; done
RUN_PIDS=()
"$BIN" export --config "$WORK/config.json" --out "$WORK/out" --dead-letters "$WORK/dl.jsonl" > "$WORK/export.out" 2>> "$WORK/export.err" \
    || { cat "$WORK/export.err" >&2; fail "export found duplicate or inconsistent releases"; }

python3 - "$WORK" "$EXPECT_DL" "$OTHER_P" "$EXPECT_LIMIT" <<'EOF' || fail "more than one release series per stream, or copies not dead-lettered"
import collections, json, sys
w, expect_dl, other, expect_limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ok = True
man = [json.loads(l) for l in open(f"{w}/out/releases.jsonl") if '"type":"manifest"' in l]
steps = collections.Counter((m["stream"], m["step"]) for m in man)
want = [(s, t) for s in ("s/a", "s/d") for t in (1, 2, 3)]
if sorted(steps) != want or any(v != 1 for v in steps.values()):
    print("manifests:", dict(steps)); ok = False
bud = collections.defaultdict(list)
for l in open(f"{w}/out/budget.jsonl"):
    b = json.loads(l)
    bud[b["stream"]].append(b)
for s in ("s/a", "s/d"):
    ev = bud[s]
    if [b["step"] for b in ev] != [1, 2, 3] or ev[-1]["spent_total"] != 0.5 or ev[-1]["budget_total"] != 0.5:
        print("budget events of", s, [(b["step"], b["spent_total"]) for b in ev]); ok = False
dl = [json.loads(l) for l in open(f"{w}/dl.jsonl")]
reasons = collections.Counter(d["reason"] for d in dl)
if reasons != {"KEY_MISMATCH": expect_dl, "STREAM_LIMIT": expect_limit}:
    print("dead letters:", dict(reasons), "want", expect_dl, "KEY_MISMATCH and", expect_limit, "STREAM_LIMIT"); ok = False
if sum(1 for d in dl if d["partition"] == other and d["reason"] == "KEY_MISMATCH") != expect_dl - 2:
    print("not every copy in the other partition was refused"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "run_key_partition: OK (one release series per stream; $EXPECT_DL copies dead-lettered as KEY_MISMATCH, $EXPECT_LIMIT updates as STREAM_LIMIT)"
