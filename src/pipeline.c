/* pipeline.c - partitions, schedules and stage memory (see pipeline.h). */
#include "pipeline.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

const char *parallel_name(int kind)
{
    static const char *const names[] = {[PAR_DATA] = "data", [PAR_MODEL] = "model", [PAR_PIPELINE] = "pipeline"};
    return kind >= PAR_DATA && kind <= PAR_PIPELINE ? names[kind] : "?";
}

int parallel_kind_of(const char *name)
{
    for (int k = PAR_DATA; k <= PAR_PIPELINE; k++)
        if (!strcmp(name, parallel_name(k)))
            return k;
    return -1;
}

const char *schedule_name(int kind)
{
    return kind == SCHED_GPIPE ? "gpipe" : "1f1b";
}

/* Fills p's cut tensors from its boundaries; -1 with err at the first
 * boundary that is not a cut. */
static int set_cuts(struct pipe_plan *p, const struct model *m, char *err, size_t errlen)
{
    p->cut[0] = m->input;
    for (int s = 1; s < p->stages; s++) {
        p->cut[s] = model_cut_tensor(m, p->first[s]);
        if (p->cut[s] < 0) {
            int u = model_layer_num(m, p->first[s]);
            snprintf(err, errlen,
                     "--partition: a stage cannot start at layer %d (%s): more than one tensor crosses there (inside "
                     "a residual block)",
                     u, m->layers[model_layer_index(m, u)].name);
            return -1;
        }
    }
    p->cut[p->stages] = m->output;
    return 0;
}

int pipe_plan_parse(struct pipe_plan *p, const struct model *m, const char *spec, int stages, char *err, size_t errlen)
{
    /* the spec names the user's layer numbers (model.h), 0 to N - 1 */
    int N = m->nnum;
    p->stages = stages;
    int next = 0, s = 0;
    const char *q = spec;
    while (*q) {
        char *end;
        long a = strtol(q, &end, 10);
        if (end == q || *end != ':')
            goto syntax;
        q = end + 1;
        long b = strtol(q, &end, 10);
        if (end == q && !*q) /* "A:" at the end: to the last layer */
            b = N - 1;
        else if (end == q || (*end && *end != ','))
            goto syntax;
        q = *end ? end + 1 : end;
        if (s >= stages) {
            snprintf(err, errlen, "--partition: more ranges than the %d stages (--ranks)", stages);
            return -1;
        }
        if (a != next || b < a || b >= N) {
            snprintf(err, errlen,
                     "--partition: range %ld:%ld must start at layer %d and end at or before layer %d (%s has %d "
                     "layers)",
                     a, b, next, N - 1, m->name, N);
            return -1;
        }
        p->first[s++] = model_layer_index(m, (int)a);
        next = (int)b + 1;
    }
    if (s != stages || next != N) {
        snprintf(err, errlen, "--partition: %d ranges ending at layer %d; %d stages (--ranks) must cover layers 0-%d",
                 s, next - 1, stages, N - 1);
        return -1;
    }
    p->first[stages] = m->nlayers;
    return set_cuts(p, m, err, errlen);
syntax:
    snprintf(err, errlen,
             "--partition: expected FIRST:LAST layer ranges separated by commas, the last LAST optional (got '%s')",
             spec);
    return -1;
}

int pipe_plan_balance(struct pipe_plan *p, const struct model *m, const double *cost, int stages, char *err,
                      size_t errlen)
{
    int L = m->nlayers;
    /* prefix sums of the cost; ok[k]: a stage may start at layer k */
    double *pre = calloc((size_t)L + 1, sizeof(double));
    char *ok = calloc((size_t)L + 1, 1);
    /* best[s * (L + 1) + k]: the slowest stage of the best split of layers
     * [0, k) into s stages; from[]: where its last stage starts */
    double *best = malloc(sizeof(double) * (size_t)(stages + 1) * (size_t)(L + 1));
    int *from = malloc(sizeof(int) * (size_t)(stages + 1) * (size_t)(L + 1));
    if (!pre || !ok || !best || !from) {
        free(pre);
        free(ok);
        free(best);
        free(from);
        snprintf(err, errlen, "out of memory for the partition");
        return -1;
    }
    for (int k = 0; k < L; k++)
        pre[k + 1] = pre[k] + (cost[k] > 0 ? cost[k] : 0);
    ok[0] = ok[L] = 1;
    /* a stage starts at a numbered layer, with the conversions feeding it */
    for (int k = 1; k < L; k++)
        ok[k] = model_layer_index(m, model_layer_num(m, k)) == k && model_cut_tensor(m, k) >= 0;
#define B(s, k) best[(size_t)(s) * (size_t)(L + 1) + (size_t)(k)]
#define F(s, k) from[(size_t)(s) * (size_t)(L + 1) + (size_t)(k)]
    for (int s = 0; s <= stages; s++)
        for (int k = 0; k <= L; k++) {
            B(s, k) = DBL_MAX;
            F(s, k) = -1;
        }
    B(0, 0) = 0;
    for (int s = 1; s <= stages; s++)
        for (int k = 1; k <= L; k++) {
            if (!ok[k])
                continue;
            for (int j = 0; j < k; j++) {
                if (!ok[j] || B(s - 1, j) == DBL_MAX)
                    continue;
                double worst = pre[k] - pre[j] > B(s - 1, j) ? pre[k] - pre[j] : B(s - 1, j);
                if (worst < B(s, k)) {
                    B(s, k) = worst;
                    F(s, k) = j;
                }
            }
        }
    int rc = 0;
    if (B(stages, L) == DBL_MAX) {
        int cuts = 0;
        for (int k = 1; k < L; k++)
            cuts += ok[k];
        snprintf(err, errlen, "%s has %d places where a stage can start: too few for %d stages", m->name, cuts + 1,
                 stages);
        rc = -1;
    } else {
        p->stages = stages;
        p->first[stages] = L;
        for (int s = stages, k = L; s > 0; s--) {
            k = F(s, k);
            p->first[s - 1] = k;
        }
        rc = set_cuts(p, m, err, errlen);
    }
#undef B
#undef F
    free(pre);
    free(ok);
    free(best);
    free(from);
    return rc;
}

void pipe_schedule_ops(int schedule, int S, int s, int M, int *ops)
{
    int n = 0;
    if (schedule == SCHED_GPIPE) {
        for (int k = 0; k < M; k++)
            ops[n++] = k + 1;
        for (int k = 0; k < M; k++)
            ops[n++] = -(k + 1);
        return;
    }
    /* 1F1B: S - s forwards in flight before the first backward (the last
     * stage alternates at once), then one backward per forward, then the
     * remaining backwards */
    int warm = pipe_in_flight(schedule, S, s, M), f = 0, b = 0;
    while (f < warm)
        ops[n++] = ++f;
    while (f < M) {
        ops[n++] = -(++b);
        ops[n++] = ++f;
    }
    while (b < M)
        ops[n++] = -(++b);
}

int pipe_in_flight(int schedule, int S, int s, int M)
{
    if (schedule == SCHED_GPIPE)
        return M;
    return S - s < M ? S - s : M;
}

const char *pipe_stage_mem_key(int kind)
{
    static const char *const keys[SMEM_KINDS] = {[SMEM_PARAMS] = "param_bytes",
                                                 [SMEM_GRADS] = "grad_bytes",
                                                 [SMEM_OPTIM] = "optimizer_bytes",
                                                 [SMEM_ACTS] = "activation_bytes"};
    return kind >= 0 && kind < SMEM_KINDS ? keys[kind] : "?";
}

/* Bytes of tensor t's value for one micro-batch, and of its gradient
 * beside it when one flows through it. */
static double tensor_bytes(const struct model *m, int t)
{
    const struct tensor *x = &m->tensors[t];
    return sizeof(float) * (double)x->stride * (double)m->batch * (x->need_grad && tensor_has_grad(x) ? 2 : 1);
}

void pipe_stage_memory(const struct model *m, int a, int b, int in_flight, double momentum, double *bytes, int micro)
{
    for (int k = 0; k < SMEM_KINDS; k++)
        bytes[k] = 0;
    for (int p = 0; p < m->nparams; p++) {
        const struct param *q = &m->params[p];
        if (q->layer < a || q->layer >= b)
            continue;
        double n = sizeof(float) * (double)q->len;
        bytes[SMEM_PARAMS] += n;
        bytes[SMEM_GRADS] += q->trainable ? n * (micro > 1 ? 2 : 1) : 0;
        bytes[SMEM_OPTIM] += q->trainable && momentum != 0 ? n : 0;
    }
    /* the stage's input: the model's, or what crosses the cut before it */
    int in = a == 0 ? m->input : model_cut_tensor(m, a);
    double acts = in >= 0 ? tensor_bytes(m, in) : 0;
    for (int i = a; i < b; i++)
        if (m->tensors[m->layers[i].out].alias_of < 0) /* (a view: its buffers are another tensor's) */
            acts += tensor_bytes(m, m->layers[i].out);
    bytes[SMEM_ACTS] = acts * in_flight;
}
