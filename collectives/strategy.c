/* strategy.c - gradient synchronisation: allreduce per tensor,
 * gather-scatter through rank 0, and DDP's buckets with a comm lane that
 * overlaps communication with backward: the engines that the strategies'
 * table entries (sync.h) are built from. (dp, DataParallel, needs the
 * model's forward and loss in between, so its choreography lives in the
 * data-parallel step, src/step_data.c.) */
#include "strategy.h"

#include "half.h"
#include "nvtx.h"

#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

uint16_t *grad_wire_alloc(const struct grad_wire *w, size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(uint16_t);
    return w->alloc ? w->alloc(w->ctx, bytes) : malloc(bytes);
}

void grad_wire_release(const struct grad_wire *w, uint16_t *p)
{
    if (!p)
        return;
    if (w->release)
        w->release(w->ctx, p);
    else
        free(p);
}

int allreduce_avg(struct comm *c, float *buf, size_t n, uint16_t *half, const struct grad_wire *w)
{
    if (!half || !w || !w->fmt)
        return c->ops->allreduce(c, buf, n, RED_AVG);
    if (w->to_16) {
        if (w->to_16(w->ctx, half, buf, n, w->fmt) != 0)
            return -1;
    } else {
        w16_from_floats(w->fmt, half, buf, n);
    }
    int rc = c->ops->allreduce_16(c, half, n, w->fmt, RED_AVG);
    if (rc != 0)
        return rc;
    if (w->from_16)
        return w->from_16(w->ctx, buf, half, n, w->fmt);
    w16_to_floats(w->fmt, buf, half, n);
    return 0;
}

int sync_allreduce(struct comm *c, const struct grad_layout *g, uint16_t *half, const struct grad_wire *w)
{
    int rc = 0;
    for (int p = 0; p < g->n && rc == 0; p++) {
        if (!g->t[p].trainable)
            continue;
        c->tag = (int16_t)p;
        rc = comm_context(c, allreduce_avg(c, g->grads + g->t[p].off, g->t[p].len, half, w), "allreduce of tensor %d",
                          p);
    }
    c->tag = -1;
    return rc;
}

void grad_trainable_range(const struct grad_layout *g, size_t *lo, size_t *hi)
{
    *lo = g->nfloats;
    *hi = 0;
    for (int p = 0; p < g->n; p++)
        if (g->t[p].trainable) {
            if (g->t[p].off < *lo)
                *lo = g->t[p].off;
            if (g->t[p].off + g->t[p].len > *hi)
                *hi = g->t[p].off + g->t[p].len;
        }
    if (*hi < *lo)
        *lo = *hi = 0;
}

int sync_gather_scatter(struct comm *c, const struct grad_layout *g, float *scratch, gs_average_fn avg, void *ctx)
{
    size_t lo, hi;
    grad_trainable_range(g, &lo, &hi);
    size_t n = hi - lo;
    if (n == 0)
        return 0;
    float *grads = g->grads + lo;
    int rc = c->ops->gather(c, grads, scratch, n, 0);
    if (rc != 0)
        return comm_context(c, rc, "gather");
    if (c->rank == 0) {
        /* average in rank order: the same result whatever the arrival order */
        int64_t t0 = probe_now_ns();
        if (avg) {
            if (avg(ctx, grads, scratch, c->world, n) != 0)
                return comm_context(c, -1, "average");
        } else {
            memcpy(grads, scratch, n * sizeof(float));
            for (int r = 1; r < c->world; r++) {
                const float *src = scratch + (size_t)r * n;
                for (size_t i = 0; i < n; i++)
                    grads[i] += src[i];
            }
            float inv = 1.0f / (float)c->world;
            for (size_t i = 0; i < n; i++)
                grads[i] *= inv;
        }
        if (c->probe) {
            /* reducing bytes is communication work (the README's time accounting) */
            uint32_t step = c->step ? atomic_load_explicit(c->step, memory_order_relaxed) : 0;
            probe_span(c->probe, c->lane, CAT_COMM, step, -1, t0, probe_now_ns(),
                       &(struct span_coll){.kind = COLL_REDUCE});
        }
    }
    return comm_context(c, c->ops->broadcast(c, grads, n, 0), "broadcast");
}

/* ---- ddp ---------------------------------------------------------------- */

int ddp_plan(const struct grad_layout *g, size_t bucket_bytes, size_t first_bytes, struct ddp_bucket *b, int *bucket_of)
{
    /* reverse parameter order: the order backward produces gradients */
    size_t cap = first_bytes / sizeof(float);
    struct ddp_bucket *cur = NULL;
    int nb = 0;
    for (int p = g->n - 1; p >= 0; p--) {
        bucket_of[p] = -1;
        if (!g->t[p].trainable)
            continue;
        size_t len = g->t[p].len;
        if (!cur || (cur->len > 0 && cur->len + len > cap)) {
            if (cur)
                cap = bucket_bytes / sizeof(float);
            cur = &b[nb++];
            cur->last = p;
            cur->off = g->t[p].off + len;
            cur->len = 0;
        }
        /* parameters are laid out in order, so the bucket grows downwards */
        cur->first = p;
        cur->off = g->t[p].off;
        cur->len += len;
        bucket_of[p] = nb - 1;
    }
    return nb;
}

struct ddp_engine {
    struct comm *comm;
    struct grad_layout g;
    int overlap;
    struct ddp_bucket *b;
    int nb;
    int *bucket_of; /* [g.n]: bucket index of each parameter, -1 if frozen */
    /* comm lane: the main thread appends ready buckets to queue[]; the lane
     * thread takes them in order. */
    pthread_t lane;
    int lane_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int *queue;
    _Atomic int q_head; /* written by main: buckets queued this step */
    _Atomic int q_done; /* written by lane: buckets finished this step */
    _Atomic int rc;     /* first failure on the lane */
    _Atomic int quit;
    _Atomic uint64_t gen; /* step generation, bumped by ddp_begin */
    struct spsc_ring *lane_ring;
    struct spsc_ring *main_ring; /* bucket-ready markers */
    const _Atomic uint32_t *step;
    uint16_t *half;       /* 16-bit staging, [largest bucket], or NULL */
    struct grad_wire w16; /* its format and memory (fmt 0: fp32) */
    struct ddp_hooks hooks;
    _Atomic int hooks_set; /* the lane reads hooks only after this */
};

/* One bucket's average-allreduce, tagged with the bucket's index. */
static int run_bucket(struct ddp_engine *e, int i)
{
    struct ddp_bucket *b = &e->b[i];
    struct comm *c = e->comm;
    if (e->hooks.before && e->hooks.before(e->hooks.ctx, i) != 0)
        return comm_context(c, -1, "bucket %d: waiting for its gradients", i);
    c->tag = (int16_t)i;
    nvtx_push_id("allreduce bucket", i);
    int rc = allreduce_avg(c, e->g.grads + b->off, b->len, e->half, &e->w16);
    nvtx_pop();
    c->tag = -1;
    return comm_context(c, rc, "bucket %d: allreduce", i);
}

static void *lane_main(void *arg)
{
    struct ddp_engine *e = arg;
    char name[32];
    snprintf(name, sizeof(name), "rank %d comm", e->comm->rank);
    nvtx_name_thread(name);
    pthread_setname_np(pthread_self(), name);
    comm_bind(e->comm, e->lane_ring, LANE_COMM, e->step);
    int next = 0, inited = 0;
    uint64_t gen = 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!atomic_load(&e->quit) && (atomic_load(&e->gen) == gen ? next >= atomic_load(&e->q_head) : 0))
            pthread_cond_wait(&e->cv, &e->mu);
        if (atomic_load(&e->quit)) {
            pthread_mutex_unlock(&e->mu);
            break;
        }
        if (atomic_load(&e->gen) != gen) {
            gen = atomic_load(&e->gen);
            next = 0;
        }
        int avail = atomic_load(&e->q_head);
        pthread_mutex_unlock(&e->mu);
        if (!inited && atomic_load(&e->hooks_set)) {
            inited = 1;
            if (e->hooks.lane_init && e->hooks.lane_init(e->hooks.ctx) != 0 && atomic_load(&e->rc) == 0) {
                comm_context(e->comm, -1, "starting the comm lane");
                atomic_store(&e->rc, -1);
            }
        }
        while (next < avail) {
            int rc = run_bucket(e, e->queue[next]);
            if (rc != 0 && atomic_load(&e->rc) == 0)
                atomic_store(&e->rc, rc);
            next++;
            atomic_store(&e->q_done, next);
        }
    }
    return NULL;
}

struct ddp_engine *ddp_create(struct comm *c, const struct grad_layout *g, size_t bucket_bytes, size_t first_bytes,
                              int overlap, const struct grad_wire *w16, struct spsc_ring *lane_ring,
                              struct spsc_ring *main_ring, const _Atomic uint32_t *step)
{
    struct ddp_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->comm = c;
    e->g = *g;
    e->overlap = overlap;
    e->lane_ring = lane_ring;
    e->main_ring = main_ring;
    e->step = step;
    e->b = calloc((size_t)g->n + 1, sizeof(*e->b));
    e->bucket_of = malloc(sizeof(int) * ((size_t)g->n + 1));
    e->queue = calloc((size_t)g->n + 1, sizeof(int));
    if (!e->b || !e->bucket_of || !e->queue)
        goto fail;
    e->nb = ddp_plan(g, bucket_bytes, first_bytes, e->b, e->bucket_of);
    if (w16)
        e->w16 = *w16;
    if (e->w16.fmt) {
        size_t maxlen = 1;
        for (int i = 0; i < e->nb; i++)
            maxlen = e->b[i].len > maxlen ? e->b[i].len : maxlen;
        if (!(e->half = grad_wire_alloc(&e->w16, maxlen)))
            goto fail;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    atomic_init(&e->q_head, 0);
    atomic_init(&e->q_done, 0);
    atomic_init(&e->rc, 0);
    atomic_init(&e->quit, 0);
    atomic_init(&e->gen, 0);
    atomic_init(&e->hooks_set, 0);
    if (overlap) {
        if (pthread_create(&e->lane, NULL, lane_main, e) != 0)
            goto fail;
        e->lane_started = 1;
    }
    return e;
fail:
    ddp_destroy(e);
    return NULL;
}

void ddp_set_hooks(struct ddp_engine *e, const struct ddp_hooks *h)
{
    e->hooks = *h;
    atomic_store(&e->hooks_set, 1);
}

int ddp_nbuckets(const struct ddp_engine *e)
{
    return e->nb;
}

const struct ddp_bucket *ddp_bucket_at(const struct ddp_engine *e, int i)
{
    return &e->b[i];
}

void ddp_begin(struct ddp_engine *e)
{
    /* frozen tensors inside a bucket's range never report; count only trainable */
    for (int i = 0; i < e->nb; i++) {
        int n = 0;
        for (int p = e->b[i].first; p <= e->b[i].last; p++)
            n += e->bucket_of[p] == i;
        e->b[i].pending = n;
    }
    if (e->overlap) {
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->q_head, 0);
        atomic_store(&e->q_done, 0);
        atomic_fetch_add(&e->gen, 1);
        pthread_mutex_unlock(&e->mu);
    }
}

void ddp_grad_ready(struct ddp_engine *e, int p)
{
    int i = p >= 0 && p < e->g.n ? e->bucket_of[p] : -1;
    if (i < 0 || --e->b[i].pending > 0)
        return;
    if (e->main_ring) {
        int64_t now = probe_now_ns();
        uint32_t step = e->step ? atomic_load_explicit(e->step, memory_order_relaxed) : 0;
        probe_span(e->main_ring, LANE_MAIN, CAT_BACKWARD, step, i, now, now, NULL);
    }
    if (e->hooks.ready && e->hooks.ready(e->hooks.ctx, i) != 0 && atomic_load(&e->rc) == 0)
        atomic_store(&e->rc, -1); /* ddp_finish reports it */
    if (!e->overlap)
        return;
    pthread_mutex_lock(&e->mu);
    int h = atomic_load(&e->q_head);
    e->queue[h] = i;
    atomic_store(&e->q_head, h + 1);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int ddp_finish(struct ddp_engine *e, struct spsc_ring *main_ring)
{
    if (!e->overlap) {
        for (int i = 0; i < e->nb; i++) {
            int rc = run_bucket(e, i);
            if (rc != 0)
                return rc;
        }
        return atomic_load(&e->rc); /* a failed ready hook */
    }
    int want = atomic_load(&e->q_head);
    if (want < e->nb)
        return -1; /* a bucket never became ready: backward skipped a parameter */
    if (atomic_load(&e->q_done) >= want)
        return atomic_load(&e->rc);
    int64_t t0 = probe_now_ns();
    /* until the lane has run every queued bucket, whatever each came to:
     * an abort fails its collectives at once, so this ends, and a bucket
     * that completed before a peer failed still counts */
    for (unsigned spin = 0; atomic_load(&e->q_done) < want; spin++) {
        if (spin > 2000)
            sched_yield();
    }
    if (main_ring) {
        uint32_t step = e->step ? atomic_load_explicit(e->step, memory_order_relaxed) : 0;
        probe_span(main_ring, LANE_MAIN, CAT_WAIT, step, -1, t0, probe_now_ns(), NULL);
    }
    return atomic_load(&e->rc);
}

void ddp_destroy(struct ddp_engine *e)
{
    if (!e)
        return;
    if (e->lane_started) {
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->quit, 1);
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->lane, NULL);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
    }
    free(e->b);
    free(e->bucket_of);
    free(e->queue);
    grad_wire_release(&e->w16, e->half);
    free(e);
}
