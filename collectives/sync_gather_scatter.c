/* sync_gather_scatter.c - gather-scatter (sync.h): after backward every
 * rank's trainable gradients are gathered at rank 0, averaged there in
 * rank order and broadcast back (sync_gather_scatter, strategy.c). */
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>

struct gs_engine {
    struct comm *comm;
    struct grad_layout g;
    float *scratch; /* rank 0: world x trainable floats, in the gradients' memory */
    gs_average_fn average;
    void (*release)(void *ctx, void *p);
    void *ctx;
};

static void gs_destroy(struct sync_engine *se)
{
    struct gs_engine *e = (struct gs_engine *)se;
    if (!e)
        return;
    if (e->scratch)
        e->release(e->ctx, e->scratch);
    free(e);
}

static struct sync_engine *gs_create(const struct sync_args *a, char *err, size_t errlen)
{
    struct gs_engine *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *e = (struct gs_engine){a->comm, *a->g, NULL, a->average, a->release, a->ctx};
    if (a->comm->rank == 0 &&
        !(e->scratch = a->alloc(a->ctx, sizeof(float) * a->g->nfloats * (size_t)a->comm->world))) {
        snprintf(err, errlen, "out of memory for the gather buffer");
        gs_destroy((struct sync_engine *)e);
        return NULL;
    }
    return (struct sync_engine *)e;
}

static int gs_finish(struct sync_engine *se, struct spsc_ring *main_ring)
{
    struct gs_engine *e = (struct gs_engine *)se;
    (void)main_ring;
    return sync_gather_scatter(e->comm, &e->g, e->scratch, e->average, e->ctx);
}

/* gather(S) + broadcast(S) after backward, S the trainable bytes (rank
 * 0's averaging left out). */
static int gs_cost(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                   double *comm_ms, double *after_ms)
{
    (void)l;
    (void)p;
    if (!in->gather || !in->broadcast)
        return -1;
    double bytes = sync_trainable_bytes(in);
    *comm_ms = *after_ms = sync_link_ms(in->gather, bytes) + sync_link_ms(in->broadcast, bytes);
    return 0;
}

const struct sync_ops sync_ops_gather_scatter = {
    .name = "gather-scatter",
    .letter = 'g',
    .flags = SYNC_ROOTED,
    .create = gs_create,
    .finish = gs_finish,
    .destroy = gs_destroy,
    .cost = gs_cost,
};
