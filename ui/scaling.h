/* scaling.h - speedup and efficiency of every run of the session, for the
 * Runs table's columns and the Scaling plot: results_speedup (src/report.c,
 * against a 1-rank run of the same model, the same global batch when there
 * is one) over copies of the finished runs' results and of the live run's
 * figures, so a 1-rank run serves as the base while it is still running.
 * No curses: unit-tested in tests/test_ui_core.c.
 */
#ifndef DDPTOP_SCALING_H
#define DDPTOP_SCALING_H

#include <stdint.h>

#include "report.h"

struct scaling_row {
    int world;
    int strategy; /* enum strategy_kind, or -1 */
    double speedup, efficiency_pct;
    int valid; /* a 1-rank run of the same model has a throughput */
    /* efficiency above 100%: the batch report's note on it
     * (result_efficiency_note), else "" */
    char over_note[400];
    /* the throughput the speedup compares (the global batch over the
     * median step; the live run's recent rate), for the Runs table to show
     * beside it: speedup = this / the base row's; 0 when unknown */
    double samples_per_s;
    int base_run; /* the run the speedup is against (valid) */
    int scaling;  /* enum scaling_kind: strong, weak, other, or baseline (its own) */
};

struct scaling {
    struct run_result *tmp;  /* [cap]: copies for results_speedup */
    struct scaling_row *row; /* [cap]: the finished runs in order, then the live one */
    int n, cap;
};

/* Fills sc for res[0..n) and, when live is not NULL, the live run last
 * (model, world, global batch and median step time are what count).
 * Returns 0, or -1 out of memory (sc then holds no rows). */
/* baseline: --baseline's (BASELINE_AUTO, ... or a run's index), as the
 * final report's results_compare takes it, so the two give one speedup. */
int scaling_update(struct scaling *sc, const struct run_result *res, int n, const struct run_result *live,
                   int baseline);
void scaling_free(struct scaling *sc);

/* A run's share of its time from its ranks' shares pct[i] (%) of
 * wall_ns[i] each: their summed times over their summed wall, the rule
 * the report uses (result_breakdowns), so a rank weighs by its wall.
 * 0 when there is no wall. */
#define SCALING_MAX_RANKS 64
double scaling_ranks_pct(const double *pct, const int64_t *wall_ns, int n);

/* Where the Scaling plot's points and ideal line go. */
struct scaling_axes {
    int max_world; /* the x axis: ranks 1..max_world (at least 2) */
    double max_y;  /* the y axis: speedup 0..max_y (at least max_world, the ideal's end) */
};
/* The axes for the valid rows; returns how many rows are valid. */
int scaling_axes(const struct scaling *sc, struct scaling_axes *ax);

/* Where a point falls on a plot dw x dh dots wide and high: the x of
 * rank count `ranks` (1 at the left, max_world at the right) and the y of
 * `speedup` (max_y at the top, 0 at the bottom; clamped). */
int scaling_dot_x(const struct scaling_axes *ax, double ranks, int dw);
int scaling_dot_y(const struct scaling_axes *ax, double speedup, int dh);

/* The lettered points of the plot, on a grid of w x h cells of cw x ch
 * dots: one mark per strategy and cell where its valid rows fall, with the
 * strategy's letter. Where two strategies' points share a cell, the marks
 * after the first move beside it (one column right, else left, then two,
 * then three) into a cell no other mark or point holds, so no letter
 * hides another; a mark that finds no such cell stays on its point,
 * drawn over the other, and `crowded` counts it. Returns how many marks out holds
 * (at most cap). */
struct scaling_mark {
    int x, y; /* cell column and row */
    int strategy;
    char letter;
};
int scaling_marks(const struct scaling *sc, const struct scaling_axes *ax, int w, int h, int cw, int ch,
                  struct scaling_mark *out, int cap, int *crowded);

#endif
