/* run.c - launching, pausing, stopping and joining the rank threads, and
 * draining their rings into the metrics. */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "half.h"
#include "kernels_cpu.h"
#include "mode.h"
#include "model.h"
#include "nvtx.h"
#include "pipeline.h"
#include "probe.h"
#include "procs.h"
#include "sync.h"
#include "world.h"
#include "zoo.h"

#define SPAN_RING (1u << 16)
#define STEP_RING (1u << 14)
#define EPOCH_RING 64u

const char *run_state_name(int s)
{
    static const char *names[] = {"starting", "running", "paused", "done", "failed", "stopped"};
    return s >= 0 && s <= RUN_STOPPED ? names[s] : "?";
}

int run_grad_compress_at(const struct run_config *rc, int world)
{
    int staged = train_mode_has(rc, MODE_STAGED);
    if (sync_has(rc->strategy, SYNC_ONE_RANK) && !staged)
        return 0; /* (it sends no gradients: a sweep's --grad-compress is not its) */
    if (rc->grad_compress_set)
        return rc->grad_compress;
    if (world < 2 || staged || !sync_has(rc->strategy, SYNC_COMPRESSES))
        return 0;
    return rc->precision == PREC_BF16 ? W16_BF16 : rc->precision == PREC_FP16 ? W16_FP16 : 0;
}

int run_grad_compress(const struct run_config *rc)
{
    return run_grad_compress_at(rc, run_world(rc));
}

int run_loss_scale(const struct run_config *rc)
{
    if (rc->loss_scale_set)
        return rc->loss_scale;
    return rc->precision == PREC_FP16 ? LOSS_SCALE_DYNAMIC : LOSS_SCALE_NONE;
}

int run_check_precision(int precision, const struct device_ops *devops, char *err, size_t errlen)
{
    int gpu = device_is_gpu(devops);
    if (precision == PREC_TF32 && !gpu) {
        snprintf(err, errlen, "--precision tf32: needs a GPU (--device cuda); the CPU has no TF32");
        return -1;
    }
    if (precision == PREC_FP16 && !gpu) {
        snprintf(err, errlen,
                 "--precision fp16: needs a GPU (--device cuda); the CPU has no fp16 arithmetic "
                 "(bf16 is the CPU's mixed precision)");
        return -1;
    }
    if (precision == PREC_BF16 && !gpu && !cpu_have_dnnl()) {
        snprintf(err, errlen, "--precision bf16: needs oneDNN, and this ddptop was built without it");
        return -1;
    }
    if (precision == PREC_BF16 && !gpu && !cpu_bf16_native()) {
        snprintf(err, errlen,
                 "--precision bf16: this processor has no bfloat16 instructions (AVX512_BF16 or AMX), and "
                 "emulated bf16 would profile slower than fp32");
        return -1;
    }
    return 0;
}

/* Memory the machine has for new work: MemAvailable in /proc/meminfo (or
 * DDPTOP_MEM_AVAILABLE_MB, which tests set to stand for a smaller
 * machine). 0: not known. */
static int64_t mem_available(void)
{
    const char *o = getenv("DDPTOP_MEM_AVAILABLE_MB");
    if (o && o[0])
        return (int64_t)atoll(o) * 1024 * 1024;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[128];
    long long kb = 0;
    while (fgets(line, sizeof(line), f) && sscanf(line, "MemAvailable: %lld kB", &kb) != 1)
        ;
    fclose(f);
    return (int64_t)kb * 1024;
}

/* "1.5 GB", "40 MB" (binary units, as /proc/meminfo's). */
static void mem_size(char *buf, size_t n, double bytes)
{
    if (bytes >= 1024.0 * 1024 * 1024)
        snprintf(buf, n, "%.1f GB", bytes / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, n, "%.0f MB", bytes / (1024.0 * 1024));
}

/* Leaves this much of what is available to the rest of the machine. */
#define MEM_KEEP 0.9

int run_memory_need(struct mem_need *need, const char *model, int c, int h, int w, int classes, uint64_t seed)
{
    enum { LOG = 1 << 16 };
    memset(need, 0, sizeof(*need));
    struct device_mem mem[2] = {{0}, {0}};
    size_t trainable = 0;
    int ok = 1;
    for (int b = 1; b <= 2 && ok; b++) {
        struct device_mem *k = &mem[b - 1];
        k->sizes = malloc(LOG * sizeof(size_t));
        k->cap_sizes = k->sizes ? LOG : 0;
        struct device cpu = {.ops = &device_cpu, .mem = k};
        char err[256];
        struct model *m = k->sizes && cpu.ops->open(&cpu, 0) == 0
                              ? zoo_create(&cpu, model, b, c, h, w, classes, seed, err, sizeof(err))
                              : NULL;
        if (m) {
            trainable = model_trainable_floats(m);
            model_destroy(m);
        }
        cpu.ops->close(&cpu);
        ok = m && k->nsizes < LOG;
    }
    /* the same buffers in the same order at both batches: each one's
     * bytes are a + s x batch */
    ok = ok && mem[0].nsizes == mem[1].nsizes;
    size_t n = ok ? mem[0].nsizes : 0;
    need->a = ok ? malloc((n ? n : 1) * sizeof(double)) : NULL;
    need->s = ok ? malloc((n ? n : 1) * sizeof(double)) : NULL;
    ok = ok && need->a && need->s;
    for (size_t i = 0; ok && i < n; i++) {
        need->s[i] = (double)mem[1].sizes[i] - (double)mem[0].sizes[i];
        need->a[i] = (double)mem[0].sizes[i] - need->s[i];
    }
    free(mem[0].sizes);
    free(mem[1].sizes);
    if (!ok) {
        run_memory_free(need);
        return -1;
    }
    need->n = n;
    need->extra = 2.0 * (double)trainable * sizeof(float); /* the optimizer's state, the gradient buffers */
    need->input = (double)c * h * w * sizeof(float);
    return 0;
}

double run_memory_at(const struct mem_need *need, long batch)
{
    double b = need->extra;
    for (size_t i = 0; i < need->n; i++) {
        double x = need->a[i] + need->s[i] * (double)batch;
        b += (double)cpu_alloc_size(x > 0 ? (size_t)x : 0);
    }
    /* the batch's inputs, twice (the host's and the model's) */
    return b + 2.0 * (double)cpu_alloc_size((size_t)(need->input * (double)batch));
}

void run_memory_free(struct mem_need *need)
{
    free(need->a);
    free(need->s);
    need->a = need->s = NULL;
    need->n = 0;
}

/* DDPTOP_MEM_CAP_MB: the most device memory each rank may hold (bytes),
 * 0 when unset; -1 with err when it is not a whole number of MiB. */
static int64_t mem_cap(char *err, size_t errlen)
{
    const char *v = getenv("DDPTOP_MEM_CAP_MB");
    if (!v || !v[0])
        return 0;
    char *end;
    errno = 0;
    long long mb = strtoll(v, &end, 10);
    if (*end || end == v || errno || mb < 1 || mb > (INT64_MAX >> 20)) {
        snprintf(err, errlen, "DDPTOP_MEM_CAP_MB: expected a whole number of MiB, 1 or more (got '%.40s')", v);
        return -1;
    }
    return (int64_t)mb << 20;
}

/* The memory the run's ranks share, before any rank makes its buffers.
 * The CPU's: they are zeroed as they are made, so a run too large for the
 * machine would not fail but be killed by the kernel, taking what was
 * measured with it; every rank of this process holds run_memory_need's.
 * A GPU's: the one with the least free of those the ranks use, and the
 * ranks on it (ranks take the GPUs in turn), so that a batch too large is
 * one line before any rank starts. *ranks 0: nothing known. */
static void memory_where(const struct run_config *rc, const struct device_ops *devops, int64_t *avail, int *ranks,
                         char *where, size_t n)
{
    *ranks = 0;
    char has[32];
    if (!device_is_gpu(devops)) {
        const struct procs *pr = procs_self();
        *avail = mem_available();
        *ranks = *avail > 0 ? (pr->active ? pr->per : run_world(rc)) : 0;
        mem_size(has, sizeof(has), (double)*avail);
        snprintf(where, n, "this machine has %s available", has);
        return;
    }
    int count = devops->count(), ngpu = rc->ngpus > 0 ? rc->ngpus : count, world = run_world(rc);
    if (!devops->mem_info || ngpu <= 0)
        return;
    int least = -1;
    int64_t least_free = 0;
    for (int i = 0; i < ngpu && i < world; i++) {
        int g = rc->ngpus > 0 ? rc->gpus[i] : i;
        size_t free_b = 0, total = 0;
        if (g >= count || devops->mem_info(g, &free_b, &total) != 0)
            return;
        if (least < 0 || (int64_t)free_b < least_free) {
            least = g;
            least_free = (int64_t)free_b;
        }
    }
    *avail = least_free;
    *ranks = least < 0 ? 0 : (world + ngpu - 1) / ngpu;
    mem_size(has, sizeof(has), (double)least_free);
    snprintf(where, n, "cuda:%d has %s free", least, has);
}

static int memory_check(const struct run_config *rc, const struct dataset *train, const struct device_ops *devops,
                        char *err, size_t errlen)
{
    if (train_mode_has(rc, MODE_STAGED))
        return 0; /* (a stage holds its layers only: the whole model overstates it) */
    int64_t avail = 0;
    int ranks = 0;
    char where[64];
    memory_where(rc, devops, &avail, &ranks, where, sizeof(where));
    if (ranks <= 0 || avail <= 0)
        return 0;
    int batch = run_global_batch(rc) / run_world(rc);
    /* the last few models' needs are kept: a sweep, or the UI's next
     * run, builds each model here once (the check runs on one thread) */
    static struct {
        char model[32];
        int c, h, w, classes, ok;
        struct mem_need need;
    } seen[4];
    static int next;
    int classes = run_classes(rc, train->h, train->w, train->classes), k = 0;
    while (k < 4 && !(seen[k].ok && !strcmp(seen[k].model, rc->model) && seen[k].c == train->c &&
                      seen[k].h == train->h && seen[k].w == train->w && seen[k].classes == classes))
        k++;
    if (k == 4) {
        k = next;
        next = (next + 1) % 4;
        run_memory_free(&seen[k].need);
        seen[k].ok = run_memory_need(&seen[k].need, rc->model, train->c, train->h, train->w, classes, rc->seed) == 0;
        snprintf(seen[k].model, sizeof(seen[k].model), "%s", rc->model);
        seen[k].c = train->c;
        seen[k].h = train->h;
        seen[k].w = train->w;
        seen[k].classes = classes;
        if (!seen[k].ok)
            return 0; /* (the ranks will say why) */
    }
    const struct mem_need *need = &seen[k].need;
    double rank = run_memory_at(need, batch), room = MEM_KEEP * (double)avail;
    if (rank * ranks <= room)
        return 0;
    long lo = 0, hi = batch; /* the largest batch that fits: in [lo, hi) */
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (run_memory_at(need, mid) * ranks <= room)
            lo = mid;
        else
            hi = mid;
    }
    long fits = lo;
    char one[32], all[32], more[64], hint[64];
    mem_size(one, sizeof(one), rank);
    mem_size(all, sizeof(all), rank * ranks);
    if (ranks > 1)
        snprintf(more, sizeof(more), " (%d ranks: ~%s)", ranks, all);
    else
        more[0] = 0;
    if (fits >= 1)
        snprintf(hint, sizeof(hint), "try --batch-size %ld",
                 sync_has(rc->strategy, SYNC_ONE_RANK) ? (fits / rc->ranks > 0 ? fits / rc->ranks : 1) : fits);
    else
        snprintf(hint, sizeof(hint), "even one sample a rank is too much: fewer ranks");
    snprintf(err, errlen, "%s at batch %d needs ~%s a rank%s, and %s; %s", rc->model, batch, one, more, where, hint);
    return -1;
}

/* "allreduce, ddp and horovod": the strategies that compress, from their
 * table entries. */
static void compressing_strategies(char *buf, size_t n)
{
    int k = 0, count = 0;
    for (int s = 0; s < SYNC_KINDS; s++)
        count += sync_has(s, SYNC_COMPRESSES);
    size_t at = 0;
    for (int s = 0; s < SYNC_KINDS && at < n; s++)
        if (sync_has(s, SYNC_COMPRESSES)) {
            k++;
            at += (size_t)snprintf(buf + at, n - at, "%s%s",
                                   k == 1       ? ""
                                   : k == count ? " and "
                                                : ", ",
                                   strategy_name(s));
        }
}

/* run_check's checks, and the world they plan into *w (world.h): the one
 * plan of a run, which run_start keeps. 0, or -1 with err set. */
static int check_and_plan(const struct run_config *rc, const struct dataset *train, const struct device_ops *devops,
                          struct world *w, char *err, size_t errlen)
{
    if (run_check_precision(rc->precision, devops, err, errlen) != 0)
        return -1;
    if (rc->classes > 0 && rc->classes < train->classes) {
        snprintf(err, errlen, "--classes %d: %s has %d classes (labels 0 to %d), which the model must cover",
                 rc->classes, train->name, train->classes, train->classes - 1);
        return -1;
    }
    int world = run_world(rc);
    int staged = train_mode_has(rc, MODE_STAGED); /* every stage of a replica works on its whole batch */
    int replicas = run_replicas(rc);
    long per_rank = train->n / replicas;
    if (per_rank / (run_global_batch(rc) / replicas) < 1) {
        snprintf(err, errlen, "--batch-size %d: larger than a rank's share of %s (%ld samples)", rc->batch_size,
                 train->name, per_rank);
        return -1;
    }
    int gc = run_grad_compress(rc);
    if (gc && world > 1 && !sync_has(rc->strategy, SYNC_COMPRESSES)) {
        char which[64] = "";
        compressing_strategies(which, sizeof(which));
        snprintf(err, errlen, "--grad-compress %s: only the %s strategies compress (not %s)", w16_name(gc), which,
                 strategy_name(rc->strategy));
        return -1;
    }
    /* every run of the command line's sweep, and a plan made later (the
     * UI's), which may have fewer ranks than the one these options named */
    if (rc->slow_rank >= rc->ranks) {
        snprintf(err, errlen, "--slow-rank: rank %d does not exist with --ranks %d", rc->slow_rank, rc->ranks);
        return -1;
    }
    if (rc->fault.kind != FAULT_NONE && rc->fault.rank >= rc->ranks) {
        snprintf(err, errlen, "--inject-fault: rank %d does not exist with --ranks %d", rc->fault.rank, rc->ranks);
        return -1;
    }
    if (rc->fault.kind == FAULT_COMM_ERROR && run_world(rc) == 1) {
        snprintf(err, errlen,
                 "--inject-fault kind=comm-error: a run of one rank (%s) has no link to a peer to break; the fault "
                 "would do nothing",
                 sync_has(rc->strategy, SYNC_ONE_RANK) ? "--strategy single" : "--ranks 1");
        return -1;
    }
    if (rc->dp > 1 && !staged) {
        snprintf(err, errlen,
                 "--dp %d: replicas of stages (--parallel model|pipeline); in data parallelism every "
                 "rank is a replica already",
                 rc->dp);
        return -1;
    }
    if (staged && rc->dp > 1) {
        if (world % rc->dp || world / rc->dp > PIPE_MAX_STAGES) {
            snprintf(err, errlen, "--dp %d: --ranks %d is not %d replicas of up to %d stages", rc->dp, world, rc->dp,
                     PIPE_MAX_STAGES);
            return -1;
        }
    }
    if (staged) {
        const char *par = parallel_name(rc->parallel);
        if (train_mode_micro(rc) > 1 && rc->batch_size % rc->micro_batches) {
            snprintf(err, errlen, "--micro-batches %d: must divide --batch-size %d", rc->micro_batches, rc->batch_size);
            return -1;
        }
        if (rc->check_replicas) {
            snprintf(err, errlen, "--check-replicas: with --parallel %s no two ranks hold the same layers", par);
            return -1;
        }
        if (gc) {
            snprintf(err, errlen, "--grad-compress: with --parallel %s no gradients are averaged between ranks", par);
            return -1;
        }
        if (rc->partition[0]) {
            /* checked on the model's layers before any rank starts (a
             * one-sample CPU plan, holding no buffers: the layers are the
             * same on any device) */
            struct model *m = zoo_plan(NULL, rc->model, 1, train->c, train->h, train->w,
                                       run_classes(rc, train->h, train->w, train->classes), rc->seed, err, errlen);
            if (!m)
                return -1;
            struct pipe_plan p;
            int bad = pipe_plan_parse(&p, m, rc->partition, run_stages(rc), err, errlen);
            model_destroy(m);
            if (bad)
                return -1;
        }
    }
    /* the backend must suit the device and the launch (world.h) */
    struct world_req q = {.rc = rc, .ranks = world, .devops = devops, .what = "--device cuda"};
    if (world_plan(w, &q, err, errlen) != 0)
        return -1;
    return memory_check(rc, train, devops, err, errlen);
}

int run_check(const struct run_config *rc, const struct dataset *train, const struct device_ops *devops, char *err,
              size_t errlen)
{
    struct world w;
    return check_and_plan(rc, train, devops, &w, err, errlen);
}

const struct model *run_rank_model(const struct run *r, int i)
{
    if (!r->ranks || i < 0 || i >= r->world || atomic_load(&r->ranks[i].nparams_total) == 0)
        return NULL;
    return r->ranks[i].model;
}

int run_start(struct run *r, const struct run_config *rc, const struct dataset *train, const struct dataset *test,
              const struct device_ops *devops, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    /* the run's own copy of rc, checked and planned once: the plan reads
     * it while the run lives */
    r->cfg = *rc;
    if (check_and_plan(&r->cfg, train, devops, &r->plan, err, errlen) != 0)
        return -1;
    if (procs_spent()) {
        snprintf(err, errlen,
                 "under mpirun a run that was stopped or failed ends the job (MPI may still hold its "
                 "buffers): quit, and start mpirun again");
        return -1;
    }
    /* under mpirun: the workers start it too (procs.h) */
    procs_announce(rc);
    r->cfg.grad_compress = run_grad_compress(rc); /* as the run trains, for the ranks and the report */
    r->wire_scaled = run_grad_compress_at(rc, 2);
    r->cfg.grad_compress_set = 1;
    r->cfg.loss_scale = run_loss_scale(rc);
    r->cfg.loss_scale_set = 1;
    r->train = train;
    r->test = test;
    r->devops = devops;
    r->failed_rank = -1;
    atomic_init(&r->first_failed, -1);
    r->world = run_world(rc);
    r->global_batch = run_global_batch(rc);
    /* a replica's batch (every stage of it works on the whole of it), and
     * its shard's steps */
    int replicas = run_replicas(rc);
    r->local_batch = r->global_batch / replicas;
    r->steps_per_epoch = (train->n / replicas) / r->local_batch;
    /* --steps without --epochs runs as many epochs as it takes */
    if (rc->steps > 0 && !rc->epochs_set) {
        long need = (rc->steps + r->steps_per_epoch - 1) / r->steps_per_epoch;
        r->cfg.epochs = need > INT_MAX ? INT_MAX : (int)need;
    }
    r->total_steps = r->steps_per_epoch * r->cfg.epochs;
    if (rc->steps > 0 && rc->steps < r->total_steps)
        r->total_steps = rc->steps;
    else if (rc->steps > r->total_steps)
        snprintf(r->note, sizeof(r->note), "--steps %ld: capped at %ld by --epochs %d (%ld steps an epoch)", rc->steps,
                 r->total_steps, r->cfg.epochs, r->steps_per_epoch);
    r->on_gpu = device_is_gpu(devops);
    r->gpu = r->on_gpu ? gpu_module() : NULL;
    snprintf(r->backend, sizeof(r->backend), "%s", r->plan.backend);
    if (r->plan.note[0]) { /* (after a --steps cap said above) */
        size_t n = strlen(r->note);
        snprintf(r->note + n, sizeof(r->note) - n, "%s%s", n ? "; " : "", r->plan.note);
    }
    atomic_init(&r->abort, 0);
    atomic_init(&r->paused, 0);
    atomic_init(&r->pause_at, 0);
    pthread_mutex_init(&r->pause_mu, NULL);
    pthread_cond_init(&r->pause_cv, NULL);
    if (metrics_init(&r->metrics, r->world, rc->loss_threshold) != 0) {
        snprintf(err, errlen, "out of memory for the metrics");
        return -1;
    }
    const struct procs *pr = procs_self();
    int64_t cap = mem_cap(err, errlen);
    if (cap < 0)
        return -1;
    if (cap > 0) { /* (the report says it; a rank past it fails with it named) */
        size_t n = strlen(r->note);
        snprintf(r->note + n, sizeof(r->note) - n, "%sDDPTOP_MEM_CAP_MB=%lld: each rank may hold %lld MiB",
                 n ? "; " : "", (long long)(cap >> 20), (long long)(cap >> 20));
    }
    r->ranks = calloc((size_t)r->world, sizeof(*r->ranks));
    if (!r->ranks) {
        snprintf(err, errlen, "out of memory for %d ranks", r->world);
        return -1;
    }
    if (world_open(&r->plan, &r->abort, err, errlen) != 0)
        return -1;
    if (r->plan.dp > 1 && metrics_set_groups(&r->metrics, r->plan.dp) != 0) {
        snprintf(err, errlen, "out of memory for the metrics");
        return -1;
    }
    if (r->on_gpu && !rc->no_cupti && r->gpu->activity_start) {
        char cerr[160];
        r->cupti_sample = rc->cupti_sample > 1 ? rc->cupti_sample : 1;
        /* (DDPTOP_CUPTI_GAP_MS: a measuring knob for bench/cupti_cost.sh) */
        const char *gap = getenv("DDPTOP_CUPTI_GAP_MS");
        r->cupti_gap_ns = (gap && gap[0] ? atoll(gap) : CFG_CUPTI_GAP_MS) * 1000000LL;
        atomic_store(&r->cupti_next, 0);
        r->cupti = r->gpu->activity_start(r->cupti_sample > 1, cerr, sizeof(cerr)) == 0;
        if (!r->cupti && !r->note[0])
            snprintf(r->note, sizeof(r->note), "%s", cerr);
    }
    r->worker = pr->active && pr->rank != 0;
    r->procs = pr->active;
    for (int i = 0; i < r->world; i++) {
        struct rank *k = &r->ranks[i];
        k->id = i;
        k->run = r;
        k->local = !pr->active || i / pr->per == pr->rank;
        if (!k->local && r->worker)
            continue; /* another worker's rank: nothing of it passes here */
        k->dev.ops = devops;
        k->dev.mem = &k->mem;
        k->mem.cap = cap;
        k->gpu = r->on_gpu ? world_device(&r->plan, i) : -1;
        if (!k->local) {
            /* another process's rank: its device as process 0 shows it
             * until its end says (a rank's own thread names it) */
            char dev[32] = "cpu";
            if (r->on_gpu)
                snprintf(dev, sizeof(dev), "%s:%d", devops->name, k->gpu);
            procs_device_name(i / pr->per, dev, k->dev.name, sizeof(k->dev.name));
        }
        if (r->cupti)
            metrics_expect_gpu(&r->metrics, i);
        atomic_init(&k->step, 0);
        atomic_init(&k->finished, 0);
        if (spsc_init(&k->spans_main, sizeof(struct span), SPAN_RING) ||
            spsc_init(&k->spans_comm, sizeof(struct span), SPAN_RING) ||
            spsc_init(&k->steps, sizeof(struct step_rec), STEP_RING) ||
            spsc_init(&k->epochs, sizeof(struct epoch_rec), EPOCH_RING) ||
            (r->on_gpu && spsc_init(&k->spans_gpu, sizeof(struct span), SPAN_RING))) {
            snprintf(err, errlen, "out of memory for rank %d's probe rings", i);
            return -1;
        }
        /* (else the rank's thread makes them: NCCL's and gloo's making is collective) */
        if (k->local && !world_on_thread(&r->plan) &&
            world_comms(&r->plan, i, &k->dev, &k->comm, &k->dp_comm, err, errlen) != 0)
            return -1;
    }
    if (pr->active && !(r->relay = relay_open(r, err, errlen)))
        return -1;
    nvtx_init();
    r->t_start_ns = probe_now_ns();
    r->state = RUN_RUNNING;
    /* Rank threads get the normal policy explicitly, whatever the creating
     * thread runs under: the UI thread runs as SCHED_BATCH so that its
     * refreshes never preempt a rank (ui.c). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    struct sched_param sp = {.sched_priority = 0};
    if (pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) != 0 ||
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER) != 0 || pthread_attr_setschedparam(&attr, &sp) != 0)
        pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
    for (int i = 0; i < r->world; i++) {
        if (!r->ranks[i].local)
            continue;
        if (pthread_create(&r->ranks[i].thread, &attr, rank_main, &r->ranks[i]) != 0) {
            pthread_attr_destroy(&attr);
            snprintf(err, errlen, "cannot start rank %d's thread", i);
            atomic_store(&r->abort, 1);
            return -1;
        }
        r->ranks[i].started = 1;
    }
    pthread_attr_destroy(&attr);
    return 0;
}

/* The collector's sink: every record into the metrics. */
static void to_metrics_spans(void *ctx, struct rank *k, int ring, struct span *s, size_t n)
{
    metrics_add_spans(ctx, k->id, s, n);
}

static void to_metrics_steps(void *ctx, struct rank *k, struct step_rec *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        metrics_add_step(ctx, k->id, &s[i]);
}

static void to_metrics_epochs(void *ctx, struct rank *k, struct epoch_rec *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        metrics_add_epoch(ctx, k->id, &e[i]);
}

static void drain_rank(struct run *r, int i)
{
    struct rank *k = &r->ranks[i];
    const struct drain_sink sink = {to_metrics_spans, to_metrics_steps, to_metrics_epochs, &r->metrics};
    run_drain(k, r->on_gpu, &sink);
    r->metrics.r[i].dropped = spsc_dropped(&k->spans_main) + spsc_dropped(&k->spans_comm) +
                              (r->on_gpu ? spsc_dropped(&k->spans_gpu) : 0) + atomic_load(&k->remote_dropped);
}

/* A rank with a peer cannot hang unseen: the peer's next collective waits
 * for it, and that wait fails after --comm-timeout naming it. A run of one
 * rank has no such peer, so the collector watches it instead: no new step
 * for --comm-timeout (while it runs, not paused, not evaluating) fails the
 * run the same way, naming the rank. */
static void watch_alone(struct run *r)
{
    if (r->world != 1 || r->worker || !r->ranks)
        return;
    const struct rank *k = &r->ranks[0];
    int64_t now = probe_now_ns();
    uint32_t s = atomic_load(&k->step);
    int idle_ok = r->state != RUN_RUNNING || atomic_load(&r->paused) || atomic_load(&r->abort) ||
                  atomic_load(&k->evaluating) || atomic_load(&k->finished) || r->failed_rank >= 0;
    if (idle_ok || s != r->alone_step || r->alone_seen_ns == 0) {
        r->alone_step = s;
        r->alone_seen_ns = now;
        return;
    }
    double stalled_s = (double)(now - r->alone_seen_ns) / 1e9;
    if (stalled_s <= r->cfg.comm_timeout_s)
        return;
    r->failed_rank = 0;
    snprintf(r->err, sizeof(r->err), "rank 0 failed: no step for %.3g s (--comm-timeout): it hangs in step %u",
             stalled_s, s);
    run_request_stop(r);
}

/* a failed before b: the earlier time (a time not known, as late as can
 * be), then the lower rank */
static int failed_before(const struct rank *a, const struct rank *b)
{
    uint64_t ta = a->fail_ns > 0 ? (uint64_t)a->fail_ns : UINT64_MAX;
    uint64_t tb = b->fail_ns > 0 ? (uint64_t)b->fail_ns : UINT64_MAX;
    return ta != tb ? ta < tb : a->id < b->id;
}

int run_poll(struct run *r)
{
    int running = 0;
    /* device records arrive in CUPTI's buffers: ask for what has completed */
    if (r->cupti && probe_now_ns() - r->cupti_flushed_ns > 200 * 1000 * 1000) {
        r->gpu->activity_flush(0);
        r->cupti_flushed_ns = probe_now_ns();
    }
    uint32_t at = 0;
    /* a worker's records leave here, and process 0's stop or pause */
    switch (r->relay ? relay_poll(r->relay, &at) : RELAY_NONE) {
    case RELAY_STOP:
        run_request_stop(r);
        break;
    case RELAY_PAUSE:
        run_pause_at(r, at);
        break;
    case RELAY_RESUME:
        run_set_paused(r, 0);
        break;
    default:
        break;
    }
    int first = -1; /* the rank that failed first, of those ended so far */
    for (int i = 0; i < r->world; i++) {
        if (r->worker && !r->ranks[i].local)
            continue;
        if (!r->worker)
            drain_rank(r, i);
        const struct rank *k = &r->ranks[i];
        if (!atomic_load(&k->finished))
            running = 1;
        else if (k->rc != 0 && (!r->user_stop || k->given_up) && (first < 0 || failed_before(k, &r->ranks[first])))
            first = i;
    }
    /* named: the first to fail, whose peers' failures it caused. A rank
     * of another process is heard of later than its peers here fail from
     * it (its connections close at once, its end comes through the
     * relay), so the name may move to an earlier failure until the run
     * has ended. */
    if (first >= 0 && first != r->failed_rank && r->state < RUN_DONE) {
        int named = r->failed_rank >= 0;
        r->failed_rank = first;
        snprintf(r->err, sizeof(r->err), "rank %d failed: %s", first, r->ranks[first].err);
        if (!named)
            run_request_stop(r); /* a rank that died without a word leaves its peers waiting */
    }
    watch_alone(r);
    if (r->state == RUN_RUNNING || r->state == RUN_PAUSED)
        r->state = atomic_load(&r->paused) ? RUN_PAUSED : RUN_RUNNING;
    if (!running && r->state < RUN_DONE) {
        r->t_end_ns = probe_now_ns();
        r->state = r->failed_rank >= 0 ? RUN_FAILED : atomic_load(&r->abort) ? RUN_STOPPED : RUN_DONE;
    }
    return running;
}

void run_request_stop(struct run *r)
{
    /* a stop before any failure: ranks of other processes learn of it a
     * tick later (the relay), and one may meanwhile fail in a collective
     * its peer has left; that is the stop's doing, not the run's failure
     * (a process that went away meanwhile still is: run_poll) */
    if (r->failed_rank < 0 && atomic_load(&r->first_failed) < 0 && !atomic_load(&r->abort))
        r->user_stop = 1;
    atomic_store(&r->abort, 1);
    pthread_mutex_lock(&r->pause_mu);
    pthread_cond_broadcast(&r->pause_cv);
    pthread_mutex_unlock(&r->pause_mu);
}

void run_pause_at(struct run *r, uint32_t at)
{
    pthread_mutex_lock(&r->pause_mu);
    atomic_store(&r->pause_at, at);
    atomic_store(&r->paused, 1);
    pthread_mutex_unlock(&r->pause_mu);
}

void run_set_paused(struct run *r, int paused)
{
    pthread_mutex_lock(&r->pause_mu);
    if (paused) {
        uint32_t mx = 0;
        for (int i = 0; i < r->world; i++) {
            uint32_t s = atomic_load(&r->ranks[i].step);
            if (s > mx)
                mx = s;
        }
        atomic_store(&r->pause_at, mx + 1);
        atomic_store(&r->paused, 1);
    } else {
        atomic_store(&r->paused, 0);
        pthread_cond_broadcast(&r->pause_cv);
    }
    pthread_mutex_unlock(&r->pause_mu);
}

int run_join(struct run *r)
{
    for (int i = 0; i < r->world; i++)
        if (r->ranks && r->ranks[i].started) {
            pthread_join(r->ranks[i].thread, NULL);
            r->ranks[i].started = 0;
        }
    /* a worker's last device records leave before its ranks' ends */
    if (r->cupti && r->relay && r->worker)
        r->gpu->activity_flush(1);
    for (int i = 0; r->relay && r->worker && i < r->world; i++)
        if (r->ranks[i].local && atomic_load(&r->ranks[i].finished))
            relay_rank_done(r->relay, i);
    /* process 0: the workers' ranks end after a stop within their own
     * bounded waits, and say so through the relay */
    for (int i = 0; r->relay && !r->worker && i < r->world; i++)
        while (!atomic_load(&r->ranks[i].finished)) {
            relay_poll(r->relay, &(uint32_t){0});
            probe_nap_ms(1);
        }
    relay_close(r->relay);
    r->relay = NULL;
    if (r->cupti) {
        /* every rank is done: the last records are complete */
        r->gpu->activity_flush(1);
        r->cupti_overhead_ns = r->gpu->activity_overhead_ns();
        r->cupti_dropped = r->gpu->activity_dropped();
    }
    if (r->ranks)
        run_poll(r);
    if (r->procs && r->state != RUN_DONE)
        procs_mark_spent();
    metrics_finish(&r->metrics);
    return r->failed_rank >= 0 ? -1 : 0;
}

void run_free(struct run *r)
{
    if (r->cupti) {
        /* records still on their way (a later run may hold collection on)
         * find no ring of this run once it is released */
        for (int i = 0; r->ranks && i < r->world; i++)
            r->gpu->activity_release(&r->ranks[i].spans_gpu);
        r->gpu->activity_stop(r->cupti_sample > 1);
    }
    if (r->ranks) {
        for (int i = 0; i < r->world; i++) {
            struct rank *k = &r->ranks[i];
            if (k->dev.ops && k->dev.impl)
                k->dev.ops->make_current(&k->dev); /* its buffers are freed from this thread */
            model_destroy(k->model);
            if (k->comm)
                k->comm->ops->destroy(k->comm);
            if (k->dp_comm)
                k->dp_comm->ops->destroy(k->dp_comm);
            if (k->dev.ops && k->dev.ops->close)
                k->dev.ops->close(&k->dev);
            spsc_free(&k->spans_main);
            spsc_free(&k->spans_comm);
            spsc_free(&k->steps);
            spsc_free(&k->epochs);
            spsc_free(&k->spans_gpu);
        }
        free(r->ranks);
    }
    world_close(&r->plan);
    metrics_free(&r->metrics);
    pthread_mutex_destroy(&r->pause_mu);
    pthread_cond_destroy(&r->pause_cv);
    memset(r, 0, sizeof(*r));
}
