/* comm_gloo.c - the communicator over gloo (--comm gloo): every collective
 * is gloo's own (gloo_shim.h), on the caller's host buffers; 16-bit
 * values (--grad-compress) travel as 16 bits and are summed in float by
 * half.c, as in the shm and MPI backends; RED_AVG divides afterwards.
 *
 * gloo does not say how long a call waited for a peer and how long it moved
 * bytes, so a collective is one comm span with no wait spans inside it (as
 * over MPI); the transfer/sync split (metrics.c: a call's shortest duration
 * over the ranks is its transfer) still names the rank that waited. A send
 * that waits for the pair's previous message to be taken records that
 * wait. Bytes sent and received are counted as ddptop's own ring and rooted
 * algorithms move them, so that the Traffic pane reads the same over every
 * backend.
 *
 * A wait inside gloo cannot be interrupted: it ends at gloo's timeout, or
 * when the peer's communicator is destroyed (its connections close). A
 * stop request (abort) fails every later call at once. After a call that
 * gloo failed its connections are in an unknown state, so the communicator
 * is broken from then on (comm_break): every call fails, naming the first
 * failure. */
#include "comm_gloo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

struct gloo_comm {
    struct gloo_shim *g;
    int algo;       /* enum gloo_algo */
    float *scratch; /* reduce-scatter's working copy */
    size_t scratch_n;
    float **stage;   /* [world]: send's copy of the message in flight to each peer */
    size_t *stage_n; /* [world]: their capacities in floats */
    char *in_flight; /* [world]: a send to that peer not yet waited for */
};

#define G(c) ((struct gloo_comm *)(c)->impl)

static const char *const algo_names[GLOO_ALGO_COUNT] = {
    [GLOO_ALGO_RING] = "ring",
    [GLOO_ALGO_RING_CHUNKED] = "ring-chunked",
    [GLOO_ALGO_HALVING_DOUBLING] = "halving-doubling",
    [GLOO_ALGO_BCUBE] = "bcube",
};

const char *comm_gloo_algo_name(int algo)
{
    return algo >= 0 && algo < GLOO_ALGO_COUNT ? algo_names[algo] : NULL;
}

int comm_gloo_algo_parse(const char *name)
{
    for (int a = 0; a < GLOO_ALGO_COUNT; a++)
        if (name && !strcmp(name, algo_names[a]))
            return a;
    return -1;
}

/* ---- calls: enter, the shim's call, then what its failure means ---- */

static int aborted(const struct comm *c)
{
    return c->abort && atomic_load(c->abort);
}

static int64_t timeout_ms(const struct comm *c)
{
    return c->timeout_ns > 0 ? (c->timeout_ns + 999999) / 1000000 : 0;
}

/* The tag of a collective: its sequence number, the same on every rank. */
static uint32_t tag_of(const struct comm_call *call)
{
    return call->seq;
}

/* rc of the shim's call about `what`, made in `call`: a failure goes into
 * c->err, naming the peer where the shim could tell it (unless `what`
 * names it already: named), and one of gloo's breaks the communicator. */
static int outcome_of(struct comm *c, const struct comm_call *call, int rc, const struct gloo_shim_error *e,
                      const char *what, int named)
{
    if (rc == 0)
        return 0;
    if (aborted(c)) {
        comm_break(c, "stopped while gloo waited on a peer");
        return COMM_ABORTED;
    }
    /* (17 bytes at most, "rank -2147483648": with 32 the timed-out line
     * below could be cut at c->err's 256 bytes, as -Wformat-truncation
     * says at -O0) */
    char peer[24] = "a peer";
    if (e->peer >= 0)
        snprintf(peer, sizeof(peer), "rank %d", e->peer);
    if (e->timed_out)
        snprintf(c->err, sizeof(c->err), "%.60s: timed out after %.3g s waiting for %s (gloo: %.120s)", what,
                 (double)(probe_now_ns() - call->t0_ns) / 1e9, peer, e->msg);
    else if (e->peer >= 0 && e->peer != named)
        snprintf(c->err, sizeof(c->err), "%.60s: %s: %.160s", what, peer, e->msg);
    else
        snprintf(c->err, sizeof(c->err), "%.60s: %.180s", what, e->msg);
    if (e->unusable) {
        char why[sizeof(c->why_broken)];
        snprintf(why, sizeof(why), "gloo's connections are unusable after: %.80s", c->err);
        comm_break(c, why);
    }
    return -1;
}

static int outcome(struct comm *c, const struct comm_call *call, int rc, const struct gloo_shim_error *e,
                   const char *what)
{
    return outcome_of(c, call, rc, e, what, -1);
}

static int enter(struct comm *c)
{
    return aborted(c) ? COMM_ABORTED : 0;
}

/* Bytes a rank moves each way in a ring over W ranks: S(W-1)/W per pass. */
static uint64_t ring_share(const struct comm *c, uint64_t bytes)
{
    return bytes * (uint64_t)(c->world - 1) / (uint64_t)c->world;
}

static int gl_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(float));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call, gloo_shim_allreduce(G(c)->g, G(c)->algo, buf, n, NULL, tag_of(&call), timeout_ms(c), &e),
                     &e, "allreduce");
    if (rc == 0) {
        call.tx = call.rx = 2 * ring_share(c, n * sizeof(float));
        if (op == RED_AVG)
            comm_scale(buf, n, 1.0f / (float)c->world);
    }
    comm_call_end(c, &call);
    return rc;
}

static gloo_add16_fn add16_of(int fmt)
{
    return fmt == W16_BF16 ? bf16_add : half_add;
}

static int gl_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(uint16_t));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call,
                     gloo_shim_allreduce(G(c)->g, G(c)->algo, buf, n, add16_of(fmt), tag_of(&call), timeout_ms(c), &e),
                     &e, fmt == W16_BF16 ? "allreduce (bf16)" : "allreduce (fp16)");
    if (rc == 0) {
        call.tx = call.rx = 2 * ring_share(c, n * sizeof(uint16_t));
        if (op == RED_AVG)
            w16_scale(fmt, buf, n, 1.0f / (float)c->world);
    }
    comm_call_end(c, &call);
    return rc;
}

/* gloo's reduce-scatter is not in its collectives' API: an allreduce of a
 * working copy, of which this rank keeps its slice (and moves, and counts,
 * an allreduce's bytes). */
static int gl_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    struct comm_call call;
    size_t N = n * (size_t)c->world;
    comm_call_begin(c, &call, COLL_REDUCE_SCATTER, N * sizeof(float));
    struct gloo_comm *gc = G(c);
    int rc = enter(c);
    if (rc == 0 && gc->scratch_n < N) {
        free(gc->scratch);
        gc->scratch = malloc(N * sizeof(float));
        gc->scratch_n = gc->scratch ? N : 0;
        if (!gc->scratch) {
            snprintf(c->err, sizeof(c->err), "reduce-scatter: out of memory for %zu floats", N);
            rc = -1;
        }
    }
    if (rc == 0) {
        struct gloo_shim_error e;
        if (N)
            memcpy(gc->scratch, in, N * sizeof(float));
        rc = outcome(c, &call,
                     gloo_shim_allreduce(gc->g, gc->algo, gc->scratch, N, NULL, tag_of(&call), timeout_ms(c), &e), &e,
                     "reduce-scatter");
    }
    if (rc == 0) {
        memcpy(out, gc->scratch + (size_t)c->rank * n, n * sizeof(float));
        if (op == RED_AVG)
            comm_scale(out, n, 1.0f / (float)c->world);
        call.tx = call.rx = 2 * ring_share(c, N * sizeof(float));
    }
    comm_call_end(c, &call);
    return rc;
}

static int gl_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLGATHER, n * (size_t)c->world * sizeof(float));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call, gloo_shim_allgather(G(c)->g, in, out, n, tag_of(&call), timeout_ms(c), &e), &e,
                     "allgather");
    if (rc == 0)
        call.tx = call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
    comm_call_end(c, &call);
    return rc;
}

static int gl_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BROADCAST, n * sizeof(float));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call, gloo_shim_broadcast(G(c)->g, buf, n, root, tag_of(&call), timeout_ms(c), &e), &e,
                     "broadcast");
    if (rc == 0 && c->rank == root)
        call.tx = (uint64_t)(c->world - 1) * n * sizeof(float);
    else if (rc == 0)
        call.rx = n * sizeof(float);
    comm_call_end(c, &call);
    return rc;
}

static int gl_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_REDUCE, n * sizeof(float));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call, gloo_shim_reduce(G(c)->g, in, out, n, root, tag_of(&call), timeout_ms(c), &e), &e,
                     "reduce");
    if (rc == 0 && c->rank == root) {
        call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
        if (op == RED_AVG)
            comm_scale(out, n, 1.0f / (float)c->world);
    } else if (rc == 0) {
        call.tx = n * sizeof(float);
    }
    comm_call_end(c, &call);
    return rc;
}

/* gather (kind COLL_GATHER) or scatter: n floats a rank; the root moves
 * the other ranks' shares, every other rank its own */
static int gl_rooted(struct comm *c, int kind, const float *in, float *out, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, kind, n * (size_t)c->world * sizeof(float));
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0) {
        int g = kind == COLL_GATHER ? gloo_shim_gather(G(c)->g, in, out, n, root, tag_of(&call), timeout_ms(c), &e)
                                    : gloo_shim_scatter(G(c)->g, in, out, n, root, tag_of(&call), timeout_ms(c), &e);
        rc = outcome(c, &call, g, &e, coll_name(kind));
    }
    uint64_t many = (uint64_t)(c->world - 1) * n * sizeof(float), one = n * sizeof(float);
    if (rc == 0 && (c->rank == root) == (kind == COLL_GATHER))
        call.rx = c->rank == root ? many : one;
    else if (rc == 0)
        call.tx = c->rank == root ? many : one;
    comm_call_end(c, &call);
    return rc;
}

static int gl_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    return gl_rooted(c, COLL_GATHER, in, out, n, root);
}

static int gl_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    return gl_rooted(c, COLL_SCATTER, in, out, n, root);
}

static int gl_barrier(struct comm *c)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BARRIER, 0);
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome(c, &call, gloo_shim_barrier(G(c)->g, tag_of(&call), timeout_ms(c), &e), &e, "barrier");
    comm_call_end(c, &call);
    return rc;
}

/* A send copies the data aside and returns once the pair's previous send
 * has left that copy: the same promise as the shm mailbox, so two ranks may
 * both send and then both receive. */
static int gl_send(struct comm *c, const float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "send to") != 0)
        return -1;
    struct gloo_comm *gc = G(c);
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    char what[48];
    snprintf(what, sizeof(what), "send to rank %d", peer);
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0 && gc->in_flight[peer]) { /* blocked until the peer takes it */
        int64_t t0 = probe_now_ns();
        rc = outcome_of(c, &call, gloo_shim_send_wait(gc->g, peer, timeout_ms(c), &e), &e, what, peer);
        comm_call_wait(c, &call, t0, probe_now_ns());
        gc->in_flight[peer] = 0;
    }
    if (rc == 0 && n > gc->stage_n[peer]) {
        free(gc->stage[peer]);
        gc->stage[peer] = malloc(n * sizeof(float));
        gc->stage_n[peer] = gc->stage[peer] ? n : 0;
        if (!gc->stage[peer]) {
            snprintf(c->err, sizeof(c->err), "%s: out of memory for %zu floats", what, n);
            rc = -1;
        }
    }
    if (rc == 0) {
        if (n)
            memcpy(gc->stage[peer], buf, n * sizeof(float));
        rc = outcome_of(c, &call, gloo_shim_send_post(gc->g, peer, gc->stage[peer], n * sizeof(float), &e), &e, what,
                        peer);
        gc->in_flight[peer] = 1; /* (a failed post leaves it to the shim's wait) */
        if (rc == 0)
            call.tx = n * sizeof(float);
    }
    comm_call_end(c, &call);
    return rc;
}

static int gl_recv(struct comm *c, float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "recv from") != 0)
        return -1;
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    char what[48];
    snprintf(what, sizeof(what), "recv from rank %d", peer);
    struct gloo_shim_error e;
    int rc = enter(c);
    if (rc == 0)
        rc = outcome_of(c, &call, gloo_shim_recv(G(c)->g, peer, buf, n * sizeof(float), timeout_ms(c), &e), &e, what,
                        peer);
    if (rc == 0)
        call.rx = n * sizeof(float);
    comm_call_end(c, &call);
    return rc;
}

/* The C side of a communicator, its stages freed already (or never made). */
static void free_impl(struct gloo_comm *gc)
{
    if (!gc)
        return;
    free(gc->stage);
    free(gc->stage_n);
    free(gc->in_flight);
    free(gc->scratch);
    free(gc);
}

static void gl_destroy(struct comm *c)
{
    if (!c)
        return;
    struct gloo_comm *gc = G(c);
    /* the sends still in flight read their copies: let them finish (a
     * broken communicator's peers may be gone, and are not waited for) */
    for (int p = 0; p < c->world && !c->healthy; p++) {
        struct gloo_shim_error e;
        if (gc->in_flight[p])
            gloo_shim_send_wait(gc->g, p, timeout_ms(c), &e);
    }
    gloo_shim_destroy(gc->g);
    for (int p = 0; p < c->world; p++)
        free(gc->stage[p]);
    free_impl(gc);
    free(c);
}

static const struct comm_ops gloo_ops = {
    .name = "gloo",
    .allreduce = gl_allreduce,
    .allreduce_16 = gl_allreduce_16,
    .reduce_scatter = gl_reduce_scatter,
    .allgather = gl_allgather,
    .broadcast = gl_broadcast,
    .reduce = gl_reduce,
    .gather = gl_gather,
    .scatter = gl_scatter,
    .barrier = gl_barrier,
    .send = gl_send,
    .recv = gl_recv,
    .destroy = gl_destroy,
};

const char *comm_gloo_algo_of(const struct comm *c)
{
    const struct comm_ops *ops = c->healthy ? c->healthy : c->ops;
    return ops == &gloo_ops ? comm_gloo_algo_name(G(c)->algo) : NULL;
}

/* gloo_shim_spec's stopped: the run's abort, raised */
static int abort_raised(void *arg)
{
    return atomic_load((const volatile _Atomic int *)arg) != 0;
}

struct comm *comm_gloo_create(const struct comm_gloo_params *p, char *err, size_t errlen)
{
    if (!comm_gloo_algo_name(p->algo)) {
        snprintf(err, errlen, "gloo: no allreduce algorithm %d", p->algo);
        return NULL;
    }
    struct comm *c = calloc(1, sizeof(*c));
    struct gloo_comm *gc = calloc(1, sizeof(*gc));
    if (c && gc && p->world > 0) {
        gc->stage = calloc((size_t)p->world, sizeof(*gc->stage));
        gc->stage_n = calloc((size_t)p->world, sizeof(*gc->stage_n));
        gc->in_flight = calloc((size_t)p->world, 1);
    }
    if (!c || !gc || !gc->stage || !gc->stage_n || !gc->in_flight) {
        snprintf(err, errlen, "cannot create a gloo communicator: out of memory");
        free_impl(gc);
        free(c);
        return NULL;
    }
    double timeout_s = p->timeout_s > 0 ? p->timeout_s : 300.0;
    struct gloo_shim_spec spec = {
        .rank = p->rank,
        .world = p->world,
        .store = p->store,
        .prefix = p->prefix,
        .allgather = p->allgather,
        .allgather_arg = p->allgather_arg,
        .host = p->host,
        .iface = p->iface,
        .timeout_ms = (int64_t)(timeout_s * 1e3 + 0.5) > 0 ? (int64_t)(timeout_s * 1e3 + 0.5) : 1,
        .stopped = p->abort ? abort_raised : NULL,
        .stopped_arg = (void *)p->abort,
    };
    struct gloo_shim_error e;
    gc->g = gloo_shim_create(&spec, &e);
    if (!gc->g) {
        snprintf(err, errlen, "gloo: %s", e.msg);
        free_impl(gc);
        free(c);
        return NULL;
    }
    gc->algo = p->algo;
    c->ops = &gloo_ops;
    c->rank = p->rank;
    c->world = p->world;
    c->algo = ALGO_RING; /* none of gloo's algorithms goes through a root */
    c->tag = -1;
    c->abort = p->abort;
    c->timeout_ns = (int64_t)(timeout_s * 1e9);
    c->impl = gc;
    return c;
}
