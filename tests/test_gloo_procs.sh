#!/usr/bin/env bash
# test_gloo_procs.sh - two processes, started here with no mpirun, meet in
# gloo's file store in a fresh folder and run every collective and every
# allreduce algorithm of the gloo communicator on each other, each counting
# the elements that differ from the exact answer (#wrong); then a second
# pair where process 1 leaves abruptly after the rendezvous (as a killed
# one: the kernel closes its sockets), and process 0's next allreduce must
# fail in bounded time, naming rank 1, rather than hang.
# With `mpi`: two processes under mpirun instead, taking their ranks and
# rendezvous from MPI (no store); exit 77 (skipped) without MPI.
# Usage: test_gloo_procs.sh TEST_COMM_GLOO [mpi]
set -u
bin=${1:?usage: test_gloo_procs.sh TEST_COMM_GLOO [mpi]}
if [ "${2:-}" = mpi ]; then
  command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
  mpi=(mpirun --oversubscribe -np 2)
  [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader RES_OPTIONS="timeout:1 attempts:1"
  # under ASan: whole stacks at each malloc, so that tests/lsan.supp can tell
  # MPI's own allocations (plugins unloaded by MPI_Finalize) from ours
  export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
  out=$("${mpi[@]}" "$bin" mpi 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -eq 77 ] || [[ "$out" == *"this build has no MPI"* ]]; then echo "SKIP: built without MPI"; exit 77; fi
  n=$(echo "$out" | grep -c "^rank [01] of 2 (MPI's), algo .*: #wrong 0\$")
  if [ $rc -eq 0 ] && [ "$n" -eq 8 ]; then echo "ok: 2 MPI processes, 4 algorithms each, #wrong 0"; exit 0; fi
  echo "FAIL: mpirun rc $rc, $n of 8 lines with #wrong 0"
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

mkdir "$dir/store" "$dir/store2"
"$bin" proc 0 2 "$dir/store" >"$dir/p0.out" 2>"$dir/p0.err" &
p0=$!
"$bin" proc 1 2 "$dir/store" >"$dir/p1.out" 2>"$dir/p1.err" &
p1=$!
wait $p0; rc0=$?
wait $p1; rc1=$?
cat "$dir/p0.out" "$dir/p1.out"
check "process 0 exits 0" test "$rc0" -eq 0
check "process 1 exits 0" test "$rc1" -eq 0
for r in 0 1; do
  check "process $r ran all 4 algorithms with #wrong 0" \
    test "$(grep -c "^rank $r of 2, algo .*: #wrong 0\$" "$dir/p$r.out")" -eq 4
done
check "the rendezvous left the store's folder empty" test -z "$(ls -A "$dir/store")"

"$bin" proc 0 2 "$dir/store2" die >"$dir/d0.out" 2>"$dir/d0.err" &
d0=$!
"$bin" proc 1 2 "$dir/store2" die >"$dir/d1.out" 2>"$dir/d1.err" &
d1=$!
wait $d0; rc0=$?
wait $d1; rc1=$?
cat "$dir/d0.out"
check "the surviving process fails its call and exits 0" test "$rc0" -eq 0
check "the leaving process left as planned (3)" test "$rc1" -eq 3
check "the failure names rank 1" grep -q "peer died: rc -1 .*allreduce: rank 1" "$dir/d0.out"
secs=$(sed -n 's/.*rc -1 after \([0-9.]*\) s.*/\1/p' "$dir/d0.out")
check "... long before the 60 s timeout" awk -v s="${secs:-999}" 'BEGIN { exit !(s < 30) }'
if [ "$fail" -ne 0 ]; then
  for f in p0.err p1.err d0.err d1.err; do echo "--- $f"; head -20 "$dir/$f"; done
fi
exit "$fail"
