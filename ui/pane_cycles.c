/* pane_cycles.c - --follow's history, in the loss pane's place: one curve
 * per rank of a figure of each of its cycles (step time, comm%, idle%, or
 * its own time per step; `m` moves on), against the cycle's number. The
 * straggler of the newest cycle is drawn bold, the other ranks thin. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "panes.h"
#include "plot.h"

#define YLAB_W 7
#define MAX_CURVES 16

/* The figures a curve may show, in the order m goes through them. */
static const char *const figures[] = {"ms/step", "comm %", "idle %", "own ms/step"};
#define NFIG ((int)(sizeof(figures) / sizeof(figures[0])))

static double figure_of(const struct snap_cycle *c, int k)
{
    const double v[] = {c->ms_step, c->split.comm, c->split.idle, c->own_ms};
    _Static_assert(sizeof(v) / sizeof(v[0]) == NFIG, "one value per figure");
    return v[k];
}

static struct canvas g_canvas;
static struct series g_curve[MAX_CURVES];

static void cycles_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    int k = v->vs->cyc_figure % NFIG;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    char note[64];
    snprintf(note, sizeof(note), "%s per cycle  m: %s", figures[k], figures[(k + 1) % NFIG]);
    draw_box(w, "Cycles", note, focused);
    int x0 = 1 + YLAB_W + 1, pw = wd - 1 - x0, ph = h - 3;
    if (pw < 4 || ph < 1)
        return;
    /* each rank's cycles, in the order they landed (their own order) */
    int n = s->world < MAX_CURVES ? s->world : MAX_CURVES, bold = -1;
    const struct series *ss[MAX_CURVES];
    for (int i = 0; i < n; i++) {
        series_reset(&g_curve[i]);
        ss[i] = &g_curve[i];
        if (s->ranks[i].straggler)
            bold = i;
    }
    for (int c = 0; c < s->ncycles; c++)
        if (s->cycles[c].rank < n)
            series_push(&g_curve[s->cycles[c].rank], figure_of(&s->cycles[c], k));
    struct plot_axes ax;
    if (!plot_range(&ax, ss, n, -1, 0)) {
        draw_text(w, 1 + ph / 2, x0, pw, TH_DIM, "waiting for the first cycle");
        return;
    }
    canvas_begin(&g_canvas, pw, ph);
    for (int i = 0; i < n; i++)
        if (i != bold)
            plot_series(&g_canvas, &ax, ss[i], TH_SERIES);
    if (bold >= 0)
        plot_series(&g_canvas, &ax, ss[bold], TH_MEAN);
    canvas_blit(&g_canvas, w, 1, x0);
    char lab[24];
    plot_label(lab, sizeof(lab), ax.hi);
    draw_textf(w, 1, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    plot_label(lab, sizeof(lab), ax.lo);
    draw_textf(w, ph, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    /* x axis: the cycles, and the legend between */
    int by = h - 2, used = draw_text(w, by, x0, pw, TH_AXIS, "cycle 1");
    char right[32];
    snprintf(right, sizeof(right), "cycle %llu", (unsigned long long)ax.xn);
    int rl = (int)strlen(right);
    if (ax.xn > 1 && rl + used + 1 < pw)
        draw_text(w, by, x0 + pw - rl, rl, TH_AXIS, right);
    int lx = x0 + used + 2, room = pw - used - rl - 4;
    wchar_t line = draw_utf8() ? L'━' : L'-';
    if (bold >= 0 && room > 16) {
        draw_cell(w, by, lx, line, TH_MEAN);
        draw_textf(w, by, lx + 2, room - 2, TH_NORMAL, "rank %d, the straggler", bold);
    } else if (room > 10) {
        draw_cell(w, by, lx, line, TH_SERIES);
        draw_text(w, by, lx + 2, room - 2, TH_NORMAL, "one per rank");
    }
}

static int cycles_key(int ch, struct pane_view *v)
{
    if (ch != 'm' && ch != 'M')
        return 0;
    v->vs->cyc_figure = (v->vs->cyc_figure + 1) % NFIG;
    return UI_HANDLED | UI_REDRAW;
}

const struct pane_ops pane_cycles = {
    .title = "Cycles",
    .focusable = 1,
    .draw = cycles_draw,
    .key = cycles_key,
};
