# cpu.sh - what the processor and the environment let ddptop's CPU kernels
# use, read from /proc/cpuinfo and the caps, not from ddptop; sourced.
#   cpu_bf16   0 when ddptop must run --precision bf16 here: the processor
#              multiplies bfloat16 (avx512_bf16 or amx_bf16) and no cap
#              (DDPTOP_MAX_CPU_ISA, ONEDNN_MAX_CPU_ISA, DNNL_MAX_CPU_ISA)
#              holds the kernels below avx512_core_bf16; else 1, with the
#              feature or cap that rules it out in $cpu_why
cpu_bf16() {
    cpu_why=
    if ! grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
        cpu_why="no avx512_bf16 or amx_bf16 in /proc/cpuinfo"
        return 1
    fi
    local v val
    for v in DDPTOP_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA; do
        val=$(printf '%s' "${!v:-}" | tr '[:upper:]' '[:lower:]')
        case $val in
        "" | all | avx512_core_bf16 | avx512_core_fp16 | avx512_core_amx*) ;;
        *)
            cpu_why="$v=${!v} caps the kernels below avx512_core_bf16"
            return 1
            ;;
        esac
    done
    return 0
}
