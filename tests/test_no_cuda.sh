#!/usr/bin/env bash
# test_no_cuda.sh - a ddptop built with CUDA, run where CUDA's libraries are
# missing: it must start (--help), train on the CPU saying why in one line,
# and refuse --device cuda with one line and exit 2. The libraries are hidden
# by mounting an empty folder over the one that holds cuDNN, in a private
# mount namespace (root only), so nothing outside the test sees it.
# Exit 77 (skipped): no GPU module in this build, or no way to hide them.
set -u
bin=${1:?usage: test_no_cuda.sh DDPTOP}
module=$(dirname "$bin")/libddptop-cuda.so
[ -f "$module" ] || { echo "SKIP: this build has no GPU module"; exit 77; }
libdir=$(ldd "$module" | awk '/libcudnn/ && $3 ~ /^\// {print $3; exit}')
[ -n "$libdir" ] || { echo "SKIP: the GPU module's cuDNN is not found by the loader here"; exit 77; }
libdir=$(dirname "$libdir")
if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "SKIP: cannot make a private mount namespace (needs root)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/inner.sh" <<EOF
set -u
mount -t tmpfs none "$libdir" || exit 90
"$bin" --help >"$out/help" 2>&1; echo \$? >"$out/help.rc"
"$bin" --batch --model mlp --dataset synthetic --ranks 2 --steps 20 --format json >"$out/run.json" 2>"$out/run.err"
echo \$? >"$out/run.rc"
"$bin" --batch --device cuda --model mlp --dataset synthetic --steps 5 >"$out/cuda.out" 2>"$out/cuda.err"
echo \$? >"$out/cuda.rc"
EOF
unshare --mount --propagation private bash "$out/inner.sh"
rc=$?
[ "$rc" -eq 90 ] && { echo "SKIP: cannot mount over $libdir"; exit 77; }
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
