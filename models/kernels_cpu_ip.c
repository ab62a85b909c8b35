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
    struct wprims p;
};

struct cpu_ip *cpu_ip_create(struct cpu_ctx *x, int B, int IN, int OUT, char *err, size_t errlen)
{
    struct cpu_ip *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory creating a linear layer");
        return NULL;
    }
    *l = (struct cpu_ip){.B = B, .IN = IN, .OUT = OUT, .x = x};
    l->p.bf16 = x->bf16;
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
    if (l->p.bf16) {
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
    struct wprims_mds mds = {&src_md, &srcb_md, &dst_md, &ddstb_md, &bias_md, &wu_md, (size_t)OUT, NULL, NULL, NULL};
    if (wprims_make(x, &l->p, &mds, fpd, bdpd, bwpd, err, errlen) != 0)
        goto fail;
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
    wprims_free(&l->p);
    free(l);
}

const char *cpu_ip_impl(const struct cpu_ip *l)
{
    return l->p.impl;
}

int cpu_ip_forward(struct cpu_ip *l, float *out, const float *in, const float *w, const float *b)
{
    return wprims_forward(l->x, &l->p, out, in, w, b);
}

int cpu_ip_backward(struct cpu_ip *l, float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w)
{
    struct wprims_bwd a = {.din = din, .dw = dw, .db = db, .dout = dout, .in = in, .w = w, .has_bias = 1};
    return wprims_backward(l->x, &l->p, &a);
}
