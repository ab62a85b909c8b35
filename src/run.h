/* run.h - one training run: launches N rank threads, owns their lifecycle
 * (pause, stop, failure), and is drained by a collector into metrics.
 *
 * The controlling thread (the UI, or the batch report loop) calls run_poll()
 * at its own pace; rank threads never block on it. A stop request or a
 * failed rank raises `abort`: every rank leaves at its next step boundary or
 * wait, within a bounded time, and what was measured so far stays in the
 * metrics.
 */
#ifndef DDPTOP_RUN_H
#define DDPTOP_RUN_H

#include <pthread.h>
#include <stdatomic.h>

#include "config.h"
#include "data.h"
#include "devices.h"
#include "metrics.h"
#include "pipeline.h"
#include "probe.h"
#include "world.h"

struct run;
struct model;
struct comm;

enum run_state { RUN_STARTING = 0, RUN_RUNNING, RUN_PAUSED, RUN_DONE, RUN_FAILED, RUN_STOPPED };
const char *run_state_name(int s);

struct rank {
    int id;
    struct run *run;
    pthread_t thread;
    int started;
    struct device dev;
    struct device_mem mem;       /* device memory it holds through dev (and its models' copies of dev) */
    struct spsc_ring spans_main; /* this rank's training thread */
    struct spsc_ring spans_comm; /* its comm lane */
    struct spsc_ring spans_gpu;  /* its device records (CUPTI; GPU runs only) */
    int gpu;                     /* CUDA device index, or -1 on the CPU */
    struct spsc_ring steps;      /* struct step_rec */
    struct spsc_ring epochs;     /* struct epoch_rec */
    _Atomic uint32_t step;       /* current global step */
    _Atomic int finished;        /* 1 when the thread has returned */
    _Atomic int evaluating;      /* 1 while it evaluates the test split (no steps then) */
    int rc;
    int given_up; /* a worker's rank whose process went silent or away (procs.c): rc is the relay's */
    char err[256];
    /* when it failed, on process 0's clock (0: it has not): of the ranks
     * that failed, the first in time is the run's failure, the others'
     * follow from it (a peer gone fails their collectives) */
    int64_t fail_ns;
    struct model *model; /* owned by the rank thread */
    struct comm *comm;
    struct comm *dp_comm; /* --dp: the copies of its stage, one a replica (their gradients' average) */
    /* floats, set by the rank at start; 0 before. Stored after `model`, so
     * they publish it to the collector too (run_rank_model). */
    _Atomic size_t nparams_total, nparams_trainable;
    int64_t flops_per_sample;
    /* --parallel model|pipeline, for the report (read after the run):
     * this rank's stage runs layers [stage_first, stage_end), in the
     * user's numbers (model_layer_num), and holds
     * stage_mem (pipe_stage_memory: bytes of each kind) */
    int stage_first, stage_end;
    double stage_mem[SMEM_KINDS];
    /* ranks as processes (procs.h): this process runs the rank's thread;
     * else process 0's relay fills its rings, and counts the records its
     * own process lost */
    int local;
    _Atomic uint64_t remote_dropped;
    char host[64];                      /* its process's host ("" when ranks are threads) */
    int64_t clock_add_ns, clock_err_ns; /* added to its timestamps to reach process 0's clock; the error bound */
    int clock_estimates;                /* of that offset, measured (the last is the one above); 0: same node, exact */
};

struct run {
    struct run_config cfg;
    const struct dataset *train, *test;
    const struct device_ops *devops;
    int world;       /* rank threads */
    int local_batch; /* samples per rank per step */
    int global_batch;
    int wire_scaled; /* the format gradients would travel in over more ranks (enum wire16, 0: fp32): --predict's */
    long steps_per_epoch;
    long total_steps;
    struct rank *ranks;
    struct world plan;   /* which process runs which rank on which device, and how they meet (world.h) */
    struct relay *relay; /* ranks are processes under mpirun (procs.h): their records' way to process 0; else NULL */
    int worker;          /* this process is not process 0: it reports nothing, and forwards its rank's records */
    int procs;           /* the ranks are processes (each rank's host and clock offset are set) */
    int on_gpu;          /* the device only enqueues work (CUDA) */
    const struct gpu_module *gpu; /* GPU runs: the module's communicators and timelines; else NULL */
    int cupti;                    /* CUPTI device timelines are being collected */
    int cupti_sample;             /* of every this many steps, CFG_CUPTI_WINDOW are traced */
    int64_t cupti_gap_ns;         /* ... and windows start at least this far apart */
    _Atomic uint32_t cupti_next;  /* the step the next window starts at (rank 0 sets it) */
    char backend[64];             /* the communication backend in use, for headers and reports */
    char note[192];               /* one remark about this run's setup (shared GPUs, no CUPTI), or "" */
    int64_t cupti_flushed_ns;     /* the collector's last CUPTI flush */
    int64_t cupti_overhead_ns;    /* CUPTI's buffer processing, over the run (set by run_join) */
    uint64_t cupti_dropped;       /* device records lost */
    _Atomic int abort;            /* stop now: Ctrl-C, a failed rank, the UI */
    _Atomic int paused;
    _Atomic uint32_t pause_at; /* ranks stop before starting this step */
    pthread_mutex_t pause_mu;
    pthread_cond_t pause_cv;
    int state; /* enum run_state, the collector's view */
    int64_t t_start_ns, t_end_ns;
    struct metrics metrics;
    int failed_rank;          /* -1 */
    int user_stop;            /* stopped (run_request_stop) before any rank failed */
    _Atomic int first_failed; /* the rank of this process whose thread failed first (-1): its peers' failures follow */
    char err[320];            /* first failure, with the rank */
    /* a run of one rank (no peer whose wait would time out): its step,
     * and when the collector last saw it change (run_poll) */
    uint32_t alone_step;
    int64_t alone_seen_ns;
};

/* What a rank training a model holds on the CPU, by its batch: each of
 * its model's buffers is a + s x batch bytes (measured by building the
 * model at batches 1 and 2), in cpu_alloc's whole pages;
 * the optimizer's state and the gradient buffers add `extra`, and the
 * batch's inputs `input` a sample twice. */
struct mem_need {
    size_t n;
    double *a, *s;
    double extra, input;
};
/* 0, or -1 when the model cannot be built (need is then empty). */
int run_memory_need(struct mem_need *need, const char *model, int c, int h, int w, int classes, uint64_t seed);
/* Bytes a rank holds at `batch`. */
double run_memory_at(const struct mem_need *need, long batch);
void run_memory_free(struct mem_need *need);
/* What run_start refuses in rc before it launches anything (a batch
 * larger than a rank's share of the data, a slow or faulty rank that does
 * not exist, compression a strategy cannot do, a backend this build or
 * device lacks, more memory than the machine has): 0, or -1 with err set.
 * The UI asks before it stops the current run for the next; run_start
 * makes the same checks, and keeps the world they plan (r->plan). */
int run_check(const struct run_config *rc, const struct dataset *train, const struct device_ops *devops, char *err,
              size_t errlen);
/* The part of run_check that needs no data set, for every mode that builds
 * a model (--info too): --precision must be implemented and suit the
 * device. 0, or -1 with err set. */
int run_check_precision(int precision, const struct device_ops *devops, char *err, size_t errlen);
/* The format gradients travel in (enum wire16, half.h), 0 for fp32:
 * --grad-compress where given, else the training precision's (bf16 or
 * fp16) for a strategy that compresses, over more than one rank (DDP's
 * bf16 and fp16 compression hooks by default), else none. */
int run_grad_compress(const struct run_config *rc);
/* The same as if the run had `world` ranks. */
int run_grad_compress_at(const struct run_config *rc, int world);
/* --cupti-sample P: where the window after the one that started at
 * `start` starts: P steps on, or, where P steps of step_ns take less than
 * gap_ns, as many steps on as take gap_ns (step_ns <= 0: not measured yet,
 * P steps). */
uint32_t run_cupti_next_window(uint32_t start, int P, int64_t step_ns, int64_t gap_ns);
/* enum loss_scale_mode: --loss-scale where given, else dynamic under
 * --precision fp16, else none. */
int run_loss_scale(const struct run_config *rc);
/* Rank i's model once the rank has built it, else NULL: for the collector
 * to read what stays fixed after the build (the layers' names) and what
 * the model publishes for other threads (model_layer_times). It lives
 * until run_free. */
const struct model *run_rank_model(const struct run *r, int i);
/* Prepares and launches the rank threads. */
int run_start(struct run *r, const struct run_config *rc, const struct dataset *train, const struct dataset *test,
              const struct device_ops *devops, char *err, size_t errlen);
/* Drains every ring into the metrics. Returns 1 while ranks are running. */
int run_poll(struct run *r);
/* Joins the threads (after they finished or abort was raised) and drains. */
int run_join(struct run *r);
void run_free(struct run *r);
void run_request_stop(struct run *r);
void run_set_paused(struct run *r, int paused);
/* Pauses the ranks before step `at` (a worker, as process 0 decided). */
void run_pause_at(struct run *r, uint32_t at);

/* A rank's rings, as a drain names them. */
enum rank_ring { RANK_RING_MAIN = 0, RANK_RING_COMM, RANK_RING_GPU, RANK_RINGS };
/* Where a drain's records go: the collector's metrics, or (a worker
 * under mpirun) the relay to process 0. */
struct drain_sink {
    void (*spans)(void *ctx, struct rank *k, int ring, struct span *s, size_t n); /* ring: enum rank_ring */
    void (*steps)(void *ctx, struct rank *k, struct step_rec *s, size_t n);
    void (*epochs)(void *ctx, struct rank *k, struct epoch_rec *e, size_t n);
    void *ctx;
};
/* Pops every record of rank k's rings into sink, in the order the
 * collector needs them: a step's spans before the step (the device ring
 * only where gpu is set). */
void run_drain(struct rank *k, int gpu, const struct drain_sink *sink);

/* The rank thread's body (rank.c). */
void *rank_main(void *arg);

#endif
