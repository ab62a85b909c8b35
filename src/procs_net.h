/* procs_net.h - the channel between a job's processes, as procs.c uses it.
 *
 * Two carry it: MPI under mpirun (procs_net_mpi.c), and for processes
 * started without MPI the rendezvous folder's TCP star (procs_net_wire.c,
 * over wire.c). procs.c's runs, relay and clock speak only through this
 * table, so they are the same on both. Internal to procs.c and its two. */
#ifndef DDPTOP_PROCS_NET_H
#define DDPTOP_PROCS_NET_H

#include <stddef.h>

#include "procs.h"

struct comm;
struct comm_gloo_params;

enum { PNET_ANY = -1 };

struct procs_msg {
    int src, tag;
    size_t len;
    unsigned char *data; /* malloc'd; the taker frees it */
};

struct procs_net {
    const char *what; /* for messages: "MPI", "the rendezvous" */
    int comm;         /* the backend its processes train over unless --comm says (enum comm_backend) */
    /* A channel of its own (as a communicator): every process opens its
     * channels in the same order, and closes them. -1 when none is left. */
    int (*open_chan)(void);
    void (*close_chan)(int chan);
    /* Blocking, to process dst; 0, or -1 when dst is gone. */
    int (*send)(int dst, int chan, int tag, const void *buf, size_t len);
    /* The first message from src (or PNET_ANY) with tag (or PNET_ANY) on
     * chan: 1 with *m filled; 0 when none within timeout_ms (0: none now,
     * -1: wait for ever); -1 when none can come (src is gone). While a
     * long message arrives, still(ctx, sender) is asked: 0 abandons it,
     * and the take returns 0. */
    int (*take)(int src, int chan, int tag, int timeout_ms, int (*still)(void *ctx, int p), void *ctx,
                struct procs_msg *m);
    /* 0 once process p's link is known gone (1 while it may be there). */
    int (*alive)(int p);
    /* procs.h's collectives over every process */
    void (*gather)(const double *mine, int n, double *all);
    void (*bcast)(void *buf, int bytes);
    /* Ends every process of the job now, with status. */
    void (*abort)(int status);
    /* The job's end, every message delivered. */
    void (*finish)(void);
    /* 1 when a rank gave up a wait while the carrier held its buffers: the
     * job can only end by abort. */
    int (*tainted)(void);
    /* procs.h's communicators (NULL with err: this carrier has none) */
    struct comm *(*comm_create)(int group, int key, char *err, size_t errlen);
    struct comm *(*gloo_create)(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen);
};

/* What a carrier's start tells procs.c: self's rank, size, node and host,
 * and for every process the first process of its node and its host. */
struct procs_net_start {
    struct procs *self;
    int *node_of;        /* [size], malloc'd by the carrier */
    char (*host_of)[64]; /* [size], malloc'd by the carrier */
};

/* MPI (under a launcher): NULL with err set, or the table, st filled. */
const struct procs_net *procs_net_mpi_start(int *argc, char ***argv, struct procs_net_start *st, char *err,
                                            size_t errlen);
/* The rendezvous (its folder or process 0's address), as process rank
 * of size: NULL with err set, or the table, st filled. */
const struct procs_net *procs_net_wire_start(const struct rendezvous *r, int rank, int size, double timeout_s,
                                             struct procs_net_start *st, char *err, size_t errlen);

#endif
