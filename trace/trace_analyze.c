/* trace_analyze.c - merged-interval breakdowns and HTA's idle split for
 * foreign traces (see trace_analyze.h). */
#include "trace_analyze.h"

#include <stdlib.h>
#include <string.h>

enum { K_COMPUTE = 0, K_COMM, K_DATA, K_WIN, K_COUNT };

struct bound {
    int64_t t;
    int kind;  /* K_* */
    int delta; /* +1 start, -1 end */
};

static int bound_cmp(const void *a, const void *b)
{
    const struct bound *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends first */
}

static int iv_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Sorts and coalesces n intervals in place; returns the new count. */
static size_t merge(int64_t (*iv)[2], size_t n)
{
    if (n == 0)
        return 0;
    qsort(iv, n, sizeof(*iv), iv_cmp);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (iv[i][0] <= iv[k][1]) {
            if (iv[i][1] > iv[k][1])
                iv[k][1] = iv[i][1];
        } else {
            k++;
            iv[k][0] = iv[i][0];
            iv[k][1] = iv[i][1];
        }
    }
    return k + 1;
}

static int kind_of(int cat)
{
    if (cat_is_compute(cat))
        return K_COMPUTE;
    if (cat == CAT_COMM)
        return K_COMM;
    if (cat == CAT_DATA)
        return K_DATA;
    return -1;
}

/* The sweep behind both views; gaps (idle intervals inside the windows) are
 * returned when gaps_out is not NULL (caller frees). */
static int sweep(struct trace_figures *out, const struct trace_seg *segs, size_t n, const int64_t (*win)[2],
                 size_t nwin, int64_t (**gaps_out)[2], size_t *ngaps)
{
    int64_t(*iv[K_COUNT])[2] = {0};
    size_t cnt[K_COUNT] = {0};
    int rc = -1;
    struct bound *b = NULL;
    int64_t(*gaps)[2] = NULL;
    size_t ng = 0;
    for (int k = 0; k < K_COUNT; k++) {
        iv[k] = malloc(sizeof(*iv[k]) * (k == K_WIN ? (nwin ? nwin : 1) : (n ? n : 1)));
        if (!iv[k])
            goto done;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int k = kind_of(segs[i].cat);
        if (k < 0 || segs[i].t1_ns <= segs[i].t0_ns)
            continue;
        iv[k][cnt[k]][0] = segs[i].t0_ns;
        iv[k][cnt[k]][1] = segs[i].t1_ns;
        cnt[k]++;
        if (segs[i].t0_ns < lo)
            lo = segs[i].t0_ns;
        if (segs[i].t1_ns > hi)
            hi = segs[i].t1_ns;
    }
    if (win) {
        for (size_t i = 0; i < nwin; i++)
            if (win[i][1] > win[i][0]) {
                iv[K_WIN][cnt[K_WIN]][0] = win[i][0];
                iv[K_WIN][cnt[K_WIN]][1] = win[i][1];
                cnt[K_WIN]++;
            }
    } else if (hi > lo) {
        iv[K_WIN][0][0] = lo;
        iv[K_WIN][0][1] = hi;
        cnt[K_WIN] = 1;
    }
    size_t nb = 0;
    for (int k = 0; k < K_COUNT; k++) {
        cnt[k] = merge(iv[k], cnt[k]);
        nb += 2 * cnt[k];
    }
    b = malloc(sizeof(*b) * (nb ? nb : 1));
    if (gaps_out)
        gaps = malloc(sizeof(*gaps) * (cnt[K_COMPUTE] + cnt[K_COMM] + cnt[K_DATA] + cnt[K_WIN] + 1));
    if (!b || (gaps_out && !gaps))
        goto done;
    nb = 0;
    for (int k = 0; k < K_COUNT; k++)
        for (size_t i = 0; i < cnt[k]; i++) {
            b[nb++] = (struct bound){iv[k][i][0], k, +1};
            b[nb++] = (struct bound){iv[k][i][1], k, -1};
        }
    qsort(b, nb, sizeof(*b), bound_cmp);
    int in[K_COUNT] = {0};
    int64_t prev = nb ? b[0].t : 0, covered = 0;
    for (size_t i = 0; i < nb; i++) {
        int64_t d = b[i].t - prev;
        if (d > 0 && in[K_WIN]) {
            out->wall_ns += d;
            if (in[K_COMPUTE])
                out->compute_ns += d;
            else if (in[K_COMM])
                out->comm_ns += d;
            else if (in[K_DATA])
                out->data_ns += d;
            if (in[K_COMM])
                out->comm_union_ns += d;
            if (in[K_COMM] && in[K_COMPUTE])
                out->overlap_ns += d;
            if (in[K_COMPUTE] || in[K_COMM] || in[K_DATA]) {
                covered += d;
            } else if (gaps) {
                if (ng > 0 && gaps[ng - 1][1] == prev)
                    gaps[ng - 1][1] = b[i].t;
                else {
                    gaps[ng][0] = prev;
                    gaps[ng][1] = b[i].t;
                    ng++;
                }
            }
        }
        in[b[i].kind] += b[i].delta;
        prev = b[i].t;
    }
    out->idle_ns = out->wall_ns - covered;
    rc = 0;
    if (gaps_out) {
        *gaps_out = gaps;
        *ngaps = ng;
        gaps = NULL;
    }
done:
    for (int k = 0; k < K_COUNT; k++)
        free(iv[k]);
    free(b);
    free(gaps);
    return rc;
}

int trace_analyze_segs(struct trace_figures *out, const struct trace_seg *segs, size_t n, const int64_t (*win)[2],
                       size_t nwin)
{
    memset(out, 0, sizeof(*out));
    return sweep(out, segs, n, win, nwin, NULL, NULL);
}

/* ---- host view: innermost op decides, per thread ------------------------- */

struct hev {
    int64_t t, dur;
    int start;
    size_t op;
};

static int hev_cmp(const void *a, const void *b)
{
    const struct hev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->start != y->start)
        return x->start - y->start; /* ends first */
    if (x->dur != y->dur)
        return x->start ? (x->dur > y->dur ? -1 : 1) : (x->dur < y->dur ? -1 : 1);
    return x->op < y->op ? -1 : x->op > y->op;
}

struct trk_idx {
    int32_t track;
    size_t op;
};

static int trk_cmp(const void *a, const void *b)
{
    const struct trk_idx *x = a, *y = b;
    if (x->track != y->track)
        return x->track - y->track;
    return x->op < y->op ? -1 : x->op > y->op;
}

/* Flattens the host ops into non-nested segments per thread. */
static struct trace_seg *host_segments(const struct trace_rank *r, size_t *nout)
{
    size_t n = 0;
    struct trk_idx *ti = malloc(sizeof(*ti) * (r->nops ? r->nops : 1));
    struct hev *ev = malloc(sizeof(*ev) * 2 * (r->nops ? r->nops : 1));
    size_t *stack = malloc(sizeof(*stack) * (r->nops ? r->nops : 1));
    struct trace_seg *seg = malloc(sizeof(*seg) * 2 * (r->nops ? r->nops : 1));
    if (!ti || !ev || !stack || !seg) {
        free(ti);
        free(ev);
        free(stack);
        free(seg);
        return NULL;
    }
    for (size_t i = 0; i < r->nops; i++)
        if (!r->ops[i].gpu && r->ops[i].cat < CAT_COUNT && r->ops[i].t1_ns > r->ops[i].t0_ns)
            ti[n++] = (struct trk_idx){r->ops[i].track, i};
    qsort(ti, n, sizeof(*ti), trk_cmp);
    size_t nseg = 0;
    for (size_t a = 0; a < n;) {
        size_t z = a;
        while (z < n && ti[z].track == ti[a].track)
            z++;
        size_t ne = 0;
        for (size_t k = a; k < z; k++) {
            const struct trace_op *op = &r->ops[ti[k].op];
            ev[ne++] = (struct hev){op->t0_ns, op->t1_ns - op->t0_ns, 1, ti[k].op};
            ev[ne++] = (struct hev){op->t1_ns, op->t1_ns - op->t0_ns, 0, ti[k].op};
        }
        qsort(ev, ne, sizeof(*ev), hev_cmp);
        size_t depth = 0;
        int64_t prev = ne ? ev[0].t : 0;
        for (size_t k = 0; k < ne; k++) {
            if (ev[k].t > prev && depth > 0) {
                int cat = r->ops[stack[depth - 1]].cat;
                if (nseg > 0 && seg[nseg - 1].t1_ns == prev && seg[nseg - 1].cat == cat)
                    seg[nseg - 1].t1_ns = ev[k].t;
                else
                    seg[nseg++] = (struct trace_seg){prev, ev[k].t, cat};
            }
            prev = ev[k].t;
            if (ev[k].start) {
                stack[depth++] = ev[k].op;
            } else {
                for (size_t s = depth; s-- > 0;)
                    if (stack[s] == ev[k].op) {
                        memmove(&stack[s], &stack[s + 1], sizeof(*stack) * (depth - s - 1));
                        depth--;
                        break;
                    }
            }
        }
        a = z;
    }
    free(ti);
    free(ev);
    free(stack);
    *nout = nseg;
    return seg;
}

/* ---- GPU view ----------------------------------------------------------- */

static int op_start_cmp(const void *a, const void *b)
{
    const struct trace_op *x = *(const struct trace_op *const *)a, *y = *(const struct trace_op *const *)b;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    return x->launch_ns < y->launch_ns ? -1 : x->launch_ns > y->launch_ns;
}

static int gpu_view(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns)
{
    struct trace_seg *seg = malloc(sizeof(*seg) * (r->ngpu ? r->ngpu : 1));
    const struct trace_op **by_start = malloc(sizeof(*by_start) * (r->ngpu ? r->ngpu : 1));
    int64_t(*gaps)[2] = NULL;
    size_t ng = 0, n = 0;
    int rc = -1;
    if (!seg || !by_start)
        goto done;
    for (size_t i = 0; i < r->nops; i++)
        if (r->ops[i].gpu) {
            seg[n] = (struct trace_seg){r->ops[i].t0_ns, r->ops[i].t1_ns, r->ops[i].cat};
            by_start[n++] = &r->ops[i];
        }
    if (sweep(out, seg, n, NULL, 0, &gaps, &ng) != 0)
        goto done;
    qsort(by_start, n, sizeof(*by_start), op_start_cmp);
    out->idle_split_valid = 1;
    for (size_t g = 0; g < ng; g++) {
        int64_t a = gaps[g][0], b = gaps[g][1], d = b - a;
        /* the op that ends the gap: the first to start at or after b */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (by_start[mid]->t0_ns < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        const struct trace_op *next = lo < n ? by_start[lo] : NULL;
        if (d < kernel_wait_ns)
            out->kernel_wait_ns += d;
        else if (next && next->launch_ns >= 0 && next->launch_ns >= a)
            out->host_wait_ns += d;
        else
            out->other_idle_ns += d;
    }
    rc = 0;
done:
    free(seg);
    free(by_start);
    free(gaps);
    return rc;
}

int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    if (r->ngpu > 0) {
        out->gpu_view = 1;
        return gpu_view(out, r, kernel_wait_ns);
    }
    size_t nseg = 0;
    struct trace_seg *seg = host_segments(r, &nseg);
    if (!seg)
        return -1;
    int64_t(*win)[2] = NULL;
    if (r->nsteps > 0) {
        win = malloc(sizeof(*win) * r->nsteps);
        if (!win) {
            free(seg);
            return -1;
        }
        for (size_t i = 0; i < r->nsteps; i++) {
            win[i][0] = r->steps[i].t0_ns;
            win[i][1] = r->steps[i].t1_ns;
        }
    }
    int rc = sweep(out, seg, nseg, (const int64_t(*)[2])win, win ? r->nsteps : 0, NULL, NULL);
    free(seg);
    free(win);
    return rc;
}
