/* pane_header.c - the top two lines: what is running (model, data set,
 * strategy, backend, ranks, batch) and how far it is (epoch, step, state,
 * elapsed, ETA, throughput, loss, accuracy). No border: it is always there. */
#include <stdio.h>
#include <string.h>

#include "panes.h"
#include "run.h"

/* Writes "label value" at *x and moves *x past it, if it fits. */
static void kv(WINDOW *w, int y, int *x, int maxw, const char *label, const char *value, int el)
{
    int need = (label[0] ? (int)strlen(label) + 1 : 0) + (int)strlen(value) + 3;
    if (*x + need - 3 > maxw)
        return;
    if (label[0]) {
        *x += draw_text(w, y, *x, maxw - *x, TH_LABEL, label);
        *x += 1;
    }
    *x += draw_text(w, y, *x, maxw - *x, el, value);
    *x += 3;
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

static void header_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    int wd = getmaxx(w);
    char b[128];
    werase(w);
    int x = 1;
    x += draw_text(w, 0, x, wd - x, TH_TITLE, "ddptop");
    x += 2;
    kv(w, 0, &x, wd, "model", s->model, TH_VALUE);
    kv(w, 0, &x, wd, "data", s->dataset, TH_VALUE);
    kv(w, 0, &x, wd, "strategy", s->strategy, TH_VALUE);
    snprintf(b, sizeof(b), "%s %s", s->device, s->backend);
    kv(w, 0, &x, wd, "backend", b, TH_VALUE);
    snprintf(b, sizeof(b), "%d", s->world);
    kv(w, 0, &x, wd, "ranks", b, TH_VALUE);
    if (s->global_batch > 0)
        snprintf(b, sizeof(b), "%dx%d=%d", s->local_batch, s->world, s->global_batch);
    else
        snprintf(b, sizeof(b), "n/a");
    kv(w, 0, &x, wd, "batch", b, TH_VALUE);
    if (s->params_total) {
        char tot[32], tr[32];
        fmt_si(tot, sizeof(tot), (double)s->params_total);
        fmt_si(tr, sizeof(tr), (double)s->params_trainable);
        if (s->params_trainable == s->params_total)
            snprintf(b, sizeof(b), "%s", tot);
        else
            snprintf(b, sizeof(b), "%s (%s trainable)", tot, tr);
        kv(w, 0, &x, wd, "params", b, TH_VALUE);
    }

    x = 1;
    char st[32];
    snprintf(st, sizeof(st), " %s ", s->replay ? "replay" : run_state_name(s->state));
    for (char *p = st; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    kv(w, 1, &x, wd, "", st, state_el(s->state));
    snprintf(b, sizeof(b), "%d/%d", s->epoch + 1, s->epochs);
    kv(w, 1, &x, wd, "epoch", b, TH_VALUE);
    snprintf(b, sizeof(b), "%ld/%ld", s->steps_done, s->total_steps);
    kv(w, 1, &x, wd, "step", b, TH_VALUE);
    if (s->state == RUN_FAILED && s->err[0]) {
        /* why the run stopped, naming the rank: the rest of the line is its */
        draw_text(w, 1, x, wd - x - 1, TH_FAILED, s->err);
        return;
    }
    fmt_duration(b, sizeof(b), s->elapsed_s);
    kv(w, 1, &x, wd, "elapsed", b, TH_VALUE);
    if (s->eta_valid)
        fmt_duration(b, sizeof(b), s->eta_s);
    else
        snprintf(b, sizeof(b), "%s", s->state == RUN_PAUSED ? "paused" : s->state == RUN_RUNNING ? "n/a" : "-");
    kv(w, 1, &x, wd, "ETA", b, s->eta_valid ? TH_VALUE : TH_DIM);
    if (s->rate_valid) {
        fmt_si(b, sizeof(b), s->samples_s);
        kv(w, 1, &x, wd, "samples/s", b, TH_VALUE);
        snprintf(b, sizeof(b), "%.2f", s->ms_step);
        kv(w, 1, &x, wd, "ms/step", b, TH_VALUE);
    } else {
        kv(w, 1, &x, wd, "samples/s", "n/a", TH_DIM);
    }
    if (s->loss_valid) {
        snprintf(b, sizeof(b), s->loss < 1000 ? "%.4f" : "%.3g", s->loss);
        kv(w, 1, &x, wd, "loss", b, TH_VALUE);
    }
    if (s->test_valid) {
        snprintf(b, sizeof(b), "%.2f%%", s->test_acc);
        kv(w, 1, &x, wd, "test", b, TH_VALUE);
    }
    if (v->frozen)
        kv(w, 1, &x, wd, "", " FROZEN ", TH_PAUSED);
}

const struct pane_ops pane_header = {
    .title = "header",
    .focusable = 0,
    .draw = header_draw,
    .key = NULL,
};
