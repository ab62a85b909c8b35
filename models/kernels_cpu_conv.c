/* kernels_cpu_conv.c - convolution on oneDNN: forward, backward-data and
 * backward-weights primitives made once per layer shape, between plain or
 * channel-blocked activations (kernels_cpu.h), with the weights kept OIHW
 * in the flat parameter buffer and reordered into the layouts the
 * primitives prefer. In a bf16 context (cpu_ctx_bf16) the primitives read
 * bfloat16 inputs, output gradients and weights, rounded from the fp32
 * tensors at each call into the context's buffers, and write fp32. Built
 * with oneDNN only; kernels_cpu_fallback.c has the reference convolution.
 */
#include "kernels_cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_conv {
    struct conv_dims d;
    int has_bias, src_blk, dst_blk;
    struct cpu_ctx *x;
    int own_ctx;    /* the plain API: a context of its own, weights reordered at every use */
    float *scratch; /* the plain API: input gradient to accumulate, made on first need */
    char impl[96];
    struct prim fwd, bwd_data, bwd_weights;
    struct prim w_to_fwd, w_to_bd, dw_to_user; /* reorders; .p NULL when the layouts agree */
    int bd_uses_fwd;                           /* backward-data takes the forward's weight copy */
    dnnl_memory_t src, dst, bias, dsrc, ddst, dbias;
    dnnl_memory_t w_user, w_fwd, w_bd, dw_user, dw_bw;
    void *w_fwd_buf; /* the forward's weights, kept for backward-data */
    float *db_dummy; /* [OC]: the bias gradient oneDNN computes when the caller wants none */
    /* A blocked input whose channels do not fill the last block (LeNet's 6)
     * is presented to oneDNN as cpad channels, the padding being real zeros:
     * its KxK kernels need whole blocks. The weights get zero input channels
     * (w_pad, OC x cpad x KH x KW), and the weight gradient is cropped back
     * (from dw_pad). */
    int cpad;
    float *w_pad, *dw_pad;
    /* bf16 (the context's): src and ddst are bfloat16 memory objects, the
     * fp32 input and output gradient rounded into them at each call */
    int bf16;
    struct to_bf16 src_bf, ddst_bf;
};

static int conv_build(struct cpu_conv *c, char *err, size_t errlen)
{
    struct conv_dims dd = c->d;
    const struct conv_dims *d = &dd;
    c->cpad = c->src_blk > 1 && d->groups == 1 && d->KH * d->KW > 1 ? act_cpad(d->C, c->src_blk) : d->C;
    dd.C = c->cpad;
    if (c->cpad != c->d.C) {
        size_t n = (size_t)d->OC * c->cpad * d->KH * d->KW;
        c->w_pad = calloc(n, sizeof(float));
        c->dw_pad = calloc(n, sizeof(float));
        if (!c->w_pad || !c->dw_pad) {
            snprintf(err, errlen, "out of memory for convolution weights");
            return -1;
        }
    }
    dnnl_memory_desc_t src_md, dst_md, bias_md, wu_md, wany_md, srcb_md, ddstb_md, wbany_md;
    dnnl_dims_t bias_dims = {d->OC};
    dnnl_dims_t strides = {d->stride, d->stride};
    dnnl_dims_t pad = {d->pad, d->pad};
    dnnl_convolution_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;
    struct cpu_ctx *x = c->x;

    DNNL_TRY(act_md(&src_md, d->B, d->C, d->H, d->W, c->src_blk));
    DNNL_TRY(act_md(&dst_md, d->B, d->OC, d->OH, d->OW, c->dst_blk));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_x));
    if (d->groups > 1) {
        dnnl_dims_t wd = {d->groups, d->OC / d->groups, d->C / d->groups, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 5, wd, dnnl_f32, dnnl_goihw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wany_md, 5, wd, dnnl_f32, dnnl_format_tag_any));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wbany_md, 5, wd, dnnl_bf16, dnnl_format_tag_any));
    } else {
        dnnl_dims_t wd = {d->OC, d->C, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 4, wd, dnnl_f32, dnnl_oihw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wany_md, 4, wd, dnnl_f32, dnnl_format_tag_any));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wbany_md, 4, wd, dnnl_bf16, dnnl_format_tag_any));
    }
    /* the plain API keeps OIHW everywhere: its caller may pass new weights
     * to backward without a forward */
    const dnnl_memory_desc_t *wmd = c->own_ctx ? &wu_md : &wany_md;
    const dnnl_memory_desc_t *bmd = c->has_bias ? &bias_md : NULL;
    /* what the products read: bf16 inputs, output gradients and weights,
     * or the fp32 tensors themselves; the weight gradient is fp32 */
    c->bf16 = x->bf16 && !c->own_ctx;
    srcb_md = src_md, ddstb_md = dst_md;
    const dnnl_memory_desc_t *wpmd = wmd;
    if (c->bf16) {
        DNNL_TRY(act_md_dt(&srcb_md, d->B, d->C, d->H, d->W, c->src_blk, dnnl_bf16));
        DNNL_TRY(act_md_dt(&ddstb_md, d->B, d->OC, d->OH, d->OW, c->dst_blk, dnnl_bf16));
        wpmd = &wbany_md;
    }
    DNNL_TRY(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &srcb_md, wpmd,
                                                bmd, &dst_md, strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, cpu_attr, cpu_engine, NULL));
    DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src_md, wpmd, &ddstb_md, strides,
                                                      pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bdpd, &bdd, cpu_attr, cpu_engine, fpd));
    DNNL_TRY(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &srcb_md, wmd, bmd, &ddstb_md,
                                                         strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bwd, cpu_attr, cpu_engine, fpd));
    if (c->bf16 && (to_bf16_make(x, &c->src_bf, &src_md, &srcb_md, &x->bf_src_need, err, errlen) ||
                    to_bf16_make(x, &c->ddst_bf, &dst_md, &ddstb_md, &x->bf_ddst_need, err, errlen)))
        goto fail;
    if (prim_make(x, &c->fwd, fpd, err, errlen) || prim_make(x, &c->bwd_data, bdpd, err, errlen) ||
        prim_make(x, &c->bwd_weights, bwpd, err, errlen))
        goto fail;
    char a[32], b[32], w[32];
    impl_name(fpd, a, sizeof(a));
    impl_name(bdpd, b, sizeof(b));
    impl_name(bwpd, w, sizeof(w));
    snprintf(c->impl, sizeof(c->impl), "%s|%s|%s", a, b, w);

    const dnnl_memory_desc_t *wf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ww = dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
    DNNL_TRY(dnnl_memory_create(&c->w_user, &wu_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dw_user, &wu_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->w_fwd, wf, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->w_bd, wb, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dw_bw, ww, cpu_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(wf, &wu_md)) {
        if (reorder_make(x, &c->w_to_fwd, &wu_md, wf, err, errlen) || !(c->w_fwd_buf = md_alloc(wf)))
            goto fail_msg;
    }
    c->bd_uses_fwd = dnnl_memory_desc_equal(wb, wf);
    if (!c->bd_uses_fwd && !dnnl_memory_desc_equal(wb, &wu_md)) {
        if (reorder_make(x, &c->w_to_bd, &wu_md, wb, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(wb) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(wb);
    }
    if (!dnnl_memory_desc_equal(ww, &wu_md)) {
        if (reorder_make(x, &c->dw_to_user, ww, &wu_md, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(ww) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(ww);
    }
    if (c->has_bias && !(c->db_dummy = calloc((size_t)d->OC, sizeof(float))))
        goto fail_msg;
    DNNL_TRY(dnnl_memory_create(&c->src, &srcb_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dsrc, &src_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->bias, &bias_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dbias, &bias_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dst, &dst_md, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->ddst, &ddstb_md, cpu_engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return 0;
fail_msg:
    if (!err[0])
        snprintf(err, errlen, "out of memory for convolution weights");
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    return -1;
}

static struct cpu_conv *conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
                                 int dst_blk, char *err, size_t errlen)
{
    struct cpu_conv *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory creating a convolution");
        if (own_ctx)
            cpu_ctx_destroy(x);
        return NULL;
    }
    c->d = *d;
    c->has_bias = has_bias;
    c->src_blk = src_blk;
    c->dst_blk = dst_blk;
    c->x = x;
    c->own_ctx = own_ctx;
    err[0] = 0;
    if (conv_build(c, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
    return c;
}

struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen)
{
    struct cpu_ctx *x = cpu_ctx_create(err, errlen);
    if (!x)
        return NULL;
    struct cpu_conv *c = conv_new(x, 1, d, has_bias, 1, 1, err, errlen);
    if (c && cpu_ctx_finish(x, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
    return c;
}

struct cpu_conv *cpu_conv_create_blk(struct cpu_ctx *x, const struct conv_dims *d, int has_bias, int src_blk,
                                     int dst_blk, char *err, size_t errlen)
{
    return conv_new(x, 0, d, has_bias, src_blk, dst_blk, err, errlen);
}

const char *cpu_conv_impl(const struct cpu_conv *c)
{
    return c->impl;
}

int cpu_conv_uses_ref(const struct cpu_conv *c, int with_bwd_data)
{
    const char *p = c->impl;
    for (int part = 0; part < 3; part++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if ((part != 1 || with_bwd_data) && len >= 3 && !strncmp(p, "ref", 3))
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
    return 0;
}

void cpu_conv_destroy(struct cpu_conv *c)
{
    if (!c)
        return;
    struct prim *prims[] = {&c->fwd, &c->bwd_data, &c->bwd_weights, &c->w_to_fwd, &c->w_to_bd, &c->dw_to_user};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        prim_free(prims[i]);
    dnnl_memory_t mems[] = {c->src,    c->dst,   c->bias, c->dsrc,    c->ddst, c->dbias,
                            c->w_user, c->w_fwd, c->w_bd, c->dw_user, c->dw_bw};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    to_bf16_free(&c->src_bf);
    to_bf16_free(&c->ddst_bf);
    free(c->w_fwd_buf);
    free(c->db_dummy);
    free(c->w_pad);
    free(c->dw_pad);
    if (c->own_ctx)
        cpu_ctx_destroy(c->x);
    free(c->scratch);
    free(c);
}

int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b)
{
    struct cpu_ctx *x = c->x;
    if (c->w_pad) {
        /* the zero input channels stay zero from allocation */
        const struct conv_dims *d = &c->d;
        size_t k = (size_t)d->KH * d->KW;
        for (int o = 0; o < d->OC; o++)
            memcpy(c->w_pad + (size_t)o * c->cpad * k, w + (size_t)o * d->C * k, sizeof(float) * d->C * k);
        w = c->w_pad;
    }
    const void *wf = w;
    if (c->w_to_fwd.p) {
        if (reorder_run(x, &c->w_to_fwd, c->w_user, w, c->w_fwd, c->w_fwd_buf) != 0)
            return -1;
        wf = c->w_fwd_buf;
    }
    const void *src = c->bf16 ? to_bf16_run(x, &c->src_bf, in, x->bf_src) : in;
    if (!src)
        return -1;
    set(c->src, src);
    set(c->w_fwd, wf);
    set(c->dst, out);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src}, {DNNL_ARG_WEIGHTS, c->w_fwd}, {DNNL_ARG_DST, c->dst}};
    int nargs = 3;
    if (c->has_bias) {
        set(c->bias, b);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->bias};
    }
    if (prim_run(x, &c->fwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
}

int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w)
{
    const struct conv_dims *d = &c->d;
    size_t in_n = (size_t)d->B * (size_t)act_stride(d->C, d->H, d->W, c->src_blk);
    float *dst_din = din;
    if (din && din_acc) {
        if (!c->scratch && !(c->scratch = malloc(sizeof(float) * in_n)))
            return -1;
        dst_din = c->scratch;
    }
    struct cpu_ctx *x = c->x;
    float *dw_user = dw;
    if (c->w_pad) {
        w = c->w_pad; /* padded by this step's forward */
        dw = dw ? c->dw_pad : NULL;
    }
    const void *ddst = c->bf16 ? to_bf16_run(x, &c->ddst_bf, dout, x->bf_ddst) : dout;
    if (!ddst)
        return -1;
    if (dw) {
        void *dwp = c->dw_to_user.p ? x->wtmp : dw;
        const void *src = c->bf16 ? to_bf16_run(x, &c->src_bf, in, x->bf_src) : in;
        if (!src)
            return -1;
        set(c->src, src);
        set(c->ddst, ddst);
        set(c->dw_bw, dwp);
        dnnl_exec_arg_t args[4] = {
            {DNNL_ARG_SRC, c->src}, {DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_DIFF_WEIGHTS, c->dw_bw}};
        int nargs = 3;
        if (c->has_bias) {
            /* oneDNN always computes it */
            set(c->dbias, db ? db : c->db_dummy);
            args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, c->dbias};
        }
        if (prim_run(x, &c->bwd_weights, nargs, args) != 0)
            return -1;
        if (c->dw_to_user.p && reorder_run(x, &c->dw_to_user, c->dw_bw, dwp, c->dw_user, dw) != 0)
            return -1;
        if (c->w_pad) {
            size_t k = (size_t)d->KH * d->KW;
            for (int o = 0; o < d->OC; o++)
                memcpy(dw_user + (size_t)o * d->C * k, c->dw_pad + (size_t)o * c->cpad * k, sizeof(float) * d->C * k);
        }
    }
    if (din) {
        const void *wb = w;
        if (c->bd_uses_fwd) {
            if (c->w_to_fwd.p) {
                /* forward left this step's reordered copy; the plain API redoes it */
                if (c->own_ctx && reorder_run(x, &c->w_to_fwd, c->w_user, w, c->w_fwd, c->w_fwd_buf) != 0)
                    return -1;
                wb = c->w_fwd_buf;
            }
        } else if (c->w_to_bd.p) {
            if (reorder_run(x, &c->w_to_bd, c->w_user, w, c->w_bd, x->wtmp) != 0)
                return -1;
            wb = x->wtmp;
        }
        set(c->ddst, ddst);
        set(c->w_bd, wb);
        set(c->dsrc, dst_din);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_WEIGHTS, c->w_bd}, {DNNL_ARG_DIFF_SRC, c->dsrc}};
        if (prim_run(x, &c->bwd_data, 3, args) != 0)
            return -1;
    }
    if (dnnl_stream_wait(x->stream) != dnnl_success)
        return -1;
    if (din && din_acc)
        cpu_copy_acc(din, 1, c->scratch, (int64_t)in_n);
    return 0;
}
