/* pane_footer.c - the bottom two lines: the status line (what the last
 * action did, or the run's error) and the keys. */
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"

/* The keys line: what a narrow terminal drops first has the highest drop
 * (fit.h); help, the next run and quit always stay. A replay has no run to
 * pause, trace or follow: its line leaves out the keys marked live. */
static const struct {
    const char *key, *what;
    int drop, live;
} keys[] = {
    {"?", "help", 0, 0},     {"p", "pause", 5, 1},   {"space", "freeze", 8, 1}, {"e", "trace", 9, 1},
    {"s", "next run", 0, 1}, {"r/R", "ranks", 2, 1}, {"b/B", "batch", 3, 1},    {"n", "strategy", 4, 1},
    {"L", "layers", 1, 0},   {"g", "scaling", 1, 0}, {"t", "theme", 10, 0},     {"tab", "focus", 6, 0},
    {"+/-", "zoom", 7, 0},   {"l", "log", 10, 0},    {"q", "quit", 0, 0},
};
#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static void footer_draw(WINDOW *w, struct pane_view *v, int focused)
{
    int wd = getmaxx(w);
    werase(w);
    if (v->status && v->status[0])
        draw_text(w, 0, 1, wd - 2, v->status_error ? TH_ERROR : TH_STATUS, v->status);
    int wid[NKEYS], drop[NKEYS], on[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        wid[i] = (int)strlen(keys[i].key) + 1 + (int)strlen(keys[i].what);
        drop[i] = keys[i].drop;
    }
    int replay = v->snap && v->snap->replay;
    for (int i = 0; i < NKEYS; i++)
        if (replay && keys[i].live)
            wid[i] = 0;
    fit_by_priority(wid, drop, NKEYS, 1, wd, on);
    int x = 0;
    for (int i = 0; i < NKEYS; i++) {
        if (!on[i] || x >= wd || (replay && keys[i].live))
            continue;
        x += draw_text(w, 1, x, wd - x, TH_KEY, keys[i].key);
        x += draw_text(w, 1, x, wd - x, TH_NORMAL, " ");
        x += draw_text(w, 1, x, wd - x, TH_NORMAL, keys[i].what);
        x += 1;
    }
}

const struct pane_ops pane_footer = {
    .title = "footer",
    .focusable = 0,
    .draw = footer_draw,
    .key = NULL,
};

void help_draw(WINDOW *w, const struct pane_view *v)
{
    static const char *const lines[][2] = {
        {"? F1", "this help (any key closes it)"},
        {"p", "pause / resume training at a step boundary"},
        {"space", "freeze / unfreeze the view (training goes on)"},
        {"e", "write a trace of the recent steps (Chrome JSON)"},
        {"s", "stop this run, start the next (the Runs title says which)"},
        {"r R", "next run: one rank fewer / more"},
        {"b B", "next run: half / twice the batch per rank"},
        {"n", "next run: the next strategy"},
        {"L", "layers: per-layer times and ddp buckets (for the timeline)"},
        {"g", "scaling: speedup against ranks (for the Runs table)"},
        {"t", "next colour theme"},
        {"tab", "move focus between panes (shift-tab back)"},
        {"arrows", "scroll the focused pane; timeline history"},
        {"+ -", "zoom the timeline in / out (steps shown)"},
        {"l", "loss: log scale on / off"},
        {"q", "quit (Ctrl-C too); the terminal is restored"},
    };
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    draw_box(w, "Help", "ddptop " DDPTOP_VERSION, 1);
    int y = 1;
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]) && y < h - 1; i++, y++) {
        draw_textf(w, y, 2, 8, TH_KEY, "%-7s", lines[i][0]);
        draw_text(w, y, 11, wd - 12, TH_NORMAL, lines[i][1]);
    }
    if (y < h - 1)
        y++;
    if (y < h - 1)
        draw_legend(w, y++, 2, wd - 4);
    if (y < h - 1)
        draw_textf(w, y++, 2, wd - 4, TH_DIM, "theme %s%s", v->theme, v->colour ? "" : " (no colour)");
    if (y < h - 1) {
        /* the rank table's bars sum the three compute categories */
        draw_cell(w, y, 2, draw_compute_glyph(), TH_COMPUTE);
        draw_text(w, y++, 4, wd - 6, TH_DIM, "compute (fwd + bwd + opt) in the rank table's bars");
    }
}
