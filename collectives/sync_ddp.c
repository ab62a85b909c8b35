/* sync_ddp.c - ddp, PyTorch's DistributedDataParallel (sync.h):
 * gradients in buckets in reverse parameter order, each allreduced on a
 * comm lane as soon as backward has produced its last gradient (the
 * engine is strategy.c's ddp_*). */
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>

/* PyTorch's first bucket is 1 MB; a smaller cap applies to it too. */
static size_t first_bucket(size_t cap)
{
    return cap < 1024 * 1024 ? cap : 1024 * 1024;
}

static struct sync_engine *ddp_sync_create(const struct sync_args *a, char *err, size_t errlen)
{
    size_t cap = a->p.bucket_bytes;
    struct ddp_engine *e =
        ddp_create(a->comm, a->g, cap, first_bucket(cap), a->p.overlap, a->w16, a->lane_ring, a->main_ring, a->step);
    if (!e) {
        snprintf(err, errlen, "cannot create the DDP buckets");
        return NULL;
    }
    if (a->dev)
        ddp_set_hooks(e, &(struct ddp_hooks){a->dev->lane_init, a->dev->ready, a->dev->before, a->ctx});
    return (struct sync_engine *)e;
}

static void ddp_sync_begin(struct sync_engine *e)
{
    ddp_begin((struct ddp_engine *)e);
}

static void ddp_sync_ready(void *e, int p)
{
    ddp_grad_ready(e, p);
}

static int ddp_sync_finish(struct sync_engine *e, struct spsc_ring *main_ring)
{
    return ddp_finish((struct ddp_engine *)e, main_ring);
}

static void ddp_sync_destroy(struct sync_engine *e)
{
    ddp_destroy((struct ddp_engine *)e);
}

/* The comm lane: buckets in the order they become ready. Returns when
 * the last ends, in ms from the start of backward; *busy the sum. */
static double ddp_lane(const struct predict_input *in, const struct predict_link *l, size_t bucket_bytes, int overlap,
                       double *busy)
{
    struct ddp_bucket *b = malloc(sizeof(*b) * ((size_t)in->n + 1));
    int *of = malloc(sizeof(int) * ((size_t)in->n + 1));
    if (!b || !of) {
        free(b);
        free(of);
        return -1;
    }
    struct grad_layout g = {in->n, in->t, NULL, NULL, 0};
    int nb = ddp_plan(&g, bucket_bytes, first_bucket(bucket_bytes), b, of);
    double end = overlap ? 0 : in->bwd_ms;
    *busy = 0;
    /* buckets come out of ddp_plan in backward order, and become ready in
     * it: a bucket is ready when its first (lowest) tensor is */
    for (int i = 0; i < nb; i++) {
        double ready = overlap ? in->ready_ms[b[i].first] : in->bwd_ms;
        double d = sync_grad_ms(in, l, (double)b[i].len * sizeof(float));
        end = (ready > end ? ready : end) + d;
        *busy += d;
    }
    free(b);
    free(of);
    return end;
}

/* F + max(B, end of the last bucket) + R (src/predict.h). */
static int ddp_cost(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                    double *comm_ms, double *after_ms)
{
    double end = ddp_lane(in, l, p->bucket_bytes, p->overlap, comm_ms);
    if (end < 0)
        return -1;
    *after_ms = end > in->bwd_ms ? end - in->bwd_ms : 0;
    return 0;
}

const struct sync_ops sync_ops_ddp = {
    .name = "ddp",
    .letter = 'd',
    .flags = SYNC_OVERLAPS | SYNC_COMPRESSES | SYNC_BUCKET_MARKS,
    .reads = {"bucket-mb", "no-overlap"},
    .create = ddp_sync_create,
    .begin = ddp_sync_begin,
    .grad_ready = ddp_sync_ready,
    .finish = ddp_sync_finish,
    .destroy = ddp_sync_destroy,
    .cost = ddp_cost,
};
