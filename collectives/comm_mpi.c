/* comm_mpi.c - the communicator over MPI (--comm mpi): every collective is
 * MPI's own non-blocking one, waited for by polling, so that a stop request
 * (abort) and --comm-timeout reach a rank blocked on a peer, as they do in
 * the shm backend.
 *
 * MPI does not say how long a call waited for a peer and how long it moved
 * bytes, so a call is one comm span with no wait spans inside it; the
 * transfer/sync split (metrics.c: a call's shortest duration over the ranks
 * is its transfer) still names the rank that waited. Bytes sent and
 * received are counted as ddptop's own ring and rooted algorithms move
 * them, so that the Traffic pane reads the same over either backend.
 *
 * A wait given up (abort, timeout) leaves MPI's request in flight, and MPI
 * may still write into the caller's buffer: the communicator is broken from
 * then on (every call fails) and is not freed, and the process must leave
 * through MPI_Abort (comm_mpi_tainted). */
#include "comm_mpi.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "probe.h"

struct mpi_peer {
    MPI_Request req; /* the send in flight to this peer, or MPI_REQUEST_NULL */
    void *stage;     /* its copy of the data */
    size_t cap;      /* floats stage holds */
};

struct mpi_comm {
    MPI_Comm mc;
    MPI_Op half_sum, bf16_sum;
    struct mpi_peer *peer; /* [world] */
};

static _Atomic int tainted;

int comm_mpi_tainted(void)
{
    return atomic_load(&tainted);
}

#define M(c) ((struct mpi_comm *)(c)->impl)

static int mpi_failed(struct comm *c, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "error %d", rc);
    snprintf(c->err, sizeof(c->err), "%.60s: %.180s", what, s);
    return -1;
}

/* Polls req to completion. Spins briefly (a small message's answer is
 * microseconds away), then yields the core, then naps: ranks may share
 * cores, and a peer needs one to answer. */
static int wait_req(struct comm *c, MPI_Request *req, const char *what)
{
    int64_t t0 = probe_now_ns();
    for (long polls = 0;; polls++) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_failed(c, rc, what);
        if (done)
            return 0;
        int64_t waited = probe_now_ns() - t0;
        if (c->abort && atomic_load(c->abort)) {
            atomic_store(&tainted, 1);
            comm_break(c, "an earlier call was abandoned while MPI still held its buffers");
            return COMM_ABORTED;
        }
        if (c->timeout_ns > 0 && waited > c->timeout_ns) {
            atomic_store(&tainted, 1);
            snprintf(c->err, sizeof(c->err), "timed out after %.3g s waiting for a peer", (double)waited / 1e9);
            return -1;
        }
        if (waited < 20 * 1000)
            continue;
        if (waited < 1000 * 1000)
            sched_yield();
        else
            probe_nap_us(50);
    }
}

/* One collective: begin, start (rc of the MPI_I* call), wait, end. */
static int finish(struct comm *c, struct comm_call *call, int rc, MPI_Request *req, const char *what)
{
    if (rc != MPI_SUCCESS)
        rc = mpi_failed(c, rc, what);
    else
        rc = wait_req(c, req, what);
    comm_call_end(c, call);
    return rc;
}

/* Bytes a rank moves each way in a ring over W ranks: S(W-1)/W per pass. */
static uint64_t ring_share(const struct comm *c, uint64_t bytes)
{
    return bytes * (uint64_t)(c->world - 1) / (uint64_t)c->world;
}

static int m_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(float));
    call.tx = call.rx = 2 * ring_share(c, n * sizeof(float));
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, M(c)->mc, &req);
    rc = finish(c, &call, rc, &req, "allreduce");
    if (rc == 0 && op == RED_AVG)
        comm_scale(buf, n, 1.0f / (float)c->world);
    return rc;
}

/* MPI's reductions over 16-bit values: summed in float, as the shm ring
 * does (half.h). */
static void half_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    half_add(inout, in, (size_t)*len);
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    bf16_add(inout, in, (size_t)*len);
}

static int m_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(uint16_t));
    call.tx = call.rx = 2 * ring_share(c, n * sizeof(uint16_t));
    MPI_Request req;
    MPI_Op sum = fmt == W16_BF16 ? M(c)->bf16_sum : M(c)->half_sum;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_UINT16_T, sum, M(c)->mc, &req);
    rc = finish(c, &call, rc, &req, fmt == W16_BF16 ? "allreduce (bf16)" : "allreduce (fp16)");
    if (rc == 0 && op == RED_AVG)
        w16_scale(fmt, buf, n, 1.0f / (float)c->world);
    return rc;
}

static int m_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_REDUCE_SCATTER, n * (size_t)c->world * sizeof(float));
    call.tx = call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
    MPI_Request req;
    int rc = MPI_Ireduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, M(c)->mc, &req);
    rc = finish(c, &call, rc, &req, "reduce-scatter");
    if (rc == 0 && op == RED_AVG)
        comm_scale(out, n, 1.0f / (float)c->world);
    return rc;
}

static int m_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLGATHER, n * (size_t)c->world * sizeof(float));
    call.tx = call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
    MPI_Request req;
    const void *src = in == out + (size_t)c->rank * n ? MPI_IN_PLACE : in;
    int rc = MPI_Iallgather(src, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, M(c)->mc, &req);
    return finish(c, &call, rc, &req, "allgather");
}

static int m_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BROADCAST, n * sizeof(float));
    if (c->rank == root)
        call.tx = (uint64_t)(c->world - 1) * n * sizeof(float);
    else
        call.rx = n * sizeof(float);
    MPI_Request req;
    int rc = MPI_Ibcast(buf, (int)n, MPI_FLOAT, root, M(c)->mc, &req);
    return finish(c, &call, rc, &req, "broadcast");
}

static int m_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_REDUCE, n * sizeof(float));
    if (c->rank == root)
        call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
    else
        call.tx = n * sizeof(float);
    MPI_Request req;
    /* MPI wants the root's in-place reduction spelt MPI_IN_PLACE */
    const void *src = c->rank == root && in == out ? MPI_IN_PLACE : in;
    int rc = MPI_Ireduce(src, c->rank == root ? out : NULL, (int)n, MPI_FLOAT, MPI_SUM, root, M(c)->mc, &req);
    rc = finish(c, &call, rc, &req, "reduce");
    if (rc == 0 && op == RED_AVG && c->rank == root)
        comm_scale(out, n, 1.0f / (float)c->world);
    return rc;
}

static int m_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_GATHER, n * (size_t)c->world * sizeof(float));
    if (c->rank == root)
        call.rx = (uint64_t)(c->world - 1) * n * sizeof(float);
    else
        call.tx = n * sizeof(float);
    MPI_Request req;
    const void *src = c->rank == root && in == out + (size_t)root * n ? MPI_IN_PLACE : in;
    int rc = MPI_Igather(src, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, root, M(c)->mc, &req);
    return finish(c, &call, rc, &req, "gather");
}

static int m_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_SCATTER, n * (size_t)c->world * sizeof(float));
    if (c->rank == root)
        call.tx = (uint64_t)(c->world - 1) * n * sizeof(float);
    else
        call.rx = n * sizeof(float);
    MPI_Request req;
    void *dst = c->rank == root && out == in + (size_t)root * n ? MPI_IN_PLACE : out;
    int rc = MPI_Iscatter(in, (int)n, MPI_FLOAT, dst, (int)n, MPI_FLOAT, root, M(c)->mc, &req);
    return finish(c, &call, rc, &req, "scatter");
}

static int m_barrier(struct comm *c)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BARRIER, 0);
    MPI_Request req;
    int rc = MPI_Ibarrier(M(c)->mc, &req);
    return finish(c, &call, rc, &req, "barrier");
}

/* A send copies the data aside and returns once the pair's previous send
 * has left that copy: the same promise as the shm mailbox, so two ranks may
 * both send and then both receive. */
static int m_send(struct comm *c, const float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "send to") != 0)
        return -1;
    struct mpi_peer *p = &M(c)->peer[peer];
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    char what[48];
    snprintf(what, sizeof(what), "send to rank %d", peer);
    int rc = p->req == MPI_REQUEST_NULL ? 0 : wait_req(c, &p->req, what);
    if (rc == 0 && n > p->cap) {
        free(p->stage);
        p->stage = malloc(n * sizeof(float));
        p->cap = p->stage ? n : 0;
        if (!p->stage) {
            snprintf(c->err, sizeof(c->err), "%s: out of memory for %zu floats", what, n);
            rc = -1;
        }
    }
    if (rc == 0) {
        if (n)
            memcpy(p->stage, buf, n * sizeof(float));
        rc = MPI_Isend(p->stage, (int)n, MPI_FLOAT, peer, 0, M(c)->mc, &p->req);
        rc = rc == MPI_SUCCESS ? 0 : mpi_failed(c, rc, what);
        if (rc == 0)
            call.tx = n * sizeof(float);
    }
    comm_call_end(c, &call);
    return rc;
}

static int m_recv(struct comm *c, float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "recv from") != 0)
        return -1;
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    char what[48];
    snprintf(what, sizeof(what), "recv from rank %d", peer);
    MPI_Request req;
    int rc = MPI_Irecv(buf, (int)n, MPI_FLOAT, peer, 0, M(c)->mc, &req);
    /* a longer message fails the wait (MPI_ERR_TRUNCATE); a shorter one is
     * caught by its count */
    rc = rc == MPI_SUCCESS ? wait_req(c, &req, what) : mpi_failed(c, rc, what);
    if (rc == 0)
        call.rx = n * sizeof(float);
    comm_call_end(c, &call);
    return rc;
}

static void m_destroy(struct comm *c)
{
    if (!c)
        return;
    struct mpi_comm *m = M(c);
    if (!comm_mpi_tainted()) {
        for (int i = 0; i < c->world; i++)
            if (m->peer[i].req != MPI_REQUEST_NULL)
                MPI_Wait(&m->peer[i].req, MPI_STATUS_IGNORE);
        MPI_Op_free(&m->half_sum);
        MPI_Op_free(&m->bf16_sum);
        MPI_Comm_free(&m->mc);
        for (int i = 0; i < c->world; i++)
            free(m->peer[i].stage);
        free(m->peer);
        free(m);
    } /* else MPI may still use the buffers: the process leaves through MPI_Abort */
    free(c);
}

static const struct comm_ops mpi_ops = {
    .name = "mpi",
    .allreduce = m_allreduce,
    .allreduce_16 = m_allreduce_16,
    .reduce_scatter = m_reduce_scatter,
    .allgather = m_allgather,
    .broadcast = m_broadcast,
    .reduce = m_reduce,
    .gather = m_gather,
    .scatter = m_scatter,
    .barrier = m_barrier,
    .send = m_send,
    .recv = m_recv,
    .destroy = m_destroy,
};

struct comm *comm_mpi_create(MPI_Comm over, char *err, size_t errlen)
{
    struct comm *c = calloc(1, sizeof(*c));
    struct mpi_comm *m = calloc(1, sizeof(*m));
    int rank = 0, world = 0;
    if (!c || !m || MPI_Comm_rank(over, &rank) != MPI_SUCCESS || MPI_Comm_size(over, &world) != MPI_SUCCESS ||
        !(m->peer = calloc((size_t)world, sizeof(*m->peer)))) {
        snprintf(err, errlen, "cannot create an MPI communicator: out of memory");
        free(c);
        free(m);
        return NULL;
    }
    int rc = MPI_Comm_dup(over, &m->mc);
    if (rc != MPI_SUCCESS) {
        mpi_failed(c, rc, "MPI_Comm_dup");
        snprintf(err, errlen, "cannot create an MPI communicator: %s", c->err);
        free(m->peer);
        free(c);
        free(m);
        return NULL;
    }
    for (int i = 0; i < world; i++)
        m->peer[i].req = MPI_REQUEST_NULL;
    /* failures come back as return codes, for the rank to name */
    MPI_Comm_set_errhandler(m->mc, MPI_ERRORS_RETURN);
    MPI_Op_create(half_sum_fn, 1, &m->half_sum);
    MPI_Op_create(bf16_sum_fn, 1, &m->bf16_sum);
    c->ops = &mpi_ops;
    c->rank = rank;
    c->world = world;
    c->impl = m;
    return c;
}
