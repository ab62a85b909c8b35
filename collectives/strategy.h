/* strategy.h - gradient-synchronisation strategies over flat buffers.
 *
 * A strategy sees the model only as its flat parameter and gradient buffers
 * and the list of parameter tensors (offset, length) in parameter order; it
 * never knows about layers. The README gives the exact semantics of each.
 */
#ifndef DDPTOP_STRATEGY_H
#define DDPTOP_STRATEGY_H

#include <stddef.h>

#include "comm.h"

enum strategy_kind {
    STRAT_SINGLE = 0,
    STRAT_DP,
    STRAT_GATHER_SCATTER,
    STRAT_ALLREDUCE,
    STRAT_DDP,
    STRAT_HOROVOD,
    STRAT_COUNT
};

/* The strategies' table entries (sync.h) say what each kind is; these
 * name them (sync.c). */
const char *strategy_name(int kind);
/* Returns the kind for a name, or -1. */
int strategy_parse(const char *name);

/* One parameter tensor as the strategy sees it. */
struct grad_tensor {
    size_t off, len; /* floats into the flat buffers */
    int trainable;
};

struct grad_layout {
    int n; /* tensors, in parameter order */
    const struct grad_tensor *t;
    float *params; /* flat, [nfloats] */
    float *grads;  /* flat, [nfloats] */
    size_t nfloats;
};

/* The trainable range [lo, hi) of g's flat buffers: frozen tensors form a
 * prefix (freezing keeps the last layers), so trainable ones are
 * contiguous. lo == hi == 0 when nothing trains. */
void grad_trainable_range(const struct grad_layout *g, size_t *lo, size_t *hi);

/* 16-bit gradients on the wire (--grad-compress): their format, and how
 * they are made, held and read back where the gradients live. NULL hooks:
 * host memory (half.c converts, malloc holds). A device's hooks enqueue on
 * the stream its communicator uses, so that a conversion comes after the
 * gradients it reads and before the collective that reads it, and the
 * conversion back after that collective. Each int hook returns 0, or
 * nonzero with the failure said in the communicator's err. */
struct grad_wire {
    int fmt; /* enum wire16 (half.h); 0: gradients travel in fp32 */
    int (*to_16)(void *ctx, uint16_t *dst, const float *src, size_t n, int fmt);
    int (*from_16)(void *ctx, float *dst, const uint16_t *src, size_t n, int fmt);
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    void *ctx;
};
/* Room for n 16-bit values where w's gradients live (NULL when out of
 * memory), and its release (NULL p: nothing). */
uint16_t *grad_wire_alloc(const struct grad_wire *w, size_t n);
void grad_wire_release(const struct grad_wire *w, uint16_t *p);

/* Average-allreduce of buf[n]. With half (room for n 16-bit values) and a
 * w whose fmt is set, the values travel and are reduced as 16-bit values
 * of that format; otherwise in fp32. */
int allreduce_avg(struct comm *c, float *buf, size_t n, uint16_t *half, const struct grad_wire *w);

/* allreduce: one average-allreduce per trainable tensor, in parameter order.
 * half: NULL, or room for the largest tensor in 16 bits (w's format). */
int sync_allreduce(struct comm *c, const struct grad_layout *g, uint16_t *half, const struct grad_wire *w);

/* gather-scatter: every rank's trainable gradients are gathered at rank 0,
 * averaged there in rank order, and broadcast back. scratch holds
 * world * (trainable floats) on rank 0 (may be NULL elsewhere), in the
 * gradients' memory. avg, when not NULL, does the averaging where that
 * memory is (a device kernel: dst[n] = the rank-ordered mean of world
 * slices) and returns 0; NULL averages on the host. */
typedef int (*gs_average_fn)(void *ctx, float *dst, const float *slices, int world, size_t n);
int sync_gather_scatter(struct comm *c, const struct grad_layout *g, float *scratch, gs_average_fn avg, void *ctx);

/* ddp: buckets of trainable gradients in reverse parameter order. */
struct ddp_bucket {
    size_t off, len; /* one contiguous range of the flat gradient buffer */
    int first, last; /* parameter indices covered: last >= first */
    int pending;     /* tensors still to report this step (main thread) */
};

/* DDP's buckets of g's trainable tensors, in reverse parameter order:
 * b[] (room for g->n) and bucket_of[] ([g->n]: each tensor's bucket, -1 if
 * frozen) are filled; returns the number of buckets. bucket_bytes caps
 * every bucket but the first, capped at first_bytes (PyTorch's 1 MB). */
int ddp_plan(const struct grad_layout *g, size_t bucket_bytes, size_t first_bytes, struct ddp_bucket *b,
             int *bucket_of);

struct ddp_engine;
/* bucket_bytes caps every bucket but the first, which is capped at
 * first_bytes (PyTorch's 1 MB). With overlap, a comm-lane thread allreduces
 * each bucket as soon as its last gradient is ready; its spans go to
 * lane_ring as LANE_COMM. Without overlap, ddp_finish runs them in order on
 * the calling thread. w16 (NULL, or a format of 0: fp32): buckets travel
 * as 16-bit values of w16's format, staged where w16 says. When a bucket
 * becomes ready, a zero-length "bucket ready" span (lane main, category
 * backward, tag = bucket index) goes to main_ring, so traces can draw a
 * flow from it to the bucket's allreduce. */
struct ddp_engine *ddp_create(struct comm *c, const struct grad_layout *g, size_t bucket_bytes, size_t first_bytes,
                              int overlap, const struct grad_wire *w16, struct spsc_ring *lane_ring,
                              struct spsc_ring *main_ring, const _Atomic uint32_t *step);
/* Stream ordering when the gradients live on a device that only enqueues
 * work (NULL members: nothing to do, as on the CPU). lane_init runs on the
 * comm lane once, before any bucket (to make the device current there);
 * ready(ctx, b) runs on the main thread when bucket b's last gradient has
 * been enqueued; before(ctx, b) runs on whichever thread allreduces b, just
 * before, so that the comm stream waits for that point of the compute
 * stream: events, never a host sync. Set before the first step. A hook
 * that fails on the lane (lane_init, before) leaves its message in the
 * communicator's err, where the lane's collectives leave theirs. */
struct ddp_hooks {
    int (*lane_init)(void *ctx); /* each returns 0, or nonzero to fail the step */
    int (*ready)(void *ctx, int bucket);
    int (*before)(void *ctx, int bucket);
    void *ctx;
};
void ddp_set_hooks(struct ddp_engine *e, const struct ddp_hooks *h);
int ddp_nbuckets(const struct ddp_engine *e);
const struct ddp_bucket *ddp_bucket_at(const struct ddp_engine *e, int i);
/* Start of backward. */
void ddp_begin(struct ddp_engine *e);
/* Backward reports parameter p's gradient final (from model_backward's callback). */
void ddp_grad_ready(struct ddp_engine *e, int p);
/* Waits for every bucket (with overlap) or runs them (without). Records the
 * main thread's waiting as a wait span on main_ring. */
int ddp_finish(struct ddp_engine *e, struct spsc_ring *main_ring);
void ddp_destroy(struct ddp_engine *e);

#endif
