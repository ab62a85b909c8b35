/* pane_scaling.c - speedup against ranks over the session's runs, with
 * the ideal (speedup = ranks) as a dotted line: each strategy's runs are
 * joined in order of ranks and marked with the strategy's letter, the
 * live run included. Speedups are the Runs table's (scaling.h: against a
 * 1-rank run of the same model), so without such a run there is nothing
 * to plot and the pane says how to get one (r, then s). It shares the
 * Runs table's place on the screen; `g` switches between them.
 *
 * A replayed or followed job run with --predict has no runs to plot: the
 * pane shows its prediction instead, as the report prints it (the
 * result's job_pred, result_job_predict), read, never worked out here.
 */
#include <stdio.h>
#include <string.h>

#include "panes.h"
#include "report.h"
#include "report_fmt.h"
#include "scaling.h"
#include "sync.h"

#define YLAB_W 6

static struct canvas g_canvas;

static int dot_x(const struct canvas *c, const struct scaling_axes *ax, double ranks)
{
    return scaling_dot_x(ax, ranks, c->dw);
}

static int dot_y(const struct canvas *c, const struct scaling_axes *ax, double speedup)
{
    return scaling_dot_y(ax, speedup, c->dh);
}

/* The job's prediction (--predict of a replayed or followed job): the
 * measured job, where the link's cost came from, then a row per rank
 * count; or the note saying why there is none. */
static void job_draw(WINDOW *w, const struct job_pred *j, int focused)
{
    int h, wd;
    getmaxyx(w, h, wd);
    draw_box(w, "Scaling", "the traced job predicted at more ranks  g: runs table", focused);
    int x = 2, tw = wd - 4, y = 1, last = h - 2;
    if (!j->valid) {
        draw_text(w, y, x, tw, TH_DIM, j->note);
        return;
    }
    draw_textf(w, y++, x, tw, TH_VALUE,
               "measured on %d ranks: %.3f ms/step, compute %.3f, comm %.3f (%.3f exposed, %.3f hidden)", j->world,
               j->step_ms, j->compute_ms, j->comm_ms, j->exposed_ms, j->hidden_ms);
    if (y <= last)
        draw_textf(w, y++, x, tw, TH_DIM, "comm from %s", j->link);
    if (y <= last)
        draw_textf(w, y++, x, tw, TH_LABEL, "%6s %10s %9s %9s %8s %6s", "ranks", "pred ms", "comm", "exposed",
                   "speedup", "eff%");
    for (int k = 0; k < j->nrows && y <= last; k++) {
        const struct scaling_pred *sp = &j->rows[k];
        char c[5][32];
        draw_textf(w, y++, x, tw, sp->valid ? TH_VALUE : TH_DIM, "%6d %10s %9s %9s %8s %6s", sp->ranks,
                   rep_fig(c[0], sizeof(c[0]), "%.3f", sp->step_ms, sp->valid),
                   rep_fig(c[1], sizeof(c[1]), "%.3f", sp->comm_ms, sp->valid),
                   rep_fig(c[2], sizeof(c[2]), "%.3f", sp->exposed_ms, sp->valid),
                   rep_fig(c[3], sizeof(c[3]), "%.2fx", sp->speedup, sp->valid),
                   rep_fig(c[4], sizeof(c[4]), "%.1f", sp->efficiency, sp->valid));
    }
}

static void scaling_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct scaling *sc = v->scaling;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    const struct run_result *res = v->snap ? v->snap->result : NULL;
    if (res && (res->job.valid || res->job.note[0])) {
        job_draw(w, &res->job, focused);
        return;
    }
    struct scaling_axes ax;
    int nvalid = sc ? scaling_axes(sc, &ax) : 0;
    draw_box(w, "Scaling", nvalid ? "speedup against ranks, vs a 1-rank run  g: runs table" : "g: runs table", focused);
    int x0 = 1 + YLAB_W + 1, pw = wd - 2 - x0, ph = h - 4; /* border, x axis, legend */
    if (pw < 8 || ph < 2)
        return;
    if (!nvalid) {
        /* a replay has one run and no keys to start another */
        draw_text(w, 1 + ph / 2, x0, pw, TH_DIM,
                  v->next_run && v->next_run[0] ? "no speedup yet: it needs a 1-rank run (r to 1 rank, then s)"
                                                : "no speedup: it needs a 1-rank run of the same model");
        return;
    }
    canvas_begin(&g_canvas, pw, ph);
    int cw = g_canvas.dw / pw, chh = g_canvas.dh / ph;
    /* the ideal, dotted: every third dot */
    int ix0 = dot_x(&g_canvas, &ax, 1), iy0 = dot_y(&g_canvas, &ax, 1);
    int ix1 = dot_x(&g_canvas, &ax, ax.max_world), iy1 = dot_y(&g_canvas, &ax, ax.max_world);
    int steps = ix1 - ix0 > iy0 - iy1 ? ix1 - ix0 : iy0 - iy1;
    for (int i = 0; i <= steps; i += 3)
        canvas_dot(&g_canvas, ix0 + (ix1 - ix0) * i / (steps ? steps : 1), iy0 + (iy1 - iy0) * i / (steps ? steps : 1),
                   TH_AXIS);
    /* each strategy's runs, joined in order of ranks (the newest run of a
     * rank count stands for it) */
    int used[SYNC_KINDS] = {0};
    for (int st = 0; st < SYNC_KINDS; st++) {
        int px = -1, py = -1;
        for (int world = 1; world <= ax.max_world; world++) {
            int pick = -1;
            for (int i = 0; i < sc->n; i++)
                if (sc->row[i].valid && sc->row[i].strategy == st && sc->row[i].world == world)
                    pick = i;
            if (pick < 0)
                continue;
            int x = dot_x(&g_canvas, &ax, world), y = dot_y(&g_canvas, &ax, sc->row[pick].speedup);
            if (px >= 0)
                canvas_line(&g_canvas, px, py, x, y, TH_MEAN);
            else
                canvas_dot(&g_canvas, x, y, TH_MEAN);
            px = x;
            py = y;
            used[st] = 1;
        }
    }
    canvas_blit(&g_canvas, w, 1, x0);
    /* the points, lettered by strategy, over the lines; two strategies'
     * points in one cell side by side (scaling_marks) */
    struct scaling_mark marks[64];
    int crowded;
    int nm = scaling_marks(sc, &ax, pw, ph, cw, chh, marks, 64, &crowded);
    for (int i = 0; i < nm; i++)
        draw_cell(w, 1 + marks[i].y, x0 + marks[i].x, (wchar_t)marks[i].letter, TH_VALUE);
    /* y labels: the top, the middle and zero */
    draw_textf(w, 1, 1, YLAB_W, TH_AXIS, "%*.1fx", YLAB_W - 1, ax.max_y);
    if (ph >= 5) /* (on the row its points fall in) */
        draw_textf(w, 1 + dot_y(&g_canvas, &ax, ax.max_y / 2) / chh, 1, YLAB_W, TH_AXIS, "%*.1fx", YLAB_W - 1,
                   ax.max_y / 2);
    draw_textf(w, ph, 1, YLAB_W, TH_AXIS, "%*s", YLAB_W, "0");
    /* x axis: every rank count, where there is room for its number */
    int ay = h - 3;
    draw_hfill(w, ay, x0, pw, draw_utf8() ? L'─' : L'-', TH_AXIS);
    draw_text(w, ay, 1, YLAB_W, TH_AXIS, " ranks");
    int next_free = 0;
    for (int world = 1; world <= ax.max_world; world++) {
        int c = dot_x(&g_canvas, &ax, world) / cw;
        char lab[8];
        int len = snprintf(lab, sizeof(lab), "%d", world);
        if (c < next_free || c + len > pw)
            continue;
        draw_text(w, ay, x0 + c, len, TH_AXIS, lab);
        next_free = c + len + 1;
    }
    /* legend */
    int lx = x0, ly = h - 2;
    lx += draw_text(w, ly, lx, wd - 1 - lx, TH_AXIS, draw_utf8() ? "\u2508" : ".");
    lx += 1 + draw_text(w, ly, lx + 1, wd - 1 - lx - 1, TH_NORMAL, "ideal");
    for (int st = 0; st < SYNC_KINDS; st++) {
        if (!used[st])
            continue;
        int need = 3 + (int)strlen(strategy_name(st));
        if (lx + 2 + need > wd - 1)
            break;
        lx += 2;
        draw_cell(w, ly, lx, (wchar_t)sync_ops_of(st)->letter, TH_VALUE);
        lx += 2 + draw_text(w, ly, lx + 2, wd - 1 - lx - 2, TH_NORMAL, strategy_name(st));
    }
}

const struct pane_ops pane_scaling = {
    .title = "Scaling",
    .focusable = 1,
    .draw = scaling_draw,
    .key = NULL,
};
