/* pane_traffic.c - bytes per second moved by all ranks (sent + received)
 * and the bus bandwidth collectives reach, over time, next to what the
 * alpha-beta cost model predicts for the same calls (drawn dim under the
 * measured curve). The model comes from --bench-comm; without a fit for
 * this backend and world size the prediction reads "n/a" rather than a
 * made-up number. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "panes.h"
#include "plot.h"

#define YLAB_W 9 /* "59.3 MB/s": fmt_rate's widest below 1000 TB/s */

static struct canvas g_canvas;

/* One plot of n series (drawn in order: the last on top) in rows
 * [y, y + ph), sharing a y axis from zero. Its labels stay inside its own
 * rows: the top value with its unit, what is plotted under it, and zero
 * at the bottom, so that two plots stacked never read as one axis. scale
 * turns a series' values into bytes per second. */
static void one_plot(WINDOW *w, int y, int ph, int wd, const struct series *const *ss, const int *els, int n,
                     const char *caption, double scale, const char *empty)
{
    int x0 = 1 + YLAB_W + 1, pw = wd - 1 - x0;
    if (pw < 4 || ph < 1)
        return;
    if (ph >= 2)
        draw_textf(w, y + 1, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, caption);
    struct plot_axes ax;
    if (!plot_range(&ax, ss, n, 0, 0)) {
        if (ph < 2)
            draw_textf(w, y, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, caption);
        draw_text(w, y + (ph - 1) / 2, x0, pw, TH_DIM, empty);
        return;
    }
    if (ax.lo > 0)
        ax.lo = 0; /* rates read best from zero */
    canvas_begin(&g_canvas, pw, ph);
    for (int i = 0; i < n; i++)
        plot_series(&g_canvas, &ax, ss[i], els[i]);
    canvas_blit(&g_canvas, w, y, x0);
    char lab[24];
    fmt_rate(lab, sizeof(lab), ax.hi * scale);
    draw_textf(w, y, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    if (ph >= 3)
        draw_textf(w, y + ph - 1, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, "0");
}

static void traffic_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    char note[48];
    if (s->replay)
        snprintf(note, sizeof(note), "whole run (replay)");
    else
        snprintf(note, sizeof(note), s->traffic_span_s < 10 ? "last %.1f s" : "last %.0f s", s->traffic_span_s);
    draw_box(w, "Traffic", note, focused);

    /* the figures now */
    char rate[24], bus[24], pred[48];
    fmt_bytes(rate, sizeof(rate), s->rate_bytes_now);
    if (s->busbw_now_valid)
        snprintf(bus, sizeof(bus), "%.2f GB/s", s->busbw_now);
    else
        snprintf(bus, sizeof(bus), "n/a");
    if (s->pred_now_valid)
        snprintf(pred, sizeof(pred), "%.2f GB/s", s->busbw_pred_now);
    else
        snprintf(pred, sizeof(pred), "%s", !s->have_model ? "n/a (run --bench-comm)" : "n/a");
    /* whole figures only: the prediction's hint goes first, then the
     * prediction, then busbw (a label cut in half reads as another) */
    int x = 1, room = wd - 2;
    int w_rate = (int)strlen(rate) + 2, w_bus = 2 + 6 + (int)strlen(bus), w_pred = 2 + 11 + (int)strlen(pred);
    if (w_rate + w_bus + w_pred > room && !s->pred_now_valid) {
        snprintf(pred, sizeof(pred), "n/a");
        w_pred = 2 + 11 + 3;
    }
    int show_pred = w_rate + w_bus + w_pred <= room, show_bus = w_rate + w_bus <= room;
    x += draw_text(w, 1, x, room, TH_BYTES, rate);
    x += draw_text(w, 1, x, wd - 1 - x, TH_BYTES, "/s");
    if (show_bus) {
        x += draw_text(w, 1, x, wd - 1 - x, TH_LABEL, "  busbw ");
        x += draw_text(w, 1, x, wd - 1 - x, s->busbw_now_valid ? TH_BUSBW : TH_DIM, bus);
    }
    if (show_pred) {
        x += draw_text(w, 1, x, wd - 1 - x, TH_LABEL, "  prediction ");
        draw_text(w, 1, x, wd - 1 - x, TH_PREDICTION, pred);
    }

    /* the prediction first, dim, so that the measured curve is drawn over it */
    const struct series *bytes[1] = {&s->rate_bytes};
    const struct series *bw[2] = {&s->busbw_pred, &s->busbw};
    static const int bytes_el[1] = {TH_BYTES}, bw_el[2] = {TH_PREDICTION, TH_BUSBW};
    int nbw = s->have_model ? 2 : 1, bw0 = 2 - nbw;
    int rows = h - 3; /* border and the figures line */
    /* (a trace keeps no samples over time: a replay has the figures above) */
    const char *empty = s->replay ? "n/a in a replay: the whole run's figures are above" : "no data yet";
    int nbytes = 1;
    if (s->run_world <= 1) { /* (nothing to plot: a flat zero would read as a stall) */
        empty = "n/a: one rank sends nothing";
        nbytes = nbw = 0;
    }
    if (rows >= 4) {
        int top = rows / 2;
        one_plot(w, 2, top, wd, bytes, bytes_el, nbytes, "sent+recv", 1.0, empty);
        one_plot(w, 2 + top, rows - top, wd, bw + bw0, bw_el + bw0, nbw, "busbw", 1e9, empty);
    } else {
        one_plot(w, 2, rows, wd, bytes, bytes_el, nbytes, "sent+recv", 1.0, empty);
    }
}

const struct pane_ops pane_traffic = {
    .title = "Traffic",
    .focusable = 1,
    .draw = traffic_draw,
    .key = NULL,
};
