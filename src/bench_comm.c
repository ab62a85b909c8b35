/* bench_comm.c - `ddptop --bench-comm`: a collective benchmark in the manner
 * of nccl-tests. For each message size it times --iters calls after --warmup
 * calls on --ranks threads, reports time, algbw and busbw (1 GB = 1e9 B),
 * then checks one more call against exact answers from seeded inputs (the
 * #wrong column). Finally it fits t = α + β·bytes and stores the fit where
 * training reports find it (collectives/cost_model.h).
 *
 * Sizes follow nccl-tests: for allgather, gather, reduce-scatter and scatter
 * the size is the whole (world-wide) buffer.
 *
 * On GPUs (--device cuda, or the default where one is present) each rank
 * thread drives a GPU, with NCCL where the ranks have a GPU each and the
 * shared GPU's ring otherwise, over device buffers: filled and checked
 * through host copies, timed per call (each call waits for its stream).
 */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "config.h"
#include "cost_model.h"
#include "devices.h"
#include "modes.h"
#include "outfile.h"
#include "procs.h"
#include "stop.h"

#define MAX_ROWS 64

struct row {
    uint64_t bytes;
    size_t count;   /* elements per rank buffer */
    double time_us; /* slowest rank's mean per call */
    long wrong;
};

struct bench {
    const struct config *cfg;
    int world, coll, nrows;
    /* device buffers (GPU ranks, or the CPU's staged path: tests), else
     * NULL: host buffers; on a GPU, NCCL or the shared GPU's ring */
    const struct device_ops *dops;
    const struct gpu_module *gpu;
    int use_nccl;
    unsigned char nccl_id[GPU_NCCL_ID_BYTES];
    struct shm_world *shm;
    _Atomic int *abort;
    int done[64]; /* rows each rank finished: fewer than nrows after a Ctrl-C */
    struct row rows[MAX_ROWS];
    double t_us[64][MAX_ROWS]; /* [rank][row] */
    long wrong[64][MAX_ROWS];
};

struct worker {
    struct bench *b;
    struct comm *c;
    float *in, *out;   /* freed once every rank has left: a peer in an aborted
                          collective may still read them; device memory with
                          b->dops */
    float *hin, *hout; /* with b->dops: their host copies, to fill and check */
    int rank, index;   /* its rank; with b->dops, its device's index */
    int opened;        /* dev is open */
    struct device dev;
    struct device_mem mem;
    char err[300]; /* why the thread failed (set before it returns nonzero) */
};

static float val(int r, size_t i)
{
    return (float)((int)((7 * (size_t)r + 3 * i) % 17) - 8);
}

/* Elements of each rank's buffer for a row of `bytes` (see the file comment). */
static int split(int coll)
{
    return coll == COLL_ALLGATHER || coll == COLL_GATHER || coll == COLL_REDUCE_SCATTER || coll == COLL_SCATTER;
}

static size_t count_for(int coll, uint64_t bytes, int world)
{
    size_t n = (size_t)(bytes / sizeof(float));
    return split(coll) ? n / (size_t)world : n;
}

static int call(struct comm *c, int coll, float *in, float *out, size_t n)
{
    switch (coll) {
    case COLL_ALLREDUCE:
        return c->ops->allreduce(c, in, n, RED_SUM);
    case COLL_REDUCE_SCATTER:
        return c->ops->reduce_scatter(c, in, out, n, RED_SUM);
    case COLL_ALLGATHER:
        return c->ops->allgather(c, in, out, n);
    case COLL_BROADCAST:
        return c->ops->broadcast(c, in, n, 0);
    case COLL_REDUCE:
        return c->ops->reduce(c, in, out, n, RED_SUM, 0);
    case COLL_GATHER:
        return c->ops->gather(c, in, out, n, 0);
    case COLL_SCATTER:
        return c->ops->scatter(c, in, out, n, 0);
    default:
        return -1;
    }
}

/* Elements of `in`/`out` that differ from the exact answer after one call. */
static long check(struct comm *c, int coll, const float *in, const float *out, size_t n)
{
    int W = c->world, r = c->rank;
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float s = 0;
        switch (coll) {
        case COLL_ALLREDUCE:
            for (int p = 0; p < W; p++)
                s += val(p, i);
            wrong += in[i] != s;
            break;
        case COLL_REDUCE_SCATTER:
            for (int p = 0; p < W; p++)
                s += val(p, (size_t)r * n + i);
            wrong += out[i] != s;
            break;
        case COLL_ALLGATHER:
            for (int p = 0; p < W; p++)
                wrong += out[(size_t)p * n + i] != val(p, i);
            break;
        case COLL_BROADCAST:
            wrong += in[i] != val(0, i);
            break;
        case COLL_REDUCE:
            if (r == 0) {
                for (int p = 0; p < W; p++)
                    s += val(p, i);
                wrong += out[i] != s;
            }
            break;
        case COLL_GATHER:
            if (r == 0)
                for (int p = 0; p < W; p++)
                    wrong += out[(size_t)p * n + i] != val(p, i);
            break;
        case COLL_SCATTER:
            wrong += out[i] != val(0, (size_t)r * n + i);
            break;
        }
    }
    return wrong;
}

static void fill(float *in, int r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        in[i] = val(r, i);
}

/* A device rank's device, communicator and buffers (on its thread: NCCL's
 * initialisation waits for every rank). 0, or -1 with w->err set. */
static int device_setup(struct worker *w, size_t bytes)
{
    struct bench *b = w->b;
    w->dev = (struct device){.ops = b->dops, .mem = &w->mem, .rank = w->rank};
    if (b->dops->open(&w->dev, w->index) != 0) {
        snprintf(w->err, sizeof(w->err), "%s", w->dev.err);
        return -1;
    }
    w->opened = 1;
    if (b->gpu) {
        char err[256] = "";
        w->c = b->use_nccl ? b->gpu->nccl_create(b->nccl_id, b->world, w->rank, &w->dev, b->abort, err, sizeof(err))
                           : b->gpu->ring_create(b->shm, w->rank, b->cfg->base.algo, &w->dev);
        if (!w->c) {
            snprintf(w->err, sizeof(w->err), "rank %d: %s", w->rank, err[0] ? err : "cannot create its communicator");
            return -1;
        }
        w->c->abort = b->abort;
    }
    w->in = b->dops->alloc(&w->dev, bytes);
    w->out = b->dops->alloc(&w->dev, bytes);
    w->hin = malloc(bytes);
    w->hout = malloc(bytes);
    if (!w->in || !w->out || !w->hin || !w->hout) {
        snprintf(w->err, sizeof(w->err), "rank %d: out of memory for two %zu-byte buffers", w->rank, bytes);
        return -1;
    }
    return 0;
}

/* The rank's inputs for a row: in place, or copied to the device. */
static int fill_in(struct worker *w, size_t nin)
{
    fill(w->hin ? w->hin : w->in, w->rank, nin);
    if (!w->hin)
        return 0;
    struct device *d = &w->dev;
    return d->ops->copy(d, w->in, w->hin, nin * sizeof(float), STREAM_COMM) || d->ops->sync(d, STREAM_COMM);
}

/* One checked call's results, on the host. */
static int results(struct worker *w, size_t nin, size_t nout, const float **in, const float **out)
{
    *in = w->hin ? w->hin : w->in;
    *out = w->hout ? w->hout : w->out;
    if (!w->hin)
        return 0;
    struct device *d = &w->dev;
    return d->ops->copy(d, w->hin, w->in, nin * sizeof(float), STREAM_COMM) ||
           d->ops->copy(d, w->hout, w->out, nout * sizeof(float), STREAM_COMM) || d->ops->sync(d, STREAM_COMM);
}

/* A device call failed: its message is the thread's. */
static void *device_failed(struct worker *w)
{
    snprintf(w->err, sizeof(w->err), "rank %d: %s", w->rank, w->dev.err);
    return (void *)1;
}

static void *bench_thread(void *arg)
{
    struct worker *w = arg;
    struct bench *b = w->b;
    const struct config *cfg = b->cfg;
    size_t maxn = (size_t)(cfg->max_bytes / sizeof(float)) + 1;
    size_t bytes = ((maxn * sizeof(float)) + 63) & ~(size_t)63;
    if (b->dops) {
        if (device_setup(w, bytes) != 0)
            return (void *)1;
    } else {
        w->in = aligned_alloc(64, bytes);
        w->out = aligned_alloc(64, bytes);
        if (!w->in || !w->out) {
            snprintf(w->err, sizeof(w->err), "out of memory for %llu-byte buffers", (unsigned long long)cfg->max_bytes);
            return (void *)1;
        }
        memset(w->out, 0, maxn * sizeof(float));
    }
    struct comm *c = w->c;
    float *in = w->in, *out = w->out;
    /* a Ctrl-C raises the world's abort: the row in progress is dropped at
     * its next call, and the rows before it stand */
    for (int k = 0; k < b->nrows; k++) {
        size_t n = b->rows[k].count;
        size_t nin = (b->coll == COLL_REDUCE_SCATTER || b->coll == COLL_SCATTER) ? n * (size_t)b->world : n;
        /* (what a call writes: allgather's and gather's world-wide out) */
        size_t nout = (b->coll == COLL_ALLGATHER || b->coll == COLL_GATHER) ? n * (size_t)b->world : n;
        int rc = 0;
        if (fill_in(w, nin) != 0)
            return device_failed(w);
        for (int i = 0; i < cfg->warmup && rc == 0; i++)
            rc = call(c, b->coll, in, out, n);
        rc = rc ? rc : c->ops->barrier(c);
        int64_t t0 = probe_now_ns();
        for (int i = 0; i < cfg->iters && rc == 0; i++)
            rc = call(c, b->coll, in, out, n);
        int64_t t1 = probe_now_ns();
        if (rc != 0)
            break; /* aborted: the peers may still be reading `in` */
        b->t_us[c->rank][k] = (double)(t1 - t0) / 1e3 / cfg->iters;
        /* the timed calls grew the data (sums of sums): check on fresh inputs */
        if (fill_in(w, nin) != 0)
            return device_failed(w);
        rc = rc ? rc : c->ops->barrier(c);
        rc = rc ? rc : call(c, b->coll, in, out, n);
        const float *hin, *hout;
        if (rc == 0 && results(w, nin, nout, &hin, &hout) != 0)
            return device_failed(w);
        if (rc == 0)
            b->wrong[c->rank][k] = check(c, b->coll, hin, hout, n);
        rc = rc ? rc : c->ops->barrier(c);
        if (rc != 0)
            break;
        b->done[c->rank] = k + 1;
    }
    return NULL;
}

static void human(char *buf, size_t n, uint64_t b)
{
    if (b >= (1ULL << 30) && b % (1ULL << 30) == 0)
        snprintf(buf, n, "%lluG", (unsigned long long)(b >> 30));
    else if (b >= (1ULL << 20) && b % (1ULL << 20) == 0)
        snprintf(buf, n, "%lluM", (unsigned long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, n, "%lluK", (unsigned long long)(b >> 10));
    else
        snprintf(buf, n, "%llu", (unsigned long long)b);
}

/* The fit under the table: its worst error at a measured size, and each
 * regime's line (on a line of its own, named by its sizes, where there
 * are several). */
static void write_fit(FILE *out, const struct cost_fit *f, int md)
{
    const char *lead = md ? "" : "# ";
    int n = f->nmore + 1;
    fprintf(out, "%s%sfit", md ? "\n" : "", lead);
    if (n > 1)
        fprintf(out, " in %d regimes", n);
    fprintf(out, " (every size within %.1f%% of it, r2 %.4f):", 100.0 * f->max_err, f->r2);
    for (int k = 0; k < n; k++) {
        const struct cost_regime r = k ? f->more[k - 1] : (struct cost_regime){0, f->alpha_us, f->beta_us_per_byte};
        char from[32], upto[32], label[80] = "";
        human(from, sizeof(from), (uint64_t)r.from_bytes);
        if (k + 1 < n)
            human(upto, sizeof(upto), (uint64_t)f->more[k].from_bytes);
        if (n > 1 && k == 0)
            snprintf(label, sizeof(label), "below %s: ", upto);
        else if (n > 1 && k + 1 < n)
            snprintf(label, sizeof(label), "%s to %s: ", from, upto);
        else if (n > 1)
            snprintf(label, sizeof(label), "from %s: ", from);
        fprintf(out, "%s%st = %.2f us", n > 1 ? (md ? "\n- " : "\n#   ") : " ", label, r.alpha_us);
        if (r.beta_us_per_byte > 0)
            fprintf(out, " + bytes / %.3g GB/s", 1e-3 / r.beta_us_per_byte);
        else if (r.beta_us_per_byte < 0) /* (a regime whose times fell as sizes grew: noise) */
            fprintf(out, " - bytes x %.3g ns", -1e3 * r.beta_us_per_byte);
    }
    fprintf(out, "\n");
}

/* A fit that misses a measured size by more than COST_FIT_TOLERANCE: one
 * line naming the worst size. */
static void warn_poor(const struct cost_fit *f, const struct row *rows, int n)
{
    int worst = 0;
    double err = -1;
    for (int k = 0; k < n; k++) {
        double e = fabs(cost_predict_us(f, (double)rows[k].bytes) - rows[k].time_us) / rows[k].time_us;
        if (e > err) {
            err = e;
            worst = k;
        }
    }
    char sz[32];
    human(sz, sizeof(sz), rows[worst].bytes);
    fprintf(stderr,
            "ddptop: --bench-comm: a poor fit: %s took %.1f us, %.0f%% off the %.1f us it predicts (the worst of %d "
            "sizes, %d regime%s; over %.0f%% is poor): a loaded machine? measure again on a quiet one, or with more "
            "--iters\n",
            sz, rows[worst].time_us, 100.0 * err, cost_predict_us(f, (double)rows[worst].bytes), n, f->nmore + 1,
            f->nmore ? "s" : "", 100.0 * COST_FIT_TOLERANCE);
}

/* Under mpirun: every process's times, wrong counts and rows done reach
 * process 0's tables. Returns 1 on a worker (it reports nothing), 0 on
 * process 0; *status becomes nonzero when any process failed. */
static int gather_rows(struct bench *b, int rank, int size, int *status)
{
    int n = 2 * MAX_ROWS + 2;
    double mine[2 * MAX_ROWS + 2] = {0};
    double *all = rank == 0 ? calloc((size_t)size * (size_t)n, sizeof(double)) : NULL;
    for (int k = 0; k < b->nrows; k++) {
        mine[k] = b->t_us[rank][k];
        mine[MAX_ROWS + k] = (double)b->wrong[rank][k];
    }
    mine[2 * MAX_ROWS] = b->done[rank];
    mine[2 * MAX_ROWS + 1] = *status;
    procs_gather(mine, n, all ? all : mine);
    if (rank != 0)
        return 1;
    for (int r = 0; all && r < size; r++) {
        const double *o = all + (size_t)r * (size_t)n;
        for (int k = 0; k < b->nrows; k++) {
            b->t_us[r][k] = o[k];
            b->wrong[r][k] = (long)o[MAX_ROWS + k];
        }
        b->done[r] = (int)o[2 * MAX_ROWS];
        if (o[2 * MAX_ROWS + 1] != 0)
            *status = 1;
    }
    free(all);
    return 0;
}

/* GPUs: NCCL where every rank has a GPU of its own (under mpirun it must),
 * else the shared GPU's ring among threads (--comm shm asks for it). 0, or
 * -1 with err set. */
static int gpu_plan(struct bench *b, const struct procs *pr, char *err, size_t errlen)
{
    const struct config *cfg = b->cfg;
    b->gpu = gpu_module();
    b->dops = b->gpu->device;
    int gpus = cfg->base.ngpus > 0 ? cfg->base.ngpus : b->dops->count();
    int here = pr->active ? procs_most_on_a_node() : b->world; /* ranks on the busiest node */
    int want_nccl = cfg->base.comm == COMM_NCCL || !cfg->base.comm_set;
    if (!b->gpu->nccl_create && (pr->active || cfg->base.comm == COMM_NCCL)) {
        snprintf(err, errlen, "--comm nccl: this ddptop was built without NCCL%s",
                 pr->active ? " (GPUs across processes need it)" : "");
        return -1;
    }
    if (pr->active && !want_nccl) {
        snprintf(err, errlen, "--comm %s: GPUs across processes are joined by NCCL (--comm nccl)",
                 cfg->base.comm == COMM_MPI ? "mpi" : "shm");
        return -1;
    }
    if (want_nccl && cfg->base.comm_set && here > gpus) {
        snprintf(err, errlen, "--comm nccl: %d ranks on a node and %d GPU%s: NCCL needs a GPU for each%s", here, gpus,
                 gpus == 1 ? "" : "s", pr->active ? "" : " (without --comm, ranks that share a GPU take its ring)");
        return -1;
    }
    if (pr->active && here > gpus) {
        snprintf(err, errlen,
                 "--bench-comm under mpirun: %d processes on a node and %d GPU%s: NCCL needs a GPU for each", here,
                 gpus, gpus == 1 ? "" : "s");
        return -1;
    }
    b->use_nccl = b->gpu->nccl_create && want_nccl && here <= gpus;
    return 0;
}

int bench_comm_main(const struct config *cfg)
{
    struct bench *b = calloc(1, sizeof(*b));
    if (!b)
        return 1;
    b->cfg = cfg;
    if (cfg->nranks > 1) {
        fprintf(stderr, "ddptop: --bench-comm: one --ranks at a time (got %d counts); run it once for each\n",
                cfg->nranks);
        free(b);
        return 2;
    }
    b->world = cfg->ranks[0];
    b->coll = cfg->collective;
    /* the device: a GPU's collectives where --device picks one */
    char note[256], err[300] = "";
    const struct device_ops *dev = device_select(cfg->base.device, note, sizeof(note), err, sizeof(err));
    if (!dev) {
        fprintf(stderr, "ddptop: %s\n", err);
        free(b);
        return 2;
    }
    int on_gpu = device_is_gpu(dev);
    /* under mpirun every process is a rank (procs.h): MPI's collectives,
     * or NCCL's on GPUs */
    const struct procs *pr = procs_self();
    int over_procs = pr->active, over_mpi = over_procs && !on_gpu && cfg->base.comm == COMM_MPI;
    if (on_gpu && gpu_plan(b, pr, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        free(b);
        return 2;
    }
    if (!on_gpu && over_procs && !over_mpi) {
        fprintf(stderr, "ddptop: --comm %s: under mpirun the ranks are processes, which only --comm mpi joins\n",
                cfg->base.comm == COMM_NCCL ? "nccl" : "shm");
        free(b);
        return 2;
    }
    if (!on_gpu && cfg->base.comm != COMM_SHM && !over_mpi) {
        fprintf(stderr, "ddptop: --comm %s: %s\n", cfg->base.comm == COMM_NCCL ? "nccl" : "mpi",
                cfg->base.comm == COMM_NCCL ? "NCCL joins GPUs, and --bench-comm runs on the CPU here (--device cuda)"
                                            : "only under mpirun (mpirun -np N ddptop --bench-comm)");
        free(b);
        return 2;
    }
    /* (tests: the device buffers' path over the CPU and its shm ring) */
    const char *staged = getenv("DDPTOP_BENCH_STAGED");
    if (!on_gpu && !over_procs && staged && staged[0] == '1')
        b->dops = &device_cpu_staged;
    for (uint64_t s = cfg->min_bytes; s <= cfg->max_bytes && b->nrows < MAX_ROWS; s *= (uint64_t)cfg->factor) {
        size_t n = count_for(b->coll, s, b->world);
        if (n == 0 || (b->nrows > 0 && b->rows[b->nrows - 1].count == n))
            continue;
        /* the bytes that move: whole floats, world shares of them where split */
        uint64_t moved = (uint64_t)n * sizeof(float) * (split(b->coll) ? (uint64_t)b->world : 1);
        b->rows[b->nrows++] = (struct row){.bytes = moved, .count = n};
    }
    if (b->nrows == 0) {
        fprintf(stderr, "ddptop: --min-bytes: no message size in range fits %d ranks\n", b->world);
        free(b);
        return 2;
    }

    _Atomic int abort_flag = 0;
    b->abort = &abort_flag;
    if (b->use_nccl && device_nccl_id(b->nccl_id, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --bench-comm: %s\n", err);
        free(b);
        return 1;
    }
    struct shm_world *w = over_procs ? NULL : shm_world_create(b->world, &abort_flag);
    b->shm = w;
    struct worker ws[64];
    pthread_t th[64];
    int status = 0, joined[64] = {0};
    /* the ranks this process runs: all of them, or its own under mpirun */
    int lo = over_procs ? pr->rank : 0, hi = over_procs ? pr->rank + 1 : b->world;
    for (int r = lo; r < hi; r++) {
        struct comm *c = NULL;
        if (!on_gpu) {
            err[0] = 0;
            c = over_mpi ? procs_comm_create(err, sizeof(err)) : comm_shm_create(w, r, cfg->base.algo);
            if (!c) {
                fprintf(stderr, "ddptop: --bench-comm: %s\n", err[0] ? err : "cannot create a communicator");
                free(b);
                return 1;
            }
            c->abort = &abort_flag;
        }
        /* (a GPU rank's device and communicator come on its thread) */
        ws[r] =
            (struct worker){.b = b,
                            .c = c,
                            .rank = r,
                            .index = on_gpu ? device_rank_gpu(r, cfg->base.gpus, cfg->base.ngpus, dev->count()) : r};
        pthread_create(&th[r], NULL, bench_thread, &ws[r]);
    }
    /* wait for the threads, turning a Ctrl-C or a rank's failure into the
     * world's abort */
    for (int left = hi - lo; left > 0;) {
        for (int r = lo; r < hi; r++) {
            void *ret;
            if (joined[r] || pthread_tryjoin_np(th[r], &ret) == EBUSY)
                continue;
            joined[r] = 1;
            left--;
            if (ret) {
                if (!status)
                    fprintf(stderr, "ddptop: --bench-comm: %s\n", ws[r].err);
                status = 1;
                atomic_store(&abort_flag, 1);
            }
        }
        if (stop_signal)
            atomic_store(&abort_flag, 1);
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    for (int r = lo; r < hi; r++) {
        struct worker *k = &ws[r];
        if (k->opened && k->dev.ops->make_current)
            k->dev.ops->make_current(&k->dev);
        if (k->c)
            k->c->ops->destroy(k->c);
        if (k->opened) {
            if (k->in)
                b->dops->free(&k->dev, k->in);
            if (k->out)
                b->dops->free(&k->dev, k->out);
            if (b->dops->close)
                b->dops->close(&k->dev);
        } else if (!b->dops) {
            free(k->in);
            free(k->out);
        }
        free(k->hin);
        free(k->hout);
    }
    shm_world_destroy(w);
    if (over_procs && gather_rows(b, pr->rank, pr->size, &status) != 0) {
        free(b);
        return 0; /* a worker: process 0 reports */
    }
    int stopped = 0;
    for (int r = 0; r < b->world; r++)
        if (b->done[r] < b->nrows) {
            stopped = 1;
            b->nrows = b->done[r]; /* the rows every rank finished */
        }
    if (status) {
        fprintf(stderr, "ddptop: --bench-comm: out of memory for %llu-byte buffers\n",
                (unsigned long long)cfg->max_bytes);
        free(b);
        return 1;
    }

    double xs[MAX_ROWS], ys[MAX_ROWS];
    long total_wrong = 0;
    for (int k = 0; k < b->nrows; k++) {
        struct row *row = &b->rows[k];
        for (int r = 0; r < b->world; r++) {
            if (b->t_us[r][k] > row->time_us)
                row->time_us = b->t_us[r][k];
            row->wrong += b->wrong[r][k];
        }
        total_wrong += row->wrong;
        xs[k] = (double)row->bytes;
        ys[k] = row->time_us;
    }
    struct cost_fit fit = {.ranks = b->world, .coll = b->coll};
    /* (the names report.c looks fits up by) */
    snprintf(fit.backend, sizeof(fit.backend), "%s", b->use_nccl ? "nccl" : over_mpi ? "mpi" : on_gpu ? "gpu" : "shm");
    snprintf(fit.algo, sizeof(fit.algo), "%s",
             b->use_nccl                   ? "nccl"
             : over_mpi                    ? "mpi"
             : cfg->base.algo == ALGO_RING ? "ring"
                                           : "naive");
    fit.valid = b->world > 1 && cost_fit_regimes(xs, ys, b->nrows, &fit) == 0;
    double factor = coll_busbw_factor(b->coll, b->world);
    int poor = fit.valid && fit.max_err > COST_FIT_TOLERANCE;

    /* --output: made in memory, then written beside its name and renamed
     * over it (outfile.h) */
    int e = cfg->output[0] ? outfile_writable(cfg->output) : 0;
    if (e) {
        fprintf(stderr, "ddptop: --output: cannot write %s: %s\n", cfg->output, strerror(e));
        free(b);
        return 2;
    }
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = cfg->output[0] ? open_memstream(&text, &text_len) : stdout;
    if (!out) {
        fprintf(stderr, "ddptop: --output: out of memory\n");
        free(b);
        return 2;
    }
    /* the fit is stored before the report, which names the file (an
     * interrupted benchmark's is not: its sizes stop short) */
    char path[1024] = "", serr[1200] = "";
    int placed = cost_model_path(path, sizeof(path)) != NULL;
    int stored = fit.valid && !stopped && placed && cost_model_save(path, &fit, 1, serr, sizeof(serr)) == 0;
    const char *algo = fit.algo;
    if (cfg->format == FMT_JSON) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "collective", coll_name(b->coll));
        cJSON_AddStringToObject(root, "backend", fit.backend);
        cJSON_AddStringToObject(root, "algo", algo);
        cJSON_AddNumberToObject(root, "ranks", b->world);
        cJSON_AddNumberToObject(root, "iters", cfg->iters);
        cJSON *rows = cJSON_AddArrayToObject(root, "rows");
        for (int k = 0; k < b->nrows; k++) {
            const struct row *row = &b->rows[k];
            double algbw = (double)row->bytes / (row->time_us * 1e3);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "collective", coll_name(b->coll));
            cJSON_AddNumberToObject(o, "bytes", (double)row->bytes);
            cJSON_AddNumberToObject(o, "count", (double)row->count);
            cJSON_AddNumberToObject(o, "time_us", row->time_us);
            cJSON_AddNumberToObject(o, "algbw_gbps", algbw);
            cJSON_AddNumberToObject(o, "busbw_gbps", algbw * factor);
            cJSON_AddNumberToObject(o, "wrong", (double)row->wrong);
            cJSON_AddItemToArray(rows, o);
        }
        cJSON *f = cJSON_AddObjectToObject(root, "fit");
        if (fit.valid) {
            /* (alpha and beta: the first regime's, as before regimes) */
            cJSON_AddNumberToObject(f, "alpha_us", fit.alpha_us);
            cJSON_AddNumberToObject(f, "beta_us_per_byte", fit.beta_us_per_byte);
            cJSON_AddNumberToObject(f, "r2", fit.r2);
            cJSON *regs = cJSON_AddArrayToObject(f, "regimes");
            for (int k = 0; regs && k <= fit.nmore; k++) {
                cJSON *g = cJSON_CreateObject();
                cJSON_AddNumberToObject(g, "from_bytes", k ? fit.more[k - 1].from_bytes : 0);
                cJSON_AddNumberToObject(g, "alpha_us", k ? fit.more[k - 1].alpha_us : fit.alpha_us);
                cJSON_AddNumberToObject(g, "beta_us_per_byte",
                                        k ? fit.more[k - 1].beta_us_per_byte : fit.beta_us_per_byte);
                cJSON_AddItemToArray(regs, g);
            }
            cJSON_AddNumberToObject(f, "max_err_pct", 100.0 * fit.max_err);
            cJSON_AddBoolToObject(f, "poor", poor);
            if (stored)
                cJSON_AddStringToObject(f, "stored", path);
            else
                cJSON_AddNullToObject(f, "stored");
        }
        char *s = cJSON_Print(root);
        fprintf(out, "%s\n", s);
        free(s);
        cJSON_Delete(root);
    } else {
        int csv = cfg->format == FMT_CSV, md = cfg->format == FMT_MD;
        if (csv)
            fprintf(out, "collective,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong\n");
        else {
            int sums = b->coll == COLL_ALLREDUCE || b->coll == COLL_REDUCE || b->coll == COLL_REDUCE_SCATTER;
            fprintf(out, "%s%s, %s%s%s, %d rank%s, %d iters (%d warm-up), float32%s; 1 GB = 1e9 B\n", md ? "" : "# ",
                    coll_name(b->coll), fit.backend, strcmp(algo, fit.backend) ? "/" : "",
                    strcmp(algo, fit.backend) ? algo : "", b->world, b->world == 1 ? "" : "s", cfg->iters, cfg->warmup,
                    sums ? " sum" : "");
            if (md)
                fprintf(out, "\n| size | count | time (us) | algbw (GB/s) | busbw (GB/s) | #wrong |\n"
                             "|---:|---:|---:|---:|---:|---:|\n");
            else
                fprintf(out, "%10s %12s %12s %12s %12s %8s\n", "size", "count", "time(us)", "algbw(GB/s)",
                        "busbw(GB/s)", "#wrong");
        }
        for (int k = 0; k < b->nrows; k++) {
            const struct row *row = &b->rows[k];
            double algbw = (double)row->bytes / (row->time_us * 1e3);
            char sz[32];
            human(sz, sizeof(sz), row->bytes);
            if (csv)
                fprintf(out, "%s,%llu,%zu,%.3f,%.4f,%.4f,%ld\n", coll_name(b->coll), (unsigned long long)row->bytes,
                        row->count, row->time_us, algbw, algbw * factor, row->wrong);
            else
                fprintf(out,
                        md ? "| %s | %zu | %.2f | %.3f | %.3f | %ld |\n" : "%10s %12zu %12.2f %12.3f %12.3f %8ld\n", sz,
                        row->count, row->time_us, algbw, algbw * factor, row->wrong);
        }
        if (!csv && fit.valid)
            write_fit(out, &fit, md);
    }
    if (out != stdout) {
        char why[1200] = "";
        if (fclose(out) != 0 || outfile_write(cfg->output, text, text_len, why, sizeof(why)) != 0) {
            fprintf(stderr, "ddptop: --output: cannot write %s; the table follows on standard output\n",
                    why[0] ? why : cfg->output);
            if (text)
                fwrite(text, 1, text_len, stdout);
            status = 1;
        }
        free(text);
    }
    if (stopped) {
        fprintf(stderr, "ddptop: interrupted; reported the %d sizes measured (the fit is not stored)\n", b->nrows);
        free(b);
        return 128 + (int)stop_signal;
    }
    if (poor)
        warn_poor(&fit, b->rows, b->nrows);
    if (fit.valid) {
        if (!placed)
            fprintf(stderr, "ddptop: the cost model is not stored: neither XDG_CACHE_HOME nor HOME is an absolute "
                            "path (or set DDPTOP_COMM_MODEL)\n");
        else if (!stored)
            fprintf(stderr, "ddptop: cannot store the cost model: %s\n", serr);
        else
            fprintf(stderr, "ddptop: --bench-comm: the fit is stored in %s (where --predict and pred/step read it)\n",
                    path);
    }
    if (total_wrong) {
        fprintf(stderr, "ddptop: --bench-comm: %ld wrong results\n", total_wrong);
        status = 1;
    }
    free(b);
    return status;
}
