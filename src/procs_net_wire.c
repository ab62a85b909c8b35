/* procs_net_wire.c - the channel between processes started without MPI
 * (procs_net.h): they meet in the rendezvous folder (--rendezvous
 * file:DIR), over wire.c's TCP star around process 0, and their gloo
 * communicators meet in gloo's file store in the same folder. A process
 * is on the node of the first process with its host name and boot. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_gloo.h"
#include "procs_net.h"
#include "wire.h"

static struct wire *w;
static int next_chan = 1; /* 0: the runs' */
static char store_dir[4096];
#ifdef DDPTOP_HAVE_GLOO
static struct gloo_store *store; /* gloo's file store in the folder, made at the first use */
#endif

/* the collectives' own channel and tags, apart from procs.c's */
enum { CHAN_COLL = 1 << 30, TAG_GATHER = 1, TAG_BCAST, TAG_HOSTS, TAG_TABLE };

static int wire_open_chan(void)
{
    return next_chan++;
}

static void wire_close_chan(int chan)
{
    wire_drop(w, chan); /* (what crossed its end) */
}

static int wire_send_to(int dst, int chan, int tag, const void *buf, size_t len)
{
    return wire_send(w, dst, chan, tag, buf, len);
}

static int wire_take_from(int src, int chan, int tag, int timeout_ms, int (*still)(void *, int), void *ctx,
                          struct procs_msg *m)
{
    (void)still; /* (wire.c's thread assembles a message before it is taken) */
    (void)ctx;
    struct wire_msg wm;
    int rc = wire_take(w, src, chan, tag, timeout_ms, &wm);
    if (rc == 1)
        *m = (struct procs_msg){.src = wm.src, .tag = wm.tag, .len = wm.len, .data = wm.data};
    return rc;
}

static int wire_alive_p(int p)
{
    return wire_alive(w, p);
}

/* Process 0 takes each worker's n doubles in rank order; a worker gone
 * gives NaN. */
static void wire_gather(const double *mine, int n, double *all)
{
    size_t bytes = sizeof(double) * (size_t)n;
    if (wire_rank(w) != 0) {
        wire_send(w, 0, CHAN_COLL, TAG_GATHER, mine, bytes);
        return;
    }
    memcpy(all, mine, bytes);
    for (int p = 1; p < wire_size(w); p++) {
        struct wire_msg m;
        int ok = wire_take(w, p, CHAN_COLL, TAG_GATHER, -1, &m) == 1;
        if (ok && m.len == bytes)
            memcpy(all + (size_t)p * (size_t)n, m.data, bytes);
        else
            for (int i = 0; i < n; i++)
                all[(size_t)p * (size_t)n + (size_t)i] = NAN;
        if (ok)
            free(m.data);
    }
}

static void wire_bcast(void *buf, int bytes)
{
    if (wire_rank(w) == 0) {
        for (int p = 1; p < wire_size(w); p++)
            wire_send(w, p, CHAN_COLL, TAG_BCAST, buf, (size_t)bytes);
        return;
    }
    struct wire_msg m;
    if (wire_take(w, 0, CHAN_COLL, TAG_BCAST, -1, &m) != 1)
        return;
    if (m.len == (size_t)bytes)
        memcpy(buf, m.data, m.len);
    free(m.data);
}

static void wire_abort(int status)
{
    /* the other processes see this one's connections close */
    fflush(NULL);
    _exit(status ? status : 1);
}

static void wire_finish(void)
{
#ifdef DDPTOP_HAVE_GLOO
    gloo_store_close(store);
    store = NULL;
#endif
    wire_close(w);
    w = NULL;
}

static int wire_tainted(void)
{
    return 0;
}

static struct comm *wire_comm_create(int group, int key, char *err, size_t errlen)
{
    (void)group;
    (void)key;
    snprintf(err, errlen, "--comm mpi: needs mpirun (these processes met through --rendezvous: use --comm gloo)");
    return NULL;
}

static struct comm *wire_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    (void)group;
    (void)key; /* (p's rank and world are the group's already) */
#ifdef DDPTOP_HAVE_GLOO
    if (!store) {
        char spec[4200];
        struct gloo_shim_error e;
        snprintf(spec, sizeof(spec), "file:%s", store_dir);
        if (!(store = gloo_store_open(spec, &e))) {
            snprintf(err, errlen, "gloo's store: %s", e.msg);
            return NULL;
        }
    }
    struct comm_gloo_params q = *p;
    q.store = store;
    return comm_gloo_create(&q, err, errlen);
#else
    (void)p;
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return NULL;
#endif
}

static const struct procs_net wire_net = {
    .what = "the rendezvous",
    .open_chan = wire_open_chan,
    .close_chan = wire_close_chan,
    .send = wire_send_to,
    .take = wire_take_from,
    .alive = wire_alive_p,
    .gather = wire_gather,
    .bcast = wire_bcast,
    .abort = wire_abort,
    .finish = wire_finish,
    .tainted = wire_tainted,
    .comm_create = wire_comm_create,
    .gloo_create = wire_gloo_create,
};

/* What tells nodes apart: the host's name and this boot of it. */
struct node_key {
    char host[64];
    char boot[40];
};

static void own_key(struct node_key *k, const char *host)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->host, sizeof(k->host), "%s", host);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(k->boot, sizeof(k->boot), f))
            k->boot[0] = 0;
        fclose(f);
    }
}

const struct procs_net *procs_net_wire_start(const char *dir, int rank, int size, double timeout_s,
                                             struct procs_net_start *st, char *err, size_t errlen)
{
    if (!(w = wire_open(dir, "job", rank, size, timeout_s, err, errlen)))
        return NULL;
    snprintf(store_dir, sizeof(store_dir), "%s", dir);
    struct procs *self = st->self;
    self->rank = rank;
    self->size = size;
    struct node_key *keys = calloc((size_t)size, sizeof(*keys));
    st->node_of = calloc((size_t)size, sizeof(*st->node_of));
    st->host_of = calloc((size_t)size, sizeof(*st->host_of));
    if (!keys || !st->node_of || !st->host_of) {
        snprintf(err, errlen, "rendezvous: out of memory for %d processes", size);
        goto fail;
    }
    /* every process's key to process 0, and the table back to all */
    own_key(&keys[rank], self->host);
    if (rank > 0) {
        if (wire_send(w, 0, CHAN_COLL, TAG_HOSTS, &keys[rank], sizeof(keys[rank])) != 0)
            goto lost;
    } else {
        for (int p = 1; p < size; p++) {
            struct wire_msg m;
            if (wire_take(w, p, CHAN_COLL, TAG_HOSTS, (int)(timeout_s * 1000), &m) != 1)
                goto lost;
            if (m.len == sizeof(keys[p]))
                memcpy(&keys[p], m.data, sizeof(keys[p]));
            free(m.data);
            keys[p].host[sizeof(keys[p].host) - 1] = 0;
        }
    }
    if (rank == 0) {
        for (int p = 1; p < size; p++)
            if (wire_send(w, p, CHAN_COLL, TAG_TABLE, keys, sizeof(*keys) * (size_t)size) != 0)
                goto lost;
    } else {
        struct wire_msg m;
        if (wire_take(w, 0, CHAN_COLL, TAG_TABLE, (int)(timeout_s * 1000), &m) != 1)
            goto lost;
        if (m.len == sizeof(*keys) * (size_t)size)
            memcpy(keys, m.data, m.len);
        free(m.data);
    }
    for (int p = 0; p < size; p++) {
        int first = 0; /* the first process with the same key */
        while (memcmp(&keys[first], &keys[p], sizeof(keys[p])) != 0)
            first++;
        st->node_of[p] = first;
        snprintf(st->host_of[p], sizeof(st->host_of[p]), "%s", keys[p].host);
    }
    self->local_rank = self->local_size = 0;
    for (int p = 0; p < size; p++) {
        if (st->node_of[p] != st->node_of[rank])
            continue;
        self->local_size++;
        self->local_rank += p < rank;
    }
    free(keys);
    return &wire_net;
lost:
    snprintf(err, errlen, "rendezvous: a process left while the job met");
fail:
    free(keys);
    free(st->node_of);
    free(st->host_of);
    st->node_of = NULL;
    st->host_of = NULL;
    wire_close(w);
    w = NULL;
    return NULL;
}
