#!/usr/bin/env bash
# gloo_vs_shm.sh - allreduce busbw of ddptop's gloo communicator (every
# gloo algorithm) against its shm ring, on rank threads of one process
# (bench/gloo_vs_shm.c), gloo's ring again on processes, and PyTorch's
# gloo on as many processes (bench/gloo_ref.py; Debian's PyTorch links the
# same libgloo.so.0) at the same sizes, side by side with the ratios.
# Measure, don't assert: it exits non-zero only when something failed.
#   bench/gloo_vs_shm.sh [BUILD_DIR] [RANKS]      (REPS=3: best of REPS runs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ranks=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$build/libddp_coll.a" ] || { echo "gloo_vs_shm: $build/libddp_coll.a not found; build first" >&2; exit 2; }
[ "$(nm "$build/libddp_coll.a" 2>/dev/null | grep -c ' T comm_gloo_create$')" -gt 0 ] ||
  { echo "gloo_vs_shm: $build was built without gloo (libgloo-dev)" >&2; exit 2; }
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Icollectives -Itrace bench/gloo_vs_shm.c \
  "$build/libddp_coll.a" "$build/libddp_trace.a" -lgloo -lstdc++ -lcjson -lz -lm -lpthread -o "$tmp/gloo_vs_shm"
"$tmp/gloo_vs_shm" "$ranks" "${REPS:-3}" | tee "$tmp/ours"
"$tmp/gloo_vs_shm" "$ranks" "${REPS:-3}" procs | tee -a "$tmp/ours"
/usr/bin/python3 bench/gloo_ref.py --world "$ranks" --min-bytes 4096 --max-bytes $((64 << 20)) --factor 4 |
  /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["bytes"], r["time_us"], r["busbw_gbps"])' >"$tmp/torch"
echo
echo "busbw GB/s on $ranks ranks (x: shm's over that backend's)"
awk 'NR == FNR { torch[$1] = $3; next }
     FNR > 1 { bw[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; sizes[++n] = $2 } }
     END {
       printf "%10s %8s %8s %9s %8s %8s %10s %10s %8s %10s\n", "bytes", "shm", "ring", "r-chunked", "halv-dbl",
              "bcube", "ring-procs", "torch-gloo", "shm/ring", "torch/ring"
       for (i = 1; i <= n; i++) {
         s = sizes[i]
         printf "%10d %8.3f %8.3f %9.3f %8.3f %8.3f %10.3f %10.3f %7.1fx %9.2fx\n", s, bw["shm", s], bw["ring", s],
                bw["ring-chunked", s], bw["halving-doubling", s], bw["bcube", s], bw["ring-procs", s], torch[s],
                bw["shm", s] / bw["ring", s], torch[s] / bw["ring", s]
       }
     }' "$tmp/torch" "$tmp/ours"
