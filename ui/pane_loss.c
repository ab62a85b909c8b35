/* pane_loss.c - training loss per rank (thin) and their mean (bold) over
 * the steps so far, test accuracy marked at each epoch's end, the loss
 * threshold as a horizontal line, and a log-scale toggle (`l`).
 *
 * The curves come from fixed-size binned series (series.h), so a long run
 * costs the same per frame as a short one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"
#include "plot.h"

#define YLAB_W 7
#define MAX_RANK_CURVES 16

static struct canvas g_canvas;

static void loss_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    char note[64];
    snprintf(note, sizeof(note), "%s  l: %s", v->vs->loss_log ? "log10" : "linear", v->vs->loss_log ? "linear" : "log");
    draw_box(w, "Loss", note, focused);
    int x0 = 1 + YLAB_W + 1, pw = wd - 1 - x0, ph = h - 3;
    if (pw < 4 || ph < 1)
        return;

    const struct series *ss[1 + MAX_RANK_CURVES];
    int n = 0;
    ss[n++] = &s->loss_mean;
    for (int i = 0; i < s->world && i < MAX_RANK_CURVES; i++)
        ss[n++] = &s->loss_rank[i];
    struct plot_axes ax;
    if (!plot_range(&ax, ss, n, s->threshold, v->vs->loss_log)) {
        draw_text(w, 1 + ph / 2, x0, pw, TH_DIM, "waiting for the first step");
        return;
    }
    canvas_begin(&g_canvas, pw, ph);
    int cell_h = g_canvas.dh / (ph > 0 ? ph : 1), cell_w = g_canvas.dw / (pw > 0 ? pw : 1);

    /* markers first: the curves are drawn over them; their labels are
     * shortened or left out rather than written over one another */
    static int mark[SNAP_MAX_EPOCHS], wide[SNAP_MAX_EPOCHS], narrow[SNAP_MAX_EPOCHS], lab_x[SNAP_MAX_EPOCHS],
        lab_len[SNAP_MAX_EPOCHS];
    static char lab_wide[SNAP_MAX_EPOCHS][16];
    int nm = 0;
    for (int e = 0; e < s->nepochs; e++) {
        if (s->acc_step[e] < 0 || isnan(s->acc[e]))
            continue;
        int cx = plot_x(&g_canvas, &ax, (double)s->acc_step[e]) / cell_w;
        for (int y = 0; y < ph; y++)
            draw_cell(w, 1 + y, x0 + cx, draw_utf8() ? L'┊' : L':', TH_ACCURACY);
        snprintf(lab_wide[nm], sizeof(lab_wide[nm]), "acc %.1f%%", s->acc[e]);
        mark[nm] = cx;
        wide[nm] = (int)strlen(lab_wide[nm]);
        narrow[nm] = wide[nm] - 4; /* without "acc " */
        nm++;
    }
    fit_marks(mark, wide, narrow, nm, pw, lab_x, lab_len);
    for (int k = 0; k < nm; k++)
        if (lab_x[k] >= 0)
            draw_text(w, 1, x0 + lab_x[k], lab_len[k], TH_ACCURACY, lab_wide[k] + (wide[k] - lab_len[k]));
    int thr_y = -1;
    if (s->threshold > 0) {
        thr_y = plot_y(&g_canvas, &ax, s->threshold) / cell_h;
        draw_hfill(w, 1 + thr_y, x0, pw, draw_utf8() ? L'┄' : L'-', TH_THRESHOLD);
    }
    for (int i = 1; i < n; i++)
        plot_series(&g_canvas, &ax, ss[i], TH_SERIES);
    plot_series(&g_canvas, &ax, &s->loss_mean, TH_MEAN);
    canvas_blit(&g_canvas, w, 1, x0);
    if (thr_y >= 0) {
        /* the label goes over the curves: it must stay readable */
        char lab[96];
        if (s->threshold_step >= 0)
            snprintf(lab, sizeof(lab), " threshold %g, reached at step %ld ", s->threshold, s->threshold_step);
        else
            snprintf(lab, sizeof(lab), " threshold %g ", s->threshold);
        int len = (int)strlen(lab);
        if (len > pw)
            len = pw;
        draw_text(w, 1 + thr_y, x0 + pw - len, len, TH_THRESHOLD, lab);
    }

    /* y labels: top, bottom and, with room, the middle */
    char lab[24];
    double top = ax.log ? pow(10, ax.hi) : ax.hi, bot = ax.log ? pow(10, ax.lo) : ax.lo;
    plot_label(lab, sizeof(lab), top);
    draw_textf(w, 1, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    plot_label(lab, sizeof(lab), bot);
    draw_textf(w, ph, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    if (ph >= 5) {
        double mid = ax.log ? pow(10, (ax.hi + ax.lo) / 2) : (ax.hi + ax.lo) / 2;
        plot_label(lab, sizeof(lab), mid);
        draw_textf(w, 1 + (ph - 1) / 2, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, lab);
    }
    /* x axis: the step range, and the legend between */
    int by = h - 2, used = draw_text(w, by, x0, pw, TH_AXIS, "0");
    char right[32];
    snprintf(right, sizeof(right), "step %llu", (unsigned long long)ax.xn);
    int rl = (int)strlen(right);
    if (rl + used + 1 < pw)
        draw_text(w, by, x0 + pw - rl, rl, TH_AXIS, right);
    int lx = x0 + used + 2, room = pw - used - rl - 4;
    if (room > 8) {
        int u = 0;
        wchar_t line = draw_utf8() ? L'━' : L'-';
        draw_cell(w, by, lx + u, line, TH_MEAN);
        u += 2;
        u += draw_text(w, by, lx + u, room - u, TH_NORMAL, "mean  ");
        if (s->world > 1 && room - u > 12) {
            draw_cell(w, by, lx + u, line, TH_SERIES);
            u += 2;
            u += draw_text(w, by, lx + u, room - u, TH_NORMAL, "per rank  ");
        }
        if (room - u > 12) {
            draw_cell(w, by, lx + u, draw_utf8() ? L'┊' : L':', TH_ACCURACY);
            u += 2;
            draw_text(w, by, lx + u, room - u, TH_NORMAL, "test acc");
        }
    }
}

const struct pane_ops pane_loss = {
    .title = "Loss",
    .focusable = 1,
    .draw = loss_draw,
    .key = NULL,
};
