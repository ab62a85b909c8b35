/* trace_analyze.c - a foreign trace's rank through the breakdown sweep,
 * window by window, and HTA's idle split of its GPU view (see
 * trace_analyze.h). */
#include "trace_analyze.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int op_start_cmp(const void *a, const void *b)
{
    const struct trace_op *x = *(const struct trace_op *const *)a, *y = *(const struct trace_op *const *)b;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    return x->launch_ns < y->launch_ns ? -1 : x->launch_ns > y->launch_ns;
}

/* Splits the idle gaps by the op that ends each one. */
static void idle_split(struct trace_figures *out, const int64_t (*gaps)[2], size_t ng, const struct trace_op **by_start,
                       size_t n, int64_t kernel_wait_ns)
{
    qsort(by_start, n, sizeof(*by_start), op_start_cmp);
    out->idle_split_valid = 1;
    for (size_t g = 0; g < ng; g++) {
        int64_t a = gaps[g][0], b = gaps[g][1], d = b - a;
        /* the op that ends the gap: the first to start at or after b */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (by_start[mid]->t0_ns < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        const struct trace_op *next = lo < n ? by_start[lo] : NULL;
        if (d < kernel_wait_ns)
            out->kernel_wait_ns += d;
        else if (next && next->launch_ns >= 0 && next->launch_ns >= a)
            out->host_wait_ns += d;
        else
            out->other_idle_ns += d;
    }
}

/* Where the steps the figures cover begin in window w. ms/step leaves the
 * rank's first step out (the lowest ProfilerStep number: step_stats_ms
 * over the steps in step order), so the window that holds it starts at its
 * next step: INT64_MIN when nothing is left out here (fewer than two
 * steps, or the first is in another window), INT64_MAX when the first step
 * is all this window holds. (Windows are compared by step number, not
 * time: each profiler cycle may have a clock of its own.) */
static int64_t steady_from_ns(const struct trace_rank *r, const struct trace_window *w)
{
    if (r->nsteps < 2)
        return INT64_MIN;
    size_t first = 0;
    for (size_t i = 1; i < r->nsteps; i++)
        if (r->steps[i].step < r->steps[first].step)
            first = i;
    if (first < w->steps_from || first >= w->steps_to)
        return INT64_MIN;
    int64_t next = INT64_MAX;
    for (size_t i = w->steps_from; i < w->steps_to; i++)
        if (i != first && r->steps[i].t0_ns >= r->steps[first].t0_ns && r->steps[i].t0_ns < next)
            next = r->steps[i].t0_ns;
    return next;
}

static int gpu_view(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w, int64_t from,
                    int64_t kernel_wait_ns)
{
    size_t nops = w->ops_to - w->ops_from;
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (nops ? nops : 1));
    const struct trace_op **by_start = malloc(sizeof(*by_start) * (nops ? nops : 1));
    struct breakdown_scratch sc = {0};
    const int64_t(*gaps)[2] = NULL;
    size_t ng = 0, n = 0;
    int rc = -1;
    if (!iv || !by_start)
        goto done;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        if (r->ops[i].gpu && (r->ops[i].launch_ns >= 0 ? r->ops[i].launch_ns : r->ops[i].t0_ns) >= from) {
            iv[n] = (struct breakdown_iv){r->ops[i].t0_ns, r->ops[i].t1_ns, BREAKDOWN_FLAT, r->ops[i].cat};
            by_start[n++] = &r->ops[i];
        }
    if (breakdown_sweep(&out->b, iv, n, NULL, 0, &gaps, &ng, &sc) != 0)
        goto done;
    idle_split(out, gaps, ng, by_start, n, kernel_wait_ns);
    rc = 0;
done:
    free(iv);
    free(by_start);
    breakdown_scratch_free(&sc);
    return rc;
}

/* Each thread's ops nest; over the ProfilerStep windows when there are any
 * (the rank's first left out when there are more). */
static int host_view(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w, int64_t from)
{
    size_t nops = w->ops_to - w->ops_from, nsteps = w->steps_to - w->steps_from;
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (nops ? nops : 1));
    int64_t(*win)[2] = nsteps ? malloc(sizeof(*win) * nsteps) : NULL;
    int rc = -1;
    if (!iv || (nsteps && !win))
        goto done;
    size_t n = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        if (!r->ops[i].gpu)
            iv[n++] = (struct breakdown_iv){r->ops[i].t0_ns, r->ops[i].t1_ns, r->ops[i].track, r->ops[i].cat};
    size_t nwin = 0;
    for (size_t i = w->steps_from; i < w->steps_to; i++)
        if (r->steps[i].t0_ns >= from) {
            win[nwin][0] = r->steps[i].t0_ns;
            win[nwin][1] = r->steps[i].t1_ns;
            nwin++;
        }
    rc = breakdown_sweep(&out->b, iv, n, (const int64_t(*)[2])win, nwin, NULL, NULL, NULL);
done:
    free(iv);
    free(win);
    return rc;
}

/* One window's figures from time `from` on; a rank with device ops has
 * the GPU view in each. */
static int analyze(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w, int64_t from,
                   int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    if (r->ngpu > 0) {
        out->gpu_view = 1;
        return gpu_view(out, r, w, from, kernel_wait_ns);
    }
    return host_view(out, r, w, from);
}

int trace_analyze_window(struct trace_figures *out, const struct trace_rank *r, size_t w, int64_t kernel_wait_ns)
{
    if (w >= r->nwindows) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return analyze(out, r, &r->windows[w], INT64_MIN, kernel_wait_ns); /* the cycle whole */
}

int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    /* a rank made by hand, without windows: all it holds is one */
    const struct trace_window all = {.ops_to = r->nops, .steps_to = r->nsteps};
    size_t nw = r->nwindows ? r->nwindows : 1;
    for (size_t i = 0; i < nw; i++) {
        struct trace_figures f;
        const struct trace_window *w = r->nwindows ? &r->windows[i] : &all;
        if (analyze(&f, r, w, steady_from_ns(r, w), kernel_wait_ns) != 0) {
            memset(out, 0, sizeof(*out));
            return -1;
        }
        breakdown_add(&out->b, &f.b);
        out->gpu_view = f.gpu_view;
        out->idle_split_valid = f.idle_split_valid;
        out->host_wait_ns += f.host_wait_ns;
        out->kernel_wait_ns += f.kernel_wait_ns;
        out->other_idle_ns += f.other_idle_ns;
    }
    return 0;
}
