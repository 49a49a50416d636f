#!/usr/bin/env bash
# counter_cli.sh — `dpstream counter`: determinism, fail-closed errors and
# --variance.  Usage: bash counter_cli.sh <path-to-dpstream>
set -u
BIN=${1:?usage: counter_cli.sh <path-to-dpstream>}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
KEY2=ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# run NAME EXPECTED_RC STDIN_FILE ARGS... -> $TMP/NAME.out / .err
run() {
    local name=$1 want=$2 input=$3
    shift 3
    "$BIN" counter "$@" <"$input" >"$TMP/$name.out" 2>"$TMP/$name.err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$name: exit $rc, expected $want; stderr: $(cat "$TMP/$name.err")"
        return 1
    fi
    return 0
}

expect_err() {   # NAME REGEX
    if grep -Eq -e "$2" "$TMP/$1.err"; then pass "$1"; else fail "$1: stderr lacks /$2/: $(cat "$TMP/$1.err")"; fi
}

# Input: 40 lines including negatives and blanks around numbers.
for i in $(seq 1 40); do echo $(( (i * 7) % 11 - 5 )); done >"$TMP/in40"
head -n 32 "$TMP/in40" >"$TMP/in32"
: >"$TMP/empty"

# --- determinism, every kind of this family + simple ---------------------
for kind in simple block block_unbounded tree hybrid honaker; do
    for model in "--epsilon 1" "--rho 0.5"; do
        # shellcheck disable=SC2086
        run "$kind-a" 0 "$TMP/in32" --kind "$kind" --horizon 32 $model --key-hex $KEY --stream s1 || continue
        # shellcheck disable=SC2086
        run "$kind-b" 0 "$TMP/in32" --kind "$kind" --horizon 32 $model --key-hex $KEY --stream s1 || continue
        if ! cmp -s "$TMP/$kind-a.out" "$TMP/$kind-b.out"; then fail "$kind $model: two runs differ"; fi
        if [ "$(wc -l <"$TMP/$kind-a.out")" -ne 32 ]; then fail "$kind $model: expected 32 outputs"; fi
        if grep -Evq '^-?[0-9]+$' "$TMP/$kind-a.out"; then fail "$kind $model: non-integer output"; fi
        # A different key, stream or label changes the noise.
        # shellcheck disable=SC2086
        run "$kind-k" 0 "$TMP/in32" --kind "$kind" --horizon 32 $model --key-hex $KEY2 --stream s1
        # shellcheck disable=SC2086
        run "$kind-s" 0 "$TMP/in32" --kind "$kind" --horizon 32 $model --key-hex $KEY --stream s2
        # shellcheck disable=SC2086
        run "$kind-l" 0 "$TMP/in32" --kind "$kind" --horizon 32 $model --key-hex $KEY --stream s1 --label other
        for v in k s l; do
            if cmp -s "$TMP/$kind-a.out" "$TMP/$kind-$v.out"; then fail "$kind $model: --$v change did not change the noise"; fi
        done
        pass "$kind $model deterministic"
    done
done

# Key from a file gives the same outputs as the same key in hex.
printf '%s\n' "$KEY" >"$TMP/key.hex"
chmod 600 "$TMP/key.hex"
run tree-hex 0 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY
run tree-file 0 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 --key-file "$TMP/key.hex"
cmp -s "$TMP/tree-hex.out" "$TMP/tree-file.out" && pass "key file = key hex" || fail "key file differs from key hex"

# An unbounded kind run in two halves is NOT the CLI's job; but its prefix
# of outputs must not depend on later input (online release).
run hy-40 0 "$TMP/in40" --kind hybrid --rho 0.5 --key-hex $KEY
run hy-32 0 "$TMP/in32" --kind hybrid --rho 0.5 --key-hex $KEY
head -n 32 "$TMP/hy-40.out" | cmp -s - "$TMP/hy-32.out" && pass "outputs are online" || fail "outputs depend on later input"

# --replace doubles the calibrated sensitivity: variance grows.
run var-1 0 "$TMP/empty" --kind tree --horizon 8 --epsilon 1 --key-hex $KEY --variance
run var-2 0 "$TMP/empty" --kind tree --horizon 8 --epsilon 1 --key-hex $KEY --variance --replace
if awk 'NR==FNR { a[FNR] = $1; next } { if (!($1 > a[FNR])) bad = 1 } END { exit bad }' \
       "$TMP/var-1.out" "$TMP/var-2.out"; then pass "--replace increases the variance"; else fail "--replace did not increase the variance"; fi

# --- --variance ---------------------------------------------------------
run var-tree 0 "$TMP/empty" --kind tree --horizon 8 --rho 0.5 --key-hex $KEY --variance
# tree T=8: L = 4, σ² = 4/(2·0.5) = 4, variance popcount(t)·Var(N_Z(4)); N_Z(4) has variance 4 to 1e-6.
if [ "$(wc -l <"$TMP/var-tree.out")" -eq 8 ] && awk '
    function pc(x,  c) { c = 0; while (x) { c += x % 2; x = int(x / 2) } return c }
    { want = pc(NR) * 4; if ($1 < want * (1 - 1e-6) || $1 > want * (1 + 1e-6)) bad = 1 }
    END { exit bad }' "$TMP/var-tree.out"; then pass "--variance tree"; else fail "--variance tree: $(tr '\n' ' ' <"$TMP/var-tree.out")"; fi
run var-hon 0 "$TMP/empty" --kind honaker --horizon 1024 --epsilon 1 --key-hex $KEY --variance
run var-tr 0 "$TMP/empty" --kind tree --horizon 1024 --epsilon 1 --key-hex $KEY --variance
mh=$(sort -g "$TMP/var-hon.out" | tail -n 1); mt=$(sort -g "$TMP/var-tr.out" | tail -n 1)
awk -v h="$mh" -v t="$mt" 'BEGIN { exit !(h <= 0.6 * t) }' && pass "honaker max variance $mh <= 0.6 x tree $mt" \
    || fail "honaker max variance $mh vs tree $mt"
run var-unb 2 "$TMP/empty" --kind hybrid --rho 0.5 --key-hex $KEY --variance && expect_err var-unb "needs --horizon"
run var-unb-h 0 "$TMP/empty" --kind hybrid --horizon 100 --rho 0.5 --key-hex $KEY --variance
[ "$(wc -l <"$TMP/var-unb-h.out")" -eq 100 ] && pass "--variance unbounded with --horizon" || fail "--variance unbounded line count"

# --- errors ----------------------------------------------------------------
run e-nokind 2 "$TMP/in32" --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-nokind "--kind"
run e-badkind 2 "$TMP/in32" --kind nosuch --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-badkind "unknown kind"
run e-nohorizon 2 "$TMP/in32" --kind tree --epsilon 1 --key-hex $KEY && expect_err e-nohorizon "horizon"
run e-both 2 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 --rho 1 --key-hex $KEY && expect_err e-both "exactly one of --rho"
run e-none 2 "$TMP/in32" --kind tree --horizon 32 --key-hex $KEY && expect_err e-none "exactly one of --rho"
run e-negbudget 2 "$TMP/in32" --kind tree --horizon 32 --epsilon -1 --key-hex $KEY && expect_err e-negbudget "positive"
run e-nokey 2 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 && expect_err e-nokey "key"
run e-badkey 2 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 --key-hex 1234 && expect_err e-badkey "."
run e-blockkind 2 "$TMP/in32" --kind tree --horizon 32 --block 4 --epsilon 1 --key-hex $KEY && expect_err e-blockkind "--block only applies"
run e-bigblock 2 "$TMP/in32" --kind block --horizon 32 --block 33 --epsilon 1 --key-hex $KEY && expect_err e-bigblock "exceeds the horizon"
run e-buffers 2 "$TMP/in32" --kind tree --horizon 32 --buffers 3 --epsilon 1 --key-hex $KEY && expect_err e-buffers "--buffers only applies"
run e-badhorizon 2 "$TMP/in32" --kind tree --horizon 0 --epsilon 1 --key-hex $KEY && expect_err e-badhorizon "positive integer"
run e-arg 2 "$TMP/in32" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY --bogus && expect_err e-arg "unexpected argument"

# Bad integer line: outputs before it are printed, then a clear error with the line number.
printf '1\n2\n3\nfour\n5\n' >"$TMP/badline"
run e-line 1 "$TMP/badline" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-line "line 4"
[ "$(wc -l <"$TMP/e-line.out")" -eq 3 ] && pass "outputs before the bad line" || fail "expected 3 outputs before the bad line"
printf '1\n\n' >"$TMP/blank"
run e-blank 1 "$TMP/blank" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-blank "line 2"
printf '1\n99999999999999999999\n' >"$TMP/huge"
run e-huge 1 "$TMP/huge" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-huge "line 2"

# More lines than the horizon: the T outputs, then fail closed.
run e-horizon 1 "$TMP/in40" --kind tree --horizon 32 --epsilon 1 --key-hex $KEY && expect_err e-horizon "line 33.*horizon"
cmp -s "$TMP/e-horizon.out" "$TMP/tree-hex.out" && pass "horizon overflow printed the first T outputs" \
    || fail "horizon overflow outputs differ from the in-horizon run"

# Negative inputs are fine (deletions); CRLF line ends are accepted.
printf -- '-5\r\n-7\r\n3\r\n' >"$TMP/crlf"
run neg 0 "$TMP/crlf" --kind block --horizon 3 --epsilon 1 --key-hex $KEY
[ "$(wc -l <"$TMP/neg.out")" -eq 3 ] && pass "negative and CRLF input" || fail "negative/CRLF input"

"$BIN" counter --help >/dev/null 2>&1 && pass "--help" || fail "--help"

# --variance draws nothing, so it needs no key (issue 13.9); with a key, the same figures
nokey=$("$BIN" counter --kind tree --horizon 8 --rho 1 --variance 2>&1) || fail "--variance without a key refused: $nokey"
withkey=$("$BIN" counter --kind tree --horizon 8 --rho 1 --variance \
    --key-hex 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f 2>&1) || fail "--variance with a key"
[ "$nokey" = "$withkey" ] && [ "$(echo "$nokey" | wc -l)" -eq 8 ] || fail "--variance output depends on the key"
if echo 1 | "$BIN" counter --kind tree --horizon 8 --rho 1 > /dev/null 2>&1; then
    fail "counting without a key was accepted"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS failure(s)" >&2
    exit 1
fi
echo "all counter CLI checks passed"
