#!/usr/bin/env bash
# test.sh - builds ddptop and runs the whole test suite three ways, checks
# that the tests catch planted bugs, then fuzzes the readers:
#   1. Release build, every test (unit, integration, end-to-end, GPU tests
#      report SKIPPED without a GPU), a test per core but the `timing`
#      ones (RUN_SERIAL: each runs alone); then the `kernels` tests again
#      with the kernels capped at AVX2 (DDPTOP_MAX_CPU_ISA=avx2: what an
#      AVX2 machine runs); then (not with --quick) a Debug build (-O0,
#      -Werror, everything the tree builds; no tests: some warnings, such
#      as -Wformat-truncation's, come only at -O0; under a minute on 2
#      cores) and a build without gloo, whose unit tests run;
#   2. mutants: each bug of tests/mutants/ planted in turn in a Release copy
#      of the tree must fail the tests it names (tests/mutants/run_mutants.sh);
#   3. ASan+UBSan build, every test but the `slow` ones (a trace over 2 GiB,
#      a soak of minutes: the Release pass runs them), a test per core;
#   4. TSan build, every threaded test (the fault matrix on the three
#      strategies whose threads differ, tests/test_faults.sh), a test per
#      core;
#   5. clang build of the libFuzzer targets (tests/fuzz), each run for
#      FUZZ_SECONDS (default 20) over its seed corpus, FUZZ_JOBS (default
#      the number of cores) at once.
# At the end (or where a pass fails) a table gives each pass's seconds and
# its share of the whole.
# Usage: scripts/test.sh [--quick]   (--quick: only the Release pass)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# each pass's name and seconds, for the table at the end
pass_names=() pass_secs=()
pass_t0=$SECONDS
pass_done() { # pass_done NAME: the time since the last pass ended is NAME's
  pass_names+=("$1")
  pass_secs+=($((SECONDS - pass_t0)))
  pass_t0=$SECONDS
  echo "== $1: done at $((SECONDS / 60)) min $((SECONDS % 60)) s"
}
pass_table() {
  local st=$? i total=$SECONDS
  echo "== passes (${total} s in all$([ "$st" -ne 0 ] && echo ", stopped by a failure")):"
  for i in "${!pass_names[@]}"; do
    awk -v n="${pass_names[$i]}" -v s="${pass_secs[$i]}" -v t="$total" \
      'BEGIN {printf "   %-14s %6d s %5.1f%%\n", n, s, (t > 0 ? 100 * s / t : 0)}'
  done
  [ "$st" -eq 0 ] || echo "   (then the pass that failed, $((SECONDS - pass_t0)) s)"
}
trap pass_table EXIT

pass() { # pass NAME CMAKE_ARGS... -- CTEST_ARGS...
  local name=$1; shift
  local cm=() ct=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ct=("$@")
  echo "== $name: configure and build"
  cmake -S . -B "build-$name" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cm[@]}" >/dev/null
  cmake --build "build-$name" -j "$jobs" 2>&1 | grep -E "error|warning|Error" || true
  cmake --build "build-$name" -j "$jobs" >/dev/null
  echo "== $name: test"
  ctest --test-dir "build-$name" --output-on-failure -j "${CTEST_JOBS:-$jobs}" "${ct[@]}"
  pass_done "$name"
}

# intercept_tls_get_addr=0: with it, LeakSanitizer's walk of the threads'
# dynamic TLS can crash at exit ("Tracer caught signal 11" at a DTLS entry
# with a bogus address) once the CUDA libraries are loaded (GCC 12's
# libasan, glibc 2.36). ddptop keeps nothing in thread-local storage.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
# history_size=7: the most of each thread's past that TSan keeps. With the
# default, a race report against an OpenMP worker that has since ended
# loses that worker's stack ("failed to restore the stack"), and the
# suppression of libgomp (whose barriers TSan cannot see) no longer
# matches it: e2e_ui's `s` freeing the last run's max-pool, read by its
# finished worker, was reported so on a machine whose max-pool runs our
# OpenMP loops.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=7 suppressions=$PWD/tests/tsan.supp"

debug_build() {
  echo "== debug: configure and build (no tests)"
  cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-debug -j "$jobs" >build-debug/build.log 2>&1 ||
    { grep -E -A5 "error|warning" build-debug/build.log | head -40; exit 1; }
  pass_done debug
}

fuzz_pass() {
  echo "== fuzz: configure and build"
  # (no gloo: its shim is C++, which the fuzz flags would reach through
  # the system's g++; no reader of outside input needs it)
  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPTOP_FUZZ=ON -DDDPTOP_WITH_CUDA=OFF \
    -DDDPTOP_WITH_GLOO=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz 2>&1 | grep -E "error|warning|Error" || true
  cmake --build build-fuzz -j "$jobs" --target fuzz >/dev/null
  echo "== fuzz: run"
  FUZZ_JOBS=${FUZZ_JOBS:-$jobs} tests/fuzz/run_fuzz.sh build-fuzz "${FUZZ_SECONDS:-20}"
  pass_done fuzz
}

# a test per core, the `timing` tests each alone (RUN_SERIAL, tests/CMakeLists.txt)
pass release --
# the tests that go through the CPU kernels and their layouts, again with
# the kernels capped at AVX2 (docs/environment.md): what an AVX2 machine
# would run, checked on an AVX-512 one (on an AVX2 machine, the same again)
echo "== release-avx2: the kernels tests, capped at AVX2 (DDPTOP_MAX_CPU_ISA=avx2)"
DDPTOP_MAX_CPU_ISA=avx2 ctest --test-dir build-release --output-on-failure -j "$jobs" -L kernels
pass_done release-avx2
if [ "$quick" -eq 0 ]; then
  debug_build
  # a build without gloo (the CMake option a machine without libgloo-dev
  # takes): it builds, and its unit tests pass
  pass nogloo -DDDPTOP_WITH_GLOO=OFF -DDDPTOP_WITH_CUDA=OFF -- -L unit
  echo "== mutants: planted bugs must fail their tests"
  # (the Release pass above has just run every test on this tree: the
  # harness need not run the mutants' tests unmutated again; 4 minutes of
  # planting (about 26 mutants at 9 s), from a place that moves by that
  # many each day: every mutant within a week, and CI within its time;
  # tests/mutants/run_mutants.sh alone plants them all)
  MUTANTS_BASELINE=0 MUTANTS_BUDGET_S=${MUTANTS_BUDGET_S:-240} MUTANTS_START=$((10#$(date +%j) * 26)) \
    JOBS=$jobs tests/mutants/run_mutants.sh
  pass_done mutants
  # the sanitizer passes, a test per core too (their `timing` tests as
  # well: their checks allow for a sanitizer's slowness, and there a test
  # alone would still be many times slower than in Release)
  pass asan -DDDPTOP_SANITIZE=address -- -LE slow
  FAULT_STRATEGIES="dp ddp horovod" pass tsan -DDDPTOP_SANITIZE=thread -- -L threaded
  fuzz_pass
fi
echo "== all test passes finished"
