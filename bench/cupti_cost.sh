#!/usr/bin/env bash
# cupti_cost.sh - what device tracing costs ddptop's training throughput on
# this GPU: each model at one batch, with --no-cupti as the reference and
# each way of tracing against it (the default, 3 steps in every 50 with
# windows 200 ms apart at least; the same without the time gap; one window
# only, at the start; every step, --cupti-sample 1; CUPTI detached between
# windows, DDPTOP_CUPTI_DETACH=1, with the default gap and with windows a
# second apart (detach1s); other sets of CUPTI activity kinds
# through DDPTOP_CUPTI_KINDS), measured here in one run,
# repetitions interleaved;
# the table shows medians and the cost in percent of the reference's
# samples/s.
#
#   bench/cupti_cost.sh [build/ddptop] [models] [batch]
#   e.g. REPS=5 bench/cupti_cost.sh build/ddptop "mlp lenet resnet18" 128
# SMALL_STEPS (MLP, LeNet; 2000) and LARGE_STEPS (the rest; 100) set the
# steps of each run.
set -euo pipefail
BIN=${1:-build/ddptop}
MODELS=${2:-mlp lenet resnet18}
BATCH=${3:-128}
REPS=${REPS:-3}
[ -x "$BIN" ] || { echo "no ddptop binary at $BIN (build it, or pass its path)"; exit 1; }
# variant name | DDPTOP_CUPTI_KINDS ("-": --no-cupti; "": the default kinds) | --cupti-sample
# | DDPTOP_CUPTI_GAP_MS (the least time between windows; "": the default)
# | DDPTOP_CUPTI_DETACH (1: CUPTI leaves the process between windows)
VARIANTS=("off|-|" "sampled||50" "no-gap||50|0" "once||1000000000" "every-step||1" "detach||50||1"
    "detach1s||50|1000|1" "detach-once||1000000000||1")
# (more: "serial-kernel|serial-kernel,memcpy,memset|1" "with-api|kernel,memcpy,memset,corr,runtime,driver|1")
[ -n "${CUPTI_VARIANTS:-}" ] && read -r -a VARIANTS <<<"$CUPTI_VARIANTS"

# long enough that a run is not its warm-up (a LeNet step is ~0.6 ms on an H100)
steps() { case $1 in mlp | lenet) echo "${SMALL_STEPS:-2000}" ;; *) echo "${LARGE_STEPS:-100}" ;; esac; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() { # model kinds sample gap_ms detach
    local extra=()
    [ "$2" = - ] && extra=(--no-cupti)
    [ -n "$3" ] && extra+=(--cupti-sample "$3")
    DDPTOP_CUPTI_DETACH=${5:-} DDPTOP_CUPTI_GAP_MS=${4:-} DDPTOP_CUPTI_KINDS=$([ "$2" = - ] || echo "$2") "$BIN" --batch --quiet --device cuda --dataset synthetic --model "$1" --strategy single \
        --ranks 1 --batch-size "$BATCH" --steps "$(steps "$1")" --no-eval --format csv "${extra[@]}" 2>"$T/err" |
        awk -F, 'NR==1 {for (i = 1; i <= NF; i++) {if ($i == "samples_per_s_p50") c = i; if ($i == "samples_per_s") a = i}}
                 $2 == "all" {print $c, $a}'
}

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failed=0
for m in $MODELS; do
    for rep in $(seq "$REPS"); do
        for v in "${VARIANTS[@]}"; do
            IFS='|' read -r _ kinds sample gap detach <<<"$v"
            p50='' mean=''
            read -r p50 mean < <(run "$m" "$kinds" "$sample" "$gap" "$detach" || true) || true
            if [ -z "$p50" ]; then # (a failed run: what it said, and a 0 in the table)
                echo "$m ${v%%|*} rep $rep: no result; ddptop said:" >&2
                tail -5 "$T/err" >&2
                failed=1
            fi
            [ -n "${VERBOSE:-}" ] && echo "$m ${v%%|*} rep $rep: median step $p50 img/s, whole run $mean img/s" >&2
            echo "${p50:-0}" >>"$T/$m.${v%%|*}.p50"
            echo "${mean:-0}" >>"$T/$m.${v%%|*}.mean"
        done
    done
done
printf '%-10s' model
for v in "${VARIANTS[@]}"; do printf ' %18s' "${v%%|*}"; done
echo
# two rates: the median step's (a traced window's steps are rare), and the
# whole run's (samples over wall time: what the windows cost too)
for m in $MODELS; do
    for k in p50 mean; do
        ref=$(median <"$T/$m.off.$k")
        printf '%-10s' "$m $k"
        for v in "${VARIANTS[@]}"; do
            x=$(median <"$T/$m.${v%%|*}.$k")
            if [ "${v%%|*}" = off ]; then
                printf ' %11.0f img/s' "$x"
            else
                printf ' %7.0f (%5.1f%%)' "$x" "$(awk -v a="$x" -v b="$ref" 'BEGIN {print (b > 0 ? 100 * (1 - a / b) : 0)}')"
            fi
        done
        echo
    done
done
echo "(median of $REPS at batch $BATCH; p50: the median step's rate, mean: the whole run's; in brackets: the cost against off, --no-cupti)"
exit $failed
