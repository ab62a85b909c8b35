/* kernels_cpu_dnnl.c - oneDNN's shared state, for the builds that have it:
 * the process's engine, each model's context (its stream, scratchpad and
 * weight buffer; see kernels_cpu_dnnl.h), the channel block oneDNN's
 * kernels prefer on this CPU, and dnnl_sgemm behind cpu_gemm. The
 * primitives are in kernels_cpu_{conv,ip,bn,pool}.c; kernels_cpu_fallback.c
 * stands in for all of them without oneDNN.
 */
#include "kernels_cpu_dnnl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dnnl_engine_t cpu_engine;
dnnl_primitive_attr_t cpu_attr;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static dnnl_status_t g_engine_status;

static void engine_init(void)
{
    cpu_isa(); /* DDPTOP_MAX_CPU_ISA reaches oneDNN before it generates code */
    g_engine_status = dnnl_engine_create(&cpu_engine, dnnl_cpu, 0);
    if (g_engine_status == dnnl_success)
        g_engine_status = dnnl_primitive_attr_create(&cpu_attr);
    if (g_engine_status == dnnl_success)
        g_engine_status = dnnl_primitive_attr_set_scratchpad_mode(cpu_attr, dnnl_scratchpad_mode_user);
}

static int engine_ready(char *err, size_t errlen)
{
    pthread_once(&g_engine_once, engine_init);
    if (g_engine_status != dnnl_success) {
        snprintf(err, errlen, "oneDNN: cannot create the CPU engine (status %d)", (int)g_engine_status);
        return -1;
    }
    return 0;
}

int cpu_have_dnnl(void)
{
    return 1;
}

int cpu_preferred_blk(void)
{
    return cpu_isa() >= CPU_ISA_AVX512 ? 16 : 8;
}

int cpu_bf16_native(void)
{
    return cpu_isa() >= CPU_ISA_AVX512_BF16;
}

int cpu_ctx_bf16(struct cpu_ctx *x, char *err, size_t errlen)
{
    x->bf16 = 1;
    return 0;
}

void cpu_gemm(char ta, char tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

struct cpu_ctx *cpu_ctx_create(char *err, size_t errlen)
{
    struct cpu_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (engine_ready(err, errlen) != 0)
        goto fail;
    DNNL_TRY(dnnl_stream_create(&x->stream, cpu_engine, dnnl_stream_default_flags));
    return x;
fail:
    cpu_ctx_destroy(x);
    return NULL;
}

int cpu_ctx_finish(struct cpu_ctx *x, char *err, size_t errlen)
{
    free(x->wtmp);
    size_t w = (x->wtmp_need + 63) & ~(size_t)63;
    x->wtmp = w ? aligned_alloc(64, w) : NULL;
    if (w && !x->wtmp) {
        snprintf(err, errlen, "out of memory for %zu bytes of weights", w);
        return -1;
    }
    free(x->scratch);
    size_t n = (x->scratch_need + 63) & ~(size_t)63;
    x->scratch = n ? aligned_alloc(64, n) : NULL;
    if (n && !x->scratch) {
        snprintf(err, errlen, "out of memory for a %zu-byte scratchpad", n);
        return -1;
    }
    if (x->scratch)
        memset(x->scratch, 0, n); /* touch the pages now, not in the first step */
    size_t *need[] = {&x->bf_src_need, &x->bf_ddst_need, &x->atmp_need, &x->atmp_dd_need};
    void **buf[] = {&x->bf_src, &x->bf_ddst, &x->atmp, &x->atmp_dd};
    for (int k = 0; k < 4; k++) {
        free(*buf[k]);
        size_t b = (*need[k] + 63) & ~(size_t)63;
        *buf[k] = b ? aligned_alloc(64, b) : NULL;
        if (b && !*buf[k]) {
            snprintf(err, errlen, "out of memory for %zu bytes of %s activations", b, k < 2 ? "bfloat16" : "reordered");
            return -1;
        }
    }
    return 0;
}

void cpu_ctx_destroy(struct cpu_ctx *x)
{
    if (!x)
        return;
    if (x->stream)
        dnnl_stream_destroy(x->stream);
    free(x->scratch);
    free(x->wtmp);
    free(x->bf_src);
    free(x->bf_ddst);
    free(x->atmp);
    free(x->atmp_dd);
    free(x);
}
