/* config.c - command-line parsing and validation (getopt_long). Every bad
 * value gets one line naming the option and what is allowed; exit status 2
 * is the caller's. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "data.h"
#include "strategy.h"
#include "zoo.h"

#define MAX_RANKS 64

enum {
    OPT_HELP = 'h',
    OPT_VERSION = 'V',
    OPT_MODEL = 256,
    OPT_DATASET,
    OPT_DATA_DIR,
    OPT_RANKS,
    OPT_BATCH_SIZE,
    OPT_EPOCHS,
    OPT_STEPS,
    OPT_LR,
    OPT_MOMENTUM,
    OPT_WD,
    OPT_WARMUP,
    OPT_SCALE_LR,
    OPT_SEED,
    OPT_STRATEGY,
    OPT_COMM,
    OPT_ALGO,
    OPT_DEVICE,
    OPT_GPUS,
    OPT_BATCH,
    OPT_FORMAT,
    OPT_OUTPUT,
    OPT_LOSS_THRESHOLD,
    OPT_THREADS,
    OPT_NO_EVAL,
    OPT_BUCKET_MB,
    OPT_NO_OVERLAP,
    OPT_NO_CUPTI,
    OPT_NO_BROADCAST_BUFFERS,
    OPT_GRAD_COMPRESS,
    OPT_SLOW_RANK,
    OPT_QUIET,
    OPT_THEME,
    OPT_REFRESH,
    OPT_TRACE,
    OPT_TRACE_STEPS,
    OPT_TRACE_RANKS,
    OPT_TRACE_SPLIT,
    OPT_REPLAY,
    OPT_BENCH_COMM,
    OPT_COLLECTIVE,
    OPT_MIN_BYTES,
    OPT_MAX_BYTES,
    OPT_FACTOR,
    OPT_ITERS,
    OPT_WARMUP_ITERS,
    OPT_INFO,
    OPT_TRAINABLE,
    OPT_LR_DECAY,
    OPT_CHECK_REPLICAS,
};

static const struct option long_opts[] = {
    {"help", no_argument, 0, OPT_HELP},
    {"version", no_argument, 0, OPT_VERSION},
    {"model", required_argument, 0, OPT_MODEL},
    {"dataset", required_argument, 0, OPT_DATASET},
    {"data-dir", required_argument, 0, OPT_DATA_DIR},
    {"ranks", required_argument, 0, OPT_RANKS},
    {"batch-size", required_argument, 0, OPT_BATCH_SIZE},
    {"epochs", required_argument, 0, OPT_EPOCHS},
    {"steps", required_argument, 0, OPT_STEPS},
    {"lr", required_argument, 0, OPT_LR},
    {"momentum", required_argument, 0, OPT_MOMENTUM},
    {"weight-decay", required_argument, 0, OPT_WD},
    {"warmup-steps", required_argument, 0, OPT_WARMUP},
    {"scale-lr", no_argument, 0, OPT_SCALE_LR},
    {"seed", required_argument, 0, OPT_SEED},
    {"strategy", required_argument, 0, OPT_STRATEGY},
    {"comm", required_argument, 0, OPT_COMM},
    {"algo", required_argument, 0, OPT_ALGO},
    {"device", required_argument, 0, OPT_DEVICE},
    {"gpus", required_argument, 0, OPT_GPUS},
    {"batch", no_argument, 0, OPT_BATCH},
    {"format", required_argument, 0, OPT_FORMAT},
    {"output", required_argument, 0, OPT_OUTPUT},
    {"loss-threshold", required_argument, 0, OPT_LOSS_THRESHOLD},
    {"threads-per-rank", required_argument, 0, OPT_THREADS},
    {"no-eval", no_argument, 0, OPT_NO_EVAL},
    {"bucket-mb", required_argument, 0, OPT_BUCKET_MB},
    {"no-overlap", no_argument, 0, OPT_NO_OVERLAP},
    {"no-cupti", no_argument, 0, OPT_NO_CUPTI},
    {"no-broadcast-buffers", no_argument, 0, OPT_NO_BROADCAST_BUFFERS},
    {"grad-compress", required_argument, 0, OPT_GRAD_COMPRESS},
    {"slow-rank", required_argument, 0, OPT_SLOW_RANK},
    {"quiet", no_argument, 0, OPT_QUIET},
    {"theme", required_argument, 0, OPT_THEME},
    {"refresh-ms", required_argument, 0, OPT_REFRESH},
    {"trace", required_argument, 0, OPT_TRACE},
    {"trace-steps", required_argument, 0, OPT_TRACE_STEPS},
    {"trace-ranks", required_argument, 0, OPT_TRACE_RANKS},
    {"trace-split", no_argument, 0, OPT_TRACE_SPLIT},
    {"replay", required_argument, 0, OPT_REPLAY},
    {"bench-comm", no_argument, 0, OPT_BENCH_COMM},
    {"collective", required_argument, 0, OPT_COLLECTIVE},
    {"min-bytes", required_argument, 0, OPT_MIN_BYTES},
    {"max-bytes", required_argument, 0, OPT_MAX_BYTES},
    {"factor", required_argument, 0, OPT_FACTOR},
    {"iters", required_argument, 0, OPT_ITERS},
    {"warmup", required_argument, 0, OPT_WARMUP_ITERS},
    {"info", no_argument, 0, OPT_INFO},
    {"trainable", required_argument, 0, OPT_TRAINABLE},
    {"lr-decay", required_argument, 0, OPT_LR_DECAY},
    {"check-replicas", no_argument, 0, OPT_CHECK_REPLICAS},
    {0, 0, 0, 0},
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ddptop [OPTIONS]\n"
            "A terminal profiler for data-parallel training: trains a model on N ranks and shows\n"
            "where each rank's time goes (compute, communication, data, idle).\n"
            "\n"
            "Modes:\n"
            "  (default)                 the live curses UI when stdout is a terminal\n"
            "  --batch                   headless: run, then print a report\n"
            "\n"
            "Workload (comma lists in --model, --ranks, --batch-size, --strategy make a sweep):\n"
            "  --model NAME[,NAME..]     model to train (default lenet); see the list below\n"
            "  --dataset NAME            fashion-mnist, mnist, cifar10 or synthetic\n"
            "                            (default: fashion-mnist when %s exists, else synthetic)\n"
            "  --data-dir DIR            where the data set's files are\n"
            "  --ranks N[,N..]           training ranks (1-%d, default 2)\n"
            "  --batch-size B[,B..]      samples per rank per step (default 32)\n"
            "  --epochs N                epochs (default 1)\n"
            "  --steps N                 stop after N steps in all (default: no cap)\n"
            "  --strategy S[,S..]        single, dp, gather-scatter, allreduce, ddp (default allreduce);\n"
            "                            single is one rank on the whole global batch (ranks x batch)\n"
            "  --no-eval                 skip the test-split evaluation after each epoch\n"
            "\n"
            "Optimiser (SGD):\n"
            "  --lr X                    learning rate (default 0.05)\n"
            "  --momentum X              momentum (default 0.9)\n"
            "  --weight-decay X          L2 weight decay (default 0)\n"
            "  --warmup-steps N          linear warm-up over N steps (default 0)\n"
            "  --lr-decay cosine|none    decay the rate to 0 over the run (default cosine)\n"
            "  --scale-lr                linear scaling rule: lr x ranks\n"
            "  --seed N                  seed for init, shuffling and synthetic data (default 1)\n"
            "\n"
            "Execution:\n"
            "  --device cpu|cuda|auto    compute device (default auto)\n"
            "  --gpus N[,N..]            CUDA devices for the ranks, rank r on GPU list[r %% n] (default all)\n"
            "  --comm shm|nccl|mpi       communication backend (default shm; on GPUs nccl, or\n"
            "                            ddptop's device ring when ranks share a GPU)\n"
            "  --algo ring|naive         algorithm of ddptop's own backends (default ring)\n"
            "  --threads-per-rank N      compute threads per rank (default cores / ranks, at least 1)\n"
            "  --bucket-mb X             ddp bucket cap in MB (default 25; the first bucket is 1 MB)\n"
            "  --no-overlap              ddp: run the buckets after backward instead of during it\n"
            "  --no-broadcast-buffers    keep each rank's batch norm running statistics its own\n"
            "                            (default: rank 0's go to every rank before each step)\n"
            "  --no-cupti                GPU: no device timelines (host spans only; to measure\n"
            "                            what CUPTI costs)\n"
            "  --grad-compress fp16      send gradients as half precision\n"
            "  --slow-rank R:F           make rank R's compute F times slower (a straggler)\n"
            "  --check-replicas          hash every rank's parameters after each step and report\n"
            "                            the first step where replicas differ\n"
            "\n"
            "Report:\n"
            "  --format text|csv|json|md report format (default text)\n"
            "  --output FILE             write the report to FILE instead of stdout\n"
            "  --loss-threshold X        report the first epoch/step where the running loss < X\n"
            "  --quiet                   no progress line on stderr\n"
            "\n"
            "Interactive UI:\n"
            "  --theme NAME              colour theme from the themes folder (default, light,\n"
            "                            high-contrast, monochrome); NO_COLOR selects monochrome\n"
            "  --refresh-ms N            screen refresh period (default 100)\n"
            "\n"
            "Traces (Chrome trace-event JSON: Perfetto, chrome://tracing, speedscope):\n"
            "  --trace FILE              write a trace; FILE ending in .gz is compressed\n"
            "  --trace-steps A:B         record only steps A to B\n"
            "  --trace-ranks R[,R..]     record only these ranks\n"
            "  --trace-split             one file per rank (FILE becomes FILE.rankN.json)\n"
            "  --replay FILE             show a trace (ddptop's or PyTorch profiler's) instead of training\n"
            "\n"
            "Other modes:\n"
            "  --info                    print the model's layer table (shapes, parameters, FLOPs)\n"
            "  --trainable SPEC          all (default), classifier (the final linear layer) or last:K\n"
            "                            (the last K layers with parameters); the rest is frozen\n"
            "  --bench-comm              benchmark collectives, nccl-tests style; with\n"
            "    --collective NAME       allreduce (default), reduce_scatter, allgather, broadcast,\n"
            "                            reduce, gather, scatter\n"
            "    --min-bytes N[K|M|G]    smallest message (default 4K)\n"
            "    --max-bytes N[K|M|G]    largest message (default 64M)\n"
            "    --factor F              size multiplier between rows (default 2)\n"
            "    --iters N, --warmup N   timed and warm-up iterations per size (default 20, 5)\n"
            "  -h, --help                this help\n"
            "  -V, --version             version\n"
            "\n"
            "Models:\n",
            DATA_DEBIAN_FASHION_DIR, MAX_RANKS);
    zoo_print_help(out);
    fprintf(out, "\nExamples:\n"
                 "  ddptop --batch --model lenet --ranks 1,2 --strategy allreduce --epochs 1\n"
                 "  ddptop --batch --model mlp --ranks 2 --steps 200 --format json --output run.json\n");
}

static int bad(FILE *err, const char *opt, const char *what, const char *got)
{
    fprintf(err, "ddptop: --%s: %s (got '%s')\n", opt, what, got);
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A byte count with an optional K, M or G (binary) suffix. */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ULL << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1ULL << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1ULL << 30;
    else if (*end)
        return -1;
    if (*end && end[1] && !((end[1] == 'B' || end[1] == 'b') && !end[2]))
        return -1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

/* Splits a comma list into items; calls each(item) which returns 0 or -1. */
static int split_list(const char *s, char (*items)[CFG_NAME], int *n)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= CFG_NAME || *n >= CFG_MAX_LIST)
            return -1;
        memcpy(items[*n], p, len);
        items[*n][len] = 0;
        (*n)++;
        if (!c)
            return 0;
        p = c + 1;
    }
}

static int int_list(const char *s, long lo, long hi, int *vals, int *n)
{
    char items[CFG_MAX_LIST][CFG_NAME];
    if (split_list(s, items, n) != 0)
        return -1;
    for (int i = 0; i < *n; i++) {
        long v;
        if (parse_long(items[i], lo, hi, &v) != 0)
            return -1;
        vals[i] = (int)v;
    }
    return 0;
}

/* --gpus: 1 to CFG_MAX_GPUS distinct device indices in [0, CFG_GPU_LIMIT),
 * digits only. vals and n are written only when the whole list is good. */
static int gpu_list(const char *s, int *vals, int *n)
{
    char items[CFG_MAX_LIST][CFG_NAME];
    int v[CFG_MAX_LIST], k;
    if (split_list(s, items, &k) != 0 || k > CFG_MAX_GPUS)
        return -1;
    for (int i = 0; i < k; i++) {
        long x;
        if (strspn(items[i], "0123456789") != strlen(items[i]) || parse_long(items[i], 0, CFG_GPU_LIMIT - 1, &x) != 0)
            return -1;
        v[i] = (int)x;
        for (int j = 0; j < i; j++)
            if (v[j] == v[i])
                return -1;
    }
    memcpy(vals, v, sizeof(int) * (size_t)k);
    *n = k;
    return 0;
}

static int default_threads(int ranks)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = cores > 0 ? (int)(cores / (ranks > 0 ? ranks : 1)) : 1;
    return t > 0 ? t : 1;
}

int config_parse(struct config *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    memset(cfg, 0, sizeof(*cfg));
    struct run_config *b = &cfg->base;
    snprintf(b->dataset, sizeof(b->dataset), "%s", data_default_name());
    b->epochs = 1;
    b->lr = 0.05f;
    b->lr_cosine = 1;
    b->momentum = 0.9f;
    b->seed = 1;
    b->loss_threshold = -1.0;
    b->eval = 1;
    b->bucket_mb = 25.0f;
    b->overlap = 1;
    b->broadcast_buffers = 1;
    b->slow_rank = -1;
    b->slow_factor = 1.0;
    b->algo = ALGO_RING;
    snprintf(cfg->models[0], CFG_NAME, "lenet");
    cfg->nmodels = 1;
    cfg->ranks[0] = 2;
    cfg->nranks = 1;
    cfg->batches[0] = 32;
    cfg->nbatches = 1;
    cfg->strategies[0] = STRAT_ALLREDUCE;
    cfg->nstrategies = 1;
    cfg->refresh_ms = 100;
    cfg->trace_step_to = -1;
    cfg->collective = COLL_ALLREDUCE;
    cfg->min_bytes = 4096;
    cfg->max_bytes = 64ULL << 20;
    cfg->factor = 2;
    cfg->iters = 20;
    cfg->warmup = 5;
    snprintf(b->trainable, sizeof(b->trainable), "all");
    int threads_set = 0;

    optind = 1;
    opterr = 0;
    int c, idx;
    while ((c = getopt_long(argc, argv, ":hV", long_opts, &idx)) != -1) {
        const char *name = c >= 256 ? long_opts[idx].name : "";
        long lv;
        double dv;
        switch (c) {
        case OPT_HELP:
            usage(out);
            return 1;
        case OPT_VERSION:
            fprintf(out, "ddptop %s\n", DDPTOP_VERSION);
            return 1;
        case OPT_MODEL: {
            if (split_list(optarg, cfg->models, &cfg->nmodels) != 0)
                return bad(err, name, "expected a comma list of model names", optarg);
            for (int i = 0; i < cfg->nmodels; i++)
                if (!zoo_find(cfg->models[i])) {
                    char allowed[512] = "unknown model; one of:";
                    for (int k = 0; k < zoo_count; k++) {
                        strncat(allowed, " ", sizeof(allowed) - strlen(allowed) - 1);
                        strncat(allowed, zoo_models[k].name, sizeof(allowed) - strlen(allowed) - 1);
                    }
                    return bad(err, name, allowed, cfg->models[i]);
                }
            break;
        }
        case OPT_DATASET:
            if (!data_known(optarg))
                return bad(err, name, "one of fashion-mnist, mnist, cifar10, synthetic", optarg);
            snprintf(b->dataset, sizeof(b->dataset), "%s", optarg);
            break;
        case OPT_DATA_DIR:
            if (!*optarg || strlen(optarg) >= CFG_PATH)
                return bad(err, name, "expected a directory", optarg);
            snprintf(b->data_dir, sizeof(b->data_dir), "%s", optarg);
            break;
        case OPT_RANKS:
            if (int_list(optarg, 1, MAX_RANKS, cfg->ranks, &cfg->nranks) != 0)
                return bad(err, name, "expected integers from 1 to 64, comma-separated", optarg);
            break;
        case OPT_BATCH_SIZE:
            if (int_list(optarg, 1, 65536, cfg->batches, &cfg->nbatches) != 0)
                return bad(err, name, "expected positive integers up to 65536, comma-separated", optarg);
            break;
        case OPT_EPOCHS:
            if (parse_long(optarg, 1, 100000, &lv) != 0)
                return bad(err, name, "expected a positive integer", optarg);
            b->epochs = (int)lv;
            break;
        case OPT_STEPS:
            if (parse_long(optarg, 1, LONG_MAX, &lv) != 0)
                return bad(err, name, "expected a positive integer", optarg);
            b->steps = lv;
            break;
        case OPT_LR:
            if (parse_double(optarg, 1e-12, 100.0, &dv) != 0)
                return bad(err, name, "expected a number in (0, 100]", optarg);
            b->lr = (float)dv;
            break;
        case OPT_MOMENTUM:
            if (parse_double(optarg, 0.0, 0.9999, &dv) != 0)
                return bad(err, name, "expected a number in [0, 1)", optarg);
            b->momentum = (float)dv;
            break;
        case OPT_WD:
            if (parse_double(optarg, 0.0, 1.0, &dv) != 0)
                return bad(err, name, "expected a number in [0, 1]", optarg);
            b->weight_decay = (float)dv;
            break;
        case OPT_WARMUP:
            if (parse_long(optarg, 0, INT_MAX, &lv) != 0)
                return bad(err, name, "expected a non-negative integer", optarg);
            b->warmup_steps = (int)lv;
            break;
        case OPT_SCALE_LR:
            b->scale_lr = 1;
            break;
        case OPT_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return bad(err, name, "expected a non-negative integer", optarg);
            b->seed = v;
            break;
        }
        case OPT_STRATEGY: {
            char items[CFG_MAX_LIST][CFG_NAME];
            if (split_list(optarg, items, &cfg->nstrategies) != 0)
                return bad(err, name, "expected a comma list of strategies", optarg);
            for (int i = 0; i < cfg->nstrategies; i++) {
                int k = strategy_parse(items[i]);
                if (k < 0)
                    return bad(err, name, "one of single, dp, gather-scatter, allreduce, ddp", items[i]);
                cfg->strategies[i] = k;
            }
            break;
        }
        case OPT_COMM:
            if (!strcmp(optarg, "shm"))
                b->comm = COMM_SHM;
            else if (!strcmp(optarg, "nccl"))
                b->comm = COMM_NCCL;
            else if (!strcmp(optarg, "mpi"))
                b->comm = COMM_MPI;
            else
                return bad(err, name, "one of shm, nccl, mpi", optarg);
            b->comm_set = 1;
            break;
        case OPT_ALGO:
            if (!strcmp(optarg, "ring"))
                b->algo = ALGO_RING;
            else if (!strcmp(optarg, "naive"))
                b->algo = ALGO_NAIVE;
            else
                return bad(err, name, "one of ring, naive", optarg);
            break;
        case OPT_DEVICE:
            if (!strcmp(optarg, "cpu"))
                b->device = DEV_CPU;
            else if (!strcmp(optarg, "cuda"))
                b->device = DEV_CUDA;
            else if (!strcmp(optarg, "auto"))
                b->device = DEV_AUTO;
            else
                return bad(err, name, "one of cpu, cuda, auto", optarg);
            break;
        case OPT_GPUS:
            if (gpu_list(optarg, b->gpus, &b->ngpus) != 0)
                return bad(err, name, "expected up to 16 distinct GPU indices from 0 to 1023, comma-separated", optarg);
            break;
        case OPT_BATCH:
            cfg->batch = 1;
            break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "text"))
                cfg->format = FMT_TEXT;
            else if (!strcmp(optarg, "csv"))
                cfg->format = FMT_CSV;
            else if (!strcmp(optarg, "json"))
                cfg->format = FMT_JSON;
            else if (!strcmp(optarg, "md"))
                cfg->format = FMT_MD;
            else
                return bad(err, name, "one of text, csv, json, md", optarg);
            break;
        case OPT_OUTPUT:
            if (!*optarg || strlen(optarg) >= CFG_PATH)
                return bad(err, name, "expected a file name", optarg);
            snprintf(cfg->output, sizeof(cfg->output), "%s", optarg);
            break;
        case OPT_LOSS_THRESHOLD:
            if (parse_double(optarg, 1e-12, 1e6, &dv) != 0)
                return bad(err, name, "expected a positive number", optarg);
            b->loss_threshold = dv;
            break;
        case OPT_THREADS:
            if (parse_long(optarg, 1, 1024, &lv) != 0)
                return bad(err, name, "expected an integer from 1 to 1024", optarg);
            b->threads_per_rank = (int)lv;
            threads_set = 1;
            break;
        case OPT_NO_EVAL:
            b->eval = 0;
            break;
        case OPT_BUCKET_MB:
            if (parse_double(optarg, 0.001, 4096.0, &dv) != 0)
                return bad(err, name, "expected a number of megabytes in [0.001, 4096]", optarg);
            b->bucket_mb = (float)dv;
            break;
        case OPT_NO_CUPTI:
            b->no_cupti = 1;
            break;
        case OPT_NO_BROADCAST_BUFFERS:
            b->broadcast_buffers = 0;
            break;
        case OPT_NO_OVERLAP:
            b->overlap = 0;
            break;
        case OPT_GRAD_COMPRESS:
            if (!strcmp(optarg, "fp16"))
                b->grad_fp16 = 1;
            else if (!strcmp(optarg, "none"))
                b->grad_fp16 = 0;
            else
                return bad(err, name, "one of fp16, none", optarg);
            break;
        case OPT_SLOW_RANK: {
            char *colon = strchr(optarg, ':');
            char rbuf[32];
            if (!colon || (size_t)(colon - optarg) >= sizeof(rbuf))
                return bad(err, name, "expected RANK:FACTOR, e.g. 1:3", optarg);
            memcpy(rbuf, optarg, (size_t)(colon - optarg));
            rbuf[colon - optarg] = 0;
            if (parse_long(rbuf, 0, MAX_RANKS - 1, &lv) != 0 || parse_double(colon + 1, 1.0, 1000.0, &dv) != 0)
                return bad(err, name, "expected RANK:FACTOR with a rank from 0 and a factor from 1 to 1000", optarg);
            b->slow_rank = (int)lv;
            b->slow_factor = dv;
            break;
        }
        case OPT_QUIET:
            cfg->quiet = 1;
            break;
        case OPT_THEME:
            if (!*optarg || strlen(optarg) >= CFG_NAME || strchr(optarg, '/'))
                return bad(err, name, "expected a theme name", optarg);
            snprintf(cfg->theme, sizeof(cfg->theme), "%s", optarg);
            break;
        case OPT_REFRESH:
            if (parse_long(optarg, 10, 10000, &lv) != 0)
                return bad(err, name, "expected milliseconds from 10 to 10000", optarg);
            cfg->refresh_ms = (int)lv;
            break;
        case OPT_TRACE:
            if (!*optarg || strlen(optarg) >= CFG_PATH - 32)
                return bad(err, name, "expected a file name", optarg);
            snprintf(cfg->trace, sizeof(cfg->trace), "%s", optarg);
            break;
        case OPT_TRACE_STEPS: {
            long a = 0, z = -1;
            char *colon = strchr(optarg, ':');
            char abuf[32];
            if (!colon || (size_t)(colon - optarg) >= sizeof(abuf))
                return bad(err, name, "expected A:B (steps, from 0; B may be empty)", optarg);
            memcpy(abuf, optarg, (size_t)(colon - optarg));
            abuf[colon - optarg] = 0;
            if ((abuf[0] && parse_long(abuf, 0, LONG_MAX, &a) != 0) ||
                (colon[1] && parse_long(colon + 1, 0, LONG_MAX, &z) != 0) || (z >= 0 && z < a))
                return bad(err, name, "expected A:B with 0 <= A <= B", optarg);
            cfg->trace_step_from = a;
            cfg->trace_step_to = z;
            break;
        }
        case OPT_TRACE_RANKS: {
            int rl[CFG_MAX_LIST], nr;
            if (int_list(optarg, 0, MAX_RANKS - 1, rl, &nr) != 0)
                return bad(err, name, "expected rank numbers from 0, comma-separated", optarg);
            for (int i = 0; i < nr; i++)
                cfg->trace_ranks |= 1ULL << rl[i];
            break;
        }
        case OPT_TRACE_SPLIT:
            cfg->trace_split = 1;
            break;
        case OPT_REPLAY:
            if (!*optarg || strlen(optarg) >= CFG_PATH)
                return bad(err, name, "expected a trace file", optarg);
            snprintf(cfg->replay, sizeof(cfg->replay), "%s", optarg);
            cfg->mode = MODE_REPLAY;
            break;
        case OPT_BENCH_COMM:
            cfg->mode = MODE_BENCH_COMM;
            break;
        case OPT_COLLECTIVE: {
            int k = -1;
            for (int i = COLL_ALLREDUCE; i < COLL_BARRIER; i++)
                if (!strcmp(optarg, coll_name(i)) || (i == COLL_REDUCE_SCATTER && !strcmp(optarg, "reduce-scatter")))
                    k = i;
            if (k < 0)
                return bad(err, name, "one of allreduce, reduce_scatter, allgather, broadcast, reduce, gather, scatter",
                           optarg);
            cfg->collective = k;
            break;
        }
        case OPT_MIN_BYTES:
        case OPT_MAX_BYTES: {
            uint64_t v;
            if (parse_bytes(optarg, &v) != 0 || v < 4 || v > (8ULL << 30))
                return bad(err, name, "expected a size from 4 to 8G, with an optional K, M or G suffix", optarg);
            if (c == OPT_MIN_BYTES)
                cfg->min_bytes = v;
            else
                cfg->max_bytes = v;
            break;
        }
        case OPT_FACTOR:
            if (parse_long(optarg, 2, 1024, &lv) != 0)
                return bad(err, name, "expected an integer from 2 to 1024", optarg);
            cfg->factor = (int)lv;
            break;
        case OPT_ITERS:
            if (parse_long(optarg, 1, 1000000, &lv) != 0)
                return bad(err, name, "expected a positive integer", optarg);
            cfg->iters = (int)lv;
            break;
        case OPT_WARMUP_ITERS:
            if (parse_long(optarg, 0, 1000000, &lv) != 0)
                return bad(err, name, "expected a non-negative integer", optarg);
            cfg->warmup = (int)lv;
            break;
        case OPT_INFO:
            cfg->mode = MODE_INFO;
            break;
        case OPT_CHECK_REPLICAS:
            b->check_replicas = 1;
            break;
        case OPT_LR_DECAY:
            if (!strcmp(optarg, "cosine"))
                b->lr_cosine = 1;
            else if (!strcmp(optarg, "none"))
                b->lr_cosine = 0;
            else
                return bad(err, name, "one of cosine, none", optarg);
            break;
        case OPT_TRAINABLE: {
            long k;
            if (strcmp(optarg, "all") && strcmp(optarg, "classifier") &&
                (strncmp(optarg, "last:", 5) || parse_long(optarg + 5, 1, 100000, &k) != 0))
                return bad(err, name, "one of all, classifier, last:K (K >= 1)", optarg);
            snprintf(b->trainable, sizeof(b->trainable), "%s", optarg);
            break;
        }
        case ':':
            fprintf(err, "ddptop: %s: missing value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(err, "ddptop: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "ddptop: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (b->slow_rank >= 0)
        for (int i = 0; i < cfg->nranks; i++)
            if (b->slow_rank >= cfg->ranks[i]) {
                fprintf(err, "ddptop: --slow-rank: rank %d does not exist with --ranks %d\n", b->slow_rank,
                        cfg->ranks[i]);
                return 2;
            }
    if (b->ngpus > 0 && b->device == DEV_CPU) {
        fprintf(err, "ddptop: --gpus: not allowed with --device cpu\n");
        return 2;
    }
    if (cfg->min_bytes > cfg->max_bytes) {
        fprintf(err, "ddptop: --min-bytes: larger than --max-bytes\n");
        return 2;
    }
    if (!threads_set)
        b->threads_per_rank = 0; /* per run: cores / ranks */
    return 0;
}

int config_count(const struct config *cfg)
{
    return cfg->nmodels * cfg->nstrategies * cfg->nranks * cfg->nbatches;
}

void config_expand(const struct config *cfg, int i, struct run_config *rc)
{
    *rc = cfg->base;
    int b = i % cfg->nbatches;
    i /= cfg->nbatches;
    int r = i % cfg->nranks;
    i /= cfg->nranks;
    int s = i % cfg->nstrategies;
    i /= cfg->nstrategies;
    snprintf(rc->model, sizeof(rc->model), "%s", cfg->models[i % cfg->nmodels]);
    rc->strategy = cfg->strategies[s];
    rc->ranks = cfg->ranks[r];
    rc->batch_size = cfg->batches[b];
    if (!rc->threads_per_rank)
        rc->threads_per_rank = default_threads(run_world(rc));
}

int run_world(const struct run_config *rc)
{
    return rc->strategy == STRAT_SINGLE ? 1 : rc->ranks;
}

int run_global_batch(const struct run_config *rc)
{
    return rc->ranks * rc->batch_size;
}
