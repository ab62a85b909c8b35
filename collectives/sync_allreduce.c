/* sync_allreduce.c - allreduce (sync.h): after backward, one
 * average-allreduce per trainable tensor in parameter order
 * (sync_allreduce, strategy.c). */
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>

struct ar_engine {
    struct comm *comm;
    struct grad_layout g;
    struct grad_wire w16; /* fmt 0: fp32 */
    uint16_t *half;       /* with a 16-bit format: [the largest tensor] */
};

static void ar_destroy(struct sync_engine *se)
{
    struct ar_engine *e = (struct ar_engine *)se;
    if (!e)
        return;
    grad_wire_release(&e->w16, e->half);
    free(e);
}

static struct sync_engine *ar_create(const struct sync_args *a, char *err, size_t errlen)
{
    struct ar_engine *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->comm = a->comm;
    e->g = *a->g;
    if (a->w16)
        e->w16 = *a->w16;
    if (e->w16.fmt) {
        size_t mx = 1;
        for (int p = 0; p < e->g.n; p++)
            mx = e->g.t[p].len > mx ? e->g.t[p].len : mx;
        if (!(e->half = grad_wire_alloc(&e->w16, mx))) {
            snprintf(err, errlen, "out of memory for the 16-bit gradient buffer");
            ar_destroy((struct sync_engine *)e);
            return NULL;
        }
    }
    return (struct sync_engine *)e;
}

static int ar_finish(struct sync_engine *se, struct spsc_ring *main_ring)
{
    struct ar_engine *e = (struct ar_engine *)se;
    (void)main_ring;
    return sync_allreduce(e->comm, &e->g, e->half, &e->w16);
}

/* The sum over trainable tensors of t(S_p), after backward. */
static int ar_cost(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                   double *comm_ms, double *after_ms)
{
    (void)p;
    double comm = 0;
    for (int k = 0; k < in->n; k++)
        if (in->t[k].trainable)
            comm += sync_grad_ms(in, l, (double)in->t[k].len * sizeof(float));
    *comm_ms = *after_ms = comm;
    return 0;
}

const struct sync_ops sync_ops_allreduce = {
    .name = "allreduce",
    .letter = 'a',
    .flags = SYNC_COMPRESSES,
    .create = ar_create,
    .finish = ar_finish,
    .destroy = ar_destroy,
    .cost = ar_cost,
};
