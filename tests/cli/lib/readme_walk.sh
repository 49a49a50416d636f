# readme_walk.sh — sourced by tests/cli/readme_walk.sh and
# tests/integration/readme_walk.sh (not a test itself).
#
# readme_walk MODE BIN SRC WORK: run the README's walked blocks
# (tests/cli/lib/readme_blocks.py; MODE offline or all) as a new user
# would, in WORK/repo — a fresh directory that looks like a clone of SRC
# (its top-level entries linked, `build` linking BIN's build tree) — with
# HOME=WORK/home, so `cmake --install build --prefix ~/.local` installs
# there, and PATH without any dpstream.  Fails (returns 1) if a block
# fails, the walk takes longer than README_WALK_TIMEOUT seconds (default
# 600), or the `dpstream` the blocks ran is not the one they installed.
readme_walk() {
    local mode=$1 bin=$2 src=$3 work=$4 e
    mkdir -p "$work/home" "$work/repo"
    for e in "$src"/* "$src"/.ci; do
        case "$(basename "$e")" in build|build-*|'*') continue ;; esac
        [ -e "$e" ] && ln -s "$e" "$work/repo/$(basename "$e")"
    done
    ln -s "$(dirname "$bin")" "$work/repo/build"
    python3 "$src/tests/cli/lib/readme_blocks.py" "$src/README.md" script "$mode" "$work/walk.sh" || return 1
    echo 'echo "readme_walk: dpstream is $(command -v dpstream)" >&2' >> "$work/walk.sh"
    local path=""
    path=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do
        [ -n "$d" ] && [ ! -x "$d/dpstream" ] && printf '%s:' "$d"; done)
    # own session: on a timeout the whole walk (a background `dpstream run`
    # included) is killed by its process group, which this test started
    (cd "$work/repo" && HOME="$work/home" PATH="${path%:}" exec setsid bash "$work/walk.sh") \
        > "$work/walk.out" 2> "$work/walk.err" &
    local pid=$! t=0 rc=0
    while kill -0 "$pid" 2> /dev/null; do
        if [ "$t" -ge "${README_WALK_TIMEOUT:-600}" ]; then
            kill -TERM -- "-$pid" 2> /dev/null || true
            sleep 2
            kill -KILL -- "-$pid" 2> /dev/null || true
            echo "readme_walk: timed out after ${t}s" >> "$work/walk.err"
            break
        fi
        sleep 1
        t=$((t + 1))
    done
    wait "$pid" || rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q "^readme_walk: dpstream is $work/home/.local/bin/dpstream\$" "$work/walk.err"; then
        echo "--- walk stderr (tail)" >&2
        grep -v -e DEBUG -e CONFWARN "$work/walk.err" | tail -40 >&2
        return 1
    fi
    return 0
}
