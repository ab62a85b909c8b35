#!/usr/bin/env bash
# comm_vs_gloo.sh - allreduce bus bandwidth of ddptop's shm ring at 2 ranks,
# PyTorch gloo with 2 processes, and plain memcpy, measured in one go, with
# the ratios the goals are stated in (ring >= 2x gloo at >= 64 KB, >= half
# of memcpy at >= 16 MB, small-message latency >= 10x lower than gloo's).
#   bench/comm_vs_gloo.sh [build/ddptop]
set -euo pipefail
BIN=${1:-build/ddptop}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MIN=4096 MAX=$((256 << 20)) FACTOR=4
PY=/usr/bin/python3

cc -O2 -o "$tmp/memcpy_bw" "$here/memcpy_bw.c"
# keep the cost-model cache of this benchmark out of the user's
export DDPTOP_COMM_MODEL=$tmp/model.json
"$BIN" --bench-comm --ranks 2 --algo ring --min-bytes $MIN --max-bytes $MAX --factor $FACTOR --iters 20 \
  --format csv | awk -F, 'NR > 1 {print $2, $4, $6, $7}' >"$tmp/ours"
"$PY" "$here/gloo_ref.py" --world 2 --min-bytes $MIN --max-bytes $MAX --factor $FACTOR |
  "$PY" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["bytes"], r["time_us"], r["busbw_gbps"])' >"$tmp/gloo"
"$tmp/memcpy_bw" $MIN $MAX $FACTOR >"$tmp/memcpy"

printf "%10s %10s %10s %9s %11s %11s %8s %10s %9s\n" bytes ours_us gloo_us lat_x ours_GB/s gloo_GB/s bw_x memcpy_GB/s of_memcpy
join "$tmp/ours" "$tmp/gloo" | join - "$tmp/memcpy" |
  awk '{wrong += $4; printf "%10d %10.2f %10.2f %8.1fx %11.3f %11.3f %7.2fx %10.3f %8.0f%%\n", $1, $2, $5, $5 / $2, $3, $6, $3 / $6, $7, 100 * $3 / $7}
       END { if (wrong) print "WRONG RESULTS: " wrong }'
