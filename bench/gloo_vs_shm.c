/* gloo_vs_shm.c - allreduce time and bus bandwidth of ddptop's gloo
 * communicator (each of gloo's algorithms) and of its shm ring, on W rank
 * threads of this process, nccl-tests style: per size, WARMUP calls, then
 * ITERS timed calls, a call's time the slowest rank's mean; the best of
 * REPS such runs is printed (the machine may be shared). The last call's
 * result is checked against the exact sum (#wrong). Not a test: it prints
 * figures and exits non-zero only when something failed.
 *
 * `procs` runs gloo's ring on W processes instead (forked here, meeting in
 * a file store), as PyTorch runs its ranks: the row is named ring-procs.
 * `calls` does the same, timing each call alone: the median and 10th
 * percentile of 300 calls at 4 B, 2 KB, 128 KB and 256 KB, as
 * bench/gloo_path_ref.py times PyTorch's (a mean follows the scheduler's
 * worst moments on a shared machine; a median does not).
 *
 * Build and run: bench/gloo_vs_shm.sh [BUILD_DIR] (compiles this against
 * the build's libraries). Output: one line per (backend, size):
 *   backend bytes time_us busbw_GBps #wrong
 * (1 GB = 1e9 B; busbw = bytes / time * 2(W-1)/W). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm.h"
#include "comm_gloo.h"

static int W = 2, REPS = 3;
static size_t MIN_BYTES = 4096, MAX_BYTES = (size_t)64 << 20;

struct bench {
    struct comm *c[8];
    size_t n;
    int iters;
    double t_s[8]; /* each rank's mean per call */
    long wrong[8];
};

struct arg {
    struct bench *b;
    int rank;
};

static double now(void)
{
    return (double)probe_now_ns() / 1e9;
}

static void *rank_main(void *p)
{
    struct arg *a = p;
    struct bench *b = a->b;
    struct comm *c = b->c[a->rank];
    float *x = malloc(b->n * sizeof(float));
    for (size_t i = 0; i < b->n; i++)
        x[i] = 1.0f;
    for (int i = 0; i < 3; i++)
        c->ops->allreduce(c, x, b->n, RED_SUM);
    c->ops->barrier(c);
    double t0 = now();
    for (int i = 0; i < b->iters; i++)
        c->ops->allreduce(c, x, b->n, RED_SUM);
    b->t_s[a->rank] = (now() - t0) / b->iters;
    /* a checked call: rank r gives r + i % 7, so the sum is exact */
    for (size_t i = 0; i < b->n; i++)
        x[i] = (float)(a->rank + (int)(i % 7));
    long wrong = c->ops->allreduce(c, x, b->n, RED_SUM) != 0 ? 1 : 0;
    for (size_t i = 0; i < b->n; i++)
        wrong += x[i] != (float)(W * (int)(i % 7) + W * (W - 1) / 2);
    b->wrong[a->rank] = wrong;
    free(x);
    return NULL;
}

/* One timed run over the ranks' communicators: the slowest rank's mean. */
static double run(struct bench *b, long *wrong)
{
    pthread_t th[8];
    struct arg args[8];
    for (int r = 0; r < W; r++) {
        args[r] = (struct arg){b, r};
        pthread_create(&th[r], NULL, rank_main, &args[r]);
    }
    double t = 0;
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        t = b->t_s[r] > t ? b->t_s[r] : t;
        *wrong += b->wrong[r];
    }
    return t;
}

struct maker {
    struct comm **c;
    struct comm_gloo_params p;
    char err[256];
};

static void *make(void *p)
{
    struct maker *m = p;
    *m->c = comm_gloo_create(&m->p, m->err, sizeof(m->err));
    return NULL;
}

/* W communicators of `backend`: "shm", or a gloo algorithm's name. */
static int open_world(const char *backend, struct bench *b, struct shm_world **sw, struct gloo_store **st)
{
    static int worlds;
    static _Atomic int abort_flag;
    if (!strcmp(backend, "shm")) {
        *sw = shm_world_create(W, &abort_flag);
        for (int r = 0; r < W; r++)
            b->c[r] = comm_shm_create(*sw, r, ALGO_RING);
        return 0;
    }
    struct gloo_shim_error e;
    *st = gloo_store_open("mem", &e);
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "bench%d", worlds++);
    pthread_t th[8];
    struct maker m[8];
    for (int r = 0; r < W; r++) {
        m[r] = (struct maker){.c = &b->c[r],
                              .p = {.rank = r,
                                    .world = W,
                                    .store = *st,
                                    .prefix = prefix,
                                    .algo = comm_gloo_algo_parse(backend),
                                    .timeout_s = 300}};
        pthread_create(&th[r], NULL, make, &m[r]);
    }
    int bad = 0;
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        if (!b->c[r]) {
            fprintf(stderr, "gloo_vs_shm: rank %d: %s\n", r, m[r].err);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

static size_t iters_for(size_t bytes)
{
    size_t it = ((size_t)256 << 20) / bytes;
    return it < 5 ? 5 : it > 200 ? 200 : it;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank 0's median and 10th percentile of 300 single calls per size,
 * through ddptop's communicator c, or when g is set through the shim
 * alone (gloo::allreduce with a new tag each call, as PyTorch calls it). */
static void time_calls(struct comm *c, struct gloo_shim *g, int rank)
{
    static const size_t sizes[] = {4, 2048, 131072, 262144};
    enum { CALLS = 300 };
    static double took[CALLS];
    uint32_t tag = 1u << 20;
    if (rank == 0)
        printf("%s, %d processes:", g ? "gloo's allreduce alone (the shim)" : "ddptop gloo ring", W);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k] / sizeof(float);
        float *x = malloc(sizes[k]);
        for (size_t i = 0; i < n; i++)
            x[i] = 1.0f;
        struct gloo_shim_error e;
        for (int i = 0; i < 20; i++)
            g ? gloo_shim_allreduce(g, GLOO_SHIM_RING, x, n, NULL, tag++, 300000, &e)
              : c->ops->allreduce(c, x, n, RED_SUM);
        c->ops->barrier(c);
        for (int i = 0; i < CALLS; i++) {
            double t0 = now();
            g ? gloo_shim_allreduce(g, GLOO_SHIM_RING, x, n, NULL, tag++, 300000, &e)
              : c->ops->allreduce(c, x, n, RED_SUM);
            took[i] = now() - t0;
        }
        qsort(took, CALLS, sizeof(took[0]), by_value);
        if (rank == 0)
            printf("  %zu B median %.0f us (p10 %.0f)", sizes[k], took[CALLS / 2] * 1e6, took[CALLS / 10] * 1e6);
        free(x);
    }
    if (rank == 0)
        printf("\n");
    fflush(stdout);
}

static int calls_only;

/* Rank `rank` of W processes: gloo's ring over a file store in dir; rank 0
 * prints the slowest rank's best mean per size. */
static int proc_rank(int rank, const char *dir)
{
    char spec[300], err[256];
    snprintf(spec, sizeof(spec), "file:%s", dir);
    struct gloo_shim_error e;
    struct gloo_store *st = gloo_store_open(spec, &e);
    struct comm_gloo_params p = {
        .rank = rank, .world = W, .store = st, .prefix = "bench", .algo = GLOO_ALGO_RING, .timeout_s = 300};
    struct comm *c = st ? comm_gloo_create(&p, err, sizeof(err)) : NULL;
    if (!c) {
        fprintf(stderr, "gloo_vs_shm: process %d: %s\n", rank, st ? err : e.msg);
        return 1;
    }
    if (calls_only) {
        struct gloo_shim_spec gs = {
            .rank = rank, .world = W, .store = st, .prefix = "bench-shim", .timeout_ms = 300000};
        struct gloo_shim *g = gloo_shim_create(&gs, &e);
        for (int k = 0; k < 2 && g; k++) {
            time_calls(c, NULL, rank);
            time_calls(c, g, rank);
        }
        gloo_shim_destroy(g);
        c->ops->destroy(c);
        gloo_store_close(st);
        return 0;
    }
    long wrong = 0;
    for (size_t bytes = MIN_BYTES; bytes <= MAX_BYTES; bytes *= 4) {
        size_t n = bytes / sizeof(float);
        float *x = malloc(bytes), t[8];
        for (size_t i = 0; i < n; i++)
            x[i] = 1.0f;
        double best = 1e30;
        for (int rep = 0; rep < REPS; rep++) {
            for (int i = 0; i < 3; i++)
                c->ops->allreduce(c, x, n, RED_SUM);
            c->ops->barrier(c);
            double t0 = now();
            for (size_t i = 0; i < iters_for(bytes); i++)
                c->ops->allreduce(c, x, n, RED_SUM);
            float mine = (float)((now() - t0) / (double)iters_for(bytes));
            c->ops->allgather(c, &mine, t, 1);
            float slowest = 0;
            for (int r = 0; r < W; r++)
                slowest = t[r] > slowest ? t[r] : slowest;
            best = slowest < best ? slowest : best;
        }
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(rank + (int)(i % 7));
        wrong += c->ops->allreduce(c, x, n, RED_SUM) != 0;
        for (size_t i = 0; i < n; i++)
            wrong += x[i] != (float)(W * (int)(i % 7) + W * (W - 1) / 2);
        if (rank == 0)
            printf("%-17s %10zu %12.1f %11.3f %7ld\n", "ring-procs", bytes, best * 1e6,
                   (double)bytes / best * 2.0 * (W - 1) / W / 1e9, wrong);
        fflush(stdout);
        free(x);
    }
    c->ops->destroy(c);
    gloo_store_close(st);
    return wrong != 0;
}

static int procs_main(void)
{
    char dir[] = "/tmp/gloo_vs_shm.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    for (int r = 0; r < W; r++)
        if (fork() == 0)
            _exit(proc_rank(r, dir));
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    rmdir(dir);
    return failed;
}

int main(int argc, char **argv)
{
    const char *backends[] = {"shm", "ring", "ring-chunked", "halving-doubling", "bcube"};
    if (argc > 1)
        W = atoi(argv[1]);
    if (argc > 2)
        REPS = atoi(argv[2]);
    if (W < 2 || W > 8 || REPS < 1) {
        fprintf(stderr, "usage: gloo_vs_shm [RANKS 2..8] [REPS] [procs|calls]\n");
        return 2;
    }
    calls_only = argc > 3 && !strcmp(argv[3], "calls");
    if (argc > 3 && (!strcmp(argv[3], "procs") || calls_only))
        return procs_main();
    int failed = 0;
    printf("%-17s %10s %12s %11s %7s\n", "backend", "bytes", "time_us", "busbw_GB/s", "#wrong");
    for (size_t k = 0; k < sizeof(backends) / sizeof(backends[0]); k++) {
        struct bench b = {0};
        struct shm_world *sw = NULL;
        struct gloo_store *st = NULL;
        if (open_world(backends[k], &b, &sw, &st) != 0) {
            failed = 1;
            continue;
        }
        for (size_t bytes = MIN_BYTES; bytes <= MAX_BYTES; bytes *= 4) {
            b.n = bytes / sizeof(float);
            b.iters = (int)iters_for(bytes);
            double best = 1e30;
            long wrong = 0;
            for (int rep = 0; rep < REPS; rep++) {
                double t = run(&b, &wrong);
                best = t < best ? t : best;
            }
            double busbw = (double)bytes / best * 2.0 * (W - 1) / W / 1e9;
            printf("%-17s %10zu %12.1f %11.3f %7ld\n", backends[k], bytes, best * 1e6, busbw, wrong);
            fflush(stdout);
            failed |= wrong != 0;
        }
        for (int r = 0; r < W; r++)
            b.c[r]->ops->destroy(b.c[r]);
        shm_world_destroy(sw);
        gloo_store_close(st);
    }
    return failed;
}
