/* comm_gloo.h - the gloo communicator (--comm gloo): ddptop's collectives
 * over Debian's libgloo, the engine of PyTorch's CPU DDP, on host buffers:
 * one gloo rank per communicator, over gloo's TCP transport (loopback for
 * rank threads of one process, a real interface across nodes).
 *
 * Built only where libgloo was found (DDPTOP_HAVE_GLOO); this header is
 * the same in every build, and comm_gloo_unavailable() (comm.c) says why
 * there is no gloo in one that has none. */
#ifndef DDPTOP_COMM_GLOO_H
#define DDPTOP_COMM_GLOO_H

#include <stdatomic.h>
#include <stddef.h>

#include "comm.h"
#include "gloo_shim.h"

/* NULL in a build with gloo; else one line saying why not, naming the
 * package to install. */
const char *comm_gloo_unavailable(void);

/* gloo's allreduce algorithms, by name (--algo): "ring" (gloo's default,
 * PyTorch's), "ring-chunked", "halving-doubling", "bcube". */
enum gloo_algo {
    GLOO_ALGO_RING = GLOO_SHIM_RING,
    GLOO_ALGO_RING_CHUNKED = GLOO_SHIM_RING_CHUNKED,
    GLOO_ALGO_HALVING_DOUBLING = GLOO_SHIM_HALVING_DOUBLING,
    GLOO_ALGO_BCUBE = GLOO_SHIM_BCUBE,
    GLOO_ALGO_COUNT = GLOO_SHIM_ALGO_COUNT
};
const char *comm_gloo_algo_name(int algo);  /* NULL past the last */
int comm_gloo_algo_parse(const char *name); /* -1: not one of them */
/* The algorithm of a gloo communicator (for the report). */
const char *comm_gloo_algo_of(const struct comm *c);

/* What a gloo communicator is made of. Rendezvous is either a store (a
 * gloo_store from gloo_store_open, "file:DIR" or "mem"; the keys go under
 * prefix, which must be unique to this communicator within the store) or,
 * when store is NULL, the caller's allgather (comm_gloo_mpi.h's MPI one). */
struct comm_gloo_params {
    int rank, world;
    struct gloo_store *store;
    const char *prefix;
    gloo_allgather_fn allgather;
    void *allgather_arg;
    const char *host;  /* the address peers reach this rank at; NULL: 127.0.0.1 */
    const char *iface; /* or a network interface's (e.g. "eth0"), when set */
    int algo;          /* enum gloo_algo */
    /* gloo's timeout (--comm-timeout): the rendezvous, and every wait of
     * the algorithm classes; later calls follow c->timeout_ns, set here
     * too. <= 0: 300 s, --comm-timeout's default */
    double timeout_s;
    /* nonzero: calls fail with COMM_ABORTED (a wait inside gloo ends at
     * its timeout, or when the peer's communicator is destroyed) */
    const volatile _Atomic int *abort;
};

/* Collective over the world: every rank calls it, with the same world,
 * store (or allgather), prefix and algo. NULL with err set on failure,
 * naming the rank that did not come within the timeout. */
struct comm *comm_gloo_create(const struct comm_gloo_params *p, char *err, size_t errlen);

#endif
