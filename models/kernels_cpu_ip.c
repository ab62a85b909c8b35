/* kernels_cpu_ip.c - linear layers as oneDNN's inner product, on the flat
 * [OUT, IN] weights as they are. Its brgemm kernels want the weights
 * blocked and run the MLP's products 15-30% faster, but reordering 2.7 MB
 * of weights there and the gradients back every step costs more than that
 * gains (0.42 ms of a 1.6 ms step); on plain weights it picks the same JIT
 * GEMM as dnnl_sgemm, with the bias added in the forward pass and its
 * gradient made in the weights' pass. In a bf16 context the products
 * read bfloat16 (weights in the layout the primitive likes, since they are
 * converted anyway) and write fp32, as the convolutions do. Built with
 * oneDNN only; without it kernels_cpu_fallback.c runs
 * cpu_linear_forward/backward.
 */
#include "kernels_cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_ip {
    int B, IN, OUT;
    struct cpu_ctx *x;
    char impl[96];
    struct prim fwd, bwd_data, bwd_weights, w_to_fwd, w_to_bd, dw_to_user;
    int bd_uses_fwd;
    dnnl_memory_t src, dst, bias, dsrc, ddst, dbias, w_user, w_fwd, w_bd, dw_user, dw_bw;
    void *w_fwd_buf;
    float *db_dummy; /* [OUT] */
    /* bf16 (the context's): src and ddst are bfloat16 memory objects, the
     * fp32 input and output gradient rounded into them at each call */
    int bf16;
    struct to_bf16 src_bf, ddst_bf;
};

struct cpu_ip *cpu_ip_create(struct cpu_ctx *x, int B, int IN, int OUT, char *err, size_t errlen)
{
    struct cpu_ip *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory creating a linear layer");
        return NULL;
    }
    *l = (struct cpu_ip){.B = B, .IN = IN, .OUT = OUT, .x = x};
    l->bf16 = x->bf16;
    dnnl_memory_desc_t src_md, dst_md, bias_md, wu_md, srcb_md, ddstb_md, wb_md;
    dnnl_dims_t sd = {B, IN}, dd = {B, OUT}, bd = {OUT}, wd = {OUT, IN};
    dnnl_inner_product_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;
    err[0] = 0;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_f32, dnnl_nc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_nc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bd, dnnl_f32, dnnl_x));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 2, wd, dnnl_f32, dnnl_oi));
    /* what the products read: bf16 inputs, output gradients and weights
     * (in the layout the primitive likes: they are converted anyway), or
     * the fp32 tensors themselves */
    srcb_md = src_md, ddstb_md = dst_md, wb_md = wu_md;
    if (l->bf16) {
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&srcb_md, 2, sd, dnnl_bf16, dnnl_nc));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&ddstb_md, 2, dd, dnnl_bf16, dnnl_nc));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wb_md, 2, wd, dnnl_bf16, dnnl_format_tag_any));
    }
    DNNL_TRY(dnnl_inner_product_forward_desc_init(&fd, dnnl_forward_training, &srcb_md, &wb_md, &bias_md, &dst_md));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, cpu_attr, cpu_engine, NULL));
    DNNL_TRY(dnnl_inner_product_backward_data_desc_init(&bdd, &src_md, &wb_md, &ddstb_md));
    DNNL_TRY(dnnl_primitive_desc_create(&bdpd, &bdd, cpu_attr, cpu_engine, fpd));
    DNNL_TRY(dnnl_inner_product_backward_weights_desc_init(&bwd, &srcb_md, &wu_md, &bias_md, &ddstb_md));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bwd, cpu_attr, cpu_engine, fpd));
    if (l->bf16 && (to_bf16_make(x, &l->src_bf, &src_md, &srcb_md, &x->bf_src_need, err, errlen) ||
                    to_bf16_make(x, &l->ddst_bf, &dst_md, &ddstb_md, &x->bf_ddst_need, err, errlen)))
        goto fail;
    if (prim_make(x, &l->fwd, fpd, err, errlen) || prim_make(x, &l->bwd_data, bdpd, err, errlen) ||
        prim_make(x, &l->bwd_weights, bwpd, err, errlen))
        goto fail;
    char a[32], b[32], w[32];
    impl_name(fpd, a, sizeof(a));
    impl_name(bdpd, b, sizeof(b));
    impl_name(bwpd, w, sizeof(w));
    snprintf(l->impl, sizeof(l->impl), "%s|%s|%s", a, b, w);
    const dnnl_memory_desc_t *wf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ww = dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
    dnnl_memory_t *um[] = {&l->w_user, &l->dw_user};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(um[i], &wu_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->w_fwd, wf, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->w_bd, wb, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->dw_bw, ww, cpu_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(wf, &wu_md) &&
        (reorder_make(x, &l->w_to_fwd, &wu_md, wf, err, errlen) || !(l->w_fwd_buf = md_alloc(wf))))
        goto fail;
    l->bd_uses_fwd = dnnl_memory_desc_equal(wb, wf);
    if (!l->bd_uses_fwd && !dnnl_memory_desc_equal(wb, &wu_md)) {
        if (reorder_make(x, &l->w_to_bd, &wu_md, wb, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(wb) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(wb);
    }
    if (!dnnl_memory_desc_equal(ww, &wu_md)) {
        if (reorder_make(x, &l->dw_to_user, ww, &wu_md, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(ww) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(ww);
    }
    if (!(l->db_dummy = calloc((size_t)OUT, sizeof(float))))
        goto fail;
    DNNL_TRY(dnnl_memory_create(&l->src, &srcb_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->dsrc, &src_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->dst, &dst_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->ddst, &ddstb_md, cpu_engine, DNNL_MEMORY_NONE));
    dnnl_memory_t *bm[] = {&l->bias, &l->dbias};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(bm[i], &bias_md, cpu_engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return l;
fail:
    if (!err[0])
        snprintf(err, errlen, "out of memory creating a linear layer");
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    cpu_ip_destroy(l);
    return NULL;
}

void cpu_ip_destroy(struct cpu_ip *l)
{
    if (!l)
        return;
    struct prim *prims[] = {&l->fwd, &l->bwd_data, &l->bwd_weights, &l->w_to_fwd, &l->w_to_bd, &l->dw_to_user};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        prim_free(prims[i]);
    dnnl_memory_t mems[] = {l->src,    l->dst,   l->bias, l->dsrc,    l->ddst, l->dbias,
                            l->w_user, l->w_fwd, l->w_bd, l->dw_user, l->dw_bw};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    to_bf16_free(&l->src_bf);
    to_bf16_free(&l->ddst_bf);
    free(l->w_fwd_buf);
    free(l->db_dummy);
    free(l);
}

const char *cpu_ip_impl(const struct cpu_ip *l)
{
    return l->impl;
}

int cpu_ip_forward(struct cpu_ip *l, float *out, const float *in, const float *w, const float *b)
{
    struct cpu_ctx *x = l->x;
    const void *wf = w;
    if (l->w_to_fwd.p) {
        if (reorder_run(x, &l->w_to_fwd, l->w_user, w, l->w_fwd, l->w_fwd_buf) != 0)
            return -1;
        wf = l->w_fwd_buf;
    }
    const void *src = l->bf16 ? to_bf16_run(x, &l->src_bf, in, x->bf_src) : in;
    if (!src)
        return -1;
    set(l->src, src);
    set(l->w_fwd, wf);
    set(l->bias, b);
    set(l->dst, out);
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, l->src}, {DNNL_ARG_WEIGHTS, l->w_fwd}, {DNNL_ARG_BIAS, l->bias}, {DNNL_ARG_DST, l->dst}};
    if (prim_run(x, &l->fwd, 4, args) != 0)
        return -1;
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
}

int cpu_ip_backward(struct cpu_ip *l, float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w)
{
    struct cpu_ctx *x = l->x;
    const void *ddst = l->bf16 ? to_bf16_run(x, &l->ddst_bf, dout, x->bf_ddst) : dout;
    if (!ddst)
        return -1;
    if (dw) {
        void *dwp = l->dw_to_user.p ? x->wtmp : dw;
        const void *src = l->bf16 ? to_bf16_run(x, &l->src_bf, in, x->bf_src) : in;
        if (!src)
            return -1;
        set(l->src, src);
        set(l->ddst, ddst);
        set(l->dw_bw, dwp);
        set(l->dbias, db ? db : l->db_dummy);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, l->src},
                                   {DNNL_ARG_DIFF_DST, l->ddst},
                                   {DNNL_ARG_DIFF_WEIGHTS, l->dw_bw},
                                   {DNNL_ARG_DIFF_BIAS, l->dbias}};
        if (prim_run(x, &l->bwd_weights, 4, args) != 0)
            return -1;
        if (l->dw_to_user.p && reorder_run(x, &l->dw_to_user, l->dw_bw, dwp, l->dw_user, dw) != 0)
            return -1;
    }
    if (din) {
        const void *wb = w;
        if (l->bd_uses_fwd) {
            if (l->w_to_fwd.p)
                wb = l->w_fwd_buf; /* this step's forward reordered them */
        } else if (l->w_to_bd.p) {
            if (reorder_run(x, &l->w_to_bd, l->w_user, w, l->w_bd, x->wtmp) != 0)
                return -1;
            wb = x->wtmp;
        }
        set(l->ddst, ddst);
        set(l->w_bd, wb);
        set(l->dsrc, din);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_DIFF_DST, l->ddst}, {DNNL_ARG_WEIGHTS, l->w_bd}, {DNNL_ARG_DIFF_SRC, l->dsrc}};
        if (prim_run(x, &l->bwd_data, 3, args) != 0)
            return -1;
    }
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
}
