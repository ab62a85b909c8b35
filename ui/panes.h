/* panes.h - the panes as small classes: a const table of functions plus
 * metadata, one file each, listed in ui.c's registry.
 *
 * A pane draws its window from the view (the snapshot, the finished runs,
 * the view state) and never touches the run. Its key handler only changes
 * view state and returns UI_* flags; the screen manager (ui.c) is the only
 * one that acts on them (redraw, relayout, quit).
 */
#ifndef DDPTOP_PANES_H
#define DDPTOP_PANES_H

#include "draw.h"
#include "layout.h"
#include "snap.h"

struct run_result;
struct scaling;

/* What a key handler asks of the screen manager. */
enum ui_flags { UI_HANDLED = 1, UI_REDRAW = 2, UI_RESIZE = 4, UI_QUIT = 8 };

/* view_state.run0: the Runs table shows its last rows, whatever their
 * number (the current run is the last). */
#define RUNS_FOLLOW (1 << 20)

/* State of the view that outlives a frame: zoom, scrolls, toggles. */
struct view_state {
    int tl_steps;    /* timeline: steps shown (zoom) */
    int tl_back;     /* timeline: steps scrolled back from the newest */
    int tl_max_back; /* timeline: how far back history goes (set by draw) */
    int tl_lane0;    /* timeline: first lane shown */
    int tl_nlanes;   /* timeline: lanes there are (set by draw) */
    int tl_rows;     /* timeline: lanes that fit (set by draw) */
    int loss_log;    /* loss: log-scale y axis */
    int rank0;       /* ranks: first rank shown */
    int rank_rows;   /* ranks: rows that fit (set by draw) */
    int run0;        /* runs: first run shown, or RUNS_FOLLOW */
    int run_rows;    /* runs: rows that fit (set by draw) */
    int layer0;      /* layers: first layer shown */
    int layer_rows;  /* layers: rows that fit (set by draw) */
    int kern0;       /* kernels: first line shown */
    int kern_rows;   /* kernels: lines that fit (set by draw) */
    int kern_total;  /* kernels: lines there are (set by draw) */
    int kern_rank;   /* kernels: the rank whose top kernels show, of those with a breakdown */
    int help0;       /* help: first row shown */
    int help_rows;   /* help: rows that fit (set by draw) */
    int help_total;  /* help: rows there are (set by draw) */
    int cyc_figure;  /* cycles (--follow): the figure plotted (m changes it) */
    int cyc_back;    /* per cycle (--follow): rows scrolled back from the newest */
    int cyc_rows;    /* per cycle: rows that fit (set by draw) */
    int cyc_total;   /* per cycle: rows there are (set by draw) */
};

struct pane_view {
    const struct snap *snap;
    const struct run_result *results; /* finished runs, oldest first */
    int nresults;
    const struct scaling *scaling; /* speedups: a row per finished run, then the live one */
    const char *next_run;          /* what `s` starts next ("ddp, 4 ranks x 32"), or "" */
    int live;                      /* the current run is not among results yet */
    int current;                   /* index of the current run (== nresults while live) */
    struct view_state *vs;
    int can_browse; /* paused, frozen or finished: history may scroll */
    int frozen;
    int colour;         /* colour is on */
    const char *theme;  /* theme name */
    const char *status; /* the status line's message */
    int status_error;
    const char *hint; /* set by a key handler: a message for the status line */
};

struct pane_ops {
    const char *title;
    int focusable;
    void (*draw)(WINDOW *w, struct pane_view *v, int focused);
    /* Arrow keys and the like while the pane has focus; 0 when not handled. */
    int (*key)(int ch, struct pane_view *v);
};

extern const struct pane_ops pane_header;
extern const struct pane_ops pane_ranks;
extern const struct pane_ops pane_timeline;
extern const struct pane_ops pane_loss;
extern const struct pane_ops pane_traffic;
extern const struct pane_ops pane_runs;
extern const struct pane_ops pane_layers;
extern const struct pane_ops pane_kernels;
extern const struct pane_ops pane_scaling;
extern const struct pane_ops pane_footer;
/* --follow's panes in the loss and traffic slots */
extern const struct pane_ops pane_cycles;
extern const struct pane_ops pane_cycle_table;

/* Lines the Kernels pane would like for res (its most of any rank's). */
int kernels_pane_lines(const struct run_result *res);

/* `+` (in = 1) and `-` zoom the timeline from whichever pane has focus. */
int timeline_zoom(struct view_state *vs, int in);

/* The help overlay (not a layout pane). */
void help_draw(WINDOW *w, const struct pane_view *v);
/* A key while help is open: 1 when it scrolls help (arrows, PgUp/PgDn,
 * Home/End), 0 for a key that closes it. */
int help_key(int ch, struct view_state *vs);

#endif
