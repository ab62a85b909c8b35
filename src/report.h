/* report.h - the results of finished runs, and the batch report in text,
 * CSV, JSON and markdown. A result is a plain copy of what the metrics said,
 * so the run behind it can be freed. Every figure that may be missing has a
 * validity flag and prints as n/a (null in JSON, empty in CSV). */
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
    double samples_per_s;
    double compute_pct, comm_pct, data_pct, idle_pct, overlap_pct;
    uint64_t bytes_tx, bytes_rx;
    double busbw_gbps;
    int busbw_valid;
    double xfer_ms, sync_ms; /* per-collective transfer and sync, summed */
    uint64_t dropped;
};

struct run_result {
    struct run_config cfg;
    char dataset[32];
    char device[64];
    char backend[48]; /* the communicator the run used ("shm/ring", "nccl", "gpu-ring", ...) */
    char note[192];   /* the run's setup remark (shared GPUs, no CUPTI), or "" */
    double cupti_ms;  /* CUPTI's record processing on the host, over the run */
    uint64_t cupti_lost;
    int cupti_valid; /* device timelines were collected */
    int world, global_batch;
    long steps;
    int epochs_done;
    double wall_s;
    double ms_mean, ms_p50, ms_p90;
    double samples_per_s;
    double speedup, efficiency;
    int speedup_valid;
    double compute_pct, comm_pct, data_pct, idle_pct, overlap_pct;
    uint64_t bytes_sent; /* per rank, mean over ranks */
    double busbw_gbps;
    int busbw_valid;
    double xfer_ms, sync_ms; /* per rank, mean */
    double pred_ms;          /* alpha-beta prediction of xfer_ms, from --bench-comm's fit */
    int pred_valid;
    double train_loss, train_acc, test_acc;
    int train_valid, test_valid;
    long threshold_step; /* -1: not reached */
    int threshold_epoch;
    size_t params_total, params_trainable;
    int64_t flops_per_sample;
    uint64_t dropped;
    int replicas_checked;
    long replicas_diverged_at; /* -1: identical at every step */
    int state;                 /* enum run_state */
    char error[320];
    int nranks;
    struct rank_result *ranks;
};

/* Copies a finished (joined) run into res. */
int result_from_run(struct run_result *res, struct run *r);
void result_free(struct run_result *res);
/* Fills speedup and efficiency of every result against the 1-rank result of
 * the same model (and the same global batch when there is one). */
void results_speedup(struct run_result *res, int n);

int report_write(FILE *f, int format, const struct run_result *res, int n);

#endif
