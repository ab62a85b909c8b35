/* comm_shm.c - collectives among the rank threads of one process.
 *
 * Ranks share an address space, so a rank reads its peers' buffers directly;
 * nothing is copied into mailboxes. Synchronisation is one cache-line-padded
 * progress counter per rank, advanced with release stores and awaited with
 * acquire loads: counters only grow, and every rank advances its own through
 * the same sequence of "units" per call, so the same target means the same
 * point on every rank.
 *
 * ring (allreduce, reduce-scatter, allgather): the buffer is cut into one
 * chunk per rank and each chunk into slices; at each of the W-1 steps a rank
 * reduces (or copies) one chunk from its left neighbour, slice by slice, so
 * neighbours work in a pipeline. Every rank sends and receives 2(W-1)/W of
 * the buffer, whatever W is.
 * naive (and the rooted collectives): everything goes through the root, in
 * two phases: the root works on every peer's buffer, then every peer works
 * on the root's.
 *
 * send/recv: one mailbox per ordered pair of ranks, apart from the progress
 * counters (collectives' units stay in step on every rank whatever pairs
 * exchange). A send is eager: it waits until the pair's previous message was
 * taken, copies the data into the sender's staging buffer for that peer,
 * counts it in `sent` and returns, so that two stages can each send before
 * they receive (a pipeline's 1F1B does). The receiver copies out of the
 * staging buffer and counts the message in `taken`. One message per pair is
 * in flight, and the k-th send meets the k-th recv.
 *
 * Waiting spins briefly (a hand-off costs ~0.6 us), then yields for a while,
 * then sleeps on a futex on the peer's counter, because ranks and comm lanes
 * may outnumber cores and a spinning waiter would steal the core its peer
 * needs.
 */
#include <linux/futex.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "half.h"

#define SLICE_FLOATS (32 * 1024) /* 128 KB pipeline slices */
#define SPIN_ITERS 4000
#define YIELD_NS 50000 /* then sleep */

struct shm_slot {
    _Alignas(64) _Atomic uint64_t progress;
    _Atomic uint32_t waiters;              /* threads asleep on progress */
    _Alignas(64) const float *_Atomic src; /* this call's input, published at entry */
    float *_Atomic dst;                    /* this call's output */
};

/* Messages from one rank to another; each side's fields on their own line. */
struct shm_mailbox {
    _Alignas(64) _Atomic uint64_t sent; /* messages published (the sender) */
    _Atomic uint32_t sent_waiters;      /* threads asleep on sent */
    const float *buf;                   /* message `sent`, ordered by sent's release */
    size_t n;
    _Alignas(64) _Atomic uint64_t taken; /* messages received (the receiver) */
    _Atomic uint32_t taken_waiters;
    size_t want; /* the receiver's n: differs from n when neither side copied */
};

struct shm_world {
    int world;
    const volatile _Atomic int *abort;
    struct shm_slot *slots;
    struct shm_mailbox *boxes; /* [from * world + to] */
};

struct shm_comm {
    struct shm_world *w;
    struct shm_memops ops; /* how float buffers are copied and reduced */
    uint64_t base;         /* progress value at the start of the next call */
    float *scratch;        /* reduce-scatter working space, grown on demand */
    size_t scratch_n;
    float **stage;   /* [world]: send's copy of the message to each peer, grown on demand */
    size_t *stage_n; /* [world]: their lengths in floats */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

struct shm_world *shm_world_create(int world, const volatile _Atomic int *abort)
{
    struct shm_world *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->world = world;
    w->abort = abort;
    size_t nboxes = (size_t)world * (size_t)world;
    w->slots = aligned_alloc(64, sizeof(struct shm_slot) * (size_t)world);
    w->boxes = aligned_alloc(64, sizeof(struct shm_mailbox) * nboxes);
    if (!w->slots || !w->boxes) {
        shm_world_destroy(w);
        return NULL;
    }
    for (int i = 0; i < world; i++) {
        atomic_init(&w->slots[i].progress, 0);
        atomic_init(&w->slots[i].waiters, 0);
        atomic_init(&w->slots[i].src, NULL);
        atomic_init(&w->slots[i].dst, NULL);
    }
    for (size_t i = 0; i < nboxes; i++) {
        struct shm_mailbox *b = &w->boxes[i];
        atomic_init(&b->sent, 0);
        atomic_init(&b->sent_waiters, 0);
        atomic_init(&b->taken, 0);
        atomic_init(&b->taken_waiters, 0);
        b->buf = NULL;
        b->n = b->want = 0;
    }
    return w;
}

void shm_world_destroy(struct shm_world *w)
{
    if (!w)
        return;
    free(w->slots);
    free(w->boxes);
    free(w);
}

static struct shm_comm *S(struct comm *c)
{
    return c->impl;
}

/* Float-buffer operations through the communicator's memops (host memory by
 * default; device memory for the shared-GPU ring). */
static void CP(struct comm *c, void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes)
        S(c)->ops.copy(S(c)->ops.ctx, dst, src, bytes);
}

static void ADD(struct comm *c, float *dst, const float *src, size_t n)
{
    if (n)
        S(c)->ops.add(S(c)->ops.ctx, dst, src, n);
}

static void SCALE(struct comm *c, float *x, size_t n, float f)
{
    if (n)
        S(c)->ops.scale(S(c)->ops.ctx, x, n, f);
}

static struct shm_slot *slot(struct comm *c, int r)
{
    return &S(c)->w->slots[(r % c->world + c->world) % c->world];
}

static int aborted(struct comm *c)
{
    return c->abort && atomic_load_explicit(c->abort, memory_order_relaxed);
}

/* The futex word: the low half of the 64-bit counter (x86 is little-endian). */
static uint32_t *futex_word(_Atomic uint64_t *p)
{
    return (uint32_t *)p;
}

/* Waits until counter p, which rank `peer` advances (store_wake), reaches
 * target; waiters counts the threads asleep on p. */
static int wait_for(struct comm *c, struct comm_call *call, _Atomic uint64_t *p, _Atomic uint32_t *waiters,
                    uint64_t target, int peer)
{
    if (atomic_load_explicit(p, memory_order_acquire) >= target)
        return 0;
    int64_t t0 = probe_now_ns();
    for (unsigned i = 0;; i++) {
        uint64_t v = atomic_load_explicit(p, memory_order_acquire);
        if (v >= target)
            break;
        if (i < SPIN_ITERS) {
            cpu_relax();
            continue;
        }
        if (aborted(c)) {
            comm_call_wait(c, call, t0, probe_now_ns());
            return COMM_ABORTED;
        }
        int64_t waited = probe_now_ns() - t0;
        if (c->timeout_ns > 0 && waited > c->timeout_ns) {
            comm_call_wait(c, call, t0, t0 + waited);
            snprintf(c->err, sizeof(c->err), "timed out after %.3g s waiting for rank %d", (double)waited / 1e9, peer);
            return -1;
        }
        if (waited < YIELD_NS) {
            sched_yield();
            continue;
        }
        /* sleep until the peer advances (store_wake wakes us), at most 1 ms */
        atomic_fetch_add(waiters, 1);
        v = atomic_load(p);
        if (v < target) {
            struct timespec ts = {0, 1000 * 1000};
            syscall(SYS_futex, futex_word(p), FUTEX_WAIT_PRIVATE, (uint32_t)v, &ts, NULL, 0);
        }
        atomic_fetch_sub(waiters, 1);
    }
    comm_call_wait(c, call, t0, probe_now_ns());
    return 0;
}

/* Stores v into counter p (release) and wakes the threads asleep on it. */
static void store_wake(_Atomic uint64_t *p, _Atomic uint32_t *waiters, uint64_t v)
{
    atomic_store(p, v);
    if (atomic_load(waiters))
        syscall(SYS_futex, futex_word(p), FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Waits until rank r's progress reaches base + unit. */
static int wait_unit(struct comm *c, struct comm_call *call, int r, uint64_t unit)
{
    struct shm_slot *sl = slot(c, r);
    return wait_for(c, call, &sl->progress, &sl->waiters, S(c)->base + unit, (r % c->world + c->world) % c->world);
}

static void set_unit(struct comm *c, uint64_t unit)
{
    struct shm_slot *sl = slot(c, c->rank);
    store_wake(&sl->progress, &sl->waiters, S(c)->base + unit);
}

static void publish(struct comm *c, const void *src, void *dst)
{
    atomic_store_explicit(&slot(c, c->rank)->src, src, memory_order_relaxed);
    atomic_store_explicit(&slot(c, c->rank)->dst, dst, memory_order_relaxed);
    set_unit(c, 1);
}

static const float *peer_src(struct comm *c, int r)
{
    return atomic_load_explicit(&slot(c, r)->src, memory_order_relaxed);
}

static float *peer_dst(struct comm *c, int r)
{
    return atomic_load_explicit(&slot(c, r)->dst, memory_order_relaxed);
}

/* Chunk k of n floats over W ranks: the first n % W chunks get one more. */
static void chunk(size_t n, int W, int k, size_t *off, size_t *len)
{
    size_t q = n / (size_t)W, rem = n % (size_t)W;
    k = ((k % W) + W) % W;
    *off = (size_t)k * q + ((size_t)k < rem ? (size_t)k : rem);
    *len = q + ((size_t)k < rem ? 1 : 0);
}

/* Slice j of S of a chunk. */
static void slice(size_t coff, size_t clen, size_t S_, size_t j, size_t *off, size_t *len)
{
    size_t sl = (clen + S_ - 1) / S_;
    size_t a = j * sl, b = a + sl;
    if (a > clen)
        a = clen;
    if (b > clen)
        b = clen;
    *off = coff + a;
    *len = b - a;
}

static size_t nslices(struct comm *c, size_t n, int W)
{
    size_t per = S(c)->ops.slice_floats ? S(c)->ops.slice_floats : SLICE_FLOATS;
    size_t maxc = (n + (size_t)W - 1) / (size_t)W;
    size_t s = (maxc + per - 1) / per;
    return s ? s : 1;
}

static void add_into(float *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

/* ---- ring ---------------------------------------------------------------
 * Units: 1 = entered (pointers published); then 2(W-1)*S step-slices. Unit of
 * (global step g, slice j) is 1 + g*S + j; completing it stores base+unit+1.
 * Reduce-scatter steps are g = 0..W-2, allgather steps g = W-1..2W-3. */

static int ring_finish(struct comm *c, struct comm_call *call, uint64_t total_units)
{
    /* our right neighbour reads our buffer until it is done */
    int rc = wait_unit(c, call, c->rank + 1, total_units);
    S(c)->base += total_units;
    return rc;
}

/* In-place ring over buf (the same pointer's layout on every rank).
 * shift selects which chunk each rank ends the reduce-scatter with:
 * rank r ends with chunk r + 1 - shift. gather: run the allgather half. */
/* Element operations of one data type (float32, or binary16 reduced in float). */
struct dtype {
    size_t size;
    void (*add)(struct comm *c, void *dst, const void *src, size_t n);
    void (*scale)(struct comm *c, void *x, size_t n, float f);
    void (*copy)(struct comm *c, void *dst, const void *src, size_t bytes);
};

static void add_f32(struct comm *c, void *dst, const void *src, size_t n)
{
    ADD(c, dst, src, n);
}

static void scale_f32(struct comm *c, void *x, size_t n, float f)
{
    SCALE(c, x, n, f);
}

static void copy_dt(struct comm *c, void *dst, const void *src, size_t bytes)
{
    CP(c, dst, src, bytes);
}

static void add_f16(struct comm *c, void *dst, const void *src, size_t n)
{
    if (n)
        S(c)->ops.add16(S(c)->ops.ctx, W16_FP16, dst, src, n);
}

static void scale_f16(struct comm *c, void *x, size_t n, float f)
{
    if (n)
        S(c)->ops.scale16(S(c)->ops.ctx, W16_FP16, x, n, f);
}

static void add_bf16(struct comm *c, void *dst, const void *src, size_t n)
{
    if (n)
        S(c)->ops.add16(S(c)->ops.ctx, W16_BF16, dst, src, n);
}

static void scale_bf16(struct comm *c, void *x, size_t n, float f)
{
    if (n)
        S(c)->ops.scale16(S(c)->ops.ctx, W16_BF16, x, n, f);
}

static const struct dtype DT_F32 = {sizeof(float), add_f32, scale_f32, copy_dt};
static const struct dtype DT_F16 = {sizeof(uint16_t), add_f16, scale_f16, copy_dt};
static const struct dtype DT_BF16 = {sizeof(uint16_t), add_bf16, scale_bf16, copy_dt};

static int ring_pass(struct comm *c, struct comm_call *call, const struct dtype *dt, void *buf_, size_t n,
                     enum red_op op, int shift, int do_rs, int do_ag)
{
    int W = c->world, r = c->rank;
    size_t S_ = nslices(c, n, W), es = dt->size;
    uint64_t units = 1 + 2 * (uint64_t)(W - 1) * S_;
    unsigned char *buf = buf_;
    int rc;
    publish(c, buf_, buf_);
    const unsigned char *left = NULL;
    for (int g = 0; g < 2 * (W - 1); g++) {
        int rs = g < W - 1;
        int s = rs ? g : g - (W - 1);
        for (size_t j = 0; j < S_; j++) {
            uint64_t unit = 1 + (uint64_t)g * S_ + j;
            if ((rs && !do_rs) || (!rs && !do_ag)) {
                set_unit(c, unit + 1);
                continue;
            }
            /* left finished the previous step's slice j (or entered) */
            uint64_t need = g == 0 ? 1 : 1 + (uint64_t)(g - 1) * S_ + j + 1;
            if ((rc = wait_unit(c, call, r - 1, need)) != 0)
                return rc;
            if (!left)
                left = (const unsigned char *)peer_src(c, r - 1);
            size_t coff, clen, off, len;
            if (rs) {
                chunk(n, W, r - s - 1 - shift, &coff, &clen);
                slice(coff, clen, S_, j, &off, &len);
                dt->add(c, buf + off * es, left + off * es, len);
                if (s == W - 2 && op == RED_AVG)
                    dt->scale(c, buf + off * es, len, 1.0f / (float)W);
            } else {
                /* our chunk r-s is read by the right neighbour's reduce-scatter step s */
                if ((rc = wait_unit(c, call, r + 1, 1 + (uint64_t)s * S_ + j + 1)) != 0)
                    return rc;
                chunk(n, W, r - s - shift, &coff, &clen);
                slice(coff, clen, S_, j, &off, &len);
                dt->copy(c, buf + off * es, left + off * es, len * es);
            }
            call->rx += len * es;
            set_unit(c, unit + 1);
        }
    }
    /* what the right neighbour read from us mirrors what we read from the left */
    call->tx = call->rx;
    return ring_finish(c, call, units);
}

/* ---- naive / rooted -----------------------------------------------------
 * Units: 1 entered, 2 root's phase done, 3 peer's phase done (every rank
 * passes through each; the root waits for all peers' 3 before its own 3). */
typedef void (*root_fn)(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                        enum red_op op);
typedef void (*peer_fn)(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                        enum red_op op);

static int rooted(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                  enum red_op op, root_fn rootwork, peer_fn peerwork)
{
    int W = c->world, rc;
    publish(c, in, out);
    if (c->rank == root) {
        for (int p = 0; p < W; p++)
            if (p != root && (rc = wait_unit(c, call, p, 1)) != 0)
                return rc;
        if (rootwork)
            rootwork(c, call, in, out, n, root, op);
        set_unit(c, 2);
        for (int p = 0; p < W; p++)
            if (p != root && (rc = wait_unit(c, call, p, 3)) != 0)
                return rc;
        set_unit(c, 3);
    } else {
        set_unit(c, 2);
        if ((rc = wait_unit(c, call, root, 2)) != 0)
            return rc;
        if (peerwork)
            peerwork(c, call, in, out, n, root, op);
        set_unit(c, 3);
        /* the root may still be reading our buffer only before its unit 2: done */
    }
    S(c)->base += 3;
    return 0;
}

/* allreduce (naive, root 0): rank 0 adds every peer's buffer into its own in
 * rank order; peers then copy the result */
static void ar_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    int W = c->world;
    for (int p = 1; p < W; p++) {
        ADD(c, out, peer_src(c, p), n);
        call->rx += n * sizeof(float);
    }
    if (op == RED_AVG)
        SCALE(c, out, n, 1.0f / (float)W);
    call->tx += (uint64_t)(W - 1) * n * sizeof(float);
}

static void ar_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    CP(c, out, peer_dst(c, root), n * sizeof(float));
    call->rx += n * sizeof(float);
    call->tx += n * sizeof(float);
}

static int shm_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(float));
    int rc = 0;
    if (c->world > 1) {
        if (c->algo == ALGO_RING && n >= (size_t)c->world)
            rc = ring_pass(c, &call, &DT_F32, buf, n, op, 0, 1, 1);
        else
            rc = rooted(c, &call, buf, buf, n, 0, op, ar_root, ar_peer);
    }
    comm_call_end(c, &call);
    return rc;
}

/* reduce: root sums every input into out, in rank order. When the root's
 * in and out alias and the root is not rank 0, rank 0's copy would clobber
 * the root's input: sum into scratch first (reserved by shm_reduce). */
static void red_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    float *acc = (in == out && root != 0) ? S(c)->scratch : out;
    CP(c, acc, peer_src(c, 0), n * sizeof(float));
    for (int p = 1; p < c->world; p++) {
        ADD(c, acc, peer_src(c, p), n);
        if (p != root)
            call->rx += n * sizeof(float);
    }
    if (root != 0)
        call->rx += n * sizeof(float);
    if (op == RED_AVG)
        SCALE(c, acc, n, 1.0f / (float)c->world);
    if (acc != out)
        CP(c, out, acc, n * sizeof(float));
}

static void red_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    call->tx += n * sizeof(float);
}

static int ensure_scratch(struct comm *c, size_t n);

static int shm_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_REDUCE, n * sizeof(float));
    int rc = 0;
    if (c->world > 1 && c->rank == root && in == out && root != 0 && ensure_scratch(c, n) != 0)
        rc = -1;
    else if (c->world > 1)
        rc = rooted(c, &call, in, out, n, root, op, red_root, red_peer);
    else if (out != in)
        CP(c, out, in, n * sizeof(float));
    comm_call_end(c, &call);
    return rc;
}

static void bc_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    CP(c, out, peer_src(c, root), n * sizeof(float));
    call->rx += n * sizeof(float);
}

static void bc_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    call->tx += (uint64_t)(c->world - 1) * n * sizeof(float);
}

static int shm_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BROADCAST, n * sizeof(float));
    int rc = c->world > 1 ? rooted(c, &call, buf, buf, n, root, RED_SUM, bc_root, bc_peer) : 0;
    comm_call_end(c, &call);
    return rc;
}

static void ga_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    for (int p = 0; p < c->world; p++) {
        CP(c, out + (size_t)p * n, peer_src(c, p), n * sizeof(float));
        if (p != root)
            call->rx += n * sizeof(float);
    }
}

static void ga_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    call->tx += n * sizeof(float);
}

static int shm_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_GATHER, n * (size_t)c->world * sizeof(float));
    int rc = 0;
    if (c->world > 1)
        rc = rooted(c, &call, in, out, n, root, RED_SUM, ga_root, ga_peer);
    else
        CP(c, out, in, n * sizeof(float));
    comm_call_end(c, &call);
    return rc;
}

static void sc_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    CP(c, out, in + (size_t)root * n, n * sizeof(float));
    call->tx += (uint64_t)(c->world - 1) * n * sizeof(float);
}

static void sc_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    CP(c, out, peer_src(c, root) + (size_t)c->rank * n, n * sizeof(float));
    call->rx += n * sizeof(float);
}

static int shm_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_SCATTER, n * (size_t)c->world * sizeof(float));
    int rc = 0;
    if (c->world > 1)
        rc = rooted(c, &call, in, out, n, root, RED_SUM, sc_root, sc_peer);
    else
        CP(c, out, in, n * sizeof(float));
    comm_call_end(c, &call);
    return rc;
}

/* allgather: ring, or through the root */
static void ag_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    for (int p = 0; p < c->world; p++) {
        CP(c, out + (size_t)p * n, peer_src(c, p), n * sizeof(float));
        if (p != root)
            call->rx += n * sizeof(float);
    }
    call->tx += (uint64_t)(c->world - 1) * (size_t)c->world * n * sizeof(float);
}

static void ag_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                    enum red_op op)
{
    CP(c, out, peer_dst(c, root), (size_t)c->world * n * sizeof(float));
    call->tx += n * sizeof(float);
    call->rx += (size_t)c->world * n * sizeof(float);
}

static int shm_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLGATHER, n * (size_t)c->world * sizeof(float));
    int W = c->world, rc = 0;
    if (W == 1) {
        CP(c, out, in, n * sizeof(float));
    } else if (c->algo == ALGO_RING) {
        CP(c, out + (size_t)c->rank * n, in, n * sizeof(float));
        /* the allgather half of the ring over out, chunks = rank blocks: with
         * shift 1, step s copies chunk r-s-1, starting from the left's own */
        rc = ring_pass(c, &call, &DT_F32, out, n * (size_t)W, RED_SUM, 1, 0, 1);
    } else {
        rc = rooted(c, &call, in, out, n, 0, RED_SUM, ag_root, ag_peer);
    }
    comm_call_end(c, &call);
    return rc;
}

/* reduce-scatter: ring over a working copy, or through the root */
static int ensure_scratch(struct comm *c, size_t n)
{
    struct shm_comm *s = S(c);
    if (s->scratch_n >= n)
        return 0;
    float *p = s->ops.alloc(s->ops.ctx, n * sizeof(float));
    if (!p)
        return -1;
    if (s->scratch)
        s->ops.release(s->ops.ctx, s->scratch);
    s->scratch = p;
    s->scratch_n = n;
    return 0;
}

static void rsn_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    size_t N = n * (size_t)c->world;
    float *acc = S(c)->scratch;
    CP(c, acc, peer_src(c, 0), N * sizeof(float));
    for (int p = 1; p < c->world; p++) {
        ADD(c, acc, peer_src(c, p), N);
        if (p != root)
            call->rx += N * sizeof(float);
    }
    if (op == RED_AVG)
        SCALE(c, acc, N, 1.0f / (float)c->world);
    CP(c, out, acc + (size_t)root * n, n * sizeof(float));
    atomic_store_explicit(&slot(c, c->rank)->dst, acc, memory_order_relaxed);
    call->tx += (uint64_t)(c->world - 1) * n * sizeof(float);
}

static void rsn_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    CP(c, out, peer_dst(c, root) + (size_t)c->rank * n, n * sizeof(float));
    call->tx += (size_t)c->world * n * sizeof(float);
    call->rx += n * sizeof(float);
}

static int shm_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_REDUCE_SCATTER, n * (size_t)c->world * sizeof(float));
    int W = c->world, rc = 0;
    size_t N = n * (size_t)W;
    if (W == 1) {
        CP(c, out, in, n * sizeof(float));
    } else if (ensure_scratch(c, N) != 0) {
        rc = -1;
    } else if (c->algo == ALGO_RING) {
        float *work = S(c)->scratch;
        CP(c, work, in, N * sizeof(float));
        /* shift 1: rank r ends the reduce-scatter holding chunk r */
        rc = ring_pass(c, &call, &DT_F32, work, N, op, 1, 1, 0);
        if (rc == 0)
            CP(c, out, work + (size_t)c->rank * n, n * sizeof(float));
    } else {
        rc = rooted(c, &call, in, out, n, 0, op, rsn_root, rsn_peer);
    }
    comm_call_end(c, &call);
    return rc;
}

/* allreduce of 16-bit values (naive: through rank 0, in rank order) */
static void arh_root_dt(struct comm *c, struct comm_call *call, float *out, size_t n, enum red_op op,
                        const struct dtype *dt)
{
    for (int p = 1; p < c->world; p++) {
        dt->add(c, out, peer_src(c, p), n);
        call->rx += n * sizeof(uint16_t);
    }
    if (op == RED_AVG)
        dt->scale(c, out, n, 1.0f / (float)c->world);
    call->tx += (uint64_t)(c->world - 1) * n * sizeof(uint16_t);
}

static void arh_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    arh_root_dt(c, call, out, n, op, &DT_F16);
}

static void arhb_root(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                      enum red_op op)
{
    arh_root_dt(c, call, out, n, op, &DT_BF16);
}

static void arh_peer(struct comm *c, struct comm_call *call, const float *in, float *out, size_t n, int root,
                     enum red_op op)
{
    CP(c, out, peer_dst(c, root), n * sizeof(uint16_t));
    call->rx += n * sizeof(uint16_t);
    call->tx += n * sizeof(uint16_t);
}

static int shm_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_ALLREDUCE, n * sizeof(uint16_t));
    int rc = 0, bf = fmt == W16_BF16;
    if (c->world > 1) {
        if (c->algo == ALGO_RING && n >= (size_t)c->world)
            rc = ring_pass(c, &call, bf ? &DT_BF16 : &DT_F16, buf, n, op, 0, 1, 1);
        else
            rc = rooted(c, &call, (const float *)buf, (float *)buf, n, 0, op, bf ? arhb_root : arh_root, arh_peer);
    }
    comm_call_end(c, &call);
    return rc;
}

static int shm_barrier(struct comm *c)
{
    struct comm_call call;
    comm_call_begin(c, &call, COLL_BARRIER, 0);
    int rc = c->world > 1 ? rooted(c, &call, NULL, NULL, 0, 0, RED_SUM, NULL, NULL) : 0;
    comm_call_end(c, &call);
    return rc;
}

/* ---- send / recv (see the mailbox at the top) ---- */
static struct shm_mailbox *mailbox(struct comm *c, int from, int to)
{
    return &S(c)->w->boxes[(size_t)from * (size_t)c->world + (size_t)to];
}

static int shm_send(struct comm *c, const float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "send to") != 0)
        return -1;
    struct shm_comm *s = S(c);
    struct shm_mailbox *b = mailbox(c, c->rank, peer);
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    /* the previous message must have been taken: its receiver is done
     * with the staging buffer, and said what size it wanted */
    uint64_t k = atomic_load_explicit(&b->sent, memory_order_relaxed) + 1;
    int rc = wait_for(c, &call, &b->taken, &b->taken_waiters, k - 1, peer);
    if (rc == 0 && k > 1 && b->want != b->n) {
        snprintf(c->err, sizeof(c->err), "send to rank %d: it expected %zu floats of the %zu sent before", peer,
                 b->want, b->n);
        rc = -1;
    }
    if (rc == 0 && n > s->stage_n[peer]) {
        if (s->stage[peer])
            s->ops.release(s->ops.ctx, s->stage[peer]);
        s->stage[peer] = s->ops.alloc(s->ops.ctx, n * sizeof(float));
        s->stage_n[peer] = s->stage[peer] ? n : 0;
        if (!s->stage[peer]) {
            snprintf(c->err, sizeof(c->err), "send to rank %d: out of memory for %zu floats", peer, n);
            rc = -1;
        }
    }
    if (rc == 0) {
        if (n)
            CP(c, s->stage[peer], buf, n * sizeof(float));
        b->buf = s->stage[peer];
        b->n = n;
        store_wake(&b->sent, &b->sent_waiters, k);
        call.tx = n * sizeof(float);
    }
    comm_call_end(c, &call);
    return rc;
}

static int shm_recv(struct comm *c, float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "recv from") != 0)
        return -1;
    struct shm_mailbox *b = mailbox(c, peer, c->rank);
    struct comm_call call;
    comm_call_begin(c, &call, COMM_P2P, n * sizeof(float));
    uint64_t k = atomic_load_explicit(&b->taken, memory_order_relaxed) + 1;
    int rc = wait_for(c, &call, &b->sent, &b->sent_waiters, k, peer);
    if (rc == 0) {
        b->want = n;
        if (b->n == n) {
            CP(c, buf, b->buf, n * sizeof(float));
            call.rx = n * sizeof(float);
        } else {
            snprintf(c->err, sizeof(c->err), "recv from rank %d: expected %zu floats, but it sent %zu", peer, n, b->n);
            rc = -1;
        }
        /* releases the sender, and its buffer, either way */
        store_wake(&b->taken, &b->taken_waiters, k);
    }
    comm_call_end(c, &call);
    return rc;
}

static void shm_destroy(struct comm *c)
{
    if (!c)
        return;
    struct shm_comm *s = S(c);
    if (s->scratch)
        s->ops.release(s->ops.ctx, s->scratch);
    for (int p = 0; s->stage && p < c->world; p++)
        if (s->stage[p])
            s->ops.release(s->ops.ctx, s->stage[p]);
    free(s->stage);
    free(s->stage_n);
    free(c->impl);
    free(c);
}

static const struct comm_ops shm_ops = {
    .name = "shm",
    .allreduce = shm_allreduce,
    .allreduce_16 = shm_allreduce_16,
    .reduce_scatter = shm_reduce_scatter,
    .allgather = shm_allgather,
    .broadcast = shm_broadcast,
    .reduce = shm_reduce,
    .gather = shm_gather,
    .scatter = shm_scatter,
    .barrier = shm_barrier,
    .send = shm_send,
    .recv = shm_recv,
    .destroy = shm_destroy,
};

static void host_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
}

static void host_add(void *ctx, float *dst, const float *src, size_t n)
{
    add_into(dst, src, n);
}

static void host_scale(void *ctx, float *x, size_t n, float f)
{
    comm_scale(x, n, f);
}

static void *host_alloc(void *ctx, size_t bytes)
{
    return malloc(bytes);
}

static void host_release(void *ctx, void *p)
{
    free(p);
}

static void host_add16(void *ctx, int fmt, uint16_t *dst, const uint16_t *src, size_t n)
{
    w16_add(fmt, dst, src, n);
}

static void host_scale16(void *ctx, int fmt, uint16_t *x, size_t n, float f)
{
    w16_scale(fmt, x, n, f);
}

static const struct shm_memops host_ops = {.copy = host_copy,
                                           .add = host_add,
                                           .scale = host_scale,
                                           .alloc = host_alloc,
                                           .release = host_release,
                                           .add16 = host_add16,
                                           .scale16 = host_scale16};

struct comm *comm_shm_create(struct shm_world *w, int rank, int algo)
{
    return comm_shm_create_ops(w, rank, algo, NULL);
}

struct comm *comm_shm_create_ops(struct shm_world *w, int rank, int algo, const struct shm_memops *ops)
{
    struct comm *c = calloc(1, sizeof(*c));
    struct shm_comm *s = calloc(1, sizeof(*s));
    if (!c || !s) {
        free(c);
        free(s);
        return NULL;
    }
    s->w = w;
    s->ops = ops ? *ops : host_ops;
    if (!s->ops.add16 || !s->ops.scale16) { /* host memory's */
        s->ops.add16 = host_add16;
        s->ops.scale16 = host_scale16;
    }
    s->stage = calloc((size_t)w->world, sizeof(*s->stage));
    s->stage_n = calloc((size_t)w->world, sizeof(*s->stage_n));
    if (!s->stage || !s->stage_n) {
        free(s->stage);
        free(s->stage_n);
        free(c);
        free(s);
        return NULL;
    }
    c->ops = &shm_ops;
    c->rank = rank;
    c->world = w->world;
    c->algo = algo;
    c->tag = -1;
    c->abort = w->abort;
    c->impl = s;
    return c;
}
