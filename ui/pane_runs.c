/* pane_runs.c - every run of this session side by side: the finished ones
 * (their final results, kept when `s` moved on) and the current one, live,
 * with speedup and efficiency against a 1-rank run of the same model. It
 * answers "which strategy wins here, how well it scales, and why" without
 * leaving the UI. Its title shows the run `s` starts next, which r/R, b/B
 * and n change (plan.h). */
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"
#include "scroll.h"
#include "mode.h"
#include "pipeline.h"
#include "report.h"
#include "run.h"
#include "scaling.h"
#include "strategy.h"

struct row {
    const char *strategy; /* how it trained (mode holds it) */
    char mode[32];
    int ranks, batch; /* batch: per rank, as the rank ran it */
    long steps;
    double ms, sps, comp, comm, idle, acc;
    int rate_valid, acc_valid;
    int sps_valid;   /* samples/s known (a trace may lack its batch) */
    int split_valid; /* the time split known (some rank's) */
    int state;
};

static void row_of_result(struct row *r, const struct run_result *res)
{
    r->strategy = train_mode_label(&res->cfg, r->mode, sizeof(r->mode));
    r->ranks = res->world;
    /* (a replica's: every stage of it works on the whole of it) */
    int replicas = train_mode_replicas(&res->cfg, res->world);
    r->batch = replicas > 0 ? res->global_batch / replicas : 0;
    r->steps = res->steps;
    r->ms = res->rate.ms; /* (the step samples/s and speedup are of) */
    r->sps = res->rate.samples_s;
    r->rate_valid = res->steps > 0 && res->rate.ms > 0;

    r->sps_valid = r->rate_valid && res->rate.samples_valid;
    r->split_valid = res->nranks > 0 && res->b.wall_ns > 0;
    r->comp = res->split.compute;
    r->comm = res->split.comm;
    r->idle = res->split.idle;
    r->acc = res->test_acc;
    r->acc_valid = res->test_valid;
    r->state = res->state;
}

/* The live run's row, from the snapshot: its split is the ranks' as the
 * report's is (result_breakdowns): their summed times over their summed
 * wall, each rank weighing by its wall. */
static void row_of_snap(struct row *r, const struct snap *s)
{
    r->strategy = s->strategy;
    r->ranks = s->run_world;
    r->batch = s->local_batch;
    r->steps = s->follow ? s->steps_measured : s->steps_done; /* (--follow's: the job's latest step number) */
    r->ms = s->rate.ms;
    r->sps = s->rate.samples_s;
    r->rate_valid = s->rate_valid;
    r->sps_valid = s->rate_valid && s->rate.samples_valid;
    double pct[3][SCALING_MAX_RANKS];
    int64_t wall[SCALING_MAX_RANKS];
    int n = 0;
    for (int k = 0; k < s->world && n < SCALING_MAX_RANKS; k++)
        if (s->ranks[k].valid) {
            pct[0][n] = s->ranks[k].split.compute;
            pct[1][n] = s->ranks[k].split.comm;
            pct[2][n] = s->ranks[k].split.idle;
            wall[n++] = s->ranks[k].split_wall_ns;
        }
    r->comp = scaling_ranks_pct(pct[0], wall, n);
    r->comm = scaling_ranks_pct(pct[1], wall, n);
    r->idle = scaling_ranks_pct(pct[2], wall, n);
    r->split_valid = n > 0;
    if (s->follow) { /* (the ranks' rows are their latest cycle's; the run's row is the report's) */
        r->comp = s->run_split[0];
        r->comm = s->run_split[1];
        r->idle = s->run_split[2];
        r->split_valid = s->run_split_valid;
    }
    r->acc = s->test_acc;
    r->acc_valid = s->test_valid;
    r->state = s->state;
}

enum col_id {
    C_NUM,
    C_STRATEGY,
    C_RANKS,
    C_BATCH,
    C_STEPS,
    C_MS,
    C_SPS,
    C_SPEEDUP,
    C_EFF,
    C_VS,
    C_COMP,
    C_COMM,
    C_IDLE,
    C_ACC,
    C_STATE,
    C_N
};

static const struct {
    const char *name;
    int width;
    int drop; /* higher drops first; 0 never */
    int left; /* left-aligned */
} cols[C_N] = {
    [C_NUM] = {"#", 3, 0, 1},         [C_STRATEGY] = {"strategy", 17, 0, 1}, [C_RANKS] = {"ranks", 5, 0, 0},
    [C_BATCH] = {"batch", 6, 3, 0},   [C_STEPS] = {"steps", 7, 8, 0},        [C_MS] = {"p50 ms", 8, 0, 0},
    [C_SPS] = {"samples/s", 9, 0, 0}, [C_SPEEDUP] = {"speedup", 7, 1, 0},    [C_EFF] = {"eff%", 6, 4, 0},
    [C_VS] = {"vs", 9, 6, 1},         [C_COMP] = {"comp%", 6, 6, 0},         [C_COMM] = {"comm%", 6, 2, 0},
    [C_IDLE] = {"idle%", 6, 5, 0},    [C_ACC] = {"test acc", 8, 7, 0},       [C_STATE] = {"state", 8, 9, 1},
};

static void fit_columns(int width, int on[C_N])
{
    int wid[C_N], drop[C_N];
    for (int c = 0; c < C_N; c++) {
        wid[c] = cols[c].width;
        drop[c] = cols[c].drop;
    }
    fit_by_priority(wid, drop, C_N, 1, width - 2 /* the current-run marker */, on);
}

static void runs_draw(WINDOW *w, struct pane_view *v, int focused)
{
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int total = v->nresults + (v->live ? 1 : 0);
    int rows = h - 3;
    if (rows < 1)
        rows = 1;
    vs->run_rows = rows;
    /* following, or scrolled past the end (a resize): the last rows, so
     * that the current run stays in sight */
    int max0 = total - rows > 0 ? total - rows : 0, run0 = vs->run0 < max0 ? vs->run0 : max0;
    char note[160];
    if (v->next_run && v->next_run[0])
        snprintf(note, sizeof(note), "%d run%s  next: %s  s: start  g: plot", total, total == 1 ? "" : "s",
                 v->next_run);
    else
        snprintf(note, sizeof(note), "%d run%s", total, total == 1 ? "" : "s");
    draw_box(w, "Runs", note, focused);
    char cut[128], foot[560];
    int below = total - run0 - rows;
    fmt_hidden(cut, sizeof(cut), run0, below > 0 ? below : 0, "run", focused, draw_utf8());
    /* the latest efficiency above 100%, with the report's note on why */
    int over = -1;
    for (int i = 0; v->scaling && i < v->scaling->n; i++)
        if (v->scaling->row[i].valid && v->scaling->row[i].over_note[0])
            over = i;
    if (over >= 0)
        snprintf(foot, sizeof(foot), "%s%s!: run %d: %s", cut, cut[0] ? "  " : "", over,
                 v->scaling->row[over].over_note);
    else
        snprintf(foot, sizeof(foot), "%s", cut);
    draw_box_foot(w, foot, TH_TITLE);
    int on[C_N];
    fit_columns(wd - 2, on);
    int x = 3;
    for (int c = 0; c < C_N; c++)
        if (on[c]) {
            draw_textf(w, 1, x, wd - 1 - x, TH_LABEL, cols[c].left ? "%-*s" : "%*s", cols[c].width, cols[c].name);
            x += cols[c].width + 1;
        }
    for (int k = 0; k < rows && run0 + k < total; k++) {
        int idx = run0 + k;
        struct row r;
        if (v->live && idx == v->nresults)
            row_of_snap(&r, v->snap);
        else
            row_of_result(&r, &v->results[idx]);
        /* samples/s as the speedup beside it compared it, whatever the row's source */
        const struct scaling_row *sr = v->scaling && idx < v->scaling->n ? &v->scaling->row[idx] : NULL;
        if (sr && sr->samples_per_s > 0)
            r.sps = sr->samples_per_s;
        int cur = idx == v->current, el = cur ? TH_SELECTED : TH_NORMAL, y = 2 + k;
        draw_text(w, y, 1, 2, el, cur ? ">" : " ");
        x = 3;
        for (int c = 0; c < C_N; c++) {
            if (!on[c])
                continue;
            int cw = cols[c].width, room = wd - 1 - x;
            char b[32];
            switch (c) {
            case C_NUM:
                snprintf(b, sizeof(b), "%d", idx); /* (from 0, as the report and --baseline count) */
                break;
            case C_STRATEGY:
                snprintf(b, sizeof(b), "%s", r.strategy);
                break;
            case C_RANKS:
                snprintf(b, sizeof(b), "%d", r.ranks);
                break;
            case C_BATCH: /* (a trace may not say it) */
                if (r.batch > 0)
                    snprintf(b, sizeof(b), "%d", r.batch);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            case C_SPEEDUP:
            case C_EFF: {
                const struct scaling_row *q = v->scaling && idx < v->scaling->n ? &v->scaling->row[idx] : NULL;
                if (q && q->valid && c == C_EFF && q->over_note[0])
                    snprintf(b, sizeof(b), "%.1f!", q->efficiency_pct); /* (the foot says why) */
                else if (q && q->valid)
                    snprintf(b, sizeof(b), c == C_SPEEDUP ? "%.2fx" : "%.1f",
                             c == C_SPEEDUP ? q->speedup : q->efficiency_pct);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            }
            case C_VS: { /* (as the report's vs: "r0 strong", "r0 base") */
                const struct scaling_row *q = v->scaling && idx < v->scaling->n ? &v->scaling->row[idx] : NULL;
                if (q && q->valid)
                    snprintf(b, sizeof(b), "r%d %s", q->base_run,
                             q->scaling == SCALING_BASE ? "base" : scaling_name(q->scaling));
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            }
            case C_STEPS:
                snprintf(b, sizeof(b), "%ld", r.steps);
                break;
            case C_MS:
                if (r.rate_valid)
                    snprintf(b, sizeof(b), "%.2f", r.ms);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            case C_SPS:
                if (r.sps_valid)
                    fmt_si(b, sizeof(b), r.sps);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            case C_COMP:
            case C_COMM:
            case C_IDLE:
                if (r.split_valid)
                    snprintf(b, sizeof(b), "%.1f", c == C_COMP ? r.comp : c == C_COMM ? r.comm : r.idle);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            case C_ACC:
                if (r.acc_valid)
                    snprintf(b, sizeof(b), "%.2f%%", r.acc);
                else
                    snprintf(b, sizeof(b), "n/a");
                break;
            default: /* (unknown: a replay of a snapshot taken while the run went on) */
                snprintf(b, sizeof(b), "%s", r.state >= 0 ? run_state_name(r.state) : "n/a");
                break;
            }
            draw_textf(w, y, x, room, el, cols[c].left ? "%-*.*s" : "%*.*s", cw, cw, b);
            x += cw + 1;
        }
    }
}

static int runs_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    int total = v->nresults + (v->live ? 1 : 0);
    int max0 = total - vs->run_rows > 0 ? total - vs->run_rows : 0, run0 = vs->run0 < max0 ? vs->run0 : max0;
    if (ch == KEY_UP && max0 == 0)
        return UI_HANDLED; /* (every run in sight: nothing above, keep following) */
    if (!scroll_key(ch, SCROLL_LINES, &run0, vs->run_rows, total))
        return 0;
    vs->run0 = run0 < max0 ? run0 : RUNS_FOLLOW; /* down to the last rows: follow them again */
    return UI_HANDLED | UI_REDRAW;
}

const struct pane_ops pane_runs = {
    .title = "Runs",
    .focusable = 1,
    .draw = runs_draw,
    .key = runs_key,
};
