/* procs_net_wire.c - the channel between processes started without MPI
 * (procs_net.h): they meet in the rendezvous folder (--rendezvous
 * file:DIR) or at process 0's address (--rendezvous tcp:HOST:PORT), over
 * wire.c's TCP star around process 0. Their gloo communicators meet in
 * gloo's file store in the folder; at an address, which has no store,
 * through process 0 (gloo_meet). A process is on the node of the first
 * process with its host name and boot. */
#include <math.h>
#include <stdint.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_gloo.h"
#include "config.h"
#include "procs_net.h"
#include "wire.h"

static struct wire *w;
static int next_chan = 1; /* 0: the runs' */
#ifdef DDPTOP_HAVE_GLOO
static struct gloo_store *store; /* gloo's file store in the meeting's folder (none at an address) */
/* a process's group, as it tells process 0 in a meeting (meet_create) */
struct who {
    int32_t group, grank, gworld;
};
static struct gloo_meet {
    int id;                            /* the meeting's name (meet_id) */
    struct who *whos;                  /* process 0: every process's */
    int called;                        /* the allgather was asked this meeting */
    int64_t deadline_ms;               /* on probe_now_ns's clock */
    const volatile _Atomic int *abort; /* the run's stop */
} meet;
#endif

/* the collectives' own channel and tags, apart from procs.c's */
enum { CHAN_COLL = 1 << 30, TAG_GATHER = 1, TAG_BCAST, TAG_HOSTS, TAG_TABLE };
/* gloo's meetings through process 0: a channel of their own, and per
 * meeting (the n-th communicator made, the same n in every process) a
 * tag for each of its three messages */
enum { CHAN_GLOO = (1 << 30) + 1, GLOO_WHO = 0, GLOO_MINE, GLOO_ALL, GLOO_TAGS };

static int wire_open_chan(void)
{
    return next_chan++;
}

static void wire_close_chan(int chan)
{
    wire_retire(w, chan); /* (what crossed its end, and what is still on its way) */
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
    free(meet.whos);
    meet = (struct gloo_meet){0};
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

#ifdef DDPTOP_HAVE_GLOO
/* gloo's rendezvous at an address. Making a communicator is collective
 * over every process (as MPI_Comm_split under mpirun), each in a group
 * (-1: the world) of gworld ranks. Every worker tells process 0 its group
 * (GLOO_WHO); a process of a group of more than one then sends its record
 * of addresses (GLOO_MINE), and process 0 sends each one its group's
 * records in group rank order (GLOO_ALL: empty when a member's did not
 * come). Process 0 serves the meeting in its own allgather, or before its
 * communicator is made when its group is itself alone.
 *
 * A meeting is named by its world (the run's serial in the prefix) and
 * whether it is the world's or the stages' groups, not counted: a process
 * that skipped one (its run failed before) does not put the next out of
 * step. Its waits share one deadline (--comm-timeout) and end at once
 * when the run is stopped. */

static int meet_tag(int kind)
{
    return meet.id * GLOO_TAGS + kind;
}

/* The meeting's name: the prefix up to its last '/' (the world), and the
 * world's or the groups'. */
static int meet_id(const char *prefix, int group)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    const char *end = prefix ? strrchr(prefix, '/') : NULL;
    for (const char *c = prefix; c && c < end; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return (int)((h & 0xffffffu) * 2 + (group >= 0));
}

/* A message of this meeting from src; 1, 0 (none by the deadline, or the
 * run was stopped), -1 (src is gone). */
static int meet_take(int src, int kind, struct wire_msg *m)
{
    for (;;) {
        if (meet.abort && atomic_load(meet.abort))
            return 0;
        int64_t left = meet.deadline_ms - (int64_t)(probe_now_ns() / 1000000);
        if (left <= 0)
            return 0;
        int got = wire_take(w, src, CHAN_GLOO, meet_tag(kind), left > 100 ? 100 : (int)left, m);
        if (got != 0)
            return got;
    }
}

static int same_group(const struct who *a, const struct who *b)
{
    return a->group == b->group && a->gworld == b->gworld;
}

/* A group's records in group rank order (the group of process p), or NULL
 * when one did not come; *bytes its size. */
static unsigned char *group_records(int p, unsigned char **rec, const size_t *len, size_t *bytes)
{
    const struct who *me = &meet.whos[p];
    size_t each = len[p], n = (size_t)me->gworld;
    unsigned char *out = each ? calloc(n, each) : NULL;
    int seen = 0;
    for (int q = 0; q < wire_size(w) && out; q++) {
        const struct who *o = &meet.whos[q];
        if (!same_group(o, me))
            continue;
        seen++;
        if (!rec[q] || len[q] != each || o->grank < 0 || o->grank >= o->gworld) {
            free(out);
            out = NULL;
            break;
        }
        memcpy(out + (size_t)o->grank * each, rec[q], each);
    }
    if (out && seen != me->gworld) {
        free(out);
        out = NULL;
    }
    *bytes = out ? n * each : 0;
    return out;
}

/* Process 0: the records of every process in a group of more than one
 * (its own: mine, when it is in one), and each its group's back. */
static int serve_meeting(const void *mine, void *all, size_t bytes, char *err, size_t errlen)
{
    int size = wire_size(w);
    unsigned char **rec = calloc((size_t)size, sizeof(*rec)), **out = calloc((size_t)size, sizeof(*out));
    size_t *len = calloc((size_t)size, sizeof(*len)), *olen = calloc((size_t)size, sizeof(*olen));
    int missing = -1, rc = 0, too_big = 0;
    if (!rec || !len || !out || !olen) {
        free(rec);
        free(len);
        free(out);
        free(olen);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (mine) {
        rec[0] = (unsigned char *)mine;
        len[0] = bytes;
    }
    for (int p = 1; p < size; p++) {
        if (meet.whos[p].gworld <= 1)
            continue;
        struct wire_msg m;
        int got = meet_take(p, GLOO_MINE, &m);
        if (got == 1 && m.len > 0) {
            rec[p] = m.data;
            len[p] = m.len;
        } else {
            if (got == 1)
                free(m.data);
            if (missing < 0)
                missing = p;
        }
    }
    /* each group's records, made once, to its members */
    for (int p = 0; p < size; p++) {
        if (meet.whos[p].gworld <= 1)
            continue;
        int first = 0;
        while (!same_group(&meet.whos[first], &meet.whos[p]))
            first++;
        if (first == p) {
            out[p] = group_records(p, rec, len, &olen[p]);
            if (olen[p] > WIRE_MAX_LEN) {
                too_big = meet.whos[p].gworld; /* the whole meeting fails, here too */
                rc = -1;
                free(out[p]);
                out[p] = NULL;
                olen[p] = 0;
            }
        }
        const unsigned char *mine_all = out[first];
        size_t n = olen[first];
        if (p == 0) {
            if (mine_all)
                memcpy(all, mine_all, n);
            else
                rc = -1;
        } else {
            wire_send(w, p, CHAN_GLOO, meet_tag(GLOO_ALL), mine_all, mine_all ? n : 0);
        }
    }
    if (rc != 0 && too_big)
        snprintf(err, errlen,
                 "the gloo addresses of a group of %d ranks are more than process 0 relays (%u MB): meet in a "
                 "folder (--rendezvous file:DIR)",
                 too_big, (unsigned)(WIRE_MAX_LEN >> 20));
    else if (rc != 0 && missing > 0)
        snprintf(err, errlen, "process %d did not send its gloo addresses through process 0", missing);
    else if (rc != 0)
        snprintf(err, errlen, "the group's gloo addresses did not all come to process 0");
    for (int p = 0; p < size; p++) {
        if (p > 0)
            free(rec[p]);
        free(out[p]);
    }
    free(rec);
    free(len);
    free(out);
    free(olen);
    return rc;
}

static int meet_allgather(void *arg, const void *mine, void *all, size_t bytes, int64_t timeout_ms, char *err,
                          size_t errlen)
{
    (void)timeout_ms; /* (the meeting's own deadline) */
    const struct who *me = arg;
    meet.called = 1;
    if (wire_rank(w) == 0)
        return serve_meeting(mine, all, bytes, err, errlen);
    if (wire_send(w, 0, CHAN_GLOO, meet_tag(GLOO_MINE), mine, bytes) != 0) {
        snprintf(err, errlen, "process 0 is gone");
        return -1;
    }
    struct wire_msg m;
    int got = meet_take(0, GLOO_ALL, &m);
    if (got != 1) {
        snprintf(err, errlen, "%s", got < 0 ? "process 0 is gone" : "process 0 sent no gloo addresses in time");
        return -1;
    }
    int whole = m.len == bytes * (size_t)me->gworld;
    if (whole)
        memcpy(all, m.data, m.len);
    else
        snprintf(err, errlen,
                 "process 0 could not give this group its gloo addresses (a member's did not come, or they are "
                 "more than it relays: see its message)");
    free(m.data);
    return whole ? 0 : -1;
}

/* A communicator met through process 0 (see struct who). */
static struct comm *meet_create(int group, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    int size = wire_size(w), rank = wire_rank(w);
    struct who me = {.group = group, .grank = p->rank, .gworld = p->world};
    int64_t timeout_ms = p->timeout_s > 0 ? (int64_t)(p->timeout_s * 1000) : 300 * 1000;
    meet.id = meet_id(p->prefix, group);
    meet.deadline_ms = (int64_t)(probe_now_ns() / 1000000) + timeout_ms;
    meet.abort = p->abort;
    meet.called = 0;
    struct comm *c = NULL;
    if (rank > 0) {
        if (wire_send(w, 0, CHAN_GLOO, meet_tag(GLOO_WHO), &me, sizeof(me)) != 0) {
            snprintf(err, errlen, "gloo's rendezvous: process 0 is gone");
            goto done;
        }
    } else {
        free(meet.whos);
        if (!(meet.whos = calloc((size_t)size, sizeof(*meet.whos)))) {
            snprintf(err, errlen, "gloo's rendezvous: out of memory");
            goto done;
        }
        meet.whos[0] = me;
        for (int q = 1; q < size; q++) {
            struct wire_msg m;
            int got = meet_take(q, GLOO_WHO, &m);
            struct who o = {.group = -2};
            if (got == 1 && m.len == sizeof(o))
                memcpy(&o, m.data, sizeof(o));
            /* (a group of at most every process, each rank in it) */
            if (o.group >= -1 && o.gworld >= 1 && o.gworld <= size && o.grank >= 0 && o.grank < o.gworld)
                meet.whos[q] = o;
            else
                meet.whos[q] = (struct who){.group = -2, .grank = -1, .gworld = 1}; /* (not waited for) */
            if (got == 1)
                free(m.data);
        }
    }
    char why[200] = "";
    if (rank == 0 && me.gworld <= 1 && serve_meeting(NULL, NULL, 0, why, sizeof(why)) != 0) {
        /* (process 0's own communicator is whole: another group's is not) */
    }
    struct comm_gloo_params q = *p;
    q.store = NULL;
    q.allgather = meet_allgather;
    q.allgather_arg = &me;
    c = comm_gloo_create(&q, err, errlen);
    if (!c && !meet.called && me.gworld > 1) {
        /* failed before its addresses were asked: its group is told */
        if (rank > 0)
            wire_send(w, 0, CHAN_GLOO, meet_tag(GLOO_MINE), NULL, 0);
        else
            serve_meeting(NULL, NULL, 0, why, sizeof(why));
    }
done:
    /* what came too late for this meeting goes (what comes later still
     * stays, a few hundred bytes) */
    for (int k = 0; k < GLOO_TAGS; k++)
        wire_drop_tag(w, CHAN_GLOO, meet_tag(k));
    return c;
}
#endif

static struct comm *wire_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    (void)key; /* (p's rank and world are the group's already) */
#ifdef DDPTOP_HAVE_GLOO
    if (!store)
        return meet_create(group, p, err, errlen);
    struct comm_gloo_params q = *p;
    q.store = store;
    return comm_gloo_create(&q, err, errlen);
#else
    (void)group;
    (void)p;
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return NULL;
#endif
}

static const struct procs_net wire_net = {
    .what = "the rendezvous",
    .comm = COMM_GLOO,
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

/* The job's key at an address: DDPTOP_JOB_KEY's, the same text in every
 * process (as torchrun's --rdzv-id is given to every node). Process 0
 * without one makes one and shows it, once, for the others; a worker
 * without one cannot join. 0 with *key, or -1 with err set. */
static int job_key(const char *spec, int rank, uint64_t *key, char *err, size_t errlen)
{
    const char *text = getenv("DDPTOP_JOB_KEY");
    if (text && text[0]) {
        *key = wire_key_of(text);
        return 0;
    }
    if (rank > 0) {
        snprintf(err, errlen,
                 "--rendezvous %.300s: DDPTOP_JOB_KEY is not set: give every process the job's key (process 0 shows "
                 "the one it made when it has none)",
                 spec);
        return -1;
    }
    unsigned char r[8];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        snprintf(err, errlen, "--rendezvous %.300s: no random number for the job's key", spec);
        return -1;
    }
    char made[2 * sizeof(r) + 1];
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(made + 2 * i, 3, "%02x", r[i]);
    fprintf(stderr,
            "ddptop: --rendezvous %s: no DDPTOP_JOB_KEY, so this job's key is %s: start every other process with "
            "DDPTOP_JOB_KEY=%s\n",
            spec, made, made);
    *key = wire_key_of(made);
    return 0;
}

const struct procs_net *procs_net_wire_start(const struct rendezvous *r, int rank, int size, double timeout_s,
                                             struct procs_net_start *st, char *err, size_t errlen)
{
    /* where process 0 listens, when not where the meeting says (wire.h) */
    const char *bind = getenv("DDPTOP_RENDEZVOUS_BIND");
    if (r->kind == RDV_TCP) {
        uint64_t key = 0;
        if (job_key(r->spec, rank, &key, err, errlen) != 0)
            return NULL;
        w = wire_open_tcp(r->host, r->port, key, rank, size, timeout_s, bind, err, errlen);
    } else {
        w = wire_open(r->folder, "job", rank, size, timeout_s, bind, err, errlen);
    }
    if (!w)
        return NULL;
#ifdef DDPTOP_HAVE_GLOO
    /* a folder holds gloo's store too (a stat of a folder the wire has
     * checked already): made now, from the one reading of the option */
    if (r->kind == RDV_FILE && !store) {
        char spec[sizeof(r->folder) + 8];
        struct gloo_shim_error e;
        snprintf(spec, sizeof(spec), "file:%s", r->folder);
        if (!(store = gloo_store_open(spec, &e))) {
            snprintf(err, errlen, "gloo's store: %s", e.msg);
            wire_close(w);
            w = NULL;
            return NULL;
        }
    }
#endif
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
