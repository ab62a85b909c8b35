# tmux_harness.sh - what the end-to-end UI tests share: a private tmux
# server, screen capture, pass/fail reporting and polling with deadlines.
# Sourced after the caller sets SOCK (the tmux socket name), T (its temporary
# folder) and S (the session name). KEEP_T=1 keeps T (the runs' stderr) for a look.

tm() { tmux -L "$SOCK" "$@"; }
cleanup() {
    tm kill-server >/dev/null 2>&1
    # a ddptop killed with the server may still be on its way out
    [ -n "${KEEP_T:-}" ] && { echo "kept $T"; return; }
    rm -rf "$T" 2>/dev/null || { sleep 1; rm -rf "$T"; }
}
trap cleanup EXIT
# A test killed outright (ctest's timeout) runs no trap: this watchdog then
# ends the server, and with it the runs in its panes (they get SIGHUP), so
# that a stuck run cannot go on taking the cores from the tests after it.
# It leaves this script's process tree and group (the outer subshell exits
# at once), since a timeout kills those whole.
(setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; tmux -L "$2" kill-server' \
    watchdog $$ "$SOCK" </dev/null >/dev/null 2>&1 &)

FAILS=0
pass() { echo "ok   - $*"; }
fail() {
    echo "FAIL - $*"
    FAILS=$((FAILS + 1))
    echo "----- screen -----"
    tm capture-pane -p -t "$S" 2>/dev/null | sed 's/^/| /'
    echo "------------------"
}
screen() { tm capture-pane -p -t "$S"; }
# history_tail N: the last N lines of the pane's history (a report printed
# after the UI ended), to show with a failure.
history_tail() { tm capture-pane -p -S - -t "$S" 2>/dev/null | grep -v '^ *$' | tail -n "$1" | sed 's/^/| /'; }
# The header's step counter, e.g. 123.
step_now() { screen | grep -Eo 'step [0-9]+/[0-9]+' | head -1 | sed -E 's/step ([0-9]+)\/.*/\1/'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for REGEX SECONDS: polls the screen until grep -E matches.
# kernels_pane_matches NAME JSON: the Kernels pane on screen against the
# JSON report of the same trace (check_kernels_pane.py); NAME tags the
# messages and the files in $T
kernels_pane_matches() {
    screen >"$T/$1.txt"
    if python3 "$(dirname "${BASH_SOURCE[0]}")/check_kernels_pane.py" "$T/$1.txt" "$2" >"$T/$1.check" 2>&1; then
        pass "$1: the Kernels pane is the JSON report's ($(tail -1 "$T/$1.check"))"
    else
        fail "$1: the Kernels pane differs from the JSON report"
        sed 's/^/  /' "$T/$1.check"
    fi
}
wait_for() {
    local re=$1 deadline=$(($(now_ms) + $2 * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        screen | grep -Eq -- "$re" && return 0
        sleep 0.1
    done
    return 1
}
# wait_for_all REGEX SECONDS: the same over the scrollback too (a report
# longer than the window).
wait_for_all() {
    local re=$1 deadline=$(($(now_ms) + $2 * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        tm capture-pane -p -S - -t "$S" | grep -Eq -- "$re" && return 0
        sleep 0.1
    done
    return 1
}
# wait_for_p PCRE SECONDS: the same with grep -P (for Unicode ranges).
wait_for_p() {
    local re=$1 deadline=$(($(now_ms) + $2 * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        screen | grep -Pq -- "$re" && return 0
        sleep 0.1
    done
    return 1
}
# wait_gone REGEX SECONDS: polls the screen until grep -E no longer matches.
wait_gone() {
    local re=$1 deadline=$(($(now_ms) + $2 * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        screen | grep -Eq -- "$re" || return 0
        sleep 0.1
    done
    return 1
}
# wait_file FILE SECONDS: until FILE exists and is not empty.
wait_file() {
    local deadline=$(($(now_ms) + $2 * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
# check_shell TAG: after ddptop exits, the terminal is in normal mode:
# alternate screen off, and a typed command echoes and runs.
check_shell() {
    local tag=$1
    if [ "$(tm display -p -t "$S" '#{alternate_on}')" = 0 ]; then
        pass "$tag: alternate screen is off after exit"
    else
        fail "$tag: alternate screen still on after exit"
    fi
    tm send-keys -t "$S" -l "echo ok-$tag-\$((6*7))"
    tm send-keys -t "$S" Enter
    # the typed line echoes (echo mode back) and its output appears (icanon, onlcr)
    if wait_for "^ok-$tag-42\$" 5 && screen | grep -q "echo ok-$tag-"; then
        pass "$tag: the shell echoes and runs commands"
    else
        fail "$tag: the terminal was not restored (no echo of a typed command)"
    fi
    tm send-keys -t "$S" -l "clear"
    tm send-keys -t "$S" Enter
    sleep 0.2
}
