/* rank.c - one rank's training loop:
 *   data -> forward -> loss -> backward -> gradient sync -> optimizer
 * with a span recorded around every phase. The loop only talks to the device
 * through struct device_ops and to peers through the strategy, so the same
 * loop drives every device and backend.
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
#include "sync.h"
#include "zoo.h"

struct loop {
    struct rank *rk;
    struct run *run;
    const struct run_config *cfg;
    struct model *m;
    struct sgd opt;
    struct sampler smp;
    uint32_t *idx;  /* [local_batch] */
    float *xhost;   /* [local_batch, c, h, w], host staging */
    int32_t *yhost; /* [local_batch] */
    double slow;    /* compute time multiplier of this rank (>= 1) */
    int poison;     /* --inject-fault nan: this step's logits go NaN */
    int overflow;   /* --inject-fault overflow: this step's gradients go infinite */
    /* --loss-scale dynamic: the scale (a power of 2), good steps since it
     * last changed, and whether this step's update was skipped */
    float scale, used_scale; /* ... and the one this step's loss was scaled by */
    int good, skipped;
    /* the strategy's view of the flat buffers */
    struct grad_tensor *gt;
    struct grad_layout gl;
    struct grad_wire w16;        /* --grad-compress's format, and where it casts */
    const struct sync_ops *sync; /* the strategy this run of `world` ranks trains with (sync.h) */
    struct sync_engine *engine;  /* its state, or NULL */
    struct device lane_dev;      /* the rank's device for ddp's comm lane and horovod's thread */
    int schedstat_fd;            /* /proc/thread-self/schedstat, or -1 */
    int64_t run_delay;           /* its run delay at the last step's end, or -1 */
    /* dp (DataParallel): rank 0 holds the whole batch and computes the loss;
     * _d buffers are in the model's memory (the device's), the others on the host */
    float *dp_x, *dp_xd;            /* rank 0: [global, c, h, w] (dp_x pinned) */
    int32_t *dp_y;                  /* rank 0: [global] */
    float *dp_yf, *dp_yfd;          /* rank 0: labels as floats, for the scatter (dp_yf pinned) */
    float *dp_ylocal, *dp_ylocal_d; /* [local] */
    float *dp_logits, *dp_logits_h; /* rank 0: [global, classes], device and host */
    float *dp_probs, *dp_dlogits;   /* rank 0: [global, classes], host (dp_dlogits pinned) */
    float *dp_dlogits_d;            /* rank 0: [global, classes] */
    float *dp_dout;                 /* [local, classes] */
    uint32_t *dp_idx;               /* rank 0: [global] */
    /* an asynchronous device (GPU): the batch is staged in device memory by
     * the copy stream while the previous step computes */
    int async;
    /* --parallel model|pipeline: the stages, this rank's stage and the
     * rank of its replica's first (--dp: rank = replica x stages + stage),
     * one model per micro-batch sharing mb[0]'s (L->m's) parameters, the
     * schedule's order (pipeline.h) and the stage's parameters [p0, p1) */
    struct pipe_plan plan;
    int stage, stage0;
    struct model **mb;
    int *pipe_ops;
    int pipe_p0, pipe_p1;
    float *pipe_lc;     /* the last stages' loss and hits, in the model's memory for the broadcast (--dp:
                           [replicas][2], for an allreduce) */
    float *scaler_buf;  /* --loss-scale dynamic on dp and stages: the verdict's float, in the model's memory */
    int traced;         /* CUPTI records this step (every step, or --cupti-sample's window) */
    int in_window;      /* a sampled run: this rank holds the device tracing on */
    uint32_t win_start; /* ... since this step */
    uint32_t gap_step0; /* rank 0: the step after the last window, */
    int64_t gap_t0_ns, gap_step_ns; /* when it started, and the untraced steps' mean time */
    float *stage_x;                 /* device: [local_batch, c, h, w] */
    int32_t *stage_y;               /* device: [local_batch] */
    long staged;                    /* the step index (within the epoch) staged, or -1 */
    float *hash_buf;                /* --check-replicas on a GPU: a host copy of the parameters */
    int has_bn;                     /* the model keeps batch norm running statistics */
    float *bn_flat;                 /* every batch norm's statistics packed for one broadcast, in the model's memory */
    size_t bn_floats;               /* its length */
};

static void rec(struct rank *rk, struct spsc_ring *ring, int lane, int cat, int64_t t0, int64_t t1)
{
    probe_span(ring, lane, cat, atomic_load_explicit(&rk->step, memory_order_relaxed), -1, t0, t1, NULL);
}

/* --inject-fault nan and overflow: the first float at `at` (m's memory)
 * becomes v. */
static int put_value(struct model *m, float *at, float v)
{
    struct device *d = &m->dev;
    if (d->ops->copy(d, at, &v, sizeof(float), STREAM_COMPUTE) != 0 || d->ops->sync(d, STREAM_COMPUTE) != 0) {
        snprintf(m->err, sizeof(m->err), "%s", d->err);
        return -1;
    }
    return 0;
}

/* The training forward; --inject-fault's nan turns the logits' first
 * value into NaN behind it, so that the loss goes NaN the way a real
 * divergence does. */
static int forward(struct loop *L)
{
    struct model *m = L->m;
    if (model_forward(m, 1) != 0)
        return -1;
    return L->poison ? put_value(m, m->tensors[m->output].val, NAN) : 0;
}

/* A straggler's compute takes `slow` times as long: spin out the rest (a
 * device that stretches its own phases does it there, phase_pop). */
static void straggle(const struct loop *L, int64_t t0)
{
    if (L->slow <= 1.0 || L->rk->dev.ops->stretch_end)
        return;
    int64_t d = probe_now_ns() - t0;
    int64_t until = t0 + (int64_t)((double)d * L->slow);
    while (probe_now_ns() < until)
        ;
}

/* The host phase whose GPU work follows: CUPTI attributes kernels by it,
 * and a straggler's device stretches it. Returns 0, or -1 when the device
 * failed (its message in the device). */
static int phase_push(const struct loop *L, int cat)
{
    struct device *d = &L->rk->dev;
    if (L->run->cupti && L->traced && d->ops->phase_mark &&
        d->ops->phase_mark(d, cat, atomic_load_explicit(&L->rk->step, memory_order_relaxed)) != 0)
        return -1;
    return L->slow > 1.0 && d->ops->stretch_begin ? d->ops->stretch_begin(d, cat) : 0;
}

static int phase_pop(const struct loop *L, int cat)
{
    struct device *d = &L->rk->dev;
    return L->slow > 1.0 && d->ops->stretch_end ? d->ops->stretch_end(d, cat, L->slow) : 0;
}

/* The rank's first failure: its message (with the context gathered on the
 * way up) stays in rk->err for the collector, and every rank stops. */
static int fail(struct rank *rk, const char *what)
{
    if (rk->rc == 0)
        snprintf(rk->err, sizeof(rk->err), "%s", what);
    rk->rc = -1;
    atomic_store(&rk->run->abort, 1);
    return -1;
}

/* A device call failed: its message is in the device. */
static int dev_failed(struct rank *rk)
{
    return fail(rk, rk->dev.err);
}

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

/* A 64-bit hash of the parameter bytes: equal hashes on every rank mean the
 * replicas are (with overwhelming probability) bitwise identical. */
static uint64_t param_hash(struct loop *L)
{
    struct model *m = L->m;
    const uint32_t *w = (const uint32_t *)m->param_buf;
    if (L->async) {
        if (!L->hash_buf && !(L->hash_buf = malloc(sizeof(float) * (m->nfloats ? m->nfloats : 1))))
            return 0;
        if (model_memcpy(m, L->hash_buf, m->param_buf, sizeof(float) * m->nfloats) != 0)
            return 0;
        w = (const uint32_t *)L->hash_buf;
    }
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ m->nfloats;
    for (size_t i = 0; i < m->nfloats; i++) {
        h ^= w[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h | 1; /* 0 means "not checked" */
}

/* Nanoseconds this thread has spent runnable but waiting for a core (the
 * kernel's schedstat run delay), or -1 where the kernel does not say. */
static int64_t run_delay_ns(struct loop *L)
{
    char buf[96];
    ssize_t n = L->schedstat_fd >= 0 ? pread(L->schedstat_fd, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0)
        return -1;
    buf[n] = 0;
    unsigned long long on_cpu, waited;
    return sscanf(buf, "%llu %llu", &on_cpu, &waited) == 2 ? (int64_t)waited : -1;
}

static int push_step(struct loop *L, uint32_t step, int epoch, int64_t t0, float loss, int correct)
{
    struct rank *rk = L->rk;
    uint64_t hash = L->cfg->check_replicas ? param_hash(L) : 0;
    int64_t delay = run_delay_ns(L), desched = delay >= 0 && L->run_delay >= 0 ? delay - L->run_delay : -1;
    L->run_delay = delay;
    struct step_rec sr = {.step = step,
                          .epoch = (uint32_t)epoch,
                          .t0_ns = t0,
                          .t1_ns = probe_now_ns(),
                          .loss = loss,
                          .lr = sgd_lr_at(&L->opt, (long)step),
                          .correct = correct,
                          .n = L->run->local_batch,
                          .desched_ns = desched,
                          .param_hash = hash,
                          .untraced = L->run->cupti && !L->traced,
                          .skipped = (uint8_t)L->skipped,
                          .loss_scale = L->cfg->loss_scale == LOSS_SCALE_DYNAMIC ? L->used_scale : 0.0f};
    L->skipped = 0;
    while (!spsc_push(&rk->steps, &sr) && !atomic_load(&L->run->abort))
        sched_yield(); /* step records are never dropped: the collector drains them */
    return 0;
}

static int diverged(struct rank *rk, uint32_t step, float loss)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "training diverged at step %u (loss is %s); try a lower --lr", step,
             isnan(loss) ? "nan"
             : loss > 0  ? "inf"
                         : "-inf");
    return fail(rk, msg);
}

/* A collective failed (or gave up because another rank failed first:
 * that is not this rank's failure). The communicator's message follows
 * `what`; a device hook's, when the device has one and the communicator
 * not. */
static int comm_failed(struct rank *rk, int rc, const char *what)
{
    if (rc == COMM_ABORTED)
        return rc;
    const char *why = rk->comm && rk->comm->err[0] ? rk->comm->err : rk->dev.err[0] ? rk->dev.err : "";
    char msg[sizeof(rk->err)];
    snprintf(msg, sizeof(msg), "%.60s%s%.185s", what, why[0] ? ": " : " failed", why);
    return fail(rk, msg);
}

/* The comm stream waits for what the compute stream has enqueued so far
 * (before a collective reads results of compute): an event, no host sync. */
static int comm_after_compute(struct loop *L)
{
    struct device *d = &L->rk->dev;
    if (d->ops->record_event(d, EV_GRADS, STREAM_COMPUTE) != 0 || d->ops->wait_event(d, EV_GRADS, STREAM_COMM) != 0)
        return dev_failed(L->rk);
    return 0;
}

/* Whether m's trainable gradients among parameters [p0, p1) are all
 * finite (waits for the device). 0, or -1 with m->err set. */
static int grads_all_finite(struct model *m, int p0, int p1, int *finite)
{
    size_t lo, hi;
    *finite = 1;
    for (int i = p0; *finite && model_next_trainable(m, &i, p1, &lo, &hi);) {
        if (m->dev.ops->grads_finite(m, lo, hi, finite) != 0) {
            snprintf(m->err, sizeof(m->err), "loss scaling: %.240s", m->dev.err);
            return -1;
        }
    }
    return 0;
}

/* The scaler's rule on one verdict: a skipped update halves the scale; a
 * taken one is unscaled by the optimizer, and the scale doubles after
 * loss_scale_interval of them. Returns whether to update. */
static int scaler_decide(struct loop *L, int finite)
{
    if (!finite) {
        L->skipped = 1;
        L->scale = L->scale > 0x1p-24f ? 0.5f * L->scale : L->scale;
        L->good = 0;
        return 0;
    }
    L->opt.grad_scale = 1.0f / L->scale;
    if (++L->good >= L->cfg->loss_scale_interval) {
        L->scale = L->scale < 0x1p+24f ? 2.0f * L->scale : L->scale;
        L->good = 0;
    }
    return 1;
}

/* A verdict every rank shares: the sum of the ranks' `bad` flags through
 * buf (one float in the model's memory). 0, or -1 (failed, said). */
static int agree_bad(struct loop *L, float *buf, float *bad)
{
    struct rank *rk = L->rk;
    struct device *d = &rk->dev;
    if (d->ops->copy(d, buf, bad, sizeof(float), STREAM_COMM) != 0)
        return dev_failed(rk);
    int rc = rk->comm->ops->allreduce(rk->comm, buf, 1, RED_SUM);
    if (rc != 0)
        return comm_failed(rk, rc, "agreeing on the loss scaler's verdict");
    if (d->ops->copy(d, bad, buf, sizeof(float), STREAM_COMM) != 0 || d->ops->sync(d, STREAM_COMM) != 0)
        return dev_failed(rk);
    return 0;
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
            return dev_failed(rk);
        for (int k = 0; k < G; k++)
            L->dp_idx[k] = sampler_get(&L->smp, i * G + k);
        data_gather(run->train, L->dp_idx, G, L->dp_x, L->dp_y);
        for (int k = 0; k < G; k++)
            L->dp_yf[k] = (float)L->dp_y[k];
        if (d->ops->copy(d, L->dp_xd, L->dp_x, sizeof(float) * (size_t)G * per, STREAM_COMM) != 0 ||
            d->ops->copy(d, L->dp_yfd, L->dp_yf, sizeof(float) * (size_t)G, STREAM_COMM) != 0)
            return dev_failed(rk);
        rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, probe_now_ns());
    }
    if ((rc = c->ops->scatter(c, L->dp_xd, model_input(m), (size_t)B * per, 0)) != 0 ||
        (rc = c->ops->scatter(c, L->dp_yfd, L->dp_ylocal_d, (size_t)B, 0)) != 0)
        return comm_failed(rk, rc, "dp: scattering the batch");
    int64_t t1 = probe_now_ns();
    if (model_memcpy(m, L->dp_ylocal, L->dp_ylocal_d, sizeof(float) * (size_t)B) != 0)
        return fail(rk, m->err);
    for (int k = 0; k < B; k++)
        L->yhost[k] = (int32_t)L->dp_ylocal[k];
    if (phase_push(L, CAT_FORWARD) != 0)
        return dev_failed(rk);
    int frc = forward(L);
    if (phase_pop(L, CAT_FORWARD) != 0 && frc == 0)
        return dev_failed(rk);
    if (frc != 0)
        return fail(rk, m->err);
    int correct = 0;
    float loss = model_loss(m, L->yhost, B, &correct); /* this replica's share, for the report (waits) */
    straggle(L, t1);
    int64_t t2 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);
    if (!isfinite(loss))
        return m->err[0] ? fail(rk, m->err) : diverged(rk, step, loss);

    if ((rc = c->ops->gather(c, m->tensors[m->output].val, L->dp_logits, (size_t)B * K, 0)) != 0)
        return comm_failed(rk, rc, "dp: gathering the outputs");
    if (rk->id == 0) {
        int64_t ta = probe_now_ns();
        if (model_memcpy(m, L->dp_logits_h, L->dp_logits, sizeof(float) * (size_t)G * K) != 0)
            return fail(rk, m->err);
        softmax_xent_forward(L->dp_probs, L->dp_logits_h, L->dp_y, G, K, NULL);
        /* scaled (by 1 without a scaler; by infinity on an overflow fault here) */
        float gs = L->overflow ? INFINITY : L->scale;
        softmax_xent_backward(L->dp_dlogits, L->dp_probs, L->dp_y, G, K, gs / (float)G);
        if (d->ops->copy(d, L->dp_dlogits_d, L->dp_dlogits, sizeof(float) * (size_t)G * K, STREAM_COMM) != 0)
            return dev_failed(rk);
        rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, ta, probe_now_ns());
    }
    if ((rc = c->ops->scatter(c, L->dp_dlogits_d, L->dp_dout, (size_t)B * K, 0)) != 0)
        return comm_failed(rk, rc, "dp: scattering the output gradients");

    /* an overflow fault on a replica: its output gradient goes infinite */
    if (L->overflow && rk->id != 0 && put_value(m, L->dp_dout, INFINITY) != 0)
        return fail(rk, m->err);
    int64_t t3 = probe_now_ns();
    if (phase_push(L, CAT_BACKWARD) != 0)
        return dev_failed(rk);
    int brc = model_backward_dout(m, L->dp_dout, NULL, NULL);
    if (phase_pop(L, CAT_BACKWARD) != 0 && brc == 0)
        return dev_failed(rk);
    if (brc != 0)
        return fail(rk, m->err);
    straggle(L, t3);
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t3, probe_now_ns());

    size_t lo = L->gl.nfloats, hi = 0;
    for (int p = 0; p < L->gl.n; p++)
        if (L->gl.t[p].trainable) {
            lo = L->gl.t[p].off < lo ? L->gl.t[p].off : lo;
            hi = L->gl.t[p].off + L->gl.t[p].len > hi ? L->gl.t[p].off + L->gl.t[p].len : hi;
        }
    if (hi > lo && comm_after_compute(L) != 0)
        return -1;
    if (hi > lo && (rc = c->ops->reduce(c, m->grad_buf + lo, m->grad_buf + lo, hi - lo, RED_SUM, 0)) != 0)
        return comm_failed(rk, rc, "dp: reducing the gradients");
    /* --loss-scale dynamic: rank 0 judges the summed gradients, and every
     * replica takes its verdict (their scales stay equal for the report) */
    int update = 1;
    if (L->cfg->loss_scale == LOSS_SCALE_DYNAMIC) {
        int finite = 1;
        if (rk->id == 0 && grads_all_finite(m, 0, m->nparams, &finite) != 0)
            return fail(rk, m->err);
        float bad = !finite;
        if (agree_bad(L, L->scaler_buf, &bad) != 0)
            return -1;
        update = scaler_decide(L, bad == 0);
    }
    if (rk->id == 0 && update) {
        int64_t t4 = probe_now_ns();
        if (phase_push(L, CAT_OPTIMIZER) != 0)
            return dev_failed(rk);
        int orc = sgd_step(&L->opt, m, (long)step);
        if (phase_pop(L, CAT_OPTIMIZER) != 0 && orc == 0)
            return dev_failed(rk);
        if (orc != 0)
            return fail(rk, m->err);
        straggle(L, t4);
        rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t4, probe_now_ns());
    }
    /* frozen parameters never change: only the trainable range moves */
    if (hi > lo && comm_after_compute(L) != 0)
        return -1;
    if (hi > lo && (rc = c->ops->broadcast(c, m->param_buf + lo, hi - lo, 0)) != 0)
        return comm_failed(rk, rc, "dp: replicating the parameters");
    return push_step(L, step, epoch, t0, loss, correct);
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
    if (grads_all_finite(m, 0, m->nparams, &finite) != 0)
        return -1;
    return scaler_decide(L, finite) ? sgd_step(&L->opt, m, (long)step) : 0;
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
    if (phase_push(L, CAT_BACKWARD) != 0)
        return dev_failed(rk);
    /* the loss scaled (by 1 without a scaler): every gradient is scaled
     * alike, exactly, being scaled by a power of 2; an overflow fault
     * scales it by infinity, as an fp16 overflow would leave it */
    L->used_scale = L->scale;
    float gs = L->overflow ? INFINITY : L->scale;
    int rc = model_backward(m, gs / (float)L->run->local_batch, L->sync->grad_ready, L->engine);
    int prc = phase_pop(L, CAT_BACKWARD);
    straggle(L, t2);
    nvtx_pop();
    if (rc != 0)
        return fail(rk, m->err);
    if (prc != 0)
        return dev_failed(rk);
    int64_t t3 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t2, t3);

    nvtx_push("gradient sync");
    /* the comm stream waits for backward's kernels (ddp's buckets and
     * horovod's thread wait for their own points of backward through the
     * engine's hooks) */
    if (L->sync->finish && !(L->sync->flags & SYNC_OVERLAPS) && comm_after_compute(L) != 0) {
        nvtx_pop();
        return -1;
    }
    rc = sync_grads(L);
    nvtx_pop();
    if (rc != 0) {
        char what[64];
        snprintf(what, sizeof(what), "gradient synchronisation (%s)", L->sync->name);
        return comm_failed(rk, rc, what);
    }
    /* the optimizer's kernels wait for what the sync left queued on the comm
     * stream: 16-bit gradients' casts back, a device average (a collective
     * itself returns once done) */
    if (L->sync->finish && L->async &&
        (rk->dev.ops->record_event(&rk->dev, EV_COMM_DONE, STREAM_COMM) != 0 ||
         rk->dev.ops->wait_event(&rk->dev, EV_COMM_DONE, STREAM_COMPUTE) != 0))
        return dev_failed(rk);

    int64_t t4 = probe_now_ns();
    nvtx_push("optimizer");
    if (phase_push(L, CAT_OPTIMIZER) != 0)
        return dev_failed(rk);
    rc = scaled_step(L, step);
    prc = phase_pop(L, CAT_OPTIMIZER);
    straggle(L, t4);
    nvtx_pop();
    if (rc != 0)
        return fail(rk, m->err);
    if (prc != 0)
        return dev_failed(rk);
    *t_end = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t4, *t_end);
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
        return dev_failed(rk);
    for (int k = 0; k < B; k++)
        L->idx[k] = sampler_get(&L->smp, (int)i * B + k);
    data_gather(L->run->train, L->idx, B, L->xhost, L->yhost);
    if (d->ops->wait_event(d, EV_STAGE_FREE, STREAM_COPY) != 0 ||
        d->ops->copy(d, L->stage_x, L->xhost, input_bytes(L), STREAM_COPY) != 0 ||
        d->ops->copy(d, L->stage_y, L->yhost, sizeof(int32_t) * (size_t)B, STREAM_COPY) != 0 ||
        d->ops->record_event(d, EV_STAGED, STREAM_COPY) != 0)
        return dev_failed(rk);
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
        return dev_failed(L->rk);
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
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, t1);

    nvtx_push("forward");
    if (phase_push(L, CAT_FORWARD) != 0)
        return dev_failed(rk);
    rc = forward(L);
    if (rc == 0)
        rc = model_loss_begin(m, NULL, B); /* the labels are in place */
    int prc = phase_pop(L, CAT_FORWARD);
    straggle(L, t1);
    nvtx_pop();
    if (rc != 0)
        return fail(rk, m->err);
    if (prc != 0)
        return dev_failed(rk);
    int64_t t2 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);

    /* the next batch, gathered and copied while the GPU computes this one */
    if (i + 1 < run->steps_per_epoch && (long)step + 1 < run->total_steps) {
        nvtx_push("data");
        rc = stage_batch(L, i + 1);
        nvtx_pop();
        if (rc != 0)
            return -1;
        int64_t t = probe_now_ns();
        rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t2, t);
        t2 = t;
    }

    int64_t t5;
    if ((rc = backward_and_update(L, step, t2, &t5)) != 0)
        return rc;
    /* the one wait of the step: the GPU finishing it, then the loss */
    float loss = 0.0f;
    int correct = 0;
    if (model_loss_end(m, &loss, &correct) != 0)
        return fail(rk, m->err);
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_WAIT, t5, probe_now_ns());
    if (!isfinite(loss))
        return diverged(rk, step, loss);
    return push_step(L, step, epoch, t0, loss, correct);
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

/* ---- model and pipeline parallelism (pipeline.h) ---------------------- */

/* Forward + backward time per layer, measured on rank 0's model at the
 * micro-batch (two passes after a warm-up one; on an asynchronous device
 * each layer waits for the device, times_wait) and broadcast, so that
 * every stage computes the same balanced partition. */
static int pipe_measure(struct loop *L, double *cost)
{
    struct rank *rk = L->rk;
    struct model *m = L->m;
    struct device *d = &rk->dev;
    int n = m->nlayers, rc = 0;
    float *buf = calloc((size_t)n, sizeof(float));
    float *dbuf = d->ops->alloc(d, sizeof(float) * (size_t)n); /* the broadcast's, in the model's memory */
    int64_t *t = calloc((size_t)n * 4, sizeof(int64_t));       /* forward, backward: after the warm-up, at the end */
    int32_t *labels = calloc((size_t)m->batch, sizeof(int32_t));
    if (!buf || !dbuf || !t || !labels) {
        rc = fail(rk, "out of memory for the partition");
        goto done;
    }
    if (rk->id == 0) {
        /* (a new model's input is zeroed already where it is device memory) */
        if (!d->ops->async)
            memset(model_input(m), 0, sizeof(float) * (size_t)m->tensors[m->input].stride * (size_t)m->batch);
        m->times_wait = 1;
        int64_t calls[2];
        for (int pass = 0; pass < 3 && rc == 0; pass++) {
            float loss;
            int correct;
            if (model_forward(m, 1) != 0 || model_loss_begin(m, labels, m->batch) != 0 ||
                model_loss_end(m, &loss, &correct) != 0 || model_backward(m, 1.0f / (float)m->batch, NULL, NULL) != 0)
                rc = fail(rk, m->err);
            if (pass == 0)
                model_layer_times(m, t, t + n, n, &calls[0], &calls[1]);
        }
        m->times_wait = 0;
        model_layer_times(m, t + 2 * n, t + 3 * n, n, &calls[0], &calls[1]);
        for (int i = 0; i < n; i++)
            buf[i] = (float)((t[2 * n + i] - t[i]) + (t[3 * n + i] - t[n + i])) / 2.0f;
        if (rc == 0 && d->ops->copy(d, dbuf, buf, sizeof(float) * (size_t)n, STREAM_COMM) != 0)
            rc = dev_failed(rk);
    }
    if (rc == 0) {
        int crc = rk->comm->ops->broadcast(rk->comm, dbuf, (size_t)n, 0);
        if (crc != 0)
            rc = comm_failed(rk, crc, "sending the measured layer times");
    }
    if (rc == 0 &&
        (d->ops->copy(d, buf, dbuf, sizeof(float) * (size_t)n, STREAM_COMM) != 0 || d->ops->sync(d, STREAM_COMM) != 0))
        rc = dev_failed(rk);
    for (int i = 0; i < n && rc == 0; i++)
        cost[i] = buf[i];
done:
    if (dbuf)
        d->ops->free(d, dbuf);
    free(buf);
    free(t);
    free(labels);
    return rc;
}

/* The stages, the micro-batch models and the schedule of this rank. */
static int pipe_init(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = run->train;
    struct model *m = L->m;
    char err[256];
    int S = run_stages(cfg), M = cfg->parallel == PAR_PIPELINE ? cfg->micro_batches : 1;
    for (int t = 0; t < m->ntensors; t++)
        if (m->tensors[t].h16) /* (stages send and receive fp32 activations) */
            return fail(rk, "DDPTOP_H16_CHAIN=1: 16-bit activations between layers train data-parallel only");
    L->stage = rk->id % S;
    L->stage0 = rk->id - L->stage;
    if (cfg->partition[0] || S == 1) {
        char whole[32]; /* one stage is the whole model: nothing to measure */
        snprintf(whole, sizeof(whole), "0:%d", m->nlayers - 1);
        if (pipe_plan_parse(&L->plan, m, S == 1 ? whole : cfg->partition, S, err, sizeof(err)) != 0)
            return fail(rk, err);
    } else {
        double *cost = calloc((size_t)m->nlayers, sizeof(double));
        if (!cost)
            return fail(rk, "out of memory for the partition");
        int rc = pipe_measure(L, cost);
        if (rc == 0 && pipe_plan_balance(&L->plan, m, cost, S, err, sizeof(err)) != 0)
            rc = fail(rk, err);
        free(cost);
        if (rc != 0)
            return rc;
    }
    L->plan.micro = M;
    L->plan.schedule = cfg->parallel == PAR_PIPELINE ? cfg->schedule : SCHED_GPIPE;
    int a = L->plan.first[L->stage], b = L->plan.first[L->stage + 1];
    L->mb = calloc((size_t)M, sizeof(*L->mb));
    L->pipe_ops = malloc(sizeof(int) * 2 * (size_t)M);
    L->pipe_lc = rk->dev.ops->alloc(&rk->dev, 2 * sizeof(float) * (size_t)run_replicas(cfg));
    if (!L->mb || !L->pipe_ops || !L->pipe_lc)
        return fail(rk, "out of memory for the micro-batches");
    pipe_schedule_ops(L->plan.schedule, S, L->stage, M, L->pipe_ops);
    /* one model per micro-batch in flight, all on mb[0]'s parameters (each
     * keeps its own activations and gradients) */
    L->mb[0] = m;
    for (int k = 1; k < M; k++) {
        L->mb[k] = zoo_create(&rk->dev, cfg->model, m->batch, tr->c, tr->h, tr->w,
                              run_classes(cfg, tr->h, tr->w, tr->classes), cfg->seed, err, sizeof(err));
        if (!L->mb[k])
            return fail(rk, err);
        model_free_floats(L->mb[k], L->mb[k]->param_buf);
        L->mb[k]->param_buf = m->param_buf; /* (loop_free gives it back before destroying the model) */
        if (model_set_trainable(L->mb[k], cfg->trainable, err, sizeof(err)) != 0)
            return fail(rk, err);
    }
    /* the stage's parameters: its layers' (a model keeps them in layer order) */
    L->pipe_p0 = L->pipe_p1 = 0;
    for (int i = a; i < b; i++)
        if (m->layers[i].nparam > 0) {
            if (L->pipe_p1 == 0)
                L->pipe_p0 = m->layers[i].param0;
            L->pipe_p1 = m->layers[i].param0 + m->layers[i].nparam;
        }
    rk->stage_first = a;
    rk->stage_end = b;
    pipe_stage_memory(m, a, b, pipe_in_flight(L->plan.schedule, S, L->stage, M), cfg->momentum, rk->stage_mem);
    return 0;
}

/* Whether a gradient flows back through boundary tensor t: not when no
 * layer before it trains (the input, behind a frozen prefix). */
static int pipe_grad_crosses(const struct model *m, int t)
{
    return tensor_has_grad(&m->tensors[t]) && m->tensors[t].need_grad;
}

/* A send or a recv of one micro-batch's boundary tensor, named on failure.
 * On an asynchronous device the comm stream first waits for the compute
 * stream (what is sent has been computed; what a recv overwrites is no
 * longer read), and the compute stream then waits for what was received. */
static int pipe_xfer(struct loop *L, int send, float *buf, size_t n, int peer, const char *what, int k)
{
    struct comm *c = L->rk->comm;
    struct device *d = &L->rk->dev;
    if (comm_after_compute(L) != 0)
        return -1;
    int rc = send ? c->ops->send(c, buf, n, peer) : c->ops->recv(c, buf, n, peer);
    if (rc == 0 && !send &&
        (d->ops->record_event(d, EV_COMM_DONE, STREAM_COMM) != 0 ||
         d->ops->wait_event(d, EV_COMM_DONE, STREAM_COMPUTE) != 0))
        return dev_failed(L->rk);
    if (rc == 0)
        return 0;
    char msg[96];
    snprintf(msg, sizeof(msg), "%s %s rank %d (micro-batch %d)", what, send ? "to" : "from", peer, k);
    return comm_failed(L->rk, rc, msg);
}

/* The stage's update: the micro-batches' gradients of its parameters
 * summed into mb[0]'s; under --loss-scale dynamic the stages' verdicts on
 * their own gradients summed, so that all skip or all step and their
 * scales stay equal; the optimizer over the stage's parameters. 0, or -1
 * (failed, said). */
static int stage_update(struct loop *L, uint32_t step)
{
    struct rank *rk = L->rk;
    struct model *m = L->m;
    struct device *d = &rk->dev;
    int has = L->pipe_p1 > L->pipe_p0;
    if (has) {
        size_t lo = m->params[L->pipe_p0].off, hi = m->params[L->pipe_p1 - 1].off + m->params[L->pipe_p1 - 1].len;
        for (int k = 1; k < L->plan.micro; k++)
            if (d->ops->add(d, m->grad_buf + lo, L->mb[k]->grad_buf + lo, hi - lo, STREAM_COMPUTE) != 0)
                return dev_failed(rk);
        /* --dp: the average over the stage's copies, each of its replica's
         * batch (a replica's gradient is of its batch's mean loss) */
        if (rk->dp_comm) {
            if (comm_after_compute(L) != 0)
                return -1;
            int crc = rk->dp_comm->ops->allreduce(rk->dp_comm, m->grad_buf + lo, hi - lo, RED_AVG);
            if (crc != 0)
                return comm_failed(rk, crc, "averaging the stage's gradients over its replicas");
        }
    }
    if (L->cfg->loss_scale == LOSS_SCALE_DYNAMIC) {
        int finite = 1;
        if (has && grads_all_finite(m, L->pipe_p0, L->pipe_p1, &finite) != 0)
            return fail(rk, m->err);
        float bad = !finite;
        if (agree_bad(L, L->scaler_buf, &bad) != 0)
            return -1;
        if (!scaler_decide(L, bad == 0))
            return 0;
    }
    if (has && sgd_step_params(&L->opt, m, (long)step, L->pipe_p0, L->pipe_p1) != 0)
        return fail(rk, m->err);
    return 0;
}

/* One step of a stage: the batch (every stage samples the same one), then
 * the schedule's forwards and backwards of the micro-batches, activations
 * in from the stage before and out to the next, their gradients the other
 * way; the gradients summed over the micro-batches and one update of the
 * stage's parameters. The last stage's loss goes to every stage. */
static int pipe_step(struct loop *L, int i, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct pipe_plan *p = &L->plan;
    int s = L->stage, S = p->stages, M = p->micro, B = run->local_batch;
    int prev = L->stage0 + s - 1, next = L->stage0 + s + 1; /* the neighbours' ranks */
    int a = p->first[s], b = p->first[s + 1];
    struct model *m = L->m;
    struct device *d = &rk->dev;
    int Bm = m->batch;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);

    int64_t t0 = probe_now_ns();
    L->used_scale = L->scale;
    /* an asynchronous device: the last step's copies out of the host batch
     * are done before it is refilled */
    if (d->ops->async && d->ops->sync(d, STREAM_COMPUTE) != 0)
        return dev_failed(rk);
    if (s == 0 || s == S - 1) {
        for (int k = 0; k < B; k++)
            L->idx[k] = sampler_get(&L->smp, i * B + k);
        data_gather(run->train, L->idx, B, L->xhost, L->yhost);
    }
    size_t per = (size_t)m->tensors[m->input].stride;
    for (int k = 0; s == 0 && k < M; k++)
        if (d->ops->copy(d, model_input(L->mb[k]), L->xhost + (size_t)k * Bm * per, sizeof(float) * per * (size_t)Bm,
                         STREAM_COMPUTE) != 0)
            return dev_failed(rk);
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, probe_now_ns());

    /* floats of one micro-batch's boundary tensors, in and out */
    size_t nin = (size_t)m->tensors[p->cut[s]].stride * (size_t)Bm;
    size_t nout = (size_t)m->tensors[p->cut[s + 1]].stride * (size_t)Bm;
    double loss_sum = 0;
    int correct = 0;
    for (int o = 0; o < 2 * M; o++) {
        int fwd = L->pipe_ops[o] > 0, k = (fwd ? L->pipe_ops[o] : -L->pipe_ops[o]) - 1;
        struct model *mk = L->mb[k];
        if (fwd) {
            if (s > 0 && pipe_xfer(L, 0, mk->tensors[p->cut[s]].val, nin, prev, "activations", k) != 0)
                return -1;
            int64_t t1 = probe_now_ns();
            if (phase_push(L, CAT_FORWARD) != 0)
                return dev_failed(rk);
            int frc = model_forward_range(mk, a, b, 1);
            /* --inject-fault nan: the stage's output turns NaN */
            if (frc == 0 && L->poison)
                frc = put_value(mk, mk->tensors[p->cut[s + 1]].val, NAN);
            /* the last stage's loss: enqueued here, read once every micro-batch is in */
            if (frc == 0 && s == S - 1)
                frc = model_loss_begin(mk, L->yhost + (size_t)k * Bm, Bm);
            if (phase_pop(L, CAT_FORWARD) != 0 && frc == 0)
                return dev_failed(rk);
            if (frc != 0)
                return fail(rk, mk->err);
            straggle(L, t1);
            rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, probe_now_ns());
            if (s < S - 1 && pipe_xfer(L, 1, mk->tensors[p->cut[s + 1]].val, nout, next, "activations", k) != 0)
                return -1;
        } else {
            int seed = -1; /* the last stage starts from the loss */
            if (s < S - 1) {
                seed = p->cut[s + 1];
                if (!pipe_grad_crosses(mk, seed))
                    continue; /* nothing before the next stage trains: no backward here */
                if (pipe_xfer(L, 0, mk->tensors[seed].grad, nout, next, "gradients", k) != 0)
                    return -1;
                /* an overflow fault here: the gradient coming in goes infinite */
                if (L->overflow && put_value(mk, mk->tensors[seed].grad, INFINITY) != 0)
                    return fail(rk, mk->err);
            }
            int64_t t1 = probe_now_ns();
            if (phase_push(L, CAT_BACKWARD) != 0)
                return dev_failed(rk);
            /* each micro-batch's share of the whole batch's mean loss,
             * scaled (by 1 without a scaler; by infinity on an overflow
             * fault in the last stage) */
            float gs = L->overflow && s == S - 1 ? INFINITY : L->scale;
            int brc = model_backward_range(mk, a, b, seed, gs / (float)B);
            if (phase_pop(L, CAT_BACKWARD) != 0 && brc == 0)
                return dev_failed(rk);
            if (brc != 0)
                return fail(rk, mk->err);
            straggle(L, t1);
            rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t1, probe_now_ns());
            if (s > 0 && pipe_grad_crosses(mk, p->cut[s]) &&
                pipe_xfer(L, 1, mk->tensors[p->cut[s]].grad, nin, prev, "gradients", k) != 0)
                return -1;
        }
    }

    for (int k = 0; s == S - 1 && k < M; k++) {
        float l;
        int c;
        if (model_loss_end(L->mb[k], &l, &c) != 0) /* (waits for the device) */
            return fail(rk, L->mb[k]->err);
        loss_sum += (double)l * Bm;
        correct += c;
    }

    int64_t t2 = probe_now_ns();
    if (phase_push(L, CAT_OPTIMIZER) != 0)
        return dev_failed(rk);
    int orc = stage_update(L, step);
    if (phase_pop(L, CAT_OPTIMIZER) != 0 && orc == 0)
        return dev_failed(rk);
    if (orc != 0)
        return -1;
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t2, probe_now_ns());

    /* the loss and the hits, from the last stage to every stage (through
     * the model's memory, where a collective reads); --dp: each replica's
     * last stage fills its pair of a zeroed [replicas][2] and an allreduce
     * (of one value and zeros: exact) gives every stage its replica's */
    int D = run->world / S, rep = rk->id / S, crc;
    float lc[2 * CFG_MAX_RANKS] = {0};
    lc[2 * rep] = (float)(loss_sum / B);
    lc[2 * rep + 1] = (float)correct;
    if ((s == S - 1 || D > 1) && d->ops->copy(d, L->pipe_lc, lc, sizeof(float) * 2 * (size_t)D, STREAM_COMM) != 0)
        return dev_failed(rk);
    if (D > 1)
        crc = rk->comm->ops->allreduce(rk->comm, L->pipe_lc, 2 * (size_t)D, RED_SUM);
    else
        crc = rk->comm->ops->broadcast(rk->comm, L->pipe_lc, 2, S - 1);
    if (crc != 0)
        return comm_failed(rk, crc, "sending the loss");
    if (d->ops->copy(d, lc, L->pipe_lc, sizeof(float) * 2 * (size_t)D, STREAM_COMM) != 0 ||
        d->ops->sync(d, STREAM_COMM) != 0)
        return dev_failed(rk);
    lc[0] = lc[2 * rep];
    lc[1] = lc[2 * rep + 1];
    if (!isfinite(lc[0]) && s == S - 1) /* the stage that computed the loss says so; the others stop with it */
        return diverged(rk, step, lc[0]);
    return push_step(L, step, epoch, t0, lc[0], (int)lc[1]);
}

static int train_step(struct loop *L, int i, int epoch)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    struct model *m = L->m;
    int B = run->local_batch;
    uint32_t step = atomic_load_explicit(&rk->step, memory_order_relaxed);
    if (L->cfg->parallel != PAR_DATA)
        return pipe_step(L, i, epoch);
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
        return fail(rk, "copying the batch to the device failed");
    rk->dev.ops->record_event(&rk->dev, EV_STAGED, STREAM_COPY);
    rk->dev.ops->wait_event(&rk->dev, EV_STAGED, STREAM_COMPUTE);
    int64_t t1 = probe_now_ns();
    nvtx_pop();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, t1);

    nvtx_push("forward");
    int rcf = forward(L);
    int correct = 0;
    float loss = rcf == 0 ? model_loss(m, L->yhost, B, &correct) : 0.0f;
    straggle(L, t1);
    nvtx_pop();
    if (rcf != 0)
        return fail(rk, m->err);
    int64_t t2 = probe_now_ns();
    rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, t2);
    if (!isfinite(loss))
        return diverged(rk, step, loss);

    int64_t t5;
    int rc = backward_and_update(L, step, t2, &t5);
    if (rc != 0)
        return rc;
    return push_step(L, step, epoch, t0, loss, correct);
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
                return dev_failed(L->rk);
        }
    }
    return 0;
}

static int sync_buffers(struct loop *L)
{
    if (!L->bn_flat)
        return 0;                   /* one rank, no batch norm, or --no-broadcast-buffers */
    if (comm_after_compute(L) != 0) /* the last forward's updates are done */
        return -1;
    struct device *d = &L->rk->dev;
    struct comm *c = L->rk->comm;
    int root = L->rk->id == 0;
    /* rank 0 packs, one broadcast, the others unpack */
    if (root && bn_copy(L, 1) != 0)
        return -1;
    int rc = c->ops->broadcast(c, L->bn_flat, L->bn_floats, 0);
    if (rc != 0)
        return comm_failed(L->rk, rc, "broadcasting batch norm's running statistics");
    if (root)
        return 0;
    /* the next forward updates the statistics: after the unpacking copies */
    if (bn_copy(L, 0) != 0)
        return -1;
    if (d->ops->record_event(d, EV_COMM_DONE, STREAM_COMM) != 0 ||
        d->ops->wait_event(d, EV_COMM_DONE, STREAM_COMPUTE) != 0)
        return dev_failed(L->rk);
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
            return dev_failed(rk);
        data_gather(test, L->idx, B, L->xhost, L->yhost);
        if (d->ops->copy(d, model_input(m), L->xhost,
                         sizeof(float) * (size_t)B * (size_t)m->tensors[m->input].per_sample, STREAM_COPY) != 0 ||
            d->ops->record_event(d, EV_STAGED, STREAM_COPY) != 0 || d->ops->wait_event(d, EV_STAGED, STREAM_COMPUTE))
            return dev_failed(rk);
        if (model_forward(m, 0) != 0)
            return fail(rk, m->err);
        int correct = 0;
        float loss = model_loss(m, L->yhost, n, &correct);
        if (!isfinite(loss) && m->err[0])
            return fail(rk, m->err);
        er.correct += correct;
        er.total += n;
        er.loss_sum += (double)loss * n;
    }
    while (!spsc_push(&rk->epochs, &er) && !atomic_load(&run->abort))
        sched_yield();
    return 0;
}

/* A GPU rank's communicator: NCCL, or ddptop's device ring where ranks
 * share a GPU (run.c decides). */
static struct comm *device_comm(struct rank *rk, char *err, size_t errlen)
{
    struct run *run = rk->run;
    if (run->use_nccl) /* its initialisation and waits give up when a peer fails */
        return run->gpu->nccl_create(run->nccl_id, run->world, rk->id, &rk->dev, &run->abort, err, errlen);
    return run->gpu->ring_create(run->shm, rk->id, run->cfg.algo, &rk->dev);
}

/* --dp on a GPU: the communicator of its stage's copies (rank = replica x
 * stages + stage), NCCL's or the shared GPU's ring as the world's. */
static struct comm *device_dp_comm(struct rank *rk, char *err, size_t errlen)
{
    struct run *run = rk->run;
    int S = run_stages(&run->cfg), s = rk->id % S, d = rk->id / S;
    struct comm *c =
        run->use_nccl ? run->gpu->nccl_create(run->dp_nccl_id[s], run->world / S, d, &rk->dev, &run->abort, err, errlen)
                      : run->gpu->ring_create(run->dp_shm[s], d, run->cfg.algo, &rk->dev);
    if (c)
        comm_set_group(c, s);
    return c;
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
    rk->dev.rank = rk->id;
    rk->dev.precision = cfg->precision; /* read when a model's kernels are made */
    rk->dev.conv_algo = cfg->cudnn_algo;
    L->slow = cfg->slow_rank == rk->id ? cfg->slow_factor : 1.0;
    L->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    L->run_delay = run_delay_ns(L);
    cpu_set_threads(cfg->threads_per_rank);
    L->async = run->devops->async;
    L->staged = -1;
    if (run->devops->open(&rk->dev, run->on_gpu ? rk->gpu : rk->id) != 0)
        return dev_failed(rk);
    if (run->on_gpu) {
        /* the device communicator first: NCCL's initialisation waits for every rank */
        err[0] = 0;
        if (run->world > 1 && !(rk->comm = device_comm(rk, err, sizeof(err))))
            return fail(rk, err[0] ? err : "cannot create the device communicator");
        if (run_replicas(cfg) > 1 && cfg->parallel != PAR_DATA && !(rk->dp_comm = device_dp_comm(rk, err, sizeof(err))))
            return fail(rk, err[0] ? err : "cannot create the communicator of its stage's copies");
        if (run->cupti)
            run->gpu->activity_register(&rk->dev, rk->id, &rk->spans_gpu);
    }
    int micro = cfg->parallel == PAR_PIPELINE ? cfg->micro_batches : 1; /* a model holds one micro-batch */
    L->m = zoo_create(&rk->dev, cfg->model, run->local_batch / micro, tr->c, tr->h, tr->w,
                      run_classes(cfg, tr->h, tr->w, tr->classes), cfg->seed, err, sizeof(err));
    if (!L->m)
        return fail(rk, err);
    if (model_set_trainable(L->m, cfg->trainable, err, sizeof(err)) != 0) {
        model_destroy(L->m);
        L->m = NULL;
        return fail(rk, err);
    }
    rk->model = L->m;
    for (int i = 0; i < L->m->nlayers; i++)
        if (layer_bn_running(&L->m->layers[i], 0)) {
            L->has_bn = 1;
            L->bn_floats += 2 * (size_t)L->m->tensors[L->m->layers[i].out].c;
        }
    if (L->has_bn && run->world > 1 && cfg->broadcast_buffers && cfg->parallel == PAR_DATA &&
        !(L->bn_flat = rk->dev.ops->alloc(&rk->dev, sizeof(float) * L->bn_floats)))
        return fail(rk, "out of memory for the batch norm statistics' broadcast");
    rk->nparams_total = L->m->nfloats;
    rk->nparams_trainable = model_trainable_floats(L->m);
    rk->flops_per_sample = model_flops(L->m);
    float lr = (float)run_lr_peak(cfg);
    L->scale = L->used_scale = cfg->loss_scale == LOSS_SCALE_DYNAMIC ? CFG_LOSS_SCALE_INIT : 1.0f;
    if (cfg->loss_scale == LOSS_SCALE_DYNAMIC && !(L->scaler_buf = rk->dev.ops->alloc(&rk->dev, sizeof(float))))
        return fail(rk, "out of memory for the loss scaler");
    if (sgd_init_model(&L->opt, L->m, lr, cfg->momentum, cfg->weight_decay, cfg->warmup_steps) != 0)
        return fail(rk, "out of memory for the optimizer");
    sgd_set_decay(&L->opt, cfg->lr_cosine ? run->total_steps : 0);
    L->sync = sync_ops_at(cfg->strategy, run->world);
    int dp = (L->sync->flags & SYNC_ROOT_STEPS) != 0;
    /* dp: rank 0 alone samples, the whole batch at a time; the stages of
     * a replica all sample its batch (the first uses its inputs, the last
     * its labels), each replica (--dp) from its own shard */
    int staged = cfg->parallel != PAR_DATA;
    int shards = staged ? run_replicas(cfg) : dp ? 1 : run->world;
    int shard = staged ? rk->id / run_stages(cfg) : dp ? 0 : rk->id;
    if (sampler_init(&L->smp, tr->n, shards, shard, cfg->seed) != 0)
        return fail(rk, "cannot shard the training set");
    size_t per = (size_t)tr->c * tr->h * tr->w;
    L->idx = malloc(sizeof(uint32_t) * (size_t)run->local_batch);
    L->xhost = rk->dev.ops->alloc_host(&rk->dev, sizeof(float) * per * (size_t)run->local_batch);
    L->yhost = rk->dev.ops->alloc_host(&rk->dev, sizeof(int32_t) * (size_t)run->local_batch);
    if (!L->idx || !L->xhost || !L->yhost)
        return fail(rk, "out of memory for the batch buffers");
    if (L->async) {
        L->stage_x = rk->dev.ops->alloc(&rk->dev, sizeof(float) * per * (size_t)run->local_batch);
        L->stage_y = rk->dev.ops->alloc(&rk->dev, sizeof(int32_t) * (size_t)run->local_batch);
        if (!L->stage_x || !L->stage_y)
            return dev_failed(rk);
    }
    if (rk->comm) {
        comm_bind(rk->comm, &rk->spans_main, LANE_MAIN, &rk->step);
        rk->comm->timeout_ns = (int64_t)(cfg->comm_timeout_s * 1e9);
    }
    if (rk->dp_comm) {
        comm_bind(rk->dp_comm, &rk->spans_main, LANE_MAIN, &rk->step);
        rk->dp_comm->timeout_ns = (int64_t)(cfg->comm_timeout_s * 1e9);
    }

    struct model *m = L->m;
    L->gt = calloc((size_t)m->nparams, sizeof(*L->gt));
    if (!L->gt)
        return fail(rk, "out of memory");
    for (int p = 0; p < m->nparams; p++)
        L->gt[p] = (struct grad_tensor){m->params[p].off, m->params[p].len, m->params[p].trainable};
    L->gl = (struct grad_layout){m->nparams, L->gt, m->param_buf, m->grad_buf, m->nfloats};
    int G = run->global_batch, K = m->classes, B = run->local_batch;
    if (cfg->parallel != PAR_DATA)
        return pipe_init(L);
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
            return fail(rk, err);
    }
    if (dp) {
        struct device *d = &rk->dev;
        L->dp_ylocal = malloc(sizeof(float) * (size_t)B);
        L->dp_ylocal_d = d->ops->alloc(d, sizeof(float) * (size_t)B);
        L->dp_dout = d->ops->alloc(d, sizeof(float) * (size_t)B * K);
        if (!L->dp_ylocal || !L->dp_ylocal_d || !L->dp_dout)
            return fail(rk, "out of memory for DataParallel buffers");
        if (rk->id == 0) {
            L->dp_x = d->ops->alloc_host(d, sizeof(float) * per * (size_t)G);
            L->dp_xd = d->ops->alloc(d, sizeof(float) * per * (size_t)G);
            L->dp_y = malloc(sizeof(int32_t) * (size_t)G);
            L->dp_yf = d->ops->alloc_host(d, sizeof(float) * (size_t)G);
            L->dp_yfd = d->ops->alloc(d, sizeof(float) * (size_t)G);
            L->dp_idx = malloc(sizeof(uint32_t) * (size_t)G);
            L->dp_logits = d->ops->alloc(d, sizeof(float) * (size_t)G * K);
            L->dp_logits_h = malloc(sizeof(float) * (size_t)G * K);
            L->dp_probs = malloc(sizeof(float) * (size_t)G * K);
            L->dp_dlogits = d->ops->alloc_host(d, sizeof(float) * (size_t)G * K);
            L->dp_dlogits_d = d->ops->alloc(d, sizeof(float) * (size_t)G * K);
            if (!L->dp_x || !L->dp_xd || !L->dp_y || !L->dp_yf || !L->dp_yfd || !L->dp_idx || !L->dp_logits ||
                !L->dp_logits_h || !L->dp_probs || !L->dp_dlogits || !L->dp_dlogits_d)
                return fail(rk, "out of memory for DataParallel buffers");
        }
    }
    return 0;
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
    if (L->sync && L->sync->destroy)
        L->sync->destroy(L->engine);
    free(L->gt);
    if (L->async && d->impl)
        d->ops->sync(d, STREAM_COMM); /* dp's copies into the device run on the comm stream */
    float *dev_bufs[] = {L->dp_xd, L->dp_yfd, L->dp_ylocal_d, L->dp_logits, L->dp_dlogits_d, L->dp_dout, L->bn_flat};
    for (size_t k = 0; k < sizeof(dev_bufs) / sizeof(dev_bufs[0]); k++)
        if (dev_bufs[k])
            d->ops->free(d, dev_bufs[k]);
    float *pinned[] = {L->dp_x, L->dp_yf, L->dp_dlogits};
    for (size_t k = 0; k < sizeof(pinned) / sizeof(pinned[0]); k++)
        if (pinned[k])
            d->ops->free_host(d, pinned[k]);
    free(L->dp_y);
    free(L->dp_ylocal);
    free(L->dp_logits_h);
    free(L->dp_probs);
    free(L->dp_idx);
    for (int k = 1; L->mb && k < L->plan.micro; k++)
        if (L->mb[k]) {
            L->mb[k]->param_buf = NULL; /* mb[0]'s */
            model_destroy(L->mb[k]);
        }
    free(L->mb);
    free(L->pipe_ops);
    if (L->pipe_lc)
        d->ops->free(d, L->pipe_lc);
    if (L->scaler_buf)
        d->ops->free(d, L->scaler_buf);
    /* the model stays for the collector to inspect; run_free destroys it */
}

/* --inject-fault, at the top of step `step` on its rank: returns 0 to go
 * on with the step, -1 when the rank stops here. */
static int inject(struct loop *L, uint32_t step)
{
    const struct fault *f = &L->cfg->fault;
    struct rank *rk = L->rk;
    L->poison = 0;
    L->overflow = 0;
    if (f->kind == FAULT_NONE || f->rank != rk->id || (long)step < f->step)
        return 0;
    if (f->kind == FAULT_SLOW) {
        L->slow = L->slow > 5.0 ? L->slow : 5.0; /* from here on */
        return 0;
    }
    if ((long)step != f->step)
        return 0;
    char msg[128];
    switch (f->kind) {
    case FAULT_NAN:
        L->poison = 1;
        return 0;
    case FAULT_OVERFLOW:
        L->overflow = 1;
        return 0;
    case FAULT_CRASH:
        /* the thread dies without raising abort: its peers find out from
         * the collector, or from --comm-timeout */
        snprintf(rk->err, sizeof(rk->err), "the rank's thread died at step %u (injected fault)", step);
        rk->rc = -1;
        return -1;
    case FAULT_HANG:
        /* takes no part in anything until the run is stopped: a peer's
         * collective times out (--comm-timeout), naming this rank */
        while (!atomic_load(&L->run->abort)) {
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        return -1;
    case FAULT_OOM:
        snprintf(msg, sizeof(msg), "step %u: out of memory for the activations (injected fault)", step);
        return fail(rk, msg);
    case FAULT_COMM_ERROR:
        if (rk->comm)
            comm_break(rk->comm, "the link to the peers failed (injected fault)");
        return 0;
    default:
        return 0;
    }
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
        return dev_failed(L->rk);
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
        return fail(rk, "--save-params: cannot copy the parameters to the host");
    }
    /* written beside its name and renamed over it once whole */
    char why[1200];
    int bad = outfile_write(path, host, m->nfloats * sizeof(float), why, sizeof(why)) != 0;
    free(host);
    if (bad) {
        char msg[240];
        snprintf(msg, sizeof(msg), "--save-params: cannot write %.200s", why);
        return fail(rk, msg);
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
                if (trace_window(&L, step) != 0 || inject(&L, step) != 0 || sync_buffers(&L) != 0 ||
                    train_step(&L, (int)i, epoch) != 0)
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
    atomic_store(&rk->finished, 1);
    return NULL;
}
