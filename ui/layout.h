/* layout.h - where every pane goes, as a pure function of the terminal size
 * and of what the screen wants to show.
 *
 * No curses here: layout_compute() only does arithmetic on rectangles, so it
 * is unit-tested over every terminal size from the minimum to very large
 * (tests/test_layout.c) for panes that are empty, overlap or leave the
 * screen. The screen manager (ui.c) turns the rectangles into windows.
 *
 * Screen, top to bottom: header, ranks, the step slot, loss | traffic, the
 * runs slot, footer. The step slot holds the Kernels pane when it is
 * wanted, else the Layers pane when that is, else the Timeline; the runs
 * slot holds the Scaling plot when it is wanted, else the Runs table (the
 * keys K, L and g switch them). The loss
 * and traffic panes sit side by side when there are at least
 * LAYOUT_SPLIT_COLS columns, and are stacked otherwise. When rows run
 * short, optional panes are dropped in reverse priority order: the runs
 * slot, traffic, loss, the step slot; a pane the user asked for (`keep`)
 * goes only after all the others. Header, ranks and footer are always
 * shown.
 */
#ifndef DDPTOP_LAYOUT_H
#define DDPTOP_LAYOUT_H

enum pane_id {
    PANE_HEADER = 0,
    PANE_RANKS,
    PANE_TIMELINE,
    PANE_LAYERS,
    PANE_KERNELS,
    PANE_LOSS,
    PANE_TRAFFIC,
    PANE_RUNS,
    PANE_SCALING,
    PANE_FOOTER,
    PANE_COUNT
};

#define PANE_BIT(id) (1u << (id))
#define PANE_ALL ((1u << PANE_COUNT) - 1u)

/* Below this the screen shows "terminal too small" instead of panes. */
#define LAYOUT_MIN_COLS 40
#define LAYOUT_MIN_ROWS 10
/* From this width loss and traffic share one row. */
#define LAYOUT_SPLIT_COLS 80

struct rect {
    int y, x, h, w;
};

struct layout_req {
    int rows, cols;
    unsigned want;   /* PANE_BIT()s the screen would like; header, ranks and footer are always on */
    int rank_rows;   /* rows the rank table would like (one per rank) */
    int lanes;       /* timeline swim-lanes it would like */
    int run_rows;    /* rows the runs pane would like (one per run) */
    int layer_rows;  /* rows the layers pane would like (its layers and buckets) */
    unsigned keep;   /* PANE_BIT()s the user asked for: dropped only after every other optional pane */
    int kernel_rows; /* rows the kernels pane would like (its types and top kernels) */
};

struct layout {
    int too_small; /* 1: rows/cols below the minimum; no pane is shown */
    int min_rows, min_cols;
    unsigned shown;               /* PANE_BIT()s that got a rectangle */
    struct rect pane[PANE_COUNT]; /* {0} for panes not shown */
    struct rect help;             /* the help overlay, centred */
};

/* Fills *out for req. Shown panes tile the screen exactly: each is at least
 * layout_min_h() x layout_min_w(), inside the screen, and none overlap. */
void layout_compute(struct layout *out, const struct layout_req *req);
int layout_min_h(int pane);
int layout_min_w(int pane);
const char *layout_pane_name(int pane);

#endif
