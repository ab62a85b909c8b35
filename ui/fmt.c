/* fmt.c - the panes' notes on what they cut off, and their columns that
 * need a width worked out (see fmt.h). */
#include "fmt.h"

#include <stdio.h>
#include <string.h>

#include "launch.h"
#include "memcpy.h"
#include "memtl.h"
#include "idle.h"
#include "queue.h"
#include "straggler.h"

void fmt_hidden(char *buf, size_t n, int above, int below, const char *what, int focused, int utf8)
{
    if (n == 0)
        return;
    buf[0] = 0;
    if (above <= 0 && below <= 0)
        return;
    const char *up = utf8 ? "\u2191" : "Up", *down = utf8 ? "\u2193" : "Down";
    const char *keys = above > 0 && below > 0 ? (utf8 ? "\u2191/\u2193" : "Up/Down") : above > 0 ? up : down;
    int count = above > 0 ? above : below;
    if (above > 0 && below > 0)
        snprintf(buf, n, "+%d %s%s above, +%d below: %s%s scroll", above, what, above == 1 ? "" : "s", below,
                 focused ? "" : "tab, then ", keys);
    else
        snprintf(buf, n, "+%d %s%s %s: %s%s scrolls", count, what, count == 1 ? "" : "s", above > 0 ? "above" : "below",
                 focused ? "" : "tab, then ", keys);
}

/* the kernel columns but the name: "%-13s " before it, " %8s %10s %10s %7s" after */
#define KERNEL_TYPE_W 13 /* "communication" */
#define KERNEL_FIXED_W (KERNEL_TYPE_W + 1 + 1 + 8 + 1 + 10 + 1 + 10 + 1 + 7)

static int kernel_name_w(int width)
{
    int w = width - KERNEL_FIXED_W;
    return w < FMT_KERNEL_NAME_MIN ? FMT_KERNEL_NAME_MIN : w > 72 ? 72 : w;
}

void fmt_kernel_head(char *buf, size_t n, int width)
{
    snprintf(buf, n, "%-*s %-*s %8s %10s %10s %7s", KERNEL_TYPE_W, "type", kernel_name_w(width), "kernel", "count",
             "mean us", "total ms", "share%");
}

void fmt_kernel_row(char *buf, size_t n, int width, const char *type, const char *name, uint64_t count, double mean_us,
                    int64_t sum_ns, double share_pct)
{
    int nw = kernel_name_w(width);
    char cut[244];
    size_t len = strlen(name);
    if (len > (size_t)nw)
        snprintf(cut, sizeof(cut), "%.*s...", nw - 3, name);
    else
        snprintf(cut, sizeof(cut), "%s", name);
    snprintf(buf, n, "%-*s %-*s %8llu %10.1f %10.3f %7.1f", KERNEL_TYPE_W, type, nw, cut, (unsigned long long)count,
             mean_us, (double)sum_ns / 1e6, share_pct);
}

void fmt_memcpy_head(char *buf, size_t n)
{
    snprintf(buf, n, "%-14s %8s %12s %10s %9s %10s %10s", "copy kind", "count", "MB", "time ms", "GB/s", "copy mean",
             "copy max");
}

void fmt_memcpy_row(char *buf, size_t n, const struct memcpy_kind *c)
{
    char mean[32] = "n/a", max[32] = "n/a";
    if (c->rated > 0) {
        snprintf(mean, sizeof(mean), "%.3f", c->copy_gbps_mean);
        snprintf(max, sizeof(max), "%.3f", c->copy_gbps_max);
    }
    snprintf(buf, n, "%-14s %8llu %12.3f %10.3f %9.3f %10s %10s", c->name, (unsigned long long)c->count,
             (double)c->bytes / 1e6, (double)c->time_ns / 1e6, c->gbps, mean, max);
}

void fmt_queue_head(char *buf, size_t n)
{
    snprintf(buf, n, "%-10s %8s %10s %8s %6s %10s", "stream", "points", "mean", "p50", "max", "blocked ms");
}

void fmt_queue_row(char *buf, size_t n, const struct queue_stream *s)
{
    char blocked[32] = "-";
    if (s->blocked_ns)
        snprintf(blocked, sizeof(blocked), "%.3f", (double)s->blocked_ns / 1e6);
    snprintf(buf, n, "stream %-3lld %8llu %10.3f %8.2f %6lld %10s", (long long)s->stream, (unsigned long long)s->count,
             s->mean, s->p50, (long long)s->max, blocked);
}

void fmt_idle_head(char *buf, size_t n)
{
    snprintf(buf, n, "%-10s %6s %10s %8s %8s %8s", "stream", "ops", "idle ms", "host %", "kernel %", "other %");
}

void fmt_idle_row(char *buf, size_t n, const struct idle_stream *s)
{
    char pct[IDLE_CATS][16];
    for (int c = 0; c < IDLE_CATS; c++) {
        if (s->ratio_valid)
            snprintf(pct[c], sizeof(pct[c]), "%.1f", 100 * s->ratio[c]);
        else
            snprintf(pct[c], sizeof(pct[c]), "n/a");
    }
    snprintf(buf, n, "stream %-3lld %6llu %10.3f %8s %8s %8s", (long long)s->stream, (unsigned long long)s->ops,
             (double)s->idle_ns / 1e6, pct[IDLE_HOST_WAIT], pct[IDLE_KERNEL_WAIT], pct[IDLE_OTHER]);
}

void fmt_launch_line(char *buf, size_t n, const struct launch_table *t, int line)
{
    static const char *const what[LAUNCH_COLS] = {"CPU us", "GPU us", "delay us"};
    if (line == 0) {
        snprintf(buf, n, "%llu launches (%llu of kernels): %llu short, %llu long CPU, %llu long delay",
                 (unsigned long long)t->count, (unsigned long long)t->kernels, (unsigned long long)t->short_gpu,
                 (unsigned long long)t->long_cpu, (unsigned long long)t->long_delay);
    } else if (line == 1) {
        snprintf(buf, n, "%-10s %12s %12s %12s", "", "mean", "p50", "max");
    } else if (line >= 2 && line < 2 + LAUNCH_COLS) {
        const struct launch_dur *d = &t->dur[line - 2];
        char p50[32] = "n/a";
        if (t->p50_valid)
            snprintf(p50, sizeof(p50), "%.3f", d->p50_ns / 1e3);
        snprintf(buf, n, "%-10s %12.3f %12s %12.3f", what[line - 2], d->mean_ns / 1e3, p50, (double)d->max_ns / 1e3);
    } else if (n > 0) {
        buf[0] = 0;
    }
}

void fmt_straggler_head(char *buf, size_t n)
{
    snprintf(buf, n, "%-10s %6s %6s %14s %14s", "rank", "last", "late", "lead us", "lead mean us");
}

void fmt_straggler_row(char *buf, size_t n, const struct straggler_rank *q)
{
    char mean[32] = "n/a";
    if (q->last)
        snprintf(mean, sizeof(mean), "%.3f", q->lead_mean_ns / 1e3);
    snprintf(buf, n, "rank %-5d %6llu %6llu %14.3f %14s", q->rank, (unsigned long long)q->last,
             (unsigned long long)q->late, (double)q->lead_total_ns / 1e3, mean);
}

void fmt_memtl_head(char *buf, size_t n)
{
    snprintf(buf, n, "%-8s %6s %10s %10s %10s %11s %5s %10s", "device", "events", "start MB", "end MB", "peak MB",
             "peak at ms", "step", "resv MB");
}

void fmt_memtl_row(char *buf, size_t n, const struct memtl_device *d, int64_t origin_ns, int origin_valid)
{
    char name[32], at[32] = "n/a", step[24] = "-";
    memtl_device_name(name, sizeof(name), d->dev_type, d->dev_id);
    if (origin_valid)
        snprintf(at, sizeof(at), "%.3f", (double)(d->peak_at_ns - origin_ns) / 1e6);
    if (d->peak_step >= 0)
        snprintf(step, sizeof(step), "%lld", (long long)d->peak_step);
    snprintf(buf, n, "%-8s %6llu %10.3f %10.3f %10.3f %11s %5s %10.3f", name, (unsigned long long)d->events,
             (double)d->start_bytes / 1e6, (double)d->end_bytes / 1e6, (double)d->peak_bytes / 1e6, at, step,
             (double)d->reserved_peak_bytes / 1e6);
}

void fmt_memtl_steps(char *buf, size_t n, const struct memtl_device *d, int utf8)
{
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[8] = {'_', '.', '-', ':', '=', '+', '*', '#'};
    if (d->nsteps == 0) {
        snprintf(buf, n, "  steps: none with an event");
        return;
    }
    int64_t most = 0;
    for (int k = 0; k < d->nsteps; k++)
        most = d->steps[k].peak_bytes > most ? d->steps[k].peak_bytes : most;
    int at = snprintf(buf, n, "  steps %u-%u ", d->steps[0].step, d->steps[d->nsteps - 1].step);
    for (int k = 0; k < d->nsteps && at >= 0 && (size_t)at + 4 < n; k++) {
        int level = most > 0 ? (int)((double)d->steps[k].peak_bytes / (double)most * 7 + 0.5) : 0;
        level = level < 0 ? 0 : level > 7 ? 7 : level;
        at += utf8 ? snprintf(buf + at, n - (size_t)at, "%s", blocks[level])
                   : snprintf(buf + at, n - (size_t)at, "%c", ascii[level]);
    }
    if (at >= 0 && (size_t)at < n)
        snprintf(buf + at, n - (size_t)at, " peak/step %.3f MB", (double)most / 1e6);
}
