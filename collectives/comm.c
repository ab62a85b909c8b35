/* comm.c - what every backend shares: binding to a probe ring, call
 * begin/end with sequence numbers and spans, the error context, the
 * broken communicator of --inject-fault comm-error, and whether this build
 * has the gloo backend. */
#include "comm.h"
#include "comm_gloo.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void comm_bind(struct comm *c, struct spsc_ring *ring, int lane, const _Atomic uint32_t *step)
{
    c->probe = ring;
    c->lane = lane;
    c->step = step;
}

void comm_set_group(struct comm *c, int group)
{
    c->seq = SPAN_SEQ_GROUP | ((uint32_t)group & 63u) << 24;
}

const char *comm_gloo_unavailable(void)
{
#ifdef DDPTOP_HAVE_GLOO
    return NULL;
#else
    return "this ddptop was built without gloo (install Debian's libgloo-dev and rebuild)";
#endif
}

void comm_scale(float *x, size_t n, float f)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= f;
}

int comm_context(struct comm *c, int rc, const char *fmt, ...)
{
    if (rc != -1)
        return rc; /* success, or an abort: nothing to explain */
    char ctx[128], old[sizeof(c->err)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    va_end(ap);
    memcpy(old, c->err, sizeof(old));
    if (old[0])
        snprintf(c->err, sizeof(c->err), "%.60s: %.190s", ctx, old);
    else
        snprintf(c->err, sizeof(c->err), "%.120s failed", ctx);
    return rc;
}

int comm_check_peer(struct comm *c, int peer, const char *what)
{
    if (peer >= 0 && peer < c->world && peer != c->rank)
        return 0;
    snprintf(c->err, sizeof(c->err), "%s rank %d: not a peer of rank %d of %d", what, peer, c->rank, c->world);
    return -1;
}

/* ---- a broken communicator (comm_break) ---- */
static int broken(struct comm *c)
{
    snprintf(c->err, sizeof(c->err), "%s", c->why_broken);
    return -1;
}

static int b_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    return broken(c);
}

static int b_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    return broken(c);
}

static int b_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    return broken(c);
}

static int b_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    return broken(c);
}

static int b_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    return broken(c);
}

static int b_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    return broken(c);
}

static int b_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    return broken(c);
}

static int b_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    return broken(c);
}

static int b_barrier(struct comm *c)
{
    return broken(c);
}

static int b_send(struct comm *c, const float *buf, size_t n, int peer)
{
    return broken(c);
}

static int b_recv(struct comm *c, float *buf, size_t n, int peer)
{
    return broken(c);
}

static void b_destroy(struct comm *c)
{
    c->ops = c->healthy;
    c->ops->destroy(c);
}

static const struct comm_ops broken_ops = {
    .name = "broken",
    .allreduce = b_allreduce,
    .allreduce_16 = b_allreduce_16,
    .reduce_scatter = b_reduce_scatter,
    .allgather = b_allgather,
    .broadcast = b_broadcast,
    .reduce = b_reduce,
    .gather = b_gather,
    .scatter = b_scatter,
    .barrier = b_barrier,
    .send = b_send,
    .recv = b_recv,
    .destroy = b_destroy,
};

void comm_break(struct comm *c, const char *why)
{
    if (c->ops == &broken_ops)
        return;
    c->healthy = c->ops;
    c->ops = &broken_ops;
    snprintf(c->why_broken, sizeof(c->why_broken), "%s", why);
}

/* Waits shorter than this are not recorded as spans of their own. */
#define WAIT_SPAN_MIN_NS 2000

static uint32_t cur_step(const struct comm *c)
{
    return c->step ? atomic_load_explicit(c->step, memory_order_relaxed) : 0;
}

void comm_call_begin(struct comm *c, struct comm_call *call, int kind, uint64_t size_bytes)
{
    call->size = size_bytes;
    call->t0_ns = probe_now_ns();
    call->wait_ns = 0;
    call->tx = call->rx = 0;
    call->kind = kind;
    /* a send or recv involves two ranks: a number taken there would put
     * this rank's later collectives out of step with the other ranks';
     * an inner communicator's calls carry the outer call's number */
    call->seq = kind == COMM_P2P ? 0 : c->inner ? c->seq : c->seq++;
}

void comm_call_wait(struct comm *c, struct comm_call *call, int64_t t0_ns, int64_t t1_ns)
{
    int64_t d = t1_ns - t0_ns;
    if (d <= 0)
        return;
    call->wait_ns += d;
    if (d < WAIT_SPAN_MIN_NS || !c->probe)
        return;
    probe_span(c->probe, c->lane, CAT_WAIT, cur_step(c), c->tag, t0_ns, t1_ns,
               &(struct span_coll){.seq = call->seq, .kind = (uint8_t)call->kind});
}

void comm_call_end(struct comm *c, struct comm_call *call)
{
    int64_t t1 = probe_now_ns();
    c->stats.calls++;
    c->stats.bytes_tx += call->tx;
    c->stats.bytes_rx += call->rx;
    c->stats.total_ns += t1 - call->t0_ns;
    c->stats.wait_ns += call->wait_ns;
    if (c->probe && !c->inner) {
        struct span_coll sc = {.bytes = call->tx,
                               .bytes_rx = call->rx,
                               .size = call->size,
                               .seq = call->seq,
                               .kind = (uint8_t)call->kind,
                               .outer = 1};
        probe_span(c->probe, c->lane, CAT_COMM, cur_step(c), c->tag, call->t0_ns, t1, &sc);
    }
}
