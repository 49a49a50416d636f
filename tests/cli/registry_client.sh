#!/usr/bin/env bash
# registry_client.sh — the schema registry client's transport settings
# against a scripted HTTPS registry on 127.0.0.1 (Python's http.server with
# a throw-away self-signed certificate; it speaks the few calls dpstream
# makes and records every request):
#   * TLS: ssl.ca.location verifies the server; without it the certificate
#     is refused (fail closed, exit 4, curl's reason in the message);
#     enable.ssl.certificate.verification=false skips the check;
#   * basic.auth.user.info is sent as HTTP basic auth on every request; a
#     wrong password is a 401 that stops the command, without retries;
#   * a 503 is retried (the server fails each path once), a 409 is not;
#   * registration: six POST /subjects/<topic>-org.dpstream.v1.<Record>/versions,
#     each followed by PUT /config/<subject> {"compatibility": "BACKWARD"};
#     export only looks the ids up (POST /subjects/<subject>), no PUT.
# The real registry (Apicurio) is exercised by tests/integration/run_schema_registry.sh;
# it has no TLS or auth, hence this server.  No broker: once the registry
# part succeeds the command stops at "cannot reach 127.0.0.1:1".
# Usage: bash registry_client.sh /path/to/dpstream
set -uo pipefail
BIN=${1:?usage: registry_client.sh path/to/dpstream}
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
fails=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" > /dev/null 2>&1 || { echo "FAIL: openssl could not make a certificate" >&2; exit 1; }

python3 - "$WORK" <<'PY' > /dev/null 2> "$WORK/server.err" &
import base64, http.server, json, ssl, sys, threading
work = sys.argv[1]
want = "Basic " + base64.b64encode(b"svc:pa55word").decode()
seen = set()
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def answer(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        auth = self.headers.get("Authorization") == want
        with lock:
            first = (self.command, self.path) not in seen
            seen.add((self.command, self.path))
            with open(f"{work}/requests.log", "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "auth": auth,
                                    "content_type": self.headers.get("Content-Type"), "body": body}) + "\n")
        if not auth:
            return self.answer(401, {"error_code": 401, "message": "Unauthorized"})
        if first:
            return self.answer(503, {"error_code": 50301, "message": "try again"})
        if self.command == "POST" and "Update" in self.path and "refuse" in self.path:
            return self.answer(409, {"error_code": 409, "message": "Schema being registered is incompatible"})
        if self.command == "POST":
            schema = json.loads(body)["schema"]
            return self.answer(200, {"id": 100 + len(schema) % 97})
        if self.command == "PUT":
            return self.answer(200, json.loads(body))
        return self.answer(404, {"error_code": 40401, "message": "not found"})
    do_GET = do_POST = do_PUT = handle_any
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{work}/cert.pem", f"{work}/key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(f"{work}/port.tmp", "w").write(str(srv.server_address[1]))
import os; os.rename(f"{work}/port.tmp", f"{work}/port")
srv.serve_forever()
PY
SERVER=$!
for _ in $(seq 1 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { cat "$WORK/server.err" >&2; echo "FAIL: the scripted registry did not start" >&2; exit 1; }
URL="https://127.0.0.1:$(cat "$WORK/port")"

# $1 = prefix, $2 = extra schema_registry keys; prints the config path
conf() {
    printf '{"topics": {"prefix": "%s"}, "schema_registry": {"url": "%s", "basic.auth.user.info": "%s", "retries.wait.ms": 50, "max.retries": 2%s},
 "streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]}\n' \
        "$1" "$URL" "${3:-svc:pa55word}" "${2:+, $2}" > "$WORK/$1.json"
    echo "$WORK/$1.json"
}
: > "$WORK/empty.jsonl"
# $1 = config; runs produce with no broker; stderr in $WORK/err
produce() {
    local rc=0
    : > "$WORK/requests.log"
    DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 60 "$BIN" produce --config "$1" --input "$WORK/empty.jsonl" \
        --connect-timeout-ms 1000 > /dev/null 2> "$WORK/err" || rc=$?
    return $rc
}

# TLS verified with the CA, auth, retries, subjects and levels
f=$(conf ok "\"ssl.ca.location\": \"$WORK/cert.pem\"")
produce "$f"; rc=$?
[ $rc -eq 4 ] && grep -q "cannot reach 127.0.0.1:1" "$WORK/err" \
    || bad "with TLS and auth right, produce should get past the registry to Kafka: exit $rc, $(head -c 500 "$WORK/err")"
python3 - "$WORK/requests.log" <<'PY' || bad "the registry requests are not as expected: $(cat "$WORK/requests.log")"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["auth"] for r in reqs), "a request without the basic auth header"
assert all(r["content_type"] == "application/vnd.schemaregistry.v1+json" for r in reqs if r["body"])
subjects = [f"ok.{t}-org.dpstream.v1.{n}" for t, n in (("updates", "Update"), ("synthetic", "SyntheticRecord"),
            ("synthetic", "ReleaseManifest"), ("budget", "BudgetEvent"), ("deadletter", "DeadLetter"),
            ("state", "Snapshot"))]
want = []
for s in subjects:   # each path fails once with 503 and is retried
    want += [("POST", f"/subjects/{s}/versions")] * 2 + [("PUT", f"/config/{s}")] * 2
got = [(r["method"], r["path"]) for r in reqs]
assert got == want, got
for r in reqs:
    if r["method"] == "PUT":
        assert json.loads(r["body"]) == {"compatibility": "BACKWARD"}, r
    else:
        assert json.loads(json.loads(r["body"])["schema"])["namespace"] == "org.dpstream.v1", r
PY

# export looks the ids up and changes nothing
: > "$WORK/requests.log"
DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 60 "$BIN" export --config "$f" --out "$WORK/x" --connect-timeout-ms 1000 \
    > /dev/null 2> "$WORK/err"
grep -q "cannot reach 127.0.0.1:1" "$WORK/err" || bad "export did not get past the registry: $(head -c 500 "$WORK/err")"
python3 - "$WORK/requests.log" <<'PY' || bad "export's registry requests: $(cat "$WORK/requests.log")"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert reqs and all(r["method"] == "POST" and r["path"].count("/") == 2 for r in reqs), reqs
PY

# no CA: the self-signed certificate is refused
f=$(conf noca)
produce "$f"; rc=$?
[ $rc -eq 4 ] || bad "without the CA: exit $rc, want 4"
grep -qi "certificate" "$WORK/err" || bad "without the CA: the reason is not a certificate problem: $(head -c 500 "$WORK/err")"
grep -q "cannot reach" "$WORK/err" && bad "without the CA: went on to Kafka"
# verification off: accepted
f=$(conf noverify '"enable.ssl.certificate.verification": false')
produce "$f"; rc=$?
grep -q "cannot reach 127.0.0.1:1" "$WORK/err" || bad "verification off: $(head -c 500 "$WORK/err")"
# a wrong password: 401, not retried, the password not printed
f=$(conf badauth "\"ssl.ca.location\": \"$WORK/cert.pem\"" svc:wrong-pw)
produce "$f"; rc=$?
[ $rc -eq 4 ] || bad "wrong password: exit $rc, want 4"
grep -q "HTTP 401" "$WORK/err" || bad "wrong password: no HTTP 401 in $(head -c 500 "$WORK/err")"
grep -q "wrong-pw" "$WORK/err" && bad "wrong password: the user info is printed"
[ "$(wc -l < "$WORK/requests.log")" -eq 1 ] || bad "a 401 was retried: $(wc -l < "$WORK/requests.log") requests"
# a refusal (409) is not retried and says so
f=$(conf refuse "\"ssl.ca.location\": \"$WORK/cert.pem\"")
produce "$f"; rc=$?
[ $rc -eq 4 ] || bad "409: exit $rc, want 4"
grep -q "refused the schema under subject refuse.updates-org.dpstream.v1.Update: HTTP 409: Schema being registered is incompatible" "$WORK/err" \
    || bad "409: $(head -c 500 "$WORK/err")"
[ "$(wc -l < "$WORK/requests.log")" -eq 2 ] || bad "409: $(wc -l < "$WORK/requests.log") requests, want 2 (503, then 409)"

[ $fails -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "registry_client: TLS (CA, verification off, refused without CA), basic auth, 503 retried, 401/409 not, subjects and BACKWARD levels as documented"
