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
    struct wprims p;
    /* A blocked input whose channels do not fill the last block (LeNet's 6)
     * is presented to oneDNN as cpad channels, the padding being real zeros:
     * its KxK kernels need whole blocks. The weights get zero input channels
     * (w_pad, OC x cpad x KH x KW), and the weight gradient is cropped back
     * (from dw_pad). */
    int cpad;
    float *w_pad, *dw_pad;
};

/* Whether oneDNN made pd with its reference loops. */
static int impl_is_ref(const_dnnl_primitive_desc_t pd)
{
    char name[32];
    impl_name(pd, name, sizeof(name));
    return !strncmp(name, "ref", 3);
}

/* Backward-data (weights 0: the input gradient in src's layout) or
 * backward-weights (1) made again in the layouts given: its descriptor
 * where oneDNN has more than its reference loops for them, else NULL. */
static dnnl_primitive_desc_t conv_bwd_in(int weights, const struct conv_dims *d, const dnnl_memory_desc_t *src,
                                         const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *b,
                                         const dnnl_memory_desc_t *ddst, const_dnnl_primitive_desc_t fpd)
{
    dnnl_dims_t strides = {d->stride, d->stride}, pad = {d->pad, d->pad};
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = weights ? dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, src, w, b,
                                                                             ddst, strides, pad, pad)
                               : dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, src, w, ddst,
                                                                          strides, pad, pad);
    if (st != dnnl_success || dnnl_primitive_desc_create(&pd, &cd, cpu_attr, cpu_engine, fpd) != dnnl_success)
        return NULL;
    if (impl_is_ref(pd)) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

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
    /* bf16: the products read bf16 inputs, output gradients and weights;
     * the weight gradient is fp32 */
    c->p.bf16 = x->bf16 && !c->own_ctx;
    srcb_md = src_md, ddstb_md = dst_md;
    const dnnl_memory_desc_t *wpmd = wmd;
    if (c->p.bf16) {
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
    struct wprims_mds mds = {&src_md, &srcb_md, &dst_md, &ddstb_md, &bias_md, &wu_md, (size_t)d->OC, NULL, NULL, NULL};
    /* Backward passes in other layouts, where the layer's own have only
     * oneDNN's reference loops (5-20x slower) and the others a kernel; the
     * pass's tensors are reordered there and back at each call:
     * - a plain input into a blocked output (a first layer, on AVX2):
     *   backward-data and backward-weights with the input blocked, as
     *   PyTorch's oneDNN path runs them;
     * - blocked on both sides where AVX2 has no blocked backward-weights
     *   (VGG's 512 channels at 2x2): that pass on plain tensors, oneDNN's
     *   GEMM-based kernel, the rest blocked (as PyTorch's path again). */
    dnnl_memory_desc_t alt_src, alt_dst;
    dnnl_primitive_desc_t pd2;
    if (!c->p.bf16 && d->groups == 1 && c->dst_blk > 1 && c->src_blk == 1 &&
        act_md(&alt_src, d->B, d->C, d->H, d->W, c->dst_blk) == dnnl_success) {
        if (impl_is_ref(bdpd) && (pd2 = conv_bwd_in(0, d, &alt_src, wpmd, NULL, &ddstb_md, fpd))) {
            dnnl_primitive_desc_destroy(bdpd);
            bdpd = pd2;
            mds.dsrc_bd = &alt_src;
        }
        if (impl_is_ref(bwpd) && (pd2 = conv_bwd_in(1, d, &alt_src, wmd, bmd, &ddstb_md, fpd))) {
            dnnl_primitive_desc_destroy(bwpd);
            bwpd = pd2;
            mds.src_bw = &alt_src;
        }
    } else if (!c->p.bf16 && d->groups == 1 && c->dst_blk > 1 && c->src_blk > 1 && c->cpad == c->d.C &&
               impl_is_ref(bwpd) && act_md(&alt_src, d->B, d->C, d->H, d->W, 1) == dnnl_success &&
               act_md(&alt_dst, d->B, d->OC, d->OH, d->OW, 1) == dnnl_success &&
               (pd2 = conv_bwd_in(1, d, &alt_src, wmd, bmd, &alt_dst, fpd))) {
        dnnl_primitive_desc_destroy(bwpd);
        bwpd = pd2;
        mds.src_bw = &alt_src;
        mds.ddst_bw = &alt_dst;
    }
    int rc = wprims_make(x, &c->p, &mds, fpd, bdpd, bwpd, err, errlen);
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "out of memory for convolution weights");
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return rc;
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    return -1;
}

struct cpu_conv *cpu_conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
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

const char *cpu_conv_impl(const struct cpu_conv *c)
{
    return c->p.impl;
}

int cpu_conv_uses_ref(const struct cpu_conv *c, int with_bwd_data)
{
    const char *p = c->p.impl;
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
    wprims_free(&c->p);
    free(c->w_pad);
    free(c->dw_pad);
    if (c->own_ctx)
        cpu_ctx_destroy(c->x);
    free(c->scratch);
    free(c);
}

int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b)
{
    if (c->w_pad) {
        /* the zero input channels stay zero from allocation */
        const struct conv_dims *d = &c->d;
        size_t k = (size_t)d->KH * d->KW;
        for (int o = 0; o < d->OC; o++)
            memcpy(c->w_pad + (size_t)o * c->cpad * k, w + (size_t)o * d->C * k, sizeof(float) * d->C * k);
        w = c->w_pad;
    }
    return wprims_forward(c->x, &c->p, out, in, w, c->has_bias ? b : NULL);
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
    float *dw_user = dw;
    if (c->w_pad) {
        w = c->w_pad; /* padded by this step's forward */
        dw = dw ? c->dw_pad : NULL;
    }
    /* the plain API may pass new weights to backward without a forward */
    struct wprims_bwd a = {.din = din ? dst_din : NULL,
                           .dw = dw,
                           .db = db,
                           .dout = dout,
                           .in = in,
                           .w = w,
                           .has_bias = c->has_bias,
                           .redo_fwd_reorder = c->own_ctx};
    if (wprims_backward(c->x, &c->p, &a) != 0)
        return -1;
    if (dw && c->w_pad) {
        size_t k = (size_t)d->KH * d->KW;
        for (int o = 0; o < d->OC; o++)
            memcpy(dw_user + (size_t)o * d->C * k, c->dw_pad + (size_t)o * c->cpad * k, sizeof(float) * d->C * k);
    }
    if (din && din_acc)
        cpu_copy_acc(din, 1, c->scratch, (int64_t)in_n);
    return 0;
}
