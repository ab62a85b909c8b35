/* metrics.c - turning drained spans and step records into breakdowns,
 * losses and per-collective accounting (see metrics.h and the README's time accounting). */
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

#include "comm.h"

#define COLL_SLOTS 4096
#define MAX_WORLD 64
#define MAX_DEPTH 16

struct coll_slot {
    uint32_t seq;
    int count;
    int64_t dur[MAX_WORLD];
};

void breakdown_add(struct breakdown *acc, const struct breakdown *b)
{
    acc->wall_ns += b->wall_ns;
    acc->compute_ns += b->compute_ns;
    acc->comm_ns += b->comm_ns;
    acc->data_ns += b->data_ns;
    acc->idle_ns += b->idle_ns;
    acc->comm_union_ns += b->comm_union_ns;
    acc->overlap_ns += b->overlap_ns;
}

double breakdown_pct(int64_t part_ns, int64_t wall_ns)
{
    return wall_ns > 0 ? 100.0 * (double)part_ns / (double)wall_ns : 0.0;
}

struct ev {
    int64_t t;
    int64_t dur;
    int start; /* 1 start, 0 end */
    int lane;
    int cat;
    int id;
};

static int ev_cmp(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->start != y->start)
        return x->start - y->start; /* ends first: touching spans do not overlap */
    if (x->start) {
        if (x->dur != y->dur)
            return x->dur > y->dur ? -1 : 1; /* the outer span opens first */
    } else if (x->dur != y->dur) {
        return x->dur < y->dur ? -1 : 1; /* the inner span closes first */
    }
    return x->id - y->id;
}

/* The sweep behind breakdown_compute, over caller-provided room for 2n
 * events. only_lane >= 0 keeps that lane's spans and skips the others; -1
 * keeps every lane. */
static void sweep(struct breakdown *out, const struct span *spans, size_t n, int64_t t0, int64_t t1, int only_lane,
                  struct ev *evs);

void breakdown_compute(struct breakdown *out, const struct span *spans, size_t n, int64_t t0, int64_t t1)
{
    struct ev stackbuf[64];
    struct ev *evs = n * 2 <= 64 ? stackbuf : malloc(sizeof(struct ev) * n * 2);
    memset(out, 0, sizeof(*out));
    if (!evs) {
        out->wall_ns = t1 > t0 ? t1 - t0 : 0;
        out->idle_ns = out->wall_ns;
        return;
    }
    sweep(out, spans, n, t0, t1, -1, evs);
    if (evs != stackbuf)
        free(evs);
}

static void sweep(struct breakdown *out, const struct span *spans, size_t n, int64_t t0, int64_t t1, int only_lane,
                  struct ev *evs)
{
    memset(out, 0, sizeof(*out));
    if (t1 <= t0)
        return;
    out->wall_ns = t1 - t0;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = spans[i].t0_ns < t0 ? t0 : spans[i].t0_ns;
        int64_t b = spans[i].t1_ns > t1 ? t1 : spans[i].t1_ns;
        if (b <= a || spans[i].lane >= LANE_COUNT || (only_lane >= 0 && spans[i].lane != only_lane))
            continue;
        struct ev s = {a, b - a, 1, spans[i].lane, spans[i].cat, (int)i};
        struct ev e = {b, b - a, 0, spans[i].lane, spans[i].cat, (int)i};
        evs[ne++] = s;
        evs[ne++] = e;
    }
    if (ne)
        qsort(evs, ne, sizeof(*evs), ev_cmp); /* evs may be NULL when there is nothing to sort */
    int stack[LANE_COUNT][MAX_DEPTH];
    int depth[LANE_COUNT] = {0};
    int cat_of_id_top[LANE_COUNT];
    /* device records (kernels and copies on several streams) overlap rather
     * than nest: on LANE_GPU every open record counts, by category */
    int gpu_open[CAT_COUNT] = {0};
    int64_t prev = t0;
    int64_t covered = 0;
    for (size_t i = 0; i <= ne; i++) {
        int64_t t = i < ne ? evs[i].t : t1;
        if (t > prev) {
            int any_compute = 0, any_comm = 0, any_data = 0;
            for (int l = 0; l < LANE_COUNT; l++) {
                if (!depth[l])
                    continue;
                int c = cat_of_id_top[l];
                any_compute |= cat_is_compute(c);
                any_comm |= c == CAT_COMM;
                any_data |= c == CAT_DATA;
            }
            any_compute |= gpu_open[CAT_FORWARD] + gpu_open[CAT_BACKWARD] + gpu_open[CAT_OPTIMIZER] > 0;
            any_comm |= gpu_open[CAT_COMM] > 0;
            any_data |= gpu_open[CAT_DATA] > 0;
            int64_t d = t - prev;
            if (any_compute)
                out->compute_ns += d;
            else if (any_comm)
                out->comm_ns += d;
            else if (any_data)
                out->data_ns += d;
            if (any_comm)
                out->comm_union_ns += d;
            if (any_comm && any_compute)
                out->overlap_ns += d;
            if (any_compute || any_comm || any_data)
                covered += d;
            prev = t;
        }
        if (i == ne)
            break;
        struct ev *e = &evs[i];
        int l = e->lane;
        if (l == LANE_GPU) {
            if (e->cat < CAT_COUNT)
                gpu_open[e->cat] += e->start ? 1 : -1;
            continue;
        }
        if (e->start) {
            if (depth[l] < MAX_DEPTH)
                stack[l][depth[l]++] = e->id;
        } else {
            for (int k = depth[l] - 1; k >= 0; k--)
                if (stack[l][k] == e->id) {
                    memmove(&stack[l][k], &stack[l][k + 1], sizeof(int) * (size_t)(depth[l] - k - 1));
                    depth[l]--;
                    break;
                }
        }
        if (depth[l])
            cat_of_id_top[l] = spans[stack[l][depth[l] - 1]].cat;
    }
    out->idle_ns = out->wall_ns - covered;
}

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
    if (!m->r || !m->coll) {
        metrics_free(m);
        return -1;
    }
    for (int i = 0; i < COLL_SLOTS; i++)
        m->coll[i].seq = UINT32_MAX;
    return 0;
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
            free(r->pending);
            free(r->window);
            free(r->events);
            free(r->held);
        }
    free(m->r);
    free(m->coll);
    free(m->loss_mean);
    free(m->loss_running);
    free(m->step_epoch);
    memset(m, 0, sizeof(*m));
}

static void coll_record(struct metrics *m, int r, const struct span *s)
{
    struct coll_slot *c = &m->coll[s->seq % COLL_SLOTS];
    if (c->seq != s->seq) {
        c->seq = s->seq;
        c->count = 0;
    }
    c->dur[r] = s->t1_ns - s->t0_ns;
    if (++c->count < m->world)
        return;
    int64_t mn = c->dur[0];
    for (int i = 1; i < m->world; i++)
        if (c->dur[i] < mn)
            mn = c->dur[i];
    for (int i = 0; i < m->world; i++) {
        m->r[i].xfer_ns += mn;
        m->r[i].sync_ns += c->dur[i] - mn;
    }
    c->seq = UINT32_MAX;
}

static void release_held(struct metrics *m, int r, int all);

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
        rm->history[rm->nhistory++ % METRICS_HISTORY] = *sp;
        if (sp->lane == LANE_GPU) {
            rm->gpu_view = 1;
            if (sp->t0_ns > rm->gpu_seen_ns)
                rm->gpu_seen_ns = sp->t0_ns;
        }
        if (sp->cat == CAT_COMM && sp->outer) {
            rm->bytes_tx += sp->bytes;
            rm->bytes_rx += sp->bytes_rx;
            rm->bus_bytes += (double)sp->size * coll_busbw_factor(sp->coll, m->world);
            rm->coll_ns += sp->t1_ns - sp->t0_ns;
            rm->ncoll++;
            if (sp->coll < COLL_COUNT) {
                rm->kind_calls[sp->coll]++;
                rm->kind_bytes[sp->coll] += (double)sp->size;
            }
            if (m->world > 1)
                coll_record(m, r, sp);
        }
        if (m->on_span)
            m->on_span(m->on_span_ctx, r, sp);
    }
    if (rm->nheld)
        release_held(m, r, 0);
}

static int grow_steps(struct rank_metrics *r)
{
    if (r->nsteps < r->cap)
        return 0;
    size_t nc = r->cap ? r->cap * 2 : 1024;
    int64_t *w = realloc(r->step_wall_ns, nc * sizeof(*w));
    if (w)
        r->step_wall_ns = w;
    float *l = realloc(r->step_loss, nc * sizeof(*l));
    if (l)
        r->step_loss = l;
    int32_t *c = realloc(r->step_correct, nc * sizeof(*c));
    if (c)
        r->step_correct = c;
    int32_t *k = realloc(r->step_n, nc * sizeof(*k));
    if (k)
        r->step_n = k;
    uint64_t *h = realloc(r->step_hash, nc * sizeof(*h));
    if (h)
        r->step_hash = h;
    if (!w || !l || !c || !k || !h)
        return -1;
    r->cap = nc;
    return 0;
}

static void advance_global(struct metrics *m, uint32_t epoch)
{
    size_t upto = SIZE_MAX;
    for (int i = 0; i < m->world; i++)
        if (m->r[i].nsteps < upto)
            upto = m->r[i].nsteps;
    if (upto > m->cap_steps) {
        size_t nc = m->cap_steps ? m->cap_steps : 1024;
        while (nc < upto)
            nc *= 2;
        float *a = realloc(m->loss_mean, nc * sizeof(float));
        if (a)
            m->loss_mean = a;
        float *b = realloc(m->loss_running, nc * sizeof(float));
        if (b)
            m->loss_running = b;
        uint32_t *e = realloc(m->step_epoch, nc * sizeof(uint32_t));
        if (e)
            m->step_epoch = e;
        if (!a || !b || !e)
            return;
        m->cap_steps = nc;
    }
    for (size_t s = m->steps_done; s < upto; s++) {
        double sum = 0;
        for (int i = 0; i < m->world; i++)
            sum += m->r[i].step_loss[s];
        m->loss_mean[s] = (float)(sum / m->world);
        size_t from = s + 1 >= METRICS_LOSS_WINDOW ? s + 1 - METRICS_LOSS_WINDOW : 0;
        double run = 0;
        for (size_t k = from; k <= s; k++)
            run += m->loss_mean[k];
        m->loss_running[s] = (float)(run / (double)(s + 1 - from));
        m->step_epoch[s] = epoch;
        if (m->r[0].step_hash[s]) {
            m->replicas_checked = 1;
            for (int i = 1; i < m->world; i++)
                if (m->r[i].step_hash[s] != m->r[0].step_hash[s] && m->replicas_diverged_at < 0)
                    m->replicas_diverged_at = (long)s;
        }
        if (m->threshold > 0 && m->threshold_step < 0 && m->loss_running[s] < m->threshold) {
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

/* Closes rank r's held steps whose device records have arrived (all: every one). */
static void release_held(struct metrics *m, int r, int all)
{
    struct rank_metrics *rm = &m->r[r];
    size_t k = 0;
    /* a bounded wait: without device records the steps still close */
    while (k < rm->nheld && (all || rm->held[k].t1_ns <= rm->gpu_seen_ns || rm->nheld - k > 512))
        close_step(m, r, &rm->held[k++]);
    if (k > 0) {
        memmove(rm->held, rm->held + k, (rm->nheld - k) * sizeof(*rm->held));
        rm->nheld -= k;
    }
}

void metrics_finish(struct metrics *m)
{
    for (int r = 0; r < m->world; r++)
        release_held(m, r, 1);
}

void metrics_add_step(struct metrics *m, int r, const struct step_rec *rec)
{
    struct rank_metrics *rm = &m->r[r];
    if (m->on_step)
        m->on_step(m->on_span_ctx, r, rec);
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
            /* device records belong to the steps their time overlaps */
            if (s->t1_ns > rec->t0_ns && s->t0_ns < rec->t1_ns)
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
    /* the sweep's events live in a per-rank buffer that only grows: no
     * allocation per step once the largest step has been seen */
    if (rm->cap_events < 2 * nwin) {
        void *e = realloc(rm->events, sizeof(struct ev) * 2 * nwin);
        if (!e)
            return;
        rm->events = e;
        rm->cap_events = 2 * nwin;
    }
    /* on a rank with device records the device's timeline decides: its
     * host spans only measure launches */
    sweep(&b, rm->window, nwin, rec->t0_ns, rec->t1_ns, rm->gpu_view ? LANE_GPU : -1, rm->events);
    breakdown_add(&rm->total, &b);
    if (rm->nsteps > 0)
        breakdown_add(&rm->steady, &b);
    rm->last = b;
    if (grow_steps(rm) != 0)
        return;
    rm->step_wall_ns[rm->nsteps] = rec->t1_ns - rec->t0_ns;
    rm->step_loss[rm->nsteps] = rec->loss;
    rm->step_correct[rm->nsteps] = rec->correct;
    rm->step_n[rm->nsteps] = rec->n;
    rm->step_hash[rm->nsteps] = rec->param_hash;
    rm->nsteps++;
    advance_global(m, rec->epoch);
}

void metrics_add_epoch(struct metrics *m, int r, const struct epoch_rec *rec)
{
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
    size_t n = m->steps_done;
    if (n == 0)
        return -1.0;
    uint32_t last_epoch = m->step_epoch[n - 1];
    int64_t correct = 0, total = 0;
    for (size_t s = 0; s < n; s++)
        if (m->step_epoch[s] == last_epoch)
            for (int i = 0; i < m->world; i++) {
                correct += m->r[i].step_correct[s];
                total += m->r[i].step_n[s];
            }
    return total ? 100.0 * (double)correct / (double)total : 0.0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
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
    *p50 = (double)c[(k - 1) / 2] / 1e6;
    *p90 = (double)c[(size_t)((double)(k - 1) * 0.9)] / 1e6;
    free(c);
}

void metrics_step_stats(const struct metrics *m, int r, double *mean, double *p50, double *p90)
{
    step_stats_ms(m->r[r].step_wall_ns, m->r[r].nsteps, mean, p50, p90);
}

void metrics_run_step_stats(const struct metrics *m, double *mean, double *p50, double *p90)
{
    size_t n = m->steps_done;
    *mean = *p50 = *p90 = 0;
    int64_t *v = n ? malloc(n * sizeof(int64_t)) : NULL;
    if (!v)
        return;
    for (size_t s = 0; s < n; s++) {
        v[s] = 0;
        for (int i = 0; i < m->world; i++)
            if (m->r[i].step_wall_ns[s] > v[s])
                v[s] = m->r[i].step_wall_ns[s];
    }
    step_stats_ms(v, n, mean, p50, p90);
    free(v);
}
