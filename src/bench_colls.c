/* bench_colls.c - one entry per collective of --bench-comm (bench_colls.h):
 * its buffers, its call, and its exact answer. Every rank's input element
 * i is val(rank, i), a small integer, so that every sum is exact in float
 * whatever the order of the additions. */
#include "bench_colls.h"

#include "comm.h"

static float val(int r, size_t i)
{
    return (float)((int)((7 * (size_t)r + 3 * i) % 17) - 8);
}

void bench_fill(float *in, int r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        in[i] = val(r, i);
}

/* sum over the ranks of element i */
static float sum_of(int world, size_t i)
{
    float s = 0;
    for (int p = 0; p < world; p++)
        s += val(p, i);
    return s;
}

static size_t one(size_t n, int world)
{
    return n;
}

static size_t all(size_t n, int world)
{
    return n * (size_t)world;
}

/* ---- allreduce: in[n] everywhere, the sum in place everywhere ---- */

static int allreduce_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->allreduce(c, in, n, RED_SUM);
}

static long allreduce_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += in[i] != sum_of(world, i);
    return wrong;
}

static const struct bench_coll allreduce = {COLL_ALLREDUCE, 0, 1, one, one, allreduce_run, allreduce_check};

/* ---- reduce-scatter: in[n * world], this rank's slice of the sum ---- */

static int reduce_scatter_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->reduce_scatter(c, in, out, n, RED_SUM);
}

static long reduce_scatter_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += out[i] != sum_of(world, (size_t)rank * n + i);
    return wrong;
}

static const struct bench_coll reduce_scatter = {COLL_REDUCE_SCATTER, 1, 1, all, one, reduce_scatter_run,
                                                 reduce_scatter_check};

/* ---- allgather: in[n], every rank's in rank order ---- */

static int allgather_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->allgather(c, in, out, n);
}

static long allgather_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (int p = 0; p < world; p++)
        for (size_t i = 0; i < n; i++)
            wrong += out[(size_t)p * n + i] != val(p, i);
    return wrong;
}

static const struct bench_coll allgather = {COLL_ALLGATHER, 1, 0, one, all, allgather_run, allgather_check};

/* ---- broadcast: rank 0's in, in place everywhere ---- */

static int broadcast_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->broadcast(c, in, n, 0);
}

static long broadcast_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += in[i] != val(0, i);
    return wrong;
}

static const struct bench_coll broadcast = {COLL_BROADCAST, 0, 0, one, one, broadcast_run, broadcast_check};

/* ---- reduce: the sum on rank 0 ---- */

static int reduce_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->reduce(c, in, out, n, RED_SUM, 0);
}

static long reduce_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; rank == 0 && i < n; i++)
        wrong += out[i] != sum_of(world, i);
    return wrong;
}

static const struct bench_coll reduce = {COLL_REDUCE, 0, 1, one, one, reduce_run, reduce_check};

/* ---- gather: every rank's in, in rank order, on rank 0 ---- */

static int gather_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->gather(c, in, out, n, 0);
}

static long gather_check(int world, int rank, const float *in, const float *out, size_t n)
{
    return rank == 0 ? allgather_check(world, rank, in, out, n) : 0;
}

static const struct bench_coll gather = {COLL_GATHER, 1, 0, one, all, gather_run, gather_check};

/* ---- scatter: rank 0's in[n * world], slice r to rank r ---- */

static int scatter_run(struct comm *c, float *in, float *out, size_t n)
{
    return c->ops->scatter(c, in, out, n, 0);
}

static long scatter_check(int world, int rank, const float *in, const float *out, size_t n)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += out[i] != val(0, (size_t)rank * n + i);
    return wrong;
}

static const struct bench_coll scatter = {COLL_SCATTER, 1, 0, all, one, scatter_run, scatter_check};

/* ---- the table ---- */

static const struct bench_coll *const colls[] = {&allreduce, &reduce_scatter, &allgather, &broadcast,
                                                 &reduce,    &gather,         &scatter};

const struct bench_coll *bench_coll_of(int kind)
{
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (colls[i]->kind == kind)
            return colls[i];
    return NULL;
}
