/* kernels.c - HTA's kernel breakdown of a foreign trace's rank: its device
 * time by kernel type and its top kernels (see kernels.h). */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

int kernel_type_of(const char *name)
{
    if (starts(name, "nccl") || starts(name, "hip") || starts(name, "hccl") || strstr(name, "ncclKernel"))
        return KERNEL_COMM;
    if (starts(name, "Memcpy") || starts(name, "Memset") || starts(name, "dma"))
        return KERNEL_MEMORY; /* (hipMemcpy is communication, above, as in HTA) */
    /* HTA's records that are no type's: any name holding one of these, or
     * starting with one of the others */
    static const char *const within[] = {"Memcpy", "Memset", "dma", "Sync"};
    static const char *const first[] = {"Stream Wait Event",
                                        "runFunction",
                                        "job_exe",
                                        "packet",
                                        "pe_exe",
                                        "cpum_exe_subgraph",
                                        "collective_subgraph_execution"};
    for (size_t i = 0; i < sizeof(within) / sizeof(within[0]); i++)
        if (strstr(name, within[i]))
            return KERNEL_OTHER;
    for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
        if (starts(name, first[i]))
            return KERNEL_OTHER;
    if (starts(name, "cuda") && strstr(name, "LaunchKernel"))
        return KERNEL_OTHER;
    return KERNEL_COMPUTE;
}

const char *kernel_type_name(int type)
{
    static const char *const names[KERNEL_TYPES] = {"computation", "communication", "memory"};
    return type >= 0 && type < KERNEL_TYPES ? names[type] : "other";
}

const char *kernel_mix_name(int mix)
{
    static const char *const names[KERNEL_MIXES] = {"",
                                                    "computation",
                                                    "communication",
                                                    "computation overlapping communication",
                                                    "memory",
                                                    "computation overlapping memory",
                                                    "communication overlapping memory",
                                                    "computation overlapping communication overlapping memory"};
    return mix > 0 && mix < KERNEL_MIXES ? names[mix] : "";
}

/* A counted op's edge: where a type starts (+1) or stops (-1) running. */
struct edge {
    size_t window;
    int64_t t_ns;
    int type, delta;
};

struct collect {
    const struct trace_rank *r;
    signed char *type; /* by name; -1: not looked up yet */
    uint64_t *count;   /* by name */
    int64_t *sum_ns;
    struct edge *e;
    size_t ne;
};

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    if (op->name == TRACE_NO_NAME)
        return;
    if (c->type[op->name] < 0)
        c->type[op->name] = (signed char)kernel_type_of(c->r->names[op->name]);
    int type = c->type[op->name];
    c->count[op->name]++;
    c->sum_ns[op->name] += t1_ns - t0_ns;
    if (type < KERNEL_TYPES && t1_ns > t0_ns) {
        c->e[c->ne++] = (struct edge){window, t0_ns, type, 1};
        c->e[c->ne++] = (struct edge){window, t1_ns, type, -1};
    }
}

static int edge_cmp(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    if (x->window != y->window)
        return x->window < y->window ? -1 : 1;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* Each stretch of each window goes to the mix of the types running in it. */
static void sweep(int64_t *mix_ns, struct edge *e, size_t ne)
{
    qsort(e, ne, sizeof(*e), edge_cmp);
    int running[KERNEL_TYPES] = {0};
    for (size_t i = 0; i < ne; i++) {
        if (i > 0 && e[i].window == e[i - 1].window) {
            int mix = 0;
            for (int k = 0; k < KERNEL_TYPES; k++)
                mix |= running[k] > 0 ? 1 << k : 0;
            mix_ns[mix] += e[i].t_ns - e[i - 1].t_ns;
        }
        running[e[i].type] += e[i].delta;
    }
    mix_ns[0] = 0; /* (the gaps: no type's) */
}

/* a name of the type being ranked */
struct ranked {
    int64_t sum_ns;
    const char *name;
    size_t id;
};

static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->sum_ns != y->sum_ns)
        return x->sum_ns > y->sum_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* pandas' Series.quantile(q) (linear) of v[0..n) ascending */
static double quantile(const double *v, size_t n, double q)
{
    double pos = (double)(n - 1) * q;
    size_t lo = (size_t)floor(pos);
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

static int add_row(struct kernel_table *out, const char *name, int type, int others, uint64_t count, int64_t sum_ns)
{
    char *copy = strdup(name);
    if (!copy)
        return -1;
    out->rows[out->nrows++] = (struct kernel_row){copy, type, others, count, sum_ns, 0, 0};
    return 0;
}

/* Type `type`'s rows: HTA's top kernels, the rest as "others". */
static int top_rows(struct kernel_table *out, const struct kernel_tally *t, int type, struct ranked *ids, double *cum)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->names[i].count && t->names[i].type == type)
            ids[n++] = (struct ranked){t->names[i].sum_ns, t->names[i].name, i};
    qsort(ids, n, sizeof(*ids), ranked_cmp);
    double q = 0;
    if (n > KERNEL_TOP) {
        double run = 0;
        for (size_t i = 0; i < n; i++)
            cum[i] = run += (double)ids[i].sum_ns;
        q = quantile(cum, n, KERNEL_TOP_RATIO);
    }
    uint64_t ocount = 0;
    int64_t osum = 0;
    int others = 0;
    for (size_t i = 0; i < n; i++) {
        const struct kernel_count *k = &t->names[ids[i].id];
        out->type_ns[type] += k->sum_ns;
        out->type_count[type] += k->count;
        if (n <= KERNEL_TOP || (i < KERNEL_TOP && cum[i] <= q)) {
            if (add_row(out, k->name, type, 0, k->count, k->sum_ns) != 0)
                return -1;
        } else {
            others++;
            ocount += k->count;
            osum += k->sum_ns;
        }
    }
    return others ? add_row(out, "others", type, others, ocount, osum) : 0;
}

int kernel_table_of(struct kernel_table *out, const struct kernel_tally *t)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->mix_ns, t->mix_ns, sizeof(out->mix_ns));
    size_t nn = t->n ? t->n : 1;
    struct ranked *ids = malloc(sizeof(*ids) * nn);
    double *cum = malloc(sizeof(*cum) * nn);
    /* at most KERNEL_TOP + 1 rows a type */
    out->rows = calloc(KERNEL_TYPES * (KERNEL_TOP + 1), sizeof(*out->rows));
    int rc = ids && cum && out->rows ? 0 : -1;
    for (int type = 0; type < KERNEL_TYPES && rc == 0; type++)
        rc = top_rows(out, t, type, ids, cum);
    free(ids);
    free(cum);
    if (rc != 0)
        kernel_table_free(out);
    return rc;
}

int kernel_tally_rank(struct kernel_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f)
{
    memset(out, 0, sizeof(*out));
    size_t nn = r->nnames ? r->nnames : 1;
    struct collect c = {r,
                        malloc(nn),
                        calloc(nn, sizeof(uint64_t)),
                        calloc(nn, sizeof(int64_t)),
                        malloc(sizeof(struct edge) * 2 * (r->nops ? r->nops : 1)),
                        0};
    out->names = malloc(sizeof(*out->names) * nn);
    int rc = -1;
    if (!c.type || !c.count || !c.sum_ns || !c.e || !out->names)
        goto done;
    memset(c.type, -1, nn);
    trace_each_device_op(r, rule, f, collect_op, &c);
    sweep(out->mix_ns, c.e, c.ne);
    rc = 0;
    for (uint32_t i = 0; i < r->nnames && rc == 0; i++) {
        if (!c.count[i] || c.type[i] >= KERNEL_TYPES)
            continue;
        char *name = strdup(r->names[i]);
        rc = name ? 0 : -1;
        if (name)
            out->names[out->n++] = (struct kernel_count){name, c.type[i], c.count[i], c.sum_ns[i]};
    }
done:
    free(c.type);
    free(c.count);
    free(c.sum_ns);
    free(c.e);
    if (rc != 0)
        kernel_tally_free(out);
    return rc;
}

int kernel_tally_add(struct kernel_tally *into, const struct kernel_tally *t)
{
    for (int m = 0; m < KERNEL_MIXES; m++)
        into->mix_ns[m] += t->mix_ns[m];
    struct kernel_count *grown = realloc(into->names, sizeof(*grown) * (into->n + t->n ? into->n + t->n : 1));
    if (!grown)
        return -1;
    into->names = grown;
    size_t had = into->n;
    for (size_t i = 0; i < t->n; i++) {
        const struct kernel_count *k = &t->names[i];
        size_t at = 0;
        while (at < had && strcmp(into->names[at].name, k->name) != 0)
            at++;
        if (at < had) {
            into->names[at].count += k->count;
            into->names[at].sum_ns += k->sum_ns;
            continue;
        }
        char *name = strdup(k->name);
        if (!name)
            return -1;
        into->names[into->n++] = (struct kernel_count){name, k->type, k->count, k->sum_ns};
    }
    return 0;
}

void kernel_tally_free(struct kernel_tally *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i].name);
    free(t->names);
    memset(t, 0, sizeof(*t));
}

int kernel_table_rank(struct kernel_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f)
{
    struct kernel_tally t;
    memset(out, 0, sizeof(*out));
    if (kernel_tally_rank(&t, r, rule, f) != 0)
        return -1;
    int rc = kernel_table_of(out, &t);
    kernel_tally_free(&t);
    return rc;
}

void kernel_table_free(struct kernel_table *t)
{
    for (int i = 0; i < t->nrows; i++)
        free(t->rows[i].name);
    free(t->rows);
    memset(t, 0, sizeof(*t));
}
