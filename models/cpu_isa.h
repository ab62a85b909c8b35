/* cpu_isa.h - the instruction set the CPU kernels dispatch on: oneDNN's
 * primitives and layouts, and ddptop's own vector loops (VEC_KERNEL in
 * kernels_cpu.h, the max-pool of blocked maps). It is the processor's,
 * capped by the environment:
 *   DDPTOP_MAX_CPU_ISA=avx2 (or avx512_core, avx512_core_bf16, all; oneDNN's
 *   names for ONEDNN_MAX_CPU_ISA are taken too) caps both oneDNN and
 *   ddptop's loops, so that an AVX-512 machine runs what an AVX2 one would;
 *   ONEDNN_MAX_CPU_ISA alone caps oneDNN, and ddptop's loops follow it.
 * Results do not depend on it (layer numbers, partitions and the figures'
 * meaning are the same on any level); speed does.
 */
#ifndef DDPTOP_CPU_ISA_H
#define DDPTOP_CPU_ISA_H

#include <stddef.h>

enum cpu_isa_level {
    CPU_ISA_BASE = 0,   /* x86-64 without AVX2, or another architecture */
    CPU_ISA_AVX2,       /* AVX2 and FMA */
    CPU_ISA_AVX512,     /* AVX-512 F, BW, VL, DQ (oneDNN's avx512_core) */
    CPU_ISA_AVX512_BF16 /* and bfloat16 dot products (AVX512_BF16, or AMX) */
};

/* The level dispatched on (enum cpu_isa_level); the first call applies
 * DDPTOP_MAX_CPU_ISA to oneDNN, so it comes before any oneDNN primitive. */
int cpu_isa(void);
/* A bad DDPTOP_MAX_CPU_ISA, as one line (the caller exits 2); NULL if none. */
const char *cpu_isa_error(void);
const char *cpu_isa_name(int level);
/* "AMD EPYC, kernels on avx2 (capped from avx512_core_bf16)": the
 * processor's model name (/proc/cpuinfo) and the level, for reports and
 * benchmark tables. */
void cpu_isa_describe(char *buf, size_t len);

#endif
