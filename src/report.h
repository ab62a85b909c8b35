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
#include "idle.h"
#include "critpath.h"
#include "kernels.h"
#include "launch.h"
#include "memcpy.h"
#include "memtl.h"
#include "metrics.h"
#include "pipeline.h"
#include "queue.h"
#include "straggler.h"
#include "whatif.h"

struct run;
struct trace_rule;

#define RESULT_LOSS_POINTS 200
#define RESULT_DESCHED_GAP 5.0 /* points of desched% (result speedup_marked) */
#define RESULT_TIMELINE_SPANS 1024
#define REPLAY_LEFT_OUT_NAMED 4

struct rank_result {
    int rank;
    char device[64];
    long steps;
    double ms_mean, ms_p90;
    int ms_valid;           /* ms_mean, ms_p90 and rate.ms */
    struct step_rate rate;  /* its median step, and its batch over it */
    struct breakdown b;     /* what the percentages are of */
    struct split_pct split; /* b as percentages (breakdown_split) */
    int gpu_view;           /* broken down over device records (README: what the numbers mean) */
    int idle_split_valid;   /* HTA's split of idle: replayed PyTorch traces with GPU ops */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
    struct traffic traffic;
    double compute_ms;                    /* compute per step, over the steps ms/step covers */
    double exposed_ms;                    /* a PyTorch trace's rank: its split's comm per step, as compute_ms */
    double compute_s_epoch, comm_s_epoch; /* compute_ms and coll_ms x steps per epoch, in s (run's epoch_valid) */
    double xfer_ms, sync_ms;              /* per-collective transfer and sync, summed over the run */
    double xfer_step_ms, sync_step_ms;    /* per step, over the steps ms/step covers (the first left out) */
    double negotiate_ms;                  /* horovod's negotiation, ms per step (as xfer_step_ms) */
    int negotiate_valid;
    int coll_valid;
    double coll_pct, coll_ms; /* time in collectives, waits included: % of wall, ms per step */
    double desched_pct;       /* runnable but waiting for a core (the OS's, not a peer's): % of wall */
    int desched_valid;
    uint64_t dropped;
    int dropped_valid;
    struct mem_use mem; /* device memory it held at the end, and at its most */
    /* a PyTorch trace's rank: the steps its figures cover (--window's rule;
     * NULL for other runs), and whether they held no device work, so that
     * the figures cover its whole trace; where its rank number came from
     * (enum trace_rank_from) */
    const struct trace_rule *window;
    int window_whole;
    int rank_from, rank_from_valid;
    /* a PyTorch trace's rank with device ops: HTA's kernel breakdown of
     * what its figures count (trace/kernels.h; owned, result_free frees
     * it), its shares from result_kernels */
    struct kernel_table kernels;
    int kernels_valid;
    /* ... its memory copies by kind (trace/memcpy.h), rates from
     * result_memcpy */
    struct memcpy_table memcpy;
    int memcpy_valid;
    /* ... its queue length per stream (trace/queue.h), mean and std from
     * result_queue */
    struct queue_table queue;
    int queue_valid;
    /* ... its kernel launch statistics (trace/launch.h), means from
     * result_launch */
    struct launch_table launch;
    int launch_valid;
    /* ... its idle time per stream, HTA's split (trace/idle.h), shares from
     * result_idle */
    struct idle_table idle;
    int idle_valid;
    /* ... its memory timeline per device from [memory] events (trace/
     * memtl.h); valid when a device's events were counted */
    struct memtl_table memtl;
    int memtl_valid;
    /* ... the critical path of its median step (trace/critpath.h);
     * critpath_valid when it was looked for (a foreign trace's rank):
     * critpath.valid says whether there is one, else critpath.note why */
    struct critpath critpath;
    int critpath_valid;
};

/* Where a replayed run's figures came from; valid is 0 for a live run. */
struct replay_source {
    int valid;
    char files[1024]; /* as given to --replay */
    char format[16];  /* trace_flavor_name */
    int complete;     /* every file ended properly */
    int truncated;    /* some file was cut short */
    uint64_t events;
    long total_steps; /* the steps the run was to make, as its trace says; 0: unknown */
    /* JSON files of a folder given that are not traces (an execution
     * trace beside the Kineto trace), left out: the first few named */
    int nleft_out;
    char left_out[REPLAY_LEFT_OUT_NAMED][256];
};

struct run_result {
    struct run_config cfg; /* model "" and strategy -1 when a trace does not say */
    int compress_valid;    /* cfg.grad_compress is known */
    int precision_valid;   /* cfg.precision is known */
    char dataset[32];
    char device[64];
    char backend[64]; /* the communicator the run used ("shm/ring", "nccl", "gpu-ring", ...) */
    char note[192];   /* the run's setup remark (shared GPUs, no CUPTI), or "" */
    double cupti_ms;  /* CUPTI's record processing on the host, over the run */
    uint64_t cupti_lost;
    int cupti_valid; /* device timelines were collected */
    /* rank 0's steps broken down over device records, and those estimated
     * from the latest of them (--cupti-sample; live and replayed alike) */
    uint64_t steps_traced, steps_untraced;
    int cupti_gap_ms, cupti_gap_valid; /* --cupti-sample's least time between windows (not known in a replay) */
    /* --loss-scale dynamic (rank 0's; every rank decides alike): steps
     * whose update was skipped, and the scale of the last step (0: none) */
    uint64_t steps_skipped;
    float loss_scale;
    int world, global_batch;
    int batch_valid;
    long steps;
    int epochs_done;
    double wall_s;
    int wall_valid;
    double ms_mean, ms_p90;
    int ms_valid;          /* ms_mean, ms_p90 and rate.ms */
    struct step_rate rate; /* the median step, and the global batch over it: the figure speedups compare */
    /* against run base_run (an index into the report's results), by
     * median step times: strong scaling (same global batch) or weak (same
     * per-rank batch); efficiency = speedup / (world / the base's world) */
    double speedup, efficiency;
    int speedup_valid;
    int base_run;
    int scaling; /* enum scaling_kind */
    /* the speedup is marked (!) when this run and its baseline waited for
     * cores by more than RESULT_DESCHED_GAP points apart: the machine's
     * load then differs between the two as much as the strategy does */
    int speedup_marked;
    /* --repeat: the runs of this configuration; this result is the median one */
    int repeats;
    double repeat_sps_min, repeat_sps_max; /* samples/s (median steps) of the fastest and slowest */
    struct breakdown b;                    /* the ranks' breakdowns summed */
    struct split_pct split;                /* b as percentages (breakdown_split) */
    int gpu_view;                          /* some rank is broken down over device records */
    int idle_split_valid;
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
    /* bytes: per rank, the mean over ranks; busbw and algbw: all ranks'
     * collectives' data over their transfer time */
    struct traffic traffic;
    /* the studies' units: compute and time in collectives (coll, waits
     * included) per step, and per epoch of steps_per_epoch steps, in s;
     * per rank, and the run's the mean over its ranks */
    double compute_ms, compute_s_epoch, comm_s_epoch;
    long steps_per_epoch;
    int epoch_valid;
    double xfer_ms, sync_ms;           /* per rank (mean), summed over the run */
    double xfer_step_ms, sync_step_ms; /* per rank (mean), per step as ms/step (the first left out) */
    double negotiate_ms;               /* horovod's negotiation, ms per step per rank (mean) */
    int negotiate_valid;
    int coll_valid;
    double coll_pct, coll_ms; /* time in collectives, waits included: % of wall, ms per step (mean over ranks) */
    double desched_pct;       /* the ranks' time waiting for a core: % of their wall */
    int desched_valid;
    double lr; /* the learning rate at the last step (warm-up, decay and --scale-lr applied) */
    int lr_valid;
    /* --lr as given, and the peak rate training used (--scale-lr's: lr x
     * global batch / --base-batch; else --lr), after any warm-up; valid in
     * a live run (a trace does not say) */
    double lr_base, lr_peak;
    int lr_peak_valid;
    int threads_per_rank;
    double pred_ms; /* alpha-beta prediction of xfer_ms (summed over the run), from --bench-comm's fit */
    int pred_valid;
    double pred_r2; /* the fit of the collective that takes most of the predicted time */
    int pred_kind;  /* ... that collective (enum coll_kind) */
    /* no prediction: the first collective the run used that has no fit
     * (enum coll_kind; 0: none missing), and the fits' backend key */
    int pred_missing;
    char pred_backend[16];
    /* ... its largest relative error at a size it measured (< 0: not known) */
    double pred_err;
    /* --predict (a 1-rank run): the step at more ranks (src/predict.h) */
    struct scaling_pred {
        int ranks;
        int valid; /* 0: no link for this rank count (no fit, no --link) */
        double step_ms, comm_ms, exposed_ms, speedup, efficiency;
    } spred[CFG_MAX_PREDICT];
    int nspred;
    char spred_link[96];  /* where the link's cost came from */
    char spred_note[128]; /* why nothing was predicted, or "" */
    /* a PyTorch trace's run: its collectives matched across ranks (trace/
     * whatif.h; owned, result_free frees them) ... */
    struct whatif_table colls;
    /* ... and with --predict, the job at more ranks (result_job_predict,
     * src/predict.h's predict_job_step); rows at --predict-ranks */
    struct job_pred {
        int valid;      /* predicted: rows may still be n/a (no fit for that rank count) */
        int world;      /* the measured job's ranks W */
        double step_ms; /* measured: ms/step (ms_mean: the mean step, each at its slowest rank) */
        double compute_ms, comm_ms, exposed_ms, hidden_ms; /* measured, per step (ms) */
        double colls_per_step, bytes_per_step;             /* its collectives, and their bytes S */
        char sizes[160];                                   /* where S came from */
        char link[112];                                    /* where t_K came from */
        char note[160];                                    /* why nothing was predicted (how to get a fit), or "" */
        int nrows;
        struct scaling_pred rows[CFG_MAX_PREDICT]; /* speedup: samples/s against the measured job's */
    } job;
    /* --parallel model|pipeline (cfg.parallel): each rank's stage */
    int nstages;
    struct stage_result {
        int first, last; /* layers, inclusive */
        double live_mb;  /* activations (and gradients) its schedule keeps at once */
        double sent_mb;  /* activations and gradients sent per step (the loss's broadcast aside) */
        double compute_pct, idle_pct;
        /* what it holds, by kind (pipe_stage_memory), and their sum (bytes) */
        double mem_bytes[SMEM_KINDS], mem_total_bytes;
    } stage[64];
    int classes; /* of the data set: chance is a loss of ln(classes) */
    double train_loss, train_acc, test_acc;
    int train_valid, test_valid;
    /* The figures' series (--plot draws them, the JSON report gives them):
     * the running training loss (train_loss's) at up to RESULT_LOSS_POINTS
     * steps spread evenly over the steps kept, the last one included
     * (step: steps done when it was taken, from 1; over steps_per_epoch
     * above, epochs) ... */
    int nloss;
    struct loss_point {
        long step;
        float loss;
    } loss_curve[RESULT_LOSS_POINTS];
    /* ... and, for model and pipeline parallelism, the main lane of each
     * stage of replica 0 over the last step: its spans, in ms from the
     * step's first span on any stage (result_timeline) */
    long timeline_step; /* the step (from 0) */
    int ntimeline;
    struct timeline_span {
        int stage, cat; /* cat: enum cat */
        double t0_ms, t1_ms;
    } timeline[RESULT_TIMELINE_SPANS];
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
    /* --trace: the file this run's trace went to (a sweep's runs after the
     * first each have their own: t.run1.json ...; with --trace-split, rank
     * 0's), or "" */
    char trace_file[CFG_PATH + 64];
    const struct trace_rule *window; /* a PyTorch trace's replay or follow: the steps covered (--window) */
    /* HTA's kernel types over every rank (its table: the ranks' mixes
     * summed, each a share of their sum); valid when a rank's is */
    int64_t kernel_mix_ns[KERNEL_MIXES];
    double kernel_mix_pct[KERNEL_MIXES];
    int kernels_valid;
    /* the ranks' memory copies by kind, summed; valid when a rank's is */
    struct memcpy_table memcpy;
    int memcpy_valid;
    /* a rank's queue lengths are there (HTA's are per rank and stream) */
    int queue_valid;
    /* the ranks' launch statistics summed (no medians); valid when a rank's is */
    struct launch_table launch;
    int launch_valid;
    /* a rank's idle time per stream is there (HTA's is per rank and stream) */
    int idle_valid;
    /* a rank's memory timeline is there (it is per rank and device) */
    int memtl_valid;
    /* a rank's critical path was looked for (one per rank: its median step) */
    int critpath_valid;
    /* the run's late collectives (trace/straggler.h): a cross-rank table,
     * made once in replay; stragglers.valid 0 when none matched */
    struct straggler_table stragglers;
    int nranks; /* the ranks whose figures are here: a trace may hold fewer than the run's world */
    struct rank_result *ranks;
};

/* Samples per second of a batch at a step of ms milliseconds, 0 when ms is
 * not positive. Every samples/s the reports and the UI show is a batch
 * over a median step (ms_p50): the figure a speedup compares, so the two
 * never point apart (a mean step, which one slow step pulls, would). */
double samples_per_s_at(int batch, double ms);
/* Copies a finished (joined) run into res. */
int result_from_run(struct run_result *res, struct run *r);
/* Fills, on a zeroed res, what metrics m hold (steps, step times,
 * breakdowns, bytes, collectives, losses, accuracies), all marked valid.
 * local_batch: the samples of a rank's step (0: unknown); world: the run's
 * ranks, m->world or more (a trace may hold some of them). Returns -1 when
 * out of memory. */
int result_from_metrics(struct run_result *res, const struct metrics *m, int local_batch, int world);
/* --parallel model|pipeline: res's stage timeline (res->timeline) from the
 * spans m holds of its last step; res->cfg says the stages. */
void result_timeline(struct run_result *res, const struct metrics *m);
/* Derives the percentages of every rank and of the run from their
 * breakdowns (b), and the run's from the ranks'. One rule averages ranks,
 * here and in the UI: a share of time is the ranks' summed part over
 * their summed wall (a rank weighs by its wall time), and a time per step
 * is the mean of the ranks' (the two agree: ranks step together). */
void result_breakdowns(struct run_result *res);
/* The kernel breakdown's shares (trace/kernels.h): each rank's mixes of
 * their sum and each kernel row of its type's total, and the run's mixes,
 * the ranks' summed (HTA's table across ranks). */
void result_kernels(struct run_result *res);
/* The memory copies' rates: each rank's, and the run's from the ranks'
 * kinds summed (its bandwidth: all their bytes over all their time). */
void result_memcpy(struct run_result *res);
/* The queue lengths' mean and std of each rank's streams; queue_valid
 * when a rank has them. */
void result_queue(struct run_result *res);
/* The launch statistics' means: each rank's, and the run's from the
 * ranks' tables summed (counts, sums and most; a median is each rank's
 * alone). */
void result_launch(struct run_result *res);
/* The idle time shares of each rank's streams; idle_valid when a rank has
 * them. */
void result_idle(struct run_result *res);
/* memtl_valid when a rank's memory timeline is. */
void result_memtl(struct run_result *res);
/* --predict of a replayed or followed PyTorch job: res->job from res->colls
 * and its figures, at cfg's --predict-ranks, over cfg's --link or the
 * --bench-comm fits of the job's backend (src/predict.h). */
void result_job_predict(struct run_result *res, const struct run_config *cfg);
/* critpath_valid when a rank's critical path was looked for. */
void result_critpath(struct run_result *res);
/* Compute and collective seconds per epoch of steps_per_epoch steps, per
 * rank and for the run (epoch_valid 0 when steps_per_epoch is not known). */
void result_per_epoch(struct run_result *res, long steps_per_epoch);
void result_free(struct run_result *res);
/* SCALING_BASE: the run is its own baseline (a 1-rank run), in every
 * output alike */
enum scaling_kind { SCALING_NONE = 0, SCALING_STRONG, SCALING_WEAK, SCALING_OTHER, SCALING_BASE };
const char *scaling_name(int scaling);
/* The communicator a run's collectives went over ("none" for a 1-rank
 * run), as every table row and plot series names it. */
const char *result_comm(const struct run_result *r);

/* Fills every result's speedup, efficiency, base run and scaling, against
 * the run `baseline` picks (enum baseline_kind, or a run's index; see
 * config.h), from median step times. */
void results_compare(struct run_result *res, int n, int baseline);
/* Why run i's efficiency (results_compare) above 100% is no free lunch,
 * into buf: "efficiency 312% against run 1 is above 100%; likely cause:
 * ..." (the report's note, and the UI's). 1 when it is above, else 0. */
int result_efficiency_note(const struct run_result *res, int i, char *buf, size_t n);
/* results_compare with BASELINE_AUTO. */
void results_speedup(struct run_result *res, int n);
/* --repeat: keeps, of every `repeat` consecutive results (the runs of one
 * configuration), the one with the median samples/s, with the spread;
 * frees the others. Returns the number of results left. */
int results_collapse_repeats(struct run_result *res, int n, int repeat);

/* --parallel model|pipeline: each stage's figures (res->stage) from its
 * ranks' results (rank d x S + s is copy d of stage s, D = run_replicas of
 * res->cfg): rank i runs layers first[i] to last[i] and holds mem[i] (bytes
 * by kind, pipe_stage_memory). A rank with last < first (it failed before
 * it knew its stage) leaves no stages. */
void result_stages(struct run_result *res, int world, const int *first, const int *last,
                   const double (*mem)[SMEM_KINDS]);
/* Stages without --dp move their bytes in sends between stages, which have
 * no bus bandwidth (nccl-tests gives none) and no peers' collective to
 * match for a transfer time: busbw, xfer, sync and pred would be those of
 * the loss's few broadcast bytes alone, so they are n/a (the stage table
 * has the bytes, --predict the sends' time). */
void result_staged_sends(struct run_result *res);

int report_write(FILE *f, int format, const struct run_result *res, int n);
/* Where --output puts the report in `format`: the file itself for one
 * format, else the file with the format's extension added ("r" ->
 * "r.json"). "" for standard output. */
const char *report_path(char *buf, size_t n, const struct config *cfg, int format);
/* The report in each of --format's formats, where report_path says.
 * 0, or 1 when some could not be written (each said in one line). */
int report_save_all(const struct config *cfg, const struct run_result *res, int n);
/* The report where --output says (path; "" or NULL: standard output). A
 * file that cannot take it gets one line with the reason and the report goes
 * to standard output instead: nothing measured is lost. 0, or 1 when the
 * report is not where it was asked. */
int report_save(const char *path, int format, const struct run_result *res, int n);

#endif
