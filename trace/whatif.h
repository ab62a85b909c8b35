/* whatif.h - a foreign (PyTorch profiler) trace's collectives, step by
 * step and matched across ranks: what --predict needs to say what the
 * user's job would take on more ranks (src/predict.h, predict_job).
 *
 * A collective is its work record (trace_read.h: gloo:all_reduce on the
 * host, an NCCL kernel on the device), in the ProfilerStep that holds its
 * start (a device op's launch, where known), in the steps the rank's
 * figures cover (trace_figures.left's step aside, as ms/step). In a step,
 * a rank's collectives are numbered in start order; the k-th c10d call of
 * a kind in that step (c10d::allreduce_, record_param_comms) gives the
 * k-th work of that kind its bytes, where its args say them.
 *
 * Across ranks a collective is (step number, number in the step). Its
 * least duration over the ranks is its transfer (the rank that waited
 * least for its peers, as DESIGN.md's transfer); each rank's own
 * durations, summed per step, are its time in collectives.
 *
 * As straggler.h, in two parts so that --follow, which keeps figures
 * and not events, gets what a replay of the same files gets: a gather per
 * rank (or per profiler cycle), gathers added, the table made once. */
#ifndef DDPTOP_WHATIF_H
#define DDPTOP_WHATIF_H

#include <stddef.h>
#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

/* One collective of one rank. */
struct whatif_coll {
    int rank;
    uint32_t step, seq; /* its ProfilerStep's number; its place among the rank's in that step */
    uint8_t kind;       /* enum coll_kind */
    int64_t t0_ns, dur_ns;
    uint64_t bytes; /* from its c10d call's args; 0: not given */
};

struct whatif_gather {
    struct whatif_coll *c;
    size_t n, cap;
    uint64_t steps[TRACE_MAX_RANKS];  /* per rank: the steps gathered */
    int64_t work_ns[TRACE_MAX_RANKS]; /* ... the time in their collectives */
    char backend[8];                  /* the first rank's that names one ("gloo", "nccl"), or "" */
};

/* One collective matched across ranks. */
struct whatif_match {
    uint32_t step, seq;
    uint8_t kind;
    int nranks;     /* the ranks that have it */
    int64_t min_ns; /* its least duration over them */
    uint64_t bytes; /* the largest its calls' args give; 0: none gives it */
};

struct whatif_table {
    int valid;      /* a collective was found in a covered step */
    int nranks;     /* the ranks with steps gathered */
    double steps;   /* the mean over them of their steps */
    double comm_ms; /* per step: the mean over them of their time in collectives */
    char backend[8];
    size_t n;
    struct whatif_match *m; /* owned: whatif_table_free */
};

/* Adds to *g rank r's collectives in the steps its figures f
 * (trace_analyze_rank's) cover, and those steps. Returns 0, or -1 when
 * out of memory. */
int whatif_gather_rank(struct whatif_gather *g, const struct trace_rank *r, const struct trace_figures *f);
/* Adds what h holds to *into. Returns 0, or -1 when out of memory. */
int whatif_gather_add(struct whatif_gather *into, const struct whatif_gather *h);
void whatif_gather_free(struct whatif_gather *g);
/* What *g holds of rank `from` given to rank `to` (a follower that
 * numbers a cycle's rank itself). */
void whatif_gather_rerank(struct whatif_gather *g, int from, int to);
/* The table of g into *out (valid 0 when it holds no collective).
 * Returns 0, or -1 when out of memory. */
int whatif_table_of(struct whatif_table *out, const struct whatif_gather *g);
void whatif_table_free(struct whatif_table *t);

#endif
