/* kernels_cpu_wprims.c - what a oneDNN layer with weights needs around its
 * three primitives (forward, backward-data, backward-weights), whatever
 * the primitive: the convolution and the inner product each describe
 * their tensors and make the three primitive descriptors, then hand them
 * here. The weights stay in the caller's flat layout (w_user); each
 * primitive may want another, and a reorder runs only where the layouts
 * differ: into the forward's layout once a step (kept, for backward-data
 * when it wants the same), into backward-data's own, and the weight
 * gradient back. A plain input may take the backward passes in a blocked
 * layout (wprims_mds.src_bw, dsrc_bd), reordered there and back at each
 * call, where oneDNN has fast kernels only so. In a bf16 context the input and output gradient are
 * rounded to bfloat16 at each call.
 */
#include "kernels_cpu_dnnl.h"

static void need(size_t *need_bytes, const dnnl_memory_desc_t *md)
{
    size_t n = dnnl_memory_desc_get_size(md);
    if (n > *need_bytes)
        *need_bytes = n;
}

int wprims_make(struct cpu_ctx *x, struct wprims *p, const struct wprims_mds *md, const_dnnl_primitive_desc_t fpd,
                const_dnnl_primitive_desc_t bdpd, const_dnnl_primitive_desc_t bwpd, char *err, size_t errlen)
{
    err[0] = 0;
    if (p->bf16 && (to_bf16_make(x, &p->src_bf, md->src, md->srcb, &x->bf_src_need, err, errlen) ||
                    to_bf16_make(x, &p->ddst_bf, md->dst, md->ddstb, &x->bf_ddst_need, err, errlen)))
        return -1;
    if (prim_make(x, &p->fwd, fpd, err, errlen) || prim_make(x, &p->bwd_data, bdpd, err, errlen) ||
        prim_make(x, &p->bwd_weights, bwpd, err, errlen))
        return -1;
    char a[32], b[32], w[32];
    impl_name(fpd, a, sizeof(a));
    impl_name(bdpd, b, sizeof(b));
    impl_name(bwpd, w, sizeof(w));
    snprintf(p->impl, sizeof(p->impl), "%s|%s|%s", a, b, w);

    const dnnl_memory_desc_t *wf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ww = dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
    DNNL_TRY(dnnl_memory_create(&p->w_user, md->wu, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dw_user, md->wu, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->w_fwd, wf, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->w_bd, wb, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dw_bw, ww, cpu_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(wf, md->wu) &&
        (reorder_make(x, &p->w_to_fwd, md->wu, wf, err, errlen) || !(p->w_fwd_buf = md_alloc(wf))))
        return -1;
    p->bd_uses_fwd = dnnl_memory_desc_equal(wb, wf);
    if (!p->bd_uses_fwd && !dnnl_memory_desc_equal(wb, md->wu)) {
        if (reorder_make(x, &p->w_to_bd, md->wu, wb, err, errlen))
            return -1;
        need(&x->wtmp_need, wb);
    }
    if (!dnnl_memory_desc_equal(ww, md->wu)) {
        if (reorder_make(x, &p->dw_to_user, ww, md->wu, err, errlen))
            return -1;
        need(&x->wtmp_need, ww);
    }
    if (!(p->db_dummy = calloc(md->nbias ? md->nbias : 1, sizeof(float))))
        return -1;
    if (md->src_bw) {
        if (reorder_make(x, &p->src_to_bw, md->src, md->src_bw, err, errlen))
            return -1;
        DNNL_TRY(dnnl_memory_create(&p->src_bw, md->src_bw, cpu_engine, DNNL_MEMORY_NONE));
        need(&x->atmp_need, md->src_bw);
    }
    if (md->ddst_bw) {
        if (reorder_make(x, &p->ddst_to_bw, md->ddstb, md->ddst_bw, err, errlen))
            return -1;
        DNNL_TRY(dnnl_memory_create(&p->ddst_bw, md->ddst_bw, cpu_engine, DNNL_MEMORY_NONE));
        need(&x->atmp_dd_need, md->ddst_bw);
    }
    if (md->dsrc_bd) {
        if (reorder_make(x, &p->dsrc_from_bd, md->dsrc_bd, md->src, err, errlen))
            return -1;
        DNNL_TRY(dnnl_memory_create(&p->dsrc_bd, md->dsrc_bd, cpu_engine, DNNL_MEMORY_NONE));
        need(&x->atmp_need, md->dsrc_bd);
    }
    DNNL_TRY(dnnl_memory_create(&p->src, md->srcb, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dsrc, md->src, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dst, md->dst, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->ddst, md->ddstb, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->bias, md->bias, cpu_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dbias, md->bias, cpu_engine, DNNL_MEMORY_NONE));
    return 0;
fail:
    return -1;
}

void wprims_free(struct wprims *p)
{
    struct prim *prims[] = {&p->fwd,        &p->bwd_data,  &p->bwd_weights, &p->w_to_fwd,    &p->w_to_bd,
                            &p->dw_to_user, &p->src_to_bw, &p->ddst_to_bw,  &p->dsrc_from_bd};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        prim_free(prims[i]);
    dnnl_memory_t mems[] = {p->src,   p->dst,  p->bias,    p->dsrc,  p->ddst,   p->dbias,   p->w_user,
                            p->w_fwd, p->w_bd, p->dw_user, p->dw_bw, p->src_bw, p->ddst_bw, p->dsrc_bd};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    to_bf16_free(&p->src_bf);
    to_bf16_free(&p->ddst_bf);
    free(p->w_fwd_buf);
    free(p->db_dummy);
}

int wprims_forward(struct cpu_ctx *x, struct wprims *p, float *out, const float *in, const float *w, const float *b)
{
    const void *wf = w;
    if (p->w_to_fwd.p) {
        if (reorder_run(x, &p->w_to_fwd, p->w_user, w, p->w_fwd, p->w_fwd_buf) != 0)
            return -1;
        wf = p->w_fwd_buf;
    }
    const void *src = p->bf16 ? to_bf16_run(x, &p->src_bf, in, x->bf_src) : in;
    if (!src)
        return -1;
    set(p->src, src);
    set(p->w_fwd, wf);
    set(p->dst, out);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->w_fwd}, {DNNL_ARG_DST, p->dst}};
    int nargs = 3;
    if (b) {
        set(p->bias, b);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->bias};
    }
    if (prim_run(x, &p->fwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
}

int wprims_backward(struct cpu_ctx *x, struct wprims *p, const struct wprims_bwd *a)
{
    const void *ddst = p->bf16 ? to_bf16_run(x, &p->ddst_bf, a->dout, x->bf_ddst) : a->dout;
    if (!ddst)
        return -1;
    if (a->dw) {
        void *dwp = p->dw_to_user.p ? x->wtmp : a->dw;
        const void *src = p->bf16 ? to_bf16_run(x, &p->src_bf, a->in, x->bf_src) : a->in;
        if (!src)
            return -1;
        dnnl_memory_t srcm = p->src;
        if (p->src_to_bw.p) { /* the input, in this pass's layout */
            if (reorder_run(x, &p->src_to_bw, p->src, src, p->src_bw, x->atmp) != 0)
                return -1;
            srcm = p->src_bw;
            src = x->atmp;
        }
        dnnl_memory_t ddstm = p->ddst;
        const void *dd = ddst;
        if (p->ddst_to_bw.p) { /* the output gradient, in this pass's layout */
            if (reorder_run(x, &p->ddst_to_bw, p->ddst, ddst, p->ddst_bw, x->atmp_dd) != 0)
                return -1;
            ddstm = p->ddst_bw;
            dd = x->atmp_dd;
        }
        set(srcm, src);
        set(ddstm, dd);
        set(p->dw_bw, dwp);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, srcm}, {DNNL_ARG_DIFF_DST, ddstm}, {DNNL_ARG_DIFF_WEIGHTS, p->dw_bw}};
        int nargs = 3;
        if (a->has_bias) {
            /* oneDNN always computes it */
            set(p->dbias, a->db ? a->db : p->db_dummy);
            args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, p->dbias};
        }
        if (prim_run(x, &p->bwd_weights, nargs, args) != 0)
            return -1;
        if (p->dw_to_user.p && reorder_run(x, &p->dw_to_user, p->dw_bw, dwp, p->dw_user, a->dw) != 0)
            return -1;
    }
    if (a->din) {
        const void *wb = a->w;
        if (p->bd_uses_fwd) {
            if (p->w_to_fwd.p) {
                /* forward left this step's reordered copy, unless asked to redo it */
                if (a->redo_fwd_reorder && reorder_run(x, &p->w_to_fwd, p->w_user, a->w, p->w_fwd, p->w_fwd_buf) != 0)
                    return -1;
                wb = p->w_fwd_buf;
            }
        } else if (p->w_to_bd.p) {
            if (reorder_run(x, &p->w_to_bd, p->w_user, a->w, p->w_bd, x->wtmp) != 0)
                return -1;
            wb = x->wtmp;
        }
        dnnl_memory_t dsrcm = p->dsrc_from_bd.p ? p->dsrc_bd : p->dsrc;
        set(p->ddst, ddst);
        set(p->w_bd, wb);
        set(dsrcm, p->dsrc_from_bd.p ? x->atmp : a->din);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_DIFF_DST, p->ddst}, {DNNL_ARG_WEIGHTS, p->w_bd}, {DNNL_ARG_DIFF_SRC, dsrcm}};
        if (prim_run(x, &p->bwd_data, 3, args) != 0)
            return -1;
        if (p->dsrc_from_bd.p && reorder_run(x, &p->dsrc_from_bd, p->dsrc_bd, x->atmp, p->dsrc, a->din) != 0)
            return -1; /* the gradient, blocked, back to the input's plain layout */
    }
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
}
