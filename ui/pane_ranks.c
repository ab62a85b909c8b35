/* pane_ranks.c - the rank table: one row per rank with its device, step
 * time, throughput, where its time goes (a stacked bar and percentages),
 * overlap, bytes, bus bandwidth and device memory (held, and its most). Columns drop out by priority as the
 * terminal narrows; the bar takes the room that is left. */
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"
#include "run.h"
#include "scroll.h"

enum col_id {
    C_RANK,
    C_DEVICE,
    C_MS,
    C_SPS,
    C_BAR,
    C_COMP,
    C_COMM,
    C_DATA,
    C_IDLE,
    C_OVL,
    C_SENT,
    C_RECV,
    C_BUSBW,
    C_MEM,
    C_PEAK,
    C_N
};

static const struct {
    const char *name;
    int width;
    int drop; /* higher drops first; 0 never */
} cols[C_N] = {
    [C_RANK] = {"rank", 4, 0},     [C_DEVICE] = {"device", 8, 6},   [C_MS] = {"ms/step", 8, 0},
    [C_SPS] = {"samples/s", 9, 1}, [C_BAR] = {"time split", 10, 0}, [C_COMP] = {"comp%", 6, 2},
    [C_COMM] = {"comm%", 6, 2},    [C_DATA] = {"data%", 6, 4},      [C_IDLE] = {"idle%", 6, 3},
    [C_OVL] = {"ovl%", 6, 5},      [C_SENT] = {"sent", 9, 7},       [C_RECV] = {"recv", 9, 7},
    [C_BUSBW] = {"busbw", 10, 3},  [C_MEM] = {"mem", 9, 8},         [C_PEAK] = {"peak", 9, 8},
};

#define BAR_MAX 60

/* Which columns fit in width, and the bar's width. */
static int fit_columns(int width, int on[C_N])
{
    int wid[C_N], drop[C_N];
    for (int c = 0; c < C_N; c++) {
        wid[c] = cols[c].width;
        drop[c] = cols[c].drop;
    }
    fit_by_priority(wid, drop, C_N, 1, width, on);
    int fixed = 0;
    for (int c = 0; c < C_N; c++)
        if (on[c] && c != C_BAR)
            fixed += cols[c].width + 1;
    int bar = width - fixed - 1;
    if (bar > BAR_MAX)
        bar = BAR_MAX;
    return bar < 1 ? 1 : bar;
}

static void ranks_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int rows = h - 3;
    if (rows < 1)
        rows = 1;
    vs->rank_rows = rows;
    if (vs->rank0 > s->world - rows)
        vs->rank0 = s->world - rows;
    if (vs->rank0 < 0)
        vs->rank0 = 0;
    char note[128];
    if (s->world > rows)
        snprintf(note, sizeof(note), "%s%d-%d of %d", s->final ? "final, " : "", vs->rank0,
                 vs->rank0 + rows - 1 < s->world - 1 ? vs->rank0 + rows - 1 : s->world - 1, s->world);
    else if (s->ranks_note[0])
        snprintf(note, sizeof(note), "%s", s->ranks_note);
    else if (s->final)
        snprintf(note, sizeof(note), "final report");
    else if (s->stall_s > 0)
        snprintf(note, sizeof(note), "no step for %.1f s", s->stall_s);
    else
        snprintf(note, sizeof(note), s->at_rest ? "last %.1f s before the pause" : "last %.1f s", s->window_s);
    draw_box(w, "Ranks", note, focused);
    char cut[128];
    int below = s->world - vs->rank0 - rows;
    fmt_hidden(cut, sizeof(cut), vs->rank0, below > 0 ? below : 0, "rank", focused, draw_utf8());
    draw_box_foot(w, cut, TH_TITLE);

    int on[C_N];
    int bar = fit_columns(wd - 2, on);
    int x = 1;
    for (int c = 0; c < C_N; c++) {
        if (!on[c])
            continue;
        int cw = c == C_BAR ? bar : cols[c].width;
        if (c == C_BAR || c == C_DEVICE || c == C_RANK)
            draw_textf(w, 1, x, wd - 1 - x, TH_LABEL, "%-*s", cw, cols[c].name);
        else
            draw_textf(w, 1, x, wd - 1 - x, TH_LABEL, "%*s", cw, cols[c].name);
        x += cw + 1;
    }
    for (int k = 0; k < rows && vs->rank0 + k < s->world; k++) {
        int i = vs->rank0 + k;
        const struct snap_rank *r = &s->ranks[i];
        int recent = r->valid && !r->stalled; /* the windowed figures: n/a while stalled */
        int y = 2 + k;
        x = 1;
        for (int c = 0; c < C_N; c++) {
            if (!on[c])
                continue;
            int cw = c == C_BAR ? bar : cols[c].width, room = wd - 1 - x;
            char b[32];
            switch (c) {
            case C_RANK:
                /* the rank whose failure stopped the run: marked, in the failure's colour */
                if (i == s->failed_rank && s->state == RUN_FAILED) {
                    snprintf(b, sizeof(b), "!%d", r->id);
                    draw_textf(w, y, x, room, TH_FAILED, "%*s", cw, b);
                } else if (r->straggler) { /* --follow: the slow rank of its cycle */
                    snprintf(b, sizeof(b), "*%d", r->id);
                    draw_textf(w, y, x, room, TH_ERROR, "%*s", cw, b);
                } else
                    draw_textf(w, y, x, room, TH_VALUE, "%*d", cw, r->id);
                break;
            case C_DEVICE:
                draw_textf(w, y, x, room, TH_NORMAL, "%-*.*s", cw, cw, r->valid ? r->device : s->device);
                break;
            case C_MS:
                if (recent)
                    draw_textf(w, y, x, room, TH_VALUE, "%*.2f", cw, r->rate.ms);
                else
                    draw_textf(w, y, x, room, TH_DIM, "%*s", cw, "n/a");
                break;
            case C_SPS:
                fmt_si(b, sizeof(b), r->rate.samples_s);
                int ok = recent && r->rate.samples_valid;
                draw_textf(w, y, x, room, ok ? TH_NORMAL : TH_DIM, "%*s", cw, ok ? b : "n/a");
                break;
            case C_BAR:
                if (recent && x + cw <= wd - 1)
                    draw_bar(w, y, x, cw, r->split.compute, r->split.comm, r->split.data, r->split.idle);
                break;
            case C_COMP:
            case C_COMM:
            case C_DATA:
            case C_IDLE:
            case C_OVL: {
                double p = c == C_COMP   ? r->split.compute
                           : c == C_COMM ? r->split.comm
                           : c == C_DATA ? r->split.data
                           : c == C_IDLE ? r->split.idle
                                         : r->split.overlap;
                static const int el[] = {[C_COMP] = TH_COMPUTE,
                                         [C_COMM] = TH_CAT_COMM,
                                         [C_DATA] = TH_CAT_DATA,
                                         [C_IDLE] = TH_NORMAL,
                                         [C_OVL] = TH_NORMAL};
                if (recent)
                    draw_textf(w, y, x, room, el[c], "%*.1f", cw, p);
                else
                    draw_textf(w, y, x, room, TH_DIM, "%*s", cw, "n/a");
                break;
            }
            case C_SENT:
            case C_RECV:
                fmt_bytes(b, sizeof(b), (double)(c == C_SENT ? r->traffic.tx : r->traffic.rx));
                draw_textf(w, y, x, room, r->traffic.bytes_valid ? TH_NORMAL : TH_DIM, "%*s", cw,
                           r->traffic.bytes_valid ? b : "n/a");
                break;
            case C_MEM:
            case C_PEAK:
                fmt_bytes(b, sizeof(b), (double)(c == C_MEM ? r->mem.now : r->mem.peak));
                draw_textf(w, y, x, room, r->mem.valid ? TH_NORMAL : TH_DIM, "%*s", cw, r->mem.valid ? b : "n/a");
                break;
            case C_BUSBW:
                if (!r->stalled && r->traffic.busbw_valid)
                    draw_textf(w, y, x, room, TH_BUSBW, "%*.2f GB/s", cw - 5, r->traffic.busbw_gbps);
                else
                    draw_textf(w, y, x, room, TH_DIM, "%*s", cw, "n/a");
                break;
            default:
                break;
            }
            x += cw + 1;
        }
    }
}

static int ranks_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    return scroll_key(ch, SCROLL_LINES | SCROLL_PAGES, &vs->rank0, vs->rank_rows, v->snap->world)
               ? UI_HANDLED | UI_REDRAW
               : 0;
}

const struct pane_ops pane_ranks = {
    .title = "Ranks",
    .focusable = 1,
    .draw = ranks_draw,
    .key = ranks_key,
};
