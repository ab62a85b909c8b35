/* pane_layers.c - where a step's time goes inside the model, on rank 0:
 * each layer's forward and backward host time per call (a bar each, in
 * the timeline's glyphs), and for ddp each gradient bucket: when it became
 * ready in the step against when its allreduce ran, on a line across the
 * step with the backward pass under it.
 *
 * The layer times come from the model's own per-layer clock, published by
 * the rank thread (model_layer_times) and copied by the snapshot; on a GPU
 * they measure launches, not kernels, so the pane says n/a instead. The
 * buckets come from rank 0's span history (buckets.h).
 */
#include <stdio.h>
#include <string.h>

#include "buckets.h"
#include "panes.h"
#include "scroll.h"
#include "sync.h"

#define NAME_MIN 12
#define NAME_MAX 32
#define BAR_MAX 60
#define BUCKET_STEPS 8 /* steps averaged for the bucket lines */

static struct bucket_times g_bt;

/* Rows the bucket section takes: its header and a line per bucket, at
 * most half of what the pane has. */
static int bucket_rows(int inner, int nb)
{
    int want = 1 + (nb > 0 ? nb : 1), most = inner / 2 > 2 ? inner / 2 : 2;
    return want < most ? want : most;
}

/* A legend item "G label" at *x when it fits before maxx. */
static void legend_item(WINDOW *w, int y, int *x, int maxx, wchar_t g, int el, const char *label)
{
    int need = 2 + (int)strlen(label);
    if (*x + need > maxx)
        return;
    draw_cell(w, y, *x, g, el);
    draw_text(w, y, *x + 2, need - 2, TH_LABEL, label);
    *x += need + 2;
}

static void draw_layers(WINDOW *w, const struct snap *s, struct view_state *vs, int y0, int rows, int wd)
{
    /* the name column as wide as the longest name, within bounds, so the
     * bars keep the room */
    int name_w = NAME_MIN;
    for (int i = 0; i < s->nlayers; i++) {
        int len = (int)strlen(s->layers[i].name);
        if (len > name_w)
            name_w = len;
    }
    if (name_w > NAME_MAX)
        name_w = NAME_MAX;
    int x_fig = 1 + 3 + 1 + name_w + 1 + 10, x_bar = x_fig + 16 + 2, bar_w = wd - 1 - x_bar;
    if (bar_w > BAR_MAX)
        bar_w = BAR_MAX;
    draw_textf(w, y0, 1, wd - 2, TH_LABEL, "%3s %-*s %-10s %8s%8s", "#", name_w, "layer", "kind", "fwd ms", "bwd ms");
    if (bar_w >= 4) {
        int x = x_bar;
        legend_item(w, y0, &x, wd - 1, draw_cat_glyph(CAT_FORWARD), draw_cat_el(CAT_FORWARD), "fwd");
        legend_item(w, y0, &x, wd - 1, draw_cat_glyph(CAT_BACKWARD), draw_cat_el(CAT_BACKWARD), "bwd");
    }
    int n = rows - 1;
    vs->layer_rows = n > 0 ? n : 1;
    if (vs->layer0 > s->nlayers - n)
        vs->layer0 = s->nlayers - n;
    if (vs->layer0 < 0)
        vs->layer0 = 0;
    if (s->nlayers == 0) {
        if (n > 0)
            draw_text(w, y0 + 1, 2, wd - 4, TH_DIM,
                      s->replay ? "n/a in a replay: traces carry no per-layer times"
                                : "waiting for rank 0 to build its model");
        return;
    }
    double most = 0;
    for (int i = 0; i < s->nlayers; i++)
        if (s->layers[i].fwd_ms + s->layers[i].bwd_ms > most)
            most = s->layers[i].fwd_ms + s->layers[i].bwd_ms;
    int times = s->layers_valid && !s->on_gpu;
    for (int k = 0; k < n && vs->layer0 + k < s->nlayers; k++) {
        int i = vs->layer0 + k, y = y0 + 1 + k;
        const struct snap_layer *l = &s->layers[i];
        char num[16] = "  -"; /* a layout conversion: not one of the user's layers */
        if (l->num >= 0)
            snprintf(num, sizeof(num), "%3d", l->num);
        draw_textf(w, y, 1, wd - 2, l->num >= 0 ? TH_NORMAL : TH_DIM, "%3s %-*.*s %-10.10s", num, name_w, name_w,
                   l->name, l->kind);
        if (!times) {
            draw_textf(w, y, x_fig, wd - 1 - x_fig, TH_DIM, "%8s%8s", "n/a", "n/a");
            continue;
        }
        draw_textf(w, y, x_fig, wd - 1 - x_fig, TH_VALUE, "%8.3f%8.3f", l->fwd_ms, l->bwd_ms);
        if (bar_w >= 4 && most > 0) {
            int f = (int)(l->fwd_ms / most * bar_w + 0.5), b = (int)((l->fwd_ms + l->bwd_ms) / most * bar_w + 0.5) - f;
            draw_hfill(w, y, x_bar, f, draw_cat_glyph(CAT_FORWARD), draw_cat_el(CAT_FORWARD));
            draw_hfill(w, y, x_bar + f, b, draw_cat_glyph(CAT_BACKWARD), draw_cat_el(CAT_BACKWARD));
        }
    }
}

/* One line per bucket: figures, then the step from 0 to its end, with the
 * backward pass (dim), the allreduce and the instant the bucket was ready. */
static void draw_buckets(WINDOW *w, const struct snap *s, int y0, int rows, int wd)
{
    const struct bucket_times *bt = &g_bt;
    int x_line = 1 + 6 + 10 + 9 + 16 + 9 + 1, line_w = wd - 1 - x_line;
    draw_textf(w, y0, 1, wd - 2, TH_LABEL, "%-6s%10s%9s%16s%9s", "bucket", "size", "ready", "allreduce", "queued");
    if (line_w >= 16) {
        int x = x_line;
        if (bt->steps)
            x += 1 + draw_textf(w, y0, x + 1, wd - 2 - x, TH_LABEL, "step 0-%.1f ms:", bt->step_ms) + 1;
        legend_item(w, y0, &x, wd - 1, draw_utf8() ? L'┃' : L'|', TH_VALUE, "ready");
        legend_item(w, y0, &x, wd - 1, draw_cat_glyph(CAT_COMM), draw_cat_el(CAT_COMM), "allreduce");
        legend_item(w, y0, &x, wd - 1, draw_cat_glyph(CAT_BACKWARD), TH_DIM, "backward");
    }
    if (s->on_gpu) {
        draw_text(w, y0 + 1, 2, wd - 4, TH_DIM, "n/a on the GPU: asynchronous (the host only sees launches)");
        return;
    }
    if (bt->n == 0) {
        draw_text(w, y0 + 1, 2, wd - 4, TH_DIM, "waiting for a whole step");
        return;
    }
    for (int b = 0; b < bt->n && b < rows - 1; b++) {
        const struct bucket_time *q = &bt->b[b];
        int y = y0 + 1 + b;
        char size[24] = "n/a", ready[24] = "n/a", ar[40] = "n/a", queued[24] = "n/a";
        if (q->have_allreduce) {
            fmt_bytes(size, sizeof(size), q->bytes);
            snprintf(ar, sizeof(ar), "%.2f-%.2f", q->start_ms, q->end_ms);
        }
        if (q->have_ready)
            snprintf(ready, sizeof(ready), "%.2f", q->ready_ms);
        if (q->have_ready && q->have_allreduce)
            snprintf(queued, sizeof(queued), "%.2f", q->start_ms - q->ready_ms);
        draw_textf(w, y, 1, wd - 2, TH_NORMAL, "%-6d%10s%9s%16s%9s", b, size, ready, ar, queued);
        if (line_w < 16 || bt->step_ms <= 0)
            continue;
        double per = bt->step_ms / line_w;
        draw_hfill(w, y, x_line, line_w, draw_cat_glyph(CAT_COUNT), TH_DIM);
        int c0 = (int)(bt->bwd_start_ms / per), c1 = (int)(bt->bwd_end_ms / per);
        if (bt->bwd_end_ms > bt->bwd_start_ms)
            for (int c = c0; c <= c1 && c < line_w; c++)
                draw_cell(w, y, x_line + c, draw_cat_glyph(CAT_BACKWARD), TH_DIM);
        if (q->have_allreduce) {
            c0 = (int)(q->start_ms / per);
            c1 = (int)(q->end_ms / per);
            for (int c = c0; c <= c1 && c < line_w; c++)
                draw_cell(w, y, x_line + c, draw_cat_glyph(CAT_COMM), draw_cat_el(CAT_COMM));
        }
        if (q->have_ready) {
            int c = (int)(q->ready_ms / per);
            draw_cell(w, y, x_line + (c < line_w ? c : line_w - 1), draw_utf8() ? L'┃' : L'|', TH_VALUE);
        }
    }
}

static void layers_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int ddp = sync_has(s->sync, SYNC_BUCKET_MARKS) && s->world > 1;
    if (ddp && !s->on_gpu)
        buckets_from_spans(&g_bt, s->ranks[0].hist,
                           s->ranks[0].nhist < METRICS_HISTORY ? s->ranks[0].nhist : METRICS_HISTORY, s->steps_done - 1,
                           BUCKET_STEPS);
    else
        memset(&g_bt, 0, sizeof(g_bt));
    char note[96];
    if (s->replay && g_bt.steps)
        snprintf(note, sizeof(note), "rank 0  buckets: last %d steps of the trace", g_bt.steps);
    else if (s->replay)
        snprintf(note, sizeof(note), "replay");
    else if (s->on_gpu)
        snprintf(note, sizeof(note), "rank 0  n/a on the GPU: asynchronous");
    else if (g_bt.steps)
        snprintf(note, sizeof(note), "rank 0  ms per call, last %.0f s; buckets: last %d steps",
                 (double)SNAP_LAYER_WINDOW_NS / 1e9, g_bt.steps);
    else
        snprintf(note, sizeof(note), "rank 0  ms per call, last %.0f s", (double)SNAP_LAYER_WINDOW_NS / 1e9);
    draw_box(w, "Layers", note, focused);
    int inner = h - 2;
    if (inner < 2)
        return;
    int brows = ddp ? bucket_rows(inner, g_bt.n) : 0;
    draw_layers(w, s, vs, 1, inner - brows, wd);
    if (brows)
        draw_buckets(w, s, 1 + inner - brows, brows, wd);
    char cut[128];
    int below = s->nlayers - vs->layer0 - vs->layer_rows;
    fmt_hidden(cut, sizeof(cut), vs->layer0, below > 0 ? below : 0, "layer", focused, draw_utf8());
    if (!cut[0] && ddp && g_bt.n > brows - 1)
        snprintf(cut, sizeof(cut), "+%d buckets not shown", g_bt.n - (brows - 1));
    if (!cut[0] && !ddp && s->world > 1 && !s->replay)
        snprintf(cut, sizeof(cut), "per-bucket timing: ddp runs only");
    draw_box_foot(w, cut, TH_TITLE);
}

static int layers_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    return scroll_key(ch, SCROLL_LINES | SCROLL_PAGES, &vs->layer0, vs->layer_rows, v->snap->nlayers)
               ? UI_HANDLED | UI_REDRAW
               : 0;
}

const struct pane_ops pane_layers = {
    .title = "Layers",
    .focusable = 1,
    .draw = layers_draw,
    .key = layers_key,
};
