/* memtl.c - a foreign trace's rank's memory timeline per device (memtl.h). */
#include "memtl.h"

#include <stdio.h>
#include <string.h>

/* t's device (type, id), added in order when new; NULL when t has
 * MEMTL_DEVICES already (counted in dropped). */
static struct memtl_device *device_get(struct memtl_table *t, int type, int id)
{
    int i = 0;
    while (i < t->n && (t->dev[i].dev_type < type || (t->dev[i].dev_type == type && t->dev[i].dev_id < id)))
        i++;
    if (i < t->n && t->dev[i].dev_type == type && t->dev[i].dev_id == id)
        return &t->dev[i];
    if (t->n == MEMTL_DEVICES) {
        t->dropped++;
        return NULL;
    }
    memmove(&t->dev[i + 1], &t->dev[i], sizeof(*t->dev) * (size_t)(t->n - i));
    memset(&t->dev[i], 0, sizeof(t->dev[i]));
    t->dev[i].dev_type = type;
    t->dev[i].dev_id = id;
    t->dev[i].peak_step = -1;
    t->n++;
    return &t->dev[i];
}

/* d's peak of step number step raised to bytes, the step added in order
 * when new (counted in steps_dropped past MEMTL_STEPS). */
static void step_peak(struct memtl_device *d, uint32_t step, int64_t bytes)
{
    int i = 0;
    while (i < d->nsteps && d->steps[i].step < step)
        i++;
    if (i < d->nsteps && d->steps[i].step == step) {
        if (bytes > d->steps[i].peak_bytes)
            d->steps[i].peak_bytes = bytes;
        return;
    }
    if (d->nsteps == MEMTL_STEPS) {
        d->steps_dropped++;
        return;
    }
    memmove(&d->steps[i + 1], &d->steps[i], sizeof(*d->steps) * (size_t)(d->nsteps - i));
    d->steps[i] = (struct memtl_step){step, bytes};
    d->nsteps++;
}

/* The step of w whose span holds ts (the first by start), or NULL. */
static const struct trace_step_info *step_at(const struct trace_rank *r, const struct trace_window *w, int64_t ts)
{
    const struct trace_step_info *best = NULL;
    for (size_t i = w->steps_from; i < w->steps_to; i++) {
        const struct trace_step_info *s = &r->steps[i];
        if (ts >= s->t0_ns && ts <= s->t1_ns && (!best || s->t0_ns < best->t0_ns))
            best = s;
    }
    return best;
}

/* Window w's table alone. */
static void window_table(struct memtl_table *t, const struct trace_rank *r, const struct trace_window *w)
{
    memset(t, 0, sizeof(*t));
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = w->steps_from; i < w->steps_to; i++) {
        lo = r->steps[i].t0_ns < lo ? r->steps[i].t0_ns : lo;
        hi = r->steps[i].t1_ns > hi ? r->steps[i].t1_ns : hi;
    }
    int stepped = w->steps_to > w->steps_from;
    if (stepped) {
        t->origin_valid = 1;
        t->origin_ns = lo;
    }
    for (size_t i = w->mems_from; i < w->mems_to; i++) {
        const struct trace_mem *m = &r->mems[i];
        if (m->dev_type == 0) {
            t->host++;
            continue;
        }
        if (stepped && (m->ts_ns < lo || m->ts_ns > hi)) {
            t->outside++;
            continue;
        }
        struct memtl_device *d = device_get(t, m->dev_type, m->dev_id);
        if (!d)
            continue;
        if (!t->origin_valid) {
            t->origin_valid = 1;
            t->origin_ns = m->ts_ns;
        }
        int64_t before = d->events ? d->end_bytes : m->total_alloc - m->bytes;
        if (!d->events) {
            d->start_bytes = before;
            d->peak_bytes = INT64_MIN;
        }
        d->events++;
        d->end_bytes = m->total_alloc;
        const struct trace_step_info *s = step_at(r, w, m->ts_ns);
        if (m->total_reserved > d->reserved_peak_bytes)
            d->reserved_peak_bytes = m->total_reserved;
        if (m->bytes > 0)
            d->alloc_bytes += (uint64_t)m->bytes;
        else
            d->freed_bytes += (uint64_t)-m->bytes;
        /* the most at this event: before it or after (a free's before is
         * the higher; for a step's first event, before is its start) */
        int64_t most = before > m->total_alloc ? before : m->total_alloc;
        if (most > d->peak_bytes) {
            d->peak_bytes = most;
            d->peak_at_ns = m->ts_ns;
            d->peak_step = s ? (int64_t)s->step : -1;
        }
        if (s)
            step_peak(d, s->step, most);
    }
}

void memtl_table_add(struct memtl_table *dst, const struct memtl_table *src)
{
    dst->outside += src->outside;
    dst->host += src->host;
    dst->dropped += src->dropped;
    if (!dst->origin_valid && src->origin_valid) {
        dst->origin_valid = 1;
        dst->origin_ns = src->origin_ns;
    }
    for (int i = 0; i < src->n; i++) {
        const struct memtl_device *s = &src->dev[i];
        struct memtl_device *d = device_get(dst, s->dev_type, s->dev_id);
        if (!d)
            continue;
        if (!d->events) {
            *d = *s;
            continue;
        }
        d->events += s->events;
        d->end_bytes = s->end_bytes;
        if (s->peak_bytes > d->peak_bytes) {
            d->peak_bytes = s->peak_bytes;
            d->peak_at_ns = s->peak_at_ns;
            d->peak_step = s->peak_step;
        }
        if (s->reserved_peak_bytes > d->reserved_peak_bytes)
            d->reserved_peak_bytes = s->reserved_peak_bytes;
        d->alloc_bytes += s->alloc_bytes;
        d->freed_bytes += s->freed_bytes;
        d->steps_dropped += s->steps_dropped;
        for (int k = 0; k < s->nsteps; k++)
            step_peak(d, s->steps[k].step, s->steps[k].peak_bytes);
    }
}

void memtl_table_rank(struct memtl_table *out, const struct trace_rank *r)
{
    memset(out, 0, sizeof(*out));
    const struct trace_window all = {.mems_to = r->nmems, .steps_to = r->nsteps};
    size_t nw = r->nwindows ? r->nwindows : 1;
    for (size_t i = 0; i < nw; i++) {
        struct memtl_table w;
        window_table(&w, r, r->nwindows ? &r->windows[i] : &all);
        memtl_table_add(out, &w);
    }
}

void memtl_device_name(char *out, int len, int dev_type, int dev_id)
{
    /* c10's DeviceType numbers, the common ones */
    static const char *const names[] = {"cpu",  "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
                                        "fpga", "maia", "xla",    "vulkan", "metal",  "xpu",   "mps",
                                        "meta", "hpu",  "ve",     "lazy",   "ipu",    "mtia"};
    if (dev_type >= 0 && dev_type < (int)(sizeof(names) / sizeof(names[0])))
        snprintf(out, (size_t)len, "%s:%d", names[dev_type], dev_id);
    else
        snprintf(out, (size_t)len, "type%d:%d", dev_type, dev_id);
}
