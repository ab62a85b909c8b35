/* sync_horovod.c - horovod (sync.h): negotiation every cycle and tensor
 * fusion on a background thread (the engine is horovod.c's hvd_*). */
#include "horovod.h"
#include "sync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The engine, and what its device hooks (struct hvd_device, one context)
 * hand on to the run's (struct sync_device, bucket 0 for every mark). */
struct hvd_sync {
    struct hvd_engine *e;
    struct sync_device dev;
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    void *ctx;
};

static int on_lane_init(void *w)
{
    struct hvd_sync *s = w;
    return s->dev.lane_init(s->ctx);
}

static int on_ready(void *w)
{
    struct hvd_sync *s = w;
    return s->dev.ready(s->ctx, 0);
}

static int on_before(void *w)
{
    struct hvd_sync *s = w;
    return s->dev.before(s->ctx, 0);
}

static void *on_alloc(void *w, size_t bytes)
{
    struct hvd_sync *s = w;
    return s->alloc(s->ctx, bytes);
}

static void on_release(void *w, void *p)
{
    struct hvd_sync *s = w;
    s->release(s->ctx, p);
}

static int on_copy(void *w, void *dst, const void *src, size_t bytes)
{
    struct hvd_sync *s = w;
    return s->dev.copy(s->ctx, dst, src, bytes);
}

static int on_settle(void *w)
{
    struct hvd_sync *s = w;
    return s->dev.settle(s->ctx);
}

static void hvd_sync_destroy(struct sync_engine *se)
{
    struct hvd_sync *s = (struct hvd_sync *)se;
    if (!s)
        return;
    hvd_destroy(s->e);
    free(s);
}

static struct sync_engine *hvd_sync_create(const struct sync_args *a, char *err, size_t errlen)
{
    struct hvd_sync *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "cannot start the horovod background thread");
        return NULL;
    }
    s->alloc = a->alloc;
    s->release = a->release;
    s->ctx = a->ctx;
    struct hvd_device hd = {0}, *dev = NULL;
    if (a->dev) {
        s->dev = *a->dev;
        hd = (struct hvd_device){s->dev.lane_init ? on_lane_init : NULL,
                                 s->dev.ready ? on_ready : NULL,
                                 s->dev.before ? on_before : NULL,
                                 on_alloc,
                                 on_release,
                                 s->dev.copy ? on_copy : NULL,
                                 s->dev.settle ? on_settle : NULL,
                                 s};
        dev = &hd;
    }
    s->e = hvd_create(a->comm, a->g, a->p.fusion_bytes, a->p.cycle_ms, a->w16, dev, a->lane_ring, a->step);
    if (!s->e) {
        snprintf(err, errlen, "cannot start the horovod background thread");
        free(s);
        return NULL;
    }
    return (struct sync_engine *)s;
}

static void hvd_sync_begin(struct sync_engine *se)
{
    hvd_begin(((struct hvd_sync *)se)->e);
}

static void hvd_sync_ready(void *se, int p)
{
    hvd_grad_ready(((struct hvd_sync *)se)->e, p);
}

static int hvd_sync_finish(struct sync_engine *se, struct spsc_ring *main_ring)
{
    return hvd_finish(((struct hvd_sync *)se)->e, main_ring);
}

/* The background lane (src/predict.h): returns when its last buffer
 * ends, in ms from the start of backward; *busy its comm. */
static double hvd_lane(const struct predict_input *in, const struct predict_link *l, size_t fusion_bytes,
                       double cycle_ms, double *busy)
{
    char *sent = calloc((size_t)in->n + 1, 1);
    if (!sent)
        return -1;
    double wake = cycle_ms > 0 ? cycle_ms : 0, end = 0;
    double negotiate = sync_link_ms(l, (double)in->n * sizeof(float));
    int left = 0;
    for (int p = 0; p < in->n; p++)
        left += in->t[p].trainable;
    *busy = 0;
    while (left > 0) {
        /* nothing final yet: sleep until the next gradient is */
        double next = -1;
        for (int p = 0; p < in->n; p++)
            if (in->t[p].trainable && !sent[p] && (next < 0 || in->ready_ms[p] < next))
                next = in->ready_ms[p];
        if (next > wake)
            wake = cycle_ms > 0 ? cycle_ms * ceil(next / cycle_ms) : next;
        double t = (wake > end ? wake : end) + negotiate, fill = 0;
        *busy += negotiate;
        /* the final ones, last parameters first (backward's order), fused */
        for (int p = in->n - 1; p >= 0; p--) {
            if (!in->t[p].trainable || sent[p] || in->ready_ms[p] > wake)
                continue;
            double bytes = (double)in->t[p].len * sizeof(float);
            if (fill > 0 && fill + bytes > (double)fusion_bytes) {
                t += sync_grad_ms(in, l, fill);
                *busy += sync_grad_ms(in, l, fill);
                fill = 0;
            }
            fill += bytes;
            sent[p] = 1;
            left--;
        }
        if (fill > 0) {
            t += sync_grad_ms(in, l, fill);
            *busy += sync_grad_ms(in, l, fill);
        }
        end = t;
        wake = cycle_ms > 0 && wake + cycle_ms > end ? wake + cycle_ms : end;
    }
    free(sent);
    return end;
}

/* F + max(B, the lane's end) + R (src/predict.h). */
static int hvd_cost(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                    double *comm_ms, double *after_ms)
{
    double end = hvd_lane(in, l, p->fusion_bytes, p->cycle_ms, comm_ms);
    if (end < 0)
        return -1;
    *after_ms = end > in->bwd_ms ? end - in->bwd_ms : 0;
    return 0;
}

const struct sync_ops sync_ops_horovod = {
    .name = "horovod",
    .letter = 'h',
    .flags = SYNC_OVERLAPS | SYNC_COMPRESSES,
    .reads = {"fusion-mb", "cycle-ms"},
    .create = hvd_sync_create,
    .begin = hvd_sync_begin,
    .grad_ready = hvd_sync_ready,
    .finish = hvd_sync_finish,
    .destroy = hvd_sync_destroy,
    .cost = hvd_cost,
};
