/* comm_nccl.c - the NCCL communicator: one NCCL rank per GPU thread, the
 * unique id shared in process, collectives enqueued on the rank's comm
 * stream. The host-side span of a call covers launch to completion of the
 * comm stream (the comm lane blocks there, never the compute stream; the
 * wait polls, so that an abort raised by a failed peer aborts NCCL rather
 * than hanging in its kernels); the device-side picture comes from CUPTI's
 * kernel records. Every NCCL and CUDA call is checked and a failure names
 * the call, the rank and the GPU.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "comm_gpu.h"
#include "half.h"

_Static_assert(sizeof(ncclUniqueId) <= GPU_NCCL_ID_BYTES, "GPU_NCCL_ID_BYTES too small");

struct nccl_state {
    ncclComm_t nc;
    cudaStream_t stream;
    int gpu;
    float *one;  /* a device float for the barrier */
    int aborted; /* ncclCommAbort ran: every later call fails */
};

#define NS(c) ((struct nccl_state *)(c)->impl)

static int fail_at(struct comm *c, const char *call, const char *why, const char *file, int line)
{
    snprintf(c->err, sizeof(c->err), "cuda:%d: %s: %s (%s:%d)", NS(c)->gpu, call, why, gpu_file(file), line);
    return -1;
}

#define fail_nccl(c, call, r) fail_at((c), (call), gpu_status_string(GPU_NCCL, (int)(r)), __FILE__, __LINE__)

/* Waits for the comm stream, polling so that a raised abort (a failed or
 * interrupted peer, which would leave NCCL's kernels waiting forever)
 * aborts the communicator instead. Returns 0, COMM_ABORTED or -1. */
/* --comm-timeout ran out: NCCL cannot say which peer is missing. */
static int timed_out(struct comm *c, const char *what, int64_t t0)
{
    ncclCommAbort(NS(c)->nc);
    NS(c)->aborted = 1;
    snprintf(c->err, sizeof(c->err), "cuda:%d: %s: timed out after %.3g s (a peer is not taking part)", NS(c)->gpu,
             what, (double)(probe_now_ns() - t0) / 1e9);
    return -1;
}

static int nccl_wait(struct comm *c, const char *what)
{
    struct nccl_state *s = NS(c);
    struct timespec nap = {0, 20 * 1000};
    int64_t t0 = probe_now_ns();
    /* a non-blocking communicator: the call is enqueued once its state leaves ncclInProgress */
    for (unsigned spin = 0;; spin++) {
        ncclResult_t st = ncclSuccess;
        ncclResult_t q = ncclCommGetAsyncError(s->nc, &st);
        if (q != ncclSuccess)
            return fail_nccl(c, "ncclCommGetAsyncError", q);
        if (st == ncclSuccess)
            break;
        if (st != ncclInProgress)
            return fail_nccl(c, what, st);
        if (c->abort && atomic_load(c->abort)) {
            ncclCommAbort(s->nc);
            s->aborted = 1;
            return COMM_ABORTED;
        }
        if (c->timeout_ns > 0 && probe_now_ns() - t0 > c->timeout_ns)
            return timed_out(c, what, t0);
        if (spin > 2000)
            nanosleep(&nap, NULL);
    }
    for (unsigned spin = 0;; spin++) {
        cudaError_t e = cudaStreamQuery(s->stream);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return fail_at(c, what, cudaGetErrorString(e), __FILE__, __LINE__);
        ncclResult_t ar = ncclSuccess;
        if (ncclCommGetAsyncError(s->nc, &ar) == ncclSuccess && ar != ncclSuccess && ar != ncclInProgress)
            return fail_nccl(c, what, ar);
        if (c->abort && atomic_load(c->abort)) {
            ncclCommAbort(s->nc); /* the kernels stop; the communicator is gone */
            s->aborted = 1;
            return COMM_ABORTED;
        }
        if (c->timeout_ns > 0 && probe_now_ns() - t0 > c->timeout_ns)
            return timed_out(c, what, t0);
        if (spin > 2000)
            nanosleep(&nap, NULL);
    }
}

/* NCCL's result of an enqueueing call: a non-blocking communicator may
 * still be working on it (nccl_wait finishes the job). */
static int launched(ncclResult_t r)
{
    return r == ncclSuccess || r == ncclInProgress;
}

/* Enqueues, waits for the comm stream, and records the call. */
#define NCCL_CALL(c, kind, size, TX_, RX_, expr)                                                                       \
    do {                                                                                                               \
        if (NS(c)->aborted)                                                                                            \
            return COMM_ABORTED;                                                                                       \
        struct comm_call call_;                                                                                        \
        comm_call_begin((c), &call_, (kind), (size));                                                                  \
        ncclResult_t r_ = (expr);                                                                                      \
        if (!launched(r_)) {                                                                                           \
            comm_call_end((c), &call_);                                                                                \
            return fail_nccl((c), #expr, r_);                                                                          \
        }                                                                                                              \
        int w_ = nccl_wait((c), #kind);                                                                                \
        call_.tx = (TX_);                                                                                              \
        call_.rx = (RX_);                                                                                              \
        comm_call_end((c), &call_);                                                                                    \
        return w_;                                                                                                     \
    } while (0)

static ncclRedOp_t redop(enum red_op op)
{
    return op == RED_AVG ? ncclAvg : ncclSum;
}

static uint64_t ring_bytes(const struct comm *c, size_t bytes)
{
    return (uint64_t)((double)bytes * 2.0 * (c->world - 1) / c->world);
}

static int n_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    size_t b = n * sizeof(float);
    NCCL_CALL(c, COLL_ALLREDUCE, b, ring_bytes(c, b), ring_bytes(c, b),
              ncclAllReduce(buf, buf, n, ncclFloat, redop(op), NS(c)->nc, NS(c)->stream));
}

static int allreduce_16_as(struct comm *c, uint16_t *buf, size_t n, int fmt, ncclRedOp_t op)
{
    size_t b = n * sizeof(uint16_t);
    NCCL_CALL(c, COLL_ALLREDUCE, b, ring_bytes(c, b), ring_bytes(c, b),
              ncclAllReduce(buf, buf, n, fmt == W16_BF16 ? ncclBfloat16 : ncclHalf, op, NS(c)->nc, NS(c)->stream));
}

/* ncclAvg over 16-bit values multiplies each by 1/world rounded to 16 bits:
 * over a world that is not a power of 2 that biases every average (bf16's
 * 1/3 is 0.2% high). There the sum is scaled by the exact 1/world, in fp32,
 * rounded once, as the shm, hierarchical and MPI backends average. */
static int n_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    if (op != RED_AVG || (c->world & (c->world - 1)) == 0)
        return allreduce_16_as(c, buf, n, fmt, redop(op));
    int rc = allreduce_16_as(c, buf, n, fmt, ncclSum);
    if (rc != 0)
        return rc;
    if (cuda_ring_scale16(buf, n, 1.0f / (float)c->world, fmt == W16_BF16, NS(c)->stream) != 0)
        return fail_at(c, "the 16-bit average's scale kernel", cudaGetErrorString(cudaGetLastError()), __FILE__,
                       __LINE__);
    return nccl_wait(c, "the 16-bit average's scale kernel");
}

static int n_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    size_t b = n * sizeof(float) * (size_t)c->world;
    uint64_t t = (uint64_t)n * sizeof(float) * (uint64_t)(c->world - 1);
    NCCL_CALL(c, COLL_REDUCE_SCATTER, b, t, t,
              ncclReduceScatter(in, out, n, ncclFloat, redop(op), NS(c)->nc, NS(c)->stream));
}

static int n_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    size_t b = n * sizeof(float) * (size_t)c->world;
    uint64_t t = (uint64_t)n * sizeof(float) * (uint64_t)(c->world - 1);
    NCCL_CALL(c, COLL_ALLGATHER, b, t, t, ncclAllGather(in, out, n, ncclFloat, NS(c)->nc, NS(c)->stream));
}

static int n_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    size_t b = n * sizeof(float);
    NCCL_CALL(c, COLL_BROADCAST, b, c->rank == root ? b : 0, c->rank == root ? 0 : b,
              ncclBroadcast(buf, buf, n, ncclFloat, root, NS(c)->nc, NS(c)->stream));
}

static int n_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    size_t b = n * sizeof(float);
    NCCL_CALL(c, COLL_REDUCE, b, c->rank == root ? 0 : b, c->rank == root ? b : 0,
              ncclReduce(in, out, n, ncclFloat, redop(op), root, NS(c)->nc, NS(c)->stream));
}

/* gather and scatter: point-to-point sends grouped into one launch */
static ncclResult_t gather_p2p(struct comm *c, const float *in, float *out, size_t n, int root, int scatter)
{
    ncclResult_t r = ncclGroupStart();
    if (!launched(r))
        return r;
    if (c->rank == root) {
        for (int p = 0; p < c->world && launched(r); p++) {
            if (p == root) {
                const float *src = scatter ? in + (size_t)root * n : in;
                float *dst = scatter ? out : out + (size_t)root * n;
                if (src != dst && cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                                  NS(c)->stream) != cudaSuccess)
                    r = ncclUnhandledCudaError;
            } else if (scatter) {
                r = ncclSend(in + (size_t)p * n, n, ncclFloat, p, NS(c)->nc, NS(c)->stream);
            } else {
                r = ncclRecv(out + (size_t)p * n, n, ncclFloat, p, NS(c)->nc, NS(c)->stream);
            }
        }
    } else {
        r = scatter ? ncclRecv(out, n, ncclFloat, root, NS(c)->nc, NS(c)->stream)
                    : ncclSend(in, n, ncclFloat, root, NS(c)->nc, NS(c)->stream);
    }
    ncclResult_t e = ncclGroupEnd();
    return !launched(r) ? r : e;
}

static int n_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    size_t b = n * sizeof(float);
    uint64_t all = (uint64_t)b * (uint64_t)(c->world - 1);
    NCCL_CALL(c, COLL_GATHER, b * (size_t)c->world, c->rank == root ? 0 : b, c->rank == root ? all : 0,
              gather_p2p(c, in, out, n, root, 0));
}

static int n_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    size_t b = n * sizeof(float);
    uint64_t all = (uint64_t)b * (uint64_t)(c->world - 1);
    NCCL_CALL(c, COLL_SCATTER, b * (size_t)c->world, c->rank == root ? all : 0, c->rank == root ? 0 : b,
              gather_p2p(c, in, out, n, root, 1));
}

static int n_barrier(struct comm *c)
{
    NCCL_CALL(c, COLL_BARRIER, 0, 0, 0,
              ncclAllReduce(NS(c)->one, NS(c)->one, 1, ncclFloat, ncclSum, NS(c)->nc, NS(c)->stream));
}

/* send and recv: NCCL pairs them in order per pair of ranks, as comm.h
 * asks. A failure or timeout gets the peer in front (NCCL cannot name it). */
static int nccl_send(struct comm *c, const float *buf, size_t n, int peer)
{
    size_t b = n * sizeof(float);
    NCCL_CALL(c, COMM_P2P, b, b, 0, ncclSend(buf, n, ncclFloat, peer, NS(c)->nc, NS(c)->stream));
}

static int nccl_recv(struct comm *c, float *buf, size_t n, int peer)
{
    size_t b = n * sizeof(float);
    NCCL_CALL(c, COMM_P2P, b, 0, b, ncclRecv(buf, n, ncclFloat, peer, NS(c)->nc, NS(c)->stream));
}

static int n_send(struct comm *c, const float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "send to") != 0)
        return -1;
    return comm_context(c, nccl_send(c, buf, n, peer), "send to rank %d", peer);
}

static int n_recv(struct comm *c, float *buf, size_t n, int peer)
{
    if (comm_check_peer(c, peer, "recv from") != 0)
        return -1;
    return comm_context(c, nccl_recv(c, buf, n, peer), "recv from rank %d", peer);
}

static void n_destroy(struct comm *c)
{
    if (!c)
        return;
    struct nccl_state *s = NS(c);
    if (s) {
        /* torn down locally: the rank threads are done and their streams
         * idle, and ncclCommFinalize would wait for every peer's teardown,
         * which the collector runs one after another */
        if (!s->aborted)
            ncclCommAbort(s->nc);
        cudaFree(s->one);
        free(s);
    }
    free(c);
}

static const struct comm_ops nccl_ops = {
    .name = "nccl",
    .allreduce = n_allreduce,
    .allreduce_16 = n_allreduce_16,
    .reduce_scatter = n_reduce_scatter,
    .allgather = n_allgather,
    .broadcast = n_broadcast,
    .reduce = n_reduce,
    .gather = n_gather,
    .scatter = n_scatter,
    .barrier = n_barrier,
    .send = n_send,
    .recv = n_recv,
    .destroy = n_destroy,
};

int nccl_unique_id(unsigned char id[GPU_NCCL_ID_BYTES], char *err, size_t errlen)
{
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) {
        snprintf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
        return -1;
    }
    memset(id, 0, GPU_NCCL_ID_BYTES);
    memcpy(id, &u, sizeof(u));
    return 0;
}

struct comm *comm_nccl_create(const unsigned char id[GPU_NCCL_ID_BYTES], int world, int rank, int gpu, void *stream,
                              const volatile _Atomic int *stop, char *err, size_t errlen)
{
    struct comm *c = calloc(1, sizeof(*c));
    struct nccl_state *s = calloc(1, sizeof(*s));
    if (!c || !s) {
        free(c);
        free(s);
        snprintf(err, errlen, "rank %d: out of memory", rank);
        return NULL;
    }
    s->gpu = gpu;
    s->stream = (cudaStream_t)stream;
    ncclUniqueId u;
    memcpy(&u, id, sizeof(u));
    cudaError_t ce = cudaSetDevice(gpu);
    if (ce == cudaSuccess)
        ce = cudaMalloc((void **)&s->one, sizeof(float));
    if (ce != cudaSuccess) {
        snprintf(err, errlen, "rank %d (cuda:%d): %s", rank, gpu, cudaGetErrorString(ce));
        free(s);
        free(c);
        return NULL;
    }
    /* non-blocking, so that a peer that never joins (it failed first) cannot
     * hang this thread: the initialisation is polled against abort */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&s->nc, world, u, rank, &cfg);
    struct timespec nap = {0, 50 * 1000};
    while (r == ncclInProgress) {
        if (stop && atomic_load(stop)) {
            ncclCommAbort(s->nc);
            snprintf(err, errlen, "rank %d (cuda:%d): NCCL initialisation abandoned: a peer failed", rank, gpu);
            cudaFree(s->one);
            free(s);
            free(c);
            return NULL;
        }
        nanosleep(&nap, NULL);
        if (ncclCommGetAsyncError(s->nc, &r) != ncclSuccess)
            r = ncclInternalError;
    }
    if (r != ncclSuccess) {
        snprintf(err, errlen, "rank %d (cuda:%d): ncclCommInitRankConfig: %s", rank, gpu, ncclGetErrorString(r));
        if (s->nc)
            ncclCommAbort(s->nc);
        cudaFree(s->one);
        free(s);
        free(c);
        return NULL;
    }
    c->ops = &nccl_ops;
    c->rank = rank;
    c->world = world;
    c->abort = stop;
    c->tag = -1;
    c->impl = s;
    return c;
}
