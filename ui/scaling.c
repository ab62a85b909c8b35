/* scaling.c - speedups over the session's runs (see scaling.h). */
#include "scaling.h"

#include <stdlib.h>
#include <string.h>

#include "sync.h"

int scaling_update(struct scaling *sc, const struct run_result *res, int n, const struct run_result *live, int baseline)
{
    int total = n + (live ? 1 : 0);
    if (total > sc->cap) {
        int nc = sc->cap ? sc->cap : 8;
        while (nc < total)
            nc *= 2;
        struct run_result *t = realloc(sc->tmp, sizeof(*t) * (size_t)nc);
        if (t)
            sc->tmp = t;
        struct scaling_row *r = realloc(sc->row, sizeof(*r) * (size_t)nc);
        if (r)
            sc->row = r;
        if (!t || !r) {
            sc->n = 0;
            return -1;
        }
        sc->cap = nc;
    }
    /* shallow copies: results_speedup writes only the speedup fields */
    if (n > 0)
        memcpy(sc->tmp, res, sizeof(*res) * (size_t)n);
    if (live)
        sc->tmp[n] = *live;
    results_compare(sc->tmp, total, baseline);
    for (int i = 0; i < total; i++) {
        const struct run_result *q = &sc->tmp[i];
        sc->row[i] = (struct scaling_row){.world = q->world,
                                          .strategy = q->cfg.strategy,
                                          .speedup = q->speedup,
                                          .efficiency_pct = q->efficiency,
                                          .valid = q->speedup_valid,
                                          .samples_per_s = q->rate.samples_s,
                                          .base_run = q->base_run,
                                          .scaling = q->scaling};
        if (!result_efficiency_note(sc->tmp, i, sc->row[i].over_note, sizeof(sc->row[i].over_note)))
            sc->row[i].over_note[0] = 0;
    }
    sc->n = total;
    return 0;
}

double scaling_ranks_pct(const double *pct, const int64_t *wall_ns, int n)
{
    double part = 0, wall = 0;
    for (int i = 0; i < n; i++) {
        part += pct[i] / 100.0 * (double)wall_ns[i];
        wall += (double)wall_ns[i];
    }
    return wall > 0 ? 100.0 * part / wall : 0;
}

void scaling_free(struct scaling *sc)
{
    free(sc->tmp);
    free(sc->row);
    memset(sc, 0, sizeof(*sc));
}

int scaling_axes(const struct scaling *sc, struct scaling_axes *ax)
{
    int valid = 0;
    ax->max_world = 2;
    ax->max_y = 0;
    for (int i = 0; i < sc->n; i++) {
        const struct scaling_row *r = &sc->row[i];
        if (!r->valid)
            continue;
        valid++;
        if (r->world > ax->max_world)
            ax->max_world = r->world;
        if (r->speedup > ax->max_y)
            ax->max_y = r->speedup;
    }
    if (ax->max_y < ax->max_world)
        ax->max_y = ax->max_world;
    return valid;
}

int scaling_dot_x(const struct scaling_axes *ax, double ranks, int dw)
{
    return (int)((ranks - 1) / (ax->max_world - 1) * (dw - 1) + 0.5);
}

int scaling_dot_y(const struct scaling_axes *ax, double speedup, int dh)
{
    double f = speedup / ax->max_y;
    if (f < 0)
        f = 0;
    if (f > 1)
        f = 1;
    return (int)((1.0 - f) * (dh - 1) + 0.5);
}

static int mark_at(const struct scaling_mark *m, int n, int x, int y)
{
    for (int i = 0; i < n; i++)
        if (m[i].x == x && m[i].y == y)
            return i;
    return -1;
}

int scaling_marks(const struct scaling *sc, const struct scaling_axes *ax, int w, int h, int cw, int ch,
                  struct scaling_mark *out, int cap, int *crowded)
{
    int n = 0;
    *crowded = 0;
    if (w < 1 || h < 1 || cw < 1 || ch < 1)
        return 0;
    /* the points' own cells first, one per strategy and cell, so that a
     * moved mark never takes the cell of a point drawn after it */
    struct scaling_mark want[64];
    int nw = 0;
    for (int i = 0; i < sc->n && nw < (int)(sizeof(want) / sizeof(want[0])); i++) {
        const struct scaling_row *r = &sc->row[i];
        const struct sync_ops *ops = sync_ops_of(r->strategy);
        if (!r->valid || !ops)
            continue;
        int x = scaling_dot_x(ax, r->world, w * cw) / cw, y = scaling_dot_y(ax, r->speedup, h * ch) / ch;
        int dup = 0;
        for (int k = 0; k < nw && !dup; k++)
            dup = want[k].x == x && want[k].y == y && want[k].strategy == r->strategy;
        if (!dup)
            want[nw++] = (struct scaling_mark){x, y, r->strategy, ops->letter};
    }
    for (int k = 0; k < nw && n < cap; k++) {
        struct scaling_mark m = want[k];
        if (mark_at(out, n, m.x, m.y) >= 0) {
            int placed = 0;
            for (int d = 1; d <= 3 && !placed; d++)
                for (int side = 0; side < 2 && !placed; side++) {
                    int x = side ? m.x - d : m.x + d;
                    if (x < 0 || x >= w || mark_at(out, n, x, m.y) >= 0)
                        continue;
                    int own = 0; /* another point's own cell */
                    for (int j = k + 1; j < nw && !own; j++)
                        own = want[j].x == x && want[j].y == m.y;
                    if (own)
                        continue;
                    m.x = x;
                    placed = 1;
                }
            if (!placed)
                ++*crowded;
        }
        out[n++] = m;
    }
    return n;
}
