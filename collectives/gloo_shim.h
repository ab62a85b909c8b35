/* gloo_shim.h - a C interface over Debian's libgloo (C++), for comm_gloo.c:
 * the one file of C++ in ddptop (gloo_shim.cc) sits behind it, so that
 * nothing else includes gloo's headers or catches its exceptions.
 *
 * One gloo_shim is one rank's gloo context: a TCP device (its own event
 * loop thread), a pair to every peer, and the collectives of gloo's own
 * API on host buffers. Rank threads of one process each have their own
 * context over loopback, as processes do.
 *
 * Rendezvous exchanges every rank's pair addresses, either through a gloo
 * store (a file store in a folder all ranks see, or an in-process store
 * for threads), or through the caller's allgather of fixed-size records
 * (MPI's, under mpirun). A rank that does not come within the timeout
 * fails the rendezvous, named.
 *
 * Every call returns 0, or -1 with gloo_shim_error filled: gloo's message
 * (without its source-file prefix), whether gloo's timeout expired, and the
 * peer the failure concerns where it can be told: the rank whose address
 * gloo's message names, else the only peer of 2 ranks. After a failure of
 * gloo's (unusable) its connections are in an unknown state (gloo's
 * docs/errors.md): the caller stops using the context and destroys it. A
 * failure of the shim's own checks (a message of the wrong length) leaves
 * the context as it was. */
#ifndef DDPTOP_GLOO_SHIM_H
#define DDPTOP_GLOO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gloo's allreduce algorithms: the new API's ring (reduce-scatter then
 * allgather in a ring, PyTorch's ProcessGroupGloo's) and bcube, and the
 * algorithm classes ring-chunked and halving-doubling. */
enum gloo_shim_algo {
    GLOO_SHIM_RING = 0,
    GLOO_SHIM_RING_CHUNKED,
    GLOO_SHIM_HALVING_DOUBLING,
    GLOO_SHIM_BCUBE,
    GLOO_SHIM_ALGO_COUNT
};

struct gloo_shim_error {
    int peer;      /* the rank the failure concerns, or -1 */
    int timed_out; /* gloo's timeout expired */
    int unusable;  /* gloo failed: the context is not to be used again */
    char msg[200];
};

/* A rendezvous store: "file:DIR" (gloo's file store: one file per key in
 * DIR, which every rank sees and which holds no earlier job's keys) or
 * "mem" (an in-process store, for rank threads of one process). NULL with
 * e->msg set when spec is neither, or DIR is not a writable folder. The
 * store is needed while contexts are made over it, not after. */
struct gloo_store;
struct gloo_store *gloo_store_open(const char *spec, struct gloo_shim_error *e);
void gloo_store_close(struct gloo_store *s);

/* The caller's exchange: every rank gives `bytes` bytes (mine) and gets
 * every rank's, rank r's at all + r * bytes. 0, or -1 with err set.
 * Collective: every rank of the world calls it once per context made. */
typedef int (*gloo_allgather_fn)(void *arg, const void *mine, void *all, size_t bytes, int64_t timeout_ms, char *err,
                                 size_t errlen);

struct gloo_shim_spec {
    int rank, world;
    /* rendezvous: through store under keys "PREFIX/RANK" (a prefix unique
     * to this communicator within the store), or when store is NULL
     * through allgather */
    struct gloo_store *store;
    const char *prefix;
    gloo_allgather_fn allgather;
    void *allgather_arg;
    /* the address peers reach this rank at: a network interface's (iface,
     * e.g. "eth0") or a host name's or IP's (host); neither: 127.0.0.1 */
    const char *host;
    const char *iface;
    /* gloo's timeout in ms: the rendezvous, every pair's reads (the
     * algorithm classes') and the default of every call below */
    int64_t timeout_ms;
    /* asked while this rank waits for its peers' keys in the store: nonzero
     * (the run was stopped, a peer failed before it came) gives up at
     * once rather than at the timeout; NULL: never */
    int (*stopped)(void *arg);
    void *stopped_arg;
};

struct gloo_shim;
/* Collective over the world: connects this rank to every peer. NULL with e
 * filled on failure (e->peer: a rank that did not come, or a refusal). */
struct gloo_shim *gloo_shim_create(const struct gloo_shim_spec *spec, struct gloo_shim_error *e);
void gloo_shim_destroy(struct gloo_shim *g);

/* How 16-bit values are summed: dst[i] += src[i] over n values (half.h's
 * half_add or bf16_add); NULL in the calls below: the values are float32,
 * summed by gloo's own sum. */
typedef void (*gloo_add16_fn)(uint16_t *dst, const uint16_t *src, size_t n);

/* The calls. n counts elements of 4 bytes (float32), or of 2 bytes where
 * an add16 is given; tag numbers the call (the same on every rank);
 * timeout_ms <= 0 takes the context's. Rooted calls' buffers follow
 * comm.h: reduce's out, gather's out and scatter's in matter on root only.
 * The algorithm classes (ring-chunked, halving-doubling) are built once per
 * (algorithm, size, type) and kept over buffers of their own, which each
 * call copies through; their reads time out after the context's timeout. */
int gloo_shim_allreduce(struct gloo_shim *g, int algo, void *buf, size_t n, gloo_add16_fn add16, uint32_t tag,
                        int64_t timeout_ms, struct gloo_shim_error *e);
int gloo_shim_broadcast(struct gloo_shim *g, float *buf, size_t n, int root, uint32_t tag, int64_t timeout_ms,
                        struct gloo_shim_error *e);
int gloo_shim_reduce(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                     int64_t timeout_ms, struct gloo_shim_error *e);
int gloo_shim_gather(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                     int64_t timeout_ms, struct gloo_shim_error *e);
int gloo_shim_scatter(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                      int64_t timeout_ms, struct gloo_shim_error *e);
int gloo_shim_allgather(struct gloo_shim *g, const float *in, float *out, size_t n, uint32_t tag, int64_t timeout_ms,
                        struct gloo_shim_error *e);
int gloo_shim_barrier(struct gloo_shim *g, uint32_t tag, int64_t timeout_ms, struct gloo_shim_error *e);

/* Point-to-point, in order per ordered pair. send_post starts sending
 * bytes from buf to peer and returns; buf stays untouched until send_wait
 * for that peer returns 0 (which a peer with nothing posted returns at
 * once); one send per peer is in flight. recv returns once buf holds the
 * peer's next message, which must be exactly `bytes` long. */
int gloo_shim_send_post(struct gloo_shim *g, int peer, const void *buf, size_t bytes, struct gloo_shim_error *e);
int gloo_shim_send_wait(struct gloo_shim *g, int peer, int64_t timeout_ms, struct gloo_shim_error *e);
int gloo_shim_recv(struct gloo_shim *g, int peer, void *buf, size_t bytes, int64_t timeout_ms,
                   struct gloo_shim_error *e);

#ifdef __cplusplus
}
#endif

#endif
