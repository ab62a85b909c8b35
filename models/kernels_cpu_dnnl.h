/* kernels_cpu_dnnl.h - the oneDNN plumbing that the oneDNN kernel files
 * (kernels_cpu_dnnl.c, kernels_cpu_conv.c, kernels_cpu_ip.c,
 * kernels_cpu_bn.c, kernels_cpu_pool.c) share; they are built only when
 * ddptop has oneDNN, so nothing here is conditional. Not part of the kernel
 * API.
 *
 * A model's context (struct cpu_ctx) is a stream and one scratchpad that
 * every primitive of the model uses: each primitive is made with a
 * user-managed scratchpad (cpu_attr) and raises scratch_need to its own
 * size, and cpu_ctx_finish allocates the largest once, so executing a
 * primitive allocates no scratch memory. (oneDNN's JIT GEMM, inside the
 * inner product, still takes a 72 KB packing buffer from the heap per
 * call.) The helpers are static inline so that their short names stay out
 * of the library's symbols.
 */
#ifndef DDPTOP_KERNELS_CPU_DNNL_H
#define DDPTOP_KERNELS_CPU_DNNL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "kernels_cpu_internal.h"

struct cpu_ctx {
    size_t scratch_need; /* bytes: the largest scratchpad of any primitive */
    void *scratch;
    /* weights in a layout needed only within one call (backward-data's,
     * backward-weights' output): one buffer for all layers */
    size_t wtmp_need;
    void *wtmp;
    /* bf16 (cpu_ctx_bf16): the convolutions' and linear layers' inputs
     * (bf_src) and output gradients (bf_ddst) rounded to bfloat16 within
     * one call, one buffer each for all layers */
    int bf16;
    size_t bf_src_need, bf_ddst_need;
    void *bf_src, *bf_ddst;
    /* activations in the layout a backward pass takes where it differs
     * from the layer's own (wprims: src_bw, dsrc_bd in atmp; ddst_bw in
     * atmp_dd), within one call */
    size_t atmp_need, atmp_dd_need;
    void *atmp, *atmp_dd;
    dnnl_stream_t stream;
};

/* The process's one CPU engine and the attributes every primitive is made
 * with, set up by the first cpu_ctx_create (kernels_cpu_dnnl.c). */
extern dnnl_engine_t cpu_engine;
extern dnnl_primitive_attr_t cpu_attr; /* user-managed scratchpad */

/* Fails the calling function through its `fail` label, with err naming the
 * call and where it was made. */
#define DNNL_TRY(call)                                                                                                 \
    do {                                                                                                               \
        dnnl_status_t st_ = (call);                                                                                    \
        if (st_ != dnnl_success) {                                                                                     \
            snprintf(err, errlen, "oneDNN: %s failed (status %d) at %s:%d", #call, (int)st_, __FILE__, __LINE__);      \
            goto fail;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* A primitive with its scratchpad handle (NULL when it needs none). */
struct prim {
    dnnl_primitive_t p;
    dnnl_memory_t scratch;
};

static inline int prim_make(struct cpu_ctx *x, struct prim *pr, const_dnnl_primitive_desc_t pd, char *err,
                            size_t errlen)
{
    DNNL_TRY(dnnl_primitive_create(&pr->p, pd));
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (bytes > 0) {
        DNNL_TRY(dnnl_memory_create(&pr->scratch, smd, cpu_engine, DNNL_MEMORY_NONE));
        if (bytes > x->scratch_need)
            x->scratch_need = bytes;
    }
    return 0;
fail:
    return -1;
}

static inline void prim_free(struct prim *pr)
{
    if (pr->p)
        dnnl_primitive_destroy(pr->p);
    if (pr->scratch)
        dnnl_memory_destroy(pr->scratch);
    pr->p = NULL;
    pr->scratch = NULL;
}

static inline int prim_run(struct cpu_ctx *x, struct prim *pr, int nargs, const dnnl_exec_arg_t *args)
{
    dnnl_exec_arg_t a[16];
    memcpy(a, args, sizeof(*args) * (size_t)nargs);
    if (pr->scratch) {
        dnnl_memory_set_data_handle(pr->scratch, x->scratch);
        a[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, pr->scratch};
    }
    return dnnl_primitive_execute(pr->p, x->stream, nargs, a) == dnnl_success ? 0 : -1;
}

/* Points memory object m at this call's buffer: primitives and their memory
 * objects are made once, the data moves every step. */
static inline void set(dnnl_memory_t m, const void *p)
{
    dnnl_memory_set_data_handle(m, (void *)p);
}

static inline dnnl_format_tag_t act_tag(int blk)
{
    return blk == 16 ? dnnl_nChw16c : blk == 8 ? dnnl_nChw8c : dnnl_nchw;
}

static inline dnnl_status_t act_md_dt(dnnl_memory_desc_t *md, int B, int C, int H, int W, int blk, dnnl_data_type_t dt)
{
    dnnl_dims_t dims = {B, C, H, W};
    return dnnl_memory_desc_init_by_tag(md, 4, dims, dt, act_tag(blk));
}

static inline dnnl_status_t act_md(dnnl_memory_desc_t *md, int B, int C, int H, int W, int blk)
{
    return act_md_dt(md, B, C, H, W, blk, dnnl_f32);
}

static inline void impl_name(const_dnnl_primitive_desc_t pd, char *out, size_t len)
{
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
        s = "?";
    snprintf(out, len, "%s", s);
}

/* A reorder between two layouts of the same tensor. */
static inline int reorder_make(struct cpu_ctx *x, struct prim *pr, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, char *err, size_t errlen)
{
    dnnl_primitive_desc_t pd = NULL;
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, from, cpu_engine, to, cpu_engine, cpu_attr));
    int rc = prim_make(x, pr, pd, err, errlen);
    dnnl_primitive_desc_destroy(pd);
    return rc;
fail:
    return -1;
}

static inline int reorder_run(struct cpu_ctx *x, struct prim *pr, dnnl_memory_t from, const void *src, dnnl_memory_t to,
                              void *dst)
{
    set(from, src);
    set(to, dst);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return prim_run(x, pr, 2, args);
}

/* bf16: a tensor's fp32 form (from) and its bfloat16 one (md), the
 * reorder between them, and the memory objects it runs on. */
struct to_bf16 {
    struct prim r;
    dnnl_memory_t f32, bf;
};

static inline int to_bf16_make(struct cpu_ctx *x, struct to_bf16 *t, const dnnl_memory_desc_t *f32_md,
                               const dnnl_memory_desc_t *bf_md, size_t *need, char *err, size_t errlen)
{
    if (reorder_make(x, &t->r, f32_md, bf_md, err, errlen))
        return -1;
    DNNL_TRY(dnnl_memory_create(&t->f32, f32_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&t->bf, bf_md, cpu_engine, DNNL_MEMORY_NONE));
    size_t n = dnnl_memory_desc_get_size(bf_md);
    if (n > *need)
        *need = n;
    return 0;
fail:
    return -1;
}

/* Rounds src into the context's buffer dst; returns dst, or NULL. */
static inline void *to_bf16_run(struct cpu_ctx *x, struct to_bf16 *t, const float *src, void *dst)
{
    return reorder_run(x, &t->r, t->f32, src, t->bf, dst) == 0 ? dst : NULL;
}

static inline void to_bf16_free(struct to_bf16 *t)
{
    prim_free(&t->r);
    if (t->f32)
        dnnl_memory_destroy(t->f32);
    if (t->bf)
        dnnl_memory_destroy(t->bf);
}

/* An aligned buffer for a memory descriptor's bytes. */
static inline void *md_alloc(const dnnl_memory_desc_t *md)
{
    size_t n = (dnnl_memory_desc_get_size(md) + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, n ? n : 64);
    if (p)
        memset(p, 0, n ? n : 64);
    return p;
}

/* A layer with weights around its three primitives (kernels_cpu_wprims.c):
 * the primitives, the weights' reorders (.p NULL where the layouts agree)
 * and the memory objects they run on. */
struct wprims {
    char impl[96]; /* the three implementations' names, "fwd|bwd-data|bwd-weights" */
    struct prim fwd, bwd_data, bwd_weights;
    struct prim w_to_fwd, w_to_bd, dw_to_user;
    int bd_uses_fwd; /* backward-data takes the forward's weight copy */
    /* backward passes in another layout than the layer's (wprims_mds.
     * src_bw, ddst_bw, dsrc_bd): the input (into x->atmp) and the output
     * gradient (x->atmp_dd) reordered for backward-weights, the input
     * gradient made in x->atmp by backward-data and reordered out */
    struct prim src_to_bw, ddst_to_bw, dsrc_from_bd;
    dnnl_memory_t src_bw, ddst_bw, dsrc_bd;
    dnnl_memory_t src, dst, bias, dsrc, ddst, dbias;
    dnnl_memory_t w_user, w_fwd, w_bd, dw_user, dw_bw;
    void *w_fwd_buf; /* the forward's weights, kept for backward-data */
    float *db_dummy; /* [nbias]: the bias gradient oneDNN computes when the caller wants none */
    /* bf16 (set before wprims_make): src and ddst are bfloat16 memory
     * objects, the fp32 input and output gradient rounded into them */
    int bf16;
    struct to_bf16 src_bf, ddst_bf;
};

/* The descriptors the primitives were made from: the fp32 input and
 * output, what the products read (srcb, ddstb: bf16 forms, or the same),
 * the bias, and the weights as the caller keeps them. */
struct wprims_mds {
    const dnnl_memory_desc_t *src, *srcb, *dst, *ddstb, *bias, *wu;
    size_t nbias;
    /* NULL, or the layout in which backward-weights reads the input
     * (src_bw) and the output gradient (ddst_bw), and backward-data writes
     * the input gradient (dsrc_bd), where it differs from the layer's: the
     * primitives were made with these */
    const dnnl_memory_desc_t *src_bw, *ddst_bw, *dsrc_bd;
};

/* What one backward call reads and writes: dw and din may be NULL (not
 * wanted); db NULL with has_bias still runs (into db_dummy). */
struct wprims_bwd {
    float *din, *dw, *db;
    const float *dout, *in, *w;
    int has_bias;
    int redo_fwd_reorder; /* the weights may have changed since forward */
};

/* Returns 0, or -1 with err set where oneDNN said why (empty: out of memory). */
int wprims_make(struct cpu_ctx *x, struct wprims *p, const struct wprims_mds *md, const_dnnl_primitive_desc_t fpd,
                const_dnnl_primitive_desc_t bdpd, const_dnnl_primitive_desc_t bwpd, char *err, size_t errlen);
void wprims_free(struct wprims *p);
/* b NULL: no bias. Waits for the stream. */
int wprims_forward(struct cpu_ctx *x, struct wprims *p, float *out, const float *in, const float *w, const float *b);
int wprims_backward(struct cpu_ctx *x, struct wprims *p, const struct wprims_bwd *a);

#endif
