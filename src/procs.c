/* procs.c - ranks as processes under mpirun (see procs.h): starting and
 * ending MPI, the MPI communicator of a process's rank, and the relay that
 * brings every worker's records to process 0. */
#include "procs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_gloo.h"
#include "config.h"
#include "run.h"

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

#ifdef DDPTOP_HAVE_MPI
#include <mpi.h>
#include <pthread.h>
#include <time.h>

#include "comm_mpi.h"
#include "stop.h"
#ifdef DDPTOP_HAVE_GLOO
#include "comm_gloo_mpi.h"
#endif

static void nap_ms(int ms);

static int *node_of;       /* [size]: the world rank of the first process on each process's node */
static MPI_Comm runs_comm; /* process 0's word on the next run (procs_announce) */
static char (*host_of)[64];

int procs_built(void)
{
    return 1;
}

int procs_init(int *argc, char ***argv, char *err, size_t errlen)
{
    if (!launched())
        return 0;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpirun: MPI_Init_thread failed");
        return -1;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        /* rank threads, the relay and the collector all call MPI */
        snprintf(err, errlen, "mpirun: this MPI library gives threads level %d; ddptop needs MPI_THREAD_MULTIPLE",
                 provided);
        MPI_Finalize();
        return -1;
    }
    self.active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &self.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &self.size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, self.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &self.local_rank);
    MPI_Comm_size(node, &self.local_size);
    int first = self.rank;
    MPI_Bcast(&first, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    if (gethostname(self.host, sizeof(self.host)) != 0)
        snprintf(self.host, sizeof(self.host), "?");
    self.host[sizeof(self.host) - 1] = 0;
    node_of = calloc((size_t)self.size, sizeof(*node_of));
    host_of = calloc((size_t)self.size, sizeof(*host_of));
    if (!node_of || !host_of) {
        snprintf(err, errlen, "mpirun: out of memory for %d processes", self.size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Allgather(&first, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(self.host, sizeof(self.host), MPI_CHAR, host_of, sizeof(self.host), MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; i < self.size; i++)
        self.nodes += node_of[i] == i;
    MPI_Comm_dup(MPI_COMM_WORLD, &runs_comm);
    return 0;
}

/* A run's configuration, or the end (no body). */
enum { TAG_RUN = 1 };

void procs_announce(const struct run_config *rc)
{
    if (!self.active || self.rank != 0)
        return;
    for (int p = 1; p < self.size; p++)
        MPI_Send(rc, (int)sizeof(*rc), MPI_BYTE, p, TAG_RUN, runs_comm);
}

int procs_next_run(struct run_config *rc)
{
    for (;;) {
        int found = 0;
        MPI_Status st;
        MPI_Iprobe(0, TAG_RUN, runs_comm, &found, &st);
        if (!found) {
            /* process 0's user may read a final screen for an hour */
            nap_ms(20);
            continue;
        }
        int len = 0;
        MPI_Get_count(&st, MPI_BYTE, &len);
        if (len != (int)sizeof(*rc)) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_RUN, runs_comm, MPI_STATUS_IGNORE);
            return 0;
        }
        MPI_Recv(rc, len, MPI_BYTE, 0, TAG_RUN, runs_comm, MPI_STATUS_IGNORE);
        return 1;
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
    if (comm_mpi_tainted() || (self.rank == 0 && failed_run)) {
        for (int i = 0; self.rank != 0 && i < 100; i++)
            nap_ms(100);
        MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    }
    /* no more runs: the workers' wait ends */
    for (int p = 1; self.rank == 0 && p < self.size; p++)
        MPI_Send(NULL, 0, MPI_BYTE, p, TAG_RUN, runs_comm);
    MPI_Comm_free(&runs_comm);
    MPI_Finalize();
    return status;
}

struct comm *procs_comm_create(char *err, size_t errlen)
{
    return comm_mpi_create(MPI_COMM_WORLD, err, errlen);
}

struct comm *procs_group_comm_create(int group, int key, char *err, size_t errlen)
{
    MPI_Comm g;
    if (MPI_Comm_split(MPI_COMM_WORLD, group, key, &g) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Comm_split failed");
        return NULL;
    }
    struct comm *c = comm_mpi_create(g, err, errlen); /* (over a duplicate) */
    MPI_Comm_free(&g);
    return c;
}

#ifdef DDPTOP_HAVE_GLOO
struct comm *procs_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    if (group < 0)
        return comm_gloo_create_mpi(MPI_COMM_WORLD, p, err, errlen);
    MPI_Comm g;
    if (MPI_Comm_split(MPI_COMM_WORLD, group, key, &g) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Comm_split failed");
        return NULL;
    }
    struct comm *c = comm_gloo_create_mpi(g, p, err, errlen); /* (MPI carries its rendezvous only) */
    MPI_Comm_free(&g);
    return c;
}
#else
struct comm *procs_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm gloo: %s", comm_gloo_unavailable());
    return NULL;
}
#endif

void procs_gather(const double *mine, int n, double *all)
{
    MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

void procs_bcast(void *buf, int bytes)
{
    MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

int procs_local_rank_of(int p)
{
    int n = 0;
    for (int q = 0; q < p; q++)
        n += node_of[q] == node_of[p];
    return n;
}

void procs_device_name(int p, const char *dev, char *out, size_t n)
{
    int other = p > 0 && p < self.size && node_of[p] != node_of[0];
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
enum { TAG_SPANS = 1, TAG_STEPS, TAG_EPOCHS, TAG_DONE, TAG_CTRL, TAG_CLOCK, TAG_BEAT, TAG_PING, TAG_PONG, TAG_OFFSET };

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

/* What leads every record message: whose, which ring, the records lost
 * to full rings on the worker so far, and the device memory the rank holds
 * (the Ranks pane's mem and peak, live). */
struct relay_hdr {
    int32_t rank, ring;
    uint64_t dropped;
    int64_t mem_now, mem_peak;
};

/* A rank's end, and what the report reads of a rank after the run. */
struct relay_done {
    int32_t rank, rc;
    int32_t stage_first, stage_end;
    double stage_mem[SMEM_KINDS];
    int64_t mem_now, mem_peak; /* its device memory (struct device_mem) */
    char dev[64];
    char err[256];
};

struct relay_ctrl {
    int32_t what;
    uint32_t at; /* RELAY_PAUSE: the step the ranks stop before */
};

#define CLOCK_ROUNDS 8
/* A worker on another node measures its clock again this often (clocks
 * drift apart by some parts per million: 36 ms an hour at 10 ppm), and
 * gives up on an answer that takes longer than CLOCK_LATE_NS. */
#define CLOCK_EVERY_NS (10LL * 1000 * 1000 * 1000)
#define CLOCK_LATE_NS (1000LL * 1000 * 1000)

struct relay {
    struct run *r;
    MPI_Comm mc;
    pthread_t rx;
    int rx_started;
    _Atomic int rx_quit;
    int64_t *add_ns, *bound_ns; /* [size]: added to a process's timestamps; the error */
    int *estimates;             /* process 0: [size], the offsets measured so far */
    int64_t clock_every_ns;     /* a worker: how often it measures again (0: never) */
    int64_t clock_at_ns;        /* a worker: its last measure */
    int64_t spin_until_ns;      /* process 0: answer the next ping without a nap until then */
    int done_sent;              /* a worker: its ranks' ends sent */
    int sent_stop, sent_paused;
    int64_t last_beat_ns;      /* a worker: its last heartbeat */
    int64_t *seen_ns;          /* process 0: [size], when each process was last heard from */
    unsigned char *ended;      /* process 0: [size], its ranks ended (or it was given up) */
    int *done_of;              /* process 0: [size], its ranks that ended */
    int64_t lost_ns;           /* silence after which a process is given up */
    _Atomic int64_t ending_ns; /* process 0: when its SIGTERM came (0: none) */
    unsigned char *buf;        /* a worker's message being built */
    size_t cap;
};

static void nap_ms(int ms)
{
    struct timespec ts = {0, ms * 1000L * 1000};
    nanosleep(&ts, NULL);
}

/* Process p shares process 0's CLOCK_MONOTONIC (the same node), and its
 * clock is not measured. DDPTOP_CLOCK_PINGPONG=1 measures on one node too,
 * where the true offset is 0: the test of the estimate and its bound. */
static int clock_shared(int p)
{
    const char *force = getenv("DDPTOP_CLOCK_PINGPONG");
    return node_of[p] == node_of[0] && !(force && force[0] == '1');
}

/* Ping-pong with every worker: the best of CLOCK_ROUNDS round trips gives
 * its clock's offset, within half that round trip. */
static void measure_clocks(struct relay *rl)
{
    for (int p = 1; p < self.size; p++) {
        int same_node = clock_shared(p);
        int64_t best = INT64_MAX, add = 0;
        for (int k = 0; k < CLOCK_ROUNDS; k++) {
            int64_t t0 = probe_now_ns(), tr = 0;
            if (self.rank == 0) {
                MPI_Send(&t0, 1, MPI_INT64_T, p, TAG_CLOCK, rl->mc);
                MPI_Recv(&tr, 1, MPI_INT64_T, p, TAG_CLOCK, rl->mc, MPI_STATUS_IGNORE);
                int64_t t1 = probe_now_ns();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    add = (t0 + t1) / 2 - tr;
                }
            } else if (self.rank == p) {
                MPI_Recv(&tr, 1, MPI_INT64_T, 0, TAG_CLOCK, rl->mc, MPI_STATUS_IGNORE);
                tr = probe_now_ns();
                MPI_Send(&tr, 1, MPI_INT64_T, 0, TAG_CLOCK, rl->mc);
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

/* Waits for req until CLOCK_LATE_NS from t0; 0 when it completed. A late
 * answer is cancelled, and the worker measures no more this run. */
static int clock_wait(MPI_Request *req, int64_t t0)
{
    for (;;) {
        int done = 0;
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return 0;
        if (probe_now_ns() - t0 > CLOCK_LATE_NS) {
            MPI_Cancel(req);
            MPI_Wait(req, MPI_STATUS_IGNORE);
            return -1;
        }
    }
}

static void clock_again(struct relay *rl)
{
    int64_t best = INT64_MAX, add = 0;
    for (int k = 0; k < CLOCK_ROUNDS; k++) {
        int64_t t0 = probe_now_ns(), tr = 0;
        MPI_Request req;
        MPI_Irecv(&tr, 1, MPI_INT64_T, 0, TAG_PONG, rl->mc, &req);
        MPI_Send(&t0, 1, MPI_INT64_T, 0, TAG_PING, rl->mc);
        if (clock_wait(&req, t0) != 0) {
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
    MPI_Send(est, 2, MPI_INT64_T, 0, TAG_OFFSET, rl->mc);
    rl->clock_at_ns = probe_now_ns();
}

/* Into a ring whose only producer is the receiving thread. */
static void push_all(struct spsc_ring *ring, const void *recs, size_t size, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spsc_push(ring, (const unsigned char *)recs + i * size);
}

static void push_spans(struct relay *rl, struct rank *k, const struct relay_hdr *h, struct span *s, size_t n)
{
    int64_t add = rl->add_ns[k->id / self.per];
    for (size_t i = 0; i < n; i++) {
        s[i].t0_ns += add;
        s[i].t1_ns += add;
    }
    if (h->ring == RANK_RING_GPU && !rl->r->on_gpu)
        return; /* (process 0 runs on the GPU when its workers do: one configuration) */
    push_all(h->ring == RANK_RING_COMM  ? &k->spans_comm
             : h->ring == RANK_RING_GPU ? &k->spans_gpu
                                        : &k->spans_main,
             s, sizeof(*s), n);
}

static void deliver(struct relay *rl, int tag, unsigned char *msg, size_t len)
{
    struct run *r = rl->r;
    if (tag == TAG_DONE && len >= sizeof(struct relay_done)) {
        struct relay_done d;
        memcpy(&d, msg, sizeof(d));
        if (d.rank < self.per || d.rank >= r->world)
            return; /* (process 0's own ranks never come this way) */
        struct rank *k = &r->ranks[d.rank];
        k->rc = d.rc;
        snprintf(k->err, sizeof(k->err), "%s", d.err);
        k->stage_first = d.stage_first;
        k->stage_end = d.stage_end;
        memcpy(k->stage_mem, d.stage_mem, sizeof(k->stage_mem));
        atomic_store(&k->mem.now, d.mem_now);
        atomic_store(&k->mem.peak, d.mem_peak);
        procs_device_name(d.rank / self.per, d.dev, k->dev.name, sizeof(k->dev.name));
        atomic_store(&k->finished, 1);
        return;
    }
    if (len < sizeof(struct relay_hdr))
        return;
    struct relay_hdr h;
    memcpy(&h, msg, sizeof(h));
    if (h.rank < self.per || h.rank >= r->world)
        return;
    struct rank *k = &r->ranks[h.rank];
    atomic_store(&k->remote_dropped, h.dropped);
    atomic_store(&k->mem.now, h.mem_now);
    atomic_store(&k->mem.peak, h.mem_peak);
    unsigned char *body = msg + sizeof(h);
    size_t n = len - sizeof(h);
    int64_t add = rl->add_ns[h.rank / self.per];
    if (tag == TAG_SPANS) {
        push_spans(rl, k, &h, (struct span *)body, n / sizeof(struct span));
    } else if (tag == TAG_STEPS) {
        struct step_rec *s = (struct step_rec *)body;
        n /= sizeof(*s);
        for (size_t i = 0; i < n; i++) {
            s[i].t0_ns += add;
            s[i].t1_ns += add;
            atomic_store(&k->step, s[i].step);
        }
        push_all(&k->steps, s, sizeof(*s), n);
    } else if (tag == TAG_EPOCHS) {
        push_all(&k->epochs, body, sizeof(struct epoch_rec), n / sizeof(struct epoch_rec));
    }
}

/* A worker silent for rl->lost_ns: its ranks that had not ended end,
 * failed, naming it. */
static int give_up_silent(struct relay *rl)
{
    int64_t now = probe_now_ns(), lost = rl->lost_ns;
    int ending = atomic_load(&rl->ending_ns) != 0;
    if (ending && lost > ENDING_LOST_NS)
        lost = ENDING_LOST_NS;
    int n = 0;
    for (int p = 1; p < self.size; p++) {
        if (rl->ended[p] || now - rl->seen_ns[p] <= lost)
            continue;
        for (int i = p * self.per; i < (p + 1) * self.per; i++) {
            if (atomic_load(&rl->r->ranks[i].finished))
                continue;
            struct relay_done d = {.rank = i, .rc = -1};
            snprintf(d.dev, sizeof(d.dev), "cpu");
            snprintf(d.err, sizeof(d.err), "process %d on %.64s stopped answering: nothing from it for %.1f s%s", p,
                     host_of[p], (double)(now - rl->seen_ns[p]) / 1e9,
                     ending ? " when the job was ended (SIGTERM)" : "");
            deliver(rl, TAG_DONE, (unsigned char *)&d, sizeof(d));
        }
        rl->ended[p] = 1;
        n++;
    }
    return n;
}

/* Process 0's receiving thread: every worker's records into its ranks'
 * rings, until every worker's ranks have ended, or its process was given
 * up (or relay_close). */
static void *receive(void *arg)
{
    struct relay *rl = arg;
    int left = self.size - 1;
    unsigned char *buf = NULL;
    size_t cap = 0;
    while (left > 0 && !atomic_load(&rl->rx_quit)) {
        int found = 0;
        MPI_Message m;
        MPI_Status st;
        MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, rl->mc, &found, &m, &st);
        if (!found) {
            left -= give_up_silent(rl);
            if (probe_now_ns() > rl->spin_until_ns)
                nap_ms(1);
            continue;
        }
        int len = 0;
        MPI_Get_count(&st, MPI_BYTE, &len);
        if ((size_t)len > cap) {
            unsigned char *nb = realloc(buf, (size_t)len);
            if (!nb) {
                MPI_Mrecv(NULL, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE); /* fails; the rank's end still counts */
                continue;
            }
            buf = nb;
            cap = (size_t)len;
        }
        /* a message arrives in pieces: a sender stopped or killed in the
         * middle of one leaves it unfinished, and its silence gives it up
         * here too (the buffer is then MPI's for good: a new one follows) */
        int p = st.MPI_SOURCE, done = 0;
        MPI_Request req;
        MPI_Imrecv(buf, len, MPI_BYTE, &m, &req);
        while (MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done) {
            left -= give_up_silent(rl);
            if (atomic_load(&rl->rx_quit) || (p > 0 && p < self.size && rl->ended[p]))
                break;
            nap_ms(1);
        }
        if (!done) {
            buf = NULL;
            cap = 0;
            continue;
        }
        if (p <= 0 || p >= self.size || rl->ended[p])
            continue; /* (a process given up that spoke again: too late) */
        rl->seen_ns[p] = probe_now_ns();
        if (st.MPI_TAG == TAG_PING) {
            /* a worker measures its clock: the answer at once, and the
             * next rounds' without a nap */
            int64_t now = probe_now_ns();
            MPI_Send(&now, 1, MPI_INT64_T, p, TAG_PONG, rl->mc);
            rl->spin_until_ns = now + 2 * 1000 * 1000;
            continue;
        }
        if (st.MPI_TAG == TAG_OFFSET && len == 2 * (int)sizeof(int64_t)) {
            int64_t est[2];
            memcpy(est, buf, sizeof(est));
            rl->add_ns[p] = est[0];
            rl->bound_ns[p] = est[1];
            rl->estimates[p]++;
            continue;
        }
        deliver(rl, st.MPI_TAG, buf, (size_t)len);
        if (st.MPI_TAG == TAG_DONE && ++rl->done_of[p] == self.per) {
            rl->ended[p] = 1;
            left--;
        }
    }
    free(buf);
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
    free(rl->buf);
    free(rl);
}

struct relay *relay_open(struct run *r, char *err, size_t errlen)
{
    struct relay *rl = calloc(1, sizeof(*rl));
    if (rl) {
        rl->add_ns = calloc((size_t)self.size, sizeof(int64_t));
        rl->bound_ns = calloc((size_t)self.size, sizeof(int64_t));
    }
    if (rl) {
        rl->seen_ns = calloc((size_t)self.size, sizeof(int64_t));
        rl->ended = calloc((size_t)self.size, 1);
        rl->done_of = calloc((size_t)self.size, sizeof(int));
        rl->estimates = calloc((size_t)self.size, sizeof(int));
    }
    if (!rl || !rl->add_ns || !rl->bound_ns || !rl->seen_ns || !rl->ended || !rl->done_of || !rl->estimates) {
        snprintf(err, errlen, "out of memory for the MPI relay");
        relay_free(rl);
        return NULL;
    }
    rl->r = r;
    MPI_Comm_dup(MPI_COMM_WORLD, &rl->mc);
    measure_clocks(rl);
    for (int i = 0; i < r->world && i / self.per < self.size; i++) {
        r->ranks[i].clock_add_ns = rl->add_ns[i / self.per];
        r->ranks[i].clock_err_ns = rl->bound_ns[i / self.per];
        r->ranks[i].clock_estimates = rl->estimates[i / self.per];
        snprintf(r->ranks[i].host, sizeof(r->ranks[i].host), "%s", host_of[i / self.per]);
    }
    int64_t timeout = (int64_t)(r->cfg.comm_timeout_s * 1e9);
    rl->lost_ns = timeout > 0 && timeout < BEAT_LOST_NS ? timeout : BEAT_LOST_NS;
    rl->last_beat_ns = probe_now_ns();
    if (self.rank > 0) {
        rl->clock_every_ns = clock_every();
        rl->clock_at_ns = rl->last_beat_ns;
    }
    for (int p = 0; p < self.size; p++)
        rl->seen_ns[p] = rl->last_beat_ns;
    if (self.rank == 0 && self.size > 1) {
        if (pthread_create(&rl->rx, NULL, receive, rl) != 0) {
            snprintf(err, errlen, "cannot start the MPI relay's thread");
            MPI_Abort(MPI_COMM_WORLD, 1); /* the workers would wait for it forever */
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
    MPI_Send(rl->buf, (int)len, MPI_BYTE, 0, tag, rl->mc);
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
    send_msg(f->rl, TAG_SPANS, &f->h, s, n * sizeof(*s));
}

static void fwd_steps(void *ctx, struct rank *k, struct step_rec *s, size_t n)
{
    struct fwd *f = ctx;
    send_msg(f->rl, TAG_STEPS, &f->h, s, n * sizeof(*s));
}

static void fwd_epochs(void *ctx, struct rank *k, struct epoch_rec *e, size_t n)
{
    struct fwd *f = ctx;
    send_msg(f->rl, TAG_EPOCHS, &f->h, e, n * sizeof(*e));
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
        MPI_Send(&c, sizeof(c), MPI_BYTE, p, TAG_CTRL, rl->mc);
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
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_BEAT, rl->mc);
        rl->last_beat_ns = probe_now_ns();
    }
    /* (not once a rank's end was sent: process 0 may have stopped
     * listening) */
    if (rl->clock_every_ns > 0 && !rl->done_sent && probe_now_ns() - rl->clock_at_ns > rl->clock_every_ns)
        clock_again(rl);
    int found = 0;
    MPI_Iprobe(0, TAG_CTRL, rl->mc, &found, MPI_STATUS_IGNORE);
    if (!found)
        return RELAY_NONE;
    struct relay_ctrl c;
    MPI_Recv(&c, sizeof(c), MPI_BYTE, 0, TAG_CTRL, rl->mc, MPI_STATUS_IGNORE);
    *at = c.at;
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
                           .mem_peak = atomic_load(&k->mem.peak)};
    memcpy(d.stage_mem, k->stage_mem, sizeof(d.stage_mem));
    snprintf(d.dev, sizeof(d.dev), "%s", k->dev.name[0] ? k->dev.name : "cpu");
    snprintf(d.err, sizeof(d.err), "%s", k->err);
    MPI_Send(&d, sizeof(d), MPI_BYTE, 0, TAG_DONE, rl->mc);
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
    /* (a worker's stop message that crossed its end is still queued: MPI
     * drops it with the communicator) */
    if (!comm_mpi_tainted())
        MPI_Comm_free(&rl->mc);
    relay_free(rl);
}

#else /* no MPI in this build */

int procs_built(void)
{
    return 0;
}

int procs_init(int *argc, char ***argv, char *err, size_t errlen)
{
    if (launched() && getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
        snprintf(err, errlen, "mpirun: this ddptop was built without MPI (install libopenmpi-dev and rebuild)");
        return -1;
    }
    return 0;
}

int procs_exit(int status)
{
    return status;
}

struct comm *procs_comm_create(char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm mpi: this ddptop was built without MPI");
    return NULL;
}

struct comm *procs_group_comm_create(int group, int key, char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm mpi: this ddptop was built without MPI");
    return NULL;
}

struct comm *procs_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm gloo: this ddptop was built without MPI");
    return NULL;
}

void procs_gather(const double *mine, int n, double *all)
{
    memcpy(all, mine, sizeof(double) * (size_t)n);
}

void procs_bcast(void *buf, int bytes)
{
}

int procs_local_rank_of(int p)
{
    return 0;
}

void procs_device_name(int p, const char *dev, char *out, size_t n)
{
    snprintf(out, n, "%s", dev);
}

int procs_most_on_a_node(void)
{
    return 1;
}

void procs_announce(const struct run_config *rc)
{
}

int procs_next_run(struct run_config *rc)
{
    return 0;
}

int procs_launcher_on_tty(void)
{
    return 0;
}

struct relay *relay_open(struct run *r, char *err, size_t errlen)
{
    snprintf(err, errlen, "this ddptop was built without MPI");
    return NULL;
}

int relay_poll(struct relay *rl, uint32_t *at)
{
    return RELAY_NONE;
}

void relay_rank_done(struct relay *rl, int rank)
{
}

void relay_close(struct relay *rl)
{
}

#endif
