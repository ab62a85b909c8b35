/* bench_colls.h - the collectives --bench-comm measures, one entry each
 * (as nccl-tests has one file per collective): how large a rank's buffers
 * are for a row, the call, and the check of its result against exact
 * answers from seeded inputs (the #wrong column). bench_comm.c owns the
 * timing, the tables and the fit; the bus bandwidth factor of every
 * collective is coll_busbw_factor's (probe.h), the one the metrics and
 * traces use. */
#ifndef DDPTOP_BENCH_COLLS_H
#define DDPTOP_BENCH_COLLS_H

#include <stddef.h>

struct comm;

struct bench_coll {
    int kind; /* enum coll_kind */
    /* the row's size is the whole (world-wide) buffer, as nccl-tests
     * counts allgather, gather, reduce-scatter and scatter: a rank's
     * count is size / world */
    int split;
    int sums; /* it reduces (the table says "sum") */
    /* floats of a rank's input and output for a call of count n */
    size_t (*in_n)(size_t n, int world);
    size_t (*out_n)(size_t n, int world);
    int (*run)(struct comm *c, float *in, float *out, size_t n);
    /* elements of this rank's in or out that differ from the exact
     * answer, after one call on bench_fill's inputs */
    long (*check)(int world, int rank, const float *in, const float *out, size_t n);
};

/* The entry of collective kind, NULL if --bench-comm has none. */
const struct bench_coll *bench_coll_of(int kind);
/* Rank r's seeded inputs: small integers, whose sums are exact in float. */
void bench_fill(float *in, int r, size_t n);

#endif
