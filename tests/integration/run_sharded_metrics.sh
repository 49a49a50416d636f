#!/usr/bin/env bash
# run_sharded_metrics.sh — the roles' per-shard step progress on /metrics
# and /api/streams (docs/kafka.md §10; public: step boundaries), on the
# real local broker: a sharded `window` and a sharded `cumulative` stream
# on a 4-partition updates topic, 1 `run --role ingest` and 1 `run --role
# release` instance, both with --http (public class only).
#   * after steps 1–3 closed on every partition: every shard's
#     dpstream_shard_open_step is 4 and closed step 3 on the ingest
#     instance; the release instance's dpstream_release_next_step is 4,
#     waiting for all 4 shards (dpstream_release_shard_arrived 0 each);
#   * then shard 0 alone closes step 4 (the CLOSE_STEP markers of step 4
#     written to partition 0 only): shard 0's open step is 5, the others'
#     still 4; the release instance still has next step 4, with
#     shard 0's statistics arrived and shards 1, 2, 3 waited for (metric
#     and the page's JSON: "waiting": [1, 2, 3]) — and nothing of step 4
#     is released;
#   * the live page's "Sharded streams" panel shows the same (headless
#     chromium): win/a waiting for shards 1, 2, 3 on the release instance,
#     shard 0 at open step 5 on the ingest instance;
#   * no input-class metric is served without --http-input-metrics.
# Needs the broker of scripts/kafka-local.sh; only talks to 127.0.0.1.
# Usage: bash run_sharded_metrics.sh /path/to/dpstream
set -euo pipefail
BIN=$(realpath "${1:?usage: run_sharded_metrics.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
. "$ROOT/tests/integration/lib/sharded_roles.sh"
FAIL_LOGS=("$WORK/in.err" "$WORK/rel.err")
roles_config
roles_input 40

# Steps 1–3 of every stream (part A); the sharded streams' CLOSE_STEP
# markers of step 4 (part B), written through a scratch topic so that
# `produce` places them as it places any marker, one per partition.
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
a, b = [], []
for line in open(f"{w}/input.jsonl"):
    u = json.loads(line)
    if u["step"] <= 3:
        a.append(line)
    elif u["step"] == 4 and u["kind"] == "CLOSE_STEP" and u["stream"] != "plain":
        b.append(line)
open(f"{w}/a.jsonl", "w").writelines(a)
open(f"{w}/b.jsonl", "w").writelines(b)
PY
sed "s/\"$PREFIX\"/\"$PREFIX-scratch\"/" "$WORK/config.json" > "$WORK/scratch.json"
"$BIN" produce --config "$WORK/config.json" --input "$WORK/a.jsonl" --partitions 4 > /dev/null 2> "$WORK/produce.err" \
    || fail "produce failed: $(cat "$WORK/produce.err")"
"$BIN" produce --config "$WORK/scratch.json" --input "$WORK/b.jsonl" --partitions 4 > /dev/null 2> "$WORK/produce.err" \
    || fail "produce (scratch) failed: $(cat "$WORK/produce.err")"

port_of() {   # $1 = log name
    local deadline=$((SECONDS + 30)) port=
    while [ -z "$port" ] && [ $SECONDS -lt $deadline ]; do
        port=$(grep -o 'live page on 127.0.0.1:0 (port [0-9]*' "$WORK/$1.err" 2>/dev/null | grep -o '[0-9]*$' || true)
        sleep 0.2
    done
    [ -n "$port" ] || fail "the $1 instance's HTTP server did not start"
    echo "$port"
}
roles_start ingest sm-in in --http 127.0.0.1:0
IN_PORT=$(port_of in)
roles_start release sm-rel rel --http 127.0.0.1:0
REL_PORT=$(port_of rel)

deadline=$((SECONDS + 180))
until [ "$(roles_released)" -ge 9 ]; do
    [ $SECONDS -lt $deadline ] || fail "steps 1-3 were not released ($(roles_released) of 9)"
    sleep 2
done

# check.py PHASE: poll both instances' /metrics and /api/streams (the view
# is republished every second) until they say what PHASE expects.
cat > "$WORK/check.py" <<'PY'
import json, re, sys, time, urllib.request
phase, in_port, rel_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def get(port, path):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).read().decode()

def gauges(text, name):
    out = {}
    for m in re.finditer(r'^' + name + r'\{([^}]*)\} (\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        out[(labels["stream"], labels.get("shard"))] = float(m.group(2))
    return out

def expect():
    opened = {0: 5 if phase == "shard0" else 4, 1: 4, 2: 4, 3: 4}
    want = {}
    for st in ("win/a", "cum/a"):
        for k, o in opened.items():
            want[("in", "dpstream_shard_open_step", st, str(k))] = o
            want[("in", "dpstream_shard_closed_step", st, str(k))] = o - 1
            want[("rel", "dpstream_release_shard_arrived", st, str(k))] = 1 if (phase == "shard0" and k == 0) else 0
        want[("rel", "dpstream_release_next_step", st, None)] = 4
        want[("rel", "dpstream_release_shards_waiting", st, None)] = 3 if phase == "shard0" else 4
    return want

last = None
for _ in range(60):
    texts = {"in": get(in_port, "/metrics"), "rel": get(rel_port, "/metrics")}
    got = {}
    for (inst, name, st, shard) in expect():
        got[(inst, name, st, shard)] = gauges(texts[inst], name).get((st, shard))
    if got == expect():
        break
    last = {k: (v, expect()[k]) for k, v in got.items() if v != expect()[k]}
    time.sleep(1)
else:
    sys.exit(f"{phase}: metrics differ (got, expected): {last}")
for inst in ("in", "rel"):
    for bad in ("dpstream_updates_consumed_total", "dpstream_consumer_lag_messages"):
        assert bad not in texts[inst], f"{bad} served without --http-input-metrics"
# the ingest instance releases no sharded stream; the release instance ingests no shard
assert "dpstream_release_next_step" not in texts["in"] and "dpstream_shard_open_step" not in texts["rel"]
api = json.loads(get(rel_port, "/api/streams"))
rel = {r["stream"]: r for r in api["sharded"]["releases"]}
for st in ("win/a", "cum/a"):
    r = rel[st]
    assert r["next_step"] == 4 and r["shards"] == 4, r
    assert r["waiting"] == ([1, 2, 3] if phase == "shard0" else [0, 1, 2, 3]), r
    assert r["arrived"] == ([0] if phase == "shard0" else []), r
shards = json.loads(get(in_port, "/api/streams"))["sharded"]["shards"]
assert sorted((s["stream"], s["shard"], s["open_step"]) for s in shards) == sorted(
    (st, k, 5 if (phase == "shard0" and k == 0) else 4) for st in ("win/a", "cum/a") for k in range(4)), shards
PY
python3 "$WORK/check.py" steps3 "$IN_PORT" "$REL_PORT" || fail "the progress after steps 1-3"

# Shard 0 alone closes step 4: the scratch topic's partition-0 markers
# copied, as they are, to partition 0 of the updates topic.
kcat -b "$BOOT" -C -t "$PREFIX-scratch.updates" -p 0 -o beginning -e -q -f '%K %S\n%k%s\n' > "$WORK/p0.bin" \
    || fail "kcat could not read the scratch topic"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
data, o, out, n = open(f"{w}/p0.bin", "rb").read(), 0, b"", 0
while o < len(data):   # re-framed for kcat -P: key ‖ "%%K%%" ‖ value ‖ "%%M%%" (keys hold 0x00 bytes)
    nl = data.index(b"\n", o)
    kl, vl = (int(x) for x in data[o:nl].split())
    out += data[nl + 1:nl + 1 + kl] + b"%%K%%" + data[nl + 1 + kl:nl + 1 + kl + vl] + b"%%M%%"
    o, n = nl + 1 + kl + vl + 1, n + 1
open(f"{w}/p0.framed", "wb").write(out)
open(f"{w}/n", "w").write(str(n))
PY
N=$(cat "$WORK/n")
[ "$N" -eq 2 ] || fail "partition 0 of the scratch topic holds $N markers, expected 2 (2 streams x step 4)"
kcat -b "$BOOT" -P -t "$PREFIX.updates" -p 0 -K '%%K%%' -D '%%M%%' < "$WORK/p0.framed" \
    || fail "kcat could not write the markers"
python3 "$WORK/check.py" shard0 "$IN_PORT" "$REL_PORT" || fail "the progress after shard 0 closed step 4"
[ "$(roles_released)" -eq 9 ] || fail "a step was released before all its shards' statistics arrived"

# The live page's "Sharded streams" panel (headless chromium, the DOM after its script ran).
CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || fail "no chromium (bash scripts/install-deps.sh --tests)"
page() {   # $1 = port, $2 = out
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --user-data-dir="$WORK/chrome" --virtual-time-budget=5000 --dump-dom "http://127.0.0.1:$1/" > "$2" 2> /dev/null \
        || fail "chromium could not load the page on port $1"
}
page "$REL_PORT" "$WORK/rel.html"
grep -qF '<tr><td>win/a</td><td>4</td><td>1 of 4</td><td>1, 2, 3</td></tr>' "$WORK/rel.html" \
    || fail "the release instance's page does not show win/a waiting for shards 1, 2, 3: $(grep -o '<section id="sharded".*</section>' "$WORK/rel.html" | head -c 600)"
page "$IN_PORT" "$WORK/in.html"
grep -qF '<tr><td>win/a</td><td>0</td><td>5</td><td>4</td></tr>' "$WORK/in.html" \
    || fail "the ingest instance's page does not show shard 0 of win/a at open step 5"
echo "PASS: per-shard step progress on /metrics and /api/streams"
