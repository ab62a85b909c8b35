/* test_comm.c - every collective of the shm backend, ring and naive, on 1-8
 * rank threads, against exact answers.
 *
 * Inputs are small integers (x = (7r + 3i) % 17 - 8), so every sum is exact
 * in float whatever the order of addition, and the expected result is
 * computed here independently of the implementation. Sizes include ones that
 * do not divide by the rank count and ones that span several pipeline
 * slices. Each thread makes several calls in a row on the same communicator,
 * so reuse of buffers and progress counters across calls is covered too.
 * A peer that never comes fails the wait after the communicator's timeout
 * (--comm-timeout), no sooner, naming that peer.
 *
 * send/recv are a rendezvous (the sender waits for the receiver), so in a
 * ring shift even ranks send first and odd ranks receive first: the chain
 * of waits ends at rank W-1 or 0 for any W >= 2.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "comm.h"
#include "comm_gloo.h"
#include "half.h"

static float val(int r, size_t i, int salt)
{
    return (float)((int)((7 * (size_t)r + 3 * i + (size_t)salt * 5) % 17) - 8);
}

struct job {
    struct comm *c;
    size_t n;
    int kind;
    int root;
    int op;
    int wrong; /* elements that differ from the exact answer */
    int rc;
};

static void run_one(struct job *j, int salt)
{
    struct comm *c = j->c;
    int W = c->world, r = c->rank;
    size_t n = j->n, big = n * (size_t)W;
    float *in = malloc(sizeof(float) * (big + 1));
    float *out = malloc(sizeof(float) * (big + 1));
    for (size_t i = 0; i < big; i++) {
        in[i] = val(r, i, salt);
        out[i] = -1234.0f;
    }
    float inv = 1.0f / (float)W;
    int wrong = 0, rc = 0;
    switch (j->kind) {
    case COLL_ALLREDUCE:
        rc = c->ops->allreduce(c, in, n, j->op);
        for (size_t i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, i, salt);
            wrong += in[i] != (j->op == RED_AVG ? s * inv : s);
        }
        break;
    case COLL_REDUCE_SCATTER:
        rc = c->ops->reduce_scatter(c, in, out, n, j->op);
        for (size_t i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, (size_t)r * n + i, salt);
            wrong += out[i] != (j->op == RED_AVG ? s * inv : s);
        }
        break;
    case COLL_ALLGATHER:
        rc = c->ops->allgather(c, in, out, n);
        for (int p = 0; p < W; p++)
            for (size_t i = 0; i < n; i++)
                wrong += out[(size_t)p * n + i] != val(p, i, salt);
        break;
    case COLL_BROADCAST:
        rc = c->ops->broadcast(c, in, n, j->root);
        for (size_t i = 0; i < n; i++)
            wrong += in[i] != val(j->root, i, salt);
        break;
    case COLL_REDUCE:
        rc = c->ops->reduce(c, in, out, n, j->op, j->root);
        if (r == j->root)
            for (size_t i = 0; i < n; i++) {
                float s = 0;
                for (int p = 0; p < W; p++)
                    s += val(p, i, salt);
                wrong += out[i] != (j->op == RED_AVG ? s * inv : s);
            }
        break;
    case COLL_GATHER:
        rc = c->ops->gather(c, in, out, n, j->root);
        if (r == j->root)
            for (int p = 0; p < W; p++)
                for (size_t i = 0; i < n; i++)
                    wrong += out[(size_t)p * n + i] != val(p, i, salt);
        break;
    case COLL_SCATTER:
        rc = c->ops->scatter(c, in, out, n, j->root);
        for (size_t i = 0; i < n; i++)
            wrong += out[i] != val(j->root, (size_t)r * n + i, salt);
        break;
    case COLL_BARRIER:
        rc = c->ops->barrier(c);
        break;
    }
    j->wrong += wrong;
    if (rc)
        j->rc = rc;
    free(in);
    free(out);
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (int rep = 0; rep < 3; rep++)
        run_one(j, rep);
    return NULL;
}

/* Runs `kind` on W threads; returns the total number of wrong elements. */
static int check(int W, int algo, int kind, size_t n, int op, int root)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(W, &abort_flag);
    assert_non_null(w);
    struct job jobs[8];
    pthread_t th[8];
    for (int r = 0; r < W; r++) {
        jobs[r] = (struct job){comm_shm_create(w, r, algo), n, kind, root, op, 0, 0};
        assert_non_null(jobs[r].c);
        pthread_create(&th[r], NULL, worker, &jobs[r]);
    }
    int wrong = 0;
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        assert_int_equal(jobs[r].rc, 0);
        wrong += jobs[r].wrong;
        if (kind != COLL_BARRIER && W > 1)
            assert_int_equal(jobs[r].c->stats.calls, 3);
        jobs[r].c->ops->destroy(jobs[r].c);
    }
    shm_world_destroy(w);
    if (wrong)
        fprintf(stderr, "%s algo %d W %d n %zu op %d root %d: %d wrong\n", coll_name(kind), algo, W, n, op, root,
                wrong);
    return wrong;
}

static const size_t sizes[] = {1, 5, 1000, 3 * 32 * 1024 + 7};

/* Under TSan (every access instrumented, ten times slower) the sweep keeps
 * 1 to 4 ranks and 8: a race shows there as well, and CI's time is kept. */
#if defined(__SANITIZE_THREAD__)
enum { UNDER_TSAN = 1 };
#else
enum { UNDER_TSAN = 0 };
#endif

static void sweep(int kind, int with_op, int with_root)
{
    for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
        for (int W = 1; W <= 8; W++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !(UNDER_TSAN && W > 4 && W < 8); s++) {
                size_t n = sizes[s];
                if (W > 4 && n > 40000)
                    n = 40000; /* keep 8 threads on 2 cores quick */
                for (int op = RED_SUM; op <= (with_op ? RED_AVG : RED_SUM); op++)
                    assert_int_equal(check(W, algo, kind, n, op, with_root ? W - 1 : 0), 0);
            }
}

static void test_allreduce(void **state)
{
    sweep(COLL_ALLREDUCE, 1, 0);
}
static void test_reduce_scatter(void **state)
{
    sweep(COLL_REDUCE_SCATTER, 1, 0);
}
static void test_allgather(void **state)
{
    sweep(COLL_ALLGATHER, 0, 0);
}
static void test_broadcast(void **state)
{
    sweep(COLL_BROADCAST, 0, 1);
}
static void test_reduce(void **state)
{
    sweep(COLL_REDUCE, 1, 1);
}
static void test_gather(void **state)
{
    sweep(COLL_GATHER, 0, 1);
}
static void test_scatter(void **state)
{
    sweep(COLL_SCATTER, 0, 1);
}
static void test_barrier(void **state)
{
    for (int W = 1; W <= 8; W++)
        assert_int_equal(check(W, ALGO_RING, COLL_BARRIER, 0, RED_SUM, 0), 0);
}

/* Memops of the caller's (the shared GPU's ring brings device ones): the
 * ring goes through them for every add, and their slice size sets how
 * many there are. Host memory here, each add counted. */
static _Atomic int g_adds;

static void count_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
}

static void count_add(void *ctx, float *dst, const float *src, size_t n)
{
    atomic_fetch_add(&g_adds, 1);
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

static void count_scale(void *ctx, float *x, size_t n, float f)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= f;
}

static _Atomic int g_adds16;

static void count_add16(void *ctx, int fmt, uint16_t *dst, const uint16_t *src, size_t n)
{
    atomic_fetch_add(&g_adds16, 1);
    w16_add(fmt, dst, src, n);
}

static void count_scale16(void *ctx, int fmt, uint16_t *x, size_t n, float f)
{
    w16_scale(fmt, x, n, f);
}

static void *count_alloc(void *ctx, size_t bytes)
{
    return malloc(bytes);
}

static void count_release(void *ctx, void *p)
{
    free(p);
}

/* Ring allreduce of n floats on W threads through counting memops with
 * slices of `slice` floats: the number of adds, every answer checked. */
static int memops_adds(int W, size_t n, size_t slice)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(W, &abort_flag);
    assert_non_null(w);
    struct shm_memops ops = {count_copy, count_add, count_scale, count_alloc, count_release, NULL, slice, NULL, NULL};
    struct job jobs[4];
    pthread_t th[4];
    atomic_store(&g_adds, 0);
    for (int r = 0; r < W; r++) {
        jobs[r] = (struct job){comm_shm_create_ops(w, r, ALGO_RING, &ops), n, COLL_ALLREDUCE, 0, RED_AVG, 0, 0};
        assert_non_null(jobs[r].c);
        pthread_create(&th[r], NULL, worker, &jobs[r]);
    }
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        assert_int_equal(jobs[r].rc, 0);
        assert_int_equal(jobs[r].wrong, 0);
        jobs[r].c->ops->destroy(jobs[r].c);
    }
    shm_world_destroy(w);
    return atomic_load(&g_adds);
}

static void test_memops_slices(void **state)
{
    size_t n = 3 * 32 * 1024 + 7; /* over 2 or 3 ranks: 2 default slices a chunk */
    for (int W = 2; W <= 3; W++) {
        /* worker(): 3 calls; each rank adds W-1 chunks, in slices */
        int per_call = W * (W - 1);
        assert_int_equal(memops_adds(W, n, 0), 3 * per_call * 2);
        assert_int_equal(memops_adds(W, n, 1u << 20), 3 * per_call);
        assert_int_equal(memops_adds(W, n, 1000), 3 * per_call * (int)((n / W + 1 + 999) / 1000));
    }
}

static void test_bytes_accounting(void **state)
{
    /* ring allreduce: every rank sends and receives 2(W-1)/W of the buffer */
    for (int W = 2; W <= 4; W++) {
        size_t n = 1200; /* divisible by 2, 3, 4 */
        _Atomic int abort_flag = 0;
        struct shm_world *w = shm_world_create(W, &abort_flag);
        struct job jobs[4];
        pthread_t th[4];
        for (int r = 0; r < W; r++) {
            jobs[r] = (struct job){comm_shm_create(w, r, ALGO_RING), n, COLL_ALLREDUCE, 0, RED_SUM, 0, 0};
            pthread_create(&th[r], NULL, worker, &jobs[r]);
        }
        for (int r = 0; r < W; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < W; r++) {
            uint64_t expect = 3 * 2 * (uint64_t)(W - 1) * (n / (size_t)W) * sizeof(float);
            assert_int_equal(jobs[r].c->stats.bytes_tx, expect);
            assert_int_equal(jobs[r].c->stats.bytes_rx, expect);
            jobs[r].c->ops->destroy(jobs[r].c);
        }
        shm_world_destroy(w);
    }
    assert_true(coll_busbw_factor(COLL_ALLREDUCE, 4) == 1.5);
    assert_true(coll_busbw_factor(COLL_ALLGATHER, 4) == 0.75);
    assert_true(coll_busbw_factor(COLL_BROADCAST, 4) == 1.0);
}

struct f16job {
    struct comm *c;
    uint16_t *b;
    size_t n;
    int fmt; /* enum wire16 */
};

static void *f16_worker(void *arg)
{
    struct f16job *j = arg;
    j->c->ops->allreduce_16(j->c, j->b, j->n, j->fmt, RED_SUM);
    return NULL;
}

static uint16_t to16(int fmt, float f)
{
    return fmt == W16_BF16 ? bf16_from_float(f) : half_from_float(f);
}

static float from16(int fmt, uint16_t h)
{
    return fmt == W16_BF16 ? bf16_to_float(h) : half_to_float(h);
}

/* A peer that never arrives: raising abort releases the waiting rank. */
static void *lonely(void *arg)
{
    struct job *j = arg;
    float buf[64] = {0};
    j->rc = j->c->ops->allreduce(j->c, buf, 64, RED_SUM);
    return NULL;
}

/* Rank 0 of 2 alone runs `alone` (a call of `kind` that waits for rank 1);
 * raising abort after `ms` releases it with COMM_ABORTED. */
static void abort_releases(void *(*alone)(void *), int kind, long ms)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(2, &abort_flag);
    struct job j = {comm_shm_create(w, 0, ALGO_RING), 64, kind, 0, RED_SUM, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, alone, &j);
    struct timespec ts = {0, ms * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&abort_flag, 1);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, COMM_ABORTED);
    j.c->ops->destroy(j.c);
    shm_world_destroy(w);
}

static void test_abort_releases_waiters(void **state)
{
    abort_releases(lonely, COLL_ALLREDUCE, 50);
}

/* Rank 0 of 3 alone, with a 50 ms timeout: its ring allreduce waits on its
 * left neighbour, rank 2, and gives up after 50 ms (not before), naming it. */
static void test_timeout_names_peer(void **state)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(3, &abort_flag);
    struct comm *c = comm_shm_create(w, 0, ALGO_RING);
    assert_non_null(c);
    c->timeout_ns = 50 * 1000 * 1000;
    float buf[64] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = c->ops->allreduce(c, buf, 64, RED_SUM);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("  timed out after %.3f s: %s\n", s, c->err);
    assert_int_equal(rc, -1);
    assert_true(s >= 0.05);
    assert_true(s < 30.0); /* bounded, with room for a loaded machine */
    assert_non_null(strstr(c->err, "timed out after"));
    assert_non_null(strstr(c->err, "waiting for rank 2"));
    c->ops->destroy(c);
    shm_world_destroy(w);
}

/* ---- send / recv ---- */

/* The messages of one exchange, in the order they are sent: sizes that
 * differ, one of none (with no buffer at all), and a salt each, so a
 * message out of order is wrong in size or in content. */
static const size_t msg_n[] = {1000, 1, 0, 4099, 5};
#define NMSG (sizeof(msg_n) / sizeof(msg_n[0]))

struct p2p_job {
    struct comm *c;
    int wrong;       /* elements that differ from the exact answer */
    int wrong_stats; /* calls whose stats did not move by exactly their bytes */
    int rc;
    int collectives; /* allreduces made, so c->seq must equal it */
};

static void p2p_rc(struct p2p_job *j, int rc)
{
    if (rc && !j->rc) {
        j->rc = rc;
        fprintf(stderr, "rank %d: %s\n", j->c->rank, j->c->err);
    }
}

/* One call's effect on the stats: one call, tx bytes sent, rx received. */
static void p2p_stats(struct p2p_job *j, const struct comm_stats *before, uint64_t tx, uint64_t rx)
{
    const struct comm_stats *now = &j->c->stats;
    j->wrong_stats += now->calls != before->calls + 1 || now->bytes_tx != before->bytes_tx + tx ||
                      now->bytes_rx != before->bytes_rx + rx;
}

/* Sends the messages (salted from salt) to `to`. */
static void send_all(struct p2p_job *j, int to, int salt)
{
    for (size_t m = 0; m < NMSG; m++) {
        float *b = msg_n[m] ? malloc(msg_n[m] * sizeof(float)) : NULL;
        for (size_t i = 0; i < msg_n[m]; i++)
            b[i] = val(j->c->rank, i, salt + (int)m);
        struct comm_stats before = j->c->stats;
        p2p_rc(j, j->c->ops->send(j->c, b, msg_n[m], to));
        p2p_stats(j, &before, msg_n[m] * sizeof(float), 0);
        free(b);
    }
}

/* Receives them from `from` and checks every element. */
static void recv_all(struct p2p_job *j, int from, int salt)
{
    for (size_t m = 0; m < NMSG; m++) {
        float *b = msg_n[m] ? malloc(msg_n[m] * sizeof(float)) : NULL;
        for (size_t i = 0; i < msg_n[m]; i++)
            b[i] = -1234.0f;
        struct comm_stats before = j->c->stats;
        p2p_rc(j, j->c->ops->recv(j->c, b, msg_n[m], from));
        p2p_stats(j, &before, 0, msg_n[m] * sizeof(float));
        for (size_t i = 0; i < msg_n[m]; i++)
            j->wrong += b[i] != val(from, i, salt + (int)m);
        free(b);
    }
}

/* An allreduce between exchanges, checked exactly. */
static void allreduce_checked(struct p2p_job *j, int salt)
{
    struct comm *c = j->c;
    size_t n = 1000;
    float *b = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        b[i] = val(c->rank, i, salt);
    p2p_rc(j, c->ops->allreduce(c, b, n, RED_SUM));
    for (size_t i = 0; i < n; i++) {
        float s = 0;
        for (int p = 0; p < c->world; p++)
            s += val(p, i, salt);
        j->wrong += b[i] != s;
    }
    j->collectives++;
    free(b);
}

/* Per round: a ring shift to the right, an allreduce, then an exchange
 * between ranks 0 and W-1 alone (the others' sequence numbers must not
 * move), and another allreduce. */
static void *p2p_worker(void *arg)
{
    struct p2p_job *j = arg;
    int W = j->c->world, r = j->c->rank;
    int right = (r + 1) % W, left = (r - 1 + W) % W;
    for (int round = 0; round < 2; round++) {
        int salt = 10 * round;
        if (r % 2 == 0) {
            send_all(j, right, salt);
            recv_all(j, left, salt);
        } else {
            recv_all(j, left, salt);
            send_all(j, right, salt);
        }
        allreduce_checked(j, salt + 1);
        if (r == 0) {
            send_all(j, W - 1, salt + 2);
            recv_all(j, W - 1, salt + 3);
        } else if (r == W - 1) {
            recv_all(j, 0, salt + 2);
            send_all(j, 0, salt + 3);
        }
        allreduce_checked(j, salt + 4);
    }
    return NULL;
}

static void test_send_recv(void **state)
{
    for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
        for (int W = 2; W <= 4; W++) {
            _Atomic int abort_flag = 0;
            struct shm_world *w = shm_world_create(W, &abort_flag);
            assert_non_null(w);
            struct p2p_job jobs[4];
            pthread_t th[4];
            for (int r = 0; r < W; r++) {
                jobs[r] = (struct p2p_job){.c = comm_shm_create(w, r, algo)};
                assert_non_null(jobs[r].c);
            }
            for (int r = 0; r < W; r++)
                pthread_create(&th[r], NULL, p2p_worker, &jobs[r]);
            for (int r = 0; r < W; r++)
                pthread_join(th[r], NULL);
            for (int r = 0; r < W; r++) {
                struct comm *c = jobs[r].c;
                if (jobs[r].wrong || jobs[r].wrong_stats)
                    fprintf(stderr, "algo %d W %d rank %d: %d wrong, %d calls' stats wrong\n", algo, W, r,
                            jobs[r].wrong, jobs[r].wrong_stats);
                assert_int_equal(jobs[r].rc, 0);
                assert_int_equal(jobs[r].wrong, 0);
                assert_int_equal(jobs[r].wrong_stats, 0);
                assert_int_equal(c->seq, jobs[r].collectives);
                c->ops->destroy(c);
            }
            shm_world_destroy(w);
        }
}

/* Rank 0 sends 5 floats, rank 1 expects 6: the recv fails naming both
 * sizes and copies nothing, and the pair's next send fails too (the send
 * that was wrong had returned already: sends are eager). */
struct mismatch_job {
    struct comm *c;
    size_t n;
    int rc;
};

static void *mismatch_worker(void *arg)
{
    struct mismatch_job *j = arg;
    float b[6] = {1, 2, 3, 4, 5, 6};
    if (j->c->rank == 0)
        j->rc = j->c->ops->send(j->c, b, j->n, 1) + 2 * j->c->ops->send(j->c, b, j->n, 1);
    else
        j->rc = j->c->ops->recv(j->c, b, j->n, 0);
    return NULL;
}

static void test_send_recv_checks(void **state)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(2, &abort_flag);
    struct mismatch_job jobs[2] = {{comm_shm_create(w, 0, ALGO_RING), 5, 0}, {comm_shm_create(w, 1, ALGO_RING), 6, 0}};
    pthread_t th[2];
    for (int r = 0; r < 2; r++)
        pthread_create(&th[r], NULL, mismatch_worker, &jobs[r]);
    for (int r = 0; r < 2; r++)
        pthread_join(th[r], NULL);
    printf("  %s\n  %s\n", jobs[0].c->err, jobs[1].c->err);
    assert_int_equal(jobs[0].rc, -2); /* the first send went, the second failed */
    assert_int_equal(jobs[1].rc, -1);
    assert_string_equal(jobs[0].c->err, "send to rank 1: it expected 6 floats of the 5 sent before");
    assert_string_equal(jobs[1].c->err, "recv from rank 0: expected 6 floats, but it sent 5");
    assert_int_equal(jobs[1].c->stats.bytes_rx, 0);

    /* a peer must be another rank; nothing is recorded for one that is not */
    struct comm *c = jobs[0].c;
    float b[1];
    uint64_t calls = c->stats.calls;
    assert_int_equal(c->ops->send(c, b, 1, 0), -1);
    assert_string_equal(c->err, "send to rank 0: not a peer of rank 0 of 2");
    assert_int_equal(c->ops->recv(c, b, 1, 2), -1);
    assert_string_equal(c->err, "recv from rank 2: not a peer of rank 0 of 2");
    assert_int_equal(c->ops->recv(c, b, 1, -1), -1);
    assert_int_equal(c->stats.calls, calls);

    /* a broken communicator fails them as it fails collectives */
    comm_break(c, "link down");
    assert_int_equal(c->ops->send(c, b, 1, 1), -1);
    assert_string_equal(c->err, "link down");
    assert_int_equal(c->ops->recv(c, b, 1, 1), -1);
    assert_string_equal(c->err, "link down");
    for (int r = 0; r < 2; r++)
        jobs[r].c->ops->destroy(jobs[r].c);
    shm_world_destroy(w);
}

/* A send's and a recv's spans: one outer comm span each, of kind COMM_P2P
 * with seq 0, its bytes on the right side; the collective after them still
 * has seq 0, the first collective's number. */
static void *span_peer(void *arg)
{
    struct comm *c = arg;
    float b[100];
    c->ops->recv(c, b, 100, 0);
    for (int i = 0; i < 100; i++)
        b[i] = (float)i;
    c->ops->send(c, b, 100, 0);
    c->ops->barrier(c);
    return NULL;
}

static void test_send_recv_spans(void **state)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(2, &abort_flag);
    struct comm *c0 = comm_shm_create(w, 0, ALGO_RING), *c1 = comm_shm_create(w, 1, ALGO_RING);
    struct spsc_ring ring;
    assert_int_equal(spsc_init(&ring, sizeof(struct span), 64), 0);
    comm_bind(c0, &ring, LANE_COMM, NULL);
    pthread_t t;
    pthread_create(&t, NULL, span_peer, c1);
    float b[100] = {0};
    assert_int_equal(c0->ops->send(c0, b, 100, 1), 0);
    assert_int_equal(c0->ops->recv(c0, b, 100, 1), 0);
    assert_int_equal(c0->ops->barrier(c0), 0);
    pthread_join(t, NULL);
    struct span sp[64];
    size_t got = spsc_pop(&ring, sp, 64), outer = 0;
    uint64_t tx = 0, rx = 0;
    for (size_t i = 0; i < got; i++) {
        if (sp[i].cat != CAT_COMM || !sp[i].outer)
            continue;
        outer++;
        assert_int_equal(sp[i].seq, 0);
        if (sp[i].coll == COMM_P2P) {
            assert_int_equal(sp[i].size, 100 * sizeof(float));
            tx += sp[i].bytes;
            rx += sp[i].bytes_rx;
        } else {
            assert_int_equal(sp[i].coll, COLL_BARRIER);
        }
    }
    assert_int_equal(outer, 3);
    assert_int_equal(tx, 100 * sizeof(float));
    assert_int_equal(rx, 100 * sizeof(float));
    assert_int_equal(c0->seq, 1);
    assert_int_equal(c1->seq, 1);
    for (int i = 0; i < 100; i++)
        assert_true(b[i] == (float)i);
    spsc_free(&ring);
    c0->ops->destroy(c0);
    c1->ops->destroy(c1);
    shm_world_destroy(w);
}

/* A recv whose sender never comes: raising abort releases it. */
static void *lonely_recv(void *arg)
{
    struct job *j = arg;
    float buf[64];
    j->rc = j->c->ops->recv(j->c, buf, 64, 1);
    return NULL;
}

static void test_recv_abort(void **state)
{
    abort_releases(lonely_recv, COMM_P2P, 20);
}

/* Rank 1 of 3 alone, with a 30 ms timeout: a recv from rank 2 and a second
 * send to rank 0 (the first went: sends are eager) each give up after 30 ms
 * (not before), naming the peer. */
static void test_send_recv_timeout(void **state)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(3, &abort_flag);
    struct comm *c = comm_shm_create(w, 1, ALGO_RING);
    c->timeout_ns = 30 * 1000 * 1000;
    float buf[64] = {0};
    /* a send is eager: the first goes without a receiver, the second waits
     * for the first to be taken */
    assert_int_equal(c->ops->send(c, buf, 64, 0), 0);
    for (int send = 0; send <= 1; send++) {
        c->err[0] = 0;
        int64_t t0 = probe_now_ns();
        int rc = send ? c->ops->send(c, buf, 64, 0) : c->ops->recv(c, buf, 64, 2);
        double s = (double)(probe_now_ns() - t0) / 1e9;
        printf("  %s gave up after %.3f s: %s\n", send ? "send" : "recv", s, c->err);
        assert_int_equal(rc, -1);
        assert_true(s >= 0.03);
        assert_true(s < 30.0); /* bounded, with room for a loaded machine */
        assert_non_null(strstr(c->err, "timed out after"));
        assert_non_null(strstr(c->err, send ? "waiting for rank 0" : "waiting for rank 2"));
    }
    c->ops->destroy(c);
    shm_world_destroy(w);
}

static void test_half_conversions(void **state)
{
    assert_int_equal(half_from_float(1.0f), 0x3c00);
    assert_int_equal(half_from_float(-2.0f), 0xc000);
    assert_int_equal(half_from_float(65504.0f), 0x7bff);
    assert_int_equal(half_from_float(70000.0f), 0x7c00);      /* overflow: inf */
    assert_int_equal(half_from_float(5.9604645e-8f), 0x0001); /* smallest subnormal */
    assert_int_equal(half_from_float(1e-9f), 0x0000);
    assert_int_equal(half_from_float(1.0f + 1.0f / 2048), 0x3c00); /* tie: to even */
    assert_int_equal(half_from_float(1.0f + 3.0f / 2048), 0x3c02); /* tie: to even, up */
    assert_true(half_to_float(0x3555) > 0.3332f && half_to_float(0x3555) < 0.3334f);
    /* every finite half survives the round trip exactly */
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7c00u) != 0x7c00u)
            assert_int_equal(half_from_float(half_to_float((uint16_t)h)), h);
}

/* bfloat16: a float's nearest bf16 (ties to even), found here from the two
 * bf16 values around it by distance in double, over random floats of every
 * exponent and the halfway points; overflow to inf, NaN stays NaN, every
 * bf16 survives the round trip. */
static void test_bf16_conversions(void **state)
{
    assert_int_equal(bf16_from_float(1.0f), 0x3f80);
    assert_int_equal(bf16_from_float(-2.0f), 0xc000);
    assert_int_equal(bf16_from_float(1.0f + 1.0f / 256), 0x3f80); /* tie: to even */
    assert_int_equal(bf16_from_float(1.0f + 3.0f / 256), 0x3f82); /* tie: to even, up */
    assert_int_equal(bf16_from_float(3.4e38f), 0x7f80);           /* past the largest bf16: inf */
    assert_true(isnan(bf16_to_float(bf16_from_float(NAN))));
    assert_int_equal(bf16_from_float(INFINITY), 0x7f80);
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7f80u) != 0x7f80u)
            assert_int_equal(bf16_from_float(bf16_to_float((uint16_t)h)), h);
    uint64_t z = 0x9E3779B97F4A7C15ULL;
    for (int k = 0; k < 200000; k++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        uint32_t bits = (uint32_t)z;
        if (k % 4 == 0)
            bits = (bits & 0xffff0000u) | 0x8000u; /* a halfway point */
        if ((bits & 0x7f800000u) == 0x7f800000u || (bits & 0x7fffffffu) >= 0x7f7f8000u)
            continue; /* inf, NaN, and what rounds past the largest bf16 */
        float f;
        memcpy(&f, &bits, 4);
        uint16_t lo = (uint16_t)(bits >> 16), hi = (uint16_t)(lo + 1); /* same sign: |hi| > |lo| */
        double dl = fabs((double)f - bf16_to_float(lo)), dh = fabs((double)f - bf16_to_float(hi));
        uint16_t want = dl < dh ? lo : dh < dl ? hi : (lo & 1u) ? hi : lo;
        if (bf16_from_float(f) != want)
            fail_msg("bf16_from_float(%a): 0x%04x, want 0x%04x", (double)f, bf16_from_float(f), want);
    }
}

/* The buffer conversions (F16C where there is some) give the one-value
 * functions' bits: every half, floats around every rounding boundary,
 * overflow and subnormals, and sums and scalings of random pairs. */
static void test_half_buffers(void **state)
{
    enum { N = 0x10000 + 1031 }; /* not a multiple of 8: the tails too */
    uint16_t *h = malloc(N * sizeof(uint16_t)), *h2 = malloc(N * sizeof(uint16_t)), *h3 = malloc(N * sizeof(*h3));
    float *f = malloc(N * sizeof(float)), *g = malloc(N * sizeof(float));
    assert_true(h && h2 && h3 && f && g);
    for (uint32_t i = 0; i < N; i++)
        h[i] = (uint16_t)(i < 0x10000 ? i : i * 2654435761u);
    for (uint32_t i = 0; i < N; i++)
        if ((h[i] & 0x7c00u) == 0x7c00u && (h[i] & 0x3ffu))
            h[i] = 0x3c00; /* NaNs convert to some NaN, not always the same bits */
    half_to_floats(f, h, N);
    for (uint32_t i = 0; i < N; i++)
        if (memcmp(&f[i], &(float){half_to_float(h[i])}, sizeof(float)) != 0)
            fail_msg("half_to_floats(0x%04x) differs", h[i]);
    uint64_t z = 88172645463325252ULL;
    for (uint32_t i = 0; i < N; i++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        uint32_t bits = (uint32_t)z;
        /* around half's range: exponents from subnormal to overflow */
        bits = (bits & 0x807fffffu) | ((uint32_t)(100 + (z >> 40) % 60) << 23);
        memcpy(&g[i], &bits, sizeof(float));
    }
    half_from_floats(h2, g, N);
    for (uint32_t i = 0; i < N; i++)
        if (h2[i] != half_from_float(g[i]))
            fail_msg("half_from_floats(%a): 0x%04x, want 0x%04x", (double)g[i], h2[i], half_from_float(g[i]));
    memcpy(h3, h2, N * sizeof(uint16_t));
    half_add(h3, h, N);
    for (uint32_t i = 0; i < N; i++)
        if (h3[i] != half_from_float(half_to_float(h2[i]) + half_to_float(h[i])) && (h3[i] & 0x7fffu) <= 0x7c00u)
            fail_msg("half_add at %u differs", i);
    memcpy(h3, h2, N * sizeof(uint16_t));
    half_scale(h3, N, 0.25f);
    for (uint32_t i = 0; i < N; i++)
        if (h3[i] != half_from_float(half_to_float(h2[i]) * 0.25f))
            fail_msg("half_scale at %u differs", i);
    free(h), free(h2), free(h3), free(f), free(g);
}

/* A 16-bit allreduce of n values in format fmt over W threads of a shm
 * world (ops: the caller's memops, or NULL), each rank's values val()'s:
 * how many results differ from the exact sum. */
static int allreduce16_wrong(int W, int algo, int fmt, size_t n, const struct shm_memops *ops)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(W, &abort_flag);
    struct comm *c[5];
    pthread_t th[5];
    uint16_t *buf[5];
    struct f16job jobs[5];
    for (int r = 0; r < W; r++) {
        c[r] = comm_shm_create_ops(w, r, algo, ops);
        buf[r] = malloc(n * sizeof(uint16_t));
        for (size_t i = 0; i < n; i++)
            buf[r][i] = to16(fmt, val(r, i, 0));
        jobs[r] = (struct f16job){c[r], buf[r], n, fmt};
    }
    for (int r = 0; r < W; r++)
        pthread_create(&th[r], NULL, f16_worker, &jobs[r]);
    for (int r = 0; r < W; r++)
        pthread_join(th[r], NULL);
    int wrong = 0;
    for (int r = 0; r < W; r++) {
        for (size_t i = 0; i < n; i++) {
            float s = 0;
            for (int p = 0; p < W; p++)
                s += val(p, i, 0);
            wrong += from16(fmt, buf[r][i]) != s;
        }
        c[r]->ops->destroy(c[r]);
        free(buf[r]);
    }
    shm_world_destroy(w);
    return wrong;
}

/* 16-bit allreduces (fp16, bf16): small integers are exact in both (bf16
 * up to 256, fp16 up to 2048), and so is every partial sum of val()'s */
static void test_allreduce_f16(void **state)
{
    for (int fmt = W16_FP16; fmt <= W16_BF16; fmt++)
        for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
            for (int W = 1; W <= 5; W++)
                assert_int_equal(allreduce16_wrong(W, algo, fmt, 70001, NULL), 0);
}

/* 16-bit allreduces through the caller's memops (the shared GPU's ring
 * brings device ones): every 16-bit add goes through add16, none through
 * the float add, and the answers are exact. Ring and naive, 2 and 3 ranks. */
static void test_memops_16(void **state)
{
    struct shm_memops ops = {count_copy, count_add, count_scale, count_alloc,  count_release,
                             NULL,       1000,      count_add16, count_scale16};
    for (int fmt = W16_FP16; fmt <= W16_BF16; fmt++)
        for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
            for (int W = 2; W <= 3; W++) {
                size_t n = 5003;
                atomic_store(&g_adds, 0);
                atomic_store(&g_adds16, 0);
                assert_int_equal(allreduce16_wrong(W, algo, fmt, n, &ops), 0);
                assert_int_equal(atomic_load(&g_adds), 0);
                /* ring: each rank adds W-1 chunks in 1000-value slices;
                 * naive: rank 0 adds each peer's whole buffer */
                int want = algo == ALGO_RING ? W * (W - 1) * (int)((n / W + 1 + 999) / 1000) : W - 1;
                assert_int_equal(atomic_load(&g_adds16), want);
            }
}

/* ---- the hierarchical communicator (comm_hier.c) ----------------------
 * P processes of T rank threads, played here by threads alone: each
 * "process" is a shm world of T, and the leaders meet over a shm world of
 * P in place of MPI. The same jobs and exact answers as above. */
struct hier_set {
    _Atomic int abort_flag;
    struct shm_world *local[4], *leaders;
    struct comm *c[16];
    int P, T;
};

static void hier_make(struct hier_set *h, int P, int T, int algo)
{
    atomic_init(&h->abort_flag, 0);
    h->P = P;
    h->T = T;
    h->leaders = shm_world_create(P, &h->abort_flag);
    for (int p = 0; p < P; p++) {
        h->local[p] = shm_world_create(T, &h->abort_flag);
        for (int t = 0; t < T; t++) {
            struct comm *l = comm_shm_create(h->local[p], t, algo);
            struct comm *x = t == 0 ? comm_shm_create(h->leaders, p, algo) : NULL;
            h->c[p * T + t] = comm_hier_create(l, x, p, P);
            assert_non_null(h->c[p * T + t]);
            assert_int_equal(h->c[p * T + t]->rank, p * T + t);
            assert_int_equal(h->c[p * T + t]->world, P * T);
        }
    }
}

static void hier_free(struct hier_set *h)
{
    for (int r = 0; r < h->P * h->T; r++)
        h->c[r]->ops->destroy(h->c[r]);
    for (int p = 0; p < h->P; p++)
        shm_world_destroy(h->local[p]);
    shm_world_destroy(h->leaders);
}

static int check_hier(int P, int T, int algo, int kind, size_t n, int op, int root)
{
    struct hier_set h;
    hier_make(&h, P, T, algo);
    int W = P * T, wrong = 0;
    struct job jobs[16];
    pthread_t th[16];
    for (int r = 0; r < W; r++) {
        jobs[r] = (struct job){h.c[r], n, kind, root, op, 0, 0};
        pthread_create(&th[r], NULL, worker, &jobs[r]);
    }
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        assert_int_equal(jobs[r].rc, 0);
        wrong += jobs[r].wrong;
        assert_int_equal(h.c[r]->stats.calls, 3);
        /* the parts' bytes are the call's: every rank moves some */
        if (kind != COLL_BARRIER)
            assert_true(h.c[r]->stats.bytes_tx + h.c[r]->stats.bytes_rx > 0);
    }
    hier_free(&h);
    if (wrong)
        fprintf(stderr, "hier %s algo %d P %d T %d n %zu op %d root %d: %d wrong\n", coll_name(kind), algo, P, T, n, op,
                root, wrong);
    return wrong;
}

static void test_hier_collectives(void **state)
{
    static const int shapes[][2] = {{2, 2}, {3, 2}, {2, 3}, {1, 3}, {3, 1}};
    static const int kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                COLL_REDUCE,    COLL_GATHER,         COLL_SCATTER,   COLL_BARRIER};
    static const size_t hsizes[] = {1, 1001};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
            for (size_t z = 0; z < sizeof(hsizes) / sizeof(hsizes[0]); z++) {
                int P = shapes[s][0], T = shapes[s][1], W = P * T, kind = kinds[k];
                int algo = (int)(s + k) % 2 ? ALGO_NAIVE : ALGO_RING;
                int reduces = kind == COLL_ALLREDUCE || kind == COLL_REDUCE_SCATTER || kind == COLL_REDUCE;
                int rooted =
                    kind == COLL_BROADCAST || kind == COLL_REDUCE || kind == COLL_GATHER || kind == COLL_SCATTER;
                /* roots: rank 0 (a leader), and the last rank, in the last
                 * process and not its leader when T > 1 */
                for (int root = 0; root <= (rooted ? W - 1 : 0); root += W - 1 > 0 ? W - 1 : 1)
                    for (int op = RED_SUM; op <= (reduces ? RED_AVG : RED_SUM); op++)
                        assert_int_equal(check_hier(P, T, algo, kind, hsizes[z], op, root), 0);
            }
}

static void test_hier_f16(void **state)
{
    for (int fmt = W16_FP16; fmt <= W16_BF16; fmt++) {
        struct hier_set h;
        hier_make(&h, 2, 3, ALGO_RING);
        size_t n = 3001; /* odd: the packed broadcast's last half is padding */
        uint16_t *buf[6];
        struct f16job jobs[6];
        pthread_t th[6];
        for (int r = 0; r < 6; r++) {
            buf[r] = malloc(n * sizeof(uint16_t));
            for (size_t i = 0; i < n; i++)
                buf[r][i] = to16(fmt, val(r, i, 0));
            jobs[r] = (struct f16job){h.c[r], buf[r], n, fmt};
            pthread_create(&th[r], NULL, f16_worker, &jobs[r]);
        }
        int wrong = 0;
        for (int r = 0; r < 6; r++) {
            pthread_join(th[r], NULL);
            for (size_t i = 0; i < n; i++) {
                float s = 0;
                for (int p = 0; p < 6; p++)
                    s += val(p, i, 0);
                wrong += from16(fmt, buf[r][i]) != s;
            }
            free(buf[r]);
        }
        hier_free(&h);
        assert_int_equal(wrong, 0);
    }
}

/* One outer comm span a call, with its sequence number; the parts' spans
 * inside it are waits only. Send and recv reach the same process only. */
struct hier_p2p {
    struct comm *c;
    int rc_far, rc_near;
    float x;
};

static void *hier_p2p_worker(void *arg)
{
    struct hier_p2p *j = arg;
    float v = 7.0f;
    if (j->c->rank == 0) {
        j->rc_far = j->c->ops->send(j->c, &v, 1, 2); /* rank 2: process 1 */
        j->rc_near = j->c->ops->send(j->c, &v, 1, 1);
    } else if (j->c->rank == 1) {
        j->rc_near = j->c->ops->recv(j->c, &j->x, 1, 0);
    }
    j->c->ops->allreduce(j->c, &v, 1, RED_SUM);
    j->x += v;
    return NULL;
}

static void test_hier_spans_and_p2p(void **state)
{
    struct hier_set h;
    hier_make(&h, 2, 2, ALGO_RING);
    struct spsc_ring ring;
    assert_int_equal(spsc_init(&ring, sizeof(struct span), 256), 0);
    comm_bind(h.c[0], &ring, 1, NULL);
    struct hier_p2p jobs[4];
    pthread_t th[4];
    for (int r = 0; r < 4; r++) {
        jobs[r] = (struct hier_p2p){h.c[r], 0, 0, 0};
        pthread_create(&th[r], NULL, hier_p2p_worker, &jobs[r]);
    }
    for (int r = 0; r < 4; r++)
        pthread_join(th[r], NULL);
    assert_int_equal(jobs[0].rc_far, -1);
    assert_non_null(strstr(h.c[0]->err, "another process"));
    assert_int_equal(jobs[0].rc_near, 0);
    assert_int_equal(jobs[1].rc_near, 0);
    assert_true(jobs[1].x == 7.0f + 28.0f);
    assert_true(jobs[3].x == 28.0f);
    struct span sp[256];
    size_t n = spsc_pop(&ring, sp, 256);
    int outer = 0, p2p = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(sp[i].cat == CAT_COMM || sp[i].cat == CAT_WAIT);
        if (sp[i].cat == CAT_COMM)
            assert_int_equal(sp[i].outer, 1); /* the parts add none */
        if (sp[i].cat == CAT_COMM && sp[i].coll == COLL_ALLREDUCE) {
            outer++;
            assert_int_equal(sp[i].seq, 0); /* the first collective, whatever its parts numbered */
            assert_true(sp[i].bytes > 0);
        }
        p2p += sp[i].cat == CAT_COMM && sp[i].coll == COMM_P2P;
    }
    assert_int_equal(outer, 1);
    assert_int_equal(p2p, 1); /* the send that went; the refused one made no call */
    spsc_free(&ring);
    hier_free(&h);
}

/* Whether this build has gloo: NULL, or one line that names the package
 * to install (--comm gloo's refusal in a build without it). */
static void test_gloo_unavailable(void **state)
{
    const char *why = comm_gloo_unavailable();
#ifdef DDPTOP_HAVE_GLOO
    assert_null(why);
#else
    assert_non_null(why);
    assert_non_null(strstr(why, "libgloo-dev"));
    assert_null(strchr(why, '\n'));
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_reduce_scatter),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_bytes_accounting),
        cmocka_unit_test(test_memops_slices),
        cmocka_unit_test(test_memops_16),
        cmocka_unit_test(test_abort_releases_waiters),
        cmocka_unit_test(test_timeout_names_peer),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_send_recv_checks),
        cmocka_unit_test(test_send_recv_spans),
        cmocka_unit_test(test_recv_abort),
        cmocka_unit_test(test_send_recv_timeout),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_half_buffers),
        cmocka_unit_test(test_bf16_conversions),
        cmocka_unit_test(test_allreduce_f16),
        cmocka_unit_test(test_hier_collectives),
        cmocka_unit_test(test_hier_f16),
        cmocka_unit_test(test_hier_spans_and_p2p),
        cmocka_unit_test(test_gloo_unavailable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
