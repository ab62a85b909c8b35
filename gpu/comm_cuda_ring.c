/* comm_cuda_ring.c - the shared-GPU ring. When ranks outnumber GPUs they
 * share a device, and NCCL refuses duplicate devices in one communicator;
 * ddptop then runs its own shm algorithms over device buffers: neighbours'
 * buffers are read with DtoD copies and reduced by a kernel on the rank's
 * comm stream. Each operation completes before the ring signals a peer, so
 * the shm progress counters stay the only synchronisation. A CUDA failure
 * is sticky: the next collective returns -1 and names the call.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "comm_gpu.h"
#include "half.h"

struct ring_ctx {
    cudaStream_t stream;
    int rank, gpu;
    cudaError_t err; /* the first failure, sticky */
    char what[64];
    const char *file;
    int line;
    const struct comm_ops *inner;
    struct comm_ops ops;
    int ngpus;                   /* the machine's: with one, no slice can lie elsewhere */
    unsigned char peer_seen[64]; /* GPUs whose memory the reduce kernels were given (reach_peer) */
};

static void note_at(struct ring_ctx *x, cudaError_t e, const char *what, const char *file, int line)
{
    if (e != cudaSuccess && x->err == cudaSuccess) {
        x->err = e;
        snprintf(x->what, sizeof(x->what), "%s", what);
        x->file = file;
        x->line = line;
    }
}

#define note(x, e, what) note_at((x), (e), (what), __FILE__, __LINE__)

/* More ranks than GPUs, over several GPUs: a neighbour's slice may lie on
 * another GPU, which the reduce kernels read where it lies. The first time
 * a GPU's memory comes, this GPU (the calling thread's current one) maps
 * it, or the ring fails in one line where the two cannot reach each other
 * (copies need no mapping: the runtime stages them). All ranks on one GPU:
 * nothing is mapped. */
static void reach_peer(struct ring_ctx *x, const void *p)
{
    if (x->ngpus < 2)
        return; /* (the common case, ranks sharing the one GPU: no query an add) */
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return; /* (not the runtime's memory: the kernel will say) */
    }
    int g = a.device;
    if (g == x->gpu || g < 0 || g >= (int)sizeof(x->peer_seen) || x->peer_seen[g])
        return;
    x->peer_seen[g] = 1;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, x->gpu, g) != cudaSuccess || !can) {
        (void)cudaGetLastError();
        note(x, cudaErrorPeerAccessUnsupported, "ring neighbours on GPUs without peer access");
        return;
    }
    cudaError_t e = cudaDeviceEnablePeerAccess(g, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError(); /* (by another rank on this GPU) */
        return;
    }
    note(x, e, "cudaDeviceEnablePeerAccess");
}

static void dev_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    struct ring_ctx *x = ctx;
    note(x, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, x->stream), "cudaMemcpyAsync");
    note(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

static void dev_add(void *ctx, float *dst, const float *src, size_t n)
{
    struct ring_ctx *x = ctx;
    reach_peer(x, src);
    if (x->err == cudaSuccess && cuda_ring_add(dst, src, n, x->stream) != 0)
        note(x, cudaGetLastError(), "add kernel launch");
    note(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

static void dev_scale(void *ctx, float *v, size_t n, float f)
{
    struct ring_ctx *x = ctx;
    if (cuda_ring_scale(v, n, f, x->stream) != 0)
        note(x, cudaGetLastError(), "scale kernel launch");
    note(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

static void dev_add16(void *ctx, int fmt, uint16_t *dst, const uint16_t *src, size_t n)
{
    struct ring_ctx *x = ctx;
    reach_peer(x, src);
    if (x->err == cudaSuccess && cuda_ring_add16(dst, src, n, fmt == W16_BF16, x->stream) != 0)
        note(x, cudaGetLastError(), "16-bit add kernel launch");
    note(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

static void dev_scale16(void *ctx, int fmt, uint16_t *v, size_t n, float f)
{
    struct ring_ctx *x = ctx;
    if (cuda_ring_scale16(v, n, f, fmt == W16_BF16, x->stream) != 0)
        note(x, cudaGetLastError(), "16-bit scale kernel launch");
    note(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

static void *dev_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    note(ctx, cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
}

static void dev_release(void *ctx, void *p)
{
    cudaFree(p);
}

static int check(struct comm *c, int rc)
{
    struct ring_ctx *x = c->backend;
    if (x->err != cudaSuccess) {
        snprintf(c->err, sizeof(c->err), "cuda:%d: %s: %s (%s:%d)", x->gpu, x->what,
                 gpu_status_string(GPU_CUDA, x->err), gpu_file(x->file), x->line);
        return -1;
    }
    return rc;
}

#define X(c) ((struct ring_ctx *)(c)->backend)

/* Peers read this rank's buffers with copies on their own streams, which
 * know nothing of this rank's events: before a collective starts, the comm
 * stream's earlier work (the wait for backward's event, a packing copy)
 * must be done, or a peer can read a gradient that is still being written. */
static int settle(struct comm *c)
{
    note(X(c), cudaStreamSynchronize(X(c)->stream), "cudaStreamSynchronize");
    return check(c, 0);
}

static int r_allreduce(struct comm *c, float *buf, size_t n, enum red_op op)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->allreduce(c, buf, n, op));
}

static int r_allreduce_16(struct comm *c, uint16_t *buf, size_t n, int fmt, enum red_op op)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->allreduce_16(c, buf, n, fmt, op));
}

static int r_reduce_scatter(struct comm *c, const float *in, float *out, size_t n, enum red_op op)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->reduce_scatter(c, in, out, n, op));
}

static int r_allgather(struct comm *c, const float *in, float *out, size_t n)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->allgather(c, in, out, n));
}

static int r_broadcast(struct comm *c, float *buf, size_t n, int root)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->broadcast(c, buf, n, root));
}

static int r_reduce(struct comm *c, const float *in, float *out, size_t n, enum red_op op, int root)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->reduce(c, in, out, n, op, root));
}

static int r_gather(struct comm *c, const float *in, float *out, size_t n, int root)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->gather(c, in, out, n, root));
}

static int r_scatter(struct comm *c, const float *in, float *out, size_t n, int root)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->scatter(c, in, out, n, root));
}

static int r_barrier(struct comm *c)
{
    return X(c)->inner->barrier(c);
}

static int r_send(struct comm *c, const float *buf, size_t n, int peer)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->send(c, buf, n, peer));
}

static int r_recv(struct comm *c, float *buf, size_t n, int peer)
{
    if (settle(c) != 0)
        return -1;
    return check(c, X(c)->inner->recv(c, buf, n, peer));
}

static void r_destroy(struct comm *c)
{
    if (!c)
        return;
    struct ring_ctx *x = c->backend;
    c->ops = x->inner;
    c->backend = NULL;
    c->ops->destroy(c);
    free(x);
}

struct comm *comm_cuda_ring_create(struct shm_world *w, int rank, int algo, int gpu, void *stream)
{
    struct ring_ctx *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->stream = (cudaStream_t)stream;
    x->rank = rank;
    x->gpu = gpu;
    if (cudaGetDeviceCount(&x->ngpus) != cudaSuccess) {
        (void)cudaGetLastError();
        x->ngpus = 1;
    }
    /* 16 MB slices: every copy and add is a launch and a sync (~15 us);
     * 128 KB ones held a 64 MB allreduce of 2 ranks to 10 GB/s on an H200 */
    struct shm_memops ops = {.copy = dev_copy,
                             .add = dev_add,
                             .scale = dev_scale,
                             .alloc = dev_alloc,
                             .release = dev_release,
                             .ctx = x,
                             .slice_floats = 4u << 20,
                             .add16 = dev_add16,
                             .scale16 = dev_scale16};
    struct comm *c = comm_shm_create_ops(w, rank, algo, &ops);
    if (!c) {
        free(x);
        return NULL;
    }
    x->inner = c->ops;
    x->ops = (struct comm_ops){.name = "cuda-ring",
                               .allreduce = r_allreduce,
                               .allreduce_16 = r_allreduce_16,
                               .reduce_scatter = r_reduce_scatter,
                               .allgather = r_allgather,
                               .broadcast = r_broadcast,
                               .reduce = r_reduce,
                               .gather = r_gather,
                               .scatter = r_scatter,
                               .barrier = r_barrier,
                               .send = r_send,
                               .recv = r_recv,
                               .destroy = r_destroy};
    c->ops = &x->ops;
    c->backend = x;
    return c;
}
