/* comm_hier.c - the hierarchical communicator (--ranks-per-process T under
 * mpirun): T rank threads in each of P processes, W = P*T ranks, global
 * rank p*T + t. Inside a process the ranks meet over the shm backend; its
 * rank 0 (the leader) carries the process's share between processes over
 * a second communicator (MPI). Each collective is a local step, the
 * leaders' step, and a local step back:
 *
 *   allreduce    local reduce to the leader, leaders' allreduce, local
 *                broadcast (fp16, bf16: a local 16-bit allreduce, the leaders'
 *                16-bit allreduce, the leader's halves broadcast as floats);
 *   allgather    local gather into the process's block, leaders' allgather
 *                of blocks, local broadcast of the whole;
 *   broadcast    in the root's process from the root to all (its leader
 *                then holds it), leaders' broadcast, local broadcast in
 *                the other processes;
 *   barrier      local, leaders', local;
 *   the rest     reduce_scatter, reduce, gather and scatter are made of
 *                those over a scratch buffer: they move more than they
 *                must, and are only what the strategies call rarely.
 *
 * Sums run with RED_SUM throughout and RED_AVG scales once, by 1/W, at the
 * end, so a result is the same whatever P and T. Spans: the outer call is
 * one comm span with this call's sequence number; the parts are bound to
 * the same ring as inner communicators (comm.h), so their waits show
 * inside it, and their bytes and waits add up to the call's.
 *
 * Send and recv reach a rank of the same process only (model and
 * pipeline parallelism across processes are refused up front, run.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "half.h"

struct hier {
    struct comm *local; /* over the process's T ranks; this rank is local->rank */
    struct comm *inter; /* over the P leaders; NULL on a rank that is not one */
    int proc, per;      /* this process, and its ranks (local->world) */
    float *scratch;
    size_t cap; /* floats */
};

#define H(c) ((struct hier *)(c)->impl)

static float *scratch(struct comm *c, size_t n)
{
    struct hier *h = H(c);
    if (n <= h->cap)
        return h->scratch;
    float *p = realloc(h->scratch, (n ? n : 1) * sizeof(float));
    if (!p) {
        snprintf(c->err, sizeof(c->err), "out of memory for %zu floats of scratch", n);
        return NULL;
    }
    h->scratch = p;
    h->cap = n;
    return p;
}

/* The parts see what the outer call sees: its ring, step, tag, sequence
 * number, stop flag and timeout. */
static void bind_part(struct comm *c, struct comm *part, uint32_t seq)
{
    part->probe = c->probe;
    part->lane = c->lane;
    part->step = c->step;
    part->tag = c->tag;
    part->seq = seq;
    part->abort = c->abort;
    part->timeout_ns = c->timeout_ns;
    part->inner = 1;
}

/* The outer call: the parts' bytes and waits during it are its own. */
struct hcall {
    struct comm_call call;
    struct comm_stats l0, i0;
};

static void begin(struct comm *c, struct hcall *hc, int kind, uint64_t size)
{
    struct hier *h = H(c);
    comm_call_begin(c, &hc->call, kind, size);
    bind_part(c, h->local, hc->call.seq);
    hc->l0 = h->local->stats;
    hc->i0 = (struct comm_stats){0};
    if (h->inter) {
        bind_part(c, h->inter, hc->call.seq);
        hc->i0 = h->inter->stats;
    }
}

static int end(struct comm *c, struct hcall *hc, int rc)
{
    struct hier *h = H(c);
    struct comm_stats l = h->local->stats, i = h->inter ? h->inter->stats : (struct comm_stats){0};
    hc->call.tx = (l.bytes_tx - hc->l0.bytes_tx) + (i.bytes_tx - hc->i0.bytes_tx);
    hc->call.rx = (l.bytes_rx - hc->l0.bytes_rx) + (i.bytes_rx - hc->i0.bytes_rx);
    hc->call.wait_ns = (l.wait_ns - hc->l0.wait_ns) + (i.wait_ns - hc->i0.wait_ns);
    comm_call_end(c, &hc->call);
    return rc;
}

/* A part's failure, under the outer call's name. */
static int part_rc(struct comm *c, struct comm *part, int rc, const char *what)
{
    if (rc == -1)
        snprintf(c->err, sizeof(c->err), "%s (%s): %.200s", what,
                 part == H(c)->local ? "in the process" : "between processes", part->err);
    return rc;
}

/* Sum over all ranks into buf on every rank (RED_SUM). */
static int sum_all(struct comm *c, float *buf, size_t n)
{
    struct hier *h = H(c);
    int rc = h->local->ops->reduce(h->local, buf, buf, n, RED_SUM, 0);
    if (rc)
        return part_rc(c, h->local, rc, "allreduce");
    if (h->inter && (rc = h->inter->ops->allreduce(h->inter, buf, n, RED_SUM)) != 0)
        return part_rc(c, h->inter, rc, "allreduce");
    rc = h->local->ops->broadcast(h->local, buf, n, 0);
    return part_rc(c, h->local, rc, "allreduce");
}

/* in[n] of every rank into out[n * W] on every rank, in rank order. */
static int gather_all(struct comm *c, const float *in, float *out, size_t n)
{
    struct hier *h = H(c);
    size_t block = n * (size_t)h->per;
    int rc = h->local->ops->gather(h->local, in, out + (size_t)h->proc * block, n, 0);
    if (rc)
        return part_rc(c, h->local, rc, "allgather");
    if (h->inter && (rc = h->inter->ops->allgather(h->inter, out + (size_t)h->proc * block, out, block)) != 0)
        return part_rc(c, h->inter, rc, "allgather");
    rc = h->local->ops->broadcast(h->local, out, n * (size_t)c->world, 0);
    return part_rc(c, h->local, rc, "allgather");
}

static int bcast_from(struct comm *c, float *buf, size_t n, int root)
{
    struct hier *h = H(c);
    int root_proc = root / h->per, rc = 0;
    if (h->proc == root_proc && (rc = h->local->ops->broadcast(h->local, buf, n, root % h->per)) != 0)
        return part_rc(c, h->local, rc, "broadcast");
    if (h->inter && (rc = h->inter->ops->broadcast(h->inter, buf, n, root_proc)) != 0)
        return part_rc(c, h->inter, rc, "broadcast");
    if (h->proc != root_proc)
        rc = h->local->ops->broadcast(h->local, buf, n, 0);
    return part_rc(c, h->local, rc, "broadcast");
}

/* in[n] summed over every rank into the scratch buffer (NULL: *rc says
 * why). */
static float *sum_copy(struct comm *c, const float *in, size_t n, int *rc)
{
    float *s = scratch(c, n);
    *rc = s ? sum_all(c, memcpy(s, in, n * sizeof(float)), n) : -1;
    return *rc == 0 ? s : NULL;
}

static void average(struct comm *c, float *x, size_t n, enum red_op op)
{
    if (op == RED_AVG)
        comm_scale(x, n, 1.0f / (float)c->world);
}

static int h_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    struct hcall hc;
    begin(c, &hc, COLL_ALLREDUCE, n * sizeof(float));
    int rc = sum_all(c, buf, n);
    if (rc == 0)
        average(c, buf, n, op);
    return end(c, &hc, rc);
}

static int h_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    struct hier *h = H(c);
    struct hcall hc;
    begin(c, &hc, COLL_ALLREDUCE, n * sizeof(uint16_t));
    size_t words = (n + 1) / 2; /* the halves, packed into floats' bytes for the broadcast */
    float *packed = scratch(c, words);
    int rc = packed ? 0 : -1;
    const char *what = fmt == W16_BF16 ? "allreduce (bf16)" : "allreduce (fp16)";
    if (rc == 0)
        rc = part_rc(c, h->local, h->local->ops->allreduce_16(h->local, buf, n, fmt, RED_SUM), what);
    if (rc == 0 && h->inter)
        rc = part_rc(c, h->inter, h->inter->ops->allreduce_16(h->inter, buf, n, fmt, RED_SUM), what);
    if (rc == 0) {
        if (words)
            packed[words - 1] = 0; /* (an odd count's last pad) */
        memcpy(packed, buf, n * sizeof(uint16_t));
        rc = part_rc(c, h->local, h->local->ops->broadcast(h->local, packed, words, 0), what);
    }
    if (rc == 0) {
        memcpy(buf, packed, n * sizeof(uint16_t));
        if (op == RED_AVG)
            w16_scale(fmt, buf, n, 1.0f / (float)c->world);
    }
    return end(c, &hc, rc);
}

static int h_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    struct hcall hc;
    size_t all = n * (size_t)c->world;
    begin(c, &hc, COLL_REDUCE_SCATTER, all * sizeof(float));
    int rc;
    const float *s = sum_copy(c, in, all, &rc);
    if (s) {
        memcpy(out, s + (size_t)c->rank * n, n * sizeof(float));
        average(c, out, n, op);
    }
    return end(c, &hc, rc);
}

static int h_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    struct hcall hc;
    begin(c, &hc, COLL_ALLGATHER, n * (size_t)c->world * sizeof(float));
    return end(c, &hc, gather_all(c, in, out, n));
}

static int h_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    struct hcall hc;
    begin(c, &hc, COLL_BROADCAST, n * sizeof(float));
    return end(c, &hc, bcast_from(c, buf, n, root));
}

static int h_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    struct hcall hc;
    begin(c, &hc, COLL_REDUCE, n * sizeof(float));
    int rc;
    const float *s = sum_copy(c, in, n, &rc);
    if (s && c->rank == root) {
        memcpy(out, s, n * sizeof(float));
        average(c, out, n, op);
    }
    return end(c, &hc, rc);
}

static int h_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct hcall hc;
    size_t all = n * (size_t)c->world;
    begin(c, &hc, COLL_GATHER, all * sizeof(float));
    float *s = scratch(c, all);
    int rc = s ? gather_all(c, in, s, n) : -1;
    if (rc == 0 && c->rank == root)
        memcpy(out, s, all * sizeof(float));
    return end(c, &hc, rc);
}

static int h_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct hcall hc;
    size_t all = n * (size_t)c->world;
    begin(c, &hc, COLL_SCATTER, all * sizeof(float));
    float *s = scratch(c, all);
    int rc = s ? 0 : -1;
    if (rc == 0 && c->rank == root)
        memcpy(s, in, all * sizeof(float));
    if (rc == 0)
        rc = bcast_from(c, s, all, root);
    if (rc == 0)
        memcpy(out, s + (size_t)c->rank * n, n * sizeof(float));
    return end(c, &hc, rc);
}

static int h_barrier(struct comm *c)
{
    struct hier *h = H(c);
    struct hcall hc;
    begin(c, &hc, COLL_BARRIER, 0);
    int rc = part_rc(c, h->local, h->local->ops->barrier(h->local), "barrier");
    if (rc == 0 && h->inter)
        rc = part_rc(c, h->inter, h->inter->ops->barrier(h->inter), "barrier");
    if (rc == 0)
        rc = part_rc(c, h->local, h->local->ops->barrier(h->local), "barrier");
    return end(c, &hc, rc);
}

/* A peer in this process, as the local communicator numbers it; else -1
 * with c->err set. */
static int local_peer(struct comm *c, int peer, const char *what)
{
    struct hier *h = H(c);
    if (comm_check_peer(c, peer, what) != 0)
        return -1;
    if (peer / h->per != h->proc) {
        snprintf(c->err, sizeof(c->err),
                 "%s rank %d: in another process (--ranks-per-process joins processes for "
                 "collectives only)",
                 what, peer);
        return -1;
    }
    return peer % h->per;
}

static int h_send(struct comm *c, const float *buf, size_t n, int peer)
{
    struct hier *h = H(c);
    int lp = local_peer(c, peer, "send to");
    if (lp < 0)
        return -1;
    struct hcall hc;
    begin(c, &hc, COMM_P2P, n * sizeof(float));
    return end(c, &hc, part_rc(c, h->local, h->local->ops->send(h->local, buf, n, lp), "send"));
}

static int h_recv(struct comm *c, float *buf, size_t n, int peer)
{
    struct hier *h = H(c);
    int lp = local_peer(c, peer, "recv from");
    if (lp < 0)
        return -1;
    struct hcall hc;
    begin(c, &hc, COMM_P2P, n * sizeof(float));
    return end(c, &hc, part_rc(c, h->local, h->local->ops->recv(h->local, buf, n, lp), "recv"));
}

static void h_destroy(struct comm *c)
{
    if (!c)
        return;
    struct hier *h = H(c);
    h->local->ops->destroy(h->local);
    if (h->inter)
        h->inter->ops->destroy(h->inter);
    free(h->scratch);
    free(h);
    free(c);
}

static const struct comm_ops hier_ops = {
    .name = "hier",
    .allreduce = h_allreduce,
    .allreduce_16 = h_allreduce_16,
    .reduce_scatter = h_reduce_scatter,
    .allgather = h_allgather,
    .broadcast = h_broadcast,
    .reduce = h_reduce,
    .gather = h_gather,
    .scatter = h_scatter,
    .barrier = h_barrier,
    .send = h_send,
    .recv = h_recv,
    .destroy = h_destroy,
};

struct comm *comm_hier_create(struct comm *local, struct comm *inter, int proc, int procs)
{
    int fits =
        local && (local->rank == 0) == (inter != NULL) && (!inter || (inter->rank == proc && inter->world == procs));
    struct comm *c = fits ? calloc(1, sizeof(*c)) : NULL;
    struct hier *h = c ? calloc(1, sizeof(*h)) : NULL;
    if (!h) {
        free(c);
        if (local)
            local->ops->destroy(local);
        if (inter)
            inter->ops->destroy(inter);
        return NULL;
    }
    h->local = local;
    h->inter = inter;
    h->proc = proc;
    h->per = local->world;
    c->ops = &hier_ops;
    c->rank = proc * local->world + local->rank;
    c->world = procs * local->world;
    c->algo = local->algo;
    c->abort = local->abort;
    c->impl = h;
    return c;
}
