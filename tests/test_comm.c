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
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "comm.h"
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

static void sweep(int kind, int with_op, int with_root)
{
    for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
        for (int W = 1; W <= 8; W++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
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
};

static void *f16_worker(void *arg)
{
    struct f16job *j = arg;
    j->c->ops->allreduce_f16(j->c, j->b, j->n, RED_SUM);
    return NULL;
}

/* A peer that never arrives: raising abort releases the waiting rank. */
static void *lonely(void *arg)
{
    struct job *j = arg;
    float buf[64] = {0};
    j->rc = j->c->ops->allreduce(j->c, buf, 64, RED_SUM);
    return NULL;
}

static void test_abort_releases_waiters(void **state)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(2, &abort_flag);
    struct job j = {comm_shm_create(w, 0, ALGO_RING), 64, COLL_ALLREDUCE, 0, RED_SUM, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, lonely, &j);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&abort_flag, 1);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, COMM_ABORTED);
    j.c->ops->destroy(j.c);
    shm_world_destroy(w);
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

/* binary16 allreduce: small integers are exact in half precision too */
static void test_allreduce_f16(void **state)
{
    for (int algo = ALGO_RING; algo <= ALGO_NAIVE; algo++)
        for (int W = 1; W <= 5; W++) {
            _Atomic int abort_flag = 0;
            struct shm_world *w = shm_world_create(W, &abort_flag);
            struct comm *c[5];
            pthread_t th[5];
            uint16_t *buf[5];
            size_t n = 70001;
            for (int r = 0; r < W; r++) {
                c[r] = comm_shm_create(w, r, algo);
                buf[r] = malloc(n * sizeof(uint16_t));
                for (size_t i = 0; i < n; i++)
                    buf[r][i] = half_from_float(val(r, i, 0));
            }
            struct f16job jobs[5];
            for (int r = 0; r < W; r++) {
                jobs[r] = (struct f16job){c[r], buf[r], n};
                pthread_create(&th[r], NULL, f16_worker, &jobs[r]);
            }
            for (int r = 0; r < W; r++)
                pthread_join(th[r], NULL);
            int wrong = 0;
            for (int r = 0; r < W; r++) {
                for (size_t i = 0; i < n; i++) {
                    float s = 0;
                    for (int p = 0; p < W; p++)
                        s += val(p, i, 0);
                    wrong += half_to_float(buf[r][i]) != s;
                }
                c[r]->ops->destroy(c[r]);
                free(buf[r]);
            }
            shm_world_destroy(w);
            assert_int_equal(wrong, 0);
        }
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
        cmocka_unit_test(test_abort_releases_waiters),
        cmocka_unit_test(test_timeout_names_peer),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_half_buffers),
        cmocka_unit_test(test_allreduce_f16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
