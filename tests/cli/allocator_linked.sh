#!/usr/bin/env bash
# allocator_linked.sh — the binary uses the allocator the build chose
# (CMakeLists.txt: DPSTREAM_JEMALLOC).  jemalloc is there for a measured
# reason (bench/RESULTS.md: glibc's malloc serialises librdkafka's
# cross-thread frees, −10 % end to end), and a link change that silently
# dropped it would only show up as a slower benchmark.  The build passes
# its choice in DPSTREAM_MALLOC: "jemalloc" (must be linked) or "system"
# (sanitizer builds and -DDPSTREAM_JEMALLOC=OFF: must not be).
# Usage: bash allocator_linked.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: allocator_linked.sh path/to/dpstream}
want=${DPSTREAM_MALLOC:?the build sets DPSTREAM_MALLOC}
libs=$(ldd "$BIN")
case "$want" in
  jemalloc)
    grep -q 'libjemalloc\.so' <<<"$libs" || { echo "FAIL: $BIN does not link jemalloc:" >&2; echo "$libs" >&2; exit 1; }
    # Linked is not enough, the program's mallocs must reach it (a malloc
    # found earlier in the search order, e.g. LD_PRELOAD=libc.so.6, would
    # win while jemalloc still loads): its exit statistics must count small
    # allocations, which only the program makes (jemalloc's own are large).
    small=$(MALLOC_CONF=stats_print:true "$BIN" --help 2>&1 >/dev/null | awk '$1 == "small:" && !n {print $3; n = 1}')
    [ "${small:-0}" -gt 0 ] || { echo "FAIL: $BIN links jemalloc but its mallocs do not go through it" >&2; exit 1; }
    ;;
  system)
    if grep -q 'libjemalloc\.so' <<<"$libs"; then echo "FAIL: $BIN links jemalloc in a build that chose the system allocator" >&2; exit 1; fi
    ;;
  *) echo "FAIL: unknown DPSTREAM_MALLOC '$want'" >&2; exit 1 ;;
esac
echo "allocator: $want"
