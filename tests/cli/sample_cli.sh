#!/usr/bin/env bash
# sample_cli.sh — `dpstream sample`: determinism, stream separation,
# parameter parsing and error handling.   usage: bash sample_cli.sh <dpstream>
set -u
BIN=${1:?usage: sample_cli.sh <path-to-dpstream>}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dp_sample_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
KEY2=ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok()   { echo "ok: $*"; }

# expect_err <description> <stderr-substring> <args...>: non-zero exit and a message
expect_err() {
    local what=$1 msg=$2; shift 2
    "$BIN" sample "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ $rc -eq 0 ]; then fail "$what: exit 0"; return; fi
    if [ -s "$TMP/out" ]; then fail "$what: printed to stdout"; return; fi
    if ! grep -q -- "$msg" "$TMP/err"; then fail "$what: stderr lacks '$msg': $(cat "$TMP/err")"; return; fi
    ok "$what (exit $rc)"
}

# --- help documents the defaults ---
"$BIN" sample --help >"$TMP/help" || fail "--help exit status"
for d in 'default "sample"' 'default 0' 'default "cli.sample"'; do
    grep -q -- "$d" "$TMP/help" || fail "--help does not document $d"
done

# --- determinism and format ---
"$BIN" sample --dist dgauss --sigma2 100 --count 1000 --key-hex $KEY >"$TMP/a" || fail "dgauss run"
"$BIN" sample --dist dgauss --sigma2 100 --count 1000 --key-hex $KEY >"$TMP/b" || fail "dgauss rerun"
cmp -s "$TMP/a" "$TMP/b" && ok "identical arguments -> identical output" || fail "rerun differs"
[ "$(wc -l <"$TMP/a")" -eq 1000 ] || fail "expected 1000 lines"
grep -qvE '^-?[0-9]+$' "$TMP/a" && fail "non-integer line in output"
# A prefix: --count 10 prints the first 10 of the same stream.
"$BIN" sample --dist dgauss --sigma2 100 --count 10 --key-hex $KEY >"$TMP/c"
head -n 10 "$TMP/a" | cmp -s - "$TMP/c" && ok "count is a prefix" || fail "count 10 is not a prefix"
# Explicit defaults equal omitted ones.
"$BIN" sample --dist dgauss --sigma2 100 --count 1000 --key-hex $KEY --stream sample --step 0 --label cli.sample >"$TMP/d"
cmp -s "$TMP/a" "$TMP/d" && ok "documented defaults" || fail "explicit defaults differ from omitted ones"
# Same value written as a/b or decimal gives the same draws.
"$BIN" sample --dist dgauss --sigma2 200/2 --count 1000 --key-hex $KEY >"$TMP/e"
"$BIN" sample --dist dgauss --sigma2 1e2 --count 1000 --key-hex $KEY >"$TMP/f"
cmp -s "$TMP/a" "$TMP/e" && cmp -s "$TMP/a" "$TMP/f" && ok "100 = 200/2 = 1e2" || fail "equal rationals differ"
# Key file gives the same stream as the same key in hex.
printf '%s\n' $KEY >"$TMP/key.hex"
chmod 600 "$TMP/key.hex"
"$BIN" sample --dist dgauss --sigma2 100 --count 1000 --key-file "$TMP/key.hex" >"$TMP/g"
cmp -s "$TMP/a" "$TMP/g" && ok "--key-file = --key-hex" || fail "key file and hex differ"

# --- separation: key, label, stream, step each change the stream ---
differs() {  # differs <description> <args...>
    local what=$1; shift
    "$BIN" sample --dist dgauss --sigma2 100 --count 1000 "$@" >"$TMP/x" || { fail "$what: run"; return; }
    local same
    same=$(paste -d' ' "$TMP/a" "$TMP/x" | awk '$1==$2' | wc -l)
    # Two independent DGauss(100) draws agree w.p. sum p(x)^2 ~ 0.028:
    # ~28 of 1000, sd ~5.  Fewer than 80 agreements means independent-looking.
    if [ "$same" -lt 80 ]; then ok "$what ($same/1000 equal)"; else fail "$what: $same/1000 equal"; fi
}
differs "different key"    --key-hex $KEY2
differs "different label"  --key-hex $KEY --label other
differs "different stream" --key-hex $KEY --stream other
differs "different step"   --key-hex $KEY --step 1

# --- dlap with a rational scale; decimals exact ---
"$BIN" sample --dist dlap --scale 0.1 --count 100 --key-hex $KEY >"$TMP/l1" || fail "dlap 0.1"
"$BIN" sample --dist dlap --scale 1/10 --count 100 --key-hex $KEY >"$TMP/l2" || fail "dlap 1/10"
cmp -s "$TMP/l1" "$TMP/l2" && ok "dlap 0.1 = 1/10" || fail "0.1 and 1/10 differ"
"$BIN" sample --dist dlap --scale 10 --count 0 --key-hex $KEY >"$TMP/l0" || fail "count 0"
[ ! -s "$TMP/l0" ] || fail "count 0 printed something"

# --- sanity of the distribution through the CLI: DLap(10) sample variance ---
"$BIN" sample --dist dlap --scale 10 --count 200000 --key-hex $KEY >"$TMP/lv" || fail "dlap big run"
# Exact variance 2q/(1-q)^2 with q = e^-0.1 is 199.0.  The sample variance
# has sd ~ var·sqrt((kurtosis - 1)/n) = 199·sqrt(5/2e5) ~ 1.0 (Laplace
# kurtosis 6); allow 5 sd (two-sided p ~ 6e-7).  (The exact GoF tests live
# in tests/unit/test_sample.c; this checks the CLI wiring.)
awk 'function abs(v){return v<0?-v:v} {s+=$1; s2+=$1*$1; n++}
     END {m=s/n; v=s2/n-m*m; q=exp(-0.1); e=2*q/((1-q)^2); sd=e*sqrt(5/n);
          if (abs(v-e) > 5*sd) {print "var " v " vs " e; exit 1}}' "$TMP/lv" \
    && ok "DLap(10) sample variance" || fail "DLap(10) variance off"

# --- 10^6 lines fast ---
start=$(date +%s%N)
"$BIN" sample --dist dgauss --sigma2 100 --count 1000000 --key-hex $KEY >"$TMP/big" || fail "10^6 run"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$(wc -l <"$TMP/big")" -eq 1000000 ] || fail "10^6 lines expected"
# generous bound (sanitizer builds are ~5x slower than the ~0.15 s release run)
[ "$ms" -lt 20000 ] && ok "10^6 draws in $ms ms" || fail "10^6 draws took $ms ms"

# --- errors ---
expect_err "no arguments"          "required"          
expect_err "unknown dist"          "unknown --dist"     --dist cauchy --scale 1 --count 1 --key-hex $KEY
expect_err "--scale with dgauss"   "--scale applies"    --dist dgauss --scale 1 --count 1 --key-hex $KEY
expect_err "--sigma2 with dlap"    "--sigma2 applies"   --dist dlap --sigma2 1 --count 1 --key-hex $KEY
expect_err "missing parameter"     "needs --sigma2"     --dist dgauss --count 1 --key-hex $KEY
expect_err "missing count"         "--count"            --dist dgauss --sigma2 1 --key-hex $KEY
expect_err "bad count"             "--count"            --dist dgauss --sigma2 1 --count -5 --key-hex $KEY
expect_err "bad count 2"           "--count"            --dist dgauss --sigma2 1 --count 12x --key-hex $KEY
expect_err "bad step"              "--step"             --dist dgauss --sigma2 1 --count 1 --step x --key-hex $KEY
expect_err "negative sigma2"       "negative"           --dist dgauss --sigma2 -1 --count 1 --key-hex $KEY
expect_err "zero denominator"      "zero denominator"   --dist dlap --scale 1/0 --count 1 --key-hex $KEY
expect_err "garbage scale"         "not a number"       --dist dlap --scale abc --count 1 --key-hex $KEY
expect_err "sigma2 out of range"   "outside supported"  --dist dgauss --sigma2 2000000000000 --count 1 --key-hex $KEY
expect_err "sigma2 too small"      "outside supported"  --dist dgauss --sigma2 1/2048 --count 1 --key-hex $KEY
expect_err "scale zero"            "must be > 0"        --dist dlap --scale 0 --count 1 --key-hex $KEY
expect_err "scale too large"       "outside supported"  --dist dlap --scale 2e12 --count 1 --key-hex $KEY
expect_err "no key"                "exactly one"        --dist dlap --scale 1 --count 1
expect_err "two keys"              "exactly one"        --dist dlap --scale 1 --count 1 --key-hex $KEY --key-file "$TMP/key.hex"
expect_err "short hex key"         "64 hex"             --dist dlap --scale 1 --count 1 --key-hex abcd
expect_err "unreadable key file"   "cannot open"        --dist dlap --scale 1 --count 1 --key-file "$TMP/nope"
printf 'short' >"$TMP/badkey"
chmod 600 "$TMP/badkey"
expect_err "malformed key file"    "32 raw bytes"       --dist dlap --scale 1 --count 1 --key-file "$TMP/badkey"
expect_err "unknown flag"          "unknown argument"   --dist dlap --scale 1 --count 1 --key-hex $KEY --frobnicate
expect_err "flag without value"    "needs a value"      --dist dlap --scale 1 --count 1 --key-hex
expect_err "duplicate flag"        "more than once"     --dist dlap --scale 1 --scale 2 --count 1 --key-hex $KEY

# Write failure is reported (stdout closed / full device).
if [ -w /dev/full ]; then
    "$BIN" sample --dist dlap --scale 1 --count 100000 --key-hex $KEY >/dev/full 2>"$TMP/err"
    rc=$?
    [ $rc -ne 0 ] && grep -q "cannot write" "$TMP/err" && ok "write error reported" || fail "write error: rc=$rc"
fi

if [ $fails -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "all sample CLI checks passed"
