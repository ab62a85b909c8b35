/* procs_net_mpi.c - the channel between processes over MPI, under mpirun
 * (procs_net.h): MPI's start and end, a communicator per channel, matched
 * probes for the takes, and the MPI communicators of --comm mpi and of
 * gloo's rendezvous under mpirun. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_gloo.h" /* (in every build: comm_gloo_unavailable says why there is no gloo) */
#include "comm_mpi.h"
#include "config.h"
#include "probe.h"
#include "procs_net.h"
#ifdef DDPTOP_HAVE_GLOO
#include "comm_gloo_mpi.h"
#endif

static MPI_Comm *chans; /* [nchans]: channel 0 the runs', then the relays' */
static int nchans, cap;

static int mpi_open_chan(void)
{
    for (int c = 1; c < nchans; c++)
        if (chans[c] == MPI_COMM_NULL) {
            MPI_Comm_dup(MPI_COMM_WORLD, &chans[c]);
            return c;
        }
    if (nchans == cap) {
        int ncap = cap ? 2 * cap : 4;
        MPI_Comm *nc = realloc(chans, sizeof(*nc) * (size_t)ncap);
        if (!nc)
            return -1;
        chans = nc;
        cap = ncap;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &chans[nchans]);
    return nchans++;
}

static void mpi_close_chan(int c)
{
    /* (a message that crossed its channel's end is still queued: MPI
     * drops it with the communicator; after an abandoned wait the
     * communicator is MPI's for good) */
    if (c > 0 && c < nchans && chans[c] != MPI_COMM_NULL && !comm_mpi_tainted())
        MPI_Comm_free(&chans[c]);
    if (c > 0 && c < nchans)
        chans[c] = MPI_COMM_NULL;
}

static int mpi_send(int dst, int chan, int tag, const void *buf, size_t len)
{
    return MPI_Send(buf, (int)len, MPI_BYTE, dst, tag, chans[chan]) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_take(int src, int chan, int tag, int timeout_ms, int (*still)(void *, int), void *ctx,
                    struct procs_msg *m)
{
    int from = src == PNET_ANY ? MPI_ANY_SOURCE : src, what = tag == PNET_ANY ? MPI_ANY_TAG : tag;
    MPI_Message msg;
    MPI_Status st;
    if (timeout_ms < 0) {
        MPI_Mprobe(from, what, chans[chan], &msg, &st);
    } else {
        int64_t until = probe_deadline_ms() + timeout_ms;
        for (int found = 0;;) {
            MPI_Improbe(from, what, chans[chan], &found, &msg, &st);
            if (found)
                break;
            if (probe_deadline_ms() >= until)
                return 0;
        }
    }
    int len = 0;
    MPI_Get_count(&st, MPI_BYTE, &len);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf) {
        MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE); /* fails: the message is lost */
        return 0;
    }
    /* a message arrives in pieces: a sender stopped or killed in the
     * middle of one leaves it unfinished, and the caller may give it up
     * (the buffer is then MPI's for good) */
    int done = 0;
    MPI_Request req;
    MPI_Imrecv(buf, len, MPI_BYTE, &msg, &req);
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done) {
        if (still && !still(ctx, st.MPI_SOURCE))
            return 0;
        probe_nap_ms(1);
    }
    *m = (struct procs_msg){.src = st.MPI_SOURCE, .tag = st.MPI_TAG, .len = (size_t)len, .data = buf};
    return 1;
}

static int mpi_alive(int p)
{
    return 1; /* (MPI ends the job when a process dies: silence tells) */
}

static void mpi_gather(const double *mine, int n, double *all)
{
    MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static void mpi_bcast(void *buf, int bytes)
{
    MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void mpi_abort(int status)
{
    MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
}

static void mpi_finish(void)
{
    MPI_Comm_free(&chans[0]);
    free(chans);
    chans = NULL;
    nchans = cap = 0;
    MPI_Finalize();
}

static int mpi_tainted(void)
{
    return comm_mpi_tainted();
}

static int split(int group, int key, MPI_Comm *g, char *err, size_t errlen)
{
    if (group < 0) {
        *g = MPI_COMM_WORLD;
        return 0;
    }
    if (MPI_Comm_split(MPI_COMM_WORLD, group, key, g) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Comm_split failed");
        return -1;
    }
    return 0;
}

static struct comm *mpi_comm_create(int group, int key, char *err, size_t errlen)
{
    MPI_Comm g;
    if (split(group, key, &g, err, errlen) != 0)
        return NULL;
    struct comm *c = comm_mpi_create(g, err, errlen); /* (over a duplicate) */
    if (group >= 0)
        MPI_Comm_free(&g);
    return c;
}

static struct comm *mpi_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
#ifdef DDPTOP_HAVE_GLOO
    MPI_Comm g;
    if (split(group, key, &g, err, errlen) != 0)
        return NULL;
    struct comm *c = comm_gloo_create_mpi(g, p, err, errlen); /* (MPI carries its rendezvous only) */
    if (group >= 0)
        MPI_Comm_free(&g);
    return c;
#else
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return NULL;
#endif
}

static const struct procs_net mpi_net = {
    .what = "MPI",
    .comm = COMM_MPI,
    .open_chan = mpi_open_chan,
    .close_chan = mpi_close_chan,
    .send = mpi_send,
    .take = mpi_take,
    .alive = mpi_alive,
    .gather = mpi_gather,
    .bcast = mpi_bcast,
    .abort = mpi_abort,
    .finish = mpi_finish,
    .tainted = mpi_tainted,
    .comm_create = mpi_comm_create,
    .gloo_create = mpi_gloo_create,
};

const struct procs_net *procs_net_mpi_start(int *argc, char ***argv, struct procs_net_start *st, char *err,
                                            size_t errlen)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpirun: MPI_Init_thread failed");
        return NULL;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        /* rank threads, the relay and the collector all call MPI */
        snprintf(err, errlen, "mpirun: this MPI library gives threads level %d; ddptop needs MPI_THREAD_MULTIPLE",
                 provided);
        MPI_Finalize();
        return NULL;
    }
    struct procs *self = st->self;
    MPI_Comm_rank(MPI_COMM_WORLD, &self->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &self->size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, self->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &self->local_rank);
    MPI_Comm_size(node, &self->local_size);
    int first = self->rank;
    MPI_Bcast(&first, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    st->node_of = calloc((size_t)self->size, sizeof(*st->node_of));
    st->host_of = calloc((size_t)self->size, sizeof(*st->host_of));
    chans = calloc(4, sizeof(*chans));
    if (!st->node_of || !st->host_of || !chans) {
        fprintf(stderr, "ddptop: mpirun: out of memory for %d processes\n", self->size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    cap = 4;
    MPI_Allgather(&first, 1, MPI_INT, st->node_of, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(self->host, sizeof(self->host), MPI_CHAR, st->host_of, sizeof(self->host), MPI_CHAR, MPI_COMM_WORLD);
    MPI_Comm_dup(MPI_COMM_WORLD, &chans[0]);
    nchans = 1;
    return &mpi_net;
}
