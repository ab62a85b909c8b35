/* test_horovod.c - the horovod engine on its own, over the shm ring, with
 * exact answers and readiness the test controls.
 *
 * Each rank thread plays backward: for every tensor, in an order and with
 * pauses of its own, it writes the gradient (small integers, so every
 * average is exact) and then reports it ready. The engine must average
 * every tensor across the ranks exactly once a step, whatever the order
 * and timing, through fused buffers and (for a tensor larger than the
 * buffer) in place; frozen tensors are left alone. A rank that reports a
 * tensor late must not see it reduced before it was written: the case
 * where one rank has everything ready and another has one tensor.
 * A peer that fails just after a step's last collective (the run's abort
 * raised while the thread still copies results back) must not cost a rank
 * the step it has all the data for.
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
#include "horovod.h"

enum { NT = 7, MAXW = 4, STEPS = 3 };
/* tensor lengths: tensor 4 is larger than the 64-float fusion buffer */
static const size_t lens[NT] = {5, 17, 1, 30, 100, 9, 12};

static float val(int r, int step, int p, size_t i)
{
    return (float)((int)((3 * (size_t)r + 5 * (size_t)step + 7 * (size_t)p + i) % 13) - 6);
}

enum order { SAME, REVERSED, LATE_ONE };

struct rank_job {
    struct comm *c;
    int world;
    enum order order;
    struct grad_tensor t[NT];
    float *grads;
    int wrong;
    int rc;
};

static void pause_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void *rank_main(void *arg)
{
    struct rank_job *j = arg;
    int r = j->c->rank;
    size_t total = 0;
    for (int p = 0; p < NT; p++)
        total += lens[p];
    struct grad_layout g = {NT, j->t, NULL, j->grads, total};
    struct hvd_engine *e = hvd_create(j->c, &g, 64 * sizeof(float), 1.0, NULL, NULL, NULL, NULL);
    if (!e) {
        j->rc = -100;
        return NULL;
    }
    for (int step = 0; step < STEPS && j->rc == 0; step++) {
        hvd_begin(e);
        for (int k = 0; k < NT; k++) {
            /* backward order is descending; REVERSED reports ascending */
            int p = j->order == REVERSED && r % 2 ? k : NT - 1 - k;
            for (size_t i = 0; i < lens[p]; i++)
                j->grads[j->t[p].off + i] = val(r, step, p, i);
            if (j->t[p].trainable)
                hvd_grad_ready(e, p);
            /* LATE_ONE: rank 0 holds everything but the last tensor back
             * while the others report all of theirs at once */
            if (j->order == LATE_ONE && r == 0 && k == 0)
                pause_ms(30);
            else if (j->order != LATE_ONE)
                pause_ms(r == 1 ? 2 : 0);
        }
        int rc = hvd_finish(e, NULL);
        if (rc != 0) {
            j->rc = rc;
            break;
        }
        float inv = 1.0f / (float)j->world;
        for (int p = 0; p < NT; p++)
            for (size_t i = 0; i < lens[p]; i++) {
                float want = val(r, step, p, i);
                if (j->t[p].trainable) {
                    float s = 0;
                    for (int q = 0; q < j->world; q++)
                        s += val(q, step, p, i);
                    want = s * inv;
                }
                j->wrong += j->grads[j->t[p].off + i] != want;
            }
    }
    hvd_destroy(e);
    return NULL;
}

/* Runs STEPS steps on W ranks; returns the wrong elements over all. */
static int run(int W, enum order order, int freeze_first)
{
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(W, &abort_flag);
    assert_non_null(w);
    struct rank_job jobs[MAXW];
    pthread_t th[MAXW];
    for (int r = 0; r < W; r++) {
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].c = comm_shm_create(w, r, ALGO_RING);
        assert_non_null(jobs[r].c);
        jobs[r].world = W;
        jobs[r].order = order;
        size_t off = 0;
        for (int p = 0; p < NT; p++) {
            jobs[r].t[p] = (struct grad_tensor){off, lens[p], !(freeze_first && p < 2)};
            off += lens[p];
        }
        jobs[r].grads = calloc(off, sizeof(float));
        pthread_create(&th[r], NULL, rank_main, &jobs[r]);
    }
    int wrong = 0;
    for (int r = 0; r < W; r++) {
        pthread_join(th[r], NULL);
        if (jobs[r].rc != 0)
            fail_msg("rank %d of %d: hvd_finish returned %d (%s)", r, W, jobs[r].rc, jobs[r].c->err);
        wrong += jobs[r].wrong;
        jobs[r].c->ops->destroy(jobs[r].c);
        free(jobs[r].grads);
    }
    shm_world_destroy(w);
    return wrong;
}

/* A host "device" for the engine: plain memory, copies at once. Its
 * settle, on rank 0, raises the run's abort the first time the rank's
 * gradients are all averaged (the step's last copy back is done, the
 * thread has not yet said so), and holds the thread there long enough for
 * a wait that heeds the abort (it polls every 10 ms) to give up. */
struct late_abort {
    _Atomic int *abort_flag;
    const struct grad_tensor *t;
    const float *grads;
    int world, raised;
};

static void *host_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return malloc(bytes);
}

static void host_release(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static int host_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memmove(dst, src, bytes);
    return 0;
}

static int host_settle(void *ctx)
{
    (void)ctx;
    return 0;
}

static int settle_then_abort(void *ctx)
{
    struct late_abort *la = ctx;
    if (la->raised)
        return 0;
    for (int p = 0; p < NT; p++)
        for (size_t i = 0; i < lens[p]; i++) {
            float s = 0;
            for (int q = 0; q < la->world; q++)
                s += val(q, 0, p, i);
            if (la->grads[la->t[p].off + i] != s / (float)la->world)
                return 0; /* not yet the step's end */
        }
    la->raised = 1;
    atomic_store(la->abort_flag, 1);
    pause_ms(200);
    return 0;
}

struct abort_job {
    struct comm *c;
    struct late_abort la;
    struct grad_tensor t[NT];
    float grads[256];
    int rc;
};

static void *abort_rank_main(void *arg)
{
    struct abort_job *j = arg;
    int r = j->c->rank;
    struct grad_layout g = {NT, j->t, NULL, j->grads, 0};
    for (int p = 0; p < NT; p++) {
        j->t[p] = (struct grad_tensor){g.nfloats, lens[p], 1};
        g.nfloats += lens[p];
        for (size_t i = 0; i < lens[p]; i++)
            j->grads[j->t[p].off + i] = val(r, 0, p, i);
    }
    j->la.t = j->t;
    j->la.grads = j->grads;
    struct hvd_device dev = {.alloc = host_alloc,
                             .release = host_release,
                             .copy = host_copy,
                             .settle = r == 0 ? settle_then_abort : host_settle,
                             .ctx = &j->la};
    struct hvd_engine *e = hvd_create(j->c, &g, 64 * sizeof(float), 1.0, NULL, &dev, NULL, NULL);
    if (!e) {
        j->rc = -100;
        return NULL;
    }
    hvd_begin(e);
    for (int p = NT - 1; p >= 0; p--)
        hvd_grad_ready(e, p);
    j->rc = hvd_finish(e, NULL);
    hvd_destroy(e);
    return NULL;
}

static void test_abort_after_last_collective(void **state)
{
    enum { W = 2 };
    _Atomic int abort_flag = 0;
    struct shm_world *w = shm_world_create(W, &abort_flag);
    assert_non_null(w);
    struct abort_job jobs[W];
    pthread_t th[W];
    memset(jobs, 0, sizeof(jobs));
    size_t total = 0;
    for (int p = 0; p < NT; p++)
        total += lens[p];
    assert_true(total <= sizeof(jobs[0].grads) / sizeof(float));
    for (int r = 0; r < W; r++) {
        jobs[r].c = comm_shm_create(w, r, ALGO_RING);
        assert_non_null(jobs[r].c);
        jobs[r].la = (struct late_abort){.abort_flag = &abort_flag, .world = W};
        pthread_create(&th[r], NULL, abort_rank_main, &jobs[r]);
    }
    for (int r = 0; r < W; r++)
        pthread_join(th[r], NULL);
    /* the abort was raised (else the case proves nothing) after rank 0
     * had the whole step: it finishes it */
    assert_int_equal(jobs[0].la.raised, 1);
    assert_int_equal(jobs[0].rc, 0);
    for (int r = 0; r < W; r++)
        jobs[r].c->ops->destroy(jobs[r].c);
    shm_world_destroy(w);
}

static void test_same_order(void **state)
{
    for (int W = 1; W <= MAXW; W++)
        assert_int_equal(run(W, SAME, 0), 0);
}

static void test_reversed_order(void **state)
{
    for (int W = 2; W <= MAXW; W++)
        assert_int_equal(run(W, REVERSED, 0), 0);
}

/* Rank 0 has one tensor ready while the others have all: only that one may
 * be reduced until rank 0 writes and reports the rest. */
static void test_one_rank_late(void **state)
{
    for (int W = 2; W <= 3; W++)
        assert_int_equal(run(W, LATE_ONE, 0), 0);
}

static void test_frozen_left_alone(void **state)
{
    assert_int_equal(run(2, SAME, 1), 0);
    assert_int_equal(run(3, REVERSED, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_order),
        cmocka_unit_test(test_reversed_order),
        cmocka_unit_test(test_one_rank_late),
        cmocka_unit_test(test_frozen_left_alone),
        cmocka_unit_test(test_abort_after_last_collective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
