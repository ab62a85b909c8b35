/* world_gloo.c - gloo's entry in the world planner (world.h): --comm gloo
 * over Debian's libgloo (collectives/comm_gloo.h).
 *
 * Every rank has a gloo context of its own over gloo's TCP transport, as
 * PyTorch's ProcessGroupGloo has:
 *  - rank threads of one process meet in an in-process store ("mem"), each
 *    over loopback, each making its context on its own thread (gloo's
 *    rendezvous is collective);
 *  - processes under mpirun take ranks, world and the rendezvous from MPI
 *    (procs_net_mpi.c: an allgather of the ranks' addresses, as PyTorch's
 *    env:// takes them from the launcher);
 *  - processes met through --rendezvous file:DIR take them from their
 *    environment and meet in gloo's file store there (procs_net_wire.c).
 * Under mpirun with --ranks-per-process, a process's threads meet over
 * the shm ring and its leader over gloo (comm_hier.c). gloo's timeout is
 * --comm-timeout. In a build without libgloo the entry refuses in one
 * line, naming the package. */
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm.h"
#include "comm_gloo.h"
#include "procs.h"
#include "world.h"

/* --algo's algorithms (enum comm_algo) as gloo's (enum gloo_algo). */
static const struct {
    int algo, gloo;
} algos[] = {
    {ALGO_RING, GLOO_ALGO_RING},
    {ALGO_RING_CHUNKED, GLOO_ALGO_RING_CHUNKED},
    {ALGO_HALVING_DOUBLING, GLOO_ALGO_HALVING_DOUBLING},
    {ALGO_BCUBE, GLOO_ALGO_BCUBE},
};

/* GLOO_SOCKET_IFNAME's interface must have an address here (unset:
 * loopback): 0, or -1 with err set, refused before the run. */
static int check_iface(char *err, size_t errlen)
{
    const char *name = getenv("GLOO_SOCKET_IFNAME");
    if (!name || !name[0])
        return 0;
    struct ifaddrs *all = NULL, *a;
    int found = 0;
    if (getifaddrs(&all) == 0)
        for (a = all; a && !found; a = a->ifa_next)
            found = a->ifa_addr && !strcmp(a->ifa_name, name) &&
                    (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6);
    freeifaddrs(all);
    if (!found)
        snprintf(err, errlen,
                 "--comm gloo: GLOO_SOCKET_IFNAME=%s: no network interface of that name with an address "
                 "here (ip addr lists them)",
                 name);
    return found ? 0 : -1;
}

static int gloo_plan(struct world *w, char *err, size_t errlen)
{
    const char *why = comm_gloo_unavailable();
    if (why) {
        snprintf(err, errlen, "--comm gloo: %s", why);
        return -1;
    }
    if (check_iface(err, errlen) != 0)
        return -1;
    const struct run_config *rc = w->q.rc;
    size_t k = 0;
    while (k < sizeof(algos) / sizeof(algos[0]) && algos[k].algo != rc->algo)
        k++;
    if (k == sizeof(algos) / sizeof(algos[0])) {
        snprintf(err, errlen,
                 "--algo %s: ddptop's own (--comm shm); gloo's are ring, ring-chunked, halving-doubling and bcube",
                 config_algo_name(rc->algo));
        return -1;
    }
    w->algo = algos[k].gloo;
    const char *name = config_algo_name(rc->algo); /* (gloo's own names, comm_gloo.h) */
    snprintf(w->algo_name, sizeof(w->algo_name), "%s", name);
    snprintf(w->backend, sizeof(w->backend), "gloo/%s", name);
    if (w->hier)
        snprintf(w->backend, sizeof(w->backend), "gloo/%s+shm/ring", name);
    snprintf(w->fit_backend, sizeof(w->fit_backend), "gloo");
    snprintf(w->fit_algo, sizeof(w->fit_algo), "%s", name);
    w->local_algo = ALGO_RING; /* (a process's threads under --ranks-per-process) */
    return 0;
}

#ifdef DDPTOP_HAVE_GLOO

/* This process's worlds so far: every process of a job makes the same
 * ones in the same order, so the count tells a store's keys apart. */
static int opened;

static int gloo_open(struct world *w, char *err, size_t errlen)
{
    w->serial = opened++;
    if (w->procs)
        return 0; /* (MPI's rendezvous) */
    struct gloo_shim_error e;
    if (!(w->store = gloo_store_open("mem", &e))) {
        snprintf(err, errlen, "gloo's store: %s", e.msg);
        return -1;
    }
    return 0;
}

static struct comm *gloo_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                                size_t errlen)
{
    /* keys of the world's and each group's rendezvous apart */
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "ddptop/run%d/%s%d", w->serial, group < 0 ? "world" : "stage", group);
    /* across nodes, gloo's pairs listen on the interface PyTorch's
     * GLOO_SOCKET_IFNAME names (else loopback: one node) */
    const char *iface = getenv("GLOO_SOCKET_IFNAME");
    struct comm_gloo_params p = {.rank = rank,
                                 .world = size,
                                 .store = w->store,
                                 .prefix = prefix,
                                 .iface = iface && iface[0] ? iface : NULL,
                                 .algo = w->algo,
                                 .timeout_s = w->q.rc->comm_timeout_s,
                                 .abort = w->abort};
    if (w->procs)
        return procs_gloo_create(group, rank, &p, err, errlen);
    return comm_gloo_create(&p, err, errlen);
}

static void gloo_close(struct world *w)
{
    gloo_store_close(w->store);
    w->store = NULL;
}

/* A failed rank's gloo contexts go at once: their sockets close, and a
 * peer's call fails naming it (a wait inside gloo ignores the abort).
 * Under --ranks-per-process the communicator is comm_hier's, whose shm
 * ring the process's other threads share: it stays. */
static void gloo_rank_failed(struct comm **c)
{
    if (*c && comm_gloo_algo_of(*c)) {
        (*c)->ops->destroy(*c);
        *c = NULL;
    }
}

#else /* no libgloo: the plan refuses, nothing is made */

static int gloo_open(struct world *w, char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return -1;
}

static struct comm *gloo_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                                size_t errlen)
{
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return NULL;
}

static void gloo_close(struct world *w)
{
}

static void gloo_rank_failed(struct comm **c)
{
}

#endif

const struct world_entry world_gloo = {.name = "gloo",
                                       .comm = COMM_GLOO,
                                       .plan = gloo_plan,
                                       .open = gloo_open,
                                       .create = gloo_create,
                                       .close = gloo_close,
                                       .rank_failed = gloo_rank_failed,
                                       .on_thread = 1};
