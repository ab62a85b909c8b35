/* config.h - everything the command line can say, validated.
 *
 * A config may describe a sweep: comma lists in --model, --ranks,
 * --batch-size and --strategy expand into one run per combination
 * (config_expand). A `struct run_config` is one such run.
 *
 * config.c parses the command line from its table of options (its rows'
 * parts in config_opt.h, the kinds of value in config_kinds.c, --help in
 * config_help.c); config_sweep.c expands a sweep into runs; run_config.c
 * answers what one run's configuration implies.
 */
#ifndef DDPTOP_CONFIG_H
#define DDPTOP_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CFG_MAX_LIST 16
#define CFG_MAX_RANKS 64    /* --ranks: at most */
#define CFG_MAX_BATCH 65536 /* --batch-size: at most, per rank */
#define CFG_MAX_GPUS 16     /* entries in --gpus */
#define CFG_GPU_LIMIT 1024  /* a --gpus entry is below this */
/* --cupti-sample P: windows of CFG_CUPTI_WINDOW steps are traced on the
 * device (the timeline's default view: its three newest steps whole), the
 * first at step 0, each next one P steps after the last's start or, where
 * P steps take less, CFG_CUPTI_GAP_MS after it (run_cupti_next_window) */
#define CFG_CUPTI_WINDOW 3
#define CFG_CUPTI_GAP_MS 200
#define CFG_NAME 32
#define CFG_PATH 1024

enum out_format { FMT_TEXT = 0, FMT_CSV, FMT_JSON, FMT_MD, FMT_COUNT };
enum device_choice { DEV_AUTO = 0, DEV_CPU, DEV_CUDA };
enum comm_backend { COMM_SHM = 0, COMM_NCCL, COMM_MPI, COMM_GLOO };
enum app_mode { MODE_TRAIN = 0, MODE_BENCH_COMM, MODE_INFO, MODE_REPLAY, MODE_FOLLOW };
/* --baseline: the run a speedup is against. AUTO: a 1-rank run with the same
 * global batch (strong scaling), else with the same per-rank batch (weak
 * scaling); SINGLE: the `single` strategy on the same global batch;
 * RANKS1: 1 rank of the same strategy and per-rank batch. */
enum baseline_kind { BASELINE_AUTO = -1, BASELINE_SINGLE = -2, BASELINE_RANKS1 = -3 };
/* --inject-fault kinds: the loss turns NaN, the rank thread dies without a
 * word to its peers, stops taking part in collectives, computes 5x slower,
 * runs out of memory, its next collective fails, or one of its gradients
 * overflows to inf for one step (what fp16 does; a loss scaler skips the
 * step). */
enum fault_kind {
    FAULT_NONE = 0,
    FAULT_NAN,
    FAULT_CRASH,
    FAULT_HANG,
    FAULT_SLOW,
    FAULT_OOM,
    FAULT_COMM_ERROR,
    FAULT_OVERFLOW,
    FAULT_KINDS
};
/* --loss-scale: none, or dynamic (GradScaler's: the loss is scaled by S
 * before backward, the gradients unscaled in the optimizer; a step whose
 * gradients are not finite is skipped and S halves; S doubles after
 * loss_scale_interval good steps). */
enum loss_scale_mode { LOSS_SCALE_NONE = 0, LOSS_SCALE_DYNAMIC };
#define CFG_LOSS_SCALE_INIT 65536.0f /* 2^16, as torch.cuda.amp.GradScaler */
const char *fault_name(int kind);
/* --comm's name for enum comm_backend, --algo's for enum comm_algo. */
const char *config_comm_name(int comm);
const char *config_algo_name(int algo);
/* --precision's name for enum precision (device.h): "fp32", "tf32", ... */
const char *precision_name(int p);

/* A fault injected into one rank from one step on (--inject-fault). */
struct fault {
    int kind; /* enum fault_kind */
    int rank;
    long step;
};

#define CFG_MAX_PREDICT 8 /* --predict-ranks entries */

/* --link BW,LAT: a link to predict over. */
struct link_opt {
    double bw;  /* bytes/s; 0: none given */
    double lat; /* s */
};

/* One run: a single combination of the sweep plus everything shared. */
struct run_config {
    char model[CFG_NAME];
    char dataset[CFG_NAME];
    char data_dir[CFG_PATH];
    int input[3]; /* --input C, H, W: the synthetic set's shape; {0}: its own (1x28x28) */
    int classes;  /* --classes: the model's outputs; 0: the data's (1000 at ImageNet sizes, zoo.h) */
    int ranks;
    int batch_size;      /* per rank */
    int strategy;        /* enum strategy_kind */
    int parallel;        /* enum parallel_kind (pipeline.h): data, or the layers split into stages */
    int micro_batches;   /* --parallel pipeline: pieces of a step's batch in flight */
    int schedule;        /* enum pipe_schedule */
    char partition[128]; /* --partition "A:B,C:D": layers per stage; "": balanced */
    int dp;              /* --dp: replicas of the stages, each on its own shard (1: none) */
    int epochs;
    int epochs_set; /* --epochs was given: --steps does not extend the run past it */
    long steps;     /* total step cap, 0 = none */
    float lr, momentum, weight_decay;
    int warmup_steps;
    int scale_lr;   /* the linear scaling rule: train at run_lr_peak */
    int base_batch; /* --base-batch: the global batch --lr is meant for */
    int lr_cosine;  /* cosine decay to 0 over the run */
    uint64_t seed;
    int comm;     /* enum comm_backend */
    int comm_set; /* --comm was given (on a GPU the default is NCCL where it can run) */
    int algo;     /* enum comm_algo */
    int device;   /* enum device_choice */
    /* --gpus: CUDA device indices, distinct, each in [0, CFG_GPU_LIMIT);
     * rank r runs on gpus[r % ngpus]. ngpus 0: not given, use GPUs
     * 0..count-1. */
    int gpus[CFG_MAX_GPUS];
    int ngpus;
    int threads_per_rank;
    double loss_threshold; /* < 0: none */
    int eval;              /* evaluate on the test split each epoch */
    float bucket_mb;
    int overlap;                        /* ddp: overlap buckets with backward */
    float fusion_mb;                    /* horovod: fusion buffer cap */
    float cycle_ms;                     /* horovod: time between negotiations */
    int predict;                        /* --predict: a 1-rank run predicts more ranks */
    int predict_ranks[CFG_MAX_PREDICT]; /* --predict-ranks */
    int npredict_ranks;
    struct link_opt link;  /* --link (bw 0: use --bench-comm's fits) */
    int no_cupti;          /* GPU: collect no device timelines */
    int cupti_sample;      /* GPU: device records for CFG_CUPTI_WINDOW steps in every cupti_sample (1: all) */
    int broadcast_buffers; /* batch norm running statistics from rank 0 before each step (DDP's default) */
    /* enum wire16 (half.h), 0: none; unless grad_compress_set, the
     * training precision's (run_grad_compress) */
    int grad_compress, grad_compress_set;
    int precision;  /* enum precision (device.h) */
    int cudnn_algo; /* enum conv_algo_choice (device.h) */
    /* enum loss_scale_mode; unless loss_scale_set, dynamic under fp16
     * (run_loss_scale) */
    int loss_scale, loss_scale_set;
    int loss_scale_interval; /* good steps before the scale doubles */
    int slow_rank;           /* -1: none */
    double slow_factor;
    int check_replicas;         /* hash the parameters after every step and compare ranks */
    struct fault fault;         /* kind FAULT_NONE: none */
    double comm_timeout_s;      /* a wait on a peer this long fails, naming it (one rank: no step this long) */
    char trainable[CFG_NAME];   /* all | classifier | last:K: the rest is frozen */
    char save_params[CFG_PATH]; /* --save-params FILE: rank 0's parameters at the end ("" = none) */
};

/* --rendezvous, read once: where processes started without mpirun meet. */
/* (RDV_REFUSED: given, and config_parse refused it: the job's processes
 * keep quiet about it as about any other option, procs_speaks) */
enum rendezvous_kind { RDV_NONE = 0, RDV_FILE, RDV_TCP, RDV_REFUSED };
struct rendezvous {
    int kind;              /* enum rendezvous_kind; RDV_NONE: not given */
    char spec[CFG_PATH];   /* as given ("file:DIR", "tcp:HOST:PORT"), for messages */
    char folder[CFG_PATH]; /* RDV_FILE: DIR, the meeting's folder and gloo's store */
    char host[256];        /* RDV_TCP: process 0's host (a name or an IPv4 address) */
    int port;              /* RDV_TCP: 1 to 65535 */
};

struct config {
    struct run_config base; /* values shared by every run */
    char models[CFG_MAX_LIST][CFG_NAME];
    int nmodels;
    int ranks[CFG_MAX_LIST];
    int nranks;
    int ranks_set;                /* --ranks was given */
    int ranks_per_process;        /* under mpirun: rank threads in each process */
    struct rendezvous rendezvous; /* --rendezvous: processes started without mpirun */
    int batches[CFG_MAX_LIST];
    int nbatches;
    int strategies[CFG_MAX_LIST];
    int nstrategies;
    int parallels[CFG_MAX_LIST]; /* --parallel: data takes every --strategy, pipeline every --micro-batches */
    int nparallels;
    int micros[CFG_MAX_LIST];
    int nmicros;
    int comms[CFG_MAX_LIST]; /* --comm (enum comm_backend): a sweep's, or --bench-comm's tables */
    int ncomms;
    int mode;               /* enum app_mode */
    int batch;              /* --batch: no UI */
    int formats[FMT_COUNT]; /* --format: each goes to its own file (report_save_all) */
    int nformats;
    int format; /* enum out_format: the first of formats */
    char output[CFG_PATH];
    char plot[CFG_PATH];    /* --plot DIR ("" = none): the report's figures as SVG files */
    int quiet;              /* no progress line */
    int baseline;           /* what speedups are against: BASELINE_* (< 0), or a run's index (>= 0) */
    int repeat;             /* runs of each configuration; the report shows the median one and the spread */
    char history[CFG_PATH]; /* --history FILE.csv ("" = none) */
    long history_every;     /* keep every k-th step in it */
    /* interactive UI */
    char theme[CFG_NAME]; /* "" = default (or monochrome under NO_COLOR) */
    int refresh_ms;
    /* traces */
    char trace[CFG_PATH];                /* --trace FILE ("" = none); .json or .json.gz */
    long trace_step_from, trace_step_to; /* --trace-steps A:B, inclusive; to < 0 = open */
    uint64_t trace_ranks;                /* bit mask; 0 = all */
    int trace_split;                     /* one file per rank */
    char replay[CFG_PATH];               /* --replay FILE|DIR[,...] */
    char **replay_more;                  /* the arguments after the options (more traces: a glob), in argv */
    int nreplay_more;
    char follow[CFG_PATH]; /* --follow DIR: the folder a PyTorch profiler writes into */
    double idle_exit_s;    /* --idle-exit S: --follow stops once nothing landed for S seconds; 0: never */
    int window;            /* --window: a PyTorch trace's steps, an index into trace_rules (trace_analyze.h) */
    long idle_delay_ns;    /* --idle-delay-ns: both idle splits' kernel-wait threshold (trace_gap_cat) */
    /* --bench-comm */
    int collective; /* enum coll_kind */
    uint64_t min_bytes, max_bytes;
    int factor;
    int iters, warmup;
};

/* Parses argv. Returns 0 to go on, 1 when --help or --version was handled
 * (printed to out), 2 on a usage error (one line already printed to err).
 * cfg->rendezvous is read first, so it holds even after a 2 (a value of
 * its own refused: RDV_REFUSED), for the caller to know who speaks. */
int config_parse(struct config *cfg, int argc, char **argv, FILE *out, FILE *err);
/* The rank count when --ranks is not given (under mpirun: its processes),
 * so that --slow-rank and --inject-fault are checked against it. */
void config_default_ranks(int n);
/* The cores this process may run on: its affinity mask (taskset, a
 * container's cpuset, mpirun's or srun's binding), else the online ones. */
long config_cores(void);
/* Number of runs in the sweep, and the i-th of them (config_sweep.c). */
int config_count(const struct config *cfg);
void config_expand(const struct config *cfg, int i, struct run_config *rc);
/* ---- what one run's configuration implies (run_config.c) ---- */

/* The global batch of one run. `single` runs one rank on the whole batch. */
int run_global_batch(const struct run_config *rc);
/* The replicas that each train on a shard of the data, with a batch of
 * the global one over them: every rank in data parallelism (one for
 * single), --dp's for stages. */
int run_replicas(const struct run_config *rc);
/* Stages in one replica: the ranks over --dp (1 in data parallelism). */
int run_stages(const struct run_config *rc);
/* Stages without --dp: every byte goes in sends between stages, which have
 * no bus bandwidth and no collective to time across ranks. */
int run_sends_only(const struct run_config *rc);
int run_world(const struct run_config *rc);
struct sync_params;
/* The strategy's own options as its engine and its --predict term take
 * them (sync.h). */
struct sync_params run_sync_params(const struct run_config *rc);
/* The rate training steps with once any warm-up is over (before any
 * decay): --lr, or under --scale-lr the linear scaling rule's --lr x the
 * global batch / --base-batch. */
double run_lr_peak(const struct run_config *rc);
/* The model's outputs on h x w inputs of a set with data_classes labels:
 * --classes, else the data's, or 1000 at the ImageNet forms' sizes. */
int run_classes(const struct run_config *rc, int h, int w, int data_classes);

#endif
