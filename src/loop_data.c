/* loop_data.c - a data-parallel step (the data mode's hooks, mode.h):
 *   data -> forward -> loss -> backward -> gradient sync -> optimizer
 * with a span recorded around every phase. The gradients are synchronised
 * by the strategy's entry (sync.h): its engine is told of each final
 * gradient during backward (ddp, horovod) and finishes after it; the device
 * hooks here order its work on a GPU's streams. dp (DataParallel), whose
 * root alone steps, has a step of its own; an asynchronous device stages
 * the next batch while this one computes.
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

/* dp (DataParallel)'s own state (struct loop's own): rank 0 holds the
 * whole batch and computes the loss; _d buffers are in the model's memory
 * (the device's), the others on the host */
struct dp_bufs {
    float *dp_x, *dp_xd;            /* rank 0: [global, c, h, w] (dp_x pinned) */
    int32_t *dp_y;                  /* rank 0: [global] */
    float *dp_yf, *dp_yfd;          /* rank 0: labels as floats, for the scatter (dp_yf pinned) */
    float *dp_ylocal, *dp_ylocal_d; /* [local] */
    float *dp_logits, *dp_logits_h; /* rank 0: [global, classes], device and host */
    float *dp_probs, *dp_dlogits;   /* rank 0: [global, classes], host (dp_dlogits pinned) */
    float *dp_dlogits_d;            /* rank 0: [global, classes] */
    float *dp_dout;                 /* [local, classes] */
    uint32_t *dp_idx;               /* rank 0: [global] */
};

/* gather-scatter's rank-ordered average where the gradients are: a kernel
 * on the comm stream, between the gather and the broadcast. */
static int gs_average_on_device(void *ctx, float *dst, const float *slices, int world, size_t n)
{
    struct loop *L = ctx;
    struct rank *rk = L->rk;
    struct device *d = &rk->dev;
    if (d->ops->average_slices(d, dst, slices, world, n, STREAM_COMM) != 0) {
        snprintf(rk->comm->err, sizeof(rk->comm->err), "%s", d->err);
        return -1;
    }
    return 0;
}

/* Synchronises gradients after backward (every strategy but dp; one
 * rank's, single's, has nothing to synchronise). */
static int sync_grads(struct loop *L)
{
    return L->sync->finish ? L->sync->finish(L->engine, &L->rk->spans_main) : 0;
}

/* DataParallel: rank 0 loads the whole batch and scatters it; replicas run
 * forward; rank 0 gathers the outputs, computes the loss of the whole batch
 * and scatters the output gradients; replicas run backward; gradients are
 * reduced to rank 0, which alone steps, then replicates its parameters.
 * Whatever a collective touches lives in the model's memory (the device's;
 * the comm stream orders the copies into it), so the same steps run on the
 * CPU and on GPUs; the loss of the whole batch is computed on rank 0's host. */
static int dp_step(struct loop *L, int i, int epoch)
{
    struct dp_bufs *D = L->own;
    struct rank *rk = L->rk;
    struct run *run = L->run;
    struct model *m = L->m;
    struct comm *c = rk->comm;
    struct device *d = &rk->dev;
    int B = run->local_batch, G = run->global_batch, K = m->classes;
    size_t per = (size_t)m->tensors[m->input].per_sample;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);
    int rc;

    int64_t t0 = probe_now_ns();
    L->used_scale = L->scale;
    if (rk->id == 0) {
        if (d->ops->sync(d, STREAM_COMM) != 0) /* the last copies out of dp_x and dp_yf are done */
            return loop_dev_failed(rk);
        for (int k = 0; k < G; k++)
            D->dp_idx[k] = sampler_get(&L->smp, i * G + k);
        data_gather(run->train, D->dp_idx, G, D->dp_x, D->dp_y);
        for (int k = 0; k < G; k++)
            D->dp_yf[k] = (float)D->dp_y[k];
        if (d->ops->copy(d, D->dp_xd, D->dp_x, sizeof(float) * (size_t)G * per, STREAM_COMM) != 0 ||
            d->ops->copy(d, D->dp_yfd, D->dp_yf, sizeof(float) * (size_t)G, STREAM_COMM) != 0)
            return loop_dev_failed(rk);
        loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, probe_now_ns());
    }
    if ((rc = c->ops->scatter(c, D->dp_xd, model_input(m), (size_t)B * per, 0)) != 0 ||
        (rc = c->ops->scatter(c, D->dp_yfd, D->dp_ylocal_d, (size_t)B, 0)) != 0)
        return loop_comm_failed(rk, rc, "dp: scattering the batch");
    int64_t t1 = probe_now_ns();
    if (model_memcpy(m, D->dp_ylocal, D->dp_ylocal_d, sizeof(float) * (size_t)B) != 0)
        return loop_fail(rk, m->err);
    for (int k = 0; k < B; k++)
        L->yhost[k] = (int32_t)D->dp_ylocal[k];
    if (loop_phase_push(L, CAT_FORWARD) != 0)
        return loop_dev_failed(rk);
    int frc = loop_forward(L);
    if (loop_phase_pop(L, CAT_FORWARD) != 0 && frc == 0)
        return loop_dev_failed(rk);
    if (frc != 0)
        return loop_fail(rk, m->err);
    int correct = 0;
    float loss = model_loss(m, L->yhost, B, &correct); /* this replica's share, for the report (waits) */
    loop_straggle(L, t1);
    int64_t t2 = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);
    if (!isfinite(loss))
        return m->err[0] ? loop_fail(rk, m->err) : loop_diverged(rk, step, loss);

    if ((rc = c->ops->gather(c, m->tensors[m->output].val, D->dp_logits, (size_t)B * K, 0)) != 0)
        return loop_comm_failed(rk, rc, "dp: gathering the outputs");
    if (rk->id == 0) {
        int64_t ta = probe_now_ns();
        if (model_memcpy(m, D->dp_logits_h, D->dp_logits, sizeof(float) * (size_t)G * K) != 0)
            return loop_fail(rk, m->err);
        softmax_xent_forward(D->dp_probs, D->dp_logits_h, D->dp_y, G, K, NULL);
        /* scaled (by 1 without a scaler; by infinity on an overflow fault here) */
        float gs = L->overflow ? INFINITY : L->scale;
        softmax_xent_backward(D->dp_dlogits, D->dp_probs, D->dp_y, G, K, gs / (float)G);
        if (d->ops->copy(d, D->dp_dlogits_d, D->dp_dlogits, sizeof(float) * (size_t)G * K, STREAM_COMM) != 0)
            return loop_dev_failed(rk);
        loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, ta, probe_now_ns());
    }
    if ((rc = c->ops->scatter(c, D->dp_dlogits_d, D->dp_dout, (size_t)B * K, 0)) != 0)
        return loop_comm_failed(rk, rc, "dp: scattering the output gradients");

    /* an overflow fault on a replica: its output gradient goes infinite */
    if (L->overflow && rk->id != 0 && loop_put_value(m, D->dp_dout, INFINITY) != 0)
        return loop_fail(rk, m->err);
    int64_t t3 = probe_now_ns();
    if (loop_phase_push(L, CAT_BACKWARD) != 0)
        return loop_dev_failed(rk);
    int brc = model_backward_dout(m, D->dp_dout, NULL, NULL);
    if (loop_phase_pop(L, CAT_BACKWARD) != 0 && brc == 0)
        return loop_dev_failed(rk);
    if (brc != 0)
        return loop_fail(rk, m->err);
    loop_straggle(L, t3);
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t3, probe_now_ns());

    size_t lo, hi;
    grad_trainable_range(&L->gl, &lo, &hi);
    if (hi > lo && loop_comm_after_compute(L) != 0)
        return -1;
    if (hi > lo && (rc = c->ops->reduce(c, m->grad_buf + lo, m->grad_buf + lo, hi - lo, RED_SUM, 0)) != 0)
        return loop_comm_failed(rk, rc, "dp: reducing the gradients");
    /* --loss-scale dynamic: rank 0 judges the summed gradients, and every
     * replica takes its verdict (their scales stay equal for the report) */
    int update = 1;
    if (L->cfg->loss_scale == LOSS_SCALE_DYNAMIC) {
        int finite = 1;
        if (rk->id == 0 && loop_grads_all_finite(m, 0, m->nparams, &finite) != 0)
            return loop_fail(rk, m->err);
        float bad = !finite;
        if (loop_agree_bad(L, L->scaler_buf, &bad) != 0)
            return -1;
        update = loop_scaler_decide(L, bad == 0);
    }
    if (rk->id == 0 && update) {
        int64_t t4 = probe_now_ns();
        if (loop_phase_push(L, CAT_OPTIMIZER) != 0)
            return loop_dev_failed(rk);
        int orc = sgd_step(&L->opt, m, (long)step);
        if (loop_phase_pop(L, CAT_OPTIMIZER) != 0 && orc == 0)
            return loop_dev_failed(rk);
        if (orc != 0)
            return loop_fail(rk, m->err);
        loop_straggle(L, t4);
        loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t4, probe_now_ns());
    }
    /* frozen parameters never change: only the trainable range moves */
    if (hi > lo && loop_comm_after_compute(L) != 0)
        return -1;
    if (hi > lo && (rc = c->ops->broadcast(c, m->param_buf + lo, hi - lo, 0)) != 0)
        return loop_comm_failed(rk, rc, "dp: replicating the parameters");
    return loop_push_step(L, step, epoch, t0, loss, correct);
}

/* --loss-scale dynamic, after the gradients are synchronised (alike on
 * every rank, so every rank decides alike): gradients that are not all
 * finite skip the update and halve the scale; finite ones are unscaled by
 * the optimizer, and the scale doubles after loss_scale_interval of them
 * (torch.cuda.amp.GradScaler's rule). Without a scaler: the update. */
static int scaled_step(struct loop *L, uint32_t step)
{
    struct model *m = L->m;
    if (L->cfg->loss_scale != LOSS_SCALE_DYNAMIC)
        return sgd_step(&L->opt, m, (long)step);
    int finite;
    if (loop_grads_all_finite(m, 0, m->nparams, &finite) != 0)
        return -1;
    return loop_scaler_decide(L, finite) ? sgd_step(&L->opt, m, (long)step) : 0;
}

/* The second half of a step on every device: backward from the loss,
 * gradient synchronisation, the optimizer; *t_end is when the update was
 * enqueued (done, on the CPU). Returns 0, or what the step returns. */
static int backward_and_update(struct loop *L, uint32_t step, int64_t t2, int64_t *t_end)
{
    struct rank *rk = L->rk;
    struct model *m = L->m;
    if (L->sync->begin)
        L->sync->begin(L->engine);
    nvtx_push("backward");
    if (loop_phase_push(L, CAT_BACKWARD) != 0)
        return loop_dev_failed(rk);
    /* the loss scaled (by 1 without a scaler): every gradient is scaled
     * alike, exactly, being scaled by a power of 2; an overflow fault
     * scales it by infinity, as an fp16 overflow would leave it */
    L->used_scale = L->scale;
    float gs = L->overflow ? INFINITY : L->scale;
    int rc = model_backward(m, gs / (float)L->run->local_batch, L->sync->grad_ready, L->engine);
    int prc = loop_phase_pop(L, CAT_BACKWARD);
    loop_straggle(L, t2);
    nvtx_pop();
    if (rc != 0)
        return loop_fail(rk, m->err);
    if (prc != 0)
        return loop_dev_failed(rk);
    int64_t t3 = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t2, t3);

    nvtx_push("gradient sync");
    /* the comm stream waits for backward's kernels (ddp's buckets and
     * horovod's thread wait for their own points of backward through the
     * engine's hooks) */
    if (L->sync->finish && !(L->sync->flags & SYNC_OVERLAPS) && loop_comm_after_compute(L) != 0) {
        nvtx_pop();
        return -1;
    }
    rc = sync_grads(L);
    nvtx_pop();
    if (rc != 0) {
        char what[64];
        snprintf(what, sizeof(what), "gradient synchronisation (%s)", L->sync->name);
        return loop_comm_failed(rk, rc, what);
    }
    /* the optimizer's kernels wait for what the sync left queued on the comm
     * stream: 16-bit gradients' casts back, a device average (a collective
     * itself returns once done) */
    if (L->sync->finish && L->async &&
        (rk->dev.ops->record_event(&rk->dev, EV_COMM_DONE, STREAM_COMM) != 0 ||
         rk->dev.ops->wait_event(&rk->dev, EV_COMM_DONE, STREAM_COMPUTE) != 0))
        return loop_dev_failed(rk);

    int64_t t4 = probe_now_ns();
    nvtx_push("optimizer");
    if (loop_phase_push(L, CAT_OPTIMIZER) != 0)
        return loop_dev_failed(rk);
    rc = scaled_step(L, step);
    prc = loop_phase_pop(L, CAT_OPTIMIZER);
    loop_straggle(L, t4);
    nvtx_pop();
    if (rc != 0)
        return loop_fail(rk, m->err);
    if (prc != 0)
        return loop_dev_failed(rk);
    *t_end = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t4, *t_end);
    return 0;
}

/* ---- the asynchronous device (GPU) path --------------------------------------
 * Calls only enqueue work. The batch of step i+1 is gathered by the host and
 * copied by the copy stream into staging buffers while step i computes; a
 * step moves the staged batch into the model (device to device, on the
 * compute stream) and waits for the GPU once, when it reads the loss. */

static size_t input_bytes(const struct loop *L)
{
    return sizeof(float) * (size_t)L->run->local_batch * (size_t)L->m->tensors[L->m->input].per_sample;
}

/* Gathers batch i of the epoch into the pinned host buffers and enqueues
 * its copy into the staging buffers. */
static int stage_batch(struct loop *L, long i)
{
    struct rank *rk = L->rk;
    struct device *d = &rk->dev;
    int B = L->run->local_batch;
    /* the previous copies out of the pinned buffers end before they are refilled */
    if (d->ops->sync(d, STREAM_COPY) != 0)
        return loop_dev_failed(rk);
    for (int k = 0; k < B; k++)
        L->idx[k] = sampler_get(&L->smp, (int)i * B + k);
    data_gather(L->run->train, L->idx, B, L->xhost, L->yhost);
    if (d->ops->wait_event(d, EV_STAGE_FREE, STREAM_COPY) != 0 ||
        d->ops->copy(d, L->stage_x, L->xhost, input_bytes(L), STREAM_COPY) != 0 ||
        d->ops->copy(d, L->stage_y, L->yhost, sizeof(int32_t) * (size_t)B, STREAM_COPY) != 0 ||
        d->ops->record_event(d, EV_STAGED, STREAM_COPY) != 0)
        return loop_dev_failed(rk);
    L->staged = i;
    return 0;
}

/* The staged batch becomes the model's input and labels (compute stream). */
static int load_staged(struct loop *L)
{
    struct device *d = &L->rk->dev;
    struct model *m = L->m;
    if (d->ops->wait_event(d, EV_STAGED, STREAM_COMPUTE) != 0 ||
        d->ops->copy(d, model_input(m), L->stage_x, input_bytes(L), STREAM_COMPUTE) != 0 ||
        d->ops->copy(d, m->labels, L->stage_y, sizeof(int32_t) * (size_t)L->run->local_batch, STREAM_COMPUTE) != 0 ||
        d->ops->record_event(d, EV_STAGE_FREE, STREAM_COMPUTE) != 0)
        return loop_dev_failed(L->rk);
    L->staged = -1;
    return 0;
}

static int train_step_async(struct loop *L, int i, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    struct model *m = L->m;
    int B = run->local_batch;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);

    int64_t t0 = probe_now_ns();
    nvtx_push("data");
    int rc = L->staged == i ? 0 : stage_batch(L, i);
    if (rc == 0)
        rc = load_staged(L);
    nvtx_pop();
    if (rc != 0)
        return -1;
    int64_t t1 = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, t1);

    nvtx_push("forward");
    if (loop_phase_push(L, CAT_FORWARD) != 0)
        return loop_dev_failed(rk);
    rc = loop_forward(L);
    if (rc == 0)
        rc = model_loss_begin(m, NULL, B); /* the labels are in place */
    int prc = loop_phase_pop(L, CAT_FORWARD);
    loop_straggle(L, t1);
    nvtx_pop();
    if (rc != 0)
        return loop_fail(rk, m->err);
    if (prc != 0)
        return loop_dev_failed(rk);
    int64_t t2 = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);

    /* the next batch, gathered and copied while the GPU computes this one */
    if (i + 1 < run->steps_per_epoch && (long)step + 1 < run->total_steps) {
        nvtx_push("data");
        rc = stage_batch(L, i + 1);
        nvtx_pop();
        if (rc != 0)
            return -1;
        int64_t t = probe_now_ns();
        loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t2, t);
        t2 = t;
    }

    int64_t t5;
    if ((rc = backward_and_update(L, step, t2, &t5)) != 0)
        return rc;
    /* the one wait of the step: the GPU finishing it, then the loss */
    float loss = 0.0f;
    int correct = 0;
    if (model_loss_end(m, &loss, &correct) != 0)
        return loop_fail(rk, m->err);
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_WAIT, t5, probe_now_ns());
    if (!isfinite(loss))
        return loop_diverged(rk, step, loss);
    return loop_push_step(L, step, epoch, t0, loss, correct);
}

/* The strategies' stream hooks (struct sync_device, sync.h). lane_init and before run on the comm
 * lane, through the lane's own handle on the device (its messages must not
 * race the main thread's), and leave a failure in the communicator. */
static int lane_failed(struct loop *L, int rc)
{
    if (rc != 0)
        snprintf(L->rk->comm->err, sizeof(L->rk->comm->err), "%s", L->lane_dev.err);
    return rc;
}

static int hook_lane_init(void *ctx)
{
    struct loop *L = ctx;
    return lane_failed(L, L->lane_dev.ops->make_current(&L->lane_dev));
}

static int hook_ready(void *ctx, int bucket)
{
    struct loop *L = ctx;
    struct device *d = &L->rk->dev;
    return d->ops->record_event(d, EV_BUCKET0 + bucket % DEV_BUCKET_EVENTS, STREAM_COMPUTE);
}

static int hook_before(void *ctx, int bucket)
{
    struct loop *L = ctx;
    struct device *d = &L->lane_dev;
    return lane_failed(L, d->ops->wait_event(d, EV_BUCKET0 + bucket % DEV_BUCKET_EVENTS, STREAM_COMM));
}

static void *lane_alloc(void *ctx, size_t bytes)
{
    struct loop *L = ctx;
    return L->rk->dev.ops->alloc(&L->rk->dev, bytes);
}

static void lane_release(void *ctx, void *p)
{
    struct loop *L = ctx;
    L->rk->dev.ops->free(&L->rk->dev, p);
}

/* --grad-compress on a device that casts (struct grad_wire; one whose
 * memory is the host's has no casts, and the strategy casts on the host):
 * the casts run on the comm stream, through lane_dev whichever thread
 * synchronises (ddp's lane, horovod's thread, or the main thread for the
 * allreduce strategy, where no other thread uses it), in order with the
 * collectives there. */
static int wire_to_16(void *ctx, uint16_t *dst, const float *src, size_t n, int fmt)
{
    struct loop *L = ctx;
    struct device *d = &L->lane_dev;
    return lane_failed(L, d->ops->to_16(d, dst, src, n, fmt == W16_BF16, STREAM_COMM));
}

static int wire_from_16(void *ctx, float *dst, const uint16_t *src, size_t n, int fmt)
{
    struct loop *L = ctx;
    struct device *d = &L->lane_dev;
    return lane_failed(L, d->ops->from_16(d, dst, src, n, fmt == W16_BF16, STREAM_COMM));
}

static int lane_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    struct loop *L = ctx;
    return lane_failed(L, L->lane_dev.ops->copy(&L->lane_dev, dst, src, bytes, STREAM_COMM));
}

static int lane_settle(void *ctx)
{
    struct loop *L = ctx;
    return lane_failed(L, L->lane_dev.ops->sync(&L->lane_dev, STREAM_COMM));
}

/* Step i of the epoch: dp's own, the asynchronous device's, or the
 * synchronous one here. */
int loop_data_step(struct loop *L, int i, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    struct model *m = L->m;
    int B = run->local_batch;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);
    if (L->sync->flags & SYNC_ROOT_STEPS)
        return dp_step(L, i, epoch);
    if (L->async)
        return train_step_async(L, i, epoch);

    int64_t t0 = probe_now_ns();
    nvtx_push("data");
    for (int k = 0; k < B; k++)
        L->idx[k] = sampler_get(&L->smp, i * B + k);
    data_gather(run->train, L->idx, B, L->xhost, L->yhost);
    if (rk->dev.ops->copy(&rk->dev, model_input(m), L->xhost,
                          sizeof(float) * (size_t)B * (size_t)m->tensors[m->input].per_sample, STREAM_COPY) != 0)
        return loop_fail(rk, "copying the batch to the device failed");
    rk->dev.ops->record_event(&rk->dev, EV_STAGED, STREAM_COPY);
    rk->dev.ops->wait_event(&rk->dev, EV_STAGED, STREAM_COMPUTE);
    int64_t t1 = probe_now_ns();
    nvtx_pop();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, t1);

    nvtx_push("forward");
    int rcf = loop_forward(L);
    int correct = 0;
    float loss = rcf == 0 ? model_loss(m, L->yhost, B, &correct) : 0.0f;
    loop_straggle(L, t1);
    nvtx_pop();
    if (rcf != 0)
        return loop_fail(rk, m->err);
    int64_t t2 = probe_now_ns();
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);
    if (!isfinite(loss))
        return loop_diverged(rk, step, loss);

    int64_t t5;
    int rc = backward_and_update(L, step, t2, &t5);
    if (rc != 0)
        return rc;
    return loop_push_step(L, step, epoch, t0, loss, correct);
}

/* The strategy's engine, with the device's stream hooks where the
 * gradients live on an asynchronous device, and dp's buffers: rank 0
 * holds the whole batch and computes the loss; _d buffers are in the
 * model's memory (the device's), the others on the host. */
int loop_data_init(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = run->train;
    struct model *m = L->m;
    char err[256];
    size_t per = (size_t)tr->c * tr->h * tr->w;
    int G = run->global_batch, K = m->classes, B = run->local_batch;
    if (L->async)
        L->lane_dev = rk->dev; /* (ddp's comm lane and horovod's thread work through it) */
    L->w16 = (struct grad_wire){.fmt = cfg->grad_compress};
    if (L->async && cfg->grad_compress && rk->dev.ops->to_16)
        L->w16 = (struct grad_wire){cfg->grad_compress, wire_to_16, wire_from_16, lane_alloc, lane_release, L};
    if (L->sync->create) {
        /* the device's stream hooks: ddp's comm lane and horovod's thread
         * work through lane_dev */
        const struct sync_device dev = {hook_lane_init, hook_ready, hook_before, lane_copy, lane_settle};
        struct sync_args a = {.comm = rk->comm,
                              .g = &L->gl,
                              .p = run_sync_params(cfg),
                              .w16 = &L->w16,
                              .dev = L->async ? &dev : NULL,
                              .alloc = lane_alloc,
                              .release = lane_release,
                              .average = rk->dev.ops->average_slices ? gs_average_on_device : NULL,
                              .ctx = L,
                              .lane_ring = &rk->spans_comm,
                              .main_ring = &rk->spans_main,
                              .step = &rk->step};
        if (!(L->engine = L->sync->create(&a, err, sizeof(err))))
            return loop_fail(rk, err);
    }
    if (!(L->sync->flags & SYNC_ROOT_STEPS))
        return 0;
    struct device *d = &rk->dev;
    struct dp_bufs *D = calloc(1, sizeof(*D));
    if (!(L->own = D))
        return loop_fail(rk, "out of memory for DataParallel buffers");
    D->dp_ylocal = malloc(sizeof(float) * (size_t)B);
    D->dp_ylocal_d = d->ops->alloc(d, sizeof(float) * (size_t)B);
    D->dp_dout = d->ops->alloc(d, sizeof(float) * (size_t)B * K);
    if (!D->dp_ylocal || !D->dp_ylocal_d || !D->dp_dout)
        return loop_fail(rk, "out of memory for DataParallel buffers");
    if (rk->id != 0)
        return 0;
    D->dp_x = d->ops->alloc_host(d, sizeof(float) * per * (size_t)G);
    D->dp_xd = d->ops->alloc(d, sizeof(float) * per * (size_t)G);
    D->dp_y = malloc(sizeof(int32_t) * (size_t)G);
    D->dp_yf = d->ops->alloc_host(d, sizeof(float) * (size_t)G);
    D->dp_yfd = d->ops->alloc(d, sizeof(float) * (size_t)G);
    D->dp_idx = malloc(sizeof(uint32_t) * (size_t)G);
    D->dp_logits = d->ops->alloc(d, sizeof(float) * (size_t)G * K);
    D->dp_logits_h = malloc(sizeof(float) * (size_t)G * K);
    D->dp_probs = malloc(sizeof(float) * (size_t)G * K);
    D->dp_dlogits = d->ops->alloc_host(d, sizeof(float) * (size_t)G * K);
    D->dp_dlogits_d = d->ops->alloc(d, sizeof(float) * (size_t)G * K);
    if (!D->dp_x || !D->dp_xd || !D->dp_y || !D->dp_yf || !D->dp_yfd || !D->dp_idx || !D->dp_logits ||
        !D->dp_logits_h || !D->dp_probs || !D->dp_dlogits || !D->dp_dlogits_d)
        return loop_fail(rk, "out of memory for DataParallel buffers");
    return 0;
}

/* The engine (its threads joined), then dp's buffers. */
void loop_data_free(struct loop *L)
{
    struct device *d = &L->rk->dev;
    if (L->sync && L->sync->destroy)
        L->sync->destroy(L->engine);
    if (L->async && d->impl)
        d->ops->sync(d, STREAM_COMM); /* dp's copies into the device run on the comm stream */
    struct dp_bufs *D = L->own;
    if (!D)
        return;
    float *dev_bufs[] = {D->dp_xd, D->dp_yfd, D->dp_ylocal_d, D->dp_logits, D->dp_dlogits_d, D->dp_dout};
    for (size_t k = 0; k < sizeof(dev_bufs) / sizeof(dev_bufs[0]); k++)
        if (dev_bufs[k])
            d->ops->free(d, dev_bufs[k]);
    float *pinned[] = {D->dp_x, D->dp_yf, D->dp_dlogits};
    for (size_t k = 0; k < sizeof(pinned) / sizeof(pinned[0]); k++)
        if (pinned[k])
            d->ops->free_host(d, pinned[k]);
    free(D->dp_y);
    free(D->dp_ylocal);
    free(D->dp_logits_h);
    free(D->dp_probs);
    free(D->dp_idx);
    free(D);
    L->own = NULL;
}
