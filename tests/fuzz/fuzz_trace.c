/* fuzz_trace.c - libFuzzer target: a trace file's bytes (ddptop, Kineto or
 * autograd JSON) through the reader as a follower reads a profiler cycle
 * (trace_read_cycle, whole files only, under a tensorboard name that gives
 * rank 1), then again as replay reads a file (trace_read_buffer, under
 * tensorboard's default host_pid name: the worker and order paths), so a
 * rank may hold the input twice, as two windows. Every rank it loads goes
 * through the breakdown replay computes for foreign traces, whole and
 * window by window, under each --window rule, and through HTA's analyses
 * of its device work (kernels, memory copies, launch queues, launches,
 * idle time per stream), its memory timeline (memtl.h) and its critical path
 * (critpath.h), with invariants; the ranks together, under each rule, through the
 * late collectives (straggler.h), made at once as replay makes them and
 * rank by rank added up as --follow adds its cycles: the same table both
 * ways. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "critpath.h"
#include "idle.h"
#include "kernels.h"
#include "launch.h"
#include "memcpy.h"
#include "memtl.h"
#include "queue.h"
#include "straggler.h"
#include "trace_analyze.h"
#include "trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* r's critical path, and what must hold of it whatever the trace. */
static void check_critpath(const struct trace_rank *r)
{
    struct critpath c, *each = NULL;
    size_t n = 0;
    if (critpath_rank(&c, r) != 0 || critpath_each_step(&each, &n, r) != 0) {
        free(each);
        return; /* (out of memory) */
    }
    const struct critpath **v = malloc(sizeof(*v) * (n ? n : 1));
    for (size_t i = 0; v && i < n; i++)
        v[i] = &each[i];
    const struct critpath *m = v ? critpath_median(v, n) : NULL;
    /* a follower's median of the steps' paths is the rank's (but nsteps) */
    if (m && (m->valid != c.valid || m->step != c.step || m->length_ns != c.length_ns || m->ops != c.ops ||
              memcmp(m->kind_ns, c.kind_ns, sizeof(c.kind_ns)) != 0))
        abort();
    free(v);
    free(each);
    if (!c.valid) {
        if (c.note == CRITPATH_OK || c.length_ns || c.ops || c.nitems)
            abort(); /* no path: a note, and no figure */
        return;
    }
    int64_t sum = 0;
    for (int k = 0; k < CRITPATH_KINDS; k++) {
        if (c.kind_ns[k] < 0)
            abort();
        sum += c.kind_ns[k];
    }
    if (sum != c.length_ns || c.length_ns < c.step_ns || c.step_ns < 0)
        abort(); /* the kinds split the path, which spans the step at least */
    if (c.ops < c.nitems || c.nitems < 1 || c.nitems > CRITPATH_TOP || c.launches > c.ops ||
        (uint64_t)c.ops > c.cpu_ops + c.device_ops || c.device_ops == 0)
        abort();
    for (int i = 0; i < c.nitems; i++)
        if (c.top[i].path_ns < 0 || c.top[i].path_ns > c.length_ns || c.top[i].kind >= CRITPATH_WAIT ||
            (i > 0 && c.top[i - 1].path_ns < c.top[i].path_ns))
            abort(); /* items on the path, most first */
}

/* r's memory timeline, and what must hold of it whatever the trace. */
static void check_memtl(const struct trace_rank *r)
{
    static struct memtl_table t, again;
    memtl_table_rank(&t, r);
    memset(&again, 0, sizeof(again));
    memtl_table_add(&again, &t); /* (a follower's merge of one cycle: the same table) */
    if (again.n != t.n || again.outside != t.outside || again.host != t.host || again.dropped != t.dropped)
        abort();
    for (int i = 0; i < t.n; i++) {
        const struct memtl_device *a = &t.dev[i], *b = &again.dev[i];
        if (a->events != b->events || a->start_bytes != b->start_bytes || a->end_bytes != b->end_bytes ||
            a->peak_bytes != b->peak_bytes || a->peak_at_ns != b->peak_at_ns || a->nsteps != b->nsteps ||
            a->alloc_bytes != b->alloc_bytes || a->freed_bytes != b->freed_bytes)
            abort();
    }
    uint64_t events = t.outside + t.host;
    for (int i = 0; i < t.n; i++) {
        const struct memtl_device *d = &t.dev[i];
        events += d->events;
        if (d->events == 0 || d->dev_type == 0)
            abort(); /* a device is there for its events; the CPU's are left out */
        if (i > 0 && (t.dev[i - 1].dev_type > d->dev_type ||
                      (t.dev[i - 1].dev_type == d->dev_type && t.dev[i - 1].dev_id >= d->dev_id)))
            abort(); /* devices in order, each once */
        if (d->peak_bytes < d->start_bytes || d->peak_bytes < d->end_bytes)
            abort(); /* the peak is the most at any moment */
        for (int k = 0; k < d->nsteps; k++)
            if (d->steps[k].peak_bytes > d->peak_bytes || (k > 0 && d->steps[k - 1].step >= d->steps[k].step))
                abort(); /* no step above the peak; steps by number, each once */
        if (d->nsteps > MEMTL_STEPS)
            abort();
    }
    for (size_t w = 0; w < r->nwindows; w++)
        for (size_t k = r->windows[w].mems_from + 1; k < r->windows[w].mems_to; k++)
            if (r->mems[k - 1].ts_ns > r->mems[k].ts_ns)
                abort(); /* a window's events in time order */
    if (events > r->nmems || (t.dropped == 0 && events != r->nmems))
        abort(); /* every event counted once: a device's, outside, or the host's */
}

/* The late collectives of d's ranks under rule, both ways, and what must
 * hold of them. */
static void check_late(const struct trace_doc *d, const struct trace_rule *rule)
{
    struct trace_figures figs[TRACE_MAX_RANKS];
    for (int i = 0; i < d->nranks; i++)
        if (trace_analyze_rank(&figs[i], &d->ranks[i], rule, TRACE_IDLE_DELAY_NS) != 0)
            return;
    static struct straggler_table a, b;
    if (straggler_table_run(&a, d, rule, figs) != 0)
        return;
    struct straggler_gather all = {0}, one;
    int oom = 0;
    for (int i = 0; i < d->nranks && !oom; i++) {
        if (!figs[i].gpu_view)
            continue;
        memset(&one, 0, sizeof(one));
        oom = straggler_gather_rank(&one, &d->ranks[i], rule, &figs[i]) != 0 || straggler_gather_add(&all, &one) != 0;
        straggler_gather_free(&one);
    }
    if (!oom && straggler_table_of(&b, &all) == 0 && memcmp(&a, &b, sizeof(a)) != 0)
        abort(); /* added up rank by rank, the same table */
    straggler_gather_free(&all);
    if (!a.valid)
        return;
    uint64_t last = 0, late = 0, most = 0;
    for (int k = 0; k < a.nranks; k++) {
        const struct straggler_rank *q = &a.ranks[k];
        if (q->last > q->late || q->late > a.steps || q->lead_total_ns < 0 || (k && q->rank <= a.ranks[k - 1].rank))
            abort(); /* last is late; a rank once a step; leads never below 0; ranks in order */
        last += q->last;
        late += q->late;
        most = q->last > most ? q->last : most;
    }
    /* every step has a last rank and two late ones at least; the
     * straggler is a rank last most often */
    if (last < a.steps || late < 2 * a.steps || a.nranks < 2)
        abort();
    int found = 0;
    for (int k = 0; k < a.nranks; k++)
        found |= a.ranks[k].rank == a.straggler && a.ranks[k].last == most;
    if (!found)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trace_doc d;
    char err[512];
    struct trace_cycle c;
    trace_doc_init(&d);
    int first = trace_read_cycle(&d, (const char *)data, size, "tb/rank1.1.pt.trace.json", -1, TRACE_READ_WHOLE, &c,
                                 err, sizeof(err));
    if (first == 0 && c.rank_from == TRACE_RANK_NAME && c.rank != 1)
        abort(); /* the name's rank (a trace may name its own) */
    if (first >= 0 &&
        trace_read_buffer(&d, (const char *)data, size, "tb/host_7.2.pt.trace.json", err, sizeof(err)) == 0) {
        if (d.nranks > TRACE_MAX_RANKS)
            abort();
        for (int r = 0; r < d.nranks * TRACE_RULES; r++) {
            const struct trace_rank *tr = &d.ranks[r / TRACE_RULES];
            const struct trace_rule *rule = &trace_rules[r % TRACE_RULES];
            struct trace_figures f, w;
            if (r % TRACE_RULES == 0) {
                check_memtl(tr);
                check_critpath(tr);
            }
            if (trace_analyze_rank(&f, tr, rule, TRACE_IDLE_DELAY_NS) != 0)
                continue;
            if (f.b.compute_ns + f.b.comm_ns + f.b.data_ns + f.b.idle_ns != f.b.wall_ns)
                abort(); /* the four parts always add up to the wall time */
            struct kernel_table kt;
            if (kernel_table_rank(&kt, tr, rule, &f) == 0)
                kernel_table_free(&kt);
            struct memcpy_table mt;
            memcpy_table_rank(&mt, tr, rule, &f);
            memcpy_table_rates(&mt);
            struct queue_table qt;
            if (queue_table_rank(&qt, tr, rule, &f) == 0) {
                queue_table_stats(&qt);
                for (int k = 0; k < qt.n; k++) { /* the percentiles in order, within the least and most */
                    const struct queue_stream *q = &qt.streams[k];
                    if (q->count && !(q->min <= q->p25 && q->p25 <= q->p50 && q->p50 <= q->p75 && q->p75 <= q->max))
                        abort();
                }
            }
            struct launch_table lt;
            if (launch_table_rank(&lt, tr, rule, &f, LAUNCH_RUNTIME_CUTOFF_US * 1000LL,
                                  LAUNCH_DELAY_CUTOFF_US * 1000LL) == 0 &&
                (lt.kernels > lt.count || lt.short_gpu + lt.long_cpu > lt.count))
                abort(); /* (a launch is short or long on the CPU, not both) */
            struct idle_table it, sum = {0};
            if (idle_table_rank(&it, tr, rule, &f, TRACE_IDLE_DELAY_NS) == 0) {
                idle_table_add(&sum, &it); /* (a follower's merge of one cycle: the same table) */
                for (int k = 0; k < it.n; k++) {
                    const struct idle_stream *s = &it.streams[k];
                    if (s->ns[IDLE_HOST_WAIT] + s->ns[IDLE_KERNEL_WAIT] + s->ns[IDLE_OTHER] != s->idle_ns)
                        abort(); /* the categories add up to the stream's idle time */
                    if (s->gaps[IDLE_HOST_WAIT] + s->gaps[IDLE_KERNEL_WAIT] + s->gaps[IDLE_OTHER] >= s->ops)
                        abort(); /* a gap ends at each op but a window's first */
                    if (k > 0 && it.streams[k - 1].stream >= s->stream)
                        abort(); /* streams by number, each once */
                    if (sum.n != it.n || sum.streams[k].idle_ns != s->idle_ns || sum.streams[k].ops != s->ops)
                        abort();
                }
            }
            int64_t wall = 0;
            for (size_t k = 0; k < tr->nwindows; k++)
                if (trace_analyze_window(&w, tr, k, rule, TRACE_IDLE_DELAY_NS) == 0)
                    wall += w.b.wall_ns;
            /* a rank is its windows' steps less the one the rule leaves
             * out (where it has more than one), or all of them when
             * those hold no device work: never more than the windows
             * whole */
            if (tr->nwindows > 0 && f.b.wall_ns > wall)
                abort();
            if (f.whole && (f.left != TRACE_LEFT_NONE || f.b.wall_ns != wall))
                abort(); /* fallen back: every window whole */
        }
        for (int k = 0; k < TRACE_RULES; k++)
            check_late(&d, &trace_rules[k]);
    }
    trace_doc_free(&d);
    return 0;
}
