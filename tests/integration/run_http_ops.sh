#!/usr/bin/env bash
# run_http_ops.sh — `dpstream run --http` on the real broker (issue 18):
#   * /readyz answers 503 with a JSON reason while the assigned partitions
#     are restored (--debug-restore-delay-ms holds the restore open), then
#     200; /healthz 200 throughout;
#   * /metrics, parsed by prometheus_client's own text parser, while the
#     processor works through a panel: at the end it must agree with what
#     was fed and released — dead letters by reason equal the replay's
#     rejects, steps released per stream and the budget spent per stream
#     equal the budget events (`dpstream replay` on the same input and key:
#     the Kafka outputs are byte-identical to it), input messages consumed
#     equal the messages produced;
#   * /api/streams and /api/streams/{id}/history (URL-encoded id) carry the
#     same public figures; an unknown stream is a 404;
#   * without --http-input-metrics only the public class is served (no
#     dpstream_updates_*, dead letters or lag anywhere);
#   * the server is bound to the address given (127.0.0.1) and survives
#     abuse: more idle connections than its limit, a 100 KB request header,
#     garbage instead of HTTP, a slow client, POST — and still answers a
#     normal request afterwards;
#   * --http-input-metrics without --http is a usage error (exit 2).
# Usage: bash run_http_ops.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: run_http_ops.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import prometheus_client' 2>/dev/null || fail "no prometheus_client in $PY (bash scripts/install-deps.sh)"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-http-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d

cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "delta": 1e-6,
 "streams": [
   {"prefix": "win/", "synthesizer": "window", "config": {"horizon": 6, "k": 2, "categories": 2, "rho": 0.5}},
   {"prefix": "cum/", "synthesizer": "cumulative", "config": {"horizon": 6, "rho": 0.25}},
   {"prefix": "hyp/", "synthesizer": "hypercube", "config": {"epsilon": 1, "points_per_step": 50, "max_depth": 10}}
 ]}
EOF
# (a run that accepted the flag would start consuming: the timeout ends it, exit 124)
set +e; timeout 20 "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --http-input-metrics > /dev/null 2> "$WORK/usage.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q -- "--http-input-metrics needs --http" "$WORK/usage.err" \
    || fail "--http-input-metrics without --http: exit $rc, expected 2 (usage error): $(tail -3 "$WORK/usage.err")"

for s in win/a cum/a; do
    "$BIN" gen-panel --n 30 --steps 6 --categories 2 --stay 0.8 --seed-hex "$SEED" --stream "$s" --close-steps \
        --out "$WORK/$(echo "$s" | tr / _).jsonl"
done
python3 - "$WORK" <<'EOF'
import json, random, sys
w = sys.argv[1]
rnd = random.Random(3)
out = open(f"{w}/win_a.jsonl").read().splitlines() + open(f"{w}/cum_a.jsonl").read().splitlines()
for t in range(1, 7):
    for i in range(51):   # the 51st: DUPLICATE_REPORT (the step is full)
        out.append(json.dumps({"stream": "hyp/a", "step": t, "kind": "REPORT", "point": [rnd.random() ** 2, rnd.random()]}))
    out.append(json.dumps({"stream": "hyp/a", "step": t, "kind": "REPORT", "point": [2, 0.5]}))   # OUT_OF_DOMAIN
    out.append(json.dumps({"stream": "hyp/a", "step": t, "kind": "CLOSE_STEP"}))
out.insert(40, '{"stream":"nobody/x","step":1,"kind":"CLOSE_STEP"}')   # UNKNOWN_STREAM
out.insert(41, 'not an update at all')                                   # MALFORMED
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 --raw-invalid \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }
MESSAGES=$(wc -l < "$WORK/input.jsonl")

start() {   # $1 = extra flags
    : > "$WORK/run.err"
    # shellcheck disable=SC2086
    "$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id http --idle-timeout-ms 0 \
        --http 127.0.0.1:0 $1 >> "$WORK/run.out" 2>> "$WORK/run.err" &
    RUN_PID=$!
    local deadline=$((SECONDS + 30))
    PORT=
    while [ -z "$PORT" ] && [ $SECONDS -lt $deadline ]; do
        PORT=$(grep -o 'live page on 127.0.0.1:0 (port [0-9]*' "$WORK/run.err" | grep -o '[0-9]*$' || true)
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "the HTTP server did not start"
}

# --- 1. restore: 503 while it runs, then 200; metrics while the panel is worked through --------
start "--http-input-metrics --debug-restore-delay-ms 4000"
"$PY" - "$PORT" "$WORK" "$MESSAGES" <<'EOF' || fail "health during restore / metrics"
import json, sys, time, urllib.request, urllib.error
port, work, messages = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
base = f"http://127.0.0.1:{port}"
def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
# Every 503 reason in order: a restore may be preceded (and, after a
# rebalance, followed) by "waiting for ... assignment"; one of them must
# name the restore, and readiness must come after it.
reasons, seen_200 = [], False
deadline = time.time() + 60
while time.time() < deadline and not seen_200:
    code, body = get("/readyz")
    if code == 503:
        r = json.loads(body)["reason"]
        if not reasons or reasons[-1] != r:
            reasons.append(r)
    elif code == 200 and reasons:
        seen_200 = True
    assert get("/healthz")[0] == 200, "healthz not 200 while restoring"
    time.sleep(0.2)
assert any("restoring" in r for r in reasons), f"no 503 with a restore reason: {reasons}"
assert seen_200, "readyz never became 200"
print(f"readyz: 503 ({' -> '.join(reasons)}) during the restore, then 200")
# wait for every release: 6 + 6 + 6 steps
from prometheus_client.parser import text_string_to_metric_families
def scrape():
    code, text = get("/metrics")
    assert code == 200
    fams = {f.name: f for f in text_string_to_metric_families(text)}   # raises on malformed output
    return text, fams
deadline = time.time() + 120
while time.time() < deadline:
    text, fams = scrape()
    rel = fams.get("dpstream_steps_released")   # the parser strips _total from counter names
    if rel and sum(s.value for s in rel.samples if s.name == "dpstream_steps_released_total") >= 18:
        break
    time.sleep(0.5)
else:
    raise SystemExit("not every step was released within 120 s")
time.sleep(2.5)   # one more view after the last commit
text, fams = scrape()
open(f"{work}/metrics.txt", "w").write(text)
EOF

# compare the scraped figures with the replay (the Kafka outputs are byte-identical to it)
"$PY" - "$PORT" "$WORK" "$MESSAGES" <<'EOF' || fail "metrics disagree with what was fed and released"
import json, sys, collections, urllib.request, urllib.error
from prometheus_client.parser import text_string_to_metric_families
port, work, messages = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
fams = {f.name: f for f in text_string_to_metric_families(open(f"{work}/metrics.txt").read())}
def samples(name, sample=None):
    return [s for s in fams[name].samples if s.name == (sample or name)]
want_rej = collections.Counter(json.loads(l)["reason"] for l in open(f"{work}/replay/rejected.jsonl"))
got_rej = {s.labels["reason"]: int(s.value) for s in samples("dpstream_updates_rejected", "dpstream_updates_rejected_total")}
for r, n in want_rej.items():
    assert got_rej.get(r) == n, f"rejected {r}: metrics {got_rej.get(r)}, replay {n}"
assert sum(got_rej.values()) == sum(want_rej.values()), (got_rej, want_rej)
consumed = sum(s.value for s in samples("dpstream_updates_consumed", "dpstream_updates_consumed_total"))
assert consumed == messages, f"consumed {consumed}, produced {messages}"
budgets = {}
for l in open(f"{work}/replay/budget.jsonl"):
    e = json.loads(l)
    budgets.setdefault(e["stream"], []).append(e)
steps = {s.labels["stream"]: s.value for s in samples("dpstream_stream_steps_released", "dpstream_stream_steps_released_total")}
spent = {s.labels["stream"]: s.value for s in samples("dpstream_stream_budget_spent")}
status = {(s.labels["stream"], s.labels["status"]): s.value for s in samples("dpstream_stream_status")}
for stream, evs in budgets.items():
    last = evs[-1]
    assert steps[stream] == len(evs), f"{stream}: {steps[stream]} steps in metrics, {len(evs)} budget events"
    assert spent[stream] == last["spent_total"], f"{stream}: spent {spent[stream]} vs {last['spent_total']}"
    assert status[(stream, last["status"])] == 1, f"{stream}: status {last['status']} not 1"
tx = {s.labels["outcome"]: s.value for s in samples("dpstream_transactions", "dpstream_transactions_total")}
assert tx["committed"] >= 18 and tx["aborted"] == 0, tx
assert any(s.value > 0 for s in samples("dpstream_close_step_seconds", "dpstream_close_step_seconds_count"))
def get(path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
code, body = get("/api/streams")
api = {s["id"]: s for s in json.loads(body)["streams"]}
for stream, evs in budgets.items():
    assert api[stream]["spent_total"] == evs[-1]["spent_total"] and api[stream]["last_step"] == evs[-1]["step"]
code, body = get("/api/streams/hyp%2Fa/history")
h = json.loads(body)
assert code == 200 and h["id"] == "hyp/a" and [e["step"] for e in h["history"]] == list(range(1, 7)), (code, body[:600])
assert [e["spent"] for e in h["history"]] == [e["spent_total"] for e in budgets["hyp/a"]]
assert get("/api/streams/nobody%2Fx/history")[0] == 404
assert get("/nope")[0] == 404
print(f"metrics agree: {sum(want_rej.values())} dead letters by reason, {int(consumed)} messages, "
      f"{len(budgets)} streams' steps and budgets; API and history agree")
EOF

# --- 2. abuse, then a normal request ----------------------------------------------------
ss -ltnH "sport = :$PORT" | grep -q "127.0.0.1:$PORT" || fail "not bound to 127.0.0.1:$PORT: $(ss -ltnH "sport = :$PORT")"
"$PY" - "$PORT" <<'EOF' || fail "the HTTP server did not survive abuse"
import socket, sys, time, urllib.request, urllib.error
port = int(sys.argv[1])
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=5)
def status(path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
idle = [conn() for _ in range(40)]          # more than the 32-connection limit
for c in idle:
    c.close()
big = conn()                                 # a 100 KB header: over the 32 KiB per-connection limit
big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
reply = big.recv(200)
assert not reply.startswith(b"HTTP/1.1 200"), reply
big.close()
junk = conn()
junk.sendall(b"\x16\x03\x01 this is not HTTP\r\n\r\n")
junk.recv(200)
junk.close()
slow = conn()                                # a slow client does not hold up others
slow.sendall(b"GET /metr")
t0 = time.time()
assert status("/healthz") == 200 and time.time() - t0 < 2
slow.close()
assert status("/metrics", "POST") == 405
assert status("/metrics") == 200
print("abuse survived: 40 idle connections, a 100 KB header refused, garbage, a slow client, POST 405")
EOF
kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "the processor did not stop cleanly"

# --- 3. public class only ----------------------------------------------------------------
start ""
"$PY" - "$PORT" <<'EOF' || fail "public-only metrics"
import json, sys, time, urllib.request, urllib.error
port = int(sys.argv[1])
def ready():
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).status == 200
    except urllib.error.HTTPError:
        return False
deadline = time.time() + 60
while time.time() < deadline:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    if ready() and "dpstream_build_info" in text:
        break
    time.sleep(0.3)
time.sleep(1.5)   # a view after the restore
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
for bad in ("dpstream_updates_", "dpstream_consumer_lag", "dpstream_close_step", "dpstream_kafka_", "dpstream_transactions"):
    assert bad not in text, f"{bad} served without --http-input-metrics"
api = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/streams", timeout=5).read())
assert api["input_metrics"] is False and "input" not in api, api
# restored streams show their ledger's figures before any new release
assert {s["id"] for s in api["streams"]} == {"win/a", "cum/a", "hyp/a"}, api
assert all(s["status"] == "EXHAUSTED" for s in api["streams"] if s["id"] != "hyp/a"), api
print("without --http-input-metrics: only the public class; restored streams shown from their ledgers")
EOF
kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "the processor did not stop cleanly (second run)"
echo "PASS run_http_ops"
