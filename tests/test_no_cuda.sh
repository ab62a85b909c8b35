#!/usr/bin/env bash
# test_no_cuda.sh - a ddptop built with CUDA, run where CUDA's libraries are
# missing: it must start (--help), train on the CPU saying why in one line,
# and refuse --device cuda with one line and exit 2. The libraries are hidden
# by mounting an empty folder over the one that holds cuDNN, in a private
# mount namespace (root only), so nothing outside the test sees it. Where no
# such namespace can be made (a chroot, as CI's fresh root is, or no root),
# the dynamic loader hides them instead: ddptop runs under ld.so with its
# cache off and a library path of every system folder but CUDA's, and
# DDPTOP_GPU_MODULE names the module (under ld.so, /proc/self/exe is ld.so).
# NO_CUDA_HIDE=loader takes the second way where the first would work.
# Exit 77 (skipped): no GPU module in this build.
set -u
bin=${1:?usage: test_no_cuda.sh DDPTOP}
module=$(dirname "$bin")/libddptop-cuda.so
[ -f "$module" ] || { echo "SKIP: this build has no GPU module"; exit 77; }
cudnn=$(ldd "$module" | awk '/libcudnn/ && $3 ~ /^\// {print $3; exit}')
[ -n "$cudnn" ] || { echo "SKIP: the GPU module's cuDNN is not found by the loader here"; exit 77; }
libdir=$(dirname "$cudnn")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# the three runs; $1: what goes before each command (empty, or the loader)
cat >"$out/runs.sh" <<RUNS
set -u
\$1 "$bin" --help >"$out/help" 2>&1; echo \$? >"$out/help.rc"
\$1 "$bin" --batch --model mlp --dataset synthetic --ranks 2 --steps 20 --format json >"$out/run.json" 2>"$out/run.err"
echo \$? >"$out/run.rc"
\$1 "$bin" --batch --device cuda --model mlp --dataset synthetic --steps 5 >"$out/cuda.out" 2>"$out/cuda.err"
echo \$? >"$out/cuda.rc"
RUNS

how=""
if [ "${NO_CUDA_HIDE:-}" != loader ] && unshare --mount --propagation private true 2>/dev/null; then
  unshare --mount --propagation private bash -c "mount -t tmpfs none '$libdir' || exit 90; bash '$out/runs.sh' ''"
  [ $? -ne 90 ] && [ -s "$out/cuda.rc" ] && how="an empty folder mounted over $libdir"
fi
if [ -z "$how" ]; then
  ldso=$(readelf -l "$bin" | sed -n 's/.*program interpreter: \(.*\)\]/\1/p')
  [ -x "$ldso" ] || { echo "FAIL: no program interpreter found for $bin"; exit 1; }
  # every folder the loader searches, less the one that holds cuDNN (and
  # the folders Debian's BLAS alternatives live in)
  path=$( (cat /etc/ld.so.conf.d/*.conf 2>/dev/null
           printf '%s\n' /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib) |
         grep '^/' | while read -r d; do
           for x in "$d" "$d"/openblas-pthread "$d"/blas "$d"/lapack; do
             [ -d "$x" ] && [ ! -e "$x/$(basename "$cudnn")" ] && echo "$x"
           done
         done | awk '!seen[$0]++' | paste -sd:)
  DDPTOP_GPU_MODULE=$(readlink -f "$module") bash "$out/runs.sh" "$ldso --inhibit-cache --library-path $path"
  how="the loader, its cache off and $libdir left out of its path"
fi
echo "CUDA's libraries hidden by $how"
fail=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
check "--help exits 0" test "$(cat "$out/help.rc")" -eq 0
check "--help prints the usage" grep -q '^Usage: ddptop' "$out/help"
check "--batch trains on the CPU and exits 0" test "$(cat "$out/run.rc")" -eq 0
check "the report says the run was on the CPU" grep -q '"device":[[:space:]]*"cpu"' "$out/run.json"
check "the run says why in one line" test "$(grep -c 'CUDA libraries unavailable.*running on CPU' "$out/run.err")" -eq 1
check "it names the missing library" grep -q 'libcudnn' "$out/run.err"
check "--device cuda exits 2" test "$(cat "$out/cuda.rc")" -eq 2
check "--device cuda says why in one line" test "$(wc -l <"$out/cuda.err")" -eq 1
check "... naming the device option" grep -q '^ddptop: --device cuda: CUDA libraries unavailable' "$out/cuda.err"
check "--device cuda prints no report" test ! -s "$out/cuda.out"
if [ "$fail" -ne 0 ]; then
  for f in help run.err cuda.err; do echo "--- $f"; head -5 "$out/$f"; done
fi
exit "$fail"
