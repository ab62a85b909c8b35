/* kernels_cpu_bn.c - batch normalisation on oneDNN: training and inference
 * forward primitives and the training backward, in any activation layout
 * (kernels_cpu.h), made once per layer shape. Built with oneDNN only;
 * kernels_cpu_fallback.c has the reference batch norm.
 */
#include "kernels_cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_bn {
    int B, C, H, W, blk;
    float eps;
    struct cpu_ctx *x;
    char impl[64];
    struct prim fwd_train, fwd_eval, bwd; /* bwd always makes dgamma/dbeta: a frozen layer's go to dummy */
    dnnl_memory_t src, dst, scale, shift, mean, var, dsrc, ddst, dscale, dshift;
    float *dummy; /* [3C]: diff scale/shift that a frozen layer discards, and the
                   * shift backward insists on being given but does not need */
};

struct cpu_bn *cpu_bn_create(struct cpu_ctx *x, int B, int C, int H, int W, int blk, float eps, char *err,
                             size_t errlen)
{
    struct cpu_bn *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory creating a batch norm");
        return NULL;
    }
    *b = (struct cpu_bn){.B = B, .C = C, .H = H, .W = W, .blk = blk, .eps = eps, .x = x};
    dnnl_memory_desc_t data_md, c_md;
    dnnl_dims_t cd = {C};
    dnnl_batch_normalization_desc_t ft, fe, bw;
    dnnl_primitive_desc_t ftpd = NULL, fepd = NULL, bwpd = NULL;
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    DNNL_TRY(act_md(&data_md, B, C, H, W, blk));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&c_md, 1, cd, dnnl_f32, dnnl_x));
    DNNL_TRY(dnnl_batch_normalization_forward_desc_init(&ft, dnnl_forward_training, &data_md, eps, flags));
    DNNL_TRY(dnnl_primitive_desc_create(&ftpd, &ft, cpu_attr, cpu_engine, NULL));
    DNNL_TRY(dnnl_batch_normalization_forward_desc_init(&fe, dnnl_forward_inference, &data_md, eps,
                                                        flags | dnnl_use_global_stats));
    DNNL_TRY(dnnl_primitive_desc_create(&fepd, &fe, cpu_attr, cpu_engine, NULL));
    DNNL_TRY(dnnl_batch_normalization_backward_desc_init(&bw, dnnl_backward, &data_md, &data_md, eps, flags));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bw, cpu_attr, cpu_engine, ftpd));
    if (prim_make(x, &b->fwd_train, ftpd, err, errlen) || prim_make(x, &b->fwd_eval, fepd, err, errlen) ||
        prim_make(x, &b->bwd, bwpd, err, errlen))
        goto fail;
    impl_name(ftpd, b->impl, sizeof(b->impl));
    dnnl_memory_t *dm[] = {&b->src, &b->dst, &b->dsrc, &b->ddst};
    for (size_t i = 0; i < 4; i++)
        DNNL_TRY(dnnl_memory_create(dm[i], &data_md, cpu_engine, DNNL_MEMORY_NONE));
    dnnl_memory_t *cm[] = {&b->scale, &b->shift, &b->mean, &b->var, &b->dscale, &b->dshift};
    for (size_t i = 0; i < 6; i++)
        DNNL_TRY(dnnl_memory_create(cm[i], &c_md, cpu_engine, DNNL_MEMORY_NONE));
    if (!(b->dummy = calloc(3 * (size_t)C, sizeof(float)))) {
        snprintf(err, errlen, "out of memory creating a batch norm");
        goto fail;
    }
    dnnl_primitive_desc_destroy(ftpd);
    dnnl_primitive_desc_destroy(fepd);
    dnnl_primitive_desc_destroy(bwpd);
    return b;
fail:
    if (ftpd)
        dnnl_primitive_desc_destroy(ftpd);
    if (fepd)
        dnnl_primitive_desc_destroy(fepd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    cpu_bn_destroy(b);
    return NULL;
}

void cpu_bn_destroy(struct cpu_bn *b)
{
    if (!b)
        return;
    prim_free(&b->fwd_train);
    prim_free(&b->fwd_eval);
    prim_free(&b->bwd);
    dnnl_memory_t mems[] = {b->src, b->dst,  b->scale, b->shift,  b->mean,
                            b->var, b->dsrc, b->ddst,  b->dscale, b->dshift};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(b->dummy);
    free(b);
}

const char *cpu_bn_impl(const struct cpu_bn *b)
{
    return b->impl;
}

int cpu_bn_forward(struct cpu_bn *b, float *out, const float *in, const float *gamma, const float *beta, float *mean,
                   float *var, int train)
{
    set(b->src, in);
    set(b->dst, out);
    set(b->scale, gamma);
    set(b->shift, beta);
    set(b->mean, mean);
    set(b->var, var);
    dnnl_exec_arg_t args[6] = {{DNNL_ARG_SRC, b->src},     {DNNL_ARG_DST, b->dst},   {DNNL_ARG_SCALE, b->scale},
                               {DNNL_ARG_SHIFT, b->shift}, {DNNL_ARG_MEAN, b->mean}, {DNNL_ARG_VARIANCE, b->var}};
    if (prim_run(b->x, train ? &b->fwd_train : &b->fwd_eval, 6, args) != 0)
        return -1;
    return dnnl_stream_wait(b->x->stream) == dnnl_success ? 0 : -1;
}

int cpu_bn_backward(struct cpu_bn *b, float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                    const float *gamma, const float *mean, const float *var)
{
    set(b->src, in);
    set(b->ddst, dout);
    set(b->dsrc, din);
    set(b->scale, gamma);
    set(b->mean, mean);
    set(b->var, var);
    set(b->dscale, dgamma ? dgamma : b->dummy);
    set(b->dshift, dbeta ? dbeta : b->dummy + b->C);
    set(b->shift, b->dummy + 2 * b->C);
    dnnl_exec_arg_t args[9] = {
        {DNNL_ARG_SRC, b->src},       {DNNL_ARG_DIFF_DST, b->ddst},     {DNNL_ARG_SCALE, b->scale},
        {DNNL_ARG_SHIFT, b->shift},   {DNNL_ARG_MEAN, b->mean},         {DNNL_ARG_VARIANCE, b->var},
        {DNNL_ARG_DIFF_SRC, b->dsrc}, {DNNL_ARG_DIFF_SCALE, b->dscale}, {DNNL_ARG_DIFF_SHIFT, b->dshift}};
    if (prim_run(b->x, &b->bwd, 9, args) != 0)
        return -1;
    return dnnl_stream_wait(b->x->stream) == dnnl_success ? 0 : -1;
}
