/* test_comm_gloo.c - the gloo communicator (collectives/comm_gloo.c over
 * Debian's libgloo) on 2, 3 and 4 rank threads of this process, each its own
 * gloo context over loopback TCP, meeting through gloo's file store in a
 * fresh folder; against exact answers.
 *
 * Inputs are small integers (x = (7r + 3i) % 17 - 8), so every sum is exact
 * in float, fp16 and bf16 whatever the order of addition, and the expected
 * result is computed here from the seeds, independently of gloo: the
 * number of elements that differ (nccl-tests' #wrong) must be 0. Every
 * allreduce algorithm, every collective, in-place forms, sizes that do not
 * divide by the rank count and sizes over gloo's 1 MB segments.
 *
 * Failures: a rank that never comes to the rendezvous, a peer that stops
 * calling and one whose communicator is gone (on 2, 3 and 4 ranks: the
 * peer named from the address in gloo's message, where 2 ranks could
 * name "the other one" without it) each fail the call, naming the rank; a
 * message of the wrong length fails its recv and nothing else.
 *
 * `test_comm_gloo proc RANK WORLD DIR [die]` is one process of the
 * 2-process test (tests/test_gloo_procs.sh): the same checks over the file
 * store in DIR, without mpirun; with `die`, rank 1 leaves abruptly after
 * the rendezvous and rank 0 must fail in bounded time naming it.
 * `test_comm_gloo mpi`, under mpirun, takes its rank, world and rendezvous
 * from MPI instead (comm_gloo_mpi.h). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "comm.h"
#include "comm_gloo.h"
#include "half.h"

static float val(int r, size_t i, int salt)
{
    return (float)((int)((7 * (size_t)r + 3 * i + (size_t)salt * 5) % 17) - 8);
}

/* A fresh folder for one world's file store; removed by rm_store. */
static void mk_store(char *dir, size_t len)
{
    snprintf(dir, len, "%s/ddptop-gloo-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
}

static void rm_store(const char *dir)
{
    /* the rendezvous removes its keys once every rank is connected: the
     * folder is empty again unless a rendezvous failed */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- one world of rank threads ------------------------------------------- */

#define MAX_W 4 /* the most ranks a world here has */

struct world {
    int W;
    char dir[256];
    struct gloo_store *store[MAX_W]; /* each rank's own, as separate processes have */
    struct comm *c[MAX_W];
    double timeout_s;
    int algo;
    _Atomic int abort;
    char err[MAX_W][256];
    char host[MAX_W][16]; /* the address each rank listens at; "": 127.0.0.1 */
};

struct maker {
    struct world *w;
    int rank;
};

static void *make_rank(void *arg)
{
    struct maker *m = arg;
    struct world *w = m->w;
    struct comm_gloo_params p = {.rank = m->rank,
                                 .world = w->W,
                                 .store = w->store[m->rank],
                                 .prefix = "test",
                                 .host = w->host[m->rank][0] ? w->host[m->rank] : NULL,
                                 .algo = w->algo,
                                 .timeout_s = w->timeout_s,
                                 .abort = &w->abort};
    w->c[m->rank] = comm_gloo_create(&p, w->err[m->rank], sizeof(w->err[0]));
    return NULL;
}

/* Makes ranks [0, present) of a world of W (the others never come), rank
 * r listening at host[r] (hosts NULL: all at 127.0.0.1). */
static void world_open_at(struct world *w, int W, int present, int algo, double timeout_s, const char *const *hosts)
{
    memset(w, 0, sizeof(*w));
    w->W = W;
    w->algo = algo;
    w->timeout_s = timeout_s;
    for (int r = 0; hosts && r < W; r++)
        snprintf(w->host[r], sizeof(w->host[r]), "%s", hosts[r]);
    mk_store(w->dir, sizeof(w->dir));
    char spec[300];
    snprintf(spec, sizeof(spec), "file:%s", w->dir);
    pthread_t th[MAX_W];
    struct maker mk[MAX_W];
    for (int r = 0; r < present; r++) {
        struct gloo_shim_error e;
        w->store[r] = gloo_store_open(spec, &e);
        assert_non_null(w->store[r]);
        mk[r] = (struct maker){w, r};
        pthread_create(&th[r], NULL, make_rank, &mk[r]);
    }
    for (int r = 0; r < present; r++)
        pthread_join(th[r], NULL);
}

static void world_open(struct world *w, int W, int present, int algo, double timeout_s)
{
    world_open_at(w, W, present, algo, timeout_s, NULL);
}

static void world_close(struct world *w)
{
    for (int r = 0; r < w->W; r++) {
        if (w->c[r])
            w->c[r]->ops->destroy(w->c[r]);
        gloo_store_close(w->store[r]);
    }
    rm_store(w->dir);
}

/* Runs fn(c[r], arg) on every rank's thread at once. */
struct call_job {
    struct comm *c;
    void *(*fn)(struct comm *, void *);
    void *arg;
    void *ret;
};

static void *call_thread(void *arg)
{
    struct call_job *j = arg;
    j->ret = j->fn(j->c, j->arg);
    return NULL;
}

static void on_every_rank(struct world *w, int ranks, void *(*fn)(struct comm *, void *), void *arg,
                          struct call_job *jobs)
{
    pthread_t th[MAX_W];
    for (int r = 0; r < ranks; r++) {
        jobs[r] = (struct call_job){w->c[r], fn, arg, NULL};
        pthread_create(&th[r], NULL, call_thread, &jobs[r]);
    }
    for (int r = 0; r < ranks; r++)
        pthread_join(th[r], NULL);
}

/* ---- every collective, exact --------------------------------------------- */

enum { INPLACE = 1 };

struct coll_case {
    int kind;
    int op;
    int root;
    int inplace;
};

/* One call of case k on c with n elements: the wrong elements, or -1000
 * when the call failed. */
static int run_case(struct comm *c, const struct coll_case *k, size_t n, int salt)
{
    int W = c->world, r = c->rank;
    size_t big = n * (size_t)W;
    float *in = malloc(sizeof(float) * (big + 1));
    float *out = malloc(sizeof(float) * (big + 1));
    for (size_t i = 0; i < big; i++) {
        in[i] = val(r, i, salt);
        out[i] = -1234.0f;
    }
    float inv = 1.0f / (float)W;
    int wrong = 0, rc = 0;
    switch (k->kind) {
    case COLL_ALLREDUCE:
        rc = c->ops->allreduce(c, in, n, k->op);
        for (size_t i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, i, salt);
            wrong += in[i] != (k->op == RED_AVG ? s * inv : s);
        }
        break;
    case COLL_REDUCE_SCATTER:
        rc = c->ops->reduce_scatter(c, in, out, n, k->op);
        for (size_t i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, (size_t)r * n + i, salt);
            wrong += out[i] != (k->op == RED_AVG ? s * inv : s);
        }
        break;
    case COLL_ALLGATHER:
        if (k->inplace) { /* this rank's block already in out */
            for (size_t i = 0; i < n; i++)
                out[(size_t)r * n + i] = val(r, i, salt);
            rc = c->ops->allgather(c, out + (size_t)r * n, out, n);
        } else {
            rc = c->ops->allgather(c, in, out, n);
        }
        for (int p = 0; p < W; p++)
            for (size_t i = 0; i < n; i++)
                wrong += out[(size_t)p * n + i] != val(p, i, salt);
        break;
    case COLL_BROADCAST:
        rc = c->ops->broadcast(c, in, n, k->root);
        for (size_t i = 0; i < n; i++)
            wrong += in[i] != val(k->root, i, salt);
        break;
    case COLL_REDUCE: {
        float *dst = k->inplace ? in : out;
        rc = c->ops->reduce(c, in, dst, n, k->op, k->root);
        if (r == k->root)
            for (size_t i = 0; i < n; i++) {
                float s = 0;
                for (int p = 0; p < W; p++)
                    s += val(p, i, salt);
                wrong += dst[i] != (k->op == RED_AVG ? s * inv : s);
            }
        else
            for (size_t i = 0; i < n; i++) /* a peer's input is its own */
                wrong += in[i] != val(r, i, salt);
        break;
    }
    case COLL_GATHER:
        if (k->inplace && r == k->root) {
            for (size_t i = 0; i < n; i++)
                out[(size_t)r * n + i] = val(r, i, salt);
            rc = c->ops->gather(c, out + (size_t)r * n, out, n, k->root);
        } else {
            rc = c->ops->gather(c, in, out, n, k->root);
        }
        if (r == k->root)
            for (int p = 0; p < W; p++)
                for (size_t i = 0; i < n; i++)
                    wrong += out[(size_t)p * n + i] != val(p, i, salt);
        break;
    case COLL_SCATTER:
        if (k->inplace && r == k->root) {
            rc = c->ops->scatter(c, in, in + (size_t)r * n, n, k->root);
            for (size_t i = 0; i < n; i++)
                wrong += in[(size_t)r * n + i] != val(r, (size_t)r * n + i, salt);
        } else {
            rc = c->ops->scatter(c, in, out, n, k->root);
            for (size_t i = 0; i < n; i++)
                wrong += out[i] != val(k->root, (size_t)r * n + i, salt);
        }
        break;
    case COLL_BARRIER:
        rc = c->ops->barrier(c);
        break;
    }
    free(in);
    free(out);
    if (rc) {
        fprintf(stderr, "rank %d: %s failed (%d): %s\n", r, coll_name(k->kind), rc, c->err);
        return -1000;
    }
    return wrong;
}

static const struct coll_case cases[] = {
    {COLL_ALLREDUCE, RED_SUM, 0, 0},
    {COLL_ALLREDUCE, RED_AVG, 0, 0},
    {COLL_REDUCE_SCATTER, RED_SUM, 0, 0},
    {COLL_REDUCE_SCATTER, RED_AVG, 0, 0},
    {COLL_ALLGATHER, 0, 0, 0},
    {COLL_ALLGATHER, 0, 0, INPLACE},
    {COLL_BROADCAST, 0, 0, 0},
    {COLL_BROADCAST, 0, -1, 0},
    {COLL_REDUCE, RED_SUM, 0, 0},
    {COLL_REDUCE, RED_AVG, -1, 0},
    {COLL_REDUCE, RED_SUM, -1, INPLACE},
    {COLL_GATHER, 0, 0, 0},
    {COLL_GATHER, 0, -1, INPLACE},
    {COLL_SCATTER, 0, 0, 0},
    {COLL_SCATTER, 0, -1, INPLACE},
    {COLL_BARRIER, 0, 0, 0},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* 1 and 5 (fewer than or a few more than the ranks), 1000, and over gloo's
 * 1 MB segments and the algorithm classes' chunks */
static const size_t sizes[] = {1, 5, 1000, 300 * 1024 + 7};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* wrong[case][size], summed over the ranks and 2 repetitions */
struct sweep_result {
    int wrong[NCASES][NSIZES];
};

static void *sweep_rank(struct comm *c, void *arg)
{
    struct sweep_result *res = calloc(1, sizeof(*res));
    for (int rep = 0; rep < 2; rep++)
        for (size_t k = 0; k < NCASES; k++)
            for (size_t s = 0; s < NSIZES; s++) {
                struct coll_case kc = cases[k];
                if (kc.root < 0)
                    kc.root = c->world - 1;
                res->wrong[k][s] += run_case(c, &kc, sizes[s], rep * 3 + (int)s);
            }
    return res;
}

static void sweep_world(int W, int algo)
{
    struct world w;
    world_open(&w, W, W, algo, 60.0);
    for (int r = 0; r < W; r++) {
        if (!w.c[r])
            fail_msg("rank %d: %s", r, w.err[r]);
    }
    assert_string_equal(comm_gloo_algo_of(w.c[0]), comm_gloo_algo_name(algo));
    struct call_job jobs[3];
    on_every_rank(&w, W, sweep_rank, NULL, jobs);
    int total = 0;
    for (size_t k = 0; k < NCASES; k++)
        for (size_t s = 0; s < NSIZES; s++) {
            int wrong = 0;
            for (int r = 0; r < W; r++)
                wrong += ((struct sweep_result *)jobs[r].ret)->wrong[k][s];
            if (wrong)
                fprintf(stderr, "W %d algo %s: %s op %d root %d%s n %zu: #wrong %d\n", W, comm_gloo_algo_name(algo),
                        coll_name(cases[k].kind), cases[k].op, cases[k].root, cases[k].inplace ? " in place" : "",
                        sizes[s], wrong);
            total += wrong != 0;
        }
    /* every rank numbered every call alike: 2 reps of every case and size */
    for (int r = 0; r < W; r++) {
        assert_int_equal(w.c[r]->seq, 2 * NCASES * NSIZES);
        free(jobs[r].ret);
    }
    world_close(&w);
    assert_int_equal(total, 0);
}

static void test_collectives_2(void **state)
{
    for (int algo = 0; algo < GLOO_ALGO_COUNT; algo++)
        sweep_world(2, algo);
}

static void test_collectives_3(void **state)
{
    for (int algo = 0; algo < GLOO_ALGO_COUNT; algo++)
        sweep_world(3, algo);
}

/* ---- 16-bit allreduce (--grad-compress) ---------------------------------- */

struct f16_arg {
    int fmt;
    int op;
};

static uint16_t to16(int fmt, float f)
{
    return fmt == W16_BF16 ? bf16_from_float(f) : half_from_float(f);
}

static float from16(int fmt, uint16_t h)
{
    return fmt == W16_BF16 ? bf16_to_float(h) : half_to_float(h);
}

/* small integers are exact in both formats (bf16 up to 256), and so is
 * every partial sum of val()'s; an average over 2 is exact too */
static void *f16_rank(struct comm *c, void *arg)
{
    const struct f16_arg *a = arg;
    intptr_t wrong = 0;
    static const size_t n16[] = {1, 7, 70001, 600 * 1024 + 3};
    for (size_t s = 0; s < sizeof(n16) / sizeof(n16[0]); s++) {
        size_t n = n16[s];
        uint16_t *b = malloc(n * sizeof(uint16_t));
        for (size_t i = 0; i < n; i++)
            b[i] = to16(a->fmt, val(c->rank, i, (int)s));
        if (c->ops->allreduce_16(c, b, n, a->fmt, a->op) != 0) {
            fprintf(stderr, "rank %d: %s\n", c->rank, c->err);
            wrong += 1000;
        }
        for (size_t i = 0; i < n; i++) {
            float sum = 0;
            for (int p = 0; p < c->world; p++)
                sum += val(p, i, (int)s);
            float want = a->op == RED_AVG ? from16(a->fmt, to16(a->fmt, sum * (1.0f / (float)c->world))) : sum;
            wrong += from16(a->fmt, b[i]) != want;
        }
        free(b);
    }
    return (void *)wrong;
}

static void test_allreduce_16(void **state)
{
    for (int W = 2; W <= 3; W++)
        for (int algo = 0; algo < GLOO_ALGO_COUNT; algo++) {
            struct world w;
            world_open(&w, W, W, algo, 60.0);
            for (int r = 0; r < W; r++)
                if (!w.c[r])
                    fail_msg("rank %d: %s", r, w.err[r]);
            for (int fmt = W16_FP16; fmt <= W16_BF16; fmt++)
                for (int op = RED_SUM; op <= (W == 2 ? RED_AVG : RED_SUM); op++) {
                    struct f16_arg a = {fmt, op};
                    struct call_job jobs[3];
                    on_every_rank(&w, W, f16_rank, &a, jobs);
                    intptr_t wrong = 0;
                    for (int r = 0; r < W; r++)
                        wrong += (intptr_t)jobs[r].ret;
                    if (wrong)
                        fprintf(stderr, "W %d algo %s %s op %d: #wrong %ld\n", W, comm_gloo_algo_name(algo),
                                w16_name(fmt), op, (long)wrong);
                    assert_int_equal(wrong, 0);
                }
            world_close(&w);
        }
}

/* ---- bytes, calls and spans ---------------------------------------------- */

static void *stats_rank(struct comm *c, void *arg)
{
    float b[3000] = {0};
    struct spsc_ring *ring = arg;
    if (c->rank == 0)
        comm_bind(c, ring, LANE_COMM, NULL);
    c->ops->allreduce(c, b, 1000, RED_SUM);
    c->ops->broadcast(c, b, 1000, 1);
    if (c->rank == 0) {
        c->ops->send(c, b, 250, 1);
        c->ops->recv(c, b, 10, 1);
    } else {
        c->ops->recv(c, b, 250, 0);
        c->ops->send(c, b, 10, 0);
    }
    c->ops->allgather(c, b, b + 1000, 500);
    return NULL;
}

/* On 2 ranks, by hand: an allreduce of 1000 floats moves half of 4000
 * bytes each way twice (4000 tx, 4000 rx); the broadcast from rank 1
 * brings rank 0 4000; the sends move 1000 and 40; the allgather of 500
 * floats each way 2000. Rank 0's spans: one outer comm span per call, the
 * collectives numbered 0, 1, 2, the point-to-point calls COMM_P2P with
 * seq 0. No wait is counted: a send waits only for a message of its own
 * still in flight. */
static void test_stats_and_spans(void **state)
{
    struct world w;
    world_open(&w, 2, 2, GLOO_ALGO_RING, 60.0);
    assert_non_null(w.c[0]);
    assert_non_null(w.c[1]);
    struct spsc_ring ring;
    assert_int_equal(spsc_init(&ring, sizeof(struct span), 64), 0);
    struct call_job jobs[2];
    on_every_rank(&w, 2, stats_rank, &ring, jobs);
    const struct comm_stats *s0 = &w.c[0]->stats, *s1 = &w.c[1]->stats;
    assert_int_equal(s0->calls, 5);
    assert_int_equal(s0->bytes_tx, 4000 + 1000 + 2000);
    assert_int_equal(s0->bytes_rx, 4000 + 4000 + 40 + 2000);
    assert_int_equal(s1->bytes_tx, 4000 + 4000 + 40 + 2000);
    assert_int_equal(s1->bytes_rx, 4000 + 1000 + 2000);
    /* no call waited where ddptop can see it: the collectives' waits are
     * inside gloo, and each send found the pair's previous message taken */
    assert_int_equal(s0->wait_ns, 0);
    struct span sp[64];
    size_t got = spsc_pop(&ring, sp, 64), outer = 0;
    int kinds[5] = {COLL_ALLREDUCE, COLL_BROADCAST, COMM_P2P, COMM_P2P, COLL_ALLGATHER};
    uint32_t seqs[5] = {0, 1, 0, 0, 2};
    for (size_t i = 0; i < got; i++) {
        if (sp[i].cat != CAT_COMM || !sp[i].outer)
            continue;
        assert_true(outer < 5);
        assert_int_equal(sp[i].coll, kinds[outer]);
        assert_int_equal(sp[i].seq, seqs[outer]);
        outer++;
    }
    assert_int_equal(outer, 5);
    spsc_free(&ring);
    world_close(&w);
}

/* On 3 ranks, every rooted collective and the ring ones, each rank's bytes
 * counted by hand (n floats of 4 bytes; a ring moves 2(W-1)/W of the
 * buffer each way; a root sends or receives one copy per peer):
 *   broadcast of 1000 from rank 1: rank 1 sends 2 x 4000, the others get 4000
 *   reduce of 1000 to rank 2: the others send 4000, rank 2 gets 2 x 4000
 *   gather of 100 to rank 0: the others send 400, rank 0 gets 2 x 400
 *   scatter of 100 from rank 0: rank 0 sends 2 x 400, the others get 400
 *   allreduce of 999 (3996 bytes): 2 x 2664 each way
 *   reduce-scatter of 3 x 100 (1200 bytes, an allreduce): 2 x 800 each way
 *   allgather of 100 each: 2 x 400 each way */
static void *stats3_rank(struct comm *c, void *arg)
{
    float *b = calloc(3000, sizeof(float)), *o = calloc(3000, sizeof(float));
    intptr_t rc = c->ops->broadcast(c, b, 1000, 1);
    rc |= c->ops->reduce(c, b, o, 1000, RED_SUM, 2);
    rc |= c->ops->gather(c, b, o, 100, 0);
    rc |= c->ops->scatter(c, b, o, 100, 0);
    rc |= c->ops->allreduce(c, b, 999, RED_SUM);
    rc |= c->ops->reduce_scatter(c, b, o, 100, RED_SUM);
    rc |= c->ops->allgather(c, b, o, 100);
    free(b);
    free(o);
    return (void *)rc;
}

static void test_stats_3(void **state)
{
    struct world w;
    world_open(&w, 3, 3, GLOO_ALGO_RING, 60.0);
    for (int r = 0; r < 3; r++)
        assert_non_null(w.c[r]);
    struct call_job jobs[3];
    on_every_rank(&w, 3, stats3_rank, NULL, jobs);
    uint64_t ring = 2 * 2664 + 2 * 800 + 2 * 400; /* each way, every rank */
    uint64_t tx[3] = {4000 + 2 * 400 + ring, 2 * 4000 + 4000 + 400 + ring, 400 + ring};
    uint64_t rx[3] = {4000 + 2 * 400 + ring, 400 + ring, 4000 + 2 * 4000 + 400 + ring};
    for (int r = 0; r < 3; r++) {
        assert_int_equal((intptr_t)jobs[r].ret, 0);
        assert_int_equal(w.c[r]->stats.calls, 7);
        assert_int_equal(w.c[r]->stats.bytes_tx, tx[r]);
        assert_int_equal(w.c[r]->stats.bytes_rx, rx[r]);
    }
    world_close(&w);
}

/* ---- send / recv --------------------------------------------------------- */

static const size_t msg_n[] = {1000, 1, 0, 300 * 1024 + 1, 5};
#define NMSG (sizeof(msg_n) / sizeof(msg_n[0]))

/* Message m of the exchange from rank `from` (salted). */
static float *message(int from, size_t m, int salt)
{
    float *b = malloc((msg_n[m] + 1) * sizeof(float));
    for (size_t i = 0; i < msg_n[m]; i++)
        b[i] = val(from, i, salt + (int)m);
    return b;
}

/* Sends message m to `to` and receives message m from `from`, send first:
 * a send waits only for the pair's previous message to be taken, so every
 * rank may send before it receives. The wrong elements received. */
static int exchange(struct comm *c, int to, int from, int salt)
{
    int wrong = 0;
    for (size_t m = 0; m < NMSG; m++) {
        float *out = message(c->rank, m, salt), *in = malloc((msg_n[m] + 1) * sizeof(float));
        for (size_t i = 0; i < msg_n[m]; i++)
            in[i] = -1234.0f;
        wrong += c->ops->send(c, out, msg_n[m], to) ? 1000 : 0;
        free(out); /* a send copies: the buffer is the caller's again */
        wrong += c->ops->recv(c, in, msg_n[m], from) ? 1000 : 0;
        for (size_t i = 0; i < msg_n[m]; i++)
            wrong += in[i] != val(from, i, salt + (int)m);
        free(in);
    }
    return wrong;
}

/* Every rank exchanges with its neighbours (sends right, receives from the
 * left); then ranks 0 and W-1 alone exchange, between allreduces whose
 * numbers the others' must match. */
static void *p2p_rank(struct comm *c, void *arg)
{
    int W = c->world, r = c->rank;
    intptr_t wrong = 0;
    for (int round = 0; round < 2; round++) {
        int salt = 10 * round;
        wrong += exchange(c, (r + 1) % W, (r - 1 + W) % W, salt);
        float b[64];
        for (int i = 0; i < 64; i++)
            b[i] = val(r, (size_t)i, salt);
        wrong += c->ops->allreduce(c, b, 64, RED_SUM) ? 1000 : 0;
        for (int i = 0; i < 64; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, (size_t)i, salt);
            wrong += b[i] != s;
        }
        if (r == 0)
            wrong += exchange(c, W - 1, W - 1, salt + 2);
        else if (r == W - 1)
            wrong += exchange(c, 0, 0, salt + 2);
        wrong += c->ops->barrier(c) ? 1000 : 0;
    }
    if (wrong)
        fprintf(stderr, "rank %d: #wrong %ld (%s)\n", r, (long)wrong, c->err);
    return (void *)wrong;
}

static void test_send_recv(void **state)
{
    for (int W = 2; W <= 3; W++) {
        struct world w;
        world_open(&w, W, W, GLOO_ALGO_RING, 60.0);
        for (int r = 0; r < W; r++)
            assert_non_null(w.c[r]);
        struct call_job jobs[3];
        on_every_rank(&w, W, p2p_rank, NULL, jobs);
        for (int r = 0; r < W; r++) {
            assert_int_equal((intptr_t)jobs[r].ret, 0);
            assert_int_equal(w.c[r]->seq, 4); /* the allreduces and barriers only */
        }
        world_close(&w);
    }
}

/* Rank 0 sends 5 floats where rank 1 expects 6, then 3 more, which rank 1
 * takes: the first recv fails naming both lengths, and the process, the
 * pair and the communicator go on (gloo's own pair would abort the process
 * on a message longer than its receive). */
static void *mismatch_rank(struct comm *c, void *arg)
{
    float b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (c->rank == 0)
        return (void *)(intptr_t)(c->ops->send(c, b, 5, 1) | c->ops->send(c, b + 5, 3, 1));
    float *got = arg;
    int rc = c->ops->recv(c, b, 6, 0);
    return (void *)(intptr_t)(rc * 10 + c->ops->recv(c, got, 3, 0));
}

static void test_recv_length(void **state)
{
    struct world w;
    world_open(&w, 2, 2, GLOO_ALGO_RING, 60.0);
    struct call_job jobs[2];
    float got[3] = {0};
    on_every_rank(&w, 2, mismatch_rank, got, jobs);
    printf("  %s\n", w.c[1]->err);
    assert_int_equal((intptr_t)jobs[0].ret, 0);
    assert_int_equal((intptr_t)jobs[1].ret, -10); /* the first recv failed, the second did not */
    assert_string_equal(w.c[1]->err, "recv from rank 0: it sent 20 bytes where 24 were expected");
    assert_int_equal(w.c[1]->stats.bytes_rx, 3 * sizeof(float));
    assert_true(got[0] == 6 && got[1] == 7 && got[2] == 8);
    /* and the peer check of every backend */
    float b[1];
    assert_int_equal(w.c[0]->ops->send(w.c[0], b, 1, 0), -1);
    assert_string_equal(w.c[0]->err, "send to rank 0: not a peer of rank 0 of 2");
    world_close(&w);
}

/* ---- a peer that does not come, stops, or is gone ------------------------ */

/* Rank 0 alone of 2, and of 3: the rendezvous gives up after its timeout,
 * not before, naming every rank that did not come, and leaves no key. */
static void test_rendezvous_timeout(void **state)
{
    for (int W = 2; W <= 3; W++) {
        struct world w;
        int64_t t0 = probe_now_ns();
        world_open(&w, W, 1, GLOO_ALGO_RING, 0.3);
        double s = (double)(probe_now_ns() - t0) / 1e9;
        printf("  alone of %d: %.3f s: %s\n", W, s, w.err[0]);
        assert_null(w.c[0]);
        assert_true(s >= 0.3);
        assert_true(s < 30.0); /* bounded, with room for a loaded machine */
        assert_non_null(strstr(w.err[0], W == 2 ? "rank 1 of 2 did not come" : "ranks 1, 2 of 3 did not come"));
        assert_non_null(strstr(w.err[0], "within 0.3 s"));
        /* and took its key away: the next job finds the folder empty */
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", w.dir);
        assert_int_equal(system(cmd), 0);
        world_close(&w);
    }
}

/* Rank 0 alone of 2, waiting at the rendezvous (timeout 60 s), when the
 * run is stopped (its peer failed before it came): it gives up at the
 * stop, long before the timeout, names the rank missing, and leaves no key. */
static void *raise_abort(void *arg)
{
    usleep(200 * 1000);
    atomic_store((_Atomic int *)arg, 1);
    return NULL;
}

static void test_rendezvous_stopped(void **state)
{
    struct world w;
    memset(&w, 0, sizeof(w));
    w.W = 2;
    w.timeout_s = 60.0;
    mk_store(w.dir, sizeof(w.dir));
    char spec[300];
    snprintf(spec, sizeof(spec), "file:%s", w.dir);
    struct gloo_shim_error e;
    assert_non_null(w.store[0] = gloo_store_open(spec, &e));
    pthread_t raiser;
    int64_t t0 = probe_now_ns();
    assert_int_equal(pthread_create(&raiser, NULL, raise_abort, &w.abort), 0);
    struct maker m = {&w, 0};
    make_rank(&m);
    double s = (double)(probe_now_ns() - t0) / 1e9;
    pthread_join(raiser, NULL);
    printf("  stopped at the rendezvous: %.3f s: %s\n", s, w.err[0]);
    assert_null(w.c[0]);
    assert_true(s >= 0.2);
    assert_true(s < 30.0); /* not the 60 s timeout, with room for a loaded machine */
    assert_non_null(strstr(w.err[0], "the run was stopped while rank 1 of 2 had not come to the rendezvous"));
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", w.dir);
    assert_int_equal(system(cmd), 0);
    world_close(&w);
}

/* One rank stops calling (its communicator alive, silent): a collective or
 * a recv on the others times out after the communicator's timeout (2 s,
 * room for the rendezvous on a loaded machine), not before, naming it
 * where it can be told. */
struct silent_arg {
    int silent; /* the rank that makes no call */
    int kind;   /* COLL_ALLREDUCE or COMM_P2P (a recv from it) */
    _Atomic int *done;
};

static void *silent_rank(struct comm *c, void *arg)
{
    struct silent_arg *a = arg;
    if (c->rank == a->silent) {
        while (atomic_load(a->done) < c->world - 1)
            usleep(1000);
        return NULL;
    }
    float b[1000] = {0};
    int64_t t0 = probe_now_ns();
    int rc = a->kind == COMM_P2P ? c->ops->recv(c, b, 1000, a->silent) : c->ops->allreduce(c, b, 1000, RED_SUM);
    double *s = malloc(sizeof(double));
    *s = rc == -1 ? (double)(probe_now_ns() - t0) / 1e9 : -1.0;
    atomic_fetch_add(a->done, 1);
    return s;
}

static void test_silent_peer(void **state)
{
    struct {
        int W, algo, kind;
    } runs[] = {{2, GLOO_ALGO_RING, COLL_ALLREDUCE},
                {2, GLOO_ALGO_RING_CHUNKED, COLL_ALLREDUCE},
                {2, GLOO_ALGO_HALVING_DOUBLING, COLL_ALLREDUCE},
                {2, GLOO_ALGO_BCUBE, COLL_ALLREDUCE},
                {3, GLOO_ALGO_RING, COMM_P2P},
                {3, GLOO_ALGO_RING_CHUNKED, COLL_ALLREDUCE},
                {3, GLOO_ALGO_HALVING_DOUBLING, COLL_ALLREDUCE},
                {3, GLOO_ALGO_RING, COLL_ALLREDUCE}};
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        int W = runs[k].W;
        struct world w;
        world_open(&w, W, W, runs[k].algo, 2.0);
        for (int r = 0; r < W; r++)
            assert_non_null(w.c[r]);
        _Atomic int done = 0;
        struct silent_arg a = {W - 1, runs[k].kind, &done};
        struct call_job jobs[3];
        on_every_rank(&w, W, silent_rank, &a, jobs);
        char want[32];
        for (int r = 0; r < W - 1; r++) {
            snprintf(want, sizeof(want), "waiting for rank %d ", W - 1);
            double s = *(double *)jobs[r].ret;
            printf("  %s, rank %d of %d: %.3f s: %s\n", comm_gloo_algo_name(runs[k].algo), r, W, s, w.c[r]->err);
            assert_true(s >= 2.0);
            assert_true(s < 60.0);
            assert_non_null(strstr(w.c[r]->err, "timed out after"));
            /* the peer named: the silent one where gloo's message or the
             * call says who (2 ranks, a recv); 3 ranks' collectives name
             * the rank a message was awaited from when gloo gives its
             * listening address, else "a peer", never this rank */
            if (W == 2 || runs[k].kind == COMM_P2P)
                assert_non_null(strstr(w.c[r]->err, want));
            snprintf(want, sizeof(want), "waiting for rank %d ", r);
            assert_null(strstr(w.c[r]->err, want));
            assert_non_null(strstr(w.c[r]->err, "waiting for "));
            /* gloo's connections are not to be trusted after a failure */
            float b[4] = {0};
            assert_int_equal(w.c[r]->ops->allreduce(w.c[r], b, 4, RED_SUM), -1);
            assert_non_null(strstr(w.c[r]->err, "unusable after"));
            free(jobs[r].ret);
        }
        world_close(&w);
    }
}

/* A peer whose communicator is gone (its rank failed and left): the call
 * of the rank that receives from it fails long before the timeout, naming
 * it. On 2 ranks the shim may name "the other rank" without reading
 * gloo's message; on 3 and 4 only the address in the message ("Connection
 * closed by peer [ip]:port") tells which peer left, so the rank that
 * receives from it in gloo's ring (rank r receives from r + 1 and sends to
 * r - 1) must name the rank made to leave here, and no rank may name
 * itself. The rank that sends to it names it only when the close arrives
 * before its send is posted: after that, gloo waits on its receive from
 * its other neighbour first, a rank that has itself failed, until the
 * timeout (seen under ASan). Each rank listens at its own loopback
 * address, the leaving one at the lowest: gloo's pair connects from the
 * higher address to the lower, so every other rank's message gives the
 * leaving rank's listening address, the one its rendezvous record holds.
 * (A rank that accepted the connection sees the peer's outgoing port
 * instead, which no record holds: it says "a peer".) A rank that is no
 * neighbour waits on one that failed: its call times out. */
struct gone_arg {
    int gone;
};

static void *gone_rank(struct comm *c, void *arg)
{
    const struct gone_arg *a = arg;
    if (c->rank == a->gone) {
        c->ops->destroy(c);
        return NULL;
    }
    float b[1000] = {0};
    int64_t t0 = probe_now_ns();
    int rc = c->ops->allreduce(c, b, 1000, RED_SUM);
    double *s = malloc(sizeof(double));
    *s = rc == -1 ? (double)(probe_now_ns() - t0) / 1e9 : -1.0;
    return s;
}

static void test_peer_gone(void **state)
{
    static const struct {
        int W, gone;
    } runs[] = {{2, 1}, {3, 1}, {3, 2}, {4, 0}, {4, 2}};
    static const char *const ips[MAX_W] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        int W = runs[k].W, D = runs[k].gone;
        const char *hosts[MAX_W];
        for (int r = 0, next = 1; r < W; r++)
            hosts[r] = r == D ? ips[0] : ips[next++];
        struct world w;
        world_open_at(&w, W, W, GLOO_ALGO_RING, 5.0, hosts);
        for (int r = 0; r < W; r++)
            assert_non_null(w.c[r]);
        struct gone_arg a = {D};
        struct call_job jobs[MAX_W];
        on_every_rank(&w, W, gone_rank, &a, jobs);
        w.c[D] = NULL;
        char gone[32], self[32];
        snprintf(gone, sizeof(gone), "allreduce: rank %d: ", D);
        for (int r = 0; r < W; r++) {
            if (r == D)
                continue;
            double s = *(double *)jobs[r].ret;
            int receiver = (r + 1) % W == D, sender = (r + W - 1) % W == D;
            printf("  rank %d of %d gone, rank %d (%s): %.3f s: %s\n", D, W, r,
                   receiver ? "receives from it"
                   : sender ? "sends to it"
                            : "no neighbour",
                   s, w.c[r]->err);
            assert_true(s >= 0); /* the call failed */
            if (receiver) {
                assert_true(s < 2.5); /* half the timeout: it did not wait for it */
                assert_non_null(strstr(w.c[r]->err, gone));
                assert_null(strstr(w.c[r]->err, "timed out"));
            }
            snprintf(self, sizeof(self), "rank %d", r);
            assert_null(strstr(w.c[r]->err, self));
            free(jobs[r].ret);
        }
        world_close(&w);
    }
}

/* A stop request: every call fails with COMM_ABORTED, before touching
 * gloo (the peers need not be there). */
static void test_abort(void **state)
{
    struct world w;
    world_open(&w, 2, 2, GLOO_ALGO_RING, 60.0);
    atomic_store(&w.abort, 1);
    float b[4] = {0};
    assert_int_equal(w.c[0]->ops->allreduce(w.c[0], b, 4, RED_SUM), COMM_ABORTED);
    assert_int_equal(w.c[0]->ops->send(w.c[0], b, 4, 1), COMM_ABORTED);
    assert_int_equal(w.c[1]->ops->barrier(w.c[1]), COMM_ABORTED);
    world_close(&w);
}

/* One rank: no rendezvous, every collective a copy. */
static void test_world_of_one(void **state)
{
    struct world w;
    world_open(&w, 1, 1, GLOO_ALGO_HALVING_DOUBLING, 5.0);
    assert_non_null(w.c[0]);
    for (size_t k = 0; k < NCASES; k++) {
        struct coll_case kc = cases[k];
        if (kc.root < 0)
            kc.root = 0;
        assert_int_equal(run_case(w.c[0], &kc, 1000, (int)k), 0);
    }
    world_close(&w);
}

/* Bad names: one line each. */
static void test_names(void **state)
{
    struct gloo_shim_error e;
    assert_null(gloo_store_open("tcp:host:29500", &e));
    assert_string_equal(e.msg, "unknown rendezvous 'tcp:host:29500': expected file:DIR (gloo's file store) or mem");
    assert_null(gloo_store_open("file:/nonexistent/folder", &e));
    assert_string_equal(e.msg, "rendezvous file:/nonexistent/folder: /nonexistent/folder is not a writable folder");
    assert_int_equal(comm_gloo_algo_parse("halving-doubling"), GLOO_ALGO_HALVING_DOUBLING);
    assert_int_equal(comm_gloo_algo_parse("naive"), -1);
    assert_null(comm_gloo_unavailable());
    char err[200];
    struct comm_gloo_params p = {.rank = 0, .world = 2, .algo = GLOO_ALGO_COUNT};
    assert_null(comm_gloo_create(&p, err, sizeof(err)));
    assert_string_equal(err, "gloo: no allreduce algorithm 4");
    p.algo = GLOO_ALGO_RING;
    assert_null(comm_gloo_create(&p, err, sizeof(err)));
    assert_string_equal(err, "gloo: rank 0 of 2, without a rendezvous: not a gloo world");
}

/* ---- one process of tests/test_gloo_procs.sh ------------------------------ */

/* Every case and size, then an exchange with the mirror rank: #wrong. */
static int proc_checks(struct comm *c)
{
    int wrong = 0, world = c->world, rank = c->rank;
    for (size_t k = 0; k < NCASES; k++)
        for (size_t s = 0; s < NSIZES; s++) {
            struct coll_case kc = cases[k];
            if (kc.root < 0)
                kc.root = world - 1;
            int w = run_case(c, &kc, sizes[s], (int)(k + s));
            wrong += w;
            if (w)
                fprintf(stderr, "rank %d %s n %zu: #wrong %d\n", rank, coll_name(kc.kind), sizes[s], w);
        }
    int peer = world - 1 - rank;
    if (rank != peer)
        wrong += exchange(c, peer, peer, 1);
    return wrong;
}

static int proc_main(int rank, int world, const char *dir, int die)
{
    char spec[300], err[256];
    snprintf(spec, sizeof(spec), "file:%s", dir);
    struct gloo_shim_error e;
    struct gloo_store *st = gloo_store_open(spec, &e);
    if (!st) {
        fprintf(stderr, "rank %d: %s\n", rank, e.msg);
        return 1;
    }
    int bad = 0;
    for (int algo = 0; algo < GLOO_ALGO_COUNT && !bad; algo++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "procs-%d", algo);
        struct comm_gloo_params p = {
            .rank = rank, .world = world, .store = st, .prefix = prefix, .algo = algo, .timeout_s = 60.0};
        struct comm *c = comm_gloo_create(&p, err, sizeof(err));
        if (!c) {
            fprintf(stderr, "rank %d: %s\n", rank, err);
            return 1;
        }
        if (die) {
            if (rank == 1)
                _exit(3); /* as a killed process: its sockets closed by the kernel */
            float b[1000] = {0};
            int64_t t0 = probe_now_ns();
            int rc = c->ops->allreduce(c, b, 1000, RED_SUM);
            printf("rank %d: peer died: rc %d after %.3f s: %s\n", rank, rc, (double)(probe_now_ns() - t0) / 1e9,
                   c->err);
            c->ops->destroy(c);
            gloo_store_close(st);
            return rc == -1 ? 0 : 1;
        }
        int wrong = proc_checks(c);
        printf("rank %d of %d, algo %s: #wrong %d\n", rank, world, comm_gloo_algo_name(algo), wrong);
        bad |= wrong != 0;
        c->ops->destroy(c);
    }
    gloo_store_close(st);
    return bad;
}

#ifdef DDPTOP_HAVE_MPI
#include "comm_gloo_mpi.h"

/* Under mpirun: ranks, world and rendezvous from MPI, no store. */
static int mpi_main(int argc, char **argv)
{
    int provided = 0, rank = 0, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int algo = 0; algo < GLOO_ALGO_COUNT; algo++) {
        char err[256];
        struct comm_gloo_params p = {.algo = algo, .timeout_s = 60.0};
        struct comm *c = comm_gloo_create_mpi(MPI_COMM_WORLD, &p, err, sizeof(err));
        if (!c) {
            fprintf(stderr, "process %d: %s\n", rank, err);
            bad = 1;
            break;
        }
        int wrong = proc_checks(c);
        printf("rank %d of %d (MPI's), algo %s: #wrong %d\n", c->rank, c->world, comm_gloo_algo_name(algo), wrong);
        bad |= wrong != 0;
        c->ops->destroy(c);
    }
    MPI_Finalize();
    return bad;
}
#endif

int main(int argc, char **argv)
{
    /* as ddptop's rank threads (session.c), and every thread made from
     * here on, gloo's included: a write to a peer that has gone fails with
     * EPIPE, which the call reports, rather than ending the process (the
     * `die` pair: whether the survivor's first write meets the reset or
     * the closed socket is a race) */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    if (argc >= 5 && !strcmp(argv[1], "proc"))
        return proc_main(atoi(argv[2]), atoi(argv[3]), argv[4], argc >= 6 && !strcmp(argv[5], "die"));
    if (argc >= 2 && !strcmp(argv[1], "mpi")) {
#ifdef DDPTOP_HAVE_MPI
        return mpi_main(argc, argv);
#else
        fprintf(stderr, "this build has no MPI\n");
        return 77;
#endif
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_world_of_one),
        cmocka_unit_test(test_collectives_2),
        cmocka_unit_test(test_collectives_3),
        cmocka_unit_test(test_allreduce_16),
        cmocka_unit_test(test_stats_and_spans),
        cmocka_unit_test(test_stats_3),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_recv_length),
        cmocka_unit_test(test_rendezvous_timeout),
        cmocka_unit_test(test_rendezvous_stopped),
        cmocka_unit_test(test_silent_peer),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
