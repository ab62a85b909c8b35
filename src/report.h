/* report.h - the results of finished runs, live or replayed from a trace,
 * and the one report in text, CSV, JSON and markdown. A result is a plain
 * copy of what the metrics (or the trace) said, so the run behind it can
 * be freed. Every figure that may be missing has a validity flag and
 * prints as n/a (null in JSON, empty in CSV), never as a made-up 0: a
 * trace lacks some of what a live run knows (parameters, wall time, a
 * PyTorch trace's batch sizes), and a string that is "" is unknown. */
#ifndef DDPTOP_REPORT_H
#define DDPTOP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "metrics.h"

struct run;

struct rank_result {
    int rank;
    char device[64];
    long steps;
    double ms_mean, ms_p50, ms_p90;
    int ms_valid;
    double samples_per_s;
    int samples_valid;
    struct breakdown b; /* what the percentages are of */
    double compute_pct, comm_pct, data_pct, idle_pct, overlap_pct;
    int gpu_view;         /* broken down over device records (README: what the numbers mean) */
    int idle_split_valid; /* HTA's split of idle: replayed PyTorch traces with GPU ops */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
    uint64_t bytes_tx, bytes_rx;
    int bytes_valid;
    double busbw_gbps;
    int busbw_valid;
    double xfer_ms, sync_ms; /* per-collective transfer and sync, summed */
    int coll_valid;
    uint64_t dropped;
    int dropped_valid;
};

/* Where a replayed run's figures came from; valid is 0 for a live run. */
struct replay_source {
    int valid;
    char files[1024]; /* as given to --replay */
    char format[16];  /* trace_flavor_name */
    int complete;     /* every file ended properly */
    int truncated;    /* some file was cut short */
    uint64_t events;
};

struct run_result {
    struct run_config cfg; /* model "" and strategy -1 when a trace does not say */
    int compress_valid;    /* cfg.grad_fp16 is known */
    char dataset[32];
    char device[64];
    char backend[48]; /* the communicator the run used ("shm/ring", "nccl", "gpu-ring", ...) */
    char note[192];   /* the run's setup remark (shared GPUs, no CUPTI), or "" */
    double cupti_ms;  /* CUPTI's record processing on the host, over the run */
    uint64_t cupti_lost;
    int cupti_valid; /* device timelines were collected */
    int world, global_batch;
    int batch_valid;
    long steps;
    int epochs_done;
    double wall_s;
    int wall_valid;
    double ms_mean, ms_p50, ms_p90;
    int ms_valid;
    double samples_per_s;
    int samples_valid;
    double speedup, efficiency;
    int speedup_valid;
    struct breakdown b; /* the ranks' breakdowns summed */
    double compute_pct, comm_pct, data_pct, idle_pct, overlap_pct;
    int gpu_view; /* some rank is broken down over device records */
    int idle_split_valid;
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
    uint64_t bytes_sent; /* per rank, mean over ranks */
    int bytes_valid;
    double busbw_gbps;
    int busbw_valid;
    double xfer_ms, sync_ms; /* per rank, mean */
    int coll_valid;
    double pred_ms; /* alpha-beta prediction of xfer_ms, from --bench-comm's fit */
    int pred_valid;
    double train_loss, train_acc, test_acc;
    int train_valid, test_valid;
    long threshold_step; /* -1: not reached */
    int threshold_epoch;
    size_t params_total, params_trainable;
    int64_t flops_per_sample;
    int params_valid;
    uint64_t dropped;
    int dropped_valid;
    int replicas_checked;
    long replicas_diverged_at; /* -1: identical at every step */
    int state;                 /* enum run_state; -1: unknown */
    char error[320];
    struct replay_source replay;
    int nranks;
    struct rank_result *ranks;
};

/* Copies a finished (joined) run into res. */
int result_from_run(struct run_result *res, struct run *r);
/* Fills, on a zeroed res, what metrics m hold (steps, step times,
 * breakdowns, bytes, collectives, losses, accuracies), all marked valid.
 * local_batch: the samples of a rank's step (0: unknown); world: the run's
 * ranks, m->world or more (a trace may hold some of them). Returns -1 when
 * out of memory. */
int result_from_metrics(struct run_result *res, const struct metrics *m, int local_batch, int world);
/* Derives the percentages of every rank and of the run from their
 * breakdowns (b), and the run's from the ranks'. */
void result_breakdowns(struct run_result *res);
void result_free(struct run_result *res);
/* Fills speedup and efficiency of every result against the 1-rank result of
 * the same model (and the same global batch when there is one). */
void results_speedup(struct run_result *res, int n);

int report_write(FILE *f, int format, const struct run_result *res, int n);

#endif
