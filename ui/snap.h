/* snap.h - what the panes draw: a snapshot of one run, taken by the UI
 * thread once per refresh.
 *
 * Panes never read struct run. They read this, so `space` (freeze the view)
 * is simply "stop updating the snapshot" while training and polling go on,
 * and a resize while frozen redraws the frozen numbers. Everything is sized
 * when the run starts (snap_init); snap_update allocates nothing and its
 * work is bounded by what arrived since the last frame: new spans are
 * copied incrementally, new steps are folded into fixed-size series.
 *
 * "Recent" figures (ms/step, percentages, busbw in the rank table) are
 * deltas of the metrics' cumulative totals over the last SNAP_WINDOW frames,
 * so they follow the run live without rescanning steps; once the run is
 * finished the rank table shows the final report (result_from_run) instead.
 * They are taken only at frames where a step arrived, so a pause holds the
 * figures of its last steps. A run that is not paused, yet has had no step
 * for the stall threshold (SNAP_STALL_MIN_NS, or SNAP_STALL_STEPS median
 * step times), is stalled: its recent figures are n/a, not the old ones.
 */
#ifndef DDPTOP_SNAP_H
#define DDPTOP_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "cost_model.h"
#include "metrics.h"
#include "probe.h"
#include "series.h"

struct follow;
struct replay;
struct run;
struct run_result;

#define SNAP_WINDOW 16
#define SNAP_MAX_EPOCHS 1024
#define SNAP_MAX_LAYERS 512               /* layers shown of rank 0's model (DenseNet-121 has 439) */
#define SNAP_LAYER_WINDOW_NS 1000000000LL /* per-layer times: the mean over about this long */
#define SNAP_STALL_MIN_NS 2000000000LL    /* no step for at least this long is a stall ... */
#define SNAP_STALL_STEPS 5                /* ... and for this many median step times */

/* The cumulative totals of one rank at one frame. */
struct snap_sample {
    size_t nsteps;
    struct breakdown total;
    uint64_t bytes; /* tx + rx */
    double bus;
    int64_t xfer_ns;
};

struct snap_rank {
    int id; /* the rank's number: its index, or the one a replayed trace gives it */
    char device[64];
    long steps;
    int valid;            /* has reported a step */
    int stalled;          /* the run is stalled and so is this rank: the recent figures are n/a */
    size_t seen_steps;    /* steps at the last frame */
    int64_t last_step_ns; /* the frame its step count last moved at (or the run last rested) */
    int recent_valid;     /* the recent figures below have been taken */
    /* live: the recent mean step; done, or a replay: the result's (its
     * median step) */
    struct step_rate rate;
    struct split_pct split; /* (breakdown.h) */
    int64_t split_wall_ns;  /* the wall the percentages are of: a rank weighs by it in the run's (report.h) */
    struct traffic traffic; /* (metrics.h) bytes not valid: a PyTorch trace */
    struct mem_use mem;
    unsigned lanes;    /* bit per enum lane that has had spans */
    struct span *hist; /* [METRICS_HISTORY]: the metrics' span ring, copied */
    uint64_t nhist;    /* spans ever copied; slot k % METRICS_HISTORY */
    struct snap_sample win[SNAP_WINDOW];
    /* --follow: its latest cycle */
    int cycle;                 /* its index among the rank's cycles; -1: none yet */
    uint32_t step_lo, step_hi; /* its ProfilerStep numbers */
    int straggler;             /* the straggler of that cycle (follow.h) */
};

/* --follow: one landed cycle of one rank, as the cycle panes show it. */
struct snap_cycle {
    int rank, cycle;
    uint32_t step_lo, step_hi;
    double ms_step, own_ms, others_ms; /* others_ms: the other ranks' own time (median); 0: none yet */
    struct split_pct split;
    int straggler;
};

/* One layer of rank 0's model: its host time per call, recently. */
struct snap_layer {
    int num; /* the user's number (model_layer_num); -1 for a layout conversion */
    char name[40];
    char kind[16];
    double fwd_ms, bwd_ms; /* mean per forward / backward call */
};

struct snap {
    int world;      /* the ranks held below */
    int sends_only; /* stages without --dp: sends between them, no bus bandwidth (result_staged_sends) */
    int run_world;  /* the run's ranks: more than world in a replay of some of its ranks' files */
    /* header */
    char model[32], dataset[32], strategy[32], backend[64], device[64];
    int sync;          /* the run's strategy (enum strategy): what the panes ask sync_has, never the label */
    char precision[8]; /* --precision, "n/a" when a trace does not say */
    int local_batch, global_batch, epochs;
    size_t params_total, params_trainable; /* 0 until the ranks built their models */
    long steps_per_epoch, total_steps, steps_done;
    int epoch; /* 0-based epoch of the next step */
    int state; /* enum run_state */
    char err[320];
    int failed_rank; /* the rank whose failure stopped the run, or -1 */
    double elapsed_s;
    double eta_s;
    int eta_valid;
    /* the run's pace: while it runs, the slowest rank's recent step; once
     * done, and in a replay, the result's (its median step) */
    struct step_rate rate;
    int rate_valid;      /* rate.ms is known (rate.samples_valid: samples/s too) */
    long steps_measured; /* --follow: the steps its report covers (the most a rank's cycles hold) */
    double run_split[3]; /* --follow: the report's compute, comm and idle % over those steps */
    int run_split_valid;
    double loss; /* running training loss */
    int loss_valid;
    double test_acc; /* last epoch's, % */
    int test_valid;
    int final; /* figures come from the finished run's result */
    /* the run's result as the report prints it, for figures only the
     * report's results own (the Kernels pane): a replay's (rp->res), a
     * followed job's so far (own_result, freed with the snapshot); NULL
     * for a live run */
    const struct run_result *result;
    struct run_result *own_result;
    int replay;           /* a recorded run (--replay): nothing is live */
    char timeline_na[80]; /* why the timeline has no spans (a trace kind without them), or "" */
    char ranks_note[96];  /* what the rank table's figures cover, where not the recent window; "" */
    /* --follow: each rank's latest cycle in the rank table and the
     * timeline; every cycle in the cycle panes */
    int follow;
    char follow_dir[256];
    struct snap_cycle *cycles; /* [ncycles], as they landed */
    int ncycles;
    int max_cycles;                /* the most cycles any rank has */
    uint64_t follow_version;       /* the follower's version the figures are of */
    double since_s;                /* since the last cycle landed; < 0: none yet */
    int pending;                   /* files seen that are not whole yet */
    int inotify;                   /* the folder is watched (1) or listed (0) */
    struct snap_rank *ranks;       /* [world] */
    int nwin;                      /* frames in each rank's window ring */
    int win_head;                  /* slot of the newest */
    int64_t win_t_ns[SNAP_WINDOW]; /* when each frame of the window was taken */
    double window_s;               /* time the "recent" figures cover */
    int at_rest;                   /* paused, every rank waiting at the pause's step boundary */
    double stall_s;                /* > 0: running, yet no step for this long (past the threshold) */
    int nbehind;                   /* while stalled: ranks with fewer steps than the most */
    int behind_first;              /* ... the first of them */
    int64_t progress_ns;           /* the frame steps_done last moved at (or the run last rested) */
    long progress_steps;           /* steps_done then */
    /* loss pane */
    struct series loss_mean;
    struct series *loss_rank; /* [world] */
    size_t loss_fed;          /* steps folded into the series */
    int nepochs;
    float acc[SNAP_MAX_EPOCHS];     /* test accuracy after epoch e, % */
    long acc_step[SNAP_MAX_EPOCHS]; /* the last step of epoch e */
    double threshold;               /* < 0: none */
    long threshold_step;
    /* traffic pane: one sample per frame while the run is live */
    struct series rate_bytes; /* tx + rx of all ranks, bytes/s */
    struct series busbw;      /* GB/s; NaN when no collective finished */
    struct series busbw_pred; /* GB/s the alpha-beta model predicts for the same calls */
    double rate_bytes_now, busbw_now, busbw_pred_now;
    int busbw_now_valid, pred_now_valid;
    int have_model;        /* some fit exists for this backend and world */
    double traffic_span_s; /* seconds the traffic series covers */
    int64_t traffic_t0_ns, prev_t_ns;
    uint64_t prev_bytes;
    double prev_bus;
    int64_t prev_xfer;
    uint64_t prev_calls[COLL_COUNT];
    double prev_kind_pred_us[COLL_COUNT]; /* the fits' time for every call of each kind so far */
    int have_prev;
    struct cost_fit fit[COLL_COUNT]; /* --bench-comm's fits, .valid when found */
    /* layers pane: rank 0's per-layer host times (model_layer_times) */
    int on_gpu;                /* the device runs asynchronously: host times only measure launches */
    int cupti_sample;          /* > 1: device records for CFG_CUPTI_WINDOW steps in every cupti_sample */
    int nlayers;               /* layers shown; 0 until rank 0 has built its model */
    int layers_total;          /* layers the model has */
    int layers_valid;          /* fwd_ms and bwd_ms hold a measurement */
    struct snap_layer *layers; /* [SNAP_MAX_LAYERS] */
    int64_t *lt_now, *lt_base; /* [2 * SNAP_MAX_LAYERS]: forward then backward ns totals, now and at lt_base_ns */
    int64_t lt_base_calls[2];  /* forward and backward calls at lt_base_ns */
    int64_t lt_base_ns;
};

/* Sizes the snapshot for run r (just started). Returns -1 when out of memory. */
int snap_init(struct snap *s, const struct run *r);
/* Refreshes s from r. `final` is the run's result once it has been joined,
 * else NULL. now_ns is probe_now_ns(). */
void snap_update(struct snap *s, const struct run *r, const struct run_result *final, int64_t now_ns);
/* Fills s, once, from a loaded replay: ddptop traces give the same figures
 * as a finished live run (rank table, spans, loss); other trace kinds give
 * the rank table from rp->res and leave the rest n/a. Live-only figures
 * (ETA, recent rates) stay invalid. Returns -1 when out of memory. */
int snap_from_replay(struct snap *s, const struct replay *rp);
/* Fills s from the follower (follow.h): when a cycle landed since the
 * last call, every figure again, else the ages only. Takes the follower's
 * lock. Returns -1 when out of memory. */
int snap_from_follow(struct snap *s, struct follow *f, int64_t now_ns);
void snap_free(struct snap *s);
/* The run is paused and every rank waits at the pause's step boundary (or
 * has ended). */
int snap_run_at_rest(const struct run *r);
/* Timeline lanes the snapshot would show (one per rank and lane used). */
int snap_lanes(const struct snap *s);

#endif
