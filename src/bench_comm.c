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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_colls.h"
#include "comm.h"
#include "config.h"
#include "cost_model.h"
#include "devices.h"
#include "fmt_num.h"
#include "modes.h"
#include "outfile.h"
#include "probe.h"
#include "procs.h"
#include "stop.h"
#include "world.h"

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
    const struct bench_coll *bc;
    /* the world planner's (world.h): the backend, which process runs
     * which rank on which device, and every rank's communicator */
    struct world *plan;
    /* device buffers (GPU ranks, or the CPU's staged path: tests), else
     * NULL: host buffers */
    const struct device_ops *dops;
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

/* Elements of each rank's buffer for a row of `bytes` (see the file comment). */
static size_t count_for(const struct bench_coll *bc, uint64_t bytes, int world)
{
    size_t n = (size_t)(bytes / sizeof(float));
    return bc->split ? n / (size_t)world : n;
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
    bench_fill(w->hin ? w->hin : w->in, w->rank, nin);
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
    if (!w->c && b->plan) {
        /* (a backend whose making is collective among threads, after the
         * rank's device is open: NCCL's, the shared GPU's ring, gloo's) */
        struct comm *dp = NULL;
        char err[256];
        if (world_comms(b->plan, w->rank, w->opened ? &w->dev : NULL, &w->c, &dp, err, sizeof(err)) != 0) {
            snprintf(w->err, sizeof(w->err), "%s", err);
            return (void *)1;
        }
    }
    struct comm *c = w->c;
    float *in = w->in, *out = w->out;
    /* a Ctrl-C raises the world's abort: the row in progress is dropped at
     * its next call, and the rows before it stand */
    for (int k = 0; k < b->nrows; k++) {
        size_t n = b->rows[k].count;
        /* (what a call reads and writes: scatter's world-wide in, gather's out) */
        size_t nin = b->bc->in_n(n, b->world), nout = b->bc->out_n(n, b->world);
        int rc = 0;
        if (fill_in(w, nin) != 0)
            return device_failed(w);
        for (int i = 0; i < cfg->warmup && rc == 0; i++)
            rc = b->bc->run(c, in, out, n);
        rc = rc ? rc : c->ops->barrier(c);
        int64_t t0 = probe_now_ns();
        for (int i = 0; i < cfg->iters && rc == 0; i++)
            rc = b->bc->run(c, in, out, n);
        int64_t t1 = probe_now_ns();
        if (rc != 0)
            break; /* aborted: the peers may still be reading `in` */
        b->t_us[c->rank][k] = (double)(t1 - t0) / 1e3 / cfg->iters;
        /* the timed calls grew the data (sums of sums): check on fresh inputs */
        if (fill_in(w, nin) != 0)
            return device_failed(w);
        rc = rc ? rc : c->ops->barrier(c);
        rc = rc ? rc : b->bc->run(c, in, out, n);
        const float *hin, *hout;
        if (rc == 0 && results(w, nin, nout, &hin, &hout) != 0)
            return device_failed(w);
        if (rc == 0)
            b->wrong[c->rank][k] = b->bc->check(c->world, c->rank, hin, hout, n);
        rc = rc ? rc : c->ops->barrier(c);
        if (rc != 0)
            break;
        b->done[c->rank] = k + 1;
    }
    return NULL;
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
        fmt_bytes_exact(from, sizeof(from), (uint64_t)r.from_bytes);
        if (k + 1 < n)
            fmt_bytes_exact(upto, sizeof(upto), (uint64_t)f->more[k].from_bytes);
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
    fmt_bytes_exact(sz, sizeof(sz), rows[worst].bytes);
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

/* What a table asks of the world planner (world.h): the backend `comm`
 * (on GPUs NCCL, or the shared GPU's ring; under mpirun the shm ring's
 * table is process 0's rank threads alone: the planner's choice). */
static struct world_req table_req(const struct config *cfg, const struct device_ops *dev, int comm,
                                  struct run_config *rc)
{
    *rc = cfg->base;
    rc->comm = comm;
    rc->comm_set = cfg->base.comm_set; /* (on GPUs, unset: NCCL, or the shared GPU's ring) */
    return (struct world_req){.rc = rc, .ranks = cfg->ranks[0], .devops = dev, .bench = 1, .what = "--bench-comm"};
}

/* Opens what the ranks of a table share, on its plan (bench_comm_main's).
 * 0, or -1 with err set (world_close frees what was made). */
static int open_table(struct bench *b, struct world *wp, char *err, size_t errlen)
{
    const struct procs *pr = procs_self();
    if (world_open(wp, b->abort, err, errlen) != 0)
        return -1;
    b->plan = wp;
    if (wp->on_gpu)
        b->dops = wp->gpu->device;
    /* (tests: the device buffers' path over the CPU and its shm ring) */
    const char *staged = getenv("DDPTOP_BENCH_STAGED");
    if (!wp->on_gpu && !wp->procs && !pr->active && staged && staged[0] == '1')
        b->dops = &device_cpu_staged;
    return 0;
}

/* The rows: --min-bytes to --max-bytes by --factor, each a distinct count. */
static int plan_rows(struct bench *b)
{
    const struct config *cfg = b->cfg;
    for (uint64_t s = cfg->min_bytes; s <= cfg->max_bytes && b->nrows < MAX_ROWS; s *= (uint64_t)cfg->factor) {
        size_t n = count_for(b->bc, s, b->world);
        if (n == 0 || (b->nrows > 0 && b->rows[b->nrows - 1].count == n))
            continue;
        /* the bytes that move: whole floats, world shares of them where split */
        uint64_t moved = (uint64_t)n * sizeof(float) * (b->bc->split ? (uint64_t)b->world : 1);
        b->rows[b->nrows++] = (struct row){.bytes = moved, .count = n};
    }
    return b->nrows;
}

/* Runs ranks [lo, hi) of this process on threads until every one is done,
 * turning a Ctrl-C or a rank's failure into the world's abort, and frees
 * their buffers and communicators. Returns 0, or 1 after one line. */
static int run_ranks(struct bench *b, int lo, int hi)
{
    struct worker ws[64];
    pthread_t th[64];
    int status = 0, joined[64] = {0}, started = lo;
    /* the threads (and gloo's, which they start) block SIGPIPE, as a
     * run's rank threads do: a peer process that died fails the call with
     * EPIPE, reported, rather than ending this one */
    sigset_t pipe, old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    for (int r = lo; r < hi; r++, started++) {
        struct comm *c = NULL, *dp = NULL;
        char err[300] = "";
        /* (a GPU rank's device and communicator, and gloo's, come on its thread) */
        if (b->plan && !world_on_thread(b->plan) && world_comms(b->plan, r, NULL, &c, &dp, err, sizeof(err)) != 0) {
            fprintf(stderr, "ddptop: --bench-comm: %s\n", err);
            atomic_store(b->abort, 1);
            status = 1;
            break;
        }
        ws[r] = (struct worker){.b = b, .c = c, .rank = r, .index = world_device(b->plan, r)};
        if (pthread_create(&th[r], NULL, bench_thread, &ws[r]) != 0) {
            fprintf(stderr, "ddptop: --bench-comm: cannot start rank %d's thread\n", r);
            if (c)
                c->ops->destroy(c);
            atomic_store(b->abort, 1);
            status = 1;
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int left = started - lo; left > 0;) {
        for (int r = lo; r < started; r++) {
            void *ret;
            if (joined[r] || pthread_tryjoin_np(th[r], &ret) == EBUSY)
                continue;
            joined[r] = 1;
            left--;
            if (ret) {
                if (!status)
                    fprintf(stderr, "ddptop: --bench-comm: %s\n", ws[r].err);
                status = 1;
                atomic_store(b->abort, 1);
            }
        }
        if (stop_signal)
            atomic_store(b->abort, 1);
        probe_nap_ms(10);
    }
    for (int r = lo; r < started; r++) {
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
    return status;
}

/* The table's fit, under the names report.c looks fits up by: the world
 * planner's. */
static void name_fit(const struct bench *b, struct cost_fit *fit)
{
    snprintf(fit->backend, sizeof(fit->backend), "%s", b->plan->fit_backend);
    snprintf(fit->algo, sizeof(fit->algo), "%s", b->plan->fit_algo);
}

static void write_json(FILE *out, const struct bench *b, const struct cost_fit *fit, const char *where, int poor,
                       int stored, const char *path)
{
    double factor = coll_busbw_factor(b->coll, b->world);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "collective", coll_name(b->coll));
    cJSON_AddStringToObject(root, "backend", fit->backend);
    cJSON_AddStringToObject(root, "algo", fit->algo);
    cJSON_AddStringToObject(root, "world", where);
    cJSON_AddNumberToObject(root, "ranks", b->world);
    cJSON_AddNumberToObject(root, "iters", b->cfg->iters);
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
    if (fit->valid) {
        /* (alpha and beta: the first regime's, as before regimes) */
        cJSON_AddNumberToObject(f, "alpha_us", fit->alpha_us);
        cJSON_AddNumberToObject(f, "beta_us_per_byte", fit->beta_us_per_byte);
        cJSON_AddNumberToObject(f, "r2", fit->r2);
        cJSON *regs = cJSON_AddArrayToObject(f, "regimes");
        for (int k = 0; regs && k <= fit->nmore; k++) {
            cJSON *g = cJSON_CreateObject();
            cJSON_AddNumberToObject(g, "from_bytes", k ? fit->more[k - 1].from_bytes : 0);
            cJSON_AddNumberToObject(g, "alpha_us", k ? fit->more[k - 1].alpha_us : fit->alpha_us);
            cJSON_AddNumberToObject(g, "beta_us_per_byte",
                                    k ? fit->more[k - 1].beta_us_per_byte : fit->beta_us_per_byte);
            cJSON_AddItemToArray(regs, g);
        }
        cJSON_AddNumberToObject(f, "max_err_pct", 100.0 * fit->max_err);
        cJSON_AddBoolToObject(f, "poor", poor);
        if (stored)
            cJSON_AddStringToObject(f, "stored", path);
        else
            cJSON_AddNullToObject(f, "stored");
    }
    char *s = cJSON_Print(root);
    fprintf(out, "%s", s);
    free(s);
    cJSON_Delete(root);
}

/* index: the table's place; a CSV's tables are one (a header, then rows
 * that name their backend) */
static void write_rows(FILE *out, const struct bench *b, const struct cost_fit *fit, const char *where, int index)
{
    int csv = b->cfg->format == FMT_CSV, md = b->cfg->format == FMT_MD;
    double factor = coll_busbw_factor(b->coll, b->world);
    const char *algo = fit->algo;
    if (csv) {
        if (index == 0)
            fprintf(out, "collective,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong,backend,algo\n");
    } else {
        fprintf(out, "%s%s, %s%s%s%s, %d rank%s, %d iters (%d warm-up), float32%s; 1 GB = 1e9 B\n", md ? "" : "# ",
                coll_name(b->coll), fit->backend, strcmp(algo, fit->backend) ? "/" : "",
                strcmp(algo, fit->backend) ? algo : "", where, b->world, b->world == 1 ? "" : "s", b->cfg->iters,
                b->cfg->warmup, b->bc->sums ? " sum" : "");
        if (md)
            fprintf(out, "\n| size | count | time (us) | algbw (GB/s) | busbw (GB/s) | #wrong |\n"
                         "|---:|---:|---:|---:|---:|---:|\n");
        else
            fprintf(out, "%10s %12s %12s %12s %12s %8s\n", "size", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                    "#wrong");
    }
    for (int k = 0; k < b->nrows; k++) {
        const struct row *row = &b->rows[k];
        double algbw = (double)row->bytes / (row->time_us * 1e3);
        char sz[32];
        fmt_bytes_exact(sz, sizeof(sz), row->bytes);
        if (csv)
            fprintf(out, "%s,%llu,%zu,%.3f,%.4f,%.4f,%ld,%s,%s\n", coll_name(b->coll), (unsigned long long)row->bytes,
                    row->count, row->time_us, algbw, algbw * factor, row->wrong, fit->backend, fit->algo);
        else
            fprintf(out, md ? "| %s | %zu | %.2f | %.3f | %.3f | %ld |\n" : "%10s %12zu %12.2f %12.3f %12.3f %8ld\n",
                    sz, row->count, row->time_us, algbw, algbw * factor, row->wrong);
    }
    if (!csv && fit->valid)
        write_fit(out, fit, md);
}

/* Process 0's part of a table once every rank's rows are in: the rows
 * every rank finished, the fit (stored where training reports find it),
 * the table on out, and what went wrong on stderr. nprocs: the processes
 * the ranks were (0: threads). Returns the exit status, *stop set where no
 * later table may run. */
static int bench_report(struct bench *b, int index, FILE *out, int nprocs, int status, int *stop)
{
    const struct config *cfg = b->cfg;
    if (status)
        return 1; /* (the failure is said) */
    int stopped = 0;
    for (int r = 0; r < b->world; r++)
        if (b->done[r] < b->nrows) {
            stopped = 1;
            b->nrows = b->done[r]; /* the rows every rank finished */
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
    name_fit(b, &fit);
    fit.valid = b->world > 1 && cost_fit_regimes(xs, ys, b->nrows, &fit) == 0;
    int poor = fit.valid && fit.max_err > COST_FIT_TOLERANCE;
    int e = index == 0 && cfg->output[0] ? outfile_writable(cfg->output) : 0;
    if (e) {
        fprintf(stderr, "ddptop: --output: cannot write %s: %s\n", cfg->output, strerror(e));
        return 2;
    }
    /* the fit is stored before the report, which names the file (an
     * interrupted benchmark's is not: its sizes stop short) */
    char path[1024] = "", serr[1200] = "", where[48] = "";
    int placed = cost_model_path(path, sizeof(path)) != NULL;
    int stored = fit.valid && !stopped && placed && cost_model_save(path, &fit, 1, serr, sizeof(serr)) == 0;
    if (nprocs)
        snprintf(where, sizeof(where), ", %d process%s", nprocs, nprocs == 1 ? "" : "es");
    if (index > 0 && cfg->format != FMT_CSV)
        fprintf(out, cfg->format == FMT_JSON ? ",\n" : "\n");
    if (cfg->format == FMT_JSON)
        write_json(out, b, &fit, where[0] ? where + 2 : "threads", poor, stored, path);
    else
        write_rows(out, b, &fit, where, index);
    *stop = 0;
    if (stopped) {
        fprintf(stderr, "ddptop: interrupted; reported the %d sizes measured (the fit is not stored)\n", b->nrows);
        *stop = 1;
        return 128 + (int)stop_signal;
    }
    if (poor)
        warn_poor(&fit, b->rows, b->nrows);
    if (fit.valid) {
        if (!placed) {
            char why[1200];
            cost_model_no_place(why, sizeof(why));
            fprintf(stderr, "ddptop: the cost model is not stored: %s\n", why);
        } else if (!stored)
            fprintf(stderr, "ddptop: cannot store the cost model: %s\n", serr);
        else
            fprintf(stderr,
                    "ddptop: --bench-comm: the fit is stored in %s (%s/%s; where --predict and pred/step read it)\n",
                    path, fit.backend, fit.algo);
    }
    if (total_wrong) {
        fprintf(stderr, "ddptop: --bench-comm: %s/%s: %ld wrong results\n", fit.backend, fit.algo, total_wrong);
        return 1;
    }
    return 0;
}

/* One backend's table: planned, measured, gathered to process 0, fitted,
 * stored and written to out (index: its place among the tables). Returns
 * the exit status so far (0; 1 after a failure or a wrong result, 2 after
 * a refusal, 128 + signal after a Ctrl-C), with *stop set where no later
 * table may run. A worker process under mpirun writes nothing. */
static int bench_table(const struct config *cfg, struct world *wp, int index, FILE *out, int *stop)
{
    struct bench *b = calloc(1, sizeof(*b));
    if (!b)
        return 1;
    b->cfg = cfg;
    b->world = cfg->ranks[0];
    b->coll = cfg->collective;
    b->bc = bench_coll_of(b->coll);
    _Atomic int abort_flag = 0;
    b->abort = &abort_flag;
    const struct procs *pr = procs_self();
    int status = 0;
    char err[300] = "";
    *stop = 1;
    if (open_table(b, wp, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --bench-comm: %s\n", err);
        status = 2;
        goto done;
    }
    if (plan_rows(b) == 0) {
        fprintf(stderr, "ddptop: --min-bytes: no message size in range fits %d ranks\n", b->world);
        status = 2;
        goto done;
    }
    int over_procs = wp->procs;
    if (!over_procs && pr->active && pr->rank != 0) {
        *stop = 0; /* (process 0's threads' table: nothing of it here) */
        goto done;
    }
    /* the ranks this process runs: all of them, or its own under mpirun */
    status = run_ranks(b, wp->lo, wp->hi);
    if (over_procs && gather_rows(b, pr->rank, pr->size, &status) != 0) {
        *stop = status != 0;
        goto done; /* a worker: process 0 reports */
    }
    status = bench_report(b, index, out, over_procs ? pr->size : 0, status, stop);
done:
    if (b->plan)
        world_close(b->plan);
    free(b);
    return status;
}

int bench_comm_main(const struct config *cfg)
{
    if (cfg->nranks > 1) {
        fprintf(stderr, "ddptop: --bench-comm: one --ranks at a time (got %d counts); run it once for each\n",
                cfg->nranks);
        return 2;
    }
    /* the device: a GPU's collectives where --device picks one */
    char note[256], err[300] = "";
    const struct device_ops *dev = device_select(cfg->base.device, note, sizeof(note), err, sizeof(err));
    if (!dev) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }
    if (device_is_gpu(dev) && cfg->ncomms > 1) {
        fprintf(stderr, "ddptop: --comm: GPU ranks take one backend (nccl, or their ring), not %d\n", cfg->ncomms);
        return 2;
    }
    /* --output: made in memory, then written beside its name and renamed
     * over it (outfile.h) */
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = cfg->output[0] ? open_memstream(&text, &text_len) : stdout;
    if (!out) {
        fprintf(stderr, "ddptop: --output: out of memory\n");
        return 2;
    }
    const struct procs *pr = procs_self();
    /* every backend must suit the launch before any is measured: each
     * table's world, planned once here and kept for its table (the plan
     * reads its configuration while it lives) */
    struct table {
        struct run_config rc;
        struct world plan;
    } *tabs = calloc((size_t)cfg->ncomms, sizeof(*tabs));
    if (!tabs)
        snprintf(err, sizeof(err), "--bench-comm: out of memory for %d tables", cfg->ncomms);
    for (int t = 0; tabs && t < cfg->ncomms; t++) {
        struct world_req q = table_req(cfg, dev, cfg->comms[t], &tabs[t].rc);
        if (world_plan(&tabs[t].plan, &q, err, sizeof(err)) != 0) {
            free(tabs);
            tabs = NULL;
        }
    }
    if (!tabs) {
        if (pr->rank == 0)
            fprintf(stderr, "ddptop: %s\n", err);
        if (out != stdout)
            fclose(out);
        free(text);
        return 2;
    }
    /* (process 0 writes every table: a worker's stdout is mpirun's too) */
    int json = cfg->format == FMT_JSON && pr->rank == 0, several = cfg->ncomms > 1, status = 0, stop = 0, written = 0;
    if (json && several)
        fprintf(out, "[\n");
    for (int t = 0; t < cfg->ncomms && !stop; t++) {
        int st = bench_table(cfg, &tabs[t].plan, written, out, &stop);
        written += st == 0 || st == 1 || st > 128; /* (a Ctrl-C's table holds the sizes measured) */
        if (st > status)
            status = st;
        if (pr->active) /* (process 0's word: its output or a Ctrl-C may end the job) */
            procs_bcast(&stop, sizeof(stop));
    }
    if (json && (written || several))
        fprintf(out, "%s", several ? "\n]\n" : "\n");
    if (out != stdout) {
        char why[1200] = "";
        int e = fclose(out);
        if (pr->rank == 0 && written && status != 2 &&
            (e != 0 || outfile_write(cfg->output, text, text_len, why, sizeof(why)) != 0)) {
            fprintf(stderr, "ddptop: --output: cannot write %s; the table follows on standard output\n",
                    why[0] ? why : cfg->output);
            if (text)
                fwrite(text, 1, text_len, stdout);
            status = status ? status : 1;
        }
        free(text);
    }
    free(tabs);
    return status;
}
