/* memcpy.c - a foreign trace's rank's memory copies by kind (memcpy.h). */
#include "memcpy.h"

#include <stdio.h>
#include <string.h>

#include "kernels.h"

void memcpy_kind_of(const char *name, char out[MEMCPY_KIND_LEN])
{
    if (!strncmp(name, "Memset", 6))
        snprintf(out, MEMCPY_KIND_LEN, "Memset");
    else if (strncmp(name, "Memcpy", 6) != 0)
        snprintf(out, MEMCPY_KIND_LEN, "Memcpy Unknown");
    else
        snprintf(out, MEMCPY_KIND_LEN, "%.11s", name);
}

/* t's kind named name, added when new; NULL when t is full. */
static struct memcpy_kind *kind_get(struct memcpy_table *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->kinds[i].name, name))
            return &t->kinds[i];
    if (t->n == MEMCPY_KINDS)
        return NULL;
    struct memcpy_kind *k = &t->kinds[t->n++];
    memset(k, 0, sizeof(*k));
    snprintf(k->name, sizeof(k->name), "%s", name);
    return k;
}

static void add_rated(struct memcpy_kind *k, uint64_t rated, double sum, double min, double max)
{
    if (!rated)
        return;
    k->copy_gbps_min = k->rated && k->copy_gbps_min < min ? k->copy_gbps_min : min;
    k->copy_gbps_max = k->rated && k->copy_gbps_max > max ? k->copy_gbps_max : max;
    k->rated += rated;
    k->copy_gbps_sum += sum;
}

struct collect {
    const struct trace_rank *r;
    struct memcpy_table *t;
};

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    (void)window;
    if (op->name == TRACE_NO_NAME || kernel_type_of(c->r->names[op->name]) != KERNEL_MEMORY)
        return;
    char name[MEMCPY_KIND_LEN];
    memcpy_kind_of(c->r->names[op->name], name);
    struct memcpy_kind *k = kind_get(c->t, name);
    if (!k)
        return;
    k->count++;
    k->bytes += op->bytes;
    k->time_ns += t1_ns - t0_ns;
    if (op->copy_gbps > 0)
        add_rated(k, 1, op->copy_gbps, op->copy_gbps, op->copy_gbps);
}

void memcpy_table_rank(struct memcpy_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                       const struct trace_figures *f)
{
    memset(out, 0, sizeof(*out));
    struct collect c = {r, out};
    trace_each_device_op(r, rule, f, collect_op, &c);
}

void memcpy_table_add(struct memcpy_table *into, const struct memcpy_table *t)
{
    for (int i = 0; i < t->n; i++) {
        const struct memcpy_kind *s = &t->kinds[i];
        struct memcpy_kind *k = kind_get(into, s->name);
        if (!k)
            continue;
        k->count += s->count;
        k->bytes += s->bytes;
        k->time_ns += s->time_ns;
        add_rated(k, s->rated, s->copy_gbps_sum, s->copy_gbps_min, s->copy_gbps_max);
    }
}

void memcpy_table_rates(struct memcpy_table *t)
{
    for (int i = 0; i < t->n; i++) {
        struct memcpy_kind *k = &t->kinds[i];
        k->gbps = k->time_ns > 0 ? (double)k->bytes / (double)k->time_ns : 0;
        k->copy_gbps_mean = k->rated ? k->copy_gbps_sum / (double)k->rated : 0;
    }
}
