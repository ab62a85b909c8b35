/* loop_stages.c - model and pipeline parallelism's hooks (mode.h): each
 * rank runs one stage of the layers (pipeline.h's partition, by hand or
 * balanced over measured layer times), sends activations forward and
 * gradients back, and runs its micro-batches in the schedule's order; --dp
 * copies of the stages average their gradients.
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

/* The stages' own state (struct loop's own): the stages, this rank's
 * stage and the rank of its replica's first (--dp: rank = replica x
 * stages + stage), one model per micro-batch sharing mb[0]'s (L->m's)
 * parameters, the schedule's order (pipeline.h) and the stage's
 * parameters [p0, p1) */
struct stages {
    struct pipe_plan plan;
    int stage, stage0;
    struct model **mb;
    int *pipe_ops;
    int pipe_p0, pipe_p1;
    int slots;      /* micro-batches in flight at once (pipe_in_flight): sets of activations held */
    float *pipe_lc; /* the last stages' loss and hits, in the model's memory for the broadcast (--dp:
                       [replicas][2], for an allreduce) */
};

/* ---- model and pipeline parallelism (pipeline.h) ---------------------- */

/* Forward + backward time per layer, measured by rank 0 on a whole model
 * of its own at the micro-batch, freed before the stage's is held (two
 * passes after a warm-up one; on an asynchronous device each layer waits
 * for the device, times_wait), and broadcast, so that every stage computes
 * the same balanced partition. The other ranks read only the plan's
 * shape. */
static int pipe_measure(struct loop *L, const struct model *plan, double *cost)
{
    struct rank *rk = L->rk;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = L->run->train;
    struct device *d = &rk->dev;
    int n = plan->nlayers, rc = 0;
    struct model *m = NULL;
    char err[256];
    if (rk->id == 0) {
        m = zoo_create(d, cfg->model, plan->batch, tr->c, tr->h, tr->w, plan->classes, cfg->seed, err, sizeof(err));
        if (!m || model_set_trainable(m, cfg->trainable, err, sizeof(err)) != 0) {
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "%.250s (the balanced partition times the whole model on rank 0: "
                     "--partition FIRST:LAST,... needs no timing)",
                     err);
            model_destroy(m);
            return loop_fail(rk, msg);
        }
    }
    float *buf = calloc((size_t)n, sizeof(float));
    float *dbuf = d->ops->alloc(d, sizeof(float) * (size_t)n); /* the broadcast's, in the model's memory */
    int64_t *t = calloc((size_t)n * 4, sizeof(int64_t));       /* forward, backward: after the warm-up, at the end */
    int32_t *labels = calloc((size_t)plan->batch, sizeof(int32_t));
    if (!buf || !dbuf || !t || !labels) {
        rc = loop_fail(rk, "out of memory for the partition");
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
                rc = loop_fail(rk, m->err);
            if (pass == 0)
                model_layer_times(m, t, t + n, n, &calls[0], &calls[1]);
        }
        m->times_wait = 0;
        model_layer_times(m, t + 2 * n, t + 3 * n, n, &calls[0], &calls[1]);
        for (int i = 0; i < n; i++)
            buf[i] = (float)((t[2 * n + i] - t[i]) + (t[3 * n + i] - t[n + i])) / 2.0f;
        if (rc == 0 && d->ops->copy(d, dbuf, buf, sizeof(float) * (size_t)n, STREAM_COMM) != 0)
            rc = loop_dev_failed(rk);
    }
    if (rc == 0) {
        int crc = rk->comm->ops->broadcast(rk->comm, dbuf, (size_t)n, 0);
        if (crc != 0)
            rc = loop_comm_failed(rk, crc, "sending the measured layer times");
    }
    if (rc == 0 &&
        (d->ops->copy(d, buf, dbuf, sizeof(float) * (size_t)n, STREAM_COMM) != 0 || d->ops->sync(d, STREAM_COMM) != 0))
        rc = loop_dev_failed(rk);
    for (int i = 0; i < n && rc == 0; i++)
        cost[i] = buf[i];
done:
    if (dbuf)
        d->ops->free(d, dbuf);
    free(buf);
    free(t);
    free(labels);
    model_destroy(m);
    return rc;
}

/* The stages and this rank's: the layers its model holds (a stage keeps
 * only its own layers' parameters, gradients, momentum and activations). */
int loop_stages_hold(struct loop *L, const struct model *plan, int *a, int *b)
{
    struct rank *rk = L->rk;
    const struct run_config *cfg = L->cfg;
    char err[256];
    struct stages *st = calloc(1, sizeof(*st));
    if (!(L->own = st))
        return loop_fail(rk, "out of memory for the stages");
    int micro = (L->mode->flags & MODE_MICRO) != 0;
    int S = run_stages(cfg), M = micro ? cfg->micro_batches : 1;
    st->stage = rk->id % S;
    st->stage0 = rk->id - st->stage;
    if (cfg->partition[0] || S == 1) {
        char whole[32]; /* one stage is the whole model: nothing to measure */
        snprintf(whole, sizeof(whole), "0:%d", plan->nnum - 1);
        if (pipe_plan_parse(&st->plan, plan, S == 1 ? whole : cfg->partition, S, err, sizeof(err)) != 0)
            return loop_fail(rk, err);
    } else {
        double *cost = calloc((size_t)plan->nlayers, sizeof(double));
        if (!cost)
            return loop_fail(rk, "out of memory for the partition");
        int rc = pipe_measure(L, plan, cost);
        if (rc == 0 && pipe_plan_balance(&st->plan, plan, cost, S, err, sizeof(err)) != 0)
            rc = loop_fail(rk, err);
        free(cost);
        if (rc != 0)
            return rc;
    }
    st->plan.micro = M;
    st->plan.schedule = micro ? cfg->schedule : SCHED_GPIPE;
    *a = st->plan.first[st->stage];
    *b = st->plan.first[st->stage + 1];
    return 0;
}

/* What micro-batch k's model (k >= 1) shares: mb[0]'s parameters and
 * scratch; from k = 2 on, mb[1]'s gradients (each micro-batch's are
 * computed into them and added to mb[0]'s at once: loop_stages_step); and
 * from k = slots on, the activations of micro-batch k - slots's model,
 * whose backward has run before k's forward in either schedule
 * (pipeline.h). */
static struct model_shared stage_shared(const struct stages *st, int k)
{
    return (struct model_shared){.params = st->mb[0]->param_buf,
                                 .acc = st->mb[0]->acc,
                                 .grads = k >= 2 ? st->mb[1]->grad_buf : NULL,
                                 .acts = k >= st->slots ? st->mb[k % st->slots] : NULL};
}

/* The micro-batch models and the schedule of this rank's stage. */
int loop_stages_init(struct loop *L)
{
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct run_config *cfg = L->cfg;
    const struct dataset *tr = run->train;
    struct model *m = L->m;
    struct stages *st = L->own;
    char err[256];
    int S = st->plan.stages, M = st->plan.micro;
    for (int t = 0; t < m->ntensors; t++)
        if (m->tensors[t].h16) /* (stages send and receive fp32 activations) */
            return loop_fail(rk, "DDPTOP_H16_CHAIN=1: 16-bit activations between layers train data-parallel only");
    int a = st->plan.first[st->stage], b = st->plan.first[st->stage + 1];
    st->mb = calloc((size_t)M, sizeof(*st->mb));
    st->pipe_ops = malloc(sizeof(int) * 2 * (size_t)M);
    st->pipe_lc = rk->dev.ops->alloc(&rk->dev, 2 * sizeof(float) * (size_t)run_replicas(cfg));
    if (!st->mb || !st->pipe_ops || !st->pipe_lc)
        return loop_fail(rk, "out of memory for the micro-batches");
    pipe_schedule_ops(st->plan.schedule, S, st->stage, M, st->pipe_ops);
    /* one model per micro-batch (its own layers' state: dropout's draws,
     * batch norm's statistics), holding the stage's layers on mb[0]'s
     * parameters, on one gradient buffer past mb[0]'s, and on as many sets
     * of activations as micro-batches are in flight (stage_shared) */
    st->slots = pipe_in_flight(st->plan.schedule, S, st->stage, M);
    st->mb[0] = m;
    for (int k = 1; k < M; k++) {
        st->mb[k] =
            zoo_plan(&rk->dev, cfg->model, m->batch, tr->c, tr->h, tr->w, m->classes, cfg->seed, err, sizeof(err));
        if (!st->mb[k])
            return loop_fail(rk, err);
        struct model_shared sh = stage_shared(st, k); /* (loop_stages_free gives them back) */
        if (model_hold(st->mb[k], a, b, &sh, err, sizeof(err)) != 0 ||
            model_set_trainable(st->mb[k], cfg->trainable, err, sizeof(err)) != 0)
            return loop_fail(rk, err);
    }
    /* the stage's parameters: its layers' (a model keeps them in layer order) */
    st->pipe_p0 = st->pipe_p1 = 0;
    for (int i = a; i < b; i++)
        if (m->layers[i].nparam > 0) {
            if (st->pipe_p1 == 0)
                st->pipe_p0 = m->layers[i].param0;
            st->pipe_p1 = m->layers[i].param0 + m->layers[i].nparam;
        }
    rk->stage_first = model_layer_num(m, a); /* (the user's numbers: the same on any CPU) */
    rk->stage_end = model_layer_num(m, b);
    pipe_stage_memory(m, a, b, pipe_in_flight(st->plan.schedule, S, st->stage, M), cfg->momentum, rk->stage_mem, M);
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
    if (loop_comm_after_compute(L) != 0)
        return -1;
    int rc = send ? c->ops->send(c, buf, n, peer) : c->ops->recv(c, buf, n, peer);
    if (rc == 0 && !send &&
        (d->ops->record_event(d, EV_COMM_DONE, STREAM_COMM) != 0 ||
         d->ops->wait_event(d, EV_COMM_DONE, STREAM_COMPUTE) != 0))
        return loop_dev_failed(L->rk);
    if (rc == 0)
        return 0;
    char msg[96];
    snprintf(msg, sizeof(msg), "%s %s rank %d (micro-batch %d)", what, send ? "to" : "from", peer, k);
    return loop_comm_failed(L->rk, rc, msg);
}

/* The stage's update, its micro-batches' gradients summed in mb[0]'s
 * already: --dp's average over the stage's copies; under --loss-scale dynamic the stages' verdicts on
 * their own gradients summed, so that all skip or all step and their
 * scales stay equal; the optimizer over the stage's parameters. 0, or -1
 * (failed, said). */
static int stage_update(struct loop *L, uint32_t step)
{
    struct stages *st = L->own;
    struct rank *rk = L->rk;
    struct model *m = L->m;
    int has = st->pipe_p1 > st->pipe_p0;
    if (has) {
        size_t lo = m->params[st->pipe_p0].off, hi = m->params[st->pipe_p1 - 1].off + m->params[st->pipe_p1 - 1].len;
        /* (the micro-batches' gradients are summed into mb[0]'s as they come: loop_stages_step)
         * --dp: the average over the stage's copies, each of its replica's
         * batch (a replica's gradient is of its batch's mean loss) */
        if (rk->dp_comm) {
            if (loop_comm_after_compute(L) != 0)
                return -1;
            int crc = rk->dp_comm->ops->allreduce(rk->dp_comm, m->grad_buf + lo, hi - lo, RED_AVG);
            if (crc != 0)
                return loop_comm_failed(rk, crc, "averaging the stage's gradients over its replicas");
        }
    }
    if (L->cfg->loss_scale == LOSS_SCALE_DYNAMIC) {
        int finite = 1;
        if (has && loop_grads_all_finite(m, st->pipe_p0, st->pipe_p1, &finite) != 0)
            return loop_fail(rk, m->err);
        float bad = !finite;
        if (loop_agree_bad(L, L->scaler_buf, &bad) != 0)
            return -1;
        if (!loop_scaler_decide(L, bad == 0))
            return 0;
    }
    if (has && sgd_step_params(&L->opt, m, (long)step, st->pipe_p0, st->pipe_p1) != 0)
        return loop_fail(rk, m->err);
    return 0;
}

/* One step of a stage: the batch (every stage samples the same one), then
 * the schedule's forwards and backwards of the micro-batches, activations
 * in from the stage before and out to the next, their gradients the other
 * way; the gradients summed over the micro-batches and one update of the
 * stage's parameters. The last stage's loss goes to every stage. */
int loop_stages_step(struct loop *L, int i, int epoch)
{
    struct stages *st = L->own;
    struct rank *rk = L->rk;
    struct run *run = L->run;
    const struct pipe_plan *p = &st->plan;
    int s = st->stage, S = p->stages, M = p->micro, B = run->local_batch;
    int prev = st->stage0 + s - 1, next = st->stage0 + s + 1; /* the neighbours' ranks */
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
        return loop_dev_failed(rk);
    if (s == 0 || s == S - 1) {
        for (int k = 0; k < B; k++)
            L->idx[k] = sampler_get(&L->smp, i * B + k);
        data_gather(run->train, L->idx, B, L->xhost, L->yhost);
    }
    size_t per = (size_t)m->tensors[m->input].stride;
    for (int k = 0; s == 0 && k < M; k++)
        if (d->ops->copy(d, model_input(st->mb[k]), L->xhost + (size_t)k * Bm * per, sizeof(float) * per * (size_t)Bm,
                         STREAM_COMPUTE) != 0)
            return loop_dev_failed(rk);
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_DATA, t0, probe_now_ns());

    /* floats of one micro-batch's boundary tensors, in and out */
    size_t nin = (size_t)m->tensors[p->cut[s]].stride * (size_t)Bm;
    size_t nout = (size_t)m->tensors[p->cut[s + 1]].stride * (size_t)Bm;
    double loss_sum = 0;
    int correct = 0;
    for (int o = 0; o < 2 * M; o++) {
        int fwd = st->pipe_ops[o] > 0, k = (fwd ? st->pipe_ops[o] : -st->pipe_ops[o]) - 1;
        struct model *mk = st->mb[k];
        if (fwd) {
            if (s > 0 && pipe_xfer(L, 0, mk->tensors[p->cut[s]].val, nin, prev, "activations", k) != 0)
                return -1;
            int64_t t1 = probe_now_ns();
            if (loop_phase_push(L, CAT_FORWARD) != 0)
                return loop_dev_failed(rk);
            int frc = model_forward_range(mk, a, b, 1);
            /* --inject-fault nan: the stage's output turns NaN */
            if (frc == 0 && L->poison)
                frc = loop_put_value(mk, mk->tensors[p->cut[s + 1]].val, NAN);
            /* the last stage's loss: enqueued here, read once every micro-batch is in */
            if (frc == 0 && s == S - 1)
                frc = model_loss_begin(mk, L->yhost + (size_t)k * Bm, Bm);
            if (loop_phase_pop(L, CAT_FORWARD) != 0 && frc == 0)
                return loop_dev_failed(rk);
            if (frc != 0)
                return loop_fail(rk, mk->err);
            loop_straggle(L, t1);
            loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_FORWARD, t1, probe_now_ns());
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
                if (L->overflow && loop_put_value(mk, mk->tensors[seed].grad, INFINITY) != 0)
                    return loop_fail(rk, mk->err);
            }
            int64_t t1 = probe_now_ns();
            if (loop_phase_push(L, CAT_BACKWARD) != 0)
                return loop_dev_failed(rk);
            /* each micro-batch's share of the whole batch's mean loss,
             * scaled (by 1 without a scaler; by infinity on an overflow
             * fault in the last stage) */
            float gs = L->overflow && s == S - 1 ? INFINITY : L->scale;
            int brc = model_backward_range(mk, a, b, seed, gs / (float)B);
            /* a later micro-batch's gradients (in mb[1]'s buffer, which they
             * share) added to mb[0]'s at once, in micro-batch order as the
             * backwards run: the sums of one buffer a micro-batch */
            if (brc == 0 && k > 0 && st->pipe_p1 > st->pipe_p0) {
                size_t lo = m->params[st->pipe_p0].off,
                       hi = m->params[st->pipe_p1 - 1].off + m->params[st->pipe_p1 - 1].len;
                if (d->ops->add(d, m->grad_buf + lo, mk->grad_buf + lo, hi - lo, STREAM_COMPUTE) != 0)
                    return loop_dev_failed(rk);
            }
            if (loop_phase_pop(L, CAT_BACKWARD) != 0 && brc == 0)
                return loop_dev_failed(rk);
            if (brc != 0)
                return loop_fail(rk, mk->err);
            loop_straggle(L, t1);
            loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_BACKWARD, t1, probe_now_ns());
            if (s > 0 && pipe_grad_crosses(mk, p->cut[s]) &&
                pipe_xfer(L, 1, mk->tensors[p->cut[s]].grad, nin, prev, "gradients", k) != 0)
                return -1;
        }
    }

    for (int k = 0; s == S - 1 && k < M; k++) {
        float l;
        int c;
        if (model_loss_end(st->mb[k], &l, &c) != 0) /* (waits for the device) */
            return loop_fail(rk, st->mb[k]->err);
        loss_sum += (double)l * Bm;
        correct += c;
    }

    int64_t t2 = probe_now_ns();
    if (loop_phase_push(L, CAT_OPTIMIZER) != 0)
        return loop_dev_failed(rk);
    int orc = stage_update(L, step);
    if (loop_phase_pop(L, CAT_OPTIMIZER) != 0 && orc == 0)
        return loop_dev_failed(rk);
    if (orc != 0)
        return -1;
    loop_rec(rk, &rk->spans_main, LANE_MAIN, CAT_OPTIMIZER, t2, probe_now_ns());

    /* the loss and the hits, from the last stage to every stage (through
     * the model's memory, where a collective reads); --dp: each replica's
     * last stage fills its pair of a zeroed [replicas][2] and an allreduce
     * (of one value and zeros: exact) gives every stage its replica's */
    int D = run->world / S, rep = rk->id / S, crc;
    float lc[2 * CFG_MAX_RANKS] = {0};
    lc[2 * rep] = (float)(loss_sum / B);
    lc[2 * rep + 1] = (float)correct;
    if ((s == S - 1 || D > 1) && d->ops->copy(d, st->pipe_lc, lc, sizeof(float) * 2 * (size_t)D, STREAM_COMM) != 0)
        return loop_dev_failed(rk);
    if (D > 1)
        crc = rk->comm->ops->allreduce(rk->comm, st->pipe_lc, 2 * (size_t)D, RED_SUM);
    else
        crc = rk->comm->ops->broadcast(rk->comm, st->pipe_lc, 2, S - 1);
    if (crc != 0)
        return loop_comm_failed(rk, crc, "sending the loss");
    if (d->ops->copy(d, lc, st->pipe_lc, sizeof(float) * 2 * (size_t)D, STREAM_COMM) != 0 ||
        d->ops->sync(d, STREAM_COMM) != 0)
        return loop_dev_failed(rk);
    lc[0] = lc[2 * rep];
    lc[1] = lc[2 * rep + 1];
    if (!isfinite(lc[0]) && s == S - 1) /* the stage that computed the loss says so; the others stop with it */
        return loop_diverged(rk, step, lc[0]);
    return loop_push_step(L, step, epoch, t0, lc[0], (int)lc[1]);
}

/* The micro-batches' models (on mb[0]'s parameters, which stay), the
 * schedule and the loss's buffer. */
void loop_stages_free(struct loop *L)
{
    struct device *d = &L->rk->dev;
    struct stages *st = L->own;
    if (!st)
        return;
    if (L->async && d->impl)
        d->ops->sync(d, STREAM_COMM);                          /* the sends and receives run on the comm stream */
    for (int k = st->mb ? st->plan.micro - 1 : 0; k >= 1; k--) /* (last first: each shares only earlier ones') */
        if (st->mb[k]) {
            struct model_shared sh = stage_shared(st, k);
            model_unshare(st->mb[k], &sh);
            model_destroy(st->mb[k]);
        }
    free(st->mb);
    free(st->pipe_ops);
    if (st->pipe_lc)
        d->ops->free(d, st->pipe_lc);
    free(st);
    L->own = NULL;
}
