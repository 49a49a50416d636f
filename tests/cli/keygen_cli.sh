#!/usr/bin/env bash
# keygen_cli.sh — `dpstream keygen --out F`: mode 0600, 32 bytes, refuses
# to overwrite, fresh keys differ, key usable by `sample --key-file`.
# usage: bash keygen_cli.sh <dpstream>
set -u
BIN=${1:?usage: keygen_cli.sh <path-to-dpstream>}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dp_keygen_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok()   { echo "ok: $*"; }

umask 022   # keygen must not rely on a restrictive umask
"$BIN" keygen --out "$TMP/k1" 2>"$TMP/err" || fail "keygen k1 exit status: $(cat "$TMP/err")"
"$BIN" keygen --out "$TMP/k2" 2>/dev/null  || fail "keygen k2 exit status"
[ -f "$TMP/k1" ] || fail "k1 not created"

mode=$(stat -c %a "$TMP/k1")
[ "$mode" = 600 ] && ok "mode 0600" || fail "mode is $mode, want 600"
size=$(stat -c %s "$TMP/k1")
[ "$size" -eq 32 ] && ok "32 bytes" || fail "size is $size, want 32"

cmp -s "$TMP/k1" "$TMP/k2" && fail "two fresh keys are identical" || ok "two keys differ"
# Not trivially structured: a 32-byte CSPRNG key has at least 2 distinct bytes
# except with probability 2^-248.
distinct=$(od -An -v -tx1 "$TMP/k1" | tr -s ' ' '\n' | grep -v '^$' | sort -u | wc -l)
[ "$distinct" -ge 2 ] || fail "key has $distinct distinct byte values"

# Refuses to overwrite, and leaves the existing key untouched.
cp "$TMP/k1" "$TMP/k1.copy"
if "$BIN" keygen --out "$TMP/k1" 2>"$TMP/err"; then
    fail "overwrote an existing key"
else
    grep -q "cannot create" "$TMP/err" && ok "refuses to overwrite" || fail "no clear message: $(cat "$TMP/err")"
fi
cmp -s "$TMP/k1" "$TMP/k1.copy" || fail "existing key was modified"

# Usable by sample --key-file, deterministic per key, different per key.
"$BIN" sample --dist dgauss --sigma2 100 --count 200 --key-file "$TMP/k1" >"$TMP/s1a" || fail "sample with k1"
"$BIN" sample --dist dgauss --sigma2 100 --count 200 --key-file "$TMP/k1" >"$TMP/s1b" || fail "sample with k1 again"
"$BIN" sample --dist dgauss --sigma2 100 --count 200 --key-file "$TMP/k2" >"$TMP/s2"  || fail "sample with k2"
[ "$(wc -l <"$TMP/s1a")" -eq 200 ] || fail "sample printed the wrong count"
cmp -s "$TMP/s1a" "$TMP/s1b" && ok "key file usable, deterministic" || fail "same key file gave different output"
cmp -s "$TMP/s1a" "$TMP/s2" && fail "different keys gave the same output" || ok "different keys, different output"
# The same key in hex gives the same stream as the raw file.
hex=$(od -An -v -tx1 "$TMP/k1" | tr -d ' \n')
"$BIN" sample --dist dgauss --sigma2 100 --count 200 --key-hex "$hex" >"$TMP/s1h" || fail "sample with hex"
cmp -s "$TMP/s1a" "$TMP/s1h" && ok "raw key file = same key in hex" || fail "hex and raw file differ"

# Usage errors.
"$BIN" keygen 2>"$TMP/err" && fail "keygen without --out succeeded"
grep -q -- "--out" "$TMP/err" || fail "missing --out: no clear message"
"$BIN" keygen --out "$TMP/nodir/k" 2>"$TMP/err" && fail "keygen into a missing directory succeeded"
grep -q "cannot create" "$TMP/err" || fail "missing directory: no clear message"
[ -e "$TMP/nodir/k" ] && fail "file created despite error"
"$BIN" keygen --bogus 2>/dev/null && fail "unknown flag accepted"
"$BIN" keygen --help | grep -q 0600 || fail "--help does not mention the file mode"

# --- key files as people write them (issue 13.6) -------------------------------
S() { "$BIN" sample --dist dlap --scale 1 --count 5 "$@"; }
HEX=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
S --key-hex $HEX > "$TMP/ref" || fail "sample with the hex key"
# base64 text of the same 32 bytes is the same key
python3 -c "import base64,sys; sys.stdout.write(base64.b64encode(bytes(range(32))).decode()+'\n')" > "$TMP/b64"
chmod 600 "$TMP/b64"
S --key-file "$TMP/b64" > "$TMP/b64.out" 2>"$TMP/err" || fail "a base64 key file was refused: $(cat "$TMP/err")"
cmp -s "$TMP/ref" "$TMP/b64.out" || fail "base64 key file differs from its hex"
# 32 hex digits: a 16-byte key as text, not 32 raw bytes
printf '%s' 000102030405060708090a0b0c0d0e0f > "$TMP/hex32"; chmod 600 "$TMP/hex32"
S --key-file "$TMP/hex32" > /dev/null 2>"$TMP/err" && fail "32 hex digits were used as a raw key"
grep -q "32 hex digits" "$TMP/err" || fail "32 hex digits: no clear message"
# all-zero keys, as a file and as hex
head -c 32 /dev/zero > "$TMP/zero"; chmod 600 "$TMP/zero"
S --key-file "$TMP/zero" > /dev/null 2>"$TMP/err" && fail "an all-zero key file was accepted"
grep -q "all zero" "$TMP/err" || fail "all-zero key file: no clear message"
S --key-hex 0000000000000000000000000000000000000000000000000000000000000000 > /dev/null 2>&1 \
    && fail "an all-zero hex key was accepted"
# group/world-readable key files are refused unless allowed explicitly
"$BIN" keygen --out "$TMP/open" > /dev/null 2>&1 || fail "keygen"
chmod 644 "$TMP/open"
S --key-file "$TMP/open" > /dev/null 2>"$TMP/err" && fail "a world-readable key file was accepted"
grep -q "chmod 600" "$TMP/err" || fail "open key file: no clear message"
DPSTREAM_ALLOW_OPEN_KEY_FILES=1 S --key-file "$TMP/open" > /dev/null 2>&1 || fail "DPSTREAM_ALLOW_OPEN_KEY_FILES=1 not honoured"
chmod 600 "$TMP/open"
S --key-file "$TMP/open" > /dev/null 2>&1 || fail "a 0600 key file was refused"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed" >&2; exit 1; fi
echo "all keygen CLI checks passed"
