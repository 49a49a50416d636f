#!/usr/bin/env bash
# help_version.sh — the CLI's self-description:
#   * `dpstream --version` prints the CMake project version;
#   * `dpstream help` lists the commands (exit 0); `dpstream help CMD` is
#     exactly `dpstream CMD --help` for every listed command (exit 0 both);
#     `dpstream help nope` is a usage error (exit 2) naming the command;
#   * every option the help of `run`, `load` and `export` names appears in
#     README.md (as `--flag`), so the README's flag tables stay complete.
# Usage: bash help_version.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: help_version.sh path/to/dpstream}
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

want=$(sed -n 's/^project(dpstream VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$want" ] || fail "no project VERSION in CMakeLists.txt"
[ "$("$BIN" --version)" = "dpstream $want" ] || fail "--version: '$("$BIN" --version)', want 'dpstream $want'"

"$BIN" help > "$WORK/help" || fail "dpstream help exited $?"
cmds=$(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}' "$WORK/help")
[ "$(echo "$cmds" | wc -w)" -ge 12 ] || fail "dpstream help lists too few commands: $cmds"
for c in $cmds; do
    "$BIN" help "$c" > "$WORK/a" 2>&1 || fail "dpstream help $c exited $?"
    "$BIN" "$c" --help > "$WORK/b" 2>&1 || fail "dpstream $c --help exited $?"
    [ -s "$WORK/a" ] || fail "dpstream help $c printed nothing"
    cmp -s "$WORK/a" "$WORK/b" || fail "dpstream help $c differs from dpstream $c --help"
done
rc=0
"$BIN" help nope > /dev/null 2> "$WORK/err" || rc=$?
[ "$rc" = 2 ] && grep -q "unknown command 'nope'" "$WORK/err" || fail "help nope: exit $rc"

for c in run load export; do
    # an empty or failing --help would make the loop below check nothing
    flags=$("$BIN" "$c" --help | grep -o -- '--[a-z][a-z-]*' | sort -u) || fail "dpstream $c --help names no option"
    [ "$(echo "$flags" | wc -w)" -ge 5 ] || fail "dpstream $c --help names too few options: $flags"
    for f in $flags; do
        grep -q -- "\`$f[\` ]" "$SRC/README.md" || fail "README.md does not list \`$c $f\`"
    done
done
echo "help_version: ok (dpstream $want, $(echo "$cmds" | wc -w) commands, run/load/export flags in the README)"
