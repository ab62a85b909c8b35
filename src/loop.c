/* loop.c - what every step of the rank loop (loop.h) uses, whatever the
 * mode: spans, failures, the step's record for the collector, the
 * forward with --inject-fault's poison, a straggler's stretch, and the
 * dynamic loss scaler's rule and shared verdict.
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

void loop_rec(struct rank *rk, struct spsc_ring *ring, int lane, int cat, int64_t t0, int64_t t1)
{
    probe_span(ring, lane, cat, atomic_load_explicit(&rk->step, memory_order_relaxed), -1, t0, t1, NULL);
}

/* --inject-fault nan and overflow: the first float at `at` (m's memory)
 * becomes v. */
int loop_put_value(struct model *m, float *at, float v)
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
int loop_forward(struct loop *L)
{
    struct model *m = L->m;
    if (model_forward(m, 1) != 0)
        return -1;
    return L->poison ? loop_put_value(m, m->tensors[m->output].val, NAN) : 0;
}

/* A straggler's compute takes `slow` times as long: spin out the rest (a
 * device that stretches its own phases does it there, phase_pop). */
void loop_straggle(const struct loop *L, int64_t t0)
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
int loop_phase_push(const struct loop *L, int cat)
{
    struct device *d = &L->rk->dev;
    if (L->run->cupti && L->traced && d->ops->phase_mark &&
        d->ops->phase_mark(d, cat, atomic_load_explicit(&L->rk->step, memory_order_relaxed)) != 0)
        return -1;
    return L->slow > 1.0 && d->ops->stretch_begin ? d->ops->stretch_begin(d, cat) : 0;
}

int loop_phase_pop(const struct loop *L, int cat)
{
    struct device *d = &L->rk->dev;
    return L->slow > 1.0 && d->ops->stretch_end ? d->ops->stretch_end(d, cat, L->slow) : 0;
}

void loop_rank_failed(struct rank *rk)
{
    if (rk->fail_ns == 0)
        rk->fail_ns = probe_now_ns();
    int none = -1;
    atomic_compare_exchange_strong(&rk->run->first_failed, &none, rk->id);
}

/* The rank's first failure: its message (with the context gathered on the
 * way up) stays in rk->err for the collector, and every rank stops. */
int loop_fail(struct rank *rk, const char *what)
{
    if (rk->rc == 0)
        snprintf(rk->err, sizeof(rk->err), "%s", what);
    rk->rc = -1;
    /* its time and place among this process's failures, before its abort
     * makes its peers fail after it */
    loop_rank_failed(rk);
    atomic_store(&rk->run->abort, 1);
    return -1;
}

/* A device call failed: its message is in the device. */
int loop_dev_failed(struct rank *rk)
{
    return loop_fail(rk, rk->dev.err);
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
int64_t loop_run_delay_ns(struct loop *L)
{
    char buf[96];
    ssize_t n = L->schedstat_fd >= 0 ? pread(L->schedstat_fd, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0)
        return -1;
    buf[n] = 0;
    unsigned long long on_cpu, waited;
    return sscanf(buf, "%llu %llu", &on_cpu, &waited) == 2 ? (int64_t)waited : -1;
}

int loop_push_step(struct loop *L, uint32_t step, int epoch, int64_t t0, float loss, int correct)
{
    struct rank *rk = L->rk;
    uint64_t hash = L->cfg->check_replicas ? param_hash(L) : 0;
    int64_t delay = loop_run_delay_ns(L), desched = delay >= 0 && L->run_delay >= 0 ? delay - L->run_delay : -1;
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

int loop_diverged(struct rank *rk, uint32_t step, float loss)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "training diverged at step %u (loss is %s); try a lower --lr", step,
             isnan(loss) ? "nan"
             : loss > 0  ? "inf"
                         : "-inf");
    return loop_fail(rk, msg);
}

/* A collective failed (or gave up because another rank failed first:
 * that is not this rank's failure). The communicator's message follows
 * `what`; a device hook's, when the device has one and the communicator
 * not. */
int loop_comm_failed(struct rank *rk, int rc, const char *what)
{
    if (rc == COMM_ABORTED)
        return rc;
    const char *why = rk->comm && rk->comm->err[0] ? rk->comm->err : rk->dev.err[0] ? rk->dev.err : "";
    char msg[sizeof(rk->err)];
    snprintf(msg, sizeof(msg), "%.60s%s%.185s", what, why[0] ? ": " : " failed", why);
    return loop_fail(rk, msg);
}

/* The comm stream waits for what the compute stream has enqueued so far
 * (before a collective reads results of compute): an event, no host sync. */
int loop_comm_after_compute(struct loop *L)
{
    struct device *d = &L->rk->dev;
    if (d->ops->record_event(d, EV_GRADS, STREAM_COMPUTE) != 0 || d->ops->wait_event(d, EV_GRADS, STREAM_COMM) != 0)
        return loop_dev_failed(L->rk);
    return 0;
}

/* Whether m's trainable gradients among parameters [p0, p1) are all
 * finite (waits for the device). 0, or -1 with m->err set. */
int loop_grads_all_finite(struct model *m, int p0, int p1, int *finite)
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
int loop_scaler_decide(struct loop *L, int finite)
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
int loop_agree_bad(struct loop *L, float *buf, float *bad)
{
    struct rank *rk = L->rk;
    struct device *d = &rk->dev;
    if (d->ops->copy(d, buf, bad, sizeof(float), STREAM_COMM) != 0)
        return loop_dev_failed(rk);
    int rc = rk->comm->ops->allreduce(rk->comm, buf, 1, RED_SUM);
    if (rc != 0)
        return loop_comm_failed(rk, rc, "agreeing on the loss scaler's verdict");
    if (d->ops->copy(d, bad, buf, sizeof(float), STREAM_COMM) != 0 || d->ops->sync(d, STREAM_COMM) != 0)
        return loop_dev_failed(rk);
    return 0;
}
