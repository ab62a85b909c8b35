/* pane_kernels.c - HTA's kernel breakdown of a replayed or followed
 * PyTorch trace, in the step slot (K): the device time by kernel type
 * (computation, communication, memory and where they overlap) over every
 * rank and on one rank, then that rank's top kernels by type (count, mean,
 * total and share of the type), then its memory copies by kind (count,
 * bytes, time, bandwidth, and HTA's per-copy bandwidths) and its launch
 * queue per stream (points, mean, median, most, time blocked on a full
 * queue) and its kernel launch statistics (CPU and GPU durations and
 * launch delays, and the launches HTA flags), and last the run's late
 * collectives across ranks (HTA's stragglers: each rank's steps last and
 * late, its lead, and the straggler named), and the rank's memory timeline
 * per device from [memory] events (bytes at the start and end, the peak,
 * when and in which step, the peak reserved, and a sparkline of each
 * step's peak), and the rank's critical path (its median step's path,
 * its shares by kind and its top ops, or the note saying why there is
 * none), as the report prints them.
 *
 * Every figure is read from the run's result (snap->result: the one the
 * report prints; trace/kernels.h tallies it, src/results.c its shares),
 * never worked out here. The lines scroll with the arrows when the pane
 * has focus; Left and Right pick the rank. A rank whose device ran no
 * kernels but has a memory timeline is picked too: a line says it has no
 * breakdown, then its tables (the memory timeline, the critical path).
 * A run with neither (a live run, a CPU trace) gets one line that says so.
 */
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "idle.h"
#include "kernels.h"
#include "launch.h"
#include "memcpy.h"
#include "memtl.h"
#include "critpath.h"
#include "queue.h"
#include "panes.h"
#include "straggler.h"
#include "report.h"
#include "scroll.h"

#define MIX_NAME_W 56 /* the longest mix, "computation overlapping communication overlapping memory" */

/* Whether the pane shows rank q: it has a breakdown, or a memory timeline
 * (a rank whose device ran no kernel may still have allocated). */
static int rank_shown(const struct rank_result *q)
{
    return q->kernels_valid || (q->memtl_valid && q->memtl.n > 0);
}

/* The k-th rank the pane shows, or NULL; *n: how many it shows. */
static const struct rank_result *rank_picked(const struct run_result *res, int k, int *n)
{
    const struct rank_result *q = NULL;
    *n = 0;
    for (int i = 0; i < res->nranks; i++)
        if (rank_shown(&res->ranks[i]) && (*n)++ == k)
            q = &res->ranks[i];
    return q;
}

/* Mixes that ran on the run or on the rank: the lines of the types table. */
static int mix_shown(const struct run_result *res, const struct rank_result *q, int m)
{
    return res->kernel_mix_ns[m] > 0 || q->kernels.mix_ns[m] > 0;
}

/* The rank's memory copy kinds shown (0: none, and no copies table). */
static int copies_shown(const struct rank_result *q)
{
    return q->memcpy_valid ? q->memcpy.n : 0;
}

/* The rank's streams with a launch queue shown (0: none, no queue table). */
static int queues_shown(const struct rank_result *q)
{
    return q->queue_valid ? q->queue.n : 0;
}

/* How many streams of idle time the rank shows. */
static int idles_shown(const struct rank_result *q)
{
    return q->idle_valid ? q->idle.n : 0;
}

/* Whether the rank's launch statistics are shown. */
static int launches_shown(const struct rank_result *q)
{
    return q->launch_valid && q->launch.count > 0;
}

/* The run's late collectives' ranks shown (0: none, and no table): the
 * run's, whichever rank the pane shows. */
static int late_shown(const struct run_result *res)
{
    return res->stragglers.valid ? res->stragglers.nranks : 0;
}

/* The rank's devices with a memory timeline shown (0: none, no table). */
static int memtl_shown(const struct rank_result *q)
{
    return q->memtl_valid ? q->memtl.n : 0;
}

/* The lines of the rank's critical path (0: none looked for): a blank
 * line, then the note, or a title, the shares and a line per top op. */
static int critpath_shown(const struct rank_result *q)
{
    if (!q->critpath_valid)
        return 0;
    return q->critpath.valid ? 3 + q->critpath.nitems : 2;
}

/* Line c (from 1; 0 is blank) of the rank's critical path. */
static int critpath_line(char *buf, size_t n, int c, const struct rank_result *q)
{
    const struct critpath *p = &q->critpath;
    if (!p->valid) {
        if (c == 1)
            snprintf(buf, n, "critical path of rank %d: none: %s", q->rank, critpath_note_text(p->note));
        return TH_DIM;
    }
    if (c == 1) {
        snprintf(buf, n, "critical path of rank %d, step %lld: %.3f ms (the step %.3f ms, %.3f ms past it)", q->rank,
                 (long long)p->step, (double)p->length_ns / 1e6, (double)p->step_ns / 1e6,
                 (double)(p->length_ns - p->step_ns) / 1e6);
        return TH_LABEL;
    }
    if (c == 2) {
        size_t k = 0;
        for (int j = 0; j < CRITPATH_KINDS && k < n; j++)
            k += (size_t)snprintf(buf + k, n - k, "%s%s %.1f%%", j ? "  " : "", critpath_kind_name(j),
                                  p->length_ns > 0 ? 100.0 * (double)p->kind_ns[j] / (double)p->length_ns : 0);
        if (k < n)
            snprintf(buf + k, n - k, "  (%d ops, %d launches)", p->ops, p->launches);
        return TH_VALUE;
    }
    if (c - 3 < p->nitems) {
        const struct critpath_item *it = &p->top[c - 3];
        snprintf(buf, n, "  on path %-8s %10.3f us @%.3f  %s", critpath_kind_name(it->kind), (double)it->path_ns / 1e3,
                 (double)it->start_ns / 1e3, it->name);
        return TH_VALUE;
    }
    return TH_VALUE;
}

/* Line c of the tables after the top kernels: where the rank has them, the
 * copies (a blank line, a title, the columns' titles, a line per kind),
 * then the queues (the same, a line per stream), then the launches (a
 * blank line, a title, FMT_LAUNCH_LINES), then the idle time per stream
 * (as the queues); then the run's late collectives (a blank line, a
 * title, the straggler, the columns' titles, a line per rank); last the
 * rank's memory timeline (a blank line, a title, the columns' titles, and
 * per device its row and its steps' sparkline), and its critical path
 * (critpath_line). */
static int tail_line(char *buf, size_t n, int c, const struct run_result *res, const struct rank_result *q)
{
    buf[0] = 0;
    int nc = copies_shown(q);
    if (nc > 0) {
        if (c == 1) {
            snprintf(buf, n, "memory copies of rank %d (GB/s: bytes over time; copy: HTA's, per copy)", q->rank);
            return TH_LABEL;
        }
        if (c == 2) {
            fmt_memcpy_head(buf, n);
            return TH_LABEL;
        }
        if (c >= 3 && c - 3 < nc) {
            fmt_memcpy_row(buf, n, &q->memcpy.kinds[c - 3]);
            return TH_VALUE;
        }
        c -= 3 + nc;
    }
    int nq = queues_shown(q);
    if (nq > 0) {
        if (c == 1) {
            snprintf(buf, n, "launch queues of rank %d (ops launched on a stream, not yet started; blocked: at %d)",
                     q->rank, QUEUE_FULL);
            return TH_LABEL;
        }
        if (c == 2) {
            fmt_queue_head(buf, n);
            return TH_LABEL;
        }
        if (c >= 3 && c - 3 < nq) {
            fmt_queue_row(buf, n, &q->queue.streams[c - 3]);
            return TH_VALUE;
        }
        c -= 3 + nq;
    }
    if (launches_shown(q)) {
        if (c == 1) {
            snprintf(buf, n, "kernel launches of rank %d (HTA's; short: GPU < CPU <= %lld us, long: > %lld, > %lld us)",
                     q->rank, (long long)(q->launch.runtime_cutoff_ns / 1000),
                     (long long)(q->launch.runtime_cutoff_ns / 1000), (long long)(q->launch.delay_cutoff_ns / 1000));
            return TH_LABEL;
        }
        if (c >= 2 && c - 2 < FMT_LAUNCH_LINES) {
            fmt_launch_line(buf, n, &q->launch, c - 2);
            return c == 3 ? TH_LABEL : TH_VALUE;
        }
        c -= 2 + FMT_LAUNCH_LINES;
    }
    int ni = idles_shown(q);
    if (ni > 0) {
        if (c == 1) {
            snprintf(buf, n, "idle time per stream of rank %d (HTA's; kernel wait: a gap under %.3f us)", q->rank,
                     (double)q->idle.delay_ns / 1e3);
            return TH_LABEL;
        }
        if (c == 2) {
            fmt_idle_head(buf, n);
            return TH_LABEL;
        }
        if (c >= 3 && c - 3 < ni) {
            fmt_idle_row(buf, n, &q->idle.streams[c - 3]);
            return TH_VALUE;
        }
        c -= 3 + ni;
    }
    int nl = late_shown(res);
    if (nl > 0) {
        const struct straggler_table *t = &res->stragglers;
        if (c == 1) {
            snprintf(buf, n, "late collectives of the run (HTA's stragglers; stream %lld, %llu steps): %s",
                     (long long)t->stream, (unsigned long long)t->steps, t->name);
            return TH_LABEL;
        }
        if (c == 2) {
            snprintf(buf, n, "straggler: rank %d (last most often)", t->straggler);
            return TH_VALUE;
        }
        if (c == 3) {
            fmt_straggler_head(buf, n);
            return TH_LABEL;
        }
        if (c >= 4 && c - 4 < nl) {
            fmt_straggler_row(buf, n, &t->ranks[c - 4]);
            return t->ranks[c - 4].rank == t->straggler ? TH_VALUE : TH_DIM;
        }
        c -= 4 + nl;
    }
    int nm = memtl_shown(q);
    if (nm > 0) {
        const struct memtl_table *t = &q->memtl;
        if (c == 1) {
            snprintf(buf, n, "memory timeline of rank %d ([memory] events over every step; %llu outside)", q->rank,
                     (unsigned long long)t->outside);
            return TH_LABEL;
        }
        if (c == 2) {
            fmt_memtl_head(buf, n);
            return TH_LABEL;
        }
        if (c >= 3 && c - 3 < 2 * nm) {
            const struct memtl_device *d = &t->dev[(c - 3) / 2];
            if ((c - 3) % 2 == 0)
                fmt_memtl_row(buf, n, d, t->origin_ns, t->origin_valid);
            else
                fmt_memtl_steps(buf, n, d, draw_utf8());
            return (c - 3) % 2 == 0 ? TH_VALUE : TH_DIM;
        }
        c -= 3 + 2 * nm;
    }
    if (critpath_shown(q) > 0 && c >= 1)
        return critpath_line(buf, n, c, q);
    return TH_VALUE;
}

/* Line i of the pane into buf, and its colour: the types table (a title
 * line and a line per mix), a blank line, the top kernels (a title line
 * and a line per row), then the copies and queues (tail_line). */
static int line_at(char *buf, size_t n, int i, int width, const struct run_result *res, const struct rank_result *q)
{
    if (!q->kernels_valid) { /* a line that says so, then the tables it has */
        if (i == 0) {
            snprintf(buf, n, "rank %d: no kernel breakdown: its device ran no kernels", q->rank);
            return TH_DIM;
        }
        return tail_line(buf, n, i - 1, res, q);
    }
    int mw = width - 38 < MIX_NAME_W ? width - 38 : MIX_NAME_W;
    if (mw < 12)
        mw = 12;
    char rank_ms[16], rank_pct[16];
    snprintf(rank_ms, sizeof(rank_ms), "rank %d ms", q->rank);
    snprintf(rank_pct, sizeof(rank_pct), "rank %d %%", q->rank);
    if (i == 0) {
        snprintf(buf, n, "%-*s %10s %7s %12s %9s", mw, "type", "all ms", "all %", rank_ms, rank_pct);
        return TH_LABEL;
    }
    int k = 1;
    for (int m = 1; m < KERNEL_MIXES; m++) {
        if (!mix_shown(res, q, m))
            continue;
        if (k++ == i) {
            snprintf(buf, n, "%-*.*s %10.3f %7.1f %12.3f %9.1f", mw, mw, kernel_mix_name(m),
                     (double)res->kernel_mix_ns[m] / 1e6, res->kernel_mix_pct[m], (double)q->kernels.mix_ns[m] / 1e6,
                     q->kernels.mix_pct[m]);
            return TH_VALUE;
        }
    }
    if (i == k) {
        buf[0] = 0;
        return TH_VALUE;
    }
    if (i == k + 1) {
        fmt_kernel_head(buf, n, width);
        return TH_LABEL;
    }
    int j = i - k - 2;
    if (j >= q->kernels.nrows)
        return tail_line(buf, n, j - q->kernels.nrows, res, q);
    if (j < 0) {
        buf[0] = 0;
        return TH_VALUE;
    }
    const struct kernel_row *row = &q->kernels.rows[j];
    char others[48];
    if (row->others)
        snprintf(others, sizeof(others), "others (%d kernels)", row->others);
    fmt_kernel_row(buf, n, width, kernel_type_name(row->type), row->others ? others : row->name, row->count,
                   row->mean_us, row->sum_ns, row->share_pct);
    return row->others ? TH_DIM : TH_VALUE;
}

/* The lines tail_line gives (its line 0, blank, not counted). */
static int tail_count(const struct run_result *res, const struct rank_result *q)
{
    int copies = copies_shown(q), queues = queues_shown(q), idles = idles_shown(q);
    return (copies > 0 ? 3 + copies : 0) + (queues > 0 ? 3 + queues : 0) +
           (launches_shown(q) ? 2 + FMT_LAUNCH_LINES : 0) + (idles > 0 ? 3 + idles : 0) +
           (late_shown(res) > 0 ? 4 + late_shown(res) : 0) + (memtl_shown(q) > 0 ? 3 + 2 * memtl_shown(q) : 0) +
           critpath_shown(q);
}

static int line_count(const struct run_result *res, const struct rank_result *q)
{
    if (!q->kernels_valid)
        return 1 + tail_count(res, q);
    int mixes = 0;
    for (int m = 1; m < KERNEL_MIXES; m++)
        mixes += mix_shown(res, q, m);
    return 1 + mixes + 1 + 1 + q->kernels.nrows + tail_count(res, q);
}

int kernels_pane_lines(const struct run_result *res)
{
    int most = 1;
    for (int i = 0; res && i < res->nranks; i++)
        if (rank_shown(&res->ranks[i])) {
            int c = line_count(res, &res->ranks[i]);
            most = c > most ? c : most;
        }
    return most;
}

static void kernels_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct run_result *res = v->snap->result;
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int nk = 0;
    const struct rank_result *q = NULL;
    if (res) {
        rank_picked(res, 0, &nk);
        if (vs->kern_rank >= nk)
            vs->kern_rank = nk - 1;
        if (vs->kern_rank < 0)
            vs->kern_rank = 0;
        q = rank_picked(res, vs->kern_rank, &nk);
    }
    if (!q) {
        vs->kern_rows = vs->kern_total = 0;
        draw_box(w, "Kernels", "", focused);
        draw_text(w, 1, 2, wd - 4, TH_DIM,
                  v->snap->replay ? "no kernel breakdown: this trace has no device kernels"
                                  : "no kernel breakdown: only a replayed or followed PyTorch trace with device "
                                    "kernels has one");
        return;
    }
    char note[64];
    if (nk > 1)
        snprintf(note, sizeof(note), "rank %d (%d of %d): %s picks", q->rank, vs->kern_rank + 1, nk,
                 draw_utf8() ? "\u2190/\u2192" : "Left/Right");
    else
        snprintf(note, sizeof(note), "rank %d", q->rank);
    draw_box(w, "Kernels", note, focused);
    int rows = h - 2 > 1 ? h - 2 : 1, total = line_count(res, q);
    vs->kern_rows = rows;
    vs->kern_total = total;
    if (vs->kern0 > total - rows)
        vs->kern0 = total - rows;
    if (vs->kern0 < 0)
        vs->kern0 = 0;
    char buf[512];
    for (int k = 0; k < rows && vs->kern0 + k < total; k++) {
        int el = line_at(buf, sizeof(buf), vs->kern0 + k, wd - 3, res, q);
        draw_text(w, 1 + k, 2, wd - 3, el, buf);
    }
    char cut[96];
    int below = total - vs->kern0 - rows;
    fmt_hidden(cut, sizeof(cut), vs->kern0, below > 0 ? below : 0, "line", focused, draw_utf8());
    draw_box_foot(w, cut, TH_TITLE);
}

static int kernels_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    if (ch == KEY_LEFT || ch == KEY_RIGHT) {
        vs->kern_rank += ch == KEY_LEFT ? -1 : 1; /* (draw keeps it among the ranks) */
        if (vs->kern_rank < 0)
            vs->kern_rank = 0;
        return UI_HANDLED | UI_REDRAW;
    }
    return scroll_key(ch, SCROLL_LINES | SCROLL_PAGES | SCROLL_ENDS, &vs->kern0, vs->kern_rows, vs->kern_total)
               ? UI_HANDLED | UI_REDRAW
               : 0;
}

const struct pane_ops pane_kernels = {
    .title = "Kernels",
    .focusable = 1,
    .draw = kernels_draw,
    .key = kernels_key,
};
