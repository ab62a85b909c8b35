#!/usr/bin/env bash
# test_safety.sh - ddptop on a machine other users share (docs/shared-machine.md).
# One case per argument (ctest runs one test per case: test_safety_CASE):
#   module     a GPU module planted where another user could write (the
#              folder above the program's, a world-writable folder, a
#              world-writable file, DDPTOP_GPU_MODULE in such a folder) is
#              refused in one line, and its constructor, which would write
#              a marker file, never runs; the build's own module still loads
#   hang       --strategy single (and --ranks 1) with kind=hang ends after
#              --comm-timeout, naming rank 0, exit 1, with the report and
#              a valid trace, as a peer's timed-out wait ends a larger run;
#              kind=comm-error on one rank is refused in one line, exit 2
#   collide    an output that is an input or another output (by name, hard
#              link or symbolic link; split and .gz trace names, each run's
#              trace name, the data set's files, the cost model) is refused
#              in one line, exit 2, and the input is left byte for byte
#   symlink    --output, --history, --trace and --save-params at a symbolic
#              link replace the link and leave its target alone; a new file
#              takes 0666 less the umask, a replaced one keeps its mode; a
#              report that cannot be written (over RLIMIT_FSIZE) leaves the
#              old file whole and goes to stdout; a symlinked cost-model
#              folder (~/.cache/ddptop) is refused in one line, nothing
#              written through it
#   env        every DDPTOP_* variable the program reads has its row in
#              docs/environment.md (and every row is read); the program
#              holds no path of the source tree it was built from
#   cut        the UI killed by a crash (the DDPTOP_UI_TEST_CRASH hook, 20
#              steps in) leaves a trace that replays, cut short, with at
#              least those steps, and the --history rows of them
#   costmodel  a cost model that is not JSON, a link, another user's, or in
#              a symlinked or shared folder is named once, in one line,
#              with why, by a training run; with HOME a folder anyone can
#              write into (HOME=/tmp) --bench-comm keeps none, saying why
#   runpath    no program or library of the build has an empty, relative
#              or world-writable entry in its RUNPATH/RPATH (readelf -d),
#              and a libz.so.1 or libcjson.so.1 planted in the current
#              folder, whose constructor would write a marker file, is not
#              loaded by `ddptop --version` (nor under `mpirun -np 1`)
#   install    the same entries checked in a DESTDIR install of the build
#   gzip       a gzip bomb (1 GiB of zeros in 1 MiB, made here) given to
#              --replay and landing in a --follow folder is refused in one
#              line naming the file and the cause, and the process's peak
#              memory stays under 400 MiB; DDPTOP_GZIP_MAX_RATIO and
#              DDPTOP_GZIP_MAX_MB move the cap; a gzip trace still replays
# Exit 77 (skipped) where the case cannot run: no GPU module or C compiler
# (module), no tmux (cut), no readelf or C compiler (runpath), no Makefile
# build to install from (install).
set -u
BIN=$(readlink -f "${1:?usage: test_safety.sh path/to/ddptop CASE}")
CASE=${2:?usage: test_safety.sh path/to/ddptop CASE}
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/checks.sh"
LIMIT=${SAFETY_LIMIT_S:-60} # seconds a run may take, start-up included
TRAIN=(--batch --quiet --dataset synthetic --model mlp --no-eval)
# (ddptop's own notes on stderr: the GPU, oversubscription)
notes() { grep -v 'running on CPU\|compute threads on' "$1"; }
# lines LINES FILE: FILE holds exactly LINES lines other than notes
lines() { test "$(notes "$2" | wc -l)" -eq "$1"; }

case_module() {
    local module
    module=$(dirname "$BIN")/libddptop-cuda.so
    [ -f "$module" ] || { echo "SKIP: this build has no GPU module (nothing is ever loaded)"; exit 77; }
    command -v cc >/dev/null || { echo "SKIP: no C compiler to build the planted library"; exit 77; }
    write_plant_c
    cc -shared -fPIC -o "$tmp/plant.so" "$tmp/plant.c" || { echo "FAIL: cannot build the planted library"; exit 1; }
    export PLANT_MARKER=$tmp/MARKER
    # planted RUN WHAT: runs the program at RUN; the marker must not appear
    planted() {
        local run=$1 what=$2
        shift 2
        rm -f "$PLANT_MARKER"
        timeout "$LIMIT" "$@" "$run" "${TRAIN[@]}" --steps 2 >"$tmp/out" 2>"$tmp/err"
        local st=$?
        check "$what: the planted constructor did not run" test ! -e "$PLANT_MARKER"
        check "$what: the run went on, on the CPU (exit $st)" test "$st" -eq 0
    }
    # 1. a copy of the program in D/bin, D anyone's to write: D is the
    # folder above the program's, never searched (no word: nothing there
    # is looked at)
    local D=$tmp/shared
    mkdir -p "$D/bin"
    chmod 0777 "$D"
    chmod 0755 "$D/bin"
    cp "$BIN" "$D/bin/ddptop"
    cp "$tmp/plant.so" "$D/libddptop-cuda.so"
    planted "$D/bin/ddptop" "module in the folder above the program's"
    check "module above: not loaded, said in one line" grep -q "not installed; running on CPU" "$tmp/err"
    # 2. beside the program, in a folder anyone can write
    chmod 0777 "$D/bin"
    cp "$tmp/plant.so" "$D/bin/libddptop-cuda.so"
    planted "$D/bin/ddptop" "module in a world-writable folder"
    check "world-writable folder: refused in one line naming it" \
        grep -q "^ddptop: $D/bin/libddptop-cuda.so: refused: another user can write its folder $D/bin " "$tmp/err"
    # 3. its own folder safe, the one above it anyone's (not sticky): the
    # folder can be renamed away and replaced
    chmod 0755 "$D/bin"
    planted "$D/bin/ddptop" "module whose folder's parent is world-writable"
    check "world-writable parent: refused, naming it" grep -q "refused: another user can write its folder $D " "$tmp/err"
    # 4. the file itself writable by others, in a safe folder
    local S=$tmp/safe
    mkdir -p "$S"
    chmod 0755 "$S"
    cp "$BIN" "$S/ddptop"
    cp "$tmp/plant.so" "$S/libddptop-cuda.so"
    chmod 0666 "$S/libddptop-cuda.so"
    planted "$S/ddptop" "a world-writable module"
    check "world-writable module: refused in one line" \
        grep -q "^ddptop: $S/libddptop-cuda.so: refused: another user can write it" "$tmp/err"
    # 5. owned by another user (root can make one)
    if [ "$(id -u)" = 0 ] && chown nobody "$S/libddptop-cuda.so" 2>/dev/null; then
        chmod 0755 "$S/libddptop-cuda.so"
        planted "$S/ddptop" "another user's module"
        check "another user's module: refused in one line" grep -q "refused: another user owns it" "$tmp/err"
    fi
    # 6. DDPTOP_GPU_MODULE names a file in a world-writable folder
    planted "$BIN" "DDPTOP_GPU_MODULE in a world-writable folder" env DDPTOP_GPU_MODULE="$D/bin/libddptop-cuda.so"
    check "DDPTOP_GPU_MODULE: refused in one line" grep -q "^ddptop: $D/bin/libddptop-cuda.so: refused" "$tmp/err"
    # the build's own module, beside the build's program, and named by
    # DDPTOP_GPU_MODULE: loaded (with no GPU here, it says it found none;
    # a refusal or a load failure would say so instead)
    for how in beside env; do
        if [ $how = env ]; then
            DDPTOP_GPU_MODULE=$module "$BIN" "${TRAIN[@]}" --steps 2 >"$tmp/out" 2>"$tmp/err"
        else
            "$BIN" "${TRAIN[@]}" --steps 2 >"$tmp/out" 2>"$tmp/err"
        fi
        check "the build's module ($how): loaded, not refused" \
            bash -c "! grep -q 'refused\|not installed\|no file' '$tmp/err'"
    done
}

# bad_runpaths FILE..: each RUNPATH or RPATH entry of an ELF file that
# the loader could be made to take from another user: empty (the
# current folder), relative (to the current folder), or a folder others
# can write into that is not named from the program's own ($ORIGIN)
bad_runpaths() {
    local f e
    for f in "$@"; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
        readelf -d "$f" 2>/dev/null | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]$/\1/p' >"$tmp/rp"
        [ -s "$tmp/rp" ] || continue
        while IFS= read -r -d: e; do
            case $e in
            '') echo "$f: an empty entry (the current folder)" ;;
            '$ORIGIN'* | '${ORIGIN}'*) ;;
            /*) if [ -d "$e" ] && [ -n "$(find "$e" -maxdepth 0 -perm -o+w)" ]; then
                echo "$f: $e, a folder anyone can write into"
            fi ;;
            *) echo "$f: $e, relative to the current folder" ;;
            esac
        done < <(printf '%s:' "$(cat "$tmp/rp")")
    done
}

# plant_lib LIB: a library of that name in $tmp/cwd whose constructor
# writes $PLANT_MARKER, with the symbol versions of the one ddptop loads
# (else the loader refuses it before its constructor runs)
plant_lib() {
    local lib=$1 real vs=()
    real=$(cd / && ldd "$BIN" | awk -v l="$lib" '$1 == l { print $3 }')
    [ -f "$real" ] || return 1
    readelf -V "$real" | sed -n '/Version definition/,/Version needs/p' |
        awk '/Name:/ && !/Flags: BASE/ { print $NF " { };" }' >"$tmp/$lib.map"
    [ -s "$tmp/$lib.map" ] && vs=(-Wl,--version-script="$tmp/$lib.map")
    cc -shared -fPIC "${vs[@]}" -Wl,-soname,"$lib" -o "$tmp/cwd/$lib" "$tmp/plant.c"
}

write_plant_c() {
    cat >"$tmp/plant.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
/* runs as soon as the library is loaded, before ddptop asks it anything */
__attribute__((constructor)) static void planted(void)
{
    FILE *f = fopen(getenv("PLANT_MARKER"), "w");
    if (f) {
        fputs("planted code ran\n", f);
        fclose(f);
    }
}
EOF
}

case_runpath() {
    command -v readelf >/dev/null && command -v cc >/dev/null ||
        { echo "SKIP: needs readelf and a C compiler"; exit 77; }
    local build f bad
    build=$(dirname "$BIN")
    # every program and library the build made (not CMake's own probes)
    find "$build" -path '*/CMakeFiles' -prune -o -type f \( -perm -u+x -o -name '*.so*' \) -print >"$tmp/elves"
    echo "runpath: $(wc -l <"$tmp/elves") files of $build"
    mapfile -t files <"$tmp/elves"
    bad=$(bad_runpaths "${files[@]}")
    check "no built file's RUNPATH/RPATH has an empty, relative or world-writable entry${bad:+:
$bad}" test -z "$bad"
    # a library planted where the user stands is never loaded
    write_plant_c
    mkdir -p "$tmp/cwd"
    export PLANT_MARKER=$tmp/MARKER
    for lib in libz.so.1 libcjson.so.1; do
        rm -f "$tmp/cwd"/*.so* "$PLANT_MARKER"
        plant_lib $lib || { bad "cannot plant $lib (not among ddptop's libraries?)"; continue; }
        (cd "$tmp/cwd" && timeout "$LIMIT" "$BIN" --version >"$tmp/out" 2>"$tmp/err")
        check "$lib in the current folder: ddptop --version ran (exit 0)" grep -q "^ddptop " "$tmp/out"
        check "$lib in the current folder: its constructor did not run" test ! -e "$PLANT_MARKER"
        if command -v mpirun >/dev/null; then
            rm -f "$PLANT_MARKER"
            (cd "$tmp/cwd" && timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np 1 "$BIN" --version \
                >"$tmp/out" 2>"$tmp/err")
            check "$lib in the current folder, mpirun -np 1: ddptop ran" grep -q "^ddptop " "$tmp/out"
            check "$lib in the current folder, mpirun -np 1: its constructor did not run" test ! -e "$PLANT_MARKER"
        fi
    done
}

# the installed program and module (a DESTDIR install of this build)
case_install() {
    local build
    build=$(dirname "$BIN")
    command -v readelf >/dev/null && [ -f "$build/Makefile" ] && command -v make >/dev/null ||
        { echo "SKIP: needs readelf and a Makefile build (make preinstall/fast relinks what is installed)"; exit 77; }
    make -s -C "$build" preinstall/fast >"$tmp/make.txt" 2>&1 &&
        DESTDIR=$tmp/inst cmake --install "$build" --prefix /usr/local >>"$tmp/make.txt" 2>&1 ||
        { cat "$tmp/make.txt"; bad "the install failed"; return; }
    find "$tmp/inst" -type f \( -perm -u+x -o -name '*.so*' \) >"$tmp/elves"
    mapfile -t files <"$tmp/elves"
    check "the install holds the program" test -x "$tmp/inst/usr/local/bin/ddptop"
    local bad
    bad=$(bad_runpaths "${files[@]}")
    check "no installed file's RUNPATH/RPATH has an empty, relative or world-writable entry${bad:+:
$bad}" test -z "$bad"
    check "the installed program runs" "$tmp/inst/usr/local/bin/ddptop" --version
}

case_hang() {
    for how in "--strategy single" "--strategy allreduce --ranks 1"; do
        local t0 st secs
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        timeout "$LIMIT" "$BIN" "${TRAIN[@]}" $how --steps 40 --comm-timeout 2 \
            --inject-fault rank=0,step=10,kind=hang --trace "$tmp/t.json" --format json >"$tmp/out.json" 2>"$tmp/err"
        st=$?
        secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
        echo "hang, $how: exit $st after $secs s: $(notes "$tmp/err" | head -1)"
        check "hang, $how: ended (not killed after $LIMIT s)" test "$st" -ne 124
        check "hang, $how: exit 1 (got $st)" test "$st" -eq 1
        check "hang, $how: names rank 0 and --comm-timeout" \
            grep -q "^ddptop: rank 0 failed: no step for [0-9.]* s (--comm-timeout)" "$tmp/err"
        local waited
        waited=$(grep -o "no step for [0-9.]* s" "$tmp/err" | head -1 | awk '{print $4}')
        check "hang, $how: waited the --comm-timeout of 2 s, not less (${waited:-?} s)" \
            python3 -c "import sys; assert 2 <= float(sys.argv[1]) < $LIMIT" "${waited:-x}"
        check "hang, $how: the report says failed, with the steps before the hang" json "$tmp/out.json" \
            "r=d['runs'][0]; assert r['state']=='failed' and 'no step for' in r['error'] and 0 < r['steps'] <= 11, r"
        check "hang, $how: the trace is valid JSON with events" json "$tmp/t.json" "assert len(d['traceEvents']) > 10"
    done
    for how in "--strategy single" "--strategy ddp --ranks 1"; do
        # shellcheck disable=SC2086
        timeout "$LIMIT" "$BIN" "${TRAIN[@]}" $how --steps 20 --inject-fault rank=0,step=5,kind=comm-error \
            >"$tmp/out" 2>"$tmp/err"
        local st=$?
        check "comm-error, $how: refused, exit 2 (got $st)" test "$st" -eq 2
        check "comm-error, $how: one line saying the fault would do nothing" \
            bash -c "grep -q '^ddptop: --inject-fault kind=comm-error: a run of one rank .* the fault would do nothing' '$tmp/err' && [ \$(grep -vc 'running on CPU' '$tmp/err') -eq 1 ]"
    done
}

# refused WHAT COMMAND...: the run is refused, exit 2, one line naming an
# output; every file in $tmp/in is as it was
refused() {
    local what=$1
    shift
    (cd "$tmp/in" && find . -type f -exec md5sum {} + | sort >"$tmp/before")
    (cd "$tmp/in" && timeout "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err")
    local st=$?
    check "$what: refused, exit 2 (got $st; $(notes "$tmp/err" | head -1))" test "$st" -eq 2
    check "$what: in one line naming the output" \
        bash -c "[ \$(grep -vc 'running on CPU' '$tmp/err') -eq 1 ] && grep -q '^ddptop: --[a-z-]*: .* too' '$tmp/err'"
    (cd "$tmp/in" && find . -type f -exec md5sum {} + | sort >"$tmp/after")
    check "$what: every input left as it was" cmp -s "$tmp/before" "$tmp/after"
}

case_collide() {
    mkdir -p "$tmp/in/D"
    cd "$tmp/in" || exit 1
    "$BIN" "${TRAIN[@]}" --steps 5 --trace t.json >/dev/null 2>&1 || { echo "FAIL: cannot make a trace"; exit 1; }
    ln t.json hard.json
    ln -s t.json soft.json
    ln -s D Dlink
    # an IDX data set (the Debian package's files where present, else made)
    if ls /usr/share/datasets/fashion-mnist/*-ubyte* >/dev/null 2>&1; then
        cp /usr/share/datasets/fashion-mnist/*-ubyte* D/
    else
        python3 - D <<'EOF'
import struct, sys, os
d = sys.argv[1]
for prefix, n in (("train", 256), ("t10k", 64)):
    with open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(n * 784))
    with open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
EOF
    fi
    local data
    data=$(cd D && ls train-images-idx3-ubyte* | head -1)
    refused "--replay t.json --output t.json" "$BIN" --batch --replay t.json --output t.json
    refused "--replay t.json --output (its hard link)" "$BIN" --batch --replay t.json --output hard.json
    refused "--replay (a link to t.json) --output t.json" "$BIN" --batch --replay soft.json --output t.json
    refused "--replay a,t.json --output (a link to the second)" "$BIN" --batch --replay hard.json,t.json --output soft.json
    refused "--trace over the data set's $data" "$BIN" --batch --quiet --dataset mnist --data-dir D --model mlp --steps 2 \
        --trace "D/$data"
    refused "--output over the data set's raw form (read before .gz)" "$BIN" --batch --quiet --dataset mnist --data-dir D \
        --model mlp --steps 2 --output D/t10k-labels-idx1-ubyte
    refused "--history over the data set through a linked folder" "$BIN" --batch --quiet --dataset mnist \
        --data-dir "$tmp/in/./D" --model mlp --steps 2 --history "Dlink/../D/$data"
    refused "--trace over the data set through a linked folder" "$BIN" --batch --quiet --dataset mnist \
        --data-dir D --model mlp --steps 2 --trace "Dlink/$data"
    refused "--trace-split: --output over rank 0's file" "$BIN" "${TRAIN[@]}" --steps 2 --trace sp.json --trace-split \
        --output sp.rank0.json
    refused "--trace-split .gz: --output over rank 1's file" "$BIN" "${TRAIN[@]}" --steps 2 --trace sp.json.gz \
        --trace-split --output sp.rank1.json.gz
    refused "a sweep: --output over run 1's trace" "$BIN" "${TRAIN[@]}" --steps 2 --ranks 1,2 --trace s.json \
        --output s.run1.json
    refused "--save-params p.bin --output p.bin" "$BIN" "${TRAIN[@]}" --steps 2 --save-params p.bin --output p.bin
    refused "--save-params p.bin --trace p.bin" "$BIN" "${TRAIN[@]}" --steps 2 --save-params p.bin --trace p.bin
    refused "--history h.csv --output ./h.csv" "$BIN" "${TRAIN[@]}" --steps 2 --history h.csv --output ./h.csv
    refused "--trace x.json --output x.json" "$BIN" "${TRAIN[@]}" --steps 2 --trace x.json --output x.json
    mkdir -p R && cp t.json R/a.json
    refused "--replay DIR --output over a trace in it" "$BIN" --batch --replay R --output R/a.json
    refused "--replay a b (separate arguments) --output b" "$BIN" --batch --replay hard.json t.json --output t.json
    refused "--replay DIR --output a new trace name in it" "$BIN" --batch --replay R --output R/new.json
    # --follow F: every trace in F is an input, and so is every name one
    # could land at later (*.json, *.json.gz); --idle-exit ends a run that
    # is not refused
    mkdir -p F && cp "$SRC/tests/fixtures/trace/kineto_gloo_cpu.json" F/rank0.pt.trace.json && ln -s F Flink && ln F/rank0.pt.trace.json F0.json
    refused "--follow F --output over a trace in it" "$BIN" --batch --follow F --idle-exit 1 \
        --output F/rank0.pt.trace.json
    check "--follow F --output over a trace in it: the line names both" \
        grep -q "^ddptop: --output: F/rank0.pt.trace.json is the --follow file too" "$tmp/err"
    refused "--follow F --output a trace name that lands later" "$BIN" --batch --follow F --idle-exit 1 \
        --output F/rank1.pt.trace.json.gz
    check "--follow F --output a later trace name: the line names both" \
        grep -q "^ddptop: --output: F/rank1.pt.trace.json.gz is in the --follow folder F, " "$tmp/err"
    refused "--follow (a link to F) --output a trace name in F" "$BIN" --batch --follow Flink --idle-exit 1 \
        --output F/new.json
    refused "--follow F --output (a hard link to a trace in it)" "$BIN" --batch --follow F --idle-exit 1 \
        --output F0.json
    (cd "$tmp/in" && timeout "$LIMIT" "$BIN" --batch --follow F --idle-exit 1 --output F/report.txt >/dev/null \
        2>"$tmp/err")
    check "--follow F --output F/report.txt (no trace's name): followed and written" test -s F/report.txt
    refused "--plot . --trace over its speedup.svg" "$BIN" "${TRAIN[@]}" --steps 2 --plot . --trace speedup.svg
    refused "--plot R --history over its loss.svg" "$BIN" "${TRAIN[@]}" --steps 2 --plot R --history R/loss.svg
    refused "--replay --plot R: its breakdown.svg is an input" "$BIN" --batch --replay R/a.json,breakdown.svg --plot .
    refused "--output over the cost model a training run reads" env DDPTOP_COMM_MODEL="$tmp/in/cm.json" \
        "$BIN" "${TRAIN[@]}" --steps 2 --output cm.json
    refused "--bench-comm --output over the cost model it writes" env DDPTOP_COMM_MODEL="$tmp/in/cm2.json" \
        "$BIN" --bench-comm --ranks 2 --max-bytes 4096 --output cm2.json
    # files that are not one: all written
    (cd "$tmp/in" && "$BIN" "${TRAIN[@]}" --steps 2 --trace new.json --trace-split --output new.txt \
        --history new.csv --save-params new.bin >/dev/null 2>"$tmp/err")
    check "distinct outputs: the run writes them all" \
        bash -c "cd '$tmp/in' && [ -s new.rank0.json ] && [ -s new.rank1.json ] && [ -s new.txt ] && [ -s new.csv ] && [ -s new.bin ]"
}

case_symlink() {
    cd "$tmp" || exit 1
    umask 022
    for opt in output history trace save-params; do
        echo "precious" >"target.$opt"
        ln -s "target.$opt" "link.$opt"
        "$BIN" "${TRAIN[@]}" --steps 3 "--$opt" "link.$opt" >/dev/null 2>"$tmp/err"
        local st=$?
        check "--$opt at a link: the run ends well (exit $st)" test "$st" -eq 0
        check "--$opt at a link: the link's target is untouched" grep -qx precious "target.$opt"
        check "--$opt at a link: the link became the file written" bash -c "[ -f link.$opt ] && [ ! -L link.$opt ] && [ -s link.$opt ]"
    done
    check "no temporary file is left behind" bash -c "! ls -A | grep -q '\.tmp$'"
    # modes: a new file 0666 less the umask; a replaced one keeps its own
    "$BIN" "${TRAIN[@]}" --steps 2 --output new022.txt >/dev/null 2>&1
    (umask 077 && "$BIN" "${TRAIN[@]}" --steps 2 --output new077.txt >/dev/null 2>&1)
    echo old >private.txt
    chmod 0600 private.txt
    "$BIN" "${TRAIN[@]}" --steps 2 --output private.txt >/dev/null 2>&1
    check "a new report under umask 022 is 0644 ($(stat -c %a new022.txt))" test "$(stat -c %a new022.txt)" = 644
    check "a new report under umask 077 is 0600 ($(stat -c %a new077.txt))" test "$(stat -c %a new077.txt)" = 600
    check "a replaced report keeps its mode 0600 ($(stat -c %a private.txt))" test "$(stat -c %a private.txt)" = 600
    check "... and holds the new report" bash -c "! grep -qx old private.txt && grep -q samples private.txt"
    # a report that cannot be written whole (files over 1 KB fail, EFBIG)
    # leaves the old file as it was; the report goes to stdout (a pipe)
    head -c 600 /dev/urandom | base64 >good.txt
    cp good.txt good.orig
    (
        ulimit -f 1
        trap '' XFSZ
        exec "$BIN" "${TRAIN[@]}" --steps 3 --output good.txt
    ) 2>"$tmp/err" | cat >"$tmp/stdout"
    check "an unwritable report: one line saying so" grep -q "^ddptop: --output: cannot write good.txt" "$tmp/err"
    check "an unwritable report: the old file is whole" cmp -s good.txt good.orig
    check "an unwritable report: the report went to stdout" grep -q samples "$tmp/stdout"
    # the cost model's folder: a link is refused, nothing written through it
    mkdir -p home/.cache elsewhere
    chmod 0700 home home/.cache
    ln -s ../../elsewhere home/.cache/ddptop
    env -u DDPTOP_COMM_MODEL -u XDG_CACHE_HOME HOME="$tmp/home" "$BIN" --bench-comm --ranks 2 --max-bytes 65536 \
        >/dev/null 2>"$tmp/err"
    check "a symlinked ~/.cache/ddptop: one line, naming the link" \
        grep -q "^ddptop: cannot store the cost model: $tmp/home/.cache/ddptop: a symbolic link, not followed" "$tmp/err"
    check "a symlinked ~/.cache/ddptop: nothing written through it" bash -c "[ -z \"\$(ls -A elsewhere)\" ]"
    rm home/.cache/ddptop
    env -u DDPTOP_COMM_MODEL -u XDG_CACHE_HOME HOME="$tmp/home" "$BIN" --bench-comm --ranks 2 --max-bytes 65536 \
        >/dev/null 2>"$tmp/err"
    check "a real ~/.cache/ddptop: the fit is stored, private" \
        bash -c "[ -s home/.cache/ddptop/comm-model.json ] && [ \$(stat -c %a home/.cache/ddptop) = 700 ]"
}

# bomb FILE MIB: a gzip file of MIB MiB of zeros (a few KiB a MiB)
bomb() {
    python3 - "$1" "$2" <<'EOF'
import sys, zlib
out, mib = sys.argv[1], int(sys.argv[2])
z, chunk = zlib.compressobj(9, zlib.DEFLATED, 31), bytes(1 << 20)
with open(out, "wb") as f:
    for _ in range(mib):
        f.write(z.compress(chunk))
    f.write(z.flush())
EOF
}

# peak KIB COMMAND...: runs COMMAND (stdout and stderr to $tmp/out, $tmp/err),
# then puts its peak resident size in KiB in the variable named KIB
peak() {
    local var=$1
    shift
    local _k
    _k=$(python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as o, open(sys.argv[2], "wb") as e:
    subprocess.run(sys.argv[3:], stdout=o, stderr=e)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$tmp/out" "$tmp/err" timeout "$LIMIT" "$@")
    printf -v "$var" '%s' "$_k"
}

case_gzip() {
    cd "$tmp" || exit 1
    bomb big.json.gz 1024 # 1 GiB of zeros, about 1 MiB of gzip
    bomb mid.json.gz 200
    echo "gzip: big.json.gz $(stat -c %s big.json.gz) bytes, mid.json.gz $(stat -c %s mid.json.gz) bytes"
    local kib
    peak kib "$BIN" --batch --replay big.json.gz
    echo "--replay big.json.gz: peak $((kib / 1024)) MiB; $(head -1 "$tmp/err")"
    check "--replay of a gzip bomb: one line naming the file and the cause" \
        bash -c "[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^ddptop: --replay: big.json.gz: gzip data that inflates past 100 MiB .*refused as a gzip bomb; DDPTOP_GZIP_MAX_MB and DDPTOP_GZIP_MAX_RATIO raise the limit' '$tmp/err'"
    check "--replay of a gzip bomb: peak memory under 400 MiB (${kib} KiB), not the 1 GiB it inflates to" \
        test "$kib" -lt $((400 * 1024))
    mkdir -p F
    cp big.json.gz F/rank0.pt.trace.json.gz
    peak kib "$BIN" --batch --follow F --idle-exit 1
    echo "--follow: peak $((kib / 1024)) MiB; $(grep -m1 gzip "$tmp/err")"
    check "--follow of a gzip bomb: the file left out in one line naming the cause" \
        grep -q 'rank0.pt.trace.json.gz: gzip data that inflates past 100 MiB .*refused as a gzip bomb.*; left out' "$tmp/err"
    check "--follow of a gzip bomb: peak memory under 400 MiB (${kib} KiB)" test "$kib" -lt $((400 * 1024))
    # the floor and the knobs: 200 MiB of zeros is past 64 MiB (its
    # ratio's cap is below the floor); a ratio raised lets it inflate (it
    # is then refused as no trace); an absolute cap below it refuses it
    "$BIN" --batch --replay mid.json.gz >/dev/null 2>"$tmp/err"
    check "a 200 MiB bomb: refused at the 64 MiB floor" grep -q "inflates past 64 MiB" "$tmp/err"
    DDPTOP_GZIP_MAX_RATIO=100000 "$BIN" --batch --replay mid.json.gz >/dev/null 2>"$tmp/err"
    check "DDPTOP_GZIP_MAX_RATIO raised: inflated, then not a trace ($(head -1 "$tmp/err"))" \
        bash -c "! grep -q 'gzip bomb' '$tmp/err' && grep -q '^ddptop: --replay: mid.json.gz' '$tmp/err'"
    DDPTOP_GZIP_MAX_RATIO=100000 DDPTOP_GZIP_MAX_MB=150 "$BIN" --batch --replay mid.json.gz >/dev/null 2>"$tmp/err"
    check "DDPTOP_GZIP_MAX_MB=150 under a raised ratio: refused at 150 MiB" grep -q "inflates past 150 MiB" "$tmp/err"
    DDPTOP_GZIP_MAX_MB=lots "$BIN" --batch --replay mid.json.gz >/dev/null 2>"$tmp/err"
    check "DDPTOP_GZIP_MAX_MB=lots: refused in one line naming it" \
        grep -q "DDPTOP_GZIP_MAX_MB must be a whole number from 1 (got 'lots')" "$tmp/err"
    # a real trace in gzip still replays
    "$BIN" --batch --replay "$SRC/tests/fixtures/trace/gpu_lenet_ddp.json.gz" >/dev/null 2>"$tmp/err"
    local st=$?
    check "a gzip trace (10x) replays (exit $st)" test "$st" -eq 0
}

case_env() {
    # the variables the program reads (not the tests' own)
    grep -rhoE 'getenv\("DDPTOP_[A-Z0-9_]+"\)' "$SRC"/{app,src,ui,trace,collectives,models,gpu} |
        sed -E 's/getenv\("(.*)"\)/\1/' | sort -u >"$tmp/read"
    grep -oE '^\| `DDPTOP_[A-Z0-9_]+`' "$SRC/docs/environment.md" | grep -oE 'DDPTOP_[A-Z0-9_]+' | sort -u >"$tmp/doc"
    check "docs/environment.md has a row for each of the $(wc -l <"$tmp/read") variables read" \
        bash -c "comm -23 '$tmp/read' '$tmp/doc' | sed 's/^/  no row: /' | { ! grep .; }"
    check "every row of docs/environment.md is a variable the program reads" \
        bash -c "comm -13 '$tmp/read' '$tmp/doc' | sed 's/^/  read nowhere: /' | { ! grep .; }"
    command -v strings >/dev/null || { echo "SKIP: no strings(1)"; exit 77; }
    # a program copied elsewhere (installed) would look there: no folder of
    # themes but the install's may be compiled in (the source tree's, at
    # whatever path it was built; file names in debug data are no search
    # path, and none of them ends in /themes)
    check "the program holds no themes folder but the install's" \
        bash -c "! strings -a '$BIN' | grep -E '^/.*/themes/?\$' | grep -v '/share/ddptop/themes/\?\$' | sed 's/^/  compiled in: /' | grep ."
}

case_cut() {
    command -v tmux >/dev/null || { echo "SKIP: no tmux"; exit 77; }
    local sock=ddptop_safety_$$
    tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 40 \
        "cd '$tmp' && env LANG=C.UTF-8 DDPTOP_UI_TEST_CRASH=abort:20 ASAN_OPTIONS=handle_abort=0 '$BIN' \
         --dataset synthetic --model mlp --steps 100000 --trace t.json --history h.csv 2>err; echo \$? >exit" ||
        { echo "FAIL: cannot start tmux"; exit 1; }
    for _ in $(seq 1 $((LIMIT * 10))); do
        [ -s "$tmp/exit" ] && break
        sleep 0.1
    done
    tmux -L "$sock" kill-server 2>/dev/null
    check "the UI died of the crash hook (SIGABRT: 134; got $(cat "$tmp/exit" 2>/dev/null))" \
        test "$(cat "$tmp/exit" 2>/dev/null)" = 134
    "$BIN" --batch --replay "$tmp/t.json" --format json >"$tmp/r.json" 2>"$tmp/rerr"
    local st=$?
    check "the cut trace replays (exit $st: $(notes "$tmp/rerr" | head -1))" test "$st" -eq 0
    check "... saying it was cut short" grep -q "incomplete (cut short)" "$tmp/rerr"
    check "... with the 20 steps the UI had drawn" json "$tmp/r.json" \
        "r=d['runs'][0]; assert r['steps'] >= 20 and r['replay']['truncated'], r"
    check "the history holds those steps' rows" python3 -c "
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['kind'] == 'step']
assert len({int(r['step']) for r in rows}) >= 20, len(rows)" "$tmp/h.csv"
}

case_costmodel() {
    cd "$tmp" || exit 1
    mkdir -p m
    chmod 0700 m
    # model KIND WHY: a training run with the cost model made KIND says WHY once
    model() {
        local kind=$1 why=$2 path=${3:-$tmp/m/cm.json}
        DDPTOP_COMM_MODEL=$path "$BIN" "${TRAIN[@]}" --steps 3 --repeat 2 --format json >"$tmp/out.json" \
            2>"$tmp/err"
        check "$kind cost model: said once ($(notes "$tmp/err" | head -1))" \
            test "$(grep -c '^ddptop: the cost model is not used (' "$tmp/err")" -eq 1
        check "$kind cost model: the line says why" grep -q "^ddptop: the cost model is not used (.*$why" "$tmp/err"
    }
    echo '{"fits": [' >m/cm.json
    model corrupt "cm.json: not JSON"
    echo '{"fits": []}' >m/real.json
    rm m/cm.json
    ln -s real.json m/cm.json
    model symlinked "cm.json: not a regular file (a symbolic link)"
    rm m/cm.json
    mkdir -p m2/real
    chmod 0700 m2 m2/real
    echo '{"fits": []}' >m2/real/cm.json
    ln -s real m2/link
    model "symlinked folder" "m2/link: a symbolic link, not followed" "$tmp/m2/link/cm.json"
    mkdir -p shared
    chmod 0777 shared
    echo '{"fits": []}' >shared/cm.json
    model "shared folder" "shared: a folder that another user can write" "$tmp/shared/cm.json"
    # another user's (root can make one)
    rm -f m/cm.json
    echo '{"fits": []}' >m/cm.json
    if [ "$(id -u)" = 0 ] && chown nobody m/cm.json; then
        model foreign "cm.json: owned by another user"
    fi
    # HOME a folder anyone can write into (as HOME=/tmp): the cost model is
    # never kept under it; --bench-comm says so, and makes nothing there
    mkdir -p sharedhome
    chmod 1777 sharedhome
    env -u DDPTOP_COMM_MODEL -u XDG_CACHE_HOME HOME="$tmp/sharedhome" "$BIN" --bench-comm --ranks 2 \
        --max-bytes 65536 >/dev/null 2>"$tmp/err"
    check "HOME a shared folder: --bench-comm says the cost model is not kept there ($(grep 'cost model' "$tmp/err"))" \
        grep -q "^ddptop: the cost model is not stored: HOME is $tmp/sharedhome, a folder anyone can write into" \
        "$tmp/err"
    check "HOME a shared folder: nothing made under it" bash -c "[ -z \"\$(ls -A '$tmp/sharedhome')\" ]"
    # a good file, or none: not a word
    rm -f m/cm.json
    DDPTOP_COMM_MODEL=$tmp/m/none.json "$BIN" "${TRAIN[@]}" --steps 3 >/dev/null 2>"$tmp/err"
    check "no cost model: no line" bash -c "! grep -q 'cost model' '$tmp/err'"
    echo '{"fits": []}' >m/cm.json
    DDPTOP_COMM_MODEL=$tmp/m/cm.json "$BIN" "${TRAIN[@]}" --steps 3 >/dev/null 2>"$tmp/err"
    check "a good cost model: no line" bash -c "! grep -q 'cost model' '$tmp/err'"
}

case "$CASE" in
module | hang | collide | symlink | env | cut | costmodel | runpath | install | gzip) "case_$CASE" ;;
*)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
checks_done
