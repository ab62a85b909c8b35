# checks.sh - what the shell tests that count their checks share; sourced.
# Makes $tmp (removed on exit) and gives:
#   check WHAT CONDITION...  runs CONDITION: a pass, or "FAIL: WHAT"
#   ok WHAT / bad WHAT       a pass or a "FAIL - WHAT" told by the test
#                            itself (for checks that are more than one
#                            command), with the seconds so far
#   json FILE CODE           python CODE with FILE's JSON as d
#   checks_done              prints the counts; the status is 0 only if no
#                            check failed (the script's last command)
# With DDPTOP_FAIL_FAST set (tests/mutants/run_mutants.sh sets it), the
# first failed check ends the script with status 1.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() {
    local what=$1
    shift
    if "$@"; then
        passes=$((passes + 1))
    else
        echo "FAIL: $what"
        fails=$((fails + 1))
        [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
    fi
}
ok() {
    echo "ok - $* [${SECONDS} s]"
    passes=$((passes + 1))
}
bad() {
    echo "FAIL - $* [${SECONDS} s]"
    fails=$((fails + 1))
    [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
}
json() { /usr/bin/env python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
checks_done() {
    echo "$passes passed, $fails failed"
    [ "$fails" -eq 0 ]
}
