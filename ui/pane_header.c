/* pane_header.c - the top two lines: what is running (model, data set,
 * strategy, backend, precision, ranks, batch, parameters) and how far it
 * is (state, epoch, step, elapsed, ETA, throughput, loss, accuracy). No
 * border: it is always there. What does not fit a narrow terminal drops
 * out by priority, never by position, so the last field (the parameters)
 * is not the first to go. */
#include <stdio.h>
#include <string.h>

#include "fit.h"
#include "panes.h"
#include "run.h"

/* One "label value" of a header line; drop as in fit.h (0 never). */
struct kv {
    const char *label; /* "" for a bare value */
    char value[128];
    int el;
    int drop;
};

static int kv_width(const struct kv *k)
{
    return (k->label[0] ? (int)strlen(k->label) + 1 : 0) + draw_cols(k->value);
}

/* Writes items from x on: three spaces apart when they all fit, else two,
 * and when even that is too wide the least wanted drop out (the order
 * stays). Returns the column after the last one written. */
static int kv_line(WINDOW *w, int y, int x, int maxw, struct kv *items, int n)
{
    int wid[16], drop[16], on[16];
    if (n > 16)
        n = 16;
    for (int i = 0; i < n; i++) {
        wid[i] = kv_width(&items[i]);
        drop[i] = items[i].drop;
    }
    /* the last item needs no gap after it: the room counts one */
    int sep = 3, all = 1;
    fit_by_priority(wid, drop, n, sep, maxw - x + sep, on);
    for (int i = 0; i < n; i++)
        all &= on[i];
    if (!all) {
        sep = 2;
        fit_by_priority(wid, drop, n, sep, maxw - x + sep, on);
    }
    for (int i = 0; i < n; i++) {
        if (!on[i] || x >= maxw)
            continue;
        if (items[i].label[0]) {
            x += draw_text(w, y, x, maxw - x, TH_LABEL, items[i].label);
            x += 1;
        }
        x += draw_text(w, y, x, maxw - x, items[i].el, items[i].value);
        x += sep;
    }
    return x;
}

static int state_el(int state)
{
    switch (state) {
    case RUN_RUNNING:
        return TH_RUNNING;
    case RUN_PAUSED:
        return TH_PAUSED;
    case RUN_FAILED:
        return TH_FAILED;
    case RUN_DONE:
    case RUN_STOPPED:
        return TH_DONE;
    default:
        return TH_DIM;
    }
}

/* --follow's second line: the cycles so far, the latest one's steps, how
 * long since it landed, and the straggler. */
static void follow_line(WINDOW *w, const struct snap *s, int wd, int frozen)
{
    struct kv bot[8];
    int nb = 0;
    bot[nb++] = (struct kv){"", " FOLLOW ", TH_RUNNING, 0};
    if (s->ncycles == 0) {
        bot[nb] = (struct kv){"", "", TH_DIM, 0};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "waiting for the first trace in %.64s%s", s->follow_dir,
                 s->inotify ? "" : " (listed every 200 ms)");
    } else {
        long lo = -1, hi = -1;
        int straggler = -1;
        for (int i = 0; i < s->world; i++) {
            const struct snap_rank *r = &s->ranks[i];
            if (r->cycle < 0 || r->step_lo > r->step_hi)
                continue;
            lo = lo < 0 || (long)r->step_lo < lo ? (long)r->step_lo : lo;
            hi = (long)r->step_hi > hi ? (long)r->step_hi : hi;
            if (r->straggler)
                straggler = i;
        }
        bot[nb] = (struct kv){"cycle", "", TH_VALUE, 0};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%d (%d landed)", s->max_cycles, s->ncycles);
        bot[nb] = (struct kv){"steps", "", TH_VALUE, 2};
        if (lo >= 0)
            snprintf(bot[nb++].value, sizeof(bot[0].value), "%ld-%ld", lo, hi);
        else
            snprintf(bot[nb++].value, sizeof(bot[0].value), "n/a");
        bot[nb] = (struct kv){"last", "", TH_VALUE, 3};
        char b[32];
        fmt_duration(b, sizeof(b), s->since_s > 0 ? s->since_s : 0);
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%s ago", b);
        bot[nb] = (struct kv){"ms/step", "", TH_VALUE, 1};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%.2f", s->rate.ms);
        if (straggler >= 0) {
            bot[nb] = (struct kv){"", "", TH_ERROR, 0};
            snprintf(bot[nb++].value, sizeof(bot[0].value), "straggler: rank %d", straggler);
        }
    }
    if (s->pending > 0) {
        bot[nb] = (struct kv){"being written", "", TH_DIM, 4};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%d", s->pending);
    }
    if (frozen)
        bot[nb++] = (struct kv){"", " FROZEN ", TH_PAUSED, 0};
    kv_line(w, 1, 1, wd, bot, nb);
}

static void header_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    int wd = getmaxx(w);
    werase(w);
    int x = 1;
    x += draw_text(w, 0, x, wd - x, TH_TITLE, "ddptop");
    x += 2;
    /* What runs. On a narrow terminal the backend, the precision and the
     * data set give way first: the parameters, ranks and batch are what a
     * comparison of runs needs. */
    struct kv top[8] = {
        {"model", "", TH_VALUE, 0},   {"data", "", TH_VALUE, 3},      {"strategy", "", TH_VALUE, 0},
        {"backend", "", TH_VALUE, 4}, {"precision", "", TH_VALUE, 4}, {"ranks", "", TH_VALUE, 0},
        {"batch", "", TH_VALUE, 1},   {"params", "", TH_VALUE, 2},
    };
    int nt = 7;
    snprintf(top[0].value, sizeof(top[0].value), "%s", s->model);
    snprintf(top[1].value, sizeof(top[1].value), "%s", s->dataset);
    snprintf(top[2].value, sizeof(top[2].value), "%s", s->strategy);
    snprintf(top[3].value, sizeof(top[3].value), "%s %s", s->device, s->backend);
    snprintf(top[4].value, sizeof(top[4].value), "%s", s->precision[0] ? s->precision : "n/a");
    if (s->run_world > s->world) /* a replay of some ranks' files */
        snprintf(top[5].value, sizeof(top[5].value), "%d (%d traced)", s->run_world, s->world);
    else
        snprintf(top[5].value, sizeof(top[5].value), "%d", s->world);
    if (s->global_batch > 0 && s->global_batch == s->local_batch && s->run_world > 1)
        snprintf(top[6].value, sizeof(top[6].value), "%d, every stage", s->global_batch); /* model, pipeline */
    else if (s->global_batch > 0 && s->local_batch > 0) /* (--dp: a replica's, times the replicas) */
        snprintf(top[6].value, sizeof(top[6].value), "%dx%d=%d", s->local_batch, s->global_batch / s->local_batch,
                 s->global_batch);
    else
        snprintf(top[6].value, sizeof(top[6].value), "n/a");
    if (s->params_total) {
        char tot[32], tr[32];
        fmt_si(tot, sizeof(tot), (double)s->params_total);
        fmt_si(tr, sizeof(tr), (double)s->params_trainable);
        if (s->params_trainable == s->params_total)
            snprintf(top[7].value, sizeof(top[7].value), "%s", tot);
        else
            snprintf(top[7].value, sizeof(top[7].value), "%s (%s trainable)", tot, tr);
        nt = 8;
    }
    kv_line(w, 0, x, wd, top, nt);
    if (s->follow) {
        follow_line(w, s, wd, v->frozen);
        return;
    }

    /* How far it is. */
    struct kv bot[10];
    int nb = 0;
    char st[32];
    snprintf(st, sizeof(st), " %s ", s->replay ? "replay" : run_state_name(s->state));
    for (char *p = st; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    bot[nb] = (struct kv){"", "", state_el(s->state), 0};
    snprintf(bot[nb++].value, sizeof(bot[0].value), "%s", st);
    bot[nb] = (struct kv){"epoch", "", TH_VALUE, 5};
    snprintf(bot[nb++].value, sizeof(bot[0].value), "%d/%d", s->epoch + 1, s->epochs);
    bot[nb] = (struct kv){"step", "", TH_VALUE, 0};
    snprintf(bot[nb++].value, sizeof(bot[0].value), "%ld/%ld", s->steps_done, s->total_steps);
    if (s->state == RUN_FAILED && s->err[0]) {
        /* why the run stopped, naming the rank: the rest of the line is its */
        x = kv_line(w, 1, 1, wd, bot, nb);
        draw_text(w, 1, x, wd - x - 1, TH_FAILED, s->err);
        return;
    }
    bot[nb] = (struct kv){"elapsed", "", TH_VALUE, 6};
    fmt_duration(bot[nb++].value, sizeof(bot[0].value), s->elapsed_s);
    bot[nb] = (struct kv){"ETA", "", s->eta_valid ? TH_VALUE : TH_DIM, 4};
    if (s->eta_valid)
        fmt_duration(bot[nb++].value, sizeof(bot[0].value), s->eta_s);
    else
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%s",
                 s->state == RUN_PAUSED    ? "paused"
                 : s->state == RUN_RUNNING ? "n/a"
                                           : "-");
    if (s->stall_s > 0) {
        /* no step for a while: said plainly, in place of a rate that is gone */
        bot[nb] = (struct kv){"", "", TH_ERROR, 0};
        char b[32];
        fmt_duration(b, sizeof(b), s->stall_s);
        if (s->nbehind == 1)
            snprintf(bot[nb++].value, sizeof(bot[0].value), "no step for %s, rank %d behind", b, s->behind_first);
        else if (s->nbehind > 1)
            snprintf(bot[nb++].value, sizeof(bot[0].value), "no step for %s, %d ranks behind (first %d)", b, s->nbehind,
                     s->behind_first);
        else
            snprintf(bot[nb++].value, sizeof(bot[0].value), "no step for %s", b);
    } else if (s->rate_valid) {
        bot[nb] = (struct kv){"samples/s", "n/a", TH_DIM, 0};
        if (s->rate.samples_valid) {
            bot[nb].el = TH_VALUE;
            fmt_si(bot[nb].value, sizeof(bot[0].value), s->rate.samples_s);
        }
        nb++;
        bot[nb] = (struct kv){"ms/step", "", TH_VALUE, 2};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%.2f", s->rate.ms);
    } else {
        bot[nb] = (struct kv){"samples/s", "n/a", TH_DIM, 0};
        nb++;
    }
    if (s->loss_valid) {
        bot[nb] = (struct kv){"loss", "", TH_VALUE, 1};
        snprintf(bot[nb++].value, sizeof(bot[0].value), s->loss < 1000 ? "%.4f" : "%.3g", s->loss);
    }
    if (s->test_valid) {
        bot[nb] = (struct kv){"test", "", TH_VALUE, 3};
        snprintf(bot[nb++].value, sizeof(bot[0].value), "%.2f%%", s->test_acc);
    }
    if (v->frozen)
        bot[nb++] = (struct kv){"", " FROZEN ", TH_PAUSED, 0};
    kv_line(w, 1, 1, wd, bot, nb);
}

const struct pane_ops pane_header = {
    .title = "header",
    .focusable = 0,
    .draw = header_draw,
    .key = NULL,
};
