/* scaling.c - speedups over the session's runs (see scaling.h). */
#include "scaling.h"

#include <stdlib.h>
#include <string.h>

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
                                          .samples_per_s = q->samples_per_s_p50,
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
