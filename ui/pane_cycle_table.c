/* pane_cycle_table.c - --follow's history in numbers, in the traffic
 * pane's place: a row per cycle (its number and steps), newest last, and
 * for each rank its step time, comm% and idle% in that cycle; the
 * straggler's figures are marked with a star. Rows scroll with the arrows
 * when the pane has focus; ranks that do not fit are counted at the foot. */
#include <stdio.h>
#include <string.h>

#include "panes.h"
#include "scroll.h"

#define LEAD_W 16  /* "cycle steps     " */
#define GROUP_W 23 /* "  12345.67 100.0 100.0*" per rank */

/* Rank's cycle k, or NULL. */
static const struct snap_cycle *find(const struct snap *s, int rank, int k)
{
    for (int c = 0; c < s->ncycles; c++)
        if (s->cycles[c].rank == rank && s->cycles[c].cycle == k)
            return &s->cycles[c];
    return NULL;
}

static void table_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int rows = h - 3, groups = (wd - 2 - LEAD_W) / GROUP_W;
    if (rows < 1)
        rows = 1;
    if (groups < 1)
        groups = 1;
    if (groups > s->world)
        groups = s->world;
    vs->cyc_rows = rows;
    vs->cyc_total = s->max_cycles;
    if (vs->cyc_back > s->max_cycles - rows)
        vs->cyc_back = s->max_cycles - rows;
    if (vs->cyc_back < 0)
        vs->cyc_back = 0;
    char note[48];
    snprintf(note, sizeof(note), "ms/step comm%% idle%%  * straggler");
    draw_box(w, "Per cycle", note, focused);
    if (s->max_cycles == 0) {
        draw_text(w, 1 + rows / 2, 2, wd - 4, TH_DIM, "waiting for the first cycle");
        return;
    }
    int x = 1;
    draw_textf(w, 1, x, wd - 1 - x, TH_LABEL, "%5s %-10s", "cycle", "steps");
    for (int g = 0; g < groups; g++) {
        char lab[24];
        snprintf(lab, sizeof(lab), "rank %d", g);
        draw_textf(w, 1, x + LEAD_W + g * GROUP_W, GROUP_W, TH_LABEL, "%*s", GROUP_W - 1, lab);
    }
    /* the newest cycles, the last row the newest */
    int last = s->max_cycles - 1 - vs->cyc_back, first = last - rows + 1;
    if (first < 0)
        first = 0;
    for (int k = first, y = 2; k <= last && y < 2 + rows; k++, y++) {
        long lo = -1, hi = -1;
        for (int r = 0; r < s->world; r++) {
            const struct snap_cycle *c = find(s, r, k);
            if (c && c->step_lo <= c->step_hi) {
                lo = lo < 0 || (long)c->step_lo < lo ? (long)c->step_lo : lo;
                hi = (long)c->step_hi > hi ? (long)c->step_hi : hi;
            }
        }
        char steps[24] = "n/a";
        if (lo >= 0)
            snprintf(steps, sizeof(steps), "%ld-%ld", lo, hi);
        draw_textf(w, y, x, LEAD_W, TH_VALUE, "%5d %-10s", k + 1, steps);
        for (int g = 0; g < groups; g++) {
            const struct snap_cycle *c = find(s, g, k);
            int gx = x + LEAD_W + g * GROUP_W;
            if (!c) {
                draw_textf(w, y, gx, GROUP_W, TH_DIM, "%*s", GROUP_W - 1, "-");
                continue;
            }
            draw_textf(w, y, gx, GROUP_W, c->straggler ? TH_ERROR : TH_VALUE, "  %8.2f %5.1f %5.1f%c", c->ms_step,
                       c->split.comm, c->split.idle, c->straggler ? '*' : ' ');
        }
    }
    char cut[96] = "";
    int hidden = s->world - groups;
    if (hidden > 0)
        snprintf(cut, sizeof(cut), " %d more rank%s: widen the terminal ", hidden, hidden == 1 ? "" : "s");
    else if (first > 0 || vs->cyc_back > 0)
        snprintf(cut, sizeof(cut), " %d earlier, %d later%s ", first, vs->cyc_back, focused ? ": arrows" : "");
    if (cut[0])
        draw_box_foot(w, cut, TH_TITLE);
}

/* The rows run oldest first and the view keeps to the newest: cyc_back
 * counts rows back from the end, so the list's first row shown is
 * max_back - cyc_back. */
static int table_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    int max_back = vs->cyc_total - vs->cyc_rows > 0 ? vs->cyc_total - vs->cyc_rows : 0;
    int first = max_back - vs->cyc_back;
    if (!scroll_key(ch, SCROLL_LINES | SCROLL_ENDS, &first, vs->cyc_rows, vs->cyc_total))
        return 0;
    vs->cyc_back = max_back - first;
    return UI_HANDLED | UI_REDRAW;
}

const struct pane_ops pane_cycle_table = {
    .title = "Per cycle",
    .focusable = 1,
    .draw = table_draw,
    .key = table_key,
};
