#!/usr/bin/env bash
# gpu_bundle.sh - builds the GPU tests and ddptop here (where the CUDA
# toolkit, cuDNN, NCCL and CUPTI are installed) into .gpubundle/, with the
# non-CUDA shared libraries they need, so that a GPU machine without this
# project's build dependencies can run them (scripts/gpu_check.sh there).
# The CUDA libraries themselves (cudart, cuBLAS, cuDNN, NCCL, CUPTI) are
# taken from the GPU machine. oneDNN comes along (about 40 MB): the GPU
# model tests compare every zoo model with the CPU, and the reference CPU
# kernels take minutes for the large ones.
#
#   scripts/gpu_bundle.sh            # then carry .gpubundle to the GPU machine
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpubundle
# (a linked worktree's .git is a file: git names the exclude file it reads)
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
grep -qx "/$out/" "$exclude" 2>/dev/null || echo "/$out/" >>"$exclude" || echo "note: /$out/ is not in $exclude"
cmake -S . -B build-gpubundle -DCMAKE_BUILD_TYPE=Release -DDDPTOP_WITH_DNNL=ON >/dev/null
# (only what the bundle carries)
cmake --build build-gpubundle -j"$(nproc)" --target ddptop ddptop_gpu test_gpu test_gpu_fixtures test_gpu_models >/dev/null
rm -rf "$out"
mkdir -p "$out/lib"
# the GPU module sits beside the programs, where they look for it
bins=(build-gpubundle/ddptop build-gpubundle/libddptop-cuda.so build-gpubundle/tests/test_gpu
    build-gpubundle/tests/test_gpu_fixtures build-gpubundle/tests/test_gpu_models)
cp "${bins[@]}" "$out/"
# the shared libraries that are neither the C runtime nor CUDA's
for b in "${bins[@]}"; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libutil|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    grep -Ev '/lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|cupti|cuda|nvrtc|nvJitLink)\.so' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done

# OpenMPI's launcher, for tests/gpu_mpi.sh on a GPU machine that has none:
# this machine's mpirun, orted, their plugins and help texts, relocated
# there with OPAL_PREFIX (gpu_check.sh does it). Plugins for networks the
# GPU machine cannot have (UCX, libfabric, PSM, verbs) and the MPI-IO and
# OpenSHMEM ones stay behind.
if command -v orterun >/dev/null && dpkg -s openmpi-bin libpmix2 >/dev/null 2>&1; then
    stage=$(mktemp -d)
    for p in openmpi-bin libopenmpi3 openmpi-common libpmix2; do dpkg -L "$p"; done |
        grep -Ev '/share/(man|doc|lintian)/|fortran|f08|mpifh|java|oshmem|ompitrace' |
        while read -r f; do
            if [ -L "$f" ] || [ -f "$f" ]; then mkdir -p "$stage$(dirname "$f")" && cp -a "$f" "$stage$f"; fi
        done
    keep='/(libc|libm|libevent_core-[0-9.]+|libevent_pthreads-[0-9.]+|libudev|libopen-pal|libopen-rte|libhwloc|libz|libmpi|libpmix|libmunge|libnuma|libmca_common_(sm|monitoring))\.so'
    for plugin in "$stage"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so; do
        if ldd "$plugin" | awk '$3 ~ /^\// {print $3}' | grep -Evq "$keep"; then rm "$plugin"; fi
    done
    rm -rf "$stage"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_{io,fs,fbtl,fcoll,sharedfp}_*
    for lib in libnuma.so.1 libpmix.so.2 libmunge.so.2; do cp -L "/lib/x86_64-linux-gnu/$lib" "$stage/usr/lib/x86_64-linux-gnu/"; done
    tar -C "$stage" -cJf "$out/mpi.tar.xz" usr etc
    rm -rf "$stage"
fi
du -sh "$out"
ls "$out" "$out/lib"
