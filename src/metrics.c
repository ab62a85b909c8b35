/* metrics.c - turning drained spans and step records into breakdowns
 * (each step through breakdown_window), losses and per-collective
 * accounting (see metrics.h and the README's time accounting). */
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

#define COLL_SLOTS 4096
#define MAX_WORLD 64

struct coll_slot {
    uint32_t seq;
    int count;
    int64_t dur[MAX_WORLD];
    uint32_t step[MAX_WORLD];
    uint8_t who[MAX_WORLD]; /* the ranks in, in arrival order */
};

int metrics_init(struct metrics *m, int world, double threshold)
{
    memset(m, 0, sizeof(*m));
    if (world < 1 || world > MAX_WORLD)
        return -1;
    m->world = world;
    m->threshold = threshold;
    m->threshold_step = -1;
    m->threshold_epoch = -1;
    m->replicas_diverged_at = -1;
    m->r = calloc((size_t)world, sizeof(*m->r));
    m->coll = calloc(COLL_SLOTS, sizeof(*m->coll));
    m->loss_mean = calloc(METRICS_STEPS, sizeof(float));
    m->loss_running = calloc(METRICS_STEPS, sizeof(float));
    m->step_epoch = calloc(METRICS_STEPS, sizeof(uint32_t));
    if (!m->r || !m->coll || !m->loss_mean || !m->loss_running || !m->step_epoch) {
        metrics_free(m);
        return -1;
    }
    for (int i = 0; i < world; i++) {
        struct rank_metrics *r = &m->r[i];
        r->step_wall_ns = calloc(METRICS_STEPS, sizeof(int64_t));
        r->step_loss = calloc(METRICS_STEPS, sizeof(float));
        r->step_correct = calloc(METRICS_STEPS, sizeof(int32_t));
        r->step_n = calloc(METRICS_STEPS, sizeof(int32_t));
        r->step_hash = calloc(METRICS_STEPS, sizeof(uint64_t));
        r->step_untraced = calloc(METRICS_STEPS, sizeof(uint8_t));
        r->step_skipped = calloc(METRICS_STEPS, sizeof(uint8_t));
        if (!r->step_wall_ns || !r->step_loss || !r->step_correct || !r->step_n || !r->step_hash || !r->step_untraced ||
            !r->step_skipped) {
            metrics_free(m);
            return -1;
        }
    }
    for (int i = 0; i < COLL_SLOTS; i++)
        m->coll[i].seq = UINT32_MAX;
    return 0;
}

void metrics_count_bus(struct rank_metrics *rm, const struct span *sp, int world)
{
    double factor = coll_busbw_factor(sp->coll, world), alg = factor > 0 ? (double)sp->size : 0;
    rm->bus_bytes += (double)sp->size * factor;
    rm->alg_bytes += alg;
    if (sp->step > 0) {
        rm->bus_steady_bytes += (double)sp->size * factor;
        rm->alg_steady_bytes += alg;
    }
}

void metrics_free(struct metrics *m)
{
    if (m->r)
        for (int i = 0; i < m->world; i++) {
            struct rank_metrics *r = &m->r[i];
            free(r->step_wall_ns);
            free(r->step_loss);
            free(r->step_correct);
            free(r->step_n);
            free(r->step_hash);
            free(r->step_untraced);
            free(r->step_skipped);
            free(r->pending);
            free(r->window);
            breakdown_scratch_free(&r->sweep);
            free(r->held);
        }
    free(m->r);
    free(m->coll);
    free(m->gcoll);
    free(m->loss_mean);
    free(m->loss_running);
    free(m->step_epoch);
    memset(m, 0, sizeof(*m));
}

int metrics_set_groups(struct metrics *m, int n)
{
    if (!m->gcoll && !(m->gcoll = calloc(COLL_SLOTS, sizeof(*m->gcoll))))
        return -1;
    for (int i = 0; i < COLL_SLOTS; i++)
        m->gcoll[i].seq = UINT32_MAX;
    m->group_ranks = n;
    return 0;
}

/* A collective's call by rank r: once every rank of its communicator (the
 * world, or its group) has made it, the shortest duration is each one's
 * transfer and the rest its sync. */
static void coll_record(struct metrics *m, int r, const struct span *s)
{
    int group = (s->seq & SPAN_SEQ_GROUP) != 0, need = group ? m->group_ranks : m->world;
    if (group && !m->gcoll)
        return; /* (a group's call, and no groups said: nothing to match it with) */
    /* (the groups' calls go at the same pace: 977 slots apart, they never meet) */
    struct coll_slot *c =
        group ? &m->gcoll[((uint32_t)SPAN_SEQ_GROUP_OF(s->seq) * 977u + (s->seq & 0xffffffu)) % COLL_SLOTS]
              : &m->coll[s->seq % COLL_SLOTS];
    if (c->seq != s->seq) {
        c->seq = s->seq;
        c->count = 0;
    }
    c->dur[r] = s->t1_ns - s->t0_ns;
    c->step[r] = s->step;
    c->who[c->count] = (uint8_t)r;
    if (++c->count < need)
        return;
    int64_t mn = c->dur[c->who[0]];
    for (int k = 1; k < need; k++)
        if (c->dur[c->who[k]] < mn)
            mn = c->dur[c->who[k]];
    for (int k = 0; k < need; k++) {
        int i = c->who[k];
        m->r[i].xfer_ns += mn;
        m->r[i].sync_ns += c->dur[i] - mn;
        if (c->step[i] > 0) {
            m->r[i].xfer_steady_ns += mn;
            m->r[i].sync_steady_ns += c->dur[i] - mn;
        }
    }
    c->seq = UINT32_MAX;
}

static void release_held(struct metrics *m, int r, int all);

/* A span into the timeline's history ring, the oldest overwritten. */
static void history_push(struct rank_metrics *rm, const struct span *sp)
{
    rm->history[rm->nhistory++ % METRICS_HISTORY] = *sp;
}

/* A device record into the timeline's history: merged into the open one
 * of its category while it starts within 1/200 of a step (a cell of the
 * widest timeline) of that one's end; the open one goes in when it ends. */
static void history_gpu(struct rank_metrics *rm, const struct span *sp)
{
    if (sp->cat >= CAT_COUNT)
        return;
    struct span *o = &rm->gpu_open[sp->cat];
    int64_t gap = rm->nsteps > 0 ? rm->step_wall_ns[metrics_slot(rm->nsteps - 1)] / 200 : 0;
    if (gap < 2000)
        gap = 2000;
    if (rm->gpu_open_on[sp->cat] && o->step == sp->step && sp->t0_ns >= o->t0_ns && sp->t0_ns - o->t1_ns <= gap) {
        if (sp->t1_ns > o->t1_ns)
            o->t1_ns = sp->t1_ns;
        o->bytes += sp->bytes;
        return;
    }
    if (rm->gpu_open_on[sp->cat])
        history_push(rm, o);
    *o = *sp;
    rm->gpu_open_on[sp->cat] = 1;
}

void metrics_add_spans(struct metrics *m, int r, const struct span *s, size_t n)
{
    struct rank_metrics *rm = &m->r[r];
    if (rm->npending + n > rm->cap_pending) {
        size_t nc = rm->cap_pending ? rm->cap_pending : 256;
        while (nc < rm->npending + n)
            nc *= 2;
        struct span *p = realloc(rm->pending, nc * sizeof(*p));
        if (!p) {
            rm->dropped += n;
            return;
        }
        rm->pending = p;
        rm->cap_pending = nc;
    }
    for (size_t i = 0; i < n; i++) {
        const struct span *sp = &s[i];
        rm->pending[rm->npending++] = *sp;
        if (sp->lane != LANE_GPU) {
            history_push(rm, sp);
        } else {
            history_gpu(rm, sp);
            rm->gpu_view = 1;
            if (sp->t0_ns > rm->gpu_seen_ns)
                rm->gpu_seen_ns = sp->t0_ns;
        }
        if (sp->cat == CAT_COMM && sp->outer) {
            rm->bytes_tx += sp->bytes;
            rm->bytes_rx += sp->bytes_rx;
            metrics_count_bus(rm, sp, m->world);
            rm->coll_ns += sp->t1_ns - sp->t0_ns;
            rm->ncoll++;
            if (sp->tag == SPAN_TAG_NEGOTIATE) {
                rm->nnegotiate++;
                rm->negotiate_ns += sp->t1_ns - sp->t0_ns;
                if (sp->step > 0)
                    rm->negotiate_steady_ns += sp->t1_ns - sp->t0_ns;
            }
            if (sp->coll < COLL_COUNT) {
                int c = cost_size_class((double)sp->size);
                rm->kind_calls[sp->coll][c]++;
                rm->kind_bytes[sp->coll][c] += (double)sp->size;
            }
            /* a send or recv (kind COLL_NONE, comm.h's COMM_P2P) is one of
             * two ranks and has no sequence number: nothing to match */
            if (m->world > 1 && sp->coll != COLL_NONE)
                coll_record(m, r, sp);
        }
        for (int k = 0; k < m->nlisteners; k++)
            if (m->listeners[k].span)
                m->listeners[k].span(m->listeners[k].ctx, r, sp);
    }
    if (rm->nheld)
        release_held(m, r, 0);
}

static void advance_global(struct metrics *m, uint32_t epoch)
{
    size_t upto = SIZE_MAX;
    for (int i = 0; i < m->world; i++)
        if (m->r[i].nsteps < upto)
            upto = m->r[i].nsteps;
    for (size_t s = m->steps_done; s < upto; s++) {
        size_t k = metrics_slot(s);
        double sum = 0;
        int64_t correct = 0, total = 0;
        for (int i = 0; i < m->world; i++) {
            sum += m->r[i].step_loss[k];
            correct += m->r[i].step_correct[k];
            total += m->r[i].step_n[k];
        }
        m->loss_mean[k] = (float)(sum / m->world);
        /* the running loss over the last METRICS_LOSS_WINDOW steps, summed as
         * it slides (in double: no drift worth a float's last bit) */
        m->loss_window_sum += m->loss_mean[k];
        if (s >= METRICS_LOSS_WINDOW)
            m->loss_window_sum -= m->loss_mean[metrics_slot(s - METRICS_LOSS_WINDOW)];
        size_t in = s + 1 < METRICS_LOSS_WINDOW ? s + 1 : METRICS_LOSS_WINDOW;
        m->loss_running[k] = (float)(m->loss_window_sum / (double)in);
        m->step_epoch[k] = epoch;
        if (s == 0 || epoch != m->acc_epoch) {
            m->acc_epoch = epoch;
            m->acc_correct = m->acc_total = 0;
        }
        m->acc_correct += correct;
        m->acc_total += total;
        if (m->r[0].step_hash[k]) {
            m->replicas_checked = 1;
            for (int i = 1; i < m->world; i++)
                if (m->r[i].step_hash[k] != m->r[0].step_hash[k] && m->replicas_diverged_at < 0)
                    m->replicas_diverged_at = (long)s;
        }
        if (m->threshold > 0 && m->threshold_step < 0 && m->loss_running[k] < m->threshold) {
            m->threshold_step = (long)s;
            m->threshold_epoch = (int)epoch;
        }
    }
    m->steps_done = upto;
}

static void close_step(struct metrics *m, int r, const struct step_rec *rec);

void metrics_expect_gpu(struct metrics *m, int r)
{
    m->r[r].gpu_held = 1;
}

/* Closes rank r's held steps whose device records have arrived (all: every
 * one): those that ended METRICS_GPU_LATE_NS before the latest device
 * record started (records come in CUPTI's buffers, out of order across
 * streams, a third of a second late and more); and, a bounded wait, those
 * the host has left that far behind four times over (the device sent
 * nothing: the steps close with what they have). */
static void release_held(struct metrics *m, int r, int all)
{
    struct rank_metrics *rm = &m->r[r];
    size_t k = 0;
    int64_t host = rm->nheld ? rm->held[rm->nheld - 1].t1_ns : 0;
    while (k < rm->nheld && (all || rm->held[k].t1_ns + METRICS_GPU_LATE_NS <= rm->gpu_seen_ns ||
                             host - rm->held[k].t1_ns > 4 * METRICS_GPU_LATE_NS))
        close_step(m, r, &rm->held[k++]);
    if (k > 0) {
        memmove(rm->held, rm->held + k, (rm->nheld - k) * sizeof(*rm->held));
        rm->nheld -= k;
    }
}

void metrics_finish(struct metrics *m)
{
    for (int r = 0; r < m->world; r++) {
        release_held(m, r, 1);
        struct rank_metrics *rm = &m->r[r];
        for (int c = 0; c < CAT_COUNT; c++)
            if (rm->gpu_open_on[c]) {
                history_push(rm, &rm->gpu_open[c]);
                rm->gpu_open_on[c] = 0;
            }
    }
}

void metrics_add_step(struct metrics *m, int r, const struct step_rec *rec)
{
    struct rank_metrics *rm = &m->r[r];
    for (int k = 0; k < m->nlisteners; k++)
        if (m->listeners[k].step)
            m->listeners[k].step(m->listeners[k].ctx, r, rec);
    if (r == 0) {
        m->lr_last = rec->lr; /* every rank steps with the same rate */
        m->lr_valid = 1;
    }
    if (!rm->gpu_held) {
        close_step(m, r, rec);
        return;
    }
    if (rm->nheld == rm->cap_held) {
        size_t nc = rm->cap_held ? rm->cap_held * 2 : 16;
        struct step_rec *h = realloc(rm->held, nc * sizeof(*h));
        if (!h) {
            close_step(m, r, rec);
            return;
        }
        rm->held = h;
        rm->cap_held = nc;
    }
    rm->held[rm->nheld++] = *rec;
    release_held(m, r, 0);
}

static void close_step(struct metrics *m, int r, const struct step_rec *rec)
{
    struct rank_metrics *rm = &m->r[r];
    /* pull this step's spans out of the pending list, into the window
     * buffer (which is at least as large as pending: it grows with it) */
    if (rm->cap_window < rm->npending) {
        struct span *w = realloc(rm->window, rm->cap_pending * sizeof(struct span));
        if (!w)
            return;
        rm->window = w;
        rm->cap_window = rm->cap_pending;
    }
    size_t nwin = 0, keep = 0;
    for (size_t i = 0; i < rm->npending; i++) {
        struct span *s = &rm->pending[i];
        if (rm->gpu_held && s->lane == LANE_GPU) {
            /* device records belong to the steps their time overlaps (a
             * step that was not traced takes none: what it has are another
             * rank's window's strays) */
            if (s->t1_ns > rec->t0_ns && s->t0_ns < rec->t1_ns && !rec->untraced)
                rm->window[nwin++] = *s;
            if (s->t1_ns > rec->t1_ns)
                rm->pending[keep++] = *s; /* reaches into a later step */
            continue;
        }
        if (s->step == rec->step)
            rm->window[nwin++] = *s;
        else if (s->step < rec->step)
            rm->late++;
        else
            rm->pending[keep++] = *s;
    }
    rm->npending = keep;
    struct breakdown b;
    /* on a rank with device records the device's timeline decides: its
     * host spans only measure launches. The sweep's memory is the rank's
     * and only grows: no allocation per step once the largest was seen.
     * A step the device did not trace (--cupti-sample) is the latest
     * traced one's split at its own wall time; before any, the host's. */
    if (rec->untraced && rm->ntraced > 0) {
        breakdown_scale(&b, &rm->last_traced, rec->t1_ns - rec->t0_ns);
    } else if (breakdown_window(&b, rm->window, nwin, rec->t0_ns, rec->t1_ns,
                                rm->gpu_view && !rec->untraced ? LANE_GPU : -1, &rm->sweep) != 0) {
        return;
    }
    if (rec->untraced) {
        rm->nuntraced++;
    } else if (rm->gpu_held) {
        rm->last_traced = b;
        rm->ntraced++;
    }
    breakdown_add(&rm->total, &b);
    if (rm->nsteps > 0) {
        breakdown_add(&rm->steady, &b);
        if (rec->desched_ns >= 0) {
            rm->desched_ns += rec->desched_ns;
            rm->desched_valid = 1;
        }
    }
    rm->last = b;
    size_t k = metrics_slot(rm->nsteps);
    rm->step_wall_ns[k] = rec->t1_ns - rec->t0_ns;
    rm->step_loss[k] = rec->loss;
    rm->step_correct[k] = rec->correct;
    rm->step_n[k] = rec->n;
    rm->step_hash[k] = rec->param_hash;
    rm->step_untraced[k] = rec->untraced;
    rm->step_skipped[k] = rec->skipped;
    rm->nskipped += rec->skipped;
    rm->loss_scale = rec->loss_scale;
    rm->nsteps++;
    advance_global(m, rec->epoch);
}

int metrics_listen(struct metrics *m, const struct metrics_listener *l)
{
    if (m->nlisteners == METRICS_LISTENERS)
        return -1;
    m->listeners[m->nlisteners++] = *l;
    return 0;
}

void metrics_unlisten(struct metrics *m, const void *ctx)
{
    for (int k = 0; k < m->nlisteners; k++)
        if (m->listeners[k].ctx == ctx) {
            memmove(&m->listeners[k], &m->listeners[k + 1], sizeof(m->listeners[0]) * (size_t)(m->nlisteners - k - 1));
            m->nlisteners--;
            return;
        }
}

void metrics_add_epoch(struct metrics *m, int r, const struct epoch_rec *rec)
{
    for (int k = 0; k < m->nlisteners; k++)
        if (m->listeners[k].epoch)
            m->listeners[k].epoch(m->listeners[k].ctx, r, rec);
    int e = rec->epoch;
    if (e < 0 || e >= 1024)
        return;
    m->test_correct[e] += rec->correct;
    m->test_total[e] += rec->total;
    m->test_loss[e] += rec->loss_sum;
    m->epochs_reported[e]++;
    if (m->epochs_reported[e] == m->world && e + 1 > m->nepochs)
        m->nepochs = e + 1;
}

double metrics_train_acc_last_epoch(const struct metrics *m)
{
    if (m->steps_done == 0)
        return -1.0;
    return m->acc_total ? 100.0 * (double)m->acc_correct / (double)m->acc_total : 0.0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of sorted c[0..k) as numpy's default (linear) gives it:
 * position (k - 1) q, between the two values around it in proportion. */
static double percentile_sorted(const int64_t *c, size_t k, double q)
{
    double pos = (double)(k - 1) * q;
    size_t lo = (size_t)pos;
    if (lo + 1 >= k)
        return (double)c[k - 1];
    return (double)c[lo] + (pos - (double)lo) * (double)(c[lo + 1] - c[lo]);
}

void step_stats_ms(const int64_t *v, size_t n, double *mean, double *p50, double *p90)
{
    *mean = *p50 = *p90 = 0;
    size_t from = n > 1 ? 1 : 0, k = n - from;
    if (k == 0)
        return;
    int64_t *c = malloc(sizeof(*c) * k);
    if (!c)
        return;
    memcpy(c, v + from, sizeof(*c) * k);
    qsort(c, k, sizeof(*c), cmp_i64);
    double sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += (double)c[i];
    *mean = sum / (double)k / 1e6;
    *p50 = percentile_sorted(c, k, 0.5) / 1e6;
    *p90 = percentile_sorted(c, k, 0.9) / 1e6;
    free(c);
}

/* Step times [from, n) of ring v, in step order, into out; the first step
 * of the run, when kept, goes too (step_stats_ms leaves it out). Returns the
 * count, or 0 when out of memory. */
static size_t kept_steps(const int64_t *v, size_t n, int64_t **out)
{
    size_t from = metrics_first_kept(n), k = n - from;
    *out = k ? malloc(k * sizeof(int64_t)) : NULL;
    if (!*out)
        return 0;
    for (size_t s = from; s < n; s++)
        (*out)[s - from] = v[metrics_slot(s)];
    return k;
}

void metrics_step_stats(const struct metrics *m, int r, double *mean, double *p50, double *p90)
{
    *mean = *p50 = *p90 = 0;
    int64_t *v;
    size_t n = kept_steps(m->r[r].step_wall_ns, m->r[r].nsteps, &v);
    if (!n)
        return;
    /* past the rings' length the first step is gone already: keep them all */
    if (metrics_first_kept(m->r[r].nsteps) > 0) {
        int64_t *w = realloc(v, (n + 1) * sizeof(*w));
        if (!w) {
            free(v);
            return;
        }
        memmove(w + 1, w, n * sizeof(*w));
        v = w;
        n++;
    }
    step_stats_ms(v, n, mean, p50, p90);
    free(v);
}

void metrics_run_step_stats(const struct metrics *m, double *mean, double *p50, double *p90)
{
    size_t n = m->steps_done, from = metrics_first_kept(n);
    *mean = *p50 = *p90 = 0;
    /* one slot in front: the first step, which step_stats_ms leaves out */
    size_t lead = from > 0 ? 1 : 0, k = n - from + lead;
    int64_t *v = n ? calloc(k, sizeof(int64_t)) : NULL;
    if (!v)
        return;
    for (size_t s = from; s < n; s++) {
        int64_t *x = &v[s - from + lead];
        for (int i = 0; i < m->world; i++)
            if (m->r[i].step_wall_ns[metrics_slot(s)] > *x)
                *x = m->r[i].step_wall_ns[metrics_slot(s)];
    }
    step_stats_ms(v, k, mean, p50, p90);
    free(v);
}
