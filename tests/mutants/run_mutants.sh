#!/usr/bin/env bash
# run_mutants.sh - the tests must catch real bugs: each file in
# tests/mutants/*.mut plants one (an off-by-one, a wrong sign or bound,
# swapped arguments, a skipped call) in one source file and names the ctest
# tests that must fail with it (apply.py describes the format).
#
# The source tree is copied to a scratch folder once and built once
# (Release, only ddptop and the test programs the mutants name); then, one
# mutant at a time: plant it, rebuild incrementally, run its tests in order
# until one fails (ctest -R), put the file back. A table gives each mutant,
# the test that killed it and the seconds it took (rebuild and tests).
#
# Exit status 1 when a mutant survives (its tests all pass), does not build,
# or no longer applies (its original lines are gone from the source); a
# mutant whose tests all report SKIPPED (e.g. test_no_cuda in a build
# without the GPU module) is listed as not tested here, and is no failure.
#
# Usage: tests/mutants/run_mutants.sh [--tests REGEX] [--keep] [MUTANT.mut..]
#   MUTANT.mut  only these mutants (default: all)
#   --tests R   run every ctest test matching R instead of each mutant's
#               own, and list all that fail (to see which tests see a bug)
#   --keep      leave the scratch folder (its path is printed)
# Environment: JOBS (build jobs, default nproc), MUTANTS_TMP (where the
# scratch folder goes, default /tmp), MUTANTS_BASELINE=0 (leave out the
# unmutated tree's run of the named tests, where the caller has just run
# the whole suite on the same tree: scripts/test.sh). A mutant's tests run
# with DDPTOP_FAIL_FAST=1: the shell tests stop at their first failed check
# (tests/checks.sh), since one is enough to kill it. MUTANTS_BUDGET_S=S:
# plant no new mutant after S seconds of planting (the rest are listed as
# not tried; 0, the default: no limit), starting at mutant MUTANTS_START
# (modulo their number, default 0) and going round, so that a caller that
# moves the start (scripts/test.sh: by the day) plants every one in turn.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
apply="python3 $here/apply.py"
jobs=${JOBS:-$(nproc)}
only_tests="" keep=0 mutants=()
while [ $# -gt 0 ]; do
    case $1 in
    --tests) only_tests=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) mutants+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
    esac
done
[ ${#mutants[@]} -gt 0 ] || mutants=("$here"/*.mut)

scratch=$(mktemp -d "${MUTANTS_TMP:-/tmp}/ddptop-mutants.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "mutants: scratch kept at $scratch"; else rm -rf "$scratch"; fi; }
trap cleanup EXIT
src=$scratch/src build=$scratch/build log=$scratch/log
mkdir -p "$src" "$log"
t_all=$(date +%s)

# The tree as it is now, edits included, without build folders: what git
# tracks plus new files it does not ignore, or everything but build* where
# there is no git (a CI root made by git archive).
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files -z --cached --others --exclude-standard |
        tar -C "$root" --null --no-recursion --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$src"
else
    tar -C "$root" --exclude='./build*' --exclude='./.gpubundle' -cf - . | tar -xf - -C "$src"
fi

echo "== mutants: configure and build (Release) in $scratch"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$log/configure.txt" 2>&1 ||
    { cat "$log/configure.txt"; exit 1; }

# ctest's tests, and the build targets they run: a test program is built
# under its test's name, or that name less a _CASE or _GROUP suffix
# (test_strategies_equivalence runs test_strategies); the other tests are
# scripts that run ddptop.
ctest --test-dir "$build" --show-only=json-v1 >"$log/tests.json"
# (not the generator's own targets: `test` would run ctest)
cmake --build "$build" --target help >"$log/help.txt"
sed -n 's/^\.\.\. \([A-Za-z0-9_.-]*\).*/\1/p; s/^\([A-Za-z0-9_.-]*\): .*/\1/p' "$log/help.txt" |
    grep -vxE 'all|clean|depend|help|test|edit_cache|rebuild_cache|install.*|list_install_components' \
        >"$log/targets.txt" || true
test_targets() { # test_targets NAME.. -> the build targets those tests run
    local t out="ddptop"
    for t in "$@"; do
        while [ -n "$t" ] && ! grep -qx -- "$t" "$log/targets.txt"; do
            case $t in *_*) t=${t%_*} ;; *) t="" ;; esac
        done
        [ -n "$t" ] && out="$out $t"
    done
    printf '%s\n' $out | sort -u | paste -sd ' '
}
known_tests=" $(python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))["tests"]))' "$log/tests.json") "
all_named=()
for m in "${mutants[@]}"; do
    for t in $($apply "$m" field tests); do
        case $known_tests in *" $t "*) ;; *) echo "mutants: $(basename "$m") names $t, which ctest does not know"; exit 1 ;; esac
        all_named+=("$t")
    done
done
if [ -n "$only_tests" ]; then
    all_named=($(ctest --test-dir "$build" -N -R "$only_tests" | sed -n 's/^ *Test *#[0-9]*: //p'))
    [ ${#all_named[@]} -gt 0 ] || { echo "mutants: no test matches $only_tests"; exit 1; }
fi
targets=$(test_targets "${all_named[@]}")
t0=$(date +%s)
if ! cmake --build "$build" -j "$jobs" --target $targets >"$log/build.txt" 2>&1; then
    tail -30 "$log/build.txt"
    echo "mutants: the unmutated tree does not build"
    exit 1
fi
echo "== mutants: built $targets in $(($(date +%s) - t0)) s"

# The unmutated tree must pass every test a mutant names, or a kill means
# nothing.
t0=$(date +%s)
regex="^($(printf '%s\n' "${all_named[@]}" | sort -u | paste -sd '|'))\$"
if [ "${MUTANTS_BASELINE:-1}" = 0 ]; then
    echo "== mutants: the unmutated tree's run of the named tests left out (MUTANTS_BASELINE=0)"
elif ! ctest --test-dir "$build" -R "$regex" -j "$jobs" --output-on-failure >"$log/baseline.txt" 2>&1; then
    grep -E "Test +#|FAIL" "$log/baseline.txt" | tail -30
    echo "mutants: the unmutated tree fails the mutants' tests"
    exit 1
else
    echo "== mutants: the unmutated tree passes the $(printf '%s\n' "${all_named[@]}" | sort -u | wc -l) tests named, in $(($(date +%s) - t0)) s"
fi

# one mutant: echo "STATUS KILLER[,KILLER..] SECONDS"
run_mutant() {
    local m=$1 name file tests t st out=$log/$(basename "$1" .mut).txt start envs
    start=$(date +%s)
    file=$($apply "$m" field file)
    envs=$($apply "$m" field env)
    if [ -n "$only_tests" ]; then tests="${all_named[*]}"; else tests=$($apply "$m" field tests); fi
    cp -p "$src/$file" "$scratch/orig"
    if ! $apply "$m" plant "$src" >"$out" 2>&1; then
        echo "stale - $(($(date +%s) - start))"
        return
    fi
    st="survived -"
    if ! cmake --build "$build" -j "$jobs" --target $(test_targets $tests) >>"$out" 2>&1; then
        st="no-build -"
    else
        local ran=0 killers=""
        for t in $tests; do
            # shellcheck disable=SC2086 # (envs: VAR=VALUE words)
            if ! env $envs DDPTOP_FAIL_FAST=1 ctest --test-dir "$build" -R "^$t\$" --output-on-failure >>"$out" 2>&1; then
                killers="$killers,$t"
                [ -n "$only_tests" ] || break
            fi
            grep -Eq "Test +#[0-9]+: $t \.+ *\*+Skipped" "$out" || ran=1
        done
        if [ -n "$killers" ]; then
            st="killed ${killers#,}"
        elif [ "$ran" = 0 ]; then
            st="skipped -"
        fi
    fi
    # put the file back; a new mtime, so the next build recompiles it
    cp "$scratch/orig" "$src/$file"
    touch "$src/$file"
    echo "$st $(($(date +%s) - start))"
}

nall=${#mutants[@]} budget=${MUTANTS_BUDGET_S:-0} first=$((${MUTANTS_START:-0} % ${#mutants[@]}))
mutants=("${mutants[@]:first}" "${mutants[@]:0:first}")
echo "== mutants: $nall mutants, one at a time, from $(basename "${mutants[0]}" .mut)" \
    "$([ "$budget" -gt 0 ] && echo "for up to $budget s")"
printf '%-36s %-30s %8s\n' "mutant" "killed by" "seconds" | tee "$log/table.txt"
bad=0 nkilled=0 nskipped=0 ntried=0 t_loop=$(date +%s)
for m in "${mutants[@]}"; do
    if [ "$budget" -gt 0 ] && [ $(($(date +%s) - t_loop)) -ge "$budget" ]; then
        echo "mutants: $budget s spent; $((nall - ntried)) not tried this time (from $(basename "$m" .mut))"
        break
    fi
    ntried=$((ntried + 1))
    read -r status killer secs < <(run_mutant "$m")
    name=$(basename "$m" .mut)
    case $status in
    killed) nkilled=$((nkilled + 1)); shown=$killer ;;
    skipped) nskipped=$((nskipped + 1)); shown="(not tested here: skipped)" ;;
    survived) bad=$((bad + 1)); shown="SURVIVED ($($apply "$m" field tests))" ;;
    no-build) bad=$((bad + 1)); shown="DOES NOT BUILD" ;;
    stale) bad=$((bad + 1)); shown="DOES NOT APPLY: $(tail -1 "$log/$name.txt")" ;;
    esac
    printf '%-36s %-30s %8s\n' "$name" "$shown" "$secs" | tee -a "$log/table.txt"
    if [ "$status" = no-build ] || [ "$status" = stale ]; then tail -20 "$log/$name.txt" | sed 's/^/    /'; fi
done
echo "mutants: $nkilled killed, $bad survived or broken, $nskipped not tested here, $((nall - ntried)) not tried," \
    "of $nall, in $(($(date +%s) - t_all)) s"
[ "$bad" -eq 0 ]
