# tmux_harness.sh - what the end-to-end UI tests share: a private tmux
# server, screen capture, pass/fail reporting and polling with deadlines.
# Sourced after the caller sets SOCK (the tmux socket name), T (its temporary
# folder) and S (the session name).

tm() { tmux -L "$SOCK" "$@"; }
cleanup() {
    tm kill-server >/dev/null 2>&1
    # a ddptop killed with the server may still be on its way out
    rm -rf "$T" 2>/dev/null || { sleep 1; rm -rf "$T"; }
}
trap cleanup EXIT

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
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for REGEX SECONDS: polls the screen until grep -E matches.
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
