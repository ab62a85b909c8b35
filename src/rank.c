/* rank.c - one rank's training loop: its set-up, the epochs of steps (each
 * step the training mode's, mode.h: loop_data.c's or loop_stages.c's),
 * batch norm's broadcast, evaluation, CUPTI's trace windows and
 * --save-params. The loop only talks to the device through struct
 * device_ops and to peers through the strategy and the mode, so the same
 * loop drives every device and backend (loop.h lists its files).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "half.h"
#include "kernels_cpu.h"
#include "model.h"
#include "nvtx.h"
#include "outfile.h"
#include "optim.h"
#include "pipeline.h"
#include "run.h"
#include "kernels_ref.h"
#include "loop.h"
#include "sync.h"
#include "zoo.h"

/* Waits at a step boundary while the run is paused at or before `step`. */
static void pause_point(struct run *run, uint32_t step)
{
    if (!atomic_load_explicit(&run->paused, memory_order_acquire))
        return;
    pthread_mutex_lock(&run->pause_mu);
    while (atomic_load(&run->paused) && step >= atomic_load(&run->pause_at) && !atomic_load(&run->abort))
        pthread_cond_wait(&run->pause_cv, &run->pause_mu);
    pthread_mutex_unlock(&run->pause_mu);
}

/* Batch norm's running statistics are state, not parameters: each rank
 * moves its own with its own shard. As DDP's broadcast_buffers (and
 * DataParallel's replication) do, rank 0's go to every rank before each
 * step and before evaluation, so that all ranks normalise alike. */
/* Copies every batch norm's statistics into the packed buffer (pack = 1)
 * or back out of it, on the comm stream. */
static int bn_copy(struct loop *L, int pack)
{
    struct model *m = L->m;
    struct device *d = &L->rk->dev;
    size_t off = 0;
    for (int i = 0; i < m->nlayers; i++) {
        float *stat[2] = {layer_bn_running(&m->layers[i], 0), layer_bn_running(&m->layers[i], 1)};
        if (!stat[0])
            continue;
        size_t C = (size_t)m->tensors[m->layers[i].out].c;
        for (int k = 0; k < 2; k++, off += C) {
            float *dst = pack ? L->bn_flat + off : stat[k];
            const float *src = pack ? stat[k] : L->bn_flat + off;
            if (d->ops->copy(d, dst, src, sizeof(float) * C, STREAM_COMM) != 0)
                return loop_dev_failed(L->rk);
        }
    }
    return 0;
}

static int sync_buffers(struct loop *L)
{
    if (!L->bn_flat)
        return 0;                        /* one rank, no batch norm, or --no-broadcast-buffers */
    if (loop_comm_after_compute(L) != 0) /* the last forward's updates are done */
        return -1;
    struct device *d = &L->rk->dev;
    struct comm *c = L->rk->comm;
    int root = L->rk->id == 0;
    /* rank 0 packs, one broadcast, the others unpack */
    if (root && bn_copy(L, 1) != 0)
        return -1;
    int rc = c->ops->broadcast(c, L->bn_flat, L->bn_floats, 0);
    if (rc != 0)
        return loop_comm_failed(L->rk, rc, "broadcasting batch norm's running statistics");
    if (root)
        return 0;
    /* the next forward updates the statistics: after the unpacking copies */
    if (bn_copy(L, 0) != 0)
        return -1;
    if (d->ops->record_event(d, EV_COMM_DONE, STREAM_COMM) != 0 ||
        d->ops->wait_event(d, EV_COMM_DONE, STREAM_COMPUTE) != 0)
        return loop_dev_failed(L->rk);
    return 0;
}

/* Evaluates this rank's share (indices rank, rank+W, ...) of the test
 * split, a batch of the model's at a time (a pipeline's holds one
 * micro-batch). */
static int evaluate(struct loop *L, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct dataset *test = run->test;
    struct model *m = L->m;
    int B = m->batch;
    struct epoch_rec er = {.epoch = epoch};
    if (sync_buffers(L) != 0)
        return -1;
    int pos = rk->id;
    while (pos < test->n && !atomic_load(&run->abort)) {
        int n = 0;
        for (; n < B && pos < test->n; n++, pos += run->world)
            L->idx[n] = (uint32_t)pos;
        for (int k = n; k < B; k++)
            L->idx[k] = L->idx[0]; /* pad a short last batch; only n are counted */
        struct device *d = &rk->dev;
        if (d->ops->sync(d, STREAM_COPY) != 0)
            return loop_dev_failed(rk);
        data_gather(test, L->idx, B, L->xhost, L->yhost);
        if (d->ops->copy(d, model_input(m), L->xhost,
                         sizeof(float) * (size_t)B * (size_t)m->tensors[m->input].per_sample, STREAM_COPY) != 0 ||
            d->ops->record_event(d, EV_STAGED, STREAM_COPY) != 0 || d->ops->wait_event(d, EV_STAGED, STREAM_COMPUTE))
            return loop_dev_failed(rk);
        if (model_forward(m, 0) != 0)
            return loop_fail(rk, m->err);
        int correct = 0;
        float loss = model_loss(m, L->yhost, n, &correct);
        if (!isfinite(loss) && m->err[0])
            return loop_fail(rk, m->err);
        er.correct += correct;
        er.total += n;
        er.loss_sum += (double)loss * n;
    }
    while (!spsc_push(&rk->epochs, &er) && !atomic_load(&run->abort))
        sched_yield();
    return 0;
}

/* The rank's device, and on a GPU its communicators (NCCL's
 * initialisation waits for every rank, so they come first) and CUPTI's
 * records. */
static int loop_open_device(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    char err[256] = "";
    rk->dev.rank = rk->id;
    rk->dev.precision = cfg->precision; /* read when a model's kernels are made */
    rk->dev.conv_algo = cfg->cudnn_algo;
    if (run->devops->open(&rk->dev, run->on_gpu ? rk->gpu : rk->id) != 0)
        return loop_dev_failed(rk);
    /* the communicators the planner makes on the rank's own thread first:
     * NCCL's and gloo's making waits for every rank */
    if (world_on_thread(&run->plan) &&
        world_comms(&run->plan, rk->id, &rk->dev, &rk->comm, &rk->dp_comm, err, sizeof(err)) != 0)
        return loop_fail(rk, err);
    if (run->on_gpu && run->cupti)
        run->gpu->activity_register(&rk->dev, rk->id, &rk->spans_gpu);
    return 0;
}

/* The communicators' spans go to the main lane at the rank's step (from
 * the first call on: a stage partition's measured times are broadcast
 * while the model is made). */
static void loop_bind_comms(struct loop *L)
{
    struct rank *rk = L->rk;
    const struct run_config *cfg = L->cfg;
    if (rk->comm) {
        comm_bind(rk->comm, &rk->spans_main, LANE_MAIN, &rk->step);
        rk->comm->timeout_ns = (int64_t)(cfg->comm_timeout_s * 1e9);
    }
    if (rk->dp_comm) {
        comm_bind(rk->dp_comm, &rk->spans_main, LANE_MAIN, &rk->step);
        rk->dp_comm->timeout_ns = (int64_t)(cfg->comm_timeout_s * 1e9);
    }
}

/* The model (it holds one micro-batch), the buffer that broadcasts its
 * batch norm statistics (data parallelism: every stage keeps its own), the
 * loss scaler's verdict and the optimizer. */
static int loop_model(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = run->train;
    char err[256];
    /* a mode that holds only some layers (a stage) plans the whole model
     * first, then holds its layers' state and no other's */
    L->m = (L->hooks->hold ? zoo_plan : zoo_create)(&rk->dev, cfg->model, run->local_batch / train_mode_micro(cfg),
                                                    tr->c, tr->h, tr->w, run_classes(cfg, tr->h, tr->w, tr->classes),
                                                    cfg->seed, err, sizeof(err));
    if (!L->m)
        return loop_fail(rk, err);
    rk->model = L->m; /* (run_free destroys it; the collector reads it once nparams_total is set) */
    int a, b;
    if (L->hooks->hold && (L->hooks->hold(L, L->m, &a, &b) != 0 || model_hold(L->m, a, b, NULL, err, sizeof(err)) != 0))
        return rk->rc != 0 ? -1 : loop_fail(rk, err);
    if (model_set_trainable(L->m, cfg->trainable, err, sizeof(err)) != 0)
        return loop_fail(rk, err);
    for (int i = 0; i < L->m->nlayers; i++)
        if (layer_bn_running(&L->m->layers[i], 0)) {
            L->has_bn = 1;
            L->bn_floats += 2 * (size_t)L->m->tensors[L->m->layers[i].out].c;
        }
    if (L->has_bn && run->world > 1 && cfg->broadcast_buffers && !(L->mode->flags & MODE_STAGED) &&
        !(L->bn_flat = rk->dev.ops->alloc(&rk->dev, sizeof(float) * L->bn_floats)))
        return loop_fail(rk, "out of memory for the batch norm statistics' broadcast");
    rk->nparams_total = L->m->nfloats_all;
    rk->nparams_trainable = model_trainable_floats(L->m);
    rk->flops_per_sample = model_flops(L->m);
    float lr = (float)run_lr_peak(cfg);
    L->scale = L->used_scale = cfg->loss_scale == LOSS_SCALE_DYNAMIC ? CFG_LOSS_SCALE_INIT : 1.0f;
    if (cfg->loss_scale == LOSS_SCALE_DYNAMIC && !(L->scaler_buf = rk->dev.ops->alloc(&rk->dev, sizeof(float))))
        return loop_fail(rk, "out of memory for the loss scaler");
    if (sgd_init_model(&L->opt, L->m, lr, cfg->momentum, cfg->weight_decay, cfg->warmup_steps) != 0) {
        snprintf(err, sizeof(err), "the optimizer's state: %.200s", L->m->err[0] ? L->m->err : "out of memory");
        return loop_fail(rk, err);
    }
    sgd_set_decay(&L->opt, cfg->lr_cosine ? run->total_steps : 0);
    return 0;
}

/* The rank's shard of the training set and its batch's buffers (on the
 * host, and staging ones on an asynchronous device). dp: rank 0 alone
 * samples, the whole batch at a time; the stages of a replica all sample
 * its batch (the first uses its inputs, the last its labels), each
 * replica (--dp) from its own shard. */
static int loop_batches(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = run->train;
    int dp = (L->sync->flags & SYNC_ROOT_STEPS) != 0;
    int staged = (L->mode->flags & MODE_STAGED) != 0;
    int shards = staged ? run_replicas(cfg) : dp ? 1 : run->world;
    int shard = staged ? rk->id / run_stages(cfg) : dp ? 0 : rk->id;
    if (sampler_init(&L->smp, tr->n, shards, shard, cfg->seed) != 0)
        return loop_fail(rk, "cannot shard the training set");
    size_t per = (size_t)tr->c * tr->h * tr->w;
    L->idx = malloc(sizeof(uint32_t) * (size_t)run->local_batch);
    L->xhost = rk->dev.ops->alloc_host(&rk->dev, sizeof(float) * per * (size_t)run->local_batch);
    L->yhost = rk->dev.ops->alloc_host(&rk->dev, sizeof(int32_t) * (size_t)run->local_batch);
    if (!L->idx || !L->xhost || !L->yhost)
        return loop_fail(rk, "out of memory for the batch buffers");
    if (L->async) {
        L->stage_x = rk->dev.ops->alloc(&rk->dev, sizeof(float) * per * (size_t)run->local_batch);
        L->stage_y = rk->dev.ops->alloc(&rk->dev, sizeof(int32_t) * (size_t)run->local_batch);
        if (!L->stage_x || !L->stage_y)
            return loop_dev_failed(rk);
    }
    return 0;
}

/* The strategies' view of the flat gradient buffer. */
static int loop_comms(struct loop *L)
{
    struct rank *rk = L->rk;
    struct model *m = L->m;
    L->gt = calloc((size_t)m->nparams, sizeof(*L->gt));
    if (!L->gt)
        return loop_fail(rk, "out of memory");
    for (int p = 0; p < m->nparams; p++)
        L->gt[p] = (struct grad_tensor){m->params[p].off, m->params[p].len, m->params[p].trainable};
    L->gl = (struct grad_layout){m->nparams, L->gt, m->param_buf, m->grad_buf, m->nfloats};
    return 0;
}

/* The training modes' rank loops (mode.h's enum mode_loop). */
static const struct loop_hooks loop_hooks[MODE_LOOPS] = {
    [MODE_LOOP_DATA] = {NULL, loop_data_init, loop_data_step, loop_data_free},
    [MODE_LOOP_STAGES] = {loop_stages_hold, loop_stages_init, loop_stages_step, loop_stages_free},
};

/* Everything the rank's steps share, then its mode's own (mode.h). */
static int loop_init(struct loop *L, struct rank *rk)
{
    struct run *run = rk->run;
    const struct run_config *cfg = &run->cfg;
    memset(L, 0, sizeof(*L));
    L->rk = rk;
    L->run = run;
    L->cfg = cfg;
    L->mode = train_mode_at(cfg);
    L->hooks = &loop_hooks[L->mode->loop];
    L->sync = sync_ops_at(cfg->strategy, run->world);
    L->slow = cfg->slow_rank == rk->id ? cfg->slow_factor : 1.0;
    L->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    L->run_delay = loop_run_delay_ns(L);
    cpu_set_threads(cfg->threads_per_rank);
    L->async = run->devops->async;
    L->staged = -1;
    if (loop_open_device(L) != 0)
        return -1;
    loop_bind_comms(L);
    if (loop_model(L) != 0 || loop_batches(L) != 0 || loop_comms(L) != 0)
        return -1;
    return L->hooks->init(L);
}

static void loop_free(struct loop *L)
{
    if (L->schedstat_fd >= 0)
        close(L->schedstat_fd);
    struct device *d = &L->rk->dev;
    if (L->async && d->impl)
        d->ops->sync(d, STREAM_COPY); /* no copy may still read what is freed here */
    free(L->idx);
    if (L->xhost)
        d->ops->free_host(d, L->xhost);
    if (L->yhost)
        d->ops->free_host(d, L->yhost);
    if (L->stage_x)
        d->ops->free(d, L->stage_x);
    if (L->stage_y)
        d->ops->free(d, L->stage_y);
    free(L->hash_buf);
    sgd_free(&L->opt);
    sampler_free(&L->smp);
    if (L->hooks)
        L->hooks->free(L);
    free(L->gt);
    if (L->async && d->impl)
        d->ops->sync(d, STREAM_COMM); /* the collectives' copies run on the comm stream */
    if (L->bn_flat)
        d->ops->free(d, L->bn_flat);
    if (L->scaler_buf)
        d->ops->free(d, L->scaler_buf);
    /* the model stays for the collector to inspect; run_free destroys it */
}

uint32_t run_cupti_next_window(uint32_t start, int P, int64_t step_ns, int64_t gap_ns)
{
    uint64_t steps = P > 1 ? (uint64_t)P : 1;
    if (step_ns > 0 && gap_ns > 0) {
        uint64_t need = (uint64_t)((gap_ns + step_ns - 1) / step_ns);
        steps = need > steps ? need : steps;
    }
    uint64_t next = (uint64_t)start + steps;
    return next > UINT32_MAX ? UINT32_MAX : (uint32_t)next;
}

/* Rank 0 at a window's edges: entering one, it measures the untraced
 * steps' time since the last; leaving one, it says where the next starts
 * (the other ranks read it as they leave theirs: no rank can be a whole
 * gap of steps ahead, the strategies' collectives hold them together). */
static void window_schedule(struct loop *L, uint32_t step)
{
    struct run *run = L->run;
    int64_t now = probe_now_ns();
    if (L->traced) {
        if (L->gap_t0_ns > 0 && step > L->gap_step0)
            L->gap_step_ns = (now - L->gap_t0_ns) / (int64_t)(step - L->gap_step0);
        return;
    }
    L->gap_t0_ns = now;
    L->gap_step0 = step;
    atomic_store_explicit(&run->cupti_next,
                          run_cupti_next_window(L->win_start, run->cupti_sample, L->gap_step_ns, run->cupti_gap_ns),
                          memory_order_release);
}

/* --cupti-sample: whether CUPTI traces this step, entering or leaving the
 * window at its edges. A window's end is marked on the compute stream
 * (the device is idle: the last step waited for it), so that its last
 * records need not wait for the next window's marks to be settled. */
static int trace_window(struct loop *L, uint32_t step)
{
    struct run *run = L->run;
    int P = run->cupti_sample;
    if (!run->cupti || P <= 1) {
        L->traced = run->cupti;
        return 0;
    }
    if (L->in_window) {
        L->traced = step - L->win_start < CFG_CUPTI_WINDOW;
    } else {
        uint32_t next = atomic_load_explicit(&run->cupti_next, memory_order_acquire);
        L->traced = step >= next && step - next < CFG_CUPTI_WINDOW;
        if (L->traced)
            L->win_start = next;
    }
    if (L->traced == L->in_window)
        return 0;
    if (L->rk->id == 0)
        window_schedule(L, step);
    struct device *d = &L->rk->dev;
    if (!L->traced && d->ops->phase_mark && d->ops->phase_mark(d, CAT_WAIT, step) != 0)
        return loop_dev_failed(L->rk);
    run->gpu->activity_window(&L->rk->spans_gpu, L->traced, step);
    L->in_window = L->traced;
    return 0;
}

/* --save-params: rank 0's parameters as raw float32 in the machine's byte
 * order, once training has ended whole. */
static int save_params(struct loop *L)
{
    struct rank *rk = L->rk;
    const char *path = L->run->cfg.save_params;
    struct model *m = rk->model;
    if (rk->id != 0 || !path[0] || !m || atomic_load(&L->run->abort))
        return 0;
    float *host = malloc(m->nfloats * sizeof(float));
    if (!host || model_memcpy(m, host, m->param_buf, m->nfloats * sizeof(float)) != 0) {
        free(host);
        return loop_fail(rk, "--save-params: cannot copy the parameters to the host");
    }
    /* written beside its name and renamed over it once whole */
    char why[1200];
    int bad = outfile_write(path, host, m->nfloats * sizeof(float), why, sizeof(why)) != 0;
    free(host);
    if (bad) {
        char msg[240];
        snprintf(msg, sizeof(msg), "--save-params: cannot write %.200s", why);
        return loop_fail(rk, msg);
    }
    return 0;
}

void *rank_main(void *arg)
{
    struct rank *rk = arg;
    struct run *run = rk->run;
    struct loop L;
    char tname[32];
    snprintf(tname, sizeof(tname), "rank %d", rk->id);
    nvtx_name_thread(tname);
    pthread_setname_np(pthread_self(), tname); /* top -H, gdb and the tests see it too */
    if (loop_init(&L, rk) == 0) {
        uint32_t step = 0;
        for (int epoch = 0; epoch < run->cfg.epochs && !atomic_load(&run->abort); epoch++) {
            sampler_set_epoch(&L.smp, epoch);
            long i = 0;
            for (; i < run->steps_per_epoch && (long)step < run->total_steps; i++, step++) {
                pause_point(run, step);
                if (atomic_load_explicit(&run->abort, memory_order_relaxed))
                    break;
                atomic_store_explicit(&rk->step, step, memory_order_relaxed);
                if (trace_window(&L, step) != 0 || loop_inject(&L, step) != 0 || sync_buffers(&L) != 0 ||
                    L.hooks->step(&L, (int)i, epoch) != 0)
                    break;
                /* per-layer times (--predict, the layer table) are the
                 * steady state's: the first step's set-up is left out */
                if (step == 0)
                    model_layer_times_reset(L.m);
            }
            if (atomic_load(&run->abort))
                break;
            /* (where stages split the model, each trains only its own
             * layers and no one rank can evaluate; one stage holds it all) */
            if (run->cfg.eval && run_stages(&run->cfg) == 1 &&
                (i == run->steps_per_epoch || (long)step >= run->total_steps)) {
                atomic_store(&rk->evaluating, 1);
                int bad = evaluate(&L, epoch);
                atomic_store(&rk->evaluating, 0);
                if (bad)
                    break;
            }
            if ((long)step >= run->total_steps)
                break;
        }
        if (rk->rc == 0)
            save_params(&L);
    }
    if (L.in_window)
        run->gpu->activity_window(&rk->spans_gpu, 0, 0);
    loop_free(&L);
    if (rk->rc != 0) /* (a failure not said through loop_fail: at its end) */
        loop_rank_failed(rk);
    if (rk->rc != 0 || atomic_load(&run->abort)) /* (its peers' gloo waits end now: world.h) */
        world_rank_failed(&run->plan, &rk->comm, &rk->dp_comm);
    atomic_store(&rk->finished, 1);
    return NULL;
}
