/* pane_footer.c - the bottom two lines: the status line (what the last
 * action did, or the run's error) and the keys. */
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"
#include "scroll.h"

/* The keys line: what a narrow terminal drops first has the highest drop
 * (fit.h); help, the next run and quit always stay. A replay has no run to
 * pause, trace or follow: its line leaves out the keys marked live. */
static const struct {
    const char *key, *what;
    int drop, live;
} keys[] = {
    {"?", "help", 0, 0},     {"p", "pause", 5, 1},   {"space", "freeze", 8, 1}, {"e", "trace", 9, 1},
    {"s", "next run", 0, 1}, {"r/R", "ranks", 2, 1}, {"b/B", "batch", 3, 1},    {"n", "strategy", 4, 1},
    {"L", "layers", 1, 0},   {"K", "kernels", 1, 0}, {"g", "scaling", 1, 0},    {"t", "theme", 10, 0},
    {"tab", "focus", 6, 0},  {"+/-", "zoom", 7, 0},  {"l", "log", 10, 0},       {"q", "quit", 0, 0},
};
#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static void footer_draw(WINDOW *w, struct pane_view *v, int focused)
{
    int wd = getmaxx(w);
    werase(w);
    if (v->status && v->status[0]) {
        char fitted[512];
        fit_note(v->status, wd - 2, draw_utf8(), fitted, sizeof(fitted));
        draw_text(w, 0, 1, wd - 2, v->status_error ? TH_ERROR : TH_STATUS, fitted);
    }
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

/* The help overlay: every key with what it does, wrapped to the width,
 * then the legend and the theme; rows that do not fit scroll (the arrows,
 * PgUp/PgDn, Home/End: help_key), and the bottom border says how many
 * rows are above and below. */
static const char *const help_lines[][2] = {
    {"? F1", "this help (arrows scroll it; any other key closes it)"},
    {"p", "pause / resume training at a step boundary"},
    {"space", "freeze / unfreeze the view (training goes on)"},
    {"e", "write a trace of the recent steps (Chrome JSON)"},
    {"s", "stop this run, start the next (the Runs title says which)"},
    {"r R", "next run: one rank fewer / more"},
    {"b B", "next run: half / twice the batch per rank"},
    {"n", "next run: the next strategy"},
    {"L", "layers: per-layer times and ddp buckets (for the timeline)"},
    {"K", "kernels: time by kernel type and the top kernels of a PyTorch trace, as the report has them (for the "
          "timeline; with focus, Left/Right picks the rank)"},
    {"g", "scaling: speedup against ranks (for the Runs table)"},
    {"t", "next colour theme"},
    {"tab", "move focus between panes (shift-tab back)"},
    {"arrows", "scroll the focused pane; timeline history"},
    {"+ -", "zoom the timeline in / out (steps shown)"},
    {"l", "loss: log scale on / off"},
    {"m", "--follow: what the Cycles pane plots (ms/step, comm %, idle %, own work)"},
    {"q", "quit (Ctrl-C too); the terminal is restored"},
};
#define NHELP ((int)(sizeof(help_lines) / sizeof(help_lines[0])))
#define HELP_ROWS 96

enum help_row_kind { HR_KEY, HR_BLANK, HR_LEGEND, HR_THEME, HR_COMPUTE };

struct help_row {
    int kind, line; /* HR_KEY: help_lines[line], the part at start, len bytes long */
    int start, len, first;
};

/* The overlay's rows for text room columns wide. */
static int help_rows(int room, struct help_row *rows)
{
    int n = 0;
    for (int i = 0; i < NHELP; i++) {
        int st[8], ln[8];
        int k = fit_wrap(help_lines[i][1], room, st, ln, 8);
        for (int j = 0; j < k && n < HELP_ROWS - 4; j++)
            rows[n++] = (struct help_row){HR_KEY, i, st[j], ln[j], j == 0};
    }
    rows[n++] = (struct help_row){.kind = HR_BLANK};
    rows[n++] = (struct help_row){.kind = HR_LEGEND};
    rows[n++] = (struct help_row){.kind = HR_THEME};
    rows[n++] = (struct help_row){.kind = HR_COMPUTE};
    return n;
}

void help_draw(WINDOW *w, const struct pane_view *v)
{
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    draw_box(w, "Help", "ddptop " DDPTOP_VERSION, 1);
    struct help_row rows[HELP_ROWS];
    int n = help_rows(wd - 12, rows), shown = h - 2 > 0 ? h - 2 : 0;
    struct view_state *vs = v->vs;
    int max0 = n - shown > 0 ? n - shown : 0;
    if (vs->help0 > max0)
        vs->help0 = max0;
    if (vs->help0 < 0)
        vs->help0 = 0;
    vs->help_rows = shown;
    vs->help_total = n;
    for (int y = 1, k = vs->help0; y < h - 1 && k < n; y++, k++) {
        const struct help_row *r = &rows[k];
        switch (r->kind) {
        case HR_KEY:
            if (r->first)
                draw_textf(w, y, 2, 8, TH_KEY, "%-7s", help_lines[r->line][0]);
            draw_textf(w, y, 11, wd - 12, TH_NORMAL, "%.*s", r->len, help_lines[r->line][1] + r->start);
            break;
        case HR_LEGEND:
            draw_legend(w, y, 2, wd - 4);
            break;
        case HR_THEME:
            draw_textf(w, y, 2, wd - 4, TH_DIM, "theme %s%s", v->theme, v->colour ? "" : " (no colour)");
            break;
        case HR_COMPUTE:
            /* the rank table's bars sum the three compute categories */
            draw_cell(w, y, 2, draw_compute_glyph(), TH_COMPUTE);
            draw_text(w, y, 4, wd - 6, TH_DIM, "compute (fwd + bwd + opt) in the rank table's bars");
            break;
        default:
            break;
        }
    }
    char cut[128];
    int below = n - vs->help0 - shown;
    fmt_hidden(cut, sizeof(cut), vs->help0, below > 0 ? below : 0, "row", 1, draw_utf8());
    draw_box_foot(w, cut, TH_TITLE);
}

int help_key(int ch, struct view_state *vs)
{
    return scroll_key(ch, SCROLL_LINES | SCROLL_PAGES | SCROLL_ENDS, &vs->help0, vs->help_rows, vs->help_total);
}
