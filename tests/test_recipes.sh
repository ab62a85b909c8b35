#!/usr/bin/env bash
# test_recipes.sh - every command the README gives for the five studies
# runs as written: each ddptop command of the sh blocks under "Reproducing
# the five studies" is read from README.md itself (continuation lines
# joined, && chains split), shortened by options added at its end (later
# options win: one step of batch 4, a few small messages for --bench-comm),
# and must exit 0 and print a markdown table. A recipe whose options were
# renamed, became exclusive or lost a value is refused (exit 2) and fails
# here, as it would for the student who pastes it.
#
# Usage: tests/test_recipes.sh path/to/ddptop
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
readme="$here/../README.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export HOME="$work" # (--bench-comm's fits go to a cache of this test's own)

# the section's commands, one a line
mapfile -t cmds < <(python3 - "$readme" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
sec = text.split("## Reproducing the five studies", 1)[1].split("\n## ", 1)[0]
for block in re.findall(r"```sh\n(.*?)```", sec, re.S):
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        for cmd in line.split("&&"):
            cmd = " ".join(cmd.split())
            if cmd.startswith("ddptop "):
                print(cmd[len("ddptop "):])
PY
)

fails=0 n=0
[ ${#cmds[@]} -ge 5 ] || { echo "FAIL: only ${#cmds[@]} ddptop commands found under the studies' section"; exit 1; }
for c in "${cmds[@]}"; do
    n=$((n + 1))
    read -r -a args <<<"$c"
    case " $c " in
    *" --bench-comm "*) short=(--min-bytes 4 --max-bytes 4K --iters 2 --warmup 1 --format md) ;;
    *) short=(--steps 1 --batch-size 4 --no-eval) ;; # (4: --micro-batches 4 divides it)
    esac
    "$bin" "${args[@]}" "${short[@]}" >out.$n 2>err.$n </dev/null
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^|' out.$n; then
        echo "ok - recipe $n runs: ${c:0:90}"
    else
        echo "FAIL - recipe $n (rc $rc): $c"
        head -3 err.$n
        fails=$((fails + 1))
    fi
done
echo "$((n - fails)) passed, $fails failed"
[ $fails -eq 0 ]
