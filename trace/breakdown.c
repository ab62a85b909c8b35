/* breakdown.c - the time-accounting sweep (see breakdown.h). Two passes:
 * each group's nested intervals are flattened into the segments where
 * their innermost interval counts, then one sweep over those segments,
 * the flat intervals and the windows applies compute > comm > data > idle.
 * Only the measure of each set matters, so the figures do not depend on
 * the order the intervals come in, except through nesting. */
#include "breakdown.h"

#include <stdlib.h>
#include <string.h>

void breakdown_add(struct breakdown *acc, const struct breakdown *b)
{
    acc->wall_ns += b->wall_ns;
    acc->compute_ns += b->compute_ns;
    acc->comm_ns += b->comm_ns;
    acc->data_ns += b->data_ns;
    acc->idle_ns += b->idle_ns;
    acc->comm_union_ns += b->comm_union_ns;
    acc->overlap_ns += b->overlap_ns;
    acc->coll_ns += b->coll_ns;
}

void breakdown_scale(struct breakdown *out, const struct breakdown *b, int64_t wall_ns)
{
    double f = b->wall_ns > 0 ? (double)wall_ns / (double)b->wall_ns : 0.0;
#define SCALED(x) ((int64_t)((double)(x)*f + 0.5))
    *out = (struct breakdown){.wall_ns = wall_ns,
                              .compute_ns = SCALED(b->compute_ns),
                              .comm_ns = SCALED(b->comm_ns),
                              .data_ns = SCALED(b->data_ns),
                              .comm_union_ns = SCALED(b->comm_union_ns),
                              .overlap_ns = SCALED(b->overlap_ns),
                              .coll_ns = SCALED(b->coll_ns)};
#undef SCALED
    if (b->wall_ns <= 0) {
        out->idle_ns = wall_ns; /* nothing to scale from: all idle */
        return;
    }
    /* rounding may leave the three parts a nanosecond over the wall: the
     * largest gives it back, and idle is what remains */
    int64_t over = out->compute_ns + out->comm_ns + out->data_ns - wall_ns;
    if (over > 0) {
        int64_t *big = out->compute_ns >= out->comm_ns && out->compute_ns >= out->data_ns ? &out->compute_ns
                       : out->comm_ns >= out->data_ns                                     ? &out->comm_ns
                                                                                          : &out->data_ns;
        *big -= over;
    }
    out->idle_ns = wall_ns - out->compute_ns - out->comm_ns - out->data_ns;
}

double breakdown_pct(int64_t part_ns, int64_t wall_ns)
{
    return wall_ns > 0 ? 100.0 * (double)part_ns / (double)wall_ns : 0.0;
}

double breakdown_overlap_pct(const struct breakdown *b)
{
    return b->comm_union_ns > 0 ? 100.0 * (double)b->overlap_ns / (double)b->comm_union_ns : 0.0;
}

void breakdown_split(const struct breakdown *b, struct split_pct *out)
{
    out->compute = breakdown_pct(b->compute_ns, b->wall_ns);
    out->comm = breakdown_pct(b->comm_ns, b->wall_ns);
    out->data = breakdown_pct(b->data_ns, b->wall_ns);
    out->idle = breakdown_pct(b->idle_ns, b->wall_ns);
    out->overlap = breakdown_overlap_pct(b);
}

void breakdown_scratch_free(struct breakdown_scratch *sc)
{
    free(sc->buf);
    sc->buf = NULL;
    sc->cap = 0;
}

enum { K_COMPUTE = 0, K_COMM, K_DATA, K_WIN, K_COLL, K_COUNT };

static int kind_of(int cat)
{
    if (cat_is_compute(cat))
        return K_COMPUTE;
    if (cat == CAT_COMM)
        return K_COMM;
    if (cat == CAT_DATA)
        return K_DATA;
    return -1; /* wait and annotations cover nothing */
}

/* A start or end of a nested interval. */
struct nest_ev {
    int64_t t, dur;
    int32_t group;
    uint32_t idx; /* into the intervals */
    int32_t start;
};

static int nest_ev_cmp(const void *a, const void *b)
{
    const struct nest_ev *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->start != y->start)
        return x->start - y->start; /* ends first: touching intervals do not nest */
    if (x->dur != y->dur)
        return x->start ? (x->dur > y->dur ? -1 : 1)  /* the outer one opens first */
                        : (x->dur < y->dur ? -1 : 1); /* the inner one closes first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct seg {
    int64_t t0, t1;
    int kind;
};

struct bound {
    int64_t t;
    int32_t kind;  /* K_* */
    int32_t delta; /* +1 start, -1 end */
};

static int bound_cmp(const void *a, const void *b)
{
    const struct bound *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends first */
}

/* The sweep's memory for n intervals and nwin windows, carved in order. */
struct layout {
    size_t ev, seg, bound, gap, stack, total;
};

static struct layout layout_of(size_t n, size_t nwin)
{
    struct layout l;
    /* segments (<= 2n), flat intervals, comm intervals again (for coll), windows */
    size_t nb = 2 * (4 * n + (nwin ? nwin : 1));
    l.ev = 0;
    l.seg = l.ev + sizeof(struct nest_ev) * 2 * n;
    l.bound = l.seg + sizeof(struct seg) * 2 * n;
    l.gap = l.bound + sizeof(struct bound) * nb;
    l.stack = l.gap + sizeof(int64_t[2]) * (nb + 1);
    l.total = l.stack + sizeof(uint32_t) * (n ? n : 1);
    return l;
}

static void *room(struct breakdown_scratch *sc, size_t bytes)
{
    if (sc->cap < bytes) {
        void *p = realloc(sc->buf, bytes);
        if (!p)
            return NULL;
        sc->buf = p;
        sc->cap = bytes;
    }
    return sc->buf;
}

/* Flattens each group's nested intervals into seg[]: the stretches where
 * the innermost open interval counts. Returns the number of segments. */
static size_t flatten(const struct breakdown_iv *iv, size_t n, struct nest_ev *ev, uint32_t *stack, struct seg *seg)
{
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].group < 0 || iv[i].cat < 0 || iv[i].cat >= CAT_COUNT || iv[i].t1_ns <= iv[i].t0_ns)
            continue;
        int64_t dur = iv[i].t1_ns - iv[i].t0_ns;
        ev[ne++] = (struct nest_ev){iv[i].t0_ns, dur, iv[i].group, (uint32_t)i, 1};
        ev[ne++] = (struct nest_ev){iv[i].t1_ns, dur, iv[i].group, (uint32_t)i, 0};
    }
    qsort(ev, ne, sizeof(*ev), nest_ev_cmp);
    size_t nseg = 0, depth = 0;
    int64_t prev = 0;
    for (size_t k = 0; k < ne; k++) {
        if (k == 0 || ev[k].group != ev[k - 1].group) {
            depth = 0;
            prev = ev[k].t;
        }
        int kind = depth > 0 ? kind_of(iv[stack[depth - 1]].cat) : -1;
        if (ev[k].t > prev && kind >= 0) {
            if (nseg > 0 && seg[nseg - 1].t1 == prev && seg[nseg - 1].kind == kind)
                seg[nseg - 1].t1 = ev[k].t;
            else
                seg[nseg++] = (struct seg){prev, ev[k].t, kind};
        }
        prev = ev[k].t;
        if (ev[k].start) {
            stack[depth++] = ev[k].idx;
            continue;
        }
        for (size_t s = depth; s-- > 0;)
            if (stack[s] == ev[k].idx) {
                memmove(&stack[s], &stack[s + 1], sizeof(*stack) * (depth - s - 1));
                depth--;
                break;
            }
    }
    return nseg;
}

static int sweep(struct breakdown *out, const struct breakdown_iv *iv, size_t n, const int64_t (*win)[2], size_t nwin,
                 const int64_t (**gaps_out)[2], size_t *ngaps, unsigned char *mem)
{
    struct layout l = layout_of(n, nwin);
    struct seg *seg = (struct seg *)(mem + l.seg);
    struct bound *b = (struct bound *)(mem + l.bound);
    int64_t(*gaps)[2] = (int64_t(*)[2])(mem + l.gap);
    size_t nseg = flatten(iv, n, (struct nest_ev *)(mem + l.ev), (uint32_t *)(mem + l.stack), seg);
    size_t nb = 0, ng = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < nseg; i++) {
        b[nb++] = (struct bound){seg[i].t0, seg[i].kind, +1};
        b[nb++] = (struct bound){seg[i].t1, seg[i].kind, -1};
    }
    for (size_t i = 0; i < n; i++) {
        int k = iv[i].cat >= 0 && iv[i].cat < CAT_COUNT ? kind_of(iv[i].cat) : -1;
        if (iv[i].group >= 0 || k < 0 || iv[i].t1_ns <= iv[i].t0_ns)
            continue;
        b[nb++] = (struct bound){iv[i].t0_ns, k, +1};
        b[nb++] = (struct bound){iv[i].t1_ns, k, -1};
    }
    /* every comm interval, waits nested inside it included: the time in collectives */
    for (size_t i = 0; i < n; i++)
        if (iv[i].cat == CAT_COMM && iv[i].t1_ns > iv[i].t0_ns) {
            b[nb++] = (struct bound){iv[i].t0_ns, K_COLL, +1};
            b[nb++] = (struct bound){iv[i].t1_ns, K_COLL, -1};
        }
    for (size_t i = 0; i < nb; i++) {
        if (b[i].t < lo)
            lo = b[i].t;
        if (b[i].t > hi)
            hi = b[i].t;
    }
    if (win) {
        for (size_t i = 0; i < nwin; i++)
            if (win[i][1] > win[i][0]) {
                b[nb++] = (struct bound){win[i][0], K_WIN, +1};
                b[nb++] = (struct bound){win[i][1], K_WIN, -1};
            }
    } else if (hi > lo) {
        b[nb++] = (struct bound){lo, K_WIN, +1};
        b[nb++] = (struct bound){hi, K_WIN, -1};
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
            if (in[K_COLL])
                out->coll_ns += d;
            if (in[K_COMPUTE] || in[K_COMM] || in[K_DATA]) {
                covered += d;
            } else if (gaps_out) {
                if (ng > 0 && gaps[ng - 1][1] == prev) {
                    gaps[ng - 1][1] = b[i].t;
                } else {
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
    if (gaps_out) {
        *gaps_out = (const int64_t(*)[2])gaps;
        *ngaps = ng;
    }
    return 0;
}

int breakdown_sweep(struct breakdown *out, const struct breakdown_iv *iv, size_t n, const int64_t (*win)[2],
                    size_t nwin, const int64_t (**gaps)[2], size_t *ngaps, struct breakdown_scratch *sc)
{
    memset(out, 0, sizeof(*out));
    if (gaps)
        *ngaps = 0;
    struct breakdown_scratch own = {0};
    if (!sc && gaps)
        return -1; /* the gaps would outlive the call's memory */
    unsigned char *mem = room(sc ? sc : &own, layout_of(n, nwin).total);
    int rc = mem ? sweep(out, iv, n, win, nwin, gaps, ngaps, mem) : -1;
    breakdown_scratch_free(&own);
    return rc;
}

int breakdown_window(struct breakdown *out, const struct span *spans, size_t n, int64_t t0, int64_t t1, int only_lane,
                     struct breakdown_scratch *sc)
{
    memset(out, 0, sizeof(*out));
    if (t1 <= t0)
        return 0;
    struct breakdown_scratch own = {0};
    /* the intervals, then the sweep's memory, both in sc */
    size_t ivbytes = (sizeof(struct breakdown_iv) * (n ? n : 1) + 15) & ~(size_t)15;
    unsigned char *mem = room(sc ? sc : &own, ivbytes + layout_of(n, 1).total);
    if (!mem)
        return -1;
    struct breakdown_iv *iv = (struct breakdown_iv *)mem;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        /* cut to the window first: a span's length inside it decides how it nests */
        int64_t a = spans[i].t0_ns < t0 ? t0 : spans[i].t0_ns;
        int64_t b = spans[i].t1_ns > t1 ? t1 : spans[i].t1_ns;
        int lane = spans[i].lane;
        if (b <= a || lane >= LANE_COUNT || (only_lane >= 0 && lane != only_lane))
            continue;
        iv[k++] = (struct breakdown_iv){a, b, lane == LANE_GPU ? BREAKDOWN_FLAT : lane, spans[i].cat};
    }
    const int64_t win[1][2] = {{t0, t1}};
    int rc = sweep(out, iv, k, win, 1, NULL, NULL, mem + ivbytes);
    breakdown_scratch_free(&own);
    return rc;
}

void breakdown_compute(struct breakdown *out, const struct span *spans, size_t n, int64_t t0, int64_t t1)
{
    if (breakdown_window(out, spans, n, t0, t1, -1, NULL) != 0) {
        out->wall_ns = t1 > t0 ? t1 - t0 : 0;
        out->idle_ns = out->wall_ns;
    }
}
