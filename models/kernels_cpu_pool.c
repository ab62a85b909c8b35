/* kernels_cpu_pool.c - max and average pooling layers in layout blk, for
 * the builds with oneDNN: max-pooling of blocked maps runs our own loops
 * (kernels_cpu_pool_loops.c), which beat oneDNN's there; everything else
 * runs oneDNN's pooling primitives, made once per layer shape.
 * kernels_cpu_fallback.c has the layers without oneDNN.
 */
#include "kernels_cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_pool {
    struct pool_dims d;
    int alg, blk;
    struct cpu_ctx *x;
    char impl[64];
    uint8_t *am; /* our blocked max-pool: window position of each maximum, [B, stride of out] */
    struct prim fwd, bwd;
    dnnl_memory_t src, dst, dsrc, ddst, ws;
    void *ws_buf;
};

struct cpu_pool *cpu_pool_create(struct cpu_ctx *x, const struct pool_dims *d, int alg, int blk, char *err,
                                 size_t errlen)
{
    struct cpu_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory creating a pooling layer");
        return NULL;
    }
    p->d = *d;
    p->alg = alg;
    p->blk = blk;
    p->x = x;
    if (cpu_maxpool_blk_fits(d, alg, blk)) {
        snprintf(p->impl, sizeof(p->impl), "omp loops, nChw%dc", blk);
        if (!(p->am = malloc((size_t)d->B * (size_t)act_stride(d->C, d->OH, d->OW, blk)))) {
            snprintf(err, errlen, "out of memory for max-pool indices");
            cpu_pool_destroy(p);
            return NULL;
        }
        return p;
    }
    dnnl_memory_desc_t src_md, dst_md;
    dnnl_dims_t strides = {d->stride, d->stride}, kernel = {d->k, d->k};
    dnnl_dims_t pad_l = {d->pad, d->pad}, pad_r = {d->pad_r, d->pad_r};
    dnnl_alg_kind_t a = alg == CPU_POOL_MAX ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    DNNL_TRY(act_md(&src_md, d->B, d->C, d->H, d->W, blk));
    DNNL_TRY(act_md(&dst_md, d->B, d->C, d->OH, d->OW, blk));
    DNNL_TRY(
        dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, a, &src_md, &dst_md, strides, kernel, pad_l, pad_r));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, cpu_attr, cpu_engine, NULL));
    DNNL_TRY(dnnl_pooling_backward_desc_init(&bd, a, &src_md, &dst_md, strides, kernel, pad_l, pad_r));
    DNNL_TRY(dnnl_primitive_desc_create(&bpd, &bd, cpu_attr, cpu_engine, fpd));
    if (prim_make(x, &p->fwd, fpd, err, errlen) || prim_make(x, &p->bwd, bpd, err, errlen))
        goto fail;
    impl_name(fpd, p->impl, sizeof(p->impl));
    DNNL_TRY(dnnl_memory_create(&p->src, &src_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dsrc, &src_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dst, &dst_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->ddst, &dst_md, cpu_engine, DNNL_MEMORY_NONE));
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
    if (wmd && dnnl_memory_desc_get_size(wmd) > 0) {
        DNNL_TRY(dnnl_memory_create(&p->ws, wmd, cpu_engine, DNNL_MEMORY_NONE));
        if (!(p->ws_buf = md_alloc(wmd))) {
            snprintf(err, errlen, "out of memory for a pooling workspace");
            goto fail;
        }
    }
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    return p;
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    cpu_pool_destroy(p);
    return NULL;
}

void cpu_pool_destroy(struct cpu_pool *p)
{
    if (!p)
        return;
    prim_free(&p->fwd);
    prim_free(&p->bwd);
    dnnl_memory_t mems[] = {p->src, p->dst, p->dsrc, p->ddst, p->ws};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(p->ws_buf);
    free(p->am);
    free(p);
}

const char *cpu_pool_impl(const struct cpu_pool *p)
{
    return p->impl;
}

int cpu_pool_forward(struct cpu_pool *p, float *out, const float *in, int train)
{
    if (p->am) {
        cpu_maxpool_blk_forward(out, p->am, in, &p->d, p->blk);
        return 0;
    }
    set(p->src, in);
    set(p->dst, out);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}};
    int nargs = 2;
    if (p->ws) {
        set(p->ws, p->ws_buf);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, p->ws};
    }
    if (prim_run(p->x, &p->fwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(p->x->stream) == dnnl_success ? 0 : -1;
}

int cpu_pool_backward(struct cpu_pool *p, float *din, const float *dout)
{
    if (p->am) {
        cpu_maxpool_blk_backward(din, dout, p->am, &p->d, p->blk);
        return 0;
    }
    set(p->dsrc, din);
    set(p->ddst, dout);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, p->ddst}, {DNNL_ARG_DIFF_SRC, p->dsrc}};
    int nargs = 2;
    if (p->ws) {
        set(p->ws, p->ws_buf);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, p->ws};
    }
    if (prim_run(p->x, &p->bwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(p->x->stream) == dnnl_success ? 0 : -1;
}
