/* comm.h - the communicator interface: one const table of function pointers
 * per backend (shm threads, NCCL, MPI), float32 collectives with sum and
 * average, and the accounting every call does.
 *
 * Every collective is called by every rank of the communicator in the same
 * order (as in MPI). Each call gets a sequence number, records bytes sent and
 * received by this rank, and records on the bound probe ring one outer `comm`
 * span with `wait` spans nested inside it for the time spent blocked on a
 * peer, so a fast rank shows idle time and the straggler does not.
 *
 * Point-to-point send and recv (activations and their gradients between
 * neighbouring stages) are called by two ranks only, so they take no
 * sequence number: collectives' numbers stay equal on every rank. Their
 * spans carry kind COMM_P2P, which nothing matches across ranks.
 */
#ifndef DDPTOP_COMM_H
#define DDPTOP_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"

enum red_op { RED_SUM = 0, RED_AVG };
/* --algo: ring and naive are ddptop's own (shm, and the device ring);
 * gloo's are ring, ring-chunked, halving-doubling and bcube
 * (comm_gloo.h). */
enum comm_algo { ALGO_RING = 0, ALGO_NAIVE, ALGO_RING_CHUNKED, ALGO_HALVING_DOUBLING, ALGO_BCUBE, ALGO_COUNT };

/* Cumulative counters of one rank's communicator. */
struct comm_stats {
    uint64_t calls;
    uint64_t bytes_tx; /* bytes this rank sent */
    uint64_t bytes_rx; /* bytes this rank received */
    int64_t total_ns;  /* time inside collectives */
    int64_t wait_ns;   /* of which blocked on a peer */
};

struct comm;

struct comm_ops {
    const char *name;
    /* buf[n] on every rank; result everywhere. */
    int (*allreduce)(struct comm *c, float *buf, size_t n, enum red_op op);
    /* buf[n] of 16-bit values in format fmt (enum wire16, half.h: fp16 or
     * bf16), reduced in float (--grad-compress). */
    int (*allreduce_16)(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op);
    /* in[n * world] on every rank; out[n] receives this rank's reduced slice. */
    int (*reduce_scatter)(struct comm *c, const float *in, float *out, size_t n, enum red_op op);
    /* in[n] on every rank; out[n * world] receives all, in rank order. */
    int (*allgather)(struct comm *c, const float *in, float *out, size_t n);
    int (*broadcast)(struct comm *c, float *buf, size_t n, int root);
    /* out[n] is written on root only. */
    int (*reduce)(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root);
    /* in[n] everywhere; out[n * world] on root only. */
    int (*gather)(struct comm *c, const float *in, float *out, size_t n, int root);
    /* in[n * world] on root only; out[n] everywhere. */
    int (*scatter)(struct comm *c, const float *in, float *out, size_t n, int root);
    int (*barrier)(struct comm *c);
    /* Point-to-point: send returns when buf may be reused, recv when buf
     * holds the message. A send does not wait for its recv, only for the
     * pair's previous message to have been received (shm copies it aside;
     * NCCL enqueues it), so two ranks may both send, then both receive.
     * Each send to peer matches peer's next recv from this rank, in order;
     * both pass the same n (shm fails the recv otherwise, and the pair's
     * next send). send counts bytes_tx, recv bytes_rx. An abort or a
     * timeout leaves the pair out of step, as it leaves a collective's
     * communicator. */
    int (*send)(struct comm *c, const float *buf, size_t n, int peer);
    int (*recv)(struct comm *c, float *buf, size_t n, int peer);
    void (*destroy)(struct comm *c);
};

struct comm {
    const struct comm_ops *ops;
    int rank, world;
    int algo;     /* enum comm_algo */
    uint32_t seq; /* sequence number of the next collective */
    struct comm_stats stats;
    /* where spans go; set by comm_bind from the thread that will call */
    struct spsc_ring *probe;
    int lane;
    const _Atomic uint32_t *step;      /* the rank's current step, for tagging spans */
    int16_t tag;                       /* tag for the next call's spans (bucket id) */
    const volatile _Atomic int *abort; /* nonzero: every wait gives up, calls fail */
    int64_t timeout_ns;                /* > 0: a wait on a peer this long fails (-1), naming the peer */
    /* a part of another communicator's call (comm_hier.c): its calls take
     * seq as set (the outer call's number) and record their wait spans,
     * and leave the outer comm span to that call */
    int inner;
    void *impl;
    void *backend;                  /* a wrapping backend's state (the shared-GPU ring), else NULL */
    const struct comm_ops *healthy; /* comm_break: the ops it had, for destroy */
    char why_broken[128];
    /* A failed call (-1) leaves its message here, naming the call (and for
     * device backends the GPU); callers add their context above it. */
    char err[256];
};

/* A failed call (rc -1) gets the caller's context in front of its message:
 * c->err becomes "CONTEXT: message". Returns rc; does nothing for 0 or
 * COMM_ABORTED. */
int comm_context(struct comm *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Every later collective on c fails (-1) with message `why`, as over a
 * broken link: --inject-fault comm-error. Destroying c still works. Call
 * it while no collective of c runs. */
void comm_break(struct comm *c, const char *why);

/* 0 when peer is another rank of c (a send's or recv's peer); else -1,
 * with c->err "WHAT rank PEER: ...". */
int comm_check_peer(struct comm *c, int peer, const char *what);

/* x[i] *= f on host floats: RED_AVG's division, for the host backends. */
void comm_scale(float *x, size_t n, float f);

/* Directs this communicator's spans to ring, as lane. */
void comm_bind(struct comm *c, struct spsc_ring *ring, int lane, const _Atomic uint32_t *step);
/* A communicator of a group of the ranks (group 0..63): its collectives
 * are numbered in the group's own space (probe.h's SPAN_SEQ_GROUP). */
void comm_set_group(struct comm *c, int group);

/* The kind of a point-to-point call's spans: "not a collective", so that
 * metrics and the UI's per-collective accounting leave it out. */
#define COMM_P2P COLL_NONE

/* Backend helpers: begin/end a call (sequence, outer span, stats). Kind
 * COMM_P2P takes no sequence number (its spans carry seq 0). */
struct comm_call {
    int64_t t0_ns;
    int64_t wait_ns;
    uint64_t tx, rx;
    uint64_t size;
    int kind;
    uint32_t seq;
};
void comm_call_begin(struct comm *c, struct comm_call *call, int kind, uint64_t size_bytes);
void comm_call_end(struct comm *c, struct comm_call *call);
/* Records a wait span [t0, t1) inside the current call (short ones are folded
 * into the outer comm span to keep the span rate bounded). */
void comm_call_wait(struct comm *c, struct comm_call *call, int64_t t0_ns, int64_t t1_ns);

/* ---- the shared-memory backend (threads of one process) --------------- */
/* How the shm algorithms touch float buffers. The default works on host
 * memory; the shared-GPU ring (comm_cuda_ring.c) passes device copies and a
 * reduce kernel, each complete when the call returns. */
struct shm_memops {
    void (*copy)(void *ctx, void *dst, const void *src, size_t bytes); /* may overlap */
    void (*add)(void *ctx, float *dst, const float *src, size_t n);    /* dst += src */
    void (*scale)(void *ctx, float *x, size_t n, float f);
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    void *ctx;
    /* the ring's pipeline slice in floats (0: 128 KB, for host caches);
     * device memory wants slices large enough that a launch and a sync
     * each are paid rarely */
    size_t slice_floats;
    /* 16-bit values in format fmt (enum wire16, half.h; --grad-compress),
     * added and scaled in float and rounded back; NULL: host memory */
    void (*add16)(void *ctx, int fmt, uint16_t *dst, const uint16_t *src, size_t n);
    void (*scale16)(void *ctx, int fmt, uint16_t *x, size_t n, float f);
};
struct shm_world;
struct shm_world *shm_world_create(int world, const volatile _Atomic int *abort);
void shm_world_destroy(struct shm_world *w);
/* The communicator of one rank over w. algo: ALGO_RING or ALGO_NAIVE. */
struct comm *comm_shm_create(struct shm_world *w, int rank, int algo);
/* The same over buffers that ops can reach (NULL ops: host memory). */
struct comm *comm_shm_create_ops(struct shm_world *w, int rank, int algo, const struct shm_memops *ops);

/* ---- the hierarchical backend (--ranks-per-process, comm_hier.c) ------ */
/* Rank t of process proc among procs, each with local->world ranks:
 * global rank proc * local->world + t. local is this rank's communicator
 * inside its process; inter joins the processes' rank 0s (this rank's when
 * t is 0, else NULL). Takes both over: destroy frees them, and so does a
 * failure (NULL: they do not fit together, or out of memory). */
struct comm *comm_hier_create(struct comm *local, struct comm *inter, int proc, int procs);

/* Fails with -1 when abort was raised while waiting. */
#define COMM_ABORTED (-2)

#endif
