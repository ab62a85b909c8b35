/* horovod.c - Horovod's way of synchronising gradients: tensor fusion on a
 * background thread that wakes once per cycle.
 *
 * Backward reports each gradient as it becomes final. Every cycle
 * (--cycle-ms, Horovod's HOROVOD_CYCLE_TIME) a background thread with
 * gradients that are ready here and not yet reduced negotiates with the
 * other ranks: a sum-allreduce of one flag per tensor, the coordinator's
 * request/response round in one collective. A tensor whose sum equals the
 * world size is ready everywhere. Those tensors, in backward order, are
 * packed into a fusion buffer of at most --fusion-mb (HOROVOD_FUSION_
 * THRESHOLD), averaged with one allreduce per buffer, and copied back; a
 * tensor larger than the buffer is reduced in place on its own.
 *
 * Every rank sees the same sums, so every rank issues the same collectives
 * in the same order. A rank joins a round only when it has a ready tensor
 * that is not yet reduced; such a tensor is missing on some other rank,
 * whose backward will make it ready, so that rank joins too: no deadlock,
 * and no empty rounds while a rank runs forward.
 *
 * The negotiation's spans carry tag SPAN_TAG_NEGOTIATE, so metrics, reports
 * and traces account it apart from the gradients' transfer.
 *
 * On a GPU (struct hvd_device) the fusion buffer and the flags are device
 * memory, as Horovod's are: backward marks the compute stream as it
 * reports a gradient, and the thread's stream waits for the latest mark
 * before it packs (a later mark only waits longer). The thread's copies
 * and collectives share its stream; a cycle ends with the host waiting for
 * it, so what hvd_finish releases is in place. */
#include "horovod.h"

#include "half.h"
#include "nvtx.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hvd_engine {
    struct comm *comm;
    struct grad_layout g;
    size_t fusion_floats; /* fusion buffer capacity */
    int64_t cycle_ns;
    int ntrain;              /* trainable tensors */
    float *flags;            /* [g.n]: the negotiation's vector */
    float *dflags;           /* [g.n]: its copy in device memory, or NULL */
    float *fusion;           /* [fusion_floats], device memory with dev */
    struct hvd_device dev;   /* .copy is NULL where the gradients are host memory */
    int *order;              /* [g.n]: one cycle's agreed tensors, backward order (thread only) */
    uint16_t *half;          /* 16-bit staging, [max(fusion, largest tensor)], or NULL */
    struct grad_wire w16;    /* its format and memory (fmt 0: fp32) */
    unsigned char *done;     /* [g.n]: reduced this step (thread only) */
    _Atomic uint64_t *ready; /* [g.n]: the step generation in which it became ready */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t gen;      /* step generation, bumped by hvd_begin */
    _Atomic uint64_t finished; /* the last generation whose tensors are all reduced */
    _Atomic int rc;            /* first failure on the thread */
    _Atomic int quit;
    struct spsc_ring *ring;
    const _Atomic uint32_t *step;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Ready here and not yet reduced this step (thread side). */
static int pending(const struct hvd_engine *e, uint64_t gen)
{
    if (gen == 0)
        return 0; /* no step has begun */
    for (int p = 0; p < e->g.n; p++)
        if (e->g.t[p].trainable && !e->done[p] && atomic_load(&e->ready[p]) == gen)
            return 1;
    return 0;
}

/* A copy between gradients and the fusion buffer: on the thread's stream
 * where they are device memory. */
static int move(struct hvd_engine *e, float *dst, const float *src, size_t n)
{
    if (!e->dev.copy) {
        memcpy(dst, src, n * sizeof(float));
        return 0;
    }
    return e->dev.copy(e->dev.ctx, dst, src, n * sizeof(float));
}

/* Averages the agreed tensors ps[0..n) through the fusion buffer, or, when
 * it is one tensor larger than the buffer, that tensor in place. Traces tag
 * a fused allreduce with its index in the cycle, a lone one with its
 * tensor's. */
static int reduce_fused(struct hvd_engine *e, const int *ps, int n, int fused_id)
{
    struct comm *c = e->comm;
    const struct grad_tensor *t = e->g.t;
    if (n == 1 && t[ps[0]].len > e->fusion_floats) {
        c->tag = (int16_t)ps[0];
        int rc = allreduce_avg(c, e->g.grads + t[ps[0]].off, t[ps[0]].len, e->half, &e->w16);
        c->tag = -1;
        return comm_context(c, rc, "tensor %d: allreduce", ps[0]);
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (move(e, e->fusion + at, e->g.grads + t[ps[i]].off, t[ps[i]].len) != 0)
            return -1;
        at += t[ps[i]].len;
    }
    c->tag = (int16_t)fused_id;
    nvtx_push_id("allreduce fused", fused_id);
    int rc = allreduce_avg(c, e->fusion, at, e->half, &e->w16);
    nvtx_pop();
    c->tag = -1;
    if (rc != 0)
        return comm_context(c, rc, "fusion buffer %d: allreduce", fused_id);
    at = 0;
    for (int i = 0; i < n; i++) {
        if (move(e, e->g.grads + t[ps[i]].off, e->fusion + at, t[ps[i]].len) != 0)
            return -1;
        at += t[ps[i]].len;
    }
    return 0;
}

/* One cycle: negotiate, then reduce what every rank has ready. Returns the
 * number of tensors reduced, or a negative code. */
static int cycle(struct hvd_engine *e, uint64_t gen)
{
    int *order = e->order;
    struct comm *c = e->comm;
    int n = e->g.n;
    for (int p = 0; p < n; p++)
        e->flags[p] = e->g.t[p].trainable && !e->done[p] && atomic_load(&e->ready[p]) == gen ? 1.0f : 0.0f;
    c->tag = SPAN_TAG_NEGOTIATE;
    int rc;
    if (e->dflags) {
        /* (the collective waits for its stream: the flags are back once the host has waited) */
        rc = e->dev.copy(e->dev.ctx, e->dflags, e->flags, (size_t)n * sizeof(float));
        if (rc == 0)
            rc = c->ops->allreduce(c, e->dflags, (size_t)n, RED_SUM);
        if (rc == 0)
            rc = e->dev.copy(e->dev.ctx, e->flags, e->dflags, (size_t)n * sizeof(float));
        if (rc == 0)
            rc = e->dev.settle(e->dev.ctx);
    } else {
        rc = c->ops->allreduce(c, e->flags, (size_t)n, RED_SUM);
    }
    c->tag = -1;
    if (rc != 0)
        return comm_context(c, rc, "negotiation");
    /* the agreed gradients are computed here: the thread's stream waits for
     * backward's mark (none agreed: no wait, which would hold the next
     * negotiation behind backward's kernels) */
    int agreed = 0;
    for (int p = 0; p < n && !agreed; p++)
        agreed = e->flags[p] == (float)c->world;
    if (agreed && e->dev.before && (rc = e->dev.before(e->dev.ctx)) != 0)
        return rc;
    /* agreed tensors in backward order (descending parameter index), fused
     * greedily while they fit */
    int k = 0, reduced = 0, fused = 0;
    size_t used = 0;
    for (int p = n - 1; p >= 0; p--) {
        if (e->flags[p] != (float)c->world)
            continue;
        if (k > 0 && used + e->g.t[p].len > e->fusion_floats) {
            if ((rc = reduce_fused(e, order, k, fused++)) != 0)
                return rc;
            k = 0;
            used = 0;
        }
        order[k++] = p;
        used += e->g.t[p].len;
        e->done[p] = 1;
        reduced++;
    }
    if (k > 0 && (rc = reduce_fused(e, order, k, fused++)) != 0)
        return rc;
    if (reduced > 0 && e->dev.settle && (rc = e->dev.settle(e->dev.ctx)) != 0)
        return rc; /* the last copies back are done before hvd_finish returns */
    return reduced;
}

static void *thread_main(void *arg)
{
    struct hvd_engine *e = arg;
    char name[32];
    snprintf(name, sizeof(name), "rank %d hvd", e->comm->rank);
    nvtx_name_thread(name);
    pthread_setname_np(pthread_self(), name);
    comm_bind(e->comm, e->ring, LANE_COMM, e->step);
    if (e->dev.lane_init && e->dev.lane_init(e->dev.ctx) != 0)
        atomic_store(&e->rc, -1); /* (hvd_finish reports it) */
    uint64_t gen = 0;
    int ndone = 0;
    int64_t next = 0; /* when the next cycle may start */
    for (;;) {
        pthread_mutex_lock(&e->mu);
        for (;;) {
            if (atomic_load(&e->quit))
                break;
            uint64_t g = atomic_load(&e->gen);
            if (g != gen) { /* a new step: nothing of it is reduced */
                gen = g;
                memset(e->done, 0, (size_t)e->g.n);
                ndone = 0;
            }
            if (ndone < e->ntrain && pending(e, gen))
                break;
            pthread_cond_wait(&e->cv, &e->mu);
        }
        pthread_mutex_unlock(&e->mu);
        if (atomic_load(&e->quit))
            break;
        if (atomic_load(&e->rc) != 0) {
            /* failed (the device's set-up, or a mark): wait for the run to end */
            pthread_mutex_lock(&e->mu);
            while (!atomic_load(&e->quit))
                pthread_cond_wait(&e->cv, &e->mu);
            pthread_mutex_unlock(&e->mu);
            break;
        }
        /* Horovod's cycle: at most one negotiation per cycle time; what
         * becomes ready meanwhile joins this round */
        int64_t t = now_ns();
        if (t < next) {
            struct timespec ts = {(time_t)((next - t) / 1000000000), (long)((next - t) % 1000000000)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
            t = next;
        }
        next = t + e->cycle_ns;
        int r = cycle(e, gen);
        if (r < 0) {
            if (atomic_load(&e->rc) == 0)
                atomic_store(&e->rc, r);
            /* a failed collective leaves the ranks out of step: wait for
             * the run to end (hvd_finish reports the failure) */
            pthread_mutex_lock(&e->mu);
            while (!atomic_load(&e->quit))
                pthread_cond_wait(&e->cv, &e->mu);
            pthread_mutex_unlock(&e->mu);
            break;
        }
        ndone += r;
        if (ndone >= e->ntrain) {
            pthread_mutex_lock(&e->mu);
            atomic_store(&e->finished, gen);
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
        }
    }
    return NULL;
}

struct hvd_engine *hvd_create(struct comm *c, const struct grad_layout *g, size_t fusion_bytes, double cycle_ms,
                              const struct grad_wire *w16, const struct hvd_device *dev, struct spsc_ring *ring,
                              const _Atomic uint32_t *step)
{
    struct hvd_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->comm = c;
    e->g = *g;
    e->ring = ring;
    e->step = step;
    e->cycle_ns = (int64_t)(cycle_ms * 1e6);
    e->fusion_floats = fusion_bytes / sizeof(float);
    if (e->fusion_floats == 0)
        e->fusion_floats = 1;
    size_t largest = 1, all = 0;
    for (int p = 0; p < g->n; p++)
        if (g->t[p].trainable) {
            e->ntrain++;
            largest = g->t[p].len > largest ? g->t[p].len : largest;
            all += g->t[p].len;
        }
    /* no larger than all it could fuse (device memory is dear) */
    if (all > 0 && all < e->fusion_floats)
        e->fusion_floats = all;
    size_t n = (size_t)g->n + 1;
    e->flags = calloc(n, sizeof(float));
    e->done = calloc(n, 1);
    e->ready = calloc(n, sizeof(*e->ready));
    if (dev) {
        e->dev = *dev;
        e->fusion = dev->alloc(dev->ctx, e->fusion_floats * sizeof(float));
        e->dflags = dev->alloc(dev->ctx, n * sizeof(float));
    } else {
        e->fusion = malloc(e->fusion_floats * sizeof(float));
    }
    e->order = malloc(n * sizeof(int));
    if (w16)
        e->w16 = *w16;
    if (e->w16.fmt)
        e->half = grad_wire_alloc(&e->w16, largest > e->fusion_floats ? largest : e->fusion_floats);
    if (!e->flags || !e->done || !e->ready || !e->fusion || (dev && !e->dflags) || !e->order ||
        (e->w16.fmt && !e->half))
        goto fail;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    if (pthread_create(&e->thread, NULL, thread_main, e) != 0) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        goto fail;
    }
    e->started = 1;
    return e;
fail:
    hvd_destroy(e);
    return NULL;
}

void hvd_begin(struct hvd_engine *e)
{
    pthread_mutex_lock(&e->mu);
    atomic_fetch_add(&e->gen, 1);
    pthread_mutex_unlock(&e->mu);
}

void hvd_grad_ready(struct hvd_engine *e, int p)
{
    if (p < 0 || p >= e->g.n || !e->g.t[p].trainable)
        return;
    /* marked before it is ready: the thread's wait covers every gradient it agrees on */
    if (e->dev.ready && e->dev.ready(e->dev.ctx) != 0 && atomic_load(&e->rc) == 0)
        atomic_store(&e->rc, -1);
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->ready[p], atomic_load(&e->gen));
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int hvd_finish(struct hvd_engine *e, struct spsc_ring *main_ring)
{
    uint64_t gen = atomic_load(&e->gen);
    if (e->ntrain == 0)
        return 0;
    for (int p = 0; p < e->g.n; p++)
        if (e->g.t[p].trainable && atomic_load(&e->ready[p]) != gen)
            return -1; /* backward skipped a parameter */
    int64_t t0 = probe_now_ns();
    pthread_mutex_lock(&e->mu);
    /* The thread's own verdict, not the run's abort: a peer that fails
     * right after this step's last collective must not cost the step its
     * unpacking. An abort ends the thread's collectives (every backend
     * checks it), so the wait is bounded. */
    while (atomic_load(&e->finished) != gen && atomic_load(&e->rc) == 0) {
        /* wake now and then: a failure sets rc without a signal */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    int done = atomic_load(&e->finished) == gen;
    pthread_mutex_unlock(&e->mu);
    if (main_ring) {
        uint32_t step = e->step ? atomic_load_explicit(e->step, memory_order_relaxed) : 0;
        probe_span(main_ring, LANE_MAIN, CAT_WAIT, step, -1, t0, probe_now_ns(), NULL);
    }
    if (atomic_load(&e->rc) != 0)
        return atomic_load(&e->rc);
    return done ? 0 : COMM_ABORTED;
}

void hvd_destroy(struct hvd_engine *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->quit, 1);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
    }
    free(e->flags);
    free(e->done);
    free((void *)e->ready);
    if (e->dev.release) {
        if (e->fusion)
            e->dev.release(e->dev.ctx, e->fusion);
        if (e->dflags)
            e->dev.release(e->dev.ctx, e->dflags);
    } else {
        free(e->fusion);
    }
    free(e->order);
    grad_wire_release(&e->w16, e->half);
    free(e);
}
