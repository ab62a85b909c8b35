/* follow_main.c - --follow's front end (follow.h): the UI's, or the
 * headless one, a line per cycle that lands, then the report of the
 * whole job. The watching and the figures are follow.c's. */
#include "follow.h"

#include <limits.h>
#include <stdio.h>

#include "config.h"
#include "figures.h"
#include "stop.h"

static void print_cycle(const struct follow_cycle *c)
{
    char steps[48], ms[32] = "n/a";
    if (c->step_lo <= c->step_hi)
        snprintf(steps, sizeof(steps), "steps %u-%u", c->step_lo, c->step_hi);
    else
        snprintf(steps, sizeof(steps), "no ProfilerStep");
    if (c->nsteps > 0)
        snprintf(ms, sizeof(ms), "%.2f", c->ms_mean);
    fprintf(stderr,
            "ddptop: --follow: rank %d cycle %d (%s, %s): %s ms/step, compute %.1f%%, comm %.1f%%, data %.1f%%, "
            "idle %.1f%%; own work %.2f ms/step\n",
            c->rank, c->cycle + 1, steps, c->file, ms, c->split.compute, c->split.comm, c->split.data, c->split.idle,
            c->own_ms);
}

/* How many ranks and cycles, as --replay says it; and what never became
 * whole. */
static void final_notes(struct follow *f)
{
    int lo = INT_MAX, hi = 0;
    for (int i = 0; i < f->nranks; i++) {
        lo = f->ranks[i].ncycles < lo ? f->ranks[i].ncycles : lo;
        hi = f->ranks[i].ncycles > hi ? f->ranks[i].ncycles : hi;
    }
    if (f->nranks && lo == hi)
        fprintf(stderr, "ddptop: --follow: %d rank(s), %d profiler cycle%s each\n", f->nranks, hi, hi == 1 ? "" : "s");
    else if (f->nranks)
        fprintf(stderr, "ddptop: --follow: %d rank(s), %d to %d profiler cycles each\n", f->nranks, lo, hi);
    size_t at = 0;
    for (const char *name; (name = follow_pending(f, &at));)
        fprintf(stderr, "ddptop: --follow: %s/%s was not whole yet; left out\n", f->dir, name);
}

int follow_main(const struct config *cfg, follow_show_fn show)
{
    struct follow f;
    char err[1200];
    if (follow_open(&f, cfg->follow, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --follow: %s\n", err);
        return 2;
    }
    f.rule = &trace_rules[cfg->window];
    f.idle_delay_ns = cfg->idle_delay_ns;
    f.predict = cfg->base.predict ? &cfg->base : NULL;
    int status = 0;
    if (show) {
        if (follow_start(&f, err, sizeof(err)) != 0) {
            fprintf(stderr, "ddptop: --follow: %s\n", err);
            follow_close(&f);
            return 2;
        }
        status = show(cfg, &f);
        follow_stop(&f);
        if (status == 2) {
            follow_close(&f);
            return 2;
        }
    } else {
        if (!f.inotify && !cfg->quiet)
            fprintf(stderr, "ddptop: --follow: no inotify here: the folder is listed every %d ms\n", FOLLOW_POLL_MS);
        size_t printed = 0;
        char msg[sizeof(f.msg[0])];
        for (;;) {
            follow_poll(&f, 100);
            for (; printed < f.ncycles; printed++)
                if (!cfg->quiet)
                    print_cycle(&f.cycles[printed]);
            while (follow_message(&f, msg, sizeof(msg)))
                fprintf(stderr, "ddptop: --follow: %s\n", msg);
            if (stop_signal || f.gone)
                break;
            if (cfg->idle_exit_s > 0 && (double)(probe_now_ns() - f.last_change_ns) / 1e9 >= cfg->idle_exit_s)
                break;
        }
        status = stop_signal ? 128 + (int)stop_signal : 0;
    }
    final_notes(&f);
    if (f.ncycles == 0) {
        fprintf(stderr, "ddptop: --follow: no cycle landed in %s%s: nothing to report\n", f.dir,
                stop_signal            ? " before the interrupt"
                : cfg->idle_exit_s > 0 ? " in the --idle-exit time"
                                       : "");
        follow_close(&f);
        return status ? status : 1;
    }
    struct run_result res;
    if (follow_result(&f, &res, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --follow: %s\n", err);
        follow_close(&f);
        return 1;
    }
    follow_close(&f);
    results_speedup(&res, 1);
    int st = report_save_all(cfg, &res, 1);
    if (cfg->plot[0] && figures_save(cfg->plot, &res, 1, cfg->quiet) != 0 && st == 0)
        st = 1;
    result_free(&res);
    return status ? status : st;
}
