/* trace_analyze.c - a foreign trace's rank through the breakdown sweep,
 * and HTA's idle split of its GPU view (see trace_analyze.h). */
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

/* Where the steps the figures cover begin: the second ProfilerStep's
 * start, as ms/step leaves the first step out (step_stats_ms); with fewer
 * than two steps, everything (INT64_MIN). */
static int64_t steady_from_ns(const struct trace_rank *r)
{
    if (r->nsteps < 2)
        return INT64_MIN;
    int64_t first = INT64_MAX, second = INT64_MAX;
    for (size_t i = 0; i < r->nsteps; i++) {
        int64_t t = r->steps[i].t0_ns;
        if (t < first) {
            second = first;
            first = t;
        } else if (t < second) {
            second = t;
        }
    }
    return second;
}

static int gpu_view(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns)
{
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (r->ngpu ? r->ngpu : 1));
    const struct trace_op **by_start = malloc(sizeof(*by_start) * (r->ngpu ? r->ngpu : 1));
    struct breakdown_scratch sc = {0};
    const int64_t(*gaps)[2] = NULL;
    size_t ng = 0, n = 0;
    int rc = -1;
    if (!iv || !by_start)
        goto done;
    int64_t from = steady_from_ns(r);
    for (size_t i = 0; i < r->nops; i++)
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
 * (the first left out when there are more). */
static int host_view(struct trace_figures *out, const struct trace_rank *r)
{
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (r->nops ? r->nops : 1));
    int64_t(*win)[2] = r->nsteps ? malloc(sizeof(*win) * r->nsteps) : NULL;
    int rc = -1;
    if (!iv || (r->nsteps && !win))
        goto done;
    size_t n = 0;
    for (size_t i = 0; i < r->nops; i++)
        if (!r->ops[i].gpu)
            iv[n++] = (struct breakdown_iv){r->ops[i].t0_ns, r->ops[i].t1_ns, r->ops[i].track, r->ops[i].cat};
    int64_t from = steady_from_ns(r);
    size_t nwin = 0;
    for (size_t i = 0; i < r->nsteps; i++)
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

int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    if (r->ngpu > 0) {
        out->gpu_view = 1;
        return gpu_view(out, r, kernel_wait_ns);
    }
    return host_view(out, r);
}
