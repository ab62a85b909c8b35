/* rank.c - one rank's training loop:
 *   data -> forward -> loss -> backward -> gradient sync -> optimizer
 * with a span recorded around every phase. The loop only talks to the device
 * through struct device_ops and to peers through the strategy, so the same
 * loop drives every device and backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kernels_cpu.h"
#include "model.h"
#include "optim.h"
#include "run.h"
#include "strategy.h"

struct loop {
    struct rank *rk;
    struct run *run;
    const struct run_config *cfg;
    struct model *m;
    struct sgd opt;
    struct sampler smp;
    uint32_t *idx;   /* [local_batch] */
    float *xhost;    /* [local_batch, c, h, w], host staging */
    int32_t *yhost;  /* [local_batch] */
    double slow;     /* compute time multiplier of this rank (>= 1) */
};

static void rec(struct rank *rk, struct spsc_ring *ring, int lane, int cat, int64_t t0, int64_t t1)
{
    struct span s = {.t0_ns = t0, .t1_ns = t1, .step = atomic_load_explicit(&rk->step, memory_order_relaxed),
                     .tag = -1, .lane = (uint8_t)lane, .cat = (uint8_t)cat};
    spsc_push(ring, &s);
}

/* A straggler's compute takes `slow` times as long: spin out the rest. */
static void straggle(const struct loop *L, int64_t t0)
{
    if (L->slow <= 1.0)
        return;
    int64_t d = probe_now_ns() - t0;
    int64_t until = t0 + (int64_t)((double)d * L->slow);
    while (probe_now_ns() < until)
        ;
}

static int fail(struct rank *rk, const char *what)
{
    snprintf(rk->err, sizeof(rk->err), "%s", what);
    rk->rc = -1;
    atomic_store(&rk->run->abort, 1);
    return -1;
}

static int sync_grads(struct loop *L)
{
    struct model *m = L->m;
    struct comm *c = L->rk->comm;
    switch (L->cfg->strategy) {
    case STRAT_SINGLE:
        return 0;
    case STRAT_ALLREDUCE:
        for (int p = 0; p < m->nparams; p++) {
            if (!m->params[p].trainable)
                continue;
            c->tag = (int16_t)p;
            int rc = c->ops->allreduce(c, model_grad(m, p), m->params[p].len, RED_AVG);
            if (rc != 0)
                return rc;
        }
        c->tag = -1;
        return 0;
    default:
        return -1;
    }
}

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

static int train_step(struct loop *L, int i, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    struct model *m = L->m;
    int B = run->local_batch;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);

    int64_t t0 = probe_now_ns();
    for (int k = 0; k < B; k++)
        L->idx[k] = sampler_get(&L->smp, i * B + k);
    data_gather(run->train, L->idx, B, L->xhost, L->yhost);
    if (rk->dev.ops->copy_h2d(&rk->dev, model_input(m), L->xhost, sizeof(float) * (size_t)B *
                              (size_t)m->tensors[m->input].per_sample, STREAM_COPY) != 0)
        return fail(rk, "copying the batch to the device failed");
    rk->dev.ops->record_event(&rk->dev, 0, STREAM_COPY);
    rk->dev.ops->wait_event(&rk->dev, 0, STREAM_COMPUTE);
    int64_t t1 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, t1);

    if (model_forward(m, 1) != 0)
        return fail(rk, m->err);
    int correct = 0;
    float loss = model_loss(m, L->yhost, B, &correct);
    straggle(L, t1);
    int64_t t2 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);
    if (!isfinite(loss)) {
        char msg[96];
        snprintf(msg, sizeof(msg), "training diverged at step %u (loss is %f); try a lower --lr", step, loss);
        return fail(rk, msg);
    }

    if (model_backward(m, 1.0f / (float)B, NULL, NULL) != 0)
        return fail(rk, m->err);
    straggle(L, t2);
    int64_t t3 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t2, t3);

    int rc = sync_grads(L);
    if (rc != 0)
        return rc == COMM_ABORTED ? rc : fail(rk, "gradient synchronisation failed");

    int64_t t4 = probe_now_ns();
    sgd_step(&L->opt, m, (long)step);
    straggle(L, t4);
    int64_t t5 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t4, t5);

    struct step_rec sr = {.step = step, .epoch = (uint32_t)epoch, .t0_ns = t0, .t1_ns = t5, .loss = loss,
                          .lr = sgd_lr_at(&L->opt, (long)step), .correct = correct, .n = B};
    while (!spsc_push(&rk->steps, &sr) && !atomic_load(&run->abort))
        sched_yield(); /* step records are never dropped: the collector drains them */
    return 0;
}

/* Evaluates this rank's share (indices rank, rank+W, ...) of the test split. */
static int evaluate(struct loop *L, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct dataset *test = run->test;
    struct model *m = L->m;
    int B = run->local_batch;
    struct epoch_rec er = {.epoch = epoch};
    int pos = rk->id;
    while (pos < test->n && !atomic_load(&run->abort)) {
        int n = 0;
        for (; n < B && pos < test->n; n++, pos += run->world)
            L->idx[n] = (uint32_t)pos;
        for (int k = n; k < B; k++)
            L->idx[k] = L->idx[0]; /* pad a short last batch; only n are counted */
        data_gather(test, L->idx, B, L->xhost, L->yhost);
        rk->dev.ops->copy_h2d(&rk->dev, model_input(m), L->xhost,
                              sizeof(float) * (size_t)B * (size_t)m->tensors[m->input].per_sample, STREAM_COPY);
        if (model_forward(m, 0) != 0)
            return fail(rk, m->err);
        int correct = 0;
        float loss = model_loss(m, L->yhost, n, &correct);
        er.correct += correct;
        er.total += n;
        er.loss_sum += (double)loss * n;
    }
    while (!spsc_push(&rk->epochs, &er) && !atomic_load(&run->abort))
        sched_yield();
    return 0;
}

static int loop_init(struct loop *L, struct rank *rk)
{
    struct run *run = rk->run;
    const struct run_config *cfg = &run->cfg;
    const struct dataset *tr = run->train;
    char err[256];
    memset(L, 0, sizeof(*L));
    L->rk = rk;
    L->run = run;
    L->cfg = cfg;
    L->slow = cfg->slow_rank == rk->id ? cfg->slow_factor : 1.0;
    cpu_set_threads(cfg->threads_per_rank);
    if (run->devops->open(&rk->dev, rk->id, err, sizeof(err)) != 0)
        return fail(rk, err);
    L->m = model_create(cfg->model, run->local_batch, tr->c, tr->h, tr->w, tr->classes, cfg->seed, err, sizeof(err));
    if (!L->m)
        return fail(rk, err);
    rk->model = L->m;
    rk->nparams_total = L->m->nfloats;
    rk->nparams_trainable = model_trainable_floats(L->m);
    rk->flops_per_sample = model_flops(L->m);
    float lr = cfg->lr * (cfg->scale_lr ? (float)cfg->ranks : 1.0f);
    if (sgd_init(&L->opt, L->m->nfloats, lr, cfg->momentum, cfg->weight_decay, cfg->warmup_steps) != 0)
        return fail(rk, "out of memory for the optimizer");
    if (sampler_init(&L->smp, tr->n, run->world, rk->id, cfg->seed) != 0)
        return fail(rk, "cannot shard the training set");
    size_t per = (size_t)tr->c * tr->h * tr->w;
    L->idx = malloc(sizeof(uint32_t) * (size_t)run->local_batch);
    L->xhost = rk->dev.ops->alloc_host(&rk->dev, sizeof(float) * per * (size_t)run->local_batch);
    L->yhost = malloc(sizeof(int32_t) * (size_t)run->local_batch);
    if (!L->idx || !L->xhost || !L->yhost)
        return fail(rk, "out of memory for the batch buffers");
    if (rk->comm)
        comm_bind(rk->comm, &rk->spans_main, LANE_MAIN, &rk->step);
    return 0;
}

static void loop_free(struct loop *L)
{
    free(L->idx);
    if (L->xhost)
        L->rk->dev.ops->free_host(&L->rk->dev, L->xhost);
    free(L->yhost);
    sgd_free(&L->opt);
    sampler_free(&L->smp);
    /* the model stays for the collector to inspect; run_free destroys it */
}

void *rank_main(void *arg)
{
    struct rank *rk = arg;
    struct run *run = rk->run;
    struct loop L;
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
                if (train_step(&L, (int)i, epoch) != 0)
                    break;
            }
            if (atomic_load(&run->abort))
                break;
            if (run->cfg.eval && (i == run->steps_per_epoch || (long)step >= run->total_steps))
                if (evaluate(&L, epoch) != 0)
                    break;
            if ((long)step >= run->total_steps)
                break;
        }
    }
    loop_free(&L);
    atomic_store(&rk->finished, 1);
    return NULL;
}
