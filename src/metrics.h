/* metrics.h - the collector's store: per-rank, per-step breakdowns computed
 * from the probe rings with the README's formulas, losses and accuracies,
 * per-collective transfer/sync accounting, and a short span history for the
 * timeline pane.
 *
 * Only the collector thread (the UI or the report loop) writes here. Rank
 * threads write nothing but their rings.
 */
#ifndef DDPTOP_METRICS_H
#define DDPTOP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "breakdown.h"
#include "cost_model.h"
#include "probe.h"

/* What a rank reports at the end of every step. */
/* What a rank moved, or a run's ranks on average: the results own it
 * (results.c), and the UI's snapshot of a finished rank takes the record
 * whole rather than copying its figures one by one. */
struct traffic {
    uint64_t tx, rx; /* bytes sent and received */
    int bytes_valid;
    double busbw_gbps;
    double algbw_gbps; /* the collectives' data (each call's S) over their transfer time: busbw / factor */
    int busbw_valid;   /* busbw and algbw */
};

/* Device memory a rank held now (a live rank) or at the end, and at its
 * most, in bytes; valid 0: not known (another process's rank while it
 * runs, a replay). */
struct mem_use {
    int64_t now, peak;
    int valid;
};

/* The pace a run or a rank is shown at: a step's time and the samples a
 * second it makes (samples_per_s_at: the two multiply to the batch). The
 * results' is the median step; the UI's live row, the recent mean. */
struct step_rate {
    double ms;
    double samples_s;
    int samples_valid; /* 0: the batch is not known (a trace without it) */
};

struct step_rec {
    uint32_t step; /* global step index, from 0 */
    uint32_t epoch;
    int64_t t0_ns, t1_ns;
    float loss; /* mean over the rank's local batch */
    float lr;
    int32_t correct, n;
    int64_t desched_ns;  /* the rank thread was runnable but not on a core, or -1: unknown */
    uint64_t param_hash; /* hash of the parameters after the step (--check-replicas), else 0 */
    /* a GPU rank's step run with device tracing off (--cupti-sample): its
     * split is the latest traced step's, scaled to its wall time */
    uint8_t untraced;
    /* --loss-scale dynamic: the step's gradients were not finite, and the
     * optimizer did not run; the scale its loss was multiplied by (0: no
     * loss scaling) */
    uint8_t skipped;
    float loss_scale;
};

/* What a rank reports after evaluating an epoch. */
struct epoch_rec {
    int32_t epoch;
    int32_t correct, total; /* on this rank's share of the test split */
    double loss_sum;
};

#define METRICS_HISTORY 8192 /* spans kept per rank for the timeline */
/* how late a device record may arrive and still count for its step (held
 * steps wait this long, in device time, for their records) */
#define METRICS_GPU_LATE_NS (1000LL * 1000 * 1000)
#define METRICS_LOSS_WINDOW 50 /* steps in the running training loss */
/* Per-step figures are kept for the last METRICS_STEPS steps, in rings
 * indexed by metrics_slot(step), so memory stays flat over a run of any
 * length; step-time statistics cover the steps kept (all of them in runs
 * shorter than this), the rest is accumulated as it goes. */
#define METRICS_STEPS (1u << 14)

static inline size_t metrics_slot(size_t step)
{
    return step % METRICS_STEPS;
}

struct rank_metrics {
    struct breakdown total;  /* every step */
    struct breakdown steady; /* every step but the first */
    struct breakdown last;   /* the most recent step */
    /* rings of METRICS_STEPS: step s at metrics_slot(s), for the last
     * METRICS_STEPS of the nsteps closed */
    int64_t *step_wall_ns;
    float *step_loss;
    int32_t *step_correct, *step_n;
    uint64_t *step_hash;
    uint8_t *step_untraced, *step_skipped;
    size_t nsteps;
    uint64_t nskipped; /* --loss-scale: steps skipped for gradients not finite */
    float loss_scale;  /* ... the scale of the latest step (0: none) */
    uint64_t bytes_tx, bytes_rx;
    double bus_bytes;                          /* sum over collectives of S * busbw factor */
    double alg_bytes;                          /* ... of S, over those with a busbw factor (algbw's data) */
    double bus_steady_bytes, alg_steady_bytes; /* the same after step 0 (busbw's and algbw's step set) */
    int64_t coll_ns;                           /* time inside collectives (outer spans) */
    int64_t xfer_ns, sync_ns;                  /* per-collective: transfer (min over ranks) and sync */
    int64_t xfer_steady_ns, sync_steady_ns;    /* the same after step 0 (per step as ms/step is: the first left out) */
    int64_t negotiate_ns, negotiate_steady_ns; /* horovod: in its negotiations; the same after step 0 */
    uint64_t nnegotiate;                       /* such collectives, every step */
    int64_t desched_ns;                        /* runnable but not on a core, every step but the first */
    int desched_valid;
    uint64_t ncoll;
    /* per collective kind and size class (cost_size_class): calls and
     * summed sizes, for the alpha-beta prediction */
    uint64_t kind_calls[COLL_COUNT][COST_SIZE_CLASSES];
    double kind_bytes[COLL_COUNT][COST_SIZE_CLASSES];
    uint64_t dropped;    /* spans lost to full rings */
    uint64_t late;       /* spans of steps already closed */
    int gpu_view;        /* a LANE_GPU span has arrived: steps from then on are
                            broken down over LANE_GPU spans only (the device view) */
    int gpu_held;        /* metrics_expect_gpu: steps wait for their device records */
    int64_t gpu_seen_ns; /* latest start of a LANE_GPU span so far */
    /* --cupti-sample: steps broken down over their device records, and
     * steps estimated from the latest of them */
    uint64_t ntraced, nuntraced;
    struct breakdown last_traced;
    struct step_rec *held; /* step records waiting for their device records */
    size_t nheld, cap_held;
    struct span *pending; /* spans waiting for their step's record */
    size_t npending, cap_pending;
    struct span *window; /* scratch: one step's spans */
    size_t cap_window;
    struct breakdown_scratch sweep; /* the breakdown sweep's memory */
    struct span history[METRICS_HISTORY];
    uint64_t nhistory; /* total ever pushed; index % METRICS_HISTORY */
    /* device records reach the history merged per category while they
     * follow one another closely (a step can hold a thousand kernels,
     * which would leave no room for the host's spans): the one growing */
    struct span gpu_open[CAT_COUNT];
    uint8_t gpu_open_on[CAT_COUNT];
};

/* A rank's calls of collective kind k, and the bytes they moved, over
 * every size class. */
static inline uint64_t metrics_kind_calls(const struct rank_metrics *rm, int k)
{
    uint64_t n = 0;
    for (int c = 0; c < COST_SIZE_CLASSES; c++)
        n += rm->kind_calls[k][c];
    return n;
}

static inline double metrics_kind_bytes(const struct rank_metrics *rm, int k)
{
    double b = 0;
    for (int c = 0; c < COST_SIZE_CLASSES; c++)
        b += rm->kind_bytes[k][c];
    return b;
}

struct coll_slot;

/* Called for every span, step record and epoch record the collector drains
 * (any may be NULL), on the collector thread. */
struct metrics_listener {
    void (*span)(void *ctx, int rank, const struct span *s);
    void (*step)(void *ctx, int rank, const struct step_rec *rec);
    void (*epoch)(void *ctx, int rank, const struct epoch_rec *rec);
    void *ctx;
};
#define METRICS_LISTENERS 4

struct metrics {
    int world;
    struct rank_metrics *r;
    /* global per-step series, valid up to `steps_done` (all ranks
     * reported), rings like the ranks' (metrics_slot) */
    size_t steps_done;
    float *loss_mean;    /* mean of the ranks' losses */
    float *loss_running; /* mean of the last METRICS_LOSS_WINDOW */
    double loss_window_sum;
    /* training accuracy of the latest epoch, accumulated as steps close */
    uint32_t acc_epoch;
    int64_t acc_correct, acc_total;
    double threshold;    /* < 0: none */
    long threshold_step; /* first global step where running < threshold, -1 */
    int threshold_epoch;
    uint32_t *step_epoch; /* ring (metrics_slot) */
    /* per-epoch test results, summed over ranks */
    int nepochs;
    int32_t test_correct[1024], test_total[1024];
    double test_loss[1024];
    int epochs_reported[1024];
    /* --check-replicas: the first step whose parameter hashes differ across ranks */
    long replicas_diverged_at; /* -1: never (or not checked) */
    int replicas_checked;
    float lr_last; /* the learning rate of rank 0's latest step */
    int lr_valid;
    /* per-collective matching, by sequence number; a group's collectives
     * (SPAN_SEQ_GROUP, --dp) among group_ranks ranks, in gcoll */
    struct coll_slot *coll, *gcoll;
    int group_ranks;
    /* who hears every record drained: the trace writer, the history file */
    struct metrics_listener listeners[METRICS_LISTENERS];
    int nlisteners;
};

int metrics_init(struct metrics *m, int world, double threshold);
void metrics_free(struct metrics *m);
/* Groups of n ranks call collectives of their own (--dp: a stage's
 * copies). 0, or -1 out of memory. */
int metrics_set_groups(struct metrics *m, int n);
/* Feeds what was drained from rank r's rings. Step records must come in step
 * order; spans in any order, but before their step's record is fed. */
void metrics_add_spans(struct metrics *m, int r, const struct span *s, size_t n);
/* A collective's (outer comm span's) part of a rank's busbw and algbw data:
 * its size times the busbw factor at world ranks, and its size, over every
 * step and over the steps after the first. metrics_add_spans counts each
 * span it takes; a replay recounts at the trace's world size. */
void metrics_count_bus(struct rank_metrics *rm, const struct span *sp, int world);
void metrics_add_step(struct metrics *m, int r, const struct step_rec *rec);
/* Rank r's device records (CUPTI) reach the collector late and carry no
 * reliable step: from now on its step records wait until a device record
 * that starts after the step's end has arrived (or metrics_finish), and
 * its device records join the steps whose time they overlap. */
void metrics_expect_gpu(struct metrics *m, int r);
/* Closes every step still waiting (after the last records were delivered). */
void metrics_finish(struct metrics *m);
void metrics_add_epoch(struct metrics *m, int r, const struct epoch_rec *rec);
/* Adds a listener (-1 when METRICS_LISTENERS are taken); removes the one
 * with context ctx. */
int metrics_listen(struct metrics *m, const struct metrics_listener *l);
void metrics_unlisten(struct metrics *m, const void *ctx);

/* Training accuracy (%) over the steps of the last epoch seen (the whole
 * run when it ended inside its first epoch); -1 before any step. */
double metrics_train_acc_last_epoch(const struct metrics *m);

/* Mean, median and 90th percentile (ms) of step times v[n] (ns), excluding
 * the first step (it builds kernels and warms caches); zeros when empty.
 * Percentiles are numpy's default (linear interpolation between the two
 * closest ranks): the median of an even count is the mean of the middle
 * two, p90 of 4 steps lies 70% of the way from the 3rd to the 4th. */
void step_stats_ms(const int64_t *v, size_t n, double *mean, double *p50, double *p90);
/* The same for rank r's steps kept (the last METRICS_STEPS; the first step
 * left out when it is among them). */
void metrics_step_stats(const struct metrics *m, int r, double *mean, double *p50, double *p90);
/* The same for the run: each step counts at its slowest rank. */
void metrics_run_step_stats(const struct metrics *m, double *mean, double *p50, double *p90);
/* The oldest step still kept in the rings. */
static inline size_t metrics_first_kept(size_t nsteps)
{
    return nsteps > METRICS_STEPS ? nsteps - METRICS_STEPS : 0;
}

#endif
