/* config.c - the command line, driven by one table of options.
 *
 * Each row of `opts` is one option: its name, the kind of value it takes,
 * the field of struct config the value goes to, its bounds or allowed
 * names, its default, and its --help group and text. getopt_long's table,
 * the parsing, the range checks, the one-line errors and --help are all made
 * from the rows, so an option is added with one row (and its field in
 * config.h).
 *
 * A kind (integer, number, choice, ...; config_kinds.c) is a parse
 * function and a describe function. describe puts into words what parse
 * accepts, from the row's bounds or names; the same words follow
 * "expected" in an error and stand in the option's --help line
 * (config_help.c), so the two cannot disagree with the parser. Defaults
 * are written as a user would type them and go through the same parser,
 * so a default is always in bounds and --help shows it as written.
 *
 * Every bad value gets one line naming the option and what is allowed; exit
 * status 2 is the caller's. Checks across options (--slow-rank against
 * --ranks, ...) come after the table walk, in config_parse.
 *
 * A row also says where the option applies: the modes that read it
 * (.reads, which every row must name), and where a mode reads it only in
 * some runs, a function that says why cfg's would not (.unused: without
 * --predict, with --device cpu, past the run's last step, ...). An option
 * given where nothing reads it is refused in one line, never ignored
 * without a word.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm.h"
#include "config_opt.h"
#include "cpu_isa.h"
#include "data.h"
#include "device.h"
#include "fmt_num.h"
#include "mode.h"
#include "pipeline.h"
#include "sync.h"
#include "trace_analyze.h"
#include "zoo.h"

/* ---- where an option applies (a row's .unused) ----------------------------- */

/* Some run of cfg's sweep trains by a way of --parallel with (any) or
 * without (!any) the flag. */
static int some_mode(const struct config *cfg, unsigned flag, int any)
{
    for (int p = 0; p < cfg->nparallels; p++)
        if (!(train_mode_of(cfg->parallels[p])->flags & flag) == !any)
            return 1;
    return 0;
}

static const char *needs_predict(const struct config *cfg, char *buf, size_t len)
{
    return cfg->base.predict ? NULL : "only with --predict";
}

static const char *needs_history(const struct config *cfg, char *buf, size_t len)
{
    return cfg->history[0] ? NULL : "only with --history";
}

static const char *needs_scale_lr(const struct config *cfg, char *buf, size_t len)
{
    return cfg->base.scale_lr ? NULL : "only with --scale-lr";
}

static const char *needs_trace(const struct config *cfg, char *buf, size_t len)
{
    return cfg->trace[0] ? NULL : "only with --trace FILE";
}

static const char *trace_steps_unused(const struct config *cfg, char *buf, size_t len)
{
    long steps = cfg->base.steps;
    if (!cfg->trace[0])
        return "only with --trace FILE";
    if (steps > 0 && cfg->trace_step_from >= steps) {
        snprintf(buf, len, "step %ld is past the run's last (--steps %ld runs steps 0 to %ld): nothing would be traced",
                 cfg->trace_step_from, steps, steps - 1);
        return buf;
    }
    return NULL;
}

static const char *in_ui(const struct config *cfg, char *buf, size_t len)
{
    return cfg->batch ? "only in the interactive UI, not with --batch" : NULL;
}

/* (--strategy: the stages of model and pipeline parallelism synchronise
 * no gradients by one) */
static const char *data_parallel_only(const struct config *cfg, char *buf, size_t len)
{
    return some_mode(cfg, MODE_STAGED, 0) ? NULL
                                          : "only with --parallel data: stages synchronise no gradients by a strategy";
}

static const char *pipeline_only(const struct config *cfg, char *buf, size_t len)
{
    for (int p = 0; p < cfg->nparallels; p++)
        if (cfg->parallels[p] == PAR_PIPELINE)
            return NULL;
    return "only with --parallel pipeline";
}

/* (CUPTI's timelines and cuDNN's algorithms: a GPU's) */
static const char *gpu_only(const struct config *cfg, char *buf, size_t len)
{
    return cfg->base.device == DEV_CPU ? "only on a GPU, and --device cpu has none" : NULL;
}

static const char *files_only(const struct config *cfg, char *buf, size_t len)
{
    return strcmp(cfg->base.dataset, "synthetic") == 0
               ? "not with --dataset synthetic, which makes its data (name the data set whose files are there: "
                 "--dataset fashion-mnist, mnist or cifar10)"
               : NULL;
}

/* --loss-scale's own default: dynamic under fp16 (run_loss_scale) */
static const char *dynamic_scaling_only(const struct config *cfg, char *buf, size_t len)
{
    const struct run_config *b = &cfg->base;
    int dynamic = b->loss_scale_set ? b->loss_scale == LOSS_SCALE_DYNAMIC : b->precision == PREC_FP16;
    return dynamic ? NULL : "only with dynamic loss scaling (--loss-scale dynamic, the default under --precision fp16)";
}

/* (--grad-compress, --check-replicas: a sweep of single alone has one
 * rank a run. The UI's `n` plans any strategy later, so without --batch
 * they stay; stages are run_check's to refuse.) */
static const char *not_single_alone(const struct config *cfg, char *buf, size_t len)
{
    if (!cfg->batch || some_mode(cfg, MODE_STAGED, 1))
        return NULL;
    for (int q = 0; q < cfg->nstrategies; q++)
        if (!sync_has(cfg->strategies[q], SYNC_ONE_RANK))
            return NULL;
    return "not with --strategy single alone: its one rank sends no gradients and has no replica to compare";
}

static const char *fault_in_run(const struct config *cfg, char *buf, size_t len)
{
    long steps = cfg->base.steps, at = cfg->base.fault.step;
    if (steps > 0 && at >= steps) {
        snprintf(buf, len,
                 "step %ld is past the run's last (--steps %ld runs steps 0 to %ld): the fault would never fire", at,
                 steps, steps - 1);
        return buf;
    }
    return NULL;
}

/* (--save-params: each run renames its file over the name) */
static const char *one_run_only(const struct config *cfg, char *buf, size_t len)
{
    long runs = (long)config_count(cfg) * cfg->repeat;
    if (runs <= 1)
        return NULL;
    snprintf(buf, len,
             "one file for the %ld runs of this sweep: each would write over the one before (save one run at "
             "a time)",
             runs);
    return buf;
}

/* ---- the table ------------------------------------------------------------ */

static const char *zoo_name(int i)
{
    return i < zoo_count ? zoo_models[i].name : NULL;
}

static const char *const device_names[] = {[DEV_AUTO] = "auto", [DEV_CPU] = "cpu", [DEV_CUDA] = "cuda", NULL};
static const char *const comm_names[] = {
    [COMM_SHM] = "shm", [COMM_NCCL] = "nccl", [COMM_MPI] = "mpi", [COMM_GLOO] = "gloo", NULL};
static const char *const algo_names[] = {[ALGO_RING] = "ring",
                                         [ALGO_NAIVE] = "naive",
                                         [ALGO_RING_CHUNKED] = "ring-chunked",
                                         [ALGO_HALVING_DOUBLING] = "halving-doubling",
                                         [ALGO_BCUBE] = "bcube",
                                         NULL};

const char *config_comm_name(int comm)
{
    return comm >= 0 && comm <= COMM_GLOO ? comm_names[comm] : "?";
}

const char *config_algo_name(int algo)
{
    return algo >= 0 && algo < ALGO_COUNT ? algo_names[algo] : "?";
}
static const char *const parallel_names[] = {
    [PAR_DATA] = "data", [PAR_MODEL] = "model", [PAR_PIPELINE] = "pipeline", NULL};
static const char *const schedule_names[] = {[SCHED_GPIPE] = "gpipe", [SCHED_1F1B] = "1f1b", NULL};
static const char *const format_names[] = {
    [FMT_TEXT] = "text", [FMT_CSV] = "csv", [FMT_JSON] = "json", [FMT_MD] = "md", NULL};
static const char *const grad_compress_names[] = {"none", "fp16", "bf16", NULL}; /* enum wire16 */
static const char *const precision_names[] = {
    [PREC_FP32] = "fp32", [PREC_TF32] = "tf32", [PREC_BF16] = "bf16", [PREC_FP16] = "fp16", NULL};
static const char *const cudnn_algo_names[] = {[CONV_ALGO_FIND] = "find", [CONV_ALGO_HEURISTIC] = "heuristic", NULL};
static const char *const loss_scale_names[] = {[LOSS_SCALE_NONE] = "none", [LOSS_SCALE_DYNAMIC] = "dynamic", NULL};

const char *precision_name(int p)
{
    return p >= 0 && p < PREC_COUNT ? precision_names[p] : "?";
}
static const char *const off_on_cosine[] = {"none", "cosine", NULL};

/* Where a value goes: a field that holds one value, or an array that holds
 * a comma list and the int that counts its entries. */
#define OFF(field) offsetof(struct config, field)
#define AT(field) .off = OFF(field), .size = sizeof(((struct config *)0)->field)
#define LIST(array, count)                                                                                             \
    .off = OFF(array), .size = sizeof(((struct config *)0)->array[0]),                                                 \
    .cap = (int)(sizeof(((struct config *)0)->array) / sizeof(((struct config *)0)->array[0])), .n_off = OFF(count)
/* A choice's names: an array indexed by value, or a function of the values lo..hi. */
#define NAMES(array) .names = array, .hi = INT_MAX
#define NAMED_BY(fn, lo_, hi_) .name_of = fn, .lo = lo_, .hi = hi_

/* One row per option: {KIND(...), further fields}. KIND names the kind; its
 * arguments are the option's name, where its value goes, the kind's bounds
 * or names, the argument as --help shows it, the default as typed on the
 * command line (NULL: none), and the --help group and text. Fields the
 * macro does not take (.def_text, .flags, ...) follow it in the row. */
#define OPT(name_, kind_, where, arg_, def_, group_, help_)                                                            \
    .name = name_, .kind = &kind_, where, .arg = arg_, .def = def_, .group = group_, .help = help_
#define FLAG(name_, where, value, group_, help_)                                                                       \
    .name = name_, .kind = &k_flag, where, .lo = value, .group = group_, .help = help_
/* (each macro spells out its fields: one macro handing `where` to another
 * would split it at its commas) */
#define INT(name_, where, lo_, hi_, arg_, def_, group_, help_)                                                         \
    .name = name_, .kind = &k_int, where, .lo = lo_, .hi = hi_, .arg = arg_, .def = def_, .group = group_, .help = help_
#define BYTES(name_, where, lo_, hi_, arg_, def_, group_, help_)                                                       \
    .name = name_, .kind = &k_bytes, where, .lo = lo_, .hi = hi_, .arg = arg_, .def = def_, .group = group_,           \
    .help = help_
#define REAL(name_, where, min_, max_, arg_, def_, group_, help_)                                                      \
    .name = name_, .kind = &k_real, where, .min = min_, .max = max_, .arg = arg_, .def = def_, .group = group_,        \
    .help = help_
#define TEXT(name_, where, what_, arg_, group_, help_)                                                                 \
    .name = name_, .kind = &k_text, where, .what = what_, .arg = arg_, .group = group_, .help = help_
#define CHOICE(name_, where, names_, what_, arg_, def_, group_, help_)                                                 \
    .name = name_, .kind = &k_choice, where, names_, .what = what_, .arg = arg_, .def = def_, .group = group_,         \
    .help = help_
#define NAME(name_, where, names_, what_, arg_, def_, group_, help_)                                                   \
    .name = name_, .kind = &k_name, where, names_, .what = what_, .arg = arg_, .def = def_, .group = group_,           \
    .help = help_

static const struct opt opts[] = {
    {FLAG("batch", AT(batch), 1, G_MODE, "headless: run, then print a report"), .reads = R_ALL},
    {FLAG("info", AT(mode), MODE_INFO, G_MODE, "print the model's layer table: shapes, parameters, FLOPs"),
     .reads = R_INFO},
    {TEXT("replay", AT(replay), "trace file", "FILE|DIR..", G_MODE,
          "show traces (ddptop's or PyTorch profiler's) instead of training: one or more files (FILE FILE.., "
          "FILE,FILE..), or a folder, every .json and .json.gz in it (PyTorch's *.pt.trace.json)"),
     .also_off = OFF(mode), .also = MODE_REPLAY, .reads = R_REPLAY},
    {TEXT("follow", AT(follow), "folder", "DIR", G_MODE,
          "follow a running PyTorch job: watch the folder its profiler writes into (tensorboard_trace_handler) and "
          "show each rank's latest cycle as it lands; the report at the end covers every cycle"),
     .also_off = OFF(mode), .also = MODE_FOLLOW, .reads = R_FOLLOW},
    {FLAG("bench-comm", AT(mode), MODE_BENCH_COMM, G_MODE, "benchmark collectives, nccl-tests style; options below"),
     .reads = R_BENCH},

    {NAME("model", LIST(models, nmodels), NAMED_BY(zoo_name, 0, INT_MAX), "model", "NAME", "lenet", G_WORK,
          "model to train, described under Models below"),
     .flags = F_DISTINCT, .reads = R_TRAIN | R_INFO},
    {NAME("dataset", AT(base.dataset), NAMES(data_names), "data set", "NAME", NULL, G_WORK, "data set"),
     .def_text = "fashion-mnist when " DATA_DEBIAN_FASHION_DIR " exists, else synthetic", .reads = R_TRAIN | R_INFO},
    {TEXT("data-dir", AT(base.data_dir), "directory", "DIR", G_WORK, "where the data set's files are"),
     .def_text = DATA_DEBIAN_FASHION_DIR " for fashion-mnist", .reads = R_TRAIN | R_INFO, .unused = files_only},
    {OPT("input", k_input, AT(base.input), "CxHxW", NULL, G_WORK,
         "synthetic data of this shape, e.g. 3x32x32 (CIFAR-10's)"),
     .lo = 1, .hi = DATA_MAX_CHANNELS, .min = DATA_MIN_SIDE, .max = DATA_MAX_SIDE, .def_text = "1x28x28",
     .reads = R_TRAIN | R_INFO},
    {INT("classes", AT(base.classes), 2, 100000, "N", NULL, G_WORK,
         "the model's outputs (its classifier's width); the data's labels stay its own, and must be fewer"),
     .def_text = "the data set's, 1000 at 224x224 and more (the ImageNet forms)", .reads = R_TRAIN | R_INFO},
    {INT("ranks", LIST(ranks, nranks), 1, MAX_RANKS, "N", "2", G_WORK,
         "training ranks (under mpirun: its processes, and not to be given otherwise)"),
     .also_off = OFF(ranks_set), .also = 1, .flags = F_DISTINCT, .reads = R_TRAIN | R_BENCH},
    {INT("ranks-per-process", AT(ranks_per_process), 1, MAX_RANKS, "T", "1", G_WORK,
         "under mpirun: rank threads in each process, joined by the shm ring inside a process and MPI between "
         "processes (mpirun -np P gives P x T ranks)"),
     .reads = R_TRAIN | R_BENCH},
    {.name = "rendezvous",
     .kind = &k_rendezvous,
     AT(rendezvous),
     .arg = "file:DIR|tcp:HOST:PORT",
     .group = G_WORK,
     .help =
         "processes started without mpirun meet in DIR, a folder each can reach that only this user can write "
         "(gloo's store is DIR too), or at HOST:PORT (IPv4), where process 0 listens (DDPTOP_JOB_KEY, the job's key, "
         "the same in every process: without it process 0 makes one and shows it): each is rank RANK of "
         "WORLD_SIZE, from its environment "
         "(as torchrun sets them), and trains "
         "over --comm gloo; process 0 shows the UI or the report",
     .def_text = "none",
     .flags = F_FIRST,
     .reads = R_TRAIN},
    {INT("batch-size", LIST(batches, nbatches), 1, CFG_MAX_BATCH, "B", "32", G_WORK, "samples per rank per step"),
     .flags = F_DISTINCT, .reads = R_TRAIN | R_INFO},
    {CHOICE("strategy", LIST(strategies, nstrategies), NAMED_BY(strategy_name, 0, SYNC_KINDS - 1), "strategy", "S",
            "allreduce", G_WORK,
            "how gradients are synchronised; single runs one rank on the whole global batch, ranks x batch"),
     .flags = F_DISTINCT, .reads = R_TRAIN, .unused = data_parallel_only},
    {CHOICE("parallel", LIST(parallels, nparallels), NAMES(parallel_names), "parallelism", "P", "data", G_WORK,
            "data: every rank a replica, gradients synchronised by --strategy; model: the layers split into one stage "
            "per rank, the batch through them in turn; pipeline: the same stages with --micro-batches in flight"),
     .flags = F_DISTINCT, .reads = R_TRAIN},
    {INT("micro-batches", LIST(micros, nmicros), 1, 4096, "M", "4", G_WORK,
         "--parallel pipeline: pieces of the batch in flight, gradients summed over them"),
     .flags = F_DISTINCT, .reads = R_TRAIN, .unused = pipeline_only},
    {CHOICE("schedule", AT(base.schedule), NAMES(schedule_names), "schedule", NULL, "1f1b", G_WORK,
            "--parallel pipeline: gpipe runs every forward, then every backward; 1f1b one backward per forward once "
            "the pipeline is full (fewer activations live)"),
     .reads = R_TRAIN, .unused = pipeline_only},
    {TEXT("partition", AT(base.partition), "partition", "A:B,...", G_WORK,
          "--parallel model|pipeline: stage s runs layers A to B (0-based, --info lists them; the last B may be left "
          "out: to the last layer)"),
     .def_text = "balanced over per-layer times measured on rank 0", .reads = R_TRAIN},
    {INT("dp", AT(base.dp), 1, MAX_RANKS, "D", "1", G_WORK,
         "--parallel model|pipeline: D replicas of the stages, each on its own shard of the data, a stage's gradients "
         "averaged over its D copies (--ranks D x stages; ranks 0 to S-1 are the first replica)"),
     .reads = R_TRAIN},
    {INT("epochs", AT(base.epochs), 1, 100000, "N", "1", G_WORK,
         "epochs; without it, --steps runs as many as it takes"),
     .also_off = OFF(base.epochs_set), .also = 1, .reads = R_TRAIN},
    {INT("steps", AT(base.steps), 1, LONG_MAX, "N", NULL, G_WORK, "stop after N steps in all"), .def_text = "no cap",
     .reads = R_TRAIN},
    {FLAG("no-eval", AT(base.eval), 0, G_WORK, "skip the test-split evaluation after each epoch"), .reads = R_TRAIN},
    {OPT("trainable", k_trainable, AT(base.trainable), "SPEC", "all", G_WORK,
         "the layers that train: classifier is the final linear layer, last:K the last K layers with parameters; the "
         "rest is frozen"),
     .lo = 1, .hi = 100000, .reads = R_TRAIN | R_INFO},

    {REAL("lr", AT(base.lr), 1e-12, 100.0, "X", "0.05", G_OPTIM, "learning rate"), .reads = R_TRAIN},
    {REAL("momentum", AT(base.momentum), 0.0, 0.9999, "X", "0.9", G_OPTIM, "momentum"), .reads = R_TRAIN},
    {REAL("weight-decay", AT(base.weight_decay), 0.0, 1.0, "X", "0", G_OPTIM, "L2 weight decay"), .reads = R_TRAIN},
    {INT("warmup-steps", AT(base.warmup_steps), 0, INT_MAX, "N", "0", G_OPTIM, "linear warm-up over N steps"),
     .reads = R_TRAIN},
    {CHOICE("lr-decay", AT(base.lr_cosine), NAMES(off_on_cosine), "schedule", NULL, "cosine", G_OPTIM,
            "cosine: decay the rate to 0 over the run"),
     .reads = R_TRAIN},
    {FLAG("scale-lr", AT(base.scale_lr), 1, G_OPTIM,
          "the linear scaling rule: train at --lr x the global batch / --base-batch (the peak rate, which "
          "--warmup-steps ramps up to)"),
     .reads = R_TRAIN},
    {INT("base-batch", AT(base.base_batch), 1, INT_MAX, "B", "256", G_OPTIM,
         "--scale-lr: the global batch --lr is meant for, the linear scaling rule's reference batch"),
     .reads = R_TRAIN, .unused = needs_scale_lr},
    {OPT("seed", k_u64, AT(base.seed), "N", "1", G_OPTIM, "seed for init, shuffling and synthetic data"),
     .reads = R_TRAIN | R_INFO},

    {CHOICE("device", AT(base.device), NAMES(device_names), "device", NULL, "auto", G_EXEC, "compute device"),
     .reads = R_TRAIN | R_INFO | R_BENCH},
    {INT("gpus", LIST(base.gpus, base.ngpus), 0, CFG_GPU_LIMIT - 1, "N", NULL, G_EXEC,
         "CUDA devices for the ranks, distinct; rank r runs on GPU list[r % n]"),
     .flags = F_DISTINCT | F_DIGITS, .def_text = "all", .reads = R_TRAIN | R_INFO | R_BENCH},
    {CHOICE("comm", LIST(comms, ncomms), NAMES(comm_names), "backend", "B", "shm", G_EXEC,
            "communication backend: shm (ddptop's ring among threads), gloo (PyTorch's CPU engine), mpi (under "
            "mpirun), nccl (GPUs); unless given, GPUs use nccl, or ddptop's device ring when ranks share a GPU"),
     .also_off = OFF(base.comm_set), .also = 1, .flags = F_DISTINCT, .reads = R_TRAIN | R_BENCH},
    {CHOICE("algo", AT(base.algo), NAMES(algo_names), "algorithm", NULL, "ring", G_EXEC,
            "allreduce algorithm: ring or naive on ddptop's own backends; ring, ring-chunked, halving-doubling or "
            "bcube on gloo"),
     .reads = R_TRAIN | R_BENCH},
    {INT("threads-per-rank", AT(base.threads_per_rank), 1, 1024, "N", NULL, G_EXEC, "compute threads per rank"),
     .def_text = "cores / the sweep's largest rank count, at least 1", .reads = R_TRAIN},
    {REAL("bucket-mb", AT(base.bucket_mb), 0.001, 4096.0, "X", "25", G_EXEC,
          "ddp bucket cap in MB; the first bucket is 1 MB"),
     .reads = R_TRAIN},
    {FLAG("no-overlap", AT(base.overlap), 0, G_EXEC, "ddp: run the buckets after backward instead of during it"),
     .reads = R_TRAIN},
    {REAL("fusion-mb", AT(base.fusion_mb), 0.001, 4096.0, "X", "64", G_EXEC,
          "horovod: fusion buffer cap in MB (HOROVOD_FUSION_THRESHOLD)"),
     .reads = R_TRAIN},
    {REAL("cycle-ms", AT(base.cycle_ms), 0.0, 10000.0, "X", "5", G_EXEC,
          "horovod: time between negotiations in ms (HOROVOD_CYCLE_TIME)"),
     .reads = R_TRAIN},
    {FLAG("no-broadcast-buffers", AT(base.broadcast_buffers), 0, G_EXEC,
          "keep each rank's batch norm running statistics its own"),
     .def_text = "rank 0's go to every rank before each step", .reads = R_TRAIN},
    {FLAG("no-cupti", AT(base.no_cupti), 1, G_EXEC,
          "GPU: no device timelines (host spans only; to measure what CUPTI costs)"),
     .reads = R_TRAIN, .unused = gpu_only},
    {INT("cupti-sample", AT(base.cupti_sample), 1, INT_MAX, "P", "50", G_EXEC,
         "GPU: trace the device for 3 steps in every P, and windows at least 0.2 s apart (1: every step); the "
         "other steps' split is scaled from the latest traced step, which keeps CUPTI's cost low on small "
         "models"),
     .reads = R_TRAIN, .unused = gpu_only},
    {CHOICE("grad-compress", AT(base.grad_compress), NAMES(grad_compress_names), "compression", NULL, NULL, G_EXEC,
            "send gradients as 16-bit fp16 or bf16 values (reduced in fp32), or not (none)"),
     .def_text = "the training precision under --precision bf16 or fp16 (allreduce, ddp, horovod; more than one rank), "
                 "else none",
     .also_off = OFF(base.grad_compress_set), .also = 1, .reads = R_TRAIN, .unused = not_single_alone},
    {CHOICE("precision", AT(base.precision), NAMES(precision_names), "precision", NULL, "fp32", G_EXEC,
            "arithmetic of convolutions and GEMMs: fp32 throughout; tf32 multiplies fp32 data on a GPU's tensor "
            "cores with a 10-bit mantissa (cuDNN's and cuBLAS's TF32 modes); bf16 multiplies bfloat16 inputs and "
            "weights, adding in fp32, with fp32 master weights (GPUs; CPUs with AVX512_BF16 or AMX); fp16 the "
            "same in IEEE half precision, with dynamic loss scaling (GPUs)"),
     .reads = R_TRAIN | R_INFO},
    {CHOICE("loss-scale", AT(base.loss_scale), NAMES(loss_scale_names), "loss scaling", NULL, NULL, G_EXEC,
            "dynamic scales the loss by S (2^16 at first) before backward and the gradients back by 1/S in the "
            "optimizer; a step whose gradients overflow is skipped and S halves, and S doubles after "
            "--loss-scale-interval good steps (PyTorch's GradScaler); none does not scale"),
     .def_text = "dynamic under --precision fp16, else none", .also_off = OFF(base.loss_scale_set), .also = 1,
     .reads = R_TRAIN},
    {INT("loss-scale-interval", AT(base.loss_scale_interval), 1, INT_MAX, "N", "2000", G_EXEC,
         "good steps before a dynamic loss scale doubles"),
     .reads = R_TRAIN, .unused = dynamic_scaling_only},
    {CHOICE("cudnn-algo", AT(base.cudnn_algo), NAMES(cudnn_algo_names), "algorithm choice", NULL, "find", G_EXEC,
            "GPU: find times every cuDNN convolution algorithm once per shape and keeps the fastest (PyTorch's "
            "cudnn.benchmark); heuristic takes cuDNN's guess without timing"),
     .reads = R_TRAIN | R_INFO, .unused = gpu_only},
    {OPT("slow-rank", k_slow_rank, AT(base.slow_rank), "R:F", NULL, G_EXEC,
         "make rank R's compute F times slower: a straggler"),
     .lo = 0, .hi = MAX_RANKS - 1, .min = 1.0, .max = 1000.0, .def_text = "none", .reads = R_TRAIN},
    {FLAG("check-replicas", AT(base.check_replicas), 1, G_EXEC,
          "hash every rank's parameters after each step and report the first step where replicas differ"),
     .reads = R_TRAIN, .unused = not_single_alone},
    {REAL("comm-timeout", AT(base.comm_timeout_s), 0.001, 86400.0, "SECONDS", "300", G_EXEC,
          "a collective waiting this long for a peer fails, naming the peer, and every rank stops; a run of one "
          "rank (no peer to wait) fails when it makes no step this long"),
     .reads = R_TRAIN},
    {OPT("inject-fault", k_fault, AT(base.fault), "SPEC", NULL, G_EXEC,
         "make rank R fail at step S, to see how the run ends: the loss turns NaN, the thread dies silently, it "
         "hangs, it computes 5x slower, it runs out of memory, its collective fails, or a gradient overflows "
         "to inf (a loss scaler skips that step)"),
     .lo = 0, .hi = MAX_RANKS - 1, .def_text = "none", .reads = R_TRAIN, .unused = fault_in_run},

    {CHOICE("format", LIST(formats, nformats), NAMES(format_names), "format", "F[,F..]", "text", G_REPORT,
            "report format; a comma list writes the one report in each, to --output FILE with the format's "
            "extension added (FILE.txt, FILE.csv, FILE.json, FILE.md)"),
     .reads = R_REPORT},
    {TEXT("output", AT(output), "file name", "FILE", G_REPORT, "write the report to FILE"), .def_text = "stdout",
     .flags = F_ONCE, .reads = R_REPORT},
    {TEXT("plot", AT(plot), "folder name", "DIR", G_REPORT,
          "write the report's figures into DIR as SVG: speedup against ranks, loss, the time split, a pipeline's "
          "stages (docs/plots.md)"),
     .def_text = "none", .flags = F_ONCE, .reads = R_SHOWN},
    {TEXT("save-params", AT(base.save_params), "file name", "FILE", G_REPORT,
          "at the end of a run, write rank 0's parameters to FILE as raw float32 (to compare runs)"),
     .flags = F_ONCE, .reads = R_TRAIN, .unused = one_run_only},
    {REAL("loss-threshold", AT(base.loss_threshold), 1e-12, 1e6, "X", NULL, G_REPORT,
          "report the first epoch/step where the running loss < X"),
     .def_text = "none", .reads = R_TRAIN},
    {FLAG("quiet", AT(quiet), 1, G_REPORT, "no progress line on stderr"), .reads = R_ALL},
    {REAL("idle-exit", AT(idle_exit_s), 0.01, 1e6, "S", NULL, G_REPORT,
          "--follow: report and leave once no trace has landed (nor grown) in the folder for S seconds"),
     .def_text = "follow until q or Ctrl-C", .reads = R_FOLLOW},
    {CHOICE("window", AT(window), NAMED_BY(trace_rule_name, 0, TRACE_RULES - 1), "window", NULL, "ddptop", G_REPORT,
            "--replay, --follow of PyTorch traces: the steps each rank's figures cover; ddptop leaves out each "
            "rank's first step, as ms/step does; hta gives HTA's temporal breakdown: the device work launched "
            "before each rank's last step starts, read as HTA reads it (docs/pytorch.md)"),
     .reads = R_REPLAY | R_FOLLOW},
    {INT("idle-delay-ns", AT(idle_delay_ns), 0, 1000000000000LL, "NS", "30000", G_REPORT,
         "--replay, --follow of PyTorch traces: an idle gap shorter than NS is kernel wait, in the idle split "
         "of every stream and of their union (HTA's consecutive_kernel_delay; its 30 on its microsecond timeline "
         "is 30000 ns), unless the host launched the op after the gap began (host wait)"),
     .reads = R_REPLAY | R_FOLLOW},
    {OPT("baseline", k_baseline, AT(baseline), "B", "auto", G_REPORT,
         "what a speedup is against: auto takes a 1-rank run on the same global batch (strong scaling), else on the "
         "same per-rank batch (weak scaling); single the single strategy on the same global batch; ranks1 one rank "
         "of the same strategy and per-rank batch; or a run by its number in the report"),
     .hi = 100000, .reads = R_TRAIN},
    {FLAG("predict", AT(base.predict), 1, G_REPORT,
          "a 1-rank run predicts the step time and speedup at --predict-ranks: data parallelism by any strategy but "
          "single, each rank with its batch; model and pipeline parallelism over that many stages, the same batch "
          "(README: Predicting more ranks); with --replay or --follow, the traced PyTorch job at more ranks from its "
          "own compute and collectives"),
     .reads = R_TRAIN | R_REPLAY | R_FOLLOW},
    {INT("predict-ranks", LIST(base.predict_ranks, base.npredict_ranks), 2, 1 << 20, "N", "2,4,8,16,64", G_REPORT,
         "rank counts to predict"),
     .reads = R_TRAIN | R_REPLAY | R_FOLLOW, .unused = needs_predict},
    {OPT("link", k_link, AT(base.link), "BW,LAT", NULL, G_REPORT,
         "--predict over this link, e.g. 100Gb/s,5us (a ring allreduce), instead of --bench-comm's fits"),
     .def_text = "the fits", .reads = R_TRAIN | R_REPLAY | R_FOLLOW, .unused = needs_predict},
    {INT("repeat", AT(repeat), 1, 1000, "N", "1", G_REPORT,
         "run each configuration N times; the report shows the median run and the spread"),
     .reads = R_TRAIN},
    {TEXT("history", AT(history), "file name", "FILE", G_REPORT,
          "write every step's loss, learning rate and time, and every epoch's test accuracy, per rank, as CSV"),
     .def_text = "none", .flags = F_ONCE, .reads = R_TRAIN},
    {INT("history-every", AT(history_every), 1, LONG_MAX, "K", "1", G_REPORT, "keep every K-th step in --history"),
     .reads = R_TRAIN, .unused = needs_history},

    {TEXT("theme", AT(theme), "theme name", "NAME", G_UI,
          "colour theme from the themes folder: default, light, high-contrast, monochrome"),
     .flags = F_BARE, .def_text = "default, or monochrome under NO_COLOR", .reads = R_SHOWN, .unused = in_ui},
    {INT("refresh-ms", AT(refresh_ms), 10, 10000, "N", "100", G_UI, "screen refresh period in milliseconds"),
     .reads = R_SHOWN, .unused = in_ui},

    /* the path leaves room for --trace-split's .rankN.json */
    {TEXT("trace", AT(trace), "file name", "FILE", G_TRACE, "write a trace; FILE ending in .gz is compressed"),
     .hi = CFG_PATH - 33, .flags = F_ONCE, .reads = R_TRAIN},
    {OPT("trace-steps", k_steps, AT(trace_step_from), "A:B", ":", G_TRACE, "record only steps A to B"), .lo = 0,
     .hi = LONG_MAX, .def_text = "all", .reads = R_TRAIN, .unused = trace_steps_unused},
    {OPT("trace-ranks", k_bits, AT(trace_ranks), "R[,R..]", NULL, G_TRACE, "record only these ranks"), .lo = 0,
     .hi = MAX_RANKS - 1, .def_text = "all", .reads = R_TRAIN, .unused = needs_trace},
    {FLAG("trace-split", AT(trace_split), 1, G_TRACE,
          "one file per rank: the rank goes before FILE's extension (t.json.gz becomes t.rankN.json.gz; t becomes "
          "t.rankN.json)"),
     .reads = R_TRAIN, .unused = needs_trace},

    {CHOICE("collective", AT(collective), NAMED_BY(coll_name, COLL_ALLREDUCE, COLL_BARRIER - 1), "collective", "NAME",
            "allreduce", G_BENCH, "the collective to time"),
     .flags = F_DASH, .reads = R_BENCH},
    {BYTES("min-bytes", AT(min_bytes), 4, 8LL << 30, "N[K|M|G]", "4K", G_BENCH, "smallest message"), .reads = R_BENCH},
    {BYTES("max-bytes", AT(max_bytes), 4, 8LL << 30, "N[K|M|G]", "64M", G_BENCH, "largest message"), .reads = R_BENCH},
    {INT("factor", AT(factor), 2, 1024, "F", "2", G_BENCH, "size multiplier between rows"), .reads = R_BENCH},
    {INT("iters", AT(iters), 1, 1000000, "N", "20", G_BENCH, "timed iterations per size"), .reads = R_BENCH},
    {INT("warmup", AT(warmup), 0, 1000000, "N", "5", G_BENCH, "warm-up iterations per size"), .reads = R_BENCH},

    {.name = "help", .short_name = 'h', .kind = &k_help, .group = G_HELP, .help = "this help", .reads = R_ALL},
    {.name = "version",
     .short_name = 'V',
     .kind = &k_version,
     .group = G_HELP,
     .help = "print the version",
     .reads = R_ALL},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
#define OPT_VAL0 256 /* getopt_long's value for opts[i] is OPT_VAL0 + i, or its short name */

_Static_assert(CFG_MAX_GPUS <= CFG_MAX_LIST, "a --gpus list is split like every other list");
_Static_assert(CFG_MAX_PREDICT <= CFG_MAX_LIST, "a --predict-ranks list is split like every other list");

/* ---- parsing ---------------------------------------------------------------- */

static int bad(FILE *err, const struct opt *o, const char *what, const char *got)
{
    fprintf(err, "ddptop: --%s: %s (got '%s')\n", o->name, what, got);
    return 2;
}

/* The one line for a value o's kind refused (list: a list of the wrong
 * shape, or with an entry twice where entries are distinct). */
static int bad_value(FILE *err, const struct opt *o, const char *got, int list)
{
    char allowed[512], line[640];
    if (o->kind->why)
        return bad(err, o, o->kind->why(o, got, line, sizeof(line)), got);
    o->kind->describe(o, allowed, sizeof(allowed));
    if (list)
        snprintf(line, sizeof(line), "expected 1 to %d%s comma-separated values, each %s", o->cap,
                 (o->flags & F_DISTINCT) ? " distinct" : "", allowed);
    else if (is_choice(o))
        snprintf(line, sizeof(line), "unknown %s; expected %s", o->what, allowed);
    else
        snprintf(line, sizeof(line), "expected %s", allowed);
    return bad(err, o, line, got);
}

/* Reads arg (a value, or a comma list of them) into o's field. Returns 0,
 * or 2 after the one line on err. */
static int opt_set(const struct opt *o, struct config *cfg, const char *arg, FILE *err)
{
    char *field = (char *)cfg + o->off;
    if (!o->cap)
        return o->kind->parse(o, cfg, field, arg) == 0 ? 0 : bad_value(err, o, arg, 0);

    char items[CFG_MAX_LIST][CFG_NAME];
    int n;
    if (split_list(arg, items, &n) != 0 || n > o->cap)
        return bad_value(err, o, arg, 1);
    for (int i = 0; i < n; i++) {
        char *entry = field + (size_t)i * o->size;
        memset(entry, 0, o->size); /* (a name shorter than the default's leaves no tail to compare) */
        if (o->kind->parse(o, cfg, entry, items[i]) != 0)
            return bad_value(err, o, items[i], 0);
        for (int j = 0; (o->flags & F_DISTINCT) && j < i; j++)
            if (!memcmp(field + (size_t)j * o->size, entry, o->size)) {
                char line[128];
                snprintf(line, sizeof(line), "%s is in the list twice; each value is one run of the sweep", items[i]);
                return bad(err, o, line, arg);
            }
    }
    *(int *)((char *)cfg + o->n_off) = n;
    return 0;
}

static int process_ranks; /* config_default_ranks: under mpirun, its process count */

void config_default_ranks(int n)
{
    process_ranks = n;
}

/* Every field to its default. Returns 0, or 2 when a row's default is not
 * a value its own parser takes (a mistake in the table, seen by every test). */
static int set_defaults(struct config *cfg, FILE *err)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];
        if (o->kind == &k_flag)
            *(int *)((char *)cfg + o->off) = !o->lo;
        else if (o->def && opt_set(o, cfg, o->def, err) != 0)
            return 2;
    }
    /* defaults no command-line value spells (and config_parse's rank
     * count under mpirun) */
    snprintf(cfg->base.dataset, sizeof(cfg->base.dataset), "%s", data_default_name());
    cfg->base.loss_threshold = -1.0;
    cfg->base.slow_rank = -1;
    cfg->base.slow_factor = 1.0;
    return 0;
}

/* The modes, as a row's .reads names them: the option that starts each
 * (training has none), and what a refusal there adds. */
static const struct {
    unsigned bit;
    const char *option;
    const char *why;
} mode_table[] = {
    {R_TRAIN, NULL, ""},
    {R_INFO, "info", ""},
    {R_REPLAY, "replay", " (the trace holds how the run went)"},
    {R_FOLLOW, "follow", " (the traces hold how the job runs)"},
    {R_BENCH, "bench-comm", ""},
};

static int opt_index(const char *name)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (opts[i].name && !strcmp(opts[i].name, name))
            return (int)i;
    return -1;
}

/* The table holds together: every row names the modes that read it, and
 * every option a strategy's entry reads (sync.h) is a row. 0, or 2 after
 * one line (a mistake in a table, seen by every test). */
static int check_tables(FILE *err)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (!(opts[i].reads & R_ALL)) {
            fprintf(err, "ddptop: --%s: its row in config.c names no mode that reads it (.reads)\n", opts[i].name);
            return 2;
        }
    for (size_t i = 0; i < NOPTS; i++)
        if ((opts[i].flags & F_FIRST) && opts[i].cap) {
            fprintf(err, "ddptop: --%s: a row read first holds one value, not a list (.flags)\n", opts[i].name);
            return 2;
        }
    for (int s = 0; s < SYNC_KINDS; s++)
        for (const char *const *o = sync_ops_of(s)->reads; *o; o++)
            if (opt_index(*o) < 0) {
                fprintf(err, "ddptop: --strategy %s reads --%s, which is no option (its entry's .reads)\n",
                        strategy_name(s), *o);
                return 2;
            }
    return 0;
}

/* One line and -1 for two modes, or an option given where nothing reads
 * it: a mode that does not (the row's .reads), or no run of cfg's (its
 * .unused; a strategy's own options, its entry's). */
static int unread(const struct config *cfg, const unsigned char *given, FILE *err)
{
    const struct opt *mode = NULL;
    for (size_t i = 0; i < NOPTS; i++) {
        if (!given[i] || opts[i].group != G_MODE || !strcmp(opts[i].name, "batch"))
            continue;
        if (mode) {
            fprintf(err, "ddptop: --%s and --%s: one mode at a time\n", mode->name, opts[i].name);
            return -1;
        }
        mode = &opts[i];
    }
    size_t m = 0; /* (training, without a mode's option) */
    while (mode && m + 1 < sizeof(mode_table) / sizeof(mode_table[0]) && !(mode_table[m].bit & mode->reads))
        m++;
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];
        if (!given[i] || o == mode || (o->reads & mode_table[m].bit))
            continue;
        if (mode) {
            fprintf(err, "ddptop: --%s: does not apply to --%s%s\n", o->name, mode->name, mode_table[m].why);
            return -1;
        }
        char said[128] = ""; /* every mode that reads it: "--replay or --follow" */
        for (size_t k = 1; k < sizeof(mode_table) / sizeof(mode_table[0]); k++)
            if (o->reads & mode_table[k].bit) {
                size_t at = strlen(said);
                snprintf(said + at, sizeof(said) - at, "%s--%s", at ? " or " : "", mode_table[k].option);
            }
        fprintf(err, "ddptop: --%s: only with %s\n", o->name, said);
        return -1;
    }
    char buf[256];
    for (size_t i = 0; i < NOPTS; i++) {
        const char *why = given[i] && opts[i].unused ? opts[i].unused(cfg, buf, sizeof(buf)) : NULL;
        if (why) {
            fprintf(err, "ddptop: --%s: %s\n", opts[i].name, why);
            return -1;
        }
    }
    /* a strategy's own options: read by a data-parallel run of it (the
     * UI's `n` plans any strategy later, so without --batch they stay) */
    for (int s = 0; cfg->mode == MODE_TRAIN && s < SYNC_KINDS; s++)
        for (const char *const *o = sync_ops_of(s)->reads; *o; o++) {
            int i = opt_index(*o), strat = 0;
            if (!given[i])
                continue;
            int par = some_mode(cfg, MODE_STAGED, 0);
            for (int q = 0; q < cfg->nstrategies; q++)
                strat |= cfg->strategies[q] == s;
            if (par && (strat || !cfg->batch))
                continue;
            if (!par)
                fprintf(err, "ddptop: --%s: only with --parallel %s\n", *o, parallel_name(PAR_DATA));
            else
                fprintf(err, "ddptop: --%s: only with --strategy %s, which no run of this sweep uses\n", *o,
                        strategy_name(s));
            return -1;
        }
    return 0;
}

/* The row of getopt_long's answer c, NULL for none. */
static const struct opt *row_of(int c, const struct option *long_opts)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (c == long_opts[i].val)
            return &opts[i];
    return NULL;
}

/* The rows read before the rest (F_FIRST), by the same walk: whichever
 * option is refused, the caller knows by then which process speaks (a
 * job's workers keep quiet: main.c). A value refused here is refused in
 * its turn, with its line, by the walk that reads every row. */
static void read_first(struct config *cfg, int argc, char **argv, const char *shorts, const struct option *long_opts)
{
    optind = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, long_opts, NULL)) != -1) {
        const struct opt *o = row_of(c, long_opts);
        if (o && (o->flags & F_FIRST))
            o->kind->parse(o, cfg, (char *)cfg + o->off, optarg);
    }
}

int config_parse(struct config *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    if (set_defaults(cfg, err) != 0 || check_tables(err) != 0)
        return 2;
    struct run_config *b = &cfg->base;

    struct option long_opts[NOPTS + 1];
    char shorts[NOPTS + 2] = ":"; /* ':' first: a missing value is told apart from an unknown option */
    size_t ns = 1;
    for (size_t i = 0; i < NOPTS; i++) {
        int val = opts[i].short_name ? opts[i].short_name : OPT_VAL0 + (int)i;
        long_opts[i] =
            (struct option){opts[i].name, opts[i].kind->takes_arg ? required_argument : no_argument, NULL, val};
        if (opts[i].short_name)
            shorts[ns++] = opts[i].short_name;
    }
    long_opts[NOPTS] = (struct option){0, 0, 0, 0};
    shorts[ns] = 0;
    read_first(cfg, argc, argv, shorts, long_opts);

    /* 0, not 1: glibc then starts afresh, even after a call that stopped
     * inside a group of short options */
    optind = 0;
    opterr = 0;
    int c;
    unsigned char given[NOPTS] = {0};
    while ((c = getopt_long(argc, argv, shorts, long_opts, NULL)) != -1) {
        if (c == ':') {
            fprintf(err, "ddptop: %s: missing value\n", argv[optind - 1]);
            return 2;
        }
        const struct opt *o = row_of(c, long_opts);
        if (!o) {
            fprintf(err, "ddptop: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
        if (o->kind == &k_help) {
            config_usage(out, opts, NOPTS);
            return 1;
        }
        if (o->kind == &k_version) {
            char cpu[200];
            cpu_isa_describe(cpu, sizeof(cpu));
            fprintf(out, "ddptop %s\ncpu: %s\n", DDPTOP_VERSION, cpu);
            return 1;
        }
        if ((o->flags & F_ONCE) && given[o - opts]) {
            fprintf(err, "ddptop: --%s: given twice ('%s', then '%s'): only the last would be written; give it once\n",
                    o->name, (char *)cfg + o->off, optarg);
            return 2;
        }
        if (opt_set(o, cfg, optarg, err) != 0)
            return 2;
        given[o - opts] = 1;
        if (o->also)
            *(int *)((char *)cfg + o->also_off) = o->also;
    }
    /* more traces for --replay (a shell glob: --replay DIR/FILE.json ...) */
    if (optind < argc && cfg->mode == MODE_REPLAY) {
        cfg->replay_more = argv + optind;
        cfg->nreplay_more = argc - optind;
        for (int i = optind; i < argc; i++)
            if (!argv[i][0]) {
                fprintf(err, "ddptop: --replay: an empty file name\n");
                return 2;
            }
    } else if (optind < argc) {
        fprintf(err, "ddptop: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    /* under mpirun the ranks are its processes times --ranks-per-process */
    if (process_ranks > 0 && !cfg->ranks_set) {
        cfg->ranks[0] = process_ranks * cfg->ranks_per_process;
        cfg->nranks = 1;
    }
    /* (--slow-rank's and --inject-fault's rank against every run's ranks:
     * run_check, which the UI's later plans go through too) */
    int staged = 0;
    for (int i = 0; i < cfg->nparallels; i++)
        staged |= train_mode_of(cfg->parallels[i])->flags & MODE_STAGED;
    if (b->partition[0] && !staged) {
        fprintf(err, "ddptop: --partition: only with --parallel model or pipeline\n");
        return 2;
    }
    if (b->input[0] && strcmp(b->dataset, "synthetic") != 0) {
        fprintf(err, "ddptop: --input: only with --dataset synthetic (%s has its own shape)\n", b->dataset);
        return 2;
    }
    if (b->ngpus > 0 && b->device == DEV_CPU) {
        fprintf(err, "ddptop: --gpus: not allowed with --device cpu\n");
        return 2;
    }
    if (unread(cfg, given, err) != 0)
        return 2;
    if (b->predict && cfg->mode == MODE_TRAIN) {
        int one = 0;
        for (int i = 0; i < cfg->nranks; i++)
            one |= cfg->ranks[i] == 1;
        if (!one && process_ranks > 0) {
            fprintf(err, "ddptop: --predict: a 1-rank run predicts more ranks: run it under mpirun -np 1\n");
            return 2;
        }
        if (!one) {
            fprintf(err,
                    "ddptop: --predict: a 1-rank run predicts more ranks, and --ranks has none (e.g. --ranks "
                    "1,%d)\n",
                    cfg->ranks[0]);
            return 2;
        }
    }
    /* (an output that is an input or another output: files.h, by main) */
    cfg->base.comm = cfg->comms[0]; /* (the first of a sweep's: one run's) */
    cfg->format = cfg->formats[0];
    for (int i = 0; i < cfg->nformats; i++)
        for (int j = 0; j < i; j++)
            if (cfg->formats[i] == cfg->formats[j]) {
                fprintf(err, "ddptop: --format: %s is given twice\n", format_names[cfg->formats[i]]);
                return 2;
            }
    if (cfg->nformats > 1 && (!cfg->output[0] || cfg->mode == MODE_BENCH_COMM)) {
        fprintf(err, "ddptop: --format: several formats %s\n",
                cfg->mode == MODE_BENCH_COMM ? "are for reports, not --bench-comm's tables"
                                             : "need --output FILE (each goes to FILE with its extension added)");
        return 2;
    }
    if (cfg->baseline >= config_count(cfg)) {
        fprintf(err, "ddptop: --baseline: there is no run %d (this sweep makes runs 0 to %d)\n", cfg->baseline,
                config_count(cfg) - 1);
        return 2;
    }
    if (cfg->min_bytes > cfg->max_bytes) {
        fprintf(err, "ddptop: --min-bytes: larger than --max-bytes\n");
        return 2;
    }
    return 0;
}
