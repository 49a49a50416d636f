#!/usr/bin/env bash
# registry_config.sh — the config's "schema_registry" block without a
# registry (README "Schema Registry"):
#   * validation: every key checked, errors name the key, never echo the
#     basic-auth user info; hand-pasted wire.schema_ids or plain framing
#     beside a registry refused; check-config accepts a valid block
#     without contacting the registry;
#   * fail closed: with the registry away (127.0.0.1:1 refuses every
#     connection) run, produce, load and export stop before touching Kafka,
#     with exit 4, within their retry budget (max.retries 1 ->
#     2 attempts), and one line naming the registry request and the reason.
# Usage: bash registry_config.sh /path/to/dpstream
set -uo pipefail
BIN=${1:?usage: registry_config.sh path/to/dpstream}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
STREAMS='"streams": [{"match": "p", "synthesizer": "window", "config": {"horizon": 2, "k": 1, "rho": 1}}]'

# $1 = the schema_registry value (JSON) [, $2 = extra top-level keys]; prints the config path
conf() {
    local f="$WORK/c$RANDOM.json"
    printf '{"schema_registry": %s%s, %s}\n' "$1" "${2:+, $2}" "$STREAMS" > "$f"
    echo "$f"
}
# $1 = registry JSON, $2 = text the error must contain [, $3 = extra keys]
refused() {
    local f rc=0
    f=$(conf "$1" "${3:-}")
    "$BIN" check-config --config "$f" > "$WORK/out" 2> "$WORK/err" || rc=$?
    [ $rc -eq 2 ] || bad "$1: check-config exit $rc, want 2"
    grep -qF -- "$2" "$WORK/err" || bad "$1: error does not say '$2': $(cat "$WORK/err")"
}
refused '{}' 'schema_registry.url: required'
refused '{"url": "ftp://r"}' 'schema_registry.url: must start with http:// or https://'
refused '{"url": "http://r", "colour": 1}' 'unknown key "colour"'
refused '{"url": "http://r", "max.retries": -1}' 'schema_registry.max.retries: must be an integer in 0..100'
refused '{"url": "http://r", "request.timeout.ms": "5s"}' 'schema_registry.request.timeout.ms'
refused '{"url": "http://r", "compatibility": "SOMETIMES"}' 'schema_registry.compatibility: must be null or one of'
refused '{"url": "http://r", "basic.auth.credentials.source": "SASL_INHERIT"}' 'only "USER_INFO"'
refused '{"url": "http://r", "ssl.certificate.location": "/c.pem"}' 'ssl.certificate.location and ssl.key.location go together'
refused '{"url": "http://r", "basic.auth.user.info": "s3cr3t-no-colon"}' 'basic.auth.user.info: must be "user:password"'
grep -q "s3cr3t" "$WORK/err" && bad "the user info is echoed: $(cat "$WORK/err")"
refused '{"url": "http://r"}' 'drop "schema_ids"' \
    '"wire": {"framing": "confluent", "schema_ids": {"Update": 1, "SyntheticRecord": 2, "ReleaseManifest": 3, "BudgetEvent": 4, "DeadLetter": 5, "Snapshot": 6}}'
refused '{"url": "http://r"}' 'the framing is "confluent"' '"wire": {"framing": "plain"}'

full='{"url": "https://registry.example:8081/", "basic.auth.credentials.source": "USER_INFO",
       "basic.auth.user.info": "svc:pa55word", "ssl.ca.location": "/etc/ssl/ca.pem",
       "ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem", "ssl.key.password": "kp",
       "enable.ssl.certificate.verification": true, "request.timeout.ms": 5000, "max.retries": 2,
       "retries.wait.ms": 100, "retries.max.wait.ms": 1000, "compatibility": null}'
f=$(conf "$full")
"$BIN" check-config --config "$f" > "$WORK/out" 2> "$WORK/err" || bad "a full schema_registry block refused: $(cat "$WORK/err")"
grep -q "pa55word" "$WORK/out" "$WORK/err" && bad "check-config prints the user info"
grep -q 'Confluent-framed' "$WORK/out" || bad "check-config does not say the wire format is Confluent-framed: $(cat "$WORK/out")"
grep -q 'schema registry https://registry.example:8081: .*dpstream.updates-org.dpstream.v1.Update; compatibility left as it is' "$WORK/out" \
    || bad "check-config does not show the registry and its subjects: $(cat "$WORK/out")"
"$BIN" check-config --config "$f" --json > "$WORK/out" 2> "$WORK/err" || bad "check-config --json: $(cat "$WORK/err")"
python3 - "$WORK/out" <<'PY' || bad "check-config --json: schema_registry block wrong: $(cat "$WORK/out")"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["schema_registry"]
assert d["wire"] == "confluent"
assert r["url"] == "https://registry.example:8081" and r["compatibility"] is None
assert r["subjects"]["ReleaseManifest"] == "dpstream.synthetic-org.dpstream.v1.ReleaseManifest", r
assert r["subjects"]["Snapshot"] == "dpstream.state-org.dpstream.v1.Snapshot", r
assert "pa55word" not in open(sys.argv[1]).read()
PY
f=$(conf "$(printf '{"url": "http://127.0.0.1:1/apis/ccompat/v7", "basic.auth.user.info": "svc:pa55word", "max.retries": 1, "retries.wait.ms": 100, "request.timeout.ms": 2000}')")

# --- the registry away: fail closed --------------------------------------------------
printf '{"stream": "p", "step": 1, "kind": "REPORT", "entity": "a", "value": 0}\n' > "$WORK/in.jsonl"
echo '{"stream": "p", "step": {"column": "t"}, "entity": {"column": "person"}, "payload": {"type": "category", "column": "v"}}' \
    > "$WORK/map.json"
printf 'person,t,v\na,1,0\n' > "$WORK/rows.csv"
away() {   # $1 = name, rest = command
    local name=$1 start=$SECONDS rc=0; shift
    # no broker either: the registry must be asked (and fail) before Kafka is
    DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 60 "$@" > "$WORK/out" 2> "$WORK/err" || rc=$?
    [ $rc -eq 4 ] || bad "$name: exit $rc, want 4 ($(head -c 400 "$WORK/err"))"
    [ $((SECONDS - start)) -le 10 ] || bad "$name: took $((SECONDS - start)) s"
    grep -q "schema registry POST http://127.0.0.1:1/apis/ccompat/v7/subjects/dpstream.updates-org.dpstream.v1.Update\(/versions\)\?: .*after 2 attempts" "$WORK/err" \
        || bad "$name: no line naming the registry request and attempts: $(head -c 600 "$WORK/err")"
    grep -q "cannot reach 127.0.0.1:1" "$WORK/err" && bad "$name: Kafka was tried before the registry"
    grep -q "pa55word" "$WORK/err" && bad "$name: the user info is printed"
    [ "$(wc -l < "$WORK/err")" -le 2 ] || bad "$name: $(wc -l < "$WORK/err") lines on stderr"
}
away run "$BIN" run --config "$f" --key-hex $K --connect-timeout-ms 2000
away produce "$BIN" produce --config "$f" --input "$WORK/in.jsonl" --connect-timeout-ms 2000
away load "$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" --config "$f" --connect-timeout-ms 2000
away export "$BIN" export --config "$f" --out "$WORK/x" --connect-timeout-ms 2000
[ ! -e "$WORK/x" ] || bad "export with the registry away left $WORK/x behind"
[ ! -e "$WORK/x" ] || rm -rf "$WORK/x"

# --- no registry, hand-registered ids: each command needs the ids it uses ------------
# A producer's config with only the Update id is enough for produce and load
# (they then fail only at Kafka: exit 4); run, check-config, export and
# inspect-snapshot name the id they miss (exit 2) before touching Kafka.
g="$WORK/update-only.json"
printf '{"wire": {"framing": "confluent", "schema_ids": {"Update": 7}}, %s}\n' "$STREAMS" > "$g"
ids() {   # $1 = name, $2 = wanted exit, $3 = text stderr must contain, rest = command
    local name=$1 want=$2 text=$3 rc=0; shift 3
    DPSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 60 "$@" > "$WORK/out" 2> "$WORK/err" || rc=$?
    [ $rc -eq "$want" ] || bad "$name with only the Update id: exit $rc, want $want ($(head -c 400 "$WORK/err"))"
    grep -qF -- "$text" "$WORK/err" || bad "$name with only the Update id: stderr does not say '$text': $(head -c 400 "$WORK/err")"
}
ids produce 4 "cannot reach 127.0.0.1:1" "$BIN" produce --config "$g" --input "$WORK/in.jsonl" --connect-timeout-ms 1000
ids load 4 "cannot reach 127.0.0.1:1" "$BIN" load --input "$WORK/rows.csv" --mapping "$WORK/map.json" --config "$g" --connect-timeout-ms 1000
ids run 2 'wire.schema_ids.SyntheticRecord: required with confluent framing: `run`' \
    "$BIN" run --config "$g" --key-hex $K --connect-timeout-ms 1000
ids check-config 2 'wire.schema_ids.SyntheticRecord: required' "$BIN" check-config --config "$g"
ids export 2 'wire.schema_ids.SyntheticRecord: required with confluent framing: `export`' \
    "$BIN" export --config "$g" --out "$WORK/x" --connect-timeout-ms 1000
[ ! -e "$WORK/x" ] || bad "export refused for its ids left $WORK/x behind"
ids inspect-snapshot 2 'wire.schema_ids.Snapshot: required with confluent framing: `inspect-snapshot`' \
    "$BIN" inspect-snapshot --config "$g" --key-hex $K --timeout-ms 1000
[ $fails -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "registry_config: the schema_registry block is validated key by key; with the registry away run, produce, load and export fail closed (exit 4) and say why; without one each command needs only the schema ids it uses"
