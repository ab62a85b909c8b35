/* cpu_isa.c - the instruction set ddptop's CPU kernels dispatch on (see
 * cpu_isa.h): the processor's, capped by DDPTOP_MAX_CPU_ISA. oneDNN is
 * capped to the same level before it generates any code, and where the
 * user capped oneDNN alone (ONEDNN_MAX_CPU_ISA), ddptop's own loops follow
 * the level oneDNN took, so that one process never mixes two.
 */
#include "cpu_isa.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DDPTOP_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

/* The cap's names, oneDNN's spellings (ONEDNN_MAX_CPU_ISA) among them,
 * each with the level it allows. */
static const struct {
    const char *name;
    int level;
} g_names[] = {
    {"sse41", CPU_ISA_BASE},
    {"avx", CPU_ISA_BASE},
    {"avx2", CPU_ISA_AVX2},
    {"avx2_vnni", CPU_ISA_AVX2},
    {"avx512_core", CPU_ISA_AVX512},
    {"avx512", CPU_ISA_AVX512},
    {"avx512_core_vnni", CPU_ISA_AVX512},
    {"avx512_core_bf16", CPU_ISA_AVX512_BF16},
    {"avx512_core_fp16", CPU_ISA_AVX512_BF16},
    {"avx512_core_amx", CPU_ISA_AVX512_BF16},
    {"all", CPU_ISA_AVX512_BF16},
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_level = CPU_ISA_BASE, g_hw = CPU_ISA_BASE, g_capped;
static char g_err[160];

/* What the processor itself has. */
static int hardware_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return __builtin_cpu_supports("avx512bf16") ? CPU_ISA_AVX512_BF16 : CPU_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return CPU_ISA_AVX2;
#endif
    return CPU_ISA_BASE;
}

static int parse_cap(const char *v)
{
    char low[32];
    size_t n = 0;
    for (; v[n] && n + 1 < sizeof(low); n++)
        low[n] = (char)tolower((unsigned char)v[n]);
    low[n] = 0;
    if (v[n])
        return -1;
    for (size_t i = 0; i < sizeof(g_names) / sizeof(g_names[0]); i++)
        if (!strcmp(low, g_names[i].name))
            return g_names[i].level;
    return -1;
}

#ifdef DDPTOP_HAVE_DNNL
/* The level of what oneDNN dispatches on (its own cap included). */
static int dnnl_level(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16 ||
        (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx)
        return CPU_ISA_AVX512_BF16;
    if ((isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core)
        return CPU_ISA_AVX512;
    if ((isa & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2)
        return CPU_ISA_AVX2;
    return CPU_ISA_BASE;
}

static dnnl_cpu_isa_t dnnl_isa_of(int level)
{
    switch (level) {
    case CPU_ISA_AVX2:
        return dnnl_cpu_isa_avx2;
    case CPU_ISA_AVX512:
        return dnnl_cpu_isa_avx512_core_vnni;
    case CPU_ISA_AVX512_BF16:
        return dnnl_cpu_isa_all;
    default:
        return dnnl_cpu_isa_avx;
    }
}
#endif

static void isa_init(void)
{
    g_hw = g_level = hardware_level();
    const char *cap = getenv("DDPTOP_MAX_CPU_ISA");
    if (cap && *cap) {
        int c = parse_cap(cap);
        if (c < 0) {
            snprintf(g_err, sizeof(g_err),
                     "DDPTOP_MAX_CPU_ISA=%.40s: expected one of avx2, avx512_core, avx512_core_bf16, all (or another "
                     "of oneDNN's names)",
                     cap);
            return;
        }
        if (c < g_level) {
            g_level = c;
            g_capped = 1;
        }
#ifdef DDPTOP_HAVE_DNNL
        /* before oneDNN generates code: this is the first thing that asks it */
        if (dnnl_set_max_cpu_isa(dnnl_isa_of(c)) != dnnl_success)
            snprintf(g_err, sizeof(g_err), "DDPTOP_MAX_CPU_ISA: oneDNN did not take the cap (it had started)");
#endif
    }
#ifdef DDPTOP_HAVE_DNNL
    int d = dnnl_level(); /* ONEDNN_MAX_CPU_ISA alone: ddptop's loops follow it */
    if (d < g_level) {
        g_level = d;
        g_capped = 1;
    }
#endif
}

int cpu_isa(void)
{
    pthread_once(&g_once, isa_init);
    return g_level;
}

const char *cpu_isa_error(void)
{
    pthread_once(&g_once, isa_init);
    return g_err[0] ? g_err : NULL;
}

const char *cpu_isa_name(int level)
{
    static const char *const names[] = {[CPU_ISA_BASE] = "x86-64 (no AVX2)",
                                        [CPU_ISA_AVX2] = "avx2",
                                        [CPU_ISA_AVX512] = "avx512_core",
                                        [CPU_ISA_AVX512_BF16] = "avx512_core_bf16"};
    return level >= CPU_ISA_BASE && level <= CPU_ISA_AVX512_BF16 ? names[level] : "?";
}

void cpu_isa_describe(char *buf, size_t len)
{
    pthread_once(&g_once, isa_init);
    char model[96] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "model name", 10)) {
                const char *v = strchr(line, ':');
                if (v) {
                    v++;
                    while (*v == ' ' || *v == '\t')
                        v++;
                    snprintf(model, sizeof(model), "%.*s", (int)strcspn(v, "\n"), v);
                }
                break;
            }
        fclose(f);
    }
    if (g_capped)
        snprintf(buf, len, "%s, kernels on %s (capped from %s)", model[0] ? model : "unknown CPU",
                 cpu_isa_name(g_level), cpu_isa_name(g_hw));
    else
        snprintf(buf, len, "%s, kernels on %s", model[0] ? model : "unknown CPU", cpu_isa_name(g_level));
}
