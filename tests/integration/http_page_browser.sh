#!/usr/bin/env bash
# http_page_browser.sh — the live page in a real browser (issue 18): the
# processor runs with --http on the real broker while a panel is worked
# through; headless Chromium (Debian's, driven over the DevTools protocol
# with websocket-client) opens the page, waits until every stream's card
# shows its last step, asserts that the budget figure each card shows is
# exactly the spend of the stream's last budget event (from `dpstream
# replay` of the same input and key: the Kafka outputs are byte-identical
# to it), that the page loaded nothing from outside and logged no error,
# and takes a screenshot into the test's artefacts
# (${DPSTREAM_ARTIFACTS:-build/artifacts}/http_page.png).
# Usage: bash http_page_browser.sh /path/to/dpstream   (from the repo root)
set -euo pipefail
BIN=$(realpath "${1:?usage: http_page_browser.sh path/to/dpstream}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib/prelude.sh"
PY=${DPSTREAM_PYENV:-${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}/pyenv}/bin/python3
"$PY" -c 'import websocket' 2>/dev/null || fail "no websocket-client in $PY (bash scripts/install-deps.sh --tests)"
CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || fail "no chromium (bash scripts/install-deps.sh --tests)"
ARTIFACTS=${DPSTREAM_ARTIFACTS:-$(dirname "$BIN")/artifacts}
mkdir -p "$ARTIFACTS"

SUFFIX=$(cut -c1-8 /proc/sys/kernel/random/uuid)
PREFIX=it-page-$SUFFIX
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
SEED=0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e
cat > "$WORK/config.json" <<EOF
{"topics": {"prefix": "$PREFIX"},
 "kafka": {"session.timeout.ms": "6000", "group.id": "$PREFIX.group"},
 "delta": 1e-6,
 "streams": [
   {"prefix": "panel/", "synthesizer": "window", "config": {"horizon": 8, "k": 3, "categories": 2, "rho": 0.5}},
   {"prefix": "jobs/", "synthesizer": "cumulative", "config": {"horizon": 8, "rho": 0.5, "counter": "tree"}},
   {"prefix": "drops/", "synthesizer": "hypercube", "config": {"epsilon": 1, "points_per_step": 400, "max_depth": 12}}
 ]}
EOF
"$BIN" gen-panel --n 300 --steps 8 --categories 2 --stay 0.85 --seed-hex "$SEED" --stream panel/town --close-steps \
    --out "$WORK/a.jsonl"
"$BIN" gen-panel --n 300 --steps 8 --categories 2 --stay 0.9 --seed-hex "$SEED" --stream jobs/town --close-steps \
    --out "$WORK/b.jsonl"
python3 - "$WORK" <<'EOF'
import json, random, sys
w = sys.argv[1]
rnd = random.Random(9)
out = open(f"{w}/a.jsonl").read().splitlines() + open(f"{w}/b.jsonl").read().splitlines()
for t in range(1, 9):
    for i in range(400):
        c = (0.3, 0.35) if rnd.random() < 0.6 else (0.75, 0.7)
        out.append(json.dumps({"stream": "drops/town", "step": t, "kind": "REPORT",
                               "point": [min(1, max(0, rnd.gauss(c[0], 0.12))), min(1, max(0, rnd.gauss(c[1], 0.12)))]}))
    out.append(json.dumps({"stream": "drops/town", "step": t, "kind": "CLOSE_STEP"}))
open(f"{w}/input.jsonl", "w").write("\n".join(out) + "\n")
EOF
"$BIN" replay --config "$WORK/config.json" --input "$WORK/input.jsonl" --out "$WORK/replay" --key-hex "$KEY" > /dev/null
"$BIN" produce --config "$WORK/config.json" --input "$WORK/input.jsonl" --partitions 2 \
    > /dev/null 2> "$WORK/produce.err" || { cat "$WORK/produce.err" >&2; fail "produce failed"; }
"$BIN" run --config "$WORK/config.json" --key-hex "$KEY" --instance-id page --idle-timeout-ms 0 \
    --http 127.0.0.1:0 --http-input-metrics >> "$WORK/run.out" 2>> "$WORK/run.err" &
RUN_PID=$!
PORT=
for _ in $(seq 300); do
    PORT=$(grep -o 'live page on 127.0.0.1:0 (port [0-9]*' "$WORK/run.err" | grep -o '[0-9]*$' || true)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || fail "the HTTP server did not start"
CDP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$WORK/chrome" --remote-debugging-address=127.0.0.1 \
    --remote-debugging-port="$CDP" --remote-allow-origins="http://127.0.0.1:$CDP" about:blank \
    > "$WORK/chrome.out" 2> "$WORK/chrome.err" &
CHROME_PID=$!
RUN_PIDS+=("$CHROME_PID")
FAIL_LOGS+=("$WORK/chrome.err")

"$PY" - "$PORT" "$CDP" "$WORK" "$ARTIFACTS/http_page.png" <<'EOF' || fail "the live page"
import base64, json, sys, time, urllib.request
import websocket
port, cdp, work, shot = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
last = {}
for l in open(f"{work}/replay/budget.jsonl"):
    e = json.loads(l)
    last[e["stream"]] = e
deadline = time.time() + 30
while True:
    try:
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{cdp}/json/list", timeout=2).read())
        page = next(t for t in targets if t.get("type") == "page")
        break
    except Exception:
        if time.time() > deadline:
            raise SystemExit("Chromium's DevTools endpoint did not come up")
        time.sleep(0.2)
ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30,
                                 origin=f"http://127.0.0.1:{cdp}")
msg_id = 0
events = []
def call(method, **params):
    global msg_id
    msg_id += 1
    ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
    while True:
        m = json.loads(ws.recv())
        if m.get("id") == msg_id:
            if "error" in m:
                raise SystemExit(f"{method}: {m['error']}")
            return m["result"]
        events.append(m)
call("Page.enable")
call("Runtime.enable")
call("Network.enable")
call("Emulation.setDeviceMetricsOverride", width=1100, height=1500, deviceScaleFactor=1, mobile=False)
call("Page.navigate", url=f"http://127.0.0.1:{port}/")
probe = """JSON.stringify([...document.querySelectorAll('section.card')].map(c => ({
  id: c.dataset.stream, step: c.querySelector('.last-step').dataset.step,
  spent: c.querySelector('.budget-spent').dataset.value,
  charts: c.querySelectorAll('svg polyline').length})))"""
deadline = time.time() + 150
shown = []
while time.time() < deadline:
    r = call("Runtime.evaluate", expression=probe, returnByValue=True)
    shown = json.loads(r["result"].get("value") or "[]")
    if len(shown) == len(last) and all(int(c["step"]) == last[c["id"]]["step"] for c in shown):
        break
    time.sleep(1)
else:
    raise SystemExit(f"the page never showed every stream's last step: {shown}")
time.sleep(2)   # let the charts of the last poll settle
r = call("Runtime.evaluate", expression=probe, returnByValue=True)
shown = json.loads(r["result"]["value"])
for c in shown:
    want = last[c["id"]]["spent_total"]
    assert float(c["spent"]) == want, f"{c['id']}: the page shows spent {c['spent']}, the last budget event {want}"
    assert c["charts"] >= 2, f"{c['id']}: {c['charts']} charts drawn"
png = base64.b64decode(call("Page.captureScreenshot", format="png")["data"])
open(shot, "wb").write(png)
outside = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"
           and not e["params"]["request"]["url"].startswith(f"http://127.0.0.1:{port}/")]
errors = [e for e in events if e.get("method") in ("Runtime.exceptionThrown",)
          or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")]
assert not outside, f"the page loaded from elsewhere: {outside}"
assert not errors, f"the page logged errors: {errors[:2]}"
print(f"page: {len(shown)} streams at their last step, budget figures = the last budget events, "
      f"screenshot {len(png)} bytes -> {shot}")
EOF
kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "the processor did not stop cleanly"
kill -TERM "$CHROME_PID" 2>/dev/null || true
wait "$CHROME_PID" 2>/dev/null || true   # let the browser finish writing its profile before WORK goes
echo "PASS http_page_browser"
