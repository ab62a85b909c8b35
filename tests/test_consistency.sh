#!/usr/bin/env bash
# test_consistency.sh - one sweep with two backends, two batch sizes and
# three rank counts, its report written in every format at once (--format
# text,md,csv,json) with its plots: every figure that appears in more than
# one output must be the same number, and the figures that follow from
# others must follow (tests/check_consistency.py, which reads the outputs
# as a user's script would).
set -u
BIN=${1:?usage: test_consistency.sh path/to/ddptop}
. "$(dirname "$0")/checks.sh"
"$BIN" --batch --quiet --model mlp --dataset synthetic --strategy ddp --comm shm,gloo --ranks 1,2,3 \
    --batch-size 16,32 --steps 8 --no-eval --threads-per-rank 1 --format text,md,csv,json --output "$tmp/r" \
    --plot "$tmp/plots" 2>"$tmp/err"
check "the sweep ran and wrote each format" test -s "$tmp/r.txt" -a -s "$tmp/r.md" -a -s "$tmp/r.csv" -a -s "$tmp/r.json"
check "every output agrees with the others and with arithmetic" \
    python3 "$(dirname "$0")/check_consistency.py" "$tmp/r" "$tmp/plots"
# a gloo row says its comm% holds the waits (gloo cannot tell them apart)
check "gloo rows: a note that comm% holds the peers' waits, compare by coll%" \
    grep -q "^run [0-9]*: over gloo a collective's wait for its peers cannot be told from its transfer: comm% holds both" "$tmp/r.txt"
check "... and no such note on the shm rows" python3 -c '
import json, re, sys
runs = json.load(open(sys.argv[1]))["runs"]
noted = {int(m) for m in re.findall(r"^run ([0-9]+): over gloo", open(sys.argv[2]).read(), re.M)}
want = {i for i, r in enumerate(runs) if r["ranks"] > 1 and r["backend"].startswith("gloo")}
assert noted == want, (noted, want)' "$tmp/r.json" "$tmp/r.txt"
# The Runs pane: a sweep of 2 strategies x 1 and 2 ranks in the UI (tmux),
# each run to its end and s for the next; the pane, captured once all four
# are done, against the report JSON the session writes at q
# (tests/check_runs_pane.py).
if command -v tmux >/dev/null; then
    sock=ddptop-cons-$$
    trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
    pass_env=""
    for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
        [ -n "${!v:-}" ] && pass_env="$pass_env $v=$(printf %q "${!v}")"
    done
    tmux -L "$sock" -f /dev/null new-session -d -x 160 -y 50 -s c \
        "env -i HOME=$tmp PATH=$PATH TERM=screen LANG=C.UTF-8$pass_env bash --norc --noprofile"
    tmux -L "$sock" set-option -t c -g status off >/dev/null
    tmux -L "$sock" send-keys -t c -l "$BIN --dataset synthetic --model mlp --strategy ddp,allreduce --ranks 1,2 \
--steps 40 --threads-per-rank 1 --no-eval --format json --output $tmp/ui.json; echo EXIT=\$? >$tmp/ui.exit"
    tmux -L "$sock" send-keys -t c Enter
    done_rows=0
    for _ in $(seq 240); do
        sleep 0.5
        tmux -L "$sock" capture-pane -p -t c >"$tmp/pane.txt"
        done_rows=$(grep -cE '^│>? +[0-9]+ +(ddp|allreduce) .* done +│$' "$tmp/pane.txt")
        [ "$done_rows" -ge 4 ] && break
        # a run at its end: s starts the sweep's next
        grep -q 'final report on screen (s: next run' "$tmp/pane.txt" && tmux -L "$sock" send-keys -t c s
    done
    tmux -L "$sock" send-keys -t c q
    for _ in $(seq 40); do [ -s "$tmp/ui.exit" ] && break; sleep 0.5; done
    check "the UI ran the sweep's four runs to their ends (a done row each)" test "$done_rows" -ge 4
    check "the UI exited 0 at q, its report written" grep -qx "EXIT=0" "$tmp/ui.exit"
    check "the Runs pane's figures are the report's" python3 "$(dirname "$0")/check_runs_pane.py" "$tmp/pane.txt" \
        "$tmp/ui.json"
else
    echo "SKIP: the Runs pane (no tmux)"
fi
# no silent choices: --steps cutting --epochs short, and a sweep's traces
# each named (against the files the sweep left in the folder)
mkdir "$tmp/tr"
(cd "$tmp/tr" && "$BIN" --batch --quiet --model mlp --dataset synthetic --epochs 3 --steps 6 --no-eval \
    --threads-per-rank 1 --ranks 1,2 --batch-size 32 --trace t.json >"$tmp/tr.txt" 2>/dev/null)
check "--steps 6 under --epochs 3: the report says where it stopped" \
    grep -qx "run 0: --steps 6 ended it in epoch 1 of --epochs 3 (1875 steps an epoch)" "$tmp/tr.txt"
check "a sweep's runs each name their trace, the files it wrote" python3 -c '
import os, re, sys
named = re.findall(r"^run ([0-9]+): its trace is (.*)$", open(sys.argv[1]).read(), re.M)
on_disk = sorted(os.listdir(sys.argv[2]))
assert sorted(p for _, p in named) == on_disk == ["t.json", "t.run1.json"], (named, on_disk)
assert [int(i) for i, _ in named] == [0, 1], named' "$tmp/tr.txt" "$tmp/tr"
# several formats need a file for each
"$BIN" --batch --quiet --model mlp --dataset synthetic --steps 2 --format text,json >/dev/null 2>"$tmp/err1"
check "several formats without --output: refused in one line" \
    grep -qx "ddptop: --format: several formats need --output FILE (each goes to FILE with its extension added)" "$tmp/err1"
"$BIN" --batch --quiet --model mlp --dataset synthetic --steps 2 --format json,json --output "$tmp/j" 2>"$tmp/err2"
check "a format given twice: refused" grep -qx "ddptop: --format: json is given twice" "$tmp/err2"
checks_done
