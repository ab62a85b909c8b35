/* procs.c - ranks as processes (see procs.h): the job's start and end,
 * the runs process 0 announces, the communicators of a process's rank, and
 * the relay that brings every worker's records to process 0, over MPI
 * under mpirun or over the rendezvous folder's connections without it
 * (procs_net.h: the same code on both). */
#include "procs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_gloo.h"
#include "config.h"
#include "probe.h"
#include "procs_net.h"
#include "relay_msg.h"
#include "run.h"
#include "stop.h"

static struct procs self = {.per = 1};

const struct procs *procs_self(void)
{
    return &self;
}

void procs_set_per_process(int per)
{
    self.per = per > 0 ? per : 1;
}

static int spent;

void procs_mark_spent(void)
{
    spent = 1;
}

int procs_spent(void)
{
    return spent;
}

/* Launchers say who started a process in its environment: OpenMPI's
 * mpirun, PMIx (srun --mpi=pmix, prterun), and MPICH's hydra (PMI). */
static int launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

static const struct procs_net *net; /* MPI's, the rendezvous', or none: threads of one process */
static int *node_of;                /* [size]: the world rank of the first process on each process's node */
static char (*host_of)[64];
enum { RUNS_CHAN = 0 }; /* process 0's word on the next run (procs_announce) */
static int zero_lost;   /* a worker: process 0 went away in a run it had not stopped */

int procs_lost_zero(void)
{
    return zero_lost;
}

int procs_default_comm(void)
{
    return net->comm;
}

int procs_built(void)
{
#ifdef DDPTOP_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

/* A carrier's start: the tables are procs.c's from here. */
static void adopt(const struct procs_net *n, struct procs_net_start *st)
{
    net = n;
    node_of = st->node_of;
    host_of = st->host_of;
    self.nodes = 0;
    for (int i = 0; i < self.size; i++)
        self.nodes += node_of[i] == i;
    self.active = 1;
}

int procs_init(int *argc, char ***argv, char *err, size_t errlen)
{
    if (gethostname(self.host, sizeof(self.host)) != 0)
        snprintf(self.host, sizeof(self.host), "?");
    self.host[sizeof(self.host) - 1] = 0;
    if (!launched())
        return 0; /* (threads of one process, or processes to meet: procs_join) */
#ifdef DDPTOP_HAVE_MPI
    struct procs_net_start st = {.self = &self};
    const struct procs_net *n = procs_net_mpi_start(argc, argv, &st, err, errlen);
    if (!n)
        return -1;
    adopt(n, &st);
    return 0;
#else
    if (getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
        snprintf(err, errlen, "mpirun: this ddptop was built without MPI (install libopenmpi-dev and rebuild)");
        return -1;
    }
    return 0;
#endif
}

int procs_speaks(const struct rendezvous *r)
{
    if (self.active || r->kind == RDV_NONE)
        return self.rank == 0;
    /* a process yet to meet: its RANK says (procs_join checks it) */
    const char *rank = getenv("RANK");
    return !rank || atoi(rank) <= 0;
}

/* A whole count from the environment: 0, or -1. */
static int env_count(const char *name, long lo, long hi, int *out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi) {
        snprintf(err, errlen, "--rendezvous: %s must be a whole number from %ld to %ld (got %s%s%s)", name, lo, hi,
                 v ? "'" : "nothing", v ? v : "", v ? "'" : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

int procs_join(const struct rendezvous *r, double timeout_s, char *err, size_t errlen)
{
    if (self.active) {
        snprintf(err, errlen, "--rendezvous: mpirun meets the processes already; leave it out");
        return -1;
    }
    int size, rank;
    if (env_count("WORLD_SIZE", 1, 4096, &size, err, errlen) != 0 ||
        env_count("RANK", 0, size - 1, &rank, err, errlen) != 0)
        return -1;
    struct procs_net_start st = {.self = &self};
    const struct procs_net *n = procs_net_wire_start(r, rank, size, timeout_s, &st, err, errlen);
    if (!n)
        return -1;
    adopt(n, &st);
    self.wire = 1;
    return 0;
}

/* A run's configuration, or the end (no body). */
enum { TAG_RUN = 1 };

void procs_announce(const struct run_config *rc)
{
    if (!self.active || self.rank != 0)
        return;
    for (int p = 1; p < self.size; p++)
        net->send(p, RUNS_CHAN, TAG_RUN, rc, sizeof(*rc));
}

int procs_next_run(struct run_config *rc)
{
    if (!self.active)
        return 0;
    for (;;) {
        struct procs_msg m;
        int got = net->take(0, RUNS_CHAN, TAG_RUN, 0, NULL, NULL, &m);
        if (got < 0)
            return -1; /* process 0 is gone */
        if (got == 0) {
            /* process 0's user may read a final screen for an hour */
            probe_nap_ms(20);
            continue;
        }
        int run = m.len == sizeof(*rc);
        if (run)
            memcpy(rc, m.data, sizeof(*rc));
        free(m.data);
        return run;
    }
}

int procs_launcher_on_tty(void)
{
    /* field 7 of /proc/self/stat: the controlling terminal's device */
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    char line[1024];
    int tty = 0;
    if (fgets(line, sizeof(line), f)) {
        const char *p = strrchr(line, ')'); /* after the command's name, which may hold spaces */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %d", &tty) != 1)
            tty = 0;
    }
    fclose(f);
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)getppid());
    return tty != 0 && stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == (dev_t)tty;
}

int procs_exit(int status)
{
    if (!self.active)
        return status;
    fflush(NULL);
    /* a failed or stopped run (not a usage error, 2) may have left a
     * worker's wait abandoned: process 0 ends the job once its report is
     * out, and a worker that aborted first could cut that report short,
     * so a worker waits for it (a while) */
    int failed_run = status != 0 && status != 2 && self.size > 1;
    if (net->tainted() || (self.rank == 0 && failed_run)) {
        for (int i = 0; self.rank != 0 && i < 100; i++)
            probe_nap_ms(100);
        net->abort(status ? status : 1);
    }
    /* no more runs: the workers' wait ends */
    for (int p = 1; self.rank == 0 && p < self.size; p++)
        net->send(p, RUNS_CHAN, TAG_RUN, NULL, 0);
    net->finish();
    return status;
}

/* Without a carrier (threads of one process), what procs.h's
 * communicators would need. */
static struct comm *no_procs(const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, procs_built() ? "needs mpirun" : "this ddptop was built without MPI");
    return NULL;
}

struct comm *procs_comm_create(char *err, size_t errlen)
{
    return net ? net->comm_create(-1, self.rank, err, errlen) : no_procs("--comm mpi", err, errlen);
}

struct comm *procs_group_comm_create(int group, int key, char *err, size_t errlen)
{
    return net ? net->comm_create(group, key, err, errlen) : no_procs("--comm mpi", err, errlen);
}

struct comm *procs_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    return net ? net->gloo_create(group, key, p, err, errlen) : no_procs("--comm gloo", err, errlen);
}

void procs_gather(const double *mine, int n, double *all)
{
    if (net)
        net->gather(mine, n, all);
    else
        memcpy(all, mine, sizeof(double) * (size_t)n);
}

void procs_bcast(void *buf, int bytes)
{
    if (net)
        net->bcast(buf, bytes);
}

int procs_local_rank_of(int p)
{
    if (!node_of)
        return 0;
    int n = 0;
    for (int q = 0; q < p; q++)
        n += node_of[q] == node_of[p];
    return n;
}

void procs_device_name(int p, const char *dev, char *out, size_t n)
{
    int other = node_of && p > 0 && p < self.size && node_of[p] != node_of[0];
    snprintf(out, n, "%.40s%s%.20s", dev, other ? "@" : "", other ? host_of[p] : "");
}

int procs_most_on_a_node(void)
{
    int most = 1;
    for (int p = 0; p < self.size; p++)
        if (procs_local_rank_of(p) + 1 > most)
            most = procs_local_rank_of(p) + 1;
    return most;
}

/* ---- the relay ---------------------------------------------------------- */

/* A worker says it is alive this often (its main thread, which never
 * waits on training); process 0 gives it up after BEAT_LOST_NS of silence
 * (or --comm-timeout, when shorter). */
#define BEAT_EVERY_NS (250LL * 1000 * 1000)
#define BEAT_LOST_NS (5LL * 1000 * 1000 * 1000)
/* A launcher ends a job with SIGTERM and, shortly after, SIGKILL: OpenMPI's
 * mpirun when one of its processes died (1 s later: odls_base_sigkill_timeout),
 * Slurm at the end of a job (KillWait). Once process 0 has its SIGTERM, a
 * silence longer than two heartbeats gives a process up, so that the report
 * of what was measured is printed before the SIGKILL. */
#define ENDING_LOST_NS (400LL * 1000 * 1000)
/* Process 0's receiving thread looks for messages every millisecond or so;
 * a longer gap is its own absence (the process stopped, or kept from the
 * cores), which is not the workers' silence: it is added to their
 * silence's start. */
#define ABSENT_NS (500LL * 1000 * 1000)

#define CLOCK_ROUNDS 8
/* A worker on another node measures its clock again this often (clocks
 * drift apart by some parts per million: 36 ms an hour at 10 ppm), and
 * gives up on an answer that takes longer than CLOCK_LATE_NS. */
#define CLOCK_EVERY_NS (10LL * 1000 * 1000 * 1000)
#define CLOCK_LATE_NS (1000LL * 1000 * 1000)

/* A worker's records on process 0's clock lie between the relay's start
 * and now, give or take this (a clock offset's error is far smaller): a
 * time outside is a sender's bug, refused (relay_msg.h). */
#define RELAY_SLACK_NS (600LL * 1000 * 1000 * 1000)

struct relay {
    struct run *r;
    int chan; /* its own channel (net->open_chan) */
    pthread_t rx;
    int rx_started;
    _Atomic int rx_quit;
    int64_t open_ns;            /* when it opened */
    int64_t *add_ns, *bound_ns; /* [size]: added to a process's timestamps; the error */
    int *estimates;             /* process 0: [size], the offsets measured so far */
    int64_t clock_every_ns;     /* a worker: how often it measures again (0: never) */
    int64_t clock_at_ns;        /* a worker: its last measure */
    int64_t spin_until_ns;      /* process 0: answer the next ping without a nap until then */
    int done_sent;              /* a worker: its ranks' ends sent */
    int sent_stop, sent_paused;
    int told_stop;             /* a worker: process 0's stop came */
    int64_t stop_late_ns;      /* a worker: how late it acts on that stop (a test's hook) */
    int64_t stop_due_ns;       /* a worker: when the stop it holds is acted on (0: none held) */
    int64_t last_beat_ns;      /* a worker: its last heartbeat */
    int64_t *seen_ns;          /* process 0: [size], when each process was last heard from */
    int64_t awake_ns;          /* process 0: when its receiving thread last looked */
    unsigned char *ended;      /* process 0: [size], its ranks ended (or it was given up) */
    int *done_of;              /* process 0: [size], its ranks that ended */
    struct relay_seen seen;    /* process 0: [world] each, what relay_decode has passed */
    int64_t lost_ns;           /* silence after which a process is given up */
    int left;                  /* process 0: the workers whose ranks have not all ended */
    _Atomic int64_t ending_ns; /* process 0: when its SIGTERM came (0: none) */
    unsigned char *buf;        /* a worker's message being built */
    size_t cap;
};

/* A clock reading from p on chan with tag (relay_decode_time): 0, -1 when
 * none came (or p is gone) within timeout_ms (-1: for ever), -2 when what
 * came is no clock reading (err says why). */
static int take_time(int p, int chan, int tag, int timeout_ms, int64_t *t, char *err, size_t errlen)
{
    struct procs_msg m;
    if (net->take(p, chan, tag, timeout_ms, NULL, NULL, &m) != 1)
        return -1;
    int rc = relay_decode_time(m.data, m.len, t, err, errlen) == 0 ? 0 : -2;
    free(m.data);
    return rc;
}

/* Process p shares process 0's CLOCK_MONOTONIC (the same node), and its
 * clock is not measured. DDPTOP_CLOCK_PINGPONG=1 measures on one node too,
 * where the true offset is 0: the test of the estimate and its bound. */
static int clock_shared(int p)
{
    const char *force = getenv("DDPTOP_CLOCK_PINGPONG");
    return node_of[p] == node_of[0] && !(force && force[0] == '1');
}

static void end_rank(struct relay *rl, const struct relay_done *d);

/* Process 0: worker p sent what relay_decode refused (why): its ranks
 * that had not ended end, failed, naming it, as a silent one's do; the
 * job fails with them. Returns 1 (a worker ended) or 0 (it had). */
static int refuse(struct relay *rl, int p, const char *why)
{
    if (rl->ended[p])
        return 0;
    for (int i = p * self.per; i < (p + 1) * self.per && i < rl->r->world; i++) {
        if (atomic_load(&rl->r->ranks[i].finished))
            continue;
        struct relay_done d = {.rank = i, .rc = -1, .fail_ns = probe_now_ns()};
        snprintf(d.dev, sizeof(d.dev), "cpu");
        snprintf(d.err, sizeof(d.err), "process %d on %.64s sent a bad message: %s", p, host_of[p], why);
        rl->r->ranks[i].given_up = 1; /* (before end_rank's finished) */
        end_rank(rl, &d);
    }
    rl->ended[p] = 1;
    return 1;
}

/* Ping-pong with every worker: the best of CLOCK_ROUNDS round trips gives
 * its clock's offset, within half that round trip. */
static void measure_clocks(struct relay *rl)
{
    for (int p = 1; p < self.size; p++) {
        int same_node = clock_shared(p);
        int64_t best = INT64_MAX, add = 0;
        char why[192];
        for (int k = 0; k < CLOCK_ROUNDS; k++) {
            int64_t t0 = probe_now_ns(), tr = 0;
            if (self.rank == 0) {
                int got = net->send(p, rl->chan, RELAY_TAG_CLOCK, &t0, sizeof(t0)) != 0
                              ? -1
                              : take_time(p, rl->chan, RELAY_TAG_CLOCK, -1, &tr, why, sizeof(why));
                if (got == -2)
                    refuse(rl, p, why);
                if (got != 0)
                    break; /* (p is gone: the relay gives it up) */
                int64_t t1 = probe_now_ns();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    add = (t0 + t1) / 2 - tr;
                }
            } else if (self.rank == p) {
                if (take_time(0, rl->chan, RELAY_TAG_CLOCK, -1, &tr, why, sizeof(why)) != 0)
                    break;
                tr = probe_now_ns();
                net->send(0, rl->chan, RELAY_TAG_CLOCK, &tr, sizeof(tr));
            }
        }
        /* one node shares CLOCK_MONOTONIC: exact, whatever the ping-pong says */
        rl->add_ns[p] = same_node ? 0 : add;
        rl->bound_ns[p] = same_node ? 0 : best / 2;
        rl->estimates[p] = !same_node;
    }
}

/* A worker whose clock was measured (another node, or
 * DDPTOP_CLOCK_PINGPONG=1) measures it again every CLOCK_EVERY_NS (or
 * DDPTOP_CLOCK_REFRESH_MS) while its ranks run: CLOCK_ROUNDS pings that
 * process 0's receiving thread answers with its time, the best round trip
 * kept as at the start, and the offset sent to process 0, which applies it
 * to the records that follow. */
static int64_t clock_every(void)
{
    if (clock_shared(self.rank))
        return 0;
    const char *ms = getenv("DDPTOP_CLOCK_REFRESH_MS");
    long v = ms && ms[0] ? atol(ms) : 0;
    return v > 0 ? v * 1000LL * 1000 : CLOCK_EVERY_NS;
}

/* A test's hook: DDPTOP_TEST_STOP_LATE_MS makes a worker act on process
 * 0's stop that long after it came, so that its ranks always meet a
 * collective process 0's ranks have left (the race a stop runs on
 * another machine: test_rendezvous). */
static int64_t stop_late(void)
{
    const char *ms = getenv("DDPTOP_TEST_STOP_LATE_MS");
    long v = ms && ms[0] ? atol(ms) : 0;
    return v > 0 ? v * 1000LL * 1000 : 0;
}

/* CLOCK_ROUNDS pings, each answered within CLOCK_LATE_NS, or the worker
 * measures no more this run (a late answer is left on the channel,
 * which no one reads again). */
static void clock_again(struct relay *rl)
{
    int64_t best = INT64_MAX, add = 0;
    char why[128];
    for (int k = 0; k < CLOCK_ROUNDS; k++) {
        int64_t t0 = probe_now_ns(), tr = 0;
        if (net->send(0, rl->chan, RELAY_TAG_PING, &t0, sizeof(t0)) != 0 ||
            take_time(0, rl->chan, RELAY_TAG_PONG, (int)(CLOCK_LATE_NS / 1000000), &tr, why, sizeof(why)) != 0) {
            rl->clock_every_ns = 0;
            return;
        }
        int64_t t1 = probe_now_ns();
        if (t1 - t0 < best) {
            best = t1 - t0;
            add = tr - (t0 + t1) / 2;
        }
    }
    int64_t est[2] = {add, best / 2};
    net->send(0, rl->chan, RELAY_TAG_OFFSET, est, sizeof(est));
    rl->clock_at_ns = probe_now_ns();
}

/* Into a ring whose only producer is the receiving thread. */
static void push_all(struct spsc_ring *ring, const void *recs, size_t size, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spsc_push(ring, (const unsigned char *)recs + i * size);
}

/* A rank's end: from its worker (checked, its time on process 0's
 * clock), or made by process 0 for a worker given up. */
static void end_rank(struct relay *rl, const struct relay_done *d)
{
    struct rank *k = &rl->r->ranks[d->rank];
    k->rc = d->rc;
    k->fail_ns = d->fail_ns;
    snprintf(k->err, sizeof(k->err), "%s", d->err);
    k->stage_first = d->stage_first;
    k->stage_end = d->stage_end;
    memcpy(k->stage_mem, d->stage_mem, sizeof(k->stage_mem));
    atomic_store(&k->mem.now, d->mem_now);
    atomic_store(&k->mem.peak, d->mem_peak);
    procs_device_name(d->rank / self.per, d->dev, k->dev.name, sizeof(k->dev.name));
    atomic_store(&k->finished, 1);
}

/* A worker's message that relay_decode passed: its records into its
 * rank's rings, on process 0's clock. */
static void deliver(struct relay *rl, int p, struct relay_in *in)
{
    if (in->tag == RELAY_TAG_DONE) {
        if (in->done.fail_ns)
            in->done.fail_ns += rl->add_ns[p];
        end_rank(rl, &in->done);
        return;
    }
    struct rank *k = &rl->r->ranks[in->hdr.rank];
    atomic_store(&k->remote_dropped, in->hdr.dropped);
    atomic_store(&k->mem.now, in->hdr.mem_now);
    atomic_store(&k->mem.peak, in->hdr.mem_peak);
    int64_t add = rl->add_ns[p];
    if (in->tag == RELAY_TAG_SPANS) {
        if (in->hdr.ring == RANK_RING_GPU && !rl->r->on_gpu)
            return; /* (process 0 runs on the GPU when its workers do: one configuration) */
        struct span *s = (struct span *)in->recs;
        for (size_t i = 0; i < in->n; i++) {
            s[i].t0_ns += add;
            s[i].t1_ns += add;
        }
        push_all(in->hdr.ring == RANK_RING_COMM  ? &k->spans_comm
                 : in->hdr.ring == RANK_RING_GPU ? &k->spans_gpu
                                                 : &k->spans_main,
                 s, sizeof(*s), in->n);
    } else if (in->tag == RELAY_TAG_STEPS) {
        struct step_rec *s = (struct step_rec *)in->recs;
        for (size_t i = 0; i < in->n; i++) {
            s[i].t0_ns += add;
            s[i].t1_ns += add;
            atomic_store(&k->step, s[i].step);
        }
        push_all(&k->steps, s, sizeof(*s), in->n);
    } else if (in->tag == RELAY_TAG_EPOCHS) {
        push_all(&k->epochs, in->recs, sizeof(struct epoch_rec), in->n);
    }
}

/* Process 0's receiving thread is looking now (the time returned): a gap
 * since it last looked longer than ABSENT_NS is forgiven every worker. */
static int64_t awake(struct relay *rl)
{
    int64_t now = probe_now_ns(), gap = now - rl->awake_ns;
    if (gap > ABSENT_NS)
        for (int p = 1; p < self.size; p++)
            rl->seen_ns[p] = rl->seen_ns[p] + gap < now ? rl->seen_ns[p] + gap : now;
    rl->awake_ns = now;
    return now;
}

/* A worker silent for rl->lost_ns, or whose connection closed: its ranks
 * that had not ended end, failed, naming it. only: that worker alone, or
 * -1 for all of them, which is fair only once every message waiting has
 * been taken: a worker's message not yet read (process 0 busy with
 * another's) is not its silence, and under MPI a worker whose long message
 * waits to be read is blocked in MPI_Send and sends no heartbeat either.
 * (Process 0's own absence is forgiven by awake.) */
static int give_up_silent(struct relay *rl, int only)
{
    int64_t now = awake(rl), lost = rl->lost_ns;
    int ending = atomic_load(&rl->ending_ns) != 0;
    if (ending && lost > ENDING_LOST_NS)
        lost = ENDING_LOST_NS;
    int n = 0;
    for (int p = 1; p < self.size; p++) {
        if (only >= 0 && p != only)
            continue;
        int gone = !net->alive(p);
        if (rl->ended[p] || (now - rl->seen_ns[p] <= lost && !gone))
            continue;
        for (int i = p * self.per; i < (p + 1) * self.per; i++) {
            if (atomic_load(&rl->r->ranks[i].finished))
                continue;
            struct relay_done d = {.rank = i, .rc = -1, .fail_ns = now};
            snprintf(d.dev, sizeof(d.dev), "cpu");
            if (gone)
                snprintf(d.err, sizeof(d.err), "process %d on %.64s is gone: its connection closed%s", p, host_of[p],
                         ending ? " when the job was ended (SIGTERM)" : "");
            else
                snprintf(d.err, sizeof(d.err), "process %d on %.64s stopped answering: nothing from it for %.1f s%s", p,
                         host_of[p], (double)(now - rl->seen_ns[p]) / 1e9,
                         ending ? " when the job was ended (SIGTERM)" : "");
            rl->r->ranks[i].given_up = 1; /* (before end_rank's finished) */
            end_rank(rl, &d);
        }
        rl->ended[p] = 1;
        n++;
    }
    return n;
}

/* One message from worker p: checked whole (relay_decode) before any of
 * it is used. */
static void take_in(struct relay *rl, int p, const struct procs_msg *m)
{
    rl->seen_ns[p] = probe_now_ns();
    struct relay_limits lim = {.world = rl->r->world,
                               .per = self.per,
                               .proc = p,
                               .add_ns = rl->add_ns[p],
                               .lo_ns = rl->open_ns - RELAY_SLACK_NS,
                               .hi_ns = rl->seen_ns[p] + RELAY_SLACK_NS};
    struct relay_in in;
    char why[192];
    if (relay_decode(m->tag, m->data, m->len, &lim, &rl->seen, &in, why, sizeof(why)) != 0) {
        rl->left -= refuse(rl, p, why);
        return;
    }
    if (m->tag == RELAY_TAG_PING) {
        /* a worker measures its clock: the answer at once, and the next
         * rounds' without a nap */
        int64_t now = probe_now_ns();
        net->send(p, rl->chan, RELAY_TAG_PONG, &now, sizeof(now));
        rl->spin_until_ns = now + 2 * 1000 * 1000;
        return;
    }
    if (m->tag == RELAY_TAG_OFFSET) {
        rl->add_ns[p] = in.offset[0];
        rl->bound_ns[p] = in.offset[1];
        rl->estimates[p]++;
        return;
    }
    deliver(rl, p, &in);
    if (m->tag == RELAY_TAG_DONE && ++rl->done_of[p] == self.per) {
        rl->ended[p] = 1;
        rl->left--;
    }
}

/* While a long message arrives from p (net->take): p is given up if it
 * falls silent meanwhile (or its connection closes), and its message with
 * it; the others wait until their messages have been taken. */
static int still_wanted(void *ctx, int p)
{
    struct relay *rl = ctx;
    rl->left -= give_up_silent(rl, p > 0 && p < self.size ? p : 0);
    return !atomic_load(&rl->rx_quit) && !(p > 0 && p < self.size && rl->ended[p]);
}

/* Process 0's receiving thread: every worker's records into its ranks'
 * rings, until every worker's ranks have ended, or its process was given
 * up (or relay_close). */
static void *receive(void *arg)
{
    struct relay *rl = arg;
    rl->left = 0;
    for (int p = 1; p < self.size; p++)
        rl->left += !rl->ended[p]; /* (a bad clock reading ended one already) */
    rl->awake_ns = probe_now_ns();
    while (rl->left > 0 && !atomic_load(&rl->rx_quit)) {
        awake(rl);
        struct procs_msg m;
        if (net->take(PNET_ANY, rl->chan, PNET_ANY, 0, still_wanted, rl, &m) != 1) {
            rl->left -= give_up_silent(rl, -1); /* (nothing waits to be taken) */
            if (probe_now_ns() > rl->spin_until_ns)
                probe_nap_ms(1);
            continue;
        }
        int p = m.src;
        if (p > 0 && p < self.size && !rl->ended[p])
            take_in(rl, p, &m);
        /* (else a process given up that spoke again: too late) */
        free(m.data);
    }
    return NULL;
}

/* The relay's memory (what relay_open made, or some of it). */
static void relay_free(struct relay *rl)
{
    if (!rl)
        return;
    free(rl->add_ns);
    free(rl->bound_ns);
    free(rl->seen_ns);
    free(rl->ended);
    free(rl->done_of);
    free(rl->estimates);
    free(rl->seen.next_step);
    free(rl->seen.done);
    free(rl->buf);
    free(rl);
}

struct relay *relay_open(struct run *r, char *err, size_t errlen)
{
    struct relay *rl = calloc(1, sizeof(*rl));
    if (rl) {
        rl->add_ns = calloc((size_t)self.size, sizeof(int64_t));
        rl->bound_ns = calloc((size_t)self.size, sizeof(int64_t));
        rl->seen_ns = calloc((size_t)self.size, sizeof(int64_t));
        rl->ended = calloc((size_t)self.size, 1);
        rl->done_of = calloc((size_t)self.size, sizeof(int));
        rl->estimates = calloc((size_t)self.size, sizeof(int));
        rl->seen.next_step = calloc((size_t)r->world, sizeof(int64_t));
        rl->seen.done = calloc((size_t)r->world, 1);
    }
    if (!rl || !rl->add_ns || !rl->bound_ns || !rl->seen_ns || !rl->ended || !rl->done_of || !rl->estimates ||
        !rl->seen.next_step || !rl->seen.done) {
        snprintf(err, errlen, "out of memory for the relay between processes");
        relay_free(rl);
        return NULL;
    }
    rl->r = r;
    rl->open_ns = probe_now_ns();
    if ((rl->chan = net->open_chan()) < 0) {
        snprintf(err, errlen, "no channel left for the relay between processes");
        relay_free(rl);
        return NULL;
    }
    measure_clocks(rl);
    for (int i = 0; i < r->world && i / self.per < self.size; i++) {
        r->ranks[i].clock_add_ns = rl->add_ns[i / self.per];
        r->ranks[i].clock_err_ns = rl->bound_ns[i / self.per];
        r->ranks[i].clock_estimates = rl->estimates[i / self.per];
        snprintf(r->ranks[i].host, sizeof(r->ranks[i].host), "%s", host_of[i / self.per]);
    }
    int64_t timeout = (int64_t)(r->cfg.comm_timeout_s * 1e9);
    rl->lost_ns = timeout > 0 && timeout < BEAT_LOST_NS ? timeout : BEAT_LOST_NS;
    rl->stop_late_ns = stop_late();
    rl->last_beat_ns = probe_now_ns();
    if (self.rank > 0) {
        rl->clock_every_ns = clock_every();
        rl->clock_at_ns = rl->last_beat_ns;
    }
    for (int p = 0; p < self.size; p++)
        rl->seen_ns[p] = rl->last_beat_ns;
    if (self.rank == 0 && self.size > 1) {
        if (pthread_create(&rl->rx, NULL, receive, rl) != 0) {
            fprintf(stderr, "ddptop: cannot start the relay's thread\n");
            net->abort(1); /* the workers would wait for it forever */
        }
        rl->rx_started = 1;
    }
    return rl;
}

static void send_msg(struct relay *rl, int tag, const struct relay_hdr *h, const void *body, size_t bytes)
{
    size_t len = sizeof(*h) + bytes;
    if (len > rl->cap) {
        unsigned char *nb = realloc(rl->buf, len);
        if (!nb)
            return; /* the records are lost, as to a full ring */
        rl->buf = nb;
        rl->cap = len;
    }
    memcpy(rl->buf, h, sizeof(*h));
    memcpy(rl->buf + sizeof(*h), body, bytes);
    net->send(0, rl->chan, tag, rl->buf, len);
}

/* A worker's sink (run_drain): every batch of records one message to
 * process 0, with its header. */
struct fwd {
    struct relay *rl;
    struct relay_hdr h;
};

static void fwd_spans(void *ctx, struct rank *k, int ring, struct span *s, size_t n)
{
    struct fwd *f = ctx;
    f->h.ring = ring;
    send_msg(f->rl, RELAY_TAG_SPANS, &f->h, s, n * sizeof(*s));
}

static void fwd_steps(void *ctx, struct rank *k, struct step_rec *s, size_t n)
{
    struct fwd *f = ctx;
    send_msg(f->rl, RELAY_TAG_STEPS, &f->h, s, n * sizeof(*s));
}

static void fwd_epochs(void *ctx, struct rank *k, struct epoch_rec *e, size_t n)
{
    struct fwd *f = ctx;
    send_msg(f->rl, RELAY_TAG_EPOCHS, &f->h, e, n * sizeof(*e));
}

/* A worker: its rank's new records to process 0, in the collector's
 * order (run_drain). */
static void forward(struct relay *rl, struct rank *k)
{
    int gpu = rl->r->on_gpu; /* (its device records: CUPTI's, GPU runs only) */
    struct fwd f = {.rl = rl,
                    .h = {.rank = k->id,
                          .dropped = spsc_dropped(&k->spans_main) + spsc_dropped(&k->spans_comm) +
                                     (gpu ? spsc_dropped(&k->spans_gpu) : 0),
                          .mem_now = atomic_load(&k->mem.now),
                          .mem_peak = atomic_load(&k->mem.peak)}};
    const struct drain_sink sink = {fwd_spans, fwd_steps, fwd_epochs, &f};
    run_drain(k, gpu, &sink);
}

static void send_ctrl(struct relay *rl, int what, uint32_t at)
{
    struct relay_ctrl c = {.what = what, .at = at};
    for (int p = 1; p < self.size; p++)
        net->send(p, rl->chan, RELAY_TAG_CTRL, &c, sizeof(c));
}

int relay_poll(struct relay *rl, uint32_t *at)
{
    struct run *r = rl->r;
    if (self.rank == 0) {
        if (stop_signal == SIGTERM && !atomic_load(&rl->ending_ns))
            atomic_store(&rl->ending_ns, probe_now_ns()); /* for the receiving thread */
        if (atomic_load(&r->abort) && !rl->sent_stop) {
            send_ctrl(rl, RELAY_STOP, 0);
            rl->sent_stop = 1;
        }
        int paused = atomic_load(&r->paused);
        if (!rl->sent_stop && paused != rl->sent_paused) {
            send_ctrl(rl, paused ? RELAY_PAUSE : RELAY_RESUME, atomic_load(&r->pause_at));
            rl->sent_paused = paused;
        }
        return RELAY_NONE;
    }
    for (int t = 0; t < self.per; t++)
        forward(rl, &r->ranks[self.rank * self.per + t]);
    if (probe_now_ns() - rl->last_beat_ns > BEAT_EVERY_NS) {
        net->send(0, rl->chan, RELAY_TAG_BEAT, NULL, 0);
        rl->last_beat_ns = probe_now_ns();
    }
    /* (not once a rank's end was sent: process 0 may have stopped
     * listening) */
    if (rl->clock_every_ns > 0 && !rl->done_sent && probe_now_ns() - rl->clock_at_ns > rl->clock_every_ns)
        clock_again(rl);
    if (rl->stop_due_ns > 0)
        return probe_now_ns() >= rl->stop_due_ns ? RELAY_STOP : RELAY_NONE;
    struct procs_msg m;
    int got = net->take(0, rl->chan, RELAY_TAG_CTRL, 0, NULL, NULL, &m);
    if (got < 0) {
        /* process 0 is gone: so is the job (after its stop, as it ends;
         * before, it died) */
        zero_lost |= !rl->told_stop;
        return RELAY_STOP;
    }
    if (got == 0)
        return RELAY_NONE;
    struct relay_ctrl c;
    char why[128];
    if (relay_decode_ctrl(m.data, m.len, &c, why, sizeof(why)) != 0)
        c = (struct relay_ctrl){RELAY_NONE, 0}; /* (process 0's own bug: nothing to do) */
    free(m.data);
    *at = c.at;
    rl->told_stop |= c.what == RELAY_STOP;
    if (c.what == RELAY_STOP && rl->stop_late_ns > 0) {
        rl->stop_due_ns = probe_now_ns() + rl->stop_late_ns;
        return RELAY_NONE;
    }
    return c.what;
}

void relay_rank_done(struct relay *rl, int rank)
{
    struct rank *k = &rl->r->ranks[rank];
    forward(rl, k);
    struct relay_done d = {.rank = rank,
                           .rc = k->rc,
                           .stage_first = k->stage_first,
                           .stage_end = k->stage_end,
                           .mem_now = atomic_load(&k->mem.now),
                           .mem_peak = atomic_load(&k->mem.peak),
                           .fail_ns = k->rc != 0 ? k->fail_ns : 0};
    memcpy(d.stage_mem, k->stage_mem, sizeof(d.stage_mem));
    snprintf(d.dev, sizeof(d.dev), "%s", k->dev.name[0] ? k->dev.name : "cpu");
    snprintf(d.err, sizeof(d.err), "%s", k->err);
    net->send(0, rl->chan, RELAY_TAG_DONE, &d, sizeof(d));
    rl->done_sent++;
}

void relay_close(struct relay *rl)
{
    if (!rl)
        return;
    if (rl->rx_started) {
        atomic_store(&rl->rx_quit, 1);
        pthread_join(rl->rx, NULL);
        /* the last estimates, for the trace's end (the thread that took
         * them is gone) */
        struct run *r = rl->r;
        for (int i = self.per; i < r->world && i / self.per < self.size; i++) {
            r->ranks[i].clock_add_ns = rl->add_ns[i / self.per];
            r->ranks[i].clock_err_ns = rl->bound_ns[i / self.per];
            r->ranks[i].clock_estimates = rl->estimates[i / self.per];
        }
    }
    /* (a worker's stop message that crossed its end is still queued: it
     * goes with the channel) */
    net->close_chan(rl->chan);
    relay_free(rl);
}
