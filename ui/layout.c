/* layout.c - the pure layout function (see layout.h). Integer arithmetic
 * only; every rectangle it returns is checked by tests/test_layout.c. */
#include "layout.h"

#include <string.h>

/* Fixed and minimum heights. A boxed pane spends two rows on its border. */
enum {
    HEADER_H = 2,
    FOOTER_H = 2,
    MIN_RANKS_H = 4,    /* border, column header, one rank */
    MIN_TIMELINE_H = 5, /* border, one lane, axis, legend */
    MIN_LAYERS_H = 5,   /* border, column header, two layers */
    MIN_KERNELS_H = 5,  /* border, three lines (or the one saying there is no breakdown) */
    MIN_PLOT_H = 6,     /* border, four plot rows */
    MIN_RUNS_H = 4,     /* border, column header, one run */
    MAX_RUNS_H = 11,    /* eight runs; more scroll */
    MIN_SCALING_H = 6,  /* border, two plot rows, axis, legend */
    MAX_SCALING_H = 16, /* a plot taller than this says no more */
    MIN_PLOT_W = 20
};

static const char *const pane_names[PANE_COUNT] = {"header", "ranks",   "timeline", "layers",  "kernels",
                                                   "loss",   "traffic", "runs",     "scaling", "footer"};
_Static_assert(sizeof(pane_names) / sizeof(pane_names[0]) == PANE_COUNT, "one name per pane");

static const int min_h[PANE_COUNT] = {HEADER_H,   MIN_RANKS_H, MIN_TIMELINE_H, MIN_LAYERS_H,  MIN_KERNELS_H,
                                      MIN_PLOT_H, MIN_PLOT_H,  MIN_RUNS_H,     MIN_SCALING_H, FOOTER_H};
static const int min_w[PANE_COUNT] = {LAYOUT_MIN_COLS, LAYOUT_MIN_COLS, LAYOUT_MIN_COLS, LAYOUT_MIN_COLS,
                                      LAYOUT_MIN_COLS, MIN_PLOT_W,      MIN_PLOT_W,      LAYOUT_MIN_COLS,
                                      LAYOUT_MIN_COLS, LAYOUT_MIN_COLS};

const char *layout_pane_name(int pane)
{
    return pane >= 0 && pane < PANE_COUNT ? pane_names[pane] : "?";
}

int layout_min_h(int pane)
{
    return pane >= 0 && pane < PANE_COUNT ? min_h[pane] : 1;
}

int layout_min_w(int pane)
{
    return pane >= 0 && pane < PANE_COUNT ? min_w[pane] : 1;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static int imax(int a, int b)
{
    return a > b ? a : b;
}

static int has(unsigned set, int pane)
{
    return (set & PANE_BIT(pane)) != 0;
}

/* Rows the loss and traffic panes need at least, given which are on. */
static int plots_min(unsigned opt, int split)
{
    int n = has(opt, PANE_LOSS) + has(opt, PANE_TRAFFIC);
    if (n == 2 && split)
        return MIN_PLOT_H;
    return n * MIN_PLOT_H;
}

/* The timeline is worth showing only with two lanes (a rank and a peer, or
 * a rank's main and comm lanes) when it has them. */
static int timeline_min(int lanes)
{
    return MIN_TIMELINE_H - 1 + imin(imax(lanes, 1), 2);
}

/* The least rows the optional panes in opt need. */
static int optional_min(unsigned opt, int split, int lanes)
{
    return (has(opt, PANE_TIMELINE) ? timeline_min(lanes) : 0) + (has(opt, PANE_LAYERS) ? MIN_LAYERS_H : 0) +
           (has(opt, PANE_KERNELS) ? MIN_KERNELS_H : 0) + plots_min(opt, split) +
           (has(opt, PANE_RUNS) ? MIN_RUNS_H : 0) + (has(opt, PANE_SCALING) ? MIN_SCALING_H : 0);
}

static void place(struct layout *out, int pane, int y, int x, int h, int w)
{
    struct rect r = {y, x, h, w};
    out->pane[pane] = r;
    out->shown |= PANE_BIT(pane);
}

void layout_compute(struct layout *out, const struct layout_req *req)
{
    memset(out, 0, sizeof(*out));
    out->min_rows = LAYOUT_MIN_ROWS;
    out->min_cols = LAYOUT_MIN_COLS;
    int rows = req->rows, cols = req->cols;
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        out->too_small = 1;
        return;
    }
    int body = rows - HEADER_H - FOOTER_H;
    int split = cols >= LAYOUT_SPLIT_COLS;
    /* one pane per slot: the one switched in wins */
    int step = has(req->want, PANE_KERNELS) ? PANE_KERNELS : has(req->want, PANE_LAYERS) ? PANE_LAYERS : PANE_TIMELINE;
    int runs = has(req->want, PANE_SCALING) ? PANE_SCALING : PANE_RUNS;
    unsigned opt = req->want & (PANE_BIT(step) | PANE_BIT(PANE_LOSS) | PANE_BIT(PANE_TRAFFIC) | PANE_BIT(runs));

    /* The rank table gets its rows first, but never more than 2/5 of the
     * body, so the timeline and plots keep room when there are many ranks
     * (the table scrolls). */
    int ranks_h = imin(3 + imax(req->rank_rows, 1), imax(MIN_RANKS_H, body * 2 / 5));
    ranks_h = imax(ranks_h, MIN_RANKS_H);
    int rem = body - ranks_h;

    /* the panes nobody asked for go first, each group in this order */
    const int order[] = {runs, PANE_TRAFFIC, PANE_LOSS, step};
    const int n_order = (int)(sizeof(order) / sizeof(order[0]));
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < n_order && optional_min(opt, split, req->lanes) > rem; d++)
            if (has(req->keep, order[d]) == pass)
                opt &= ~PANE_BIT(order[d]);

    int tl_h = has(opt, PANE_TIMELINE) ? timeline_min(req->lanes) : has(opt, step) ? min_h[step] : 0;
    int runs_h = has(opt, PANE_RUNS) ? MIN_RUNS_H : has(opt, PANE_SCALING) ? MIN_SCALING_H : 0;
    int plots_h = plots_min(opt, split);
    int spare = rem - tl_h - runs_h - plots_h;

    /* Grow each pane towards what it would like, in priority order; the
     * plots take whatever is left, as they can use any height. */
    if (has(opt, PANE_RUNS)) {
        int g = imin(spare, imin(MAX_RUNS_H, 3 + imax(req->run_rows, 1)) - runs_h);
        if (g > 0) {
            runs_h += g;
            spare -= g;
        }
    }
    if (tl_h) {
        /* timeline: two rows per lane and a blank row between ranks; layers:
         * a row each and the column headers; kernels: a row each; at most
         * half */
        int want = step == PANE_KERNELS  ? 2 + imax(req->kernel_rows, 3)
                   : step == PANE_LAYERS ? 3 + imax(req->layer_rows, 2)
                                         : 4 + 2 * imax(req->lanes, 1) + imax(req->rank_rows - 1, 0);
        int wish = imin(want, imax(MIN_TIMELINE_H, rem / 2));
        int g = imin(spare, wish - tl_h);
        if (g > 0) {
            tl_h += g;
            spare -= g;
        }
    }
    if (has(opt, PANE_SCALING)) {
        /* a plot, but a small one: after the step slot, before the others */
        int g = imin(spare, MAX_SCALING_H - runs_h);
        if (g > 0) {
            runs_h += g;
            spare -= g;
        }
    }
    if (plots_h)
        plots_h += spare;
    else if (tl_h)
        tl_h += spare;
    else if (runs_h)
        runs_h += spare;
    else
        ranks_h += spare;

    int y = 0;
    place(out, PANE_HEADER, y, 0, HEADER_H, cols);
    y += HEADER_H;
    place(out, PANE_RANKS, y, 0, ranks_h, cols);
    y += ranks_h;
    if (tl_h) {
        place(out, step, y, 0, tl_h, cols);
        y += tl_h;
    }
    if (plots_h) {
        int both = has(opt, PANE_LOSS) && has(opt, PANE_TRAFFIC);
        if (both && split) {
            int lw = cols / 2;
            place(out, PANE_LOSS, y, 0, plots_h, lw);
            place(out, PANE_TRAFFIC, y, lw, plots_h, cols - lw);
        } else if (both) {
            int lh = plots_h / 2;
            place(out, PANE_LOSS, y, 0, lh, cols);
            place(out, PANE_TRAFFIC, y + lh, 0, plots_h - lh, cols);
        } else {
            place(out, has(opt, PANE_LOSS) ? PANE_LOSS : PANE_TRAFFIC, y, 0, plots_h, cols);
        }
        y += plots_h;
    }
    if (runs_h) {
        place(out, runs, y, 0, runs_h, cols);
        y += runs_h;
    }
    place(out, PANE_FOOTER, y, 0, FOOTER_H, cols);

    int hw = imin(cols - 2, 72), hh = imin(rows - 2, 22);
    struct rect help = {(rows - hh) / 2, (cols - hw) / 2, hh, hw};
    out->help = help;
}
