/* model.c - the model graph: building, the flat parameter and gradient
 * buffers, forward, loss and backward. */
#include "model.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels_cpu.h" /* act_stride: a layout's floats per sample */

/* Per-layer wall time on the host, summed over calls. The thread that runs
 * the model keeps the running totals in plain memory and, at the end of
 * every forward and backward, publishes them under a sequence lock, so
 * that another thread (the UI) reads one consistent set without a lock and
 * without a data race: every word they share is atomic, and the model's
 * thread never waits. Two clock reads per layer per pass: cheap next to
 * any layer's work. DDPTOP_LAYER_TIMES=1 also prints the table on stderr
 * when the model is destroyed. */
struct layer_times {
    int64_t *fwd_ns, *bwd_ns; /* [nlayers] running totals: the model's thread only */
    int64_t fwd_calls, bwd_calls;
    int print;
    _Atomic uint64_t seq; /* odd while a publication is under way */
    _Atomic int64_t *pub; /* [2 * nlayers]: forward, then backward totals as published */
    _Atomic int64_t pub_calls[2];
};

/* Publishes the forward (bwd 0) or backward totals: the writer's half of
 * the sequence lock (model_layer_times is the reader's). */
static void times_publish(struct layer_times *lt, int nlayers, int bwd)
{
    uint64_t s = atomic_load_explicit(&lt->seq, memory_order_relaxed);
    atomic_store_explicit(&lt->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    const int64_t *src = bwd ? lt->bwd_ns : lt->fwd_ns;
    for (int i = 0; i < nlayers; i++)
        atomic_store_explicit(&lt->pub[(size_t)bwd * nlayers + i], src[i], memory_order_relaxed);
    atomic_store_explicit(&lt->pub_calls[bwd], bwd ? lt->bwd_calls : lt->fwd_calls, memory_order_relaxed);
    atomic_store_explicit(&lt->seq, s + 2, memory_order_release);
}

int model_layer_times(const struct model *m, int64_t *fwd_ns, int64_t *bwd_ns, int n, int64_t *fwd_calls,
                      int64_t *bwd_calls)
{
    struct layer_times *lt = m->times;
    if (!lt)
        return 0;
    if (n > m->nlayers)
        n = m->nlayers;
    for (int tries = 0; tries < 8; tries++) {
        uint64_t s0 = atomic_load_explicit(&lt->seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        for (int i = 0; i < n; i++) {
            fwd_ns[i] = atomic_load_explicit(&lt->pub[i], memory_order_relaxed);
            bwd_ns[i] = atomic_load_explicit(&lt->pub[(size_t)m->nlayers + i], memory_order_relaxed);
        }
        *fwd_calls = atomic_load_explicit(&lt->pub_calls[0], memory_order_relaxed);
        *bwd_calls = atomic_load_explicit(&lt->pub_calls[1], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&lt->seq, memory_order_relaxed) == s0)
            return n;
    }
    return -1;
}

void model_layer_times_reset(struct model *m)
{
    struct layer_times *lt = m->times;
    if (!lt)
        return;
    memset(lt->fwd_ns, 0, sizeof(int64_t) * (size_t)m->nlayers);
    memset(lt->bwd_ns, 0, sizeof(int64_t) * (size_t)m->nlayers);
    lt->fwd_calls = lt->bwd_calls = 0;
    times_publish(lt, m->nlayers, 0);
    times_publish(lt, m->nlayers, 1);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

float *model_alloc_floats(struct model *m, size_t n)
{
    float *p = m->dev.ops->alloc(&m->dev, n * sizeof(float));
    if (!p)
        snprintf(m->err, sizeof(m->err), "%s", m->dev.err);
    return p;
}

void model_free_floats(struct model *m, float *p)
{
    if (p)
        m->dev.ops->free(&m->dev, p);
}

int model_memcpy(struct model *m, void *dst, const void *src, size_t bytes)
{
    struct device *d = &m->dev;
    if (d->ops->copy(d, dst, src, bytes, STREAM_COMPUTE) != 0 || d->ops->sync(d, STREAM_COMPUTE) != 0) {
        snprintf(m->err, sizeof(m->err), "%s", d->err);
        return -1;
    }
    return 0;
}

static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return 0;
}

/* Says that a c x h x w activation found no memory (the device's reason
 * first: a cap, say). */
static void oom_tensor(struct model *m, int c, int h, int w)
{
    snprintf(m->err, sizeof(m->err), "%.160s for a %dx%dx%d activation at batch %d",
             m->dev.err[0] ? m->dev.err : "out of memory", c, h, w, m->batch);
}

/* Tensor t's value, and its gradient unless it carries none. */
static int tensor_buffers(struct model *m, struct tensor *t)
{
    t->val = model_alloc_floats(m, (size_t)t->stride * m->batch);
    if (t->val && !t->no_grad)
        t->grad = model_alloc_floats(m, (size_t)t->stride * m->batch);
    return t->val && (t->no_grad || t->grad) ? 0 : -1;
}

int model_add_tensor(struct model *m, int c, int h, int w)
{
    return model_add_tensor_blk(m, c, h, w, 1);
}

int model_add_tensor_blk(struct model *m, int c, int h, int w, int blk)
{
    if (grow((void **)&m->tensors, &m->cap_tensors, m->ntensors + 1, sizeof(struct tensor)) != 0)
        goto oom;
    struct tensor *t = &m->tensors[m->ntensors];
    t->c = c;
    t->h = h;
    t->w = w;
    t->per_sample = (int64_t)c * h * w;
    t->blk = blk;
    t->stride = act_stride(c, h, w, t->blk);
    t->alias_of = -1;
    t->no_grad = m->ntensors == 0; /* the model input (tensor 0) needs no gradient */
    if (!m->planned && tensor_buffers(m, t) != 0)
        goto oom;
    return m->ntensors++;
oom:
    oom_tensor(m, c, h, w);
    return -1;
}

int model_add_param(struct model *m, int layer, const char *name, int ndim, const int *shape)
{
    if (grow((void **)&m->params, &m->cap_params, m->nparams + 1, sizeof(struct param)) != 0) {
        snprintf(m->err, sizeof(m->err), "out of memory");
        return -1;
    }
    struct param *p = &m->params[m->nparams];
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->ndim = ndim;
    p->len = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->len *= (size_t)shape[i];
    }
    p->off = m->nfloats;
    p->layer = layer;
    p->trainable = 1;
    p->init = PARAM_INIT_FANIN;
    m->nfloats += p->len;
    struct layer *l = &m->layers[layer];
    if (l->nparam == 0)
        l->param0 = m->nparams;
    l->nparam++;
    if (l->out >= 0) /* everything downstream of a trainable layer wants gradients */
        m->tensors[l->out].need_grad = 1;
    return m->nparams++;
}

int model_add_layer(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2, void *impl)
{
    if (grow((void **)&m->layers, &m->cap_layers, m->nlayers + 1, sizeof(struct layer)) != 0) {
        snprintf(m->err, sizeof(m->err), "out of memory");
        if (ops->destroy) {
            struct layer tmp = {.impl = impl};
            ops->destroy(&tmp);
        }
        return -1;
    }
    struct layer *l = &m->layers[m->nlayers];
    l->ops = ops;
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->in = in;
    l->in2 = in2;
    l->out = -1;
    l->param0 = m->nparams;
    l->impl = impl;
    return m->nlayers++;
}

/* Numbers the layers for the user (model.h): every layer but conversions. */
static void number_layers(struct model *m)
{
    m->nnum = 0;
    for (int i = 0; i < m->nlayers; i++)
        m->layers[i].num = m->layers[i].ops->conversion ? -1 : m->nnum++;
}

int model_layer_num(const struct model *m, int i)
{
    if (i < 0 || i >= m->nlayers)
        return i < 0 ? -1 : m->nnum;
    for (int j = i; j < m->nlayers; j++) /* a conversion: the layer it feeds */
        if (m->layers[j].num >= 0)
            return m->layers[j].num;
    for (int j = i; j >= 0; j--) /* the logits' conversion: the last layer's */
        if (m->layers[j].num >= 0)
            return m->layers[j].num;
    return -1;
}

int model_layer_index(const struct model *m, int u)
{
    if (u < 0 || u > m->nnum)
        return -1;
    if (u == m->nnum)
        return m->nlayers;
    int i = 0;
    while (i < m->nlayers && model_layer_num(m, i) != u)
        i++;
    return i < m->nlayers ? i : -1;
}

/* The parameters the model holds, into dst [nfloats]: every parameter's
 * values are drawn in order, held or not, so that a stage's are the whole
 * model's. */
static void init_into(const struct model *m, uint64_t seed, float *dst)
{
    struct rng r;
    rng_seed(&r, seed);
    for (int i = 0; i < m->nparams; i++) {
        struct param *p = &m->params[i];
        /* fan_in: the weight's elements per output unit; a bias takes its weight's */
        const struct param *w = p->ndim == 1 && i > 0 && m->params[i - 1].layer == p->layer ? &m->params[i - 1] : p;
        size_t fan_in = w->ndim >= 2 ? w->len / (size_t)w->shape[0] : 1;
        float bound = 1.0f / sqrtf((float)fan_in);
        float *v = model_holds_layer(m, p->layer) ? dst + p->off : NULL;
        for (size_t k = 0; k < p->len; k++) {
            double u = 2.0 * rng_uniform(&r) - 1.0; /* drawn for every kind: others' draws stay put */
            if (v)
                v[k] = p->init == PARAM_INIT_ONE ? 1.0f : p->init == PARAM_INIT_ZERO ? 0.0f : (float)(u * bound);
        }
    }
}

void model_init_params(struct model *m, uint64_t seed)
{
    /* drawn on the host, in one order whatever the device */
    float *host = malloc(sizeof(float) * (m->nfloats ? m->nfloats : 1));
    if (!host) {
        snprintf(m->err, sizeof(m->err), "out of memory for %zu parameters", m->nfloats);
        return;
    }
    init_into(m, seed, host);
    model_memcpy(m, m->param_buf, host, sizeof(float) * m->nfloats);
    free(host);
}

static struct model *begin(const struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                           uint64_t seed, int planned, char *err, size_t errlen)
{
    if (batch <= 0) {
        snprintf(err, errlen, "batch size must be positive");
        return NULL;
    }
    struct model *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->batch = batch;
    m->classes = classes;
    m->seed = seed;
    m->planned = planned;
    m->dev = *d; /* the model's own handle: its messages stay its own */
    m->dev.err[0] = 0;
    m->input = -1;
    if (!(m->kernels = m->dev.ops->kernels_create(&m->dev)))
        snprintf(m->err, sizeof(m->err), "%s", m->dev.err);
    else
        m->input = model_add_tensor(m, c, h, w);
    if (m->input < 0) {
        snprintf(err, errlen, "%s: %s", name, m->err[0] ? m->err : "cannot build");
        model_destroy(m);
        return NULL;
    }
    return m;
}

struct model *model_begin(const struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                          uint64_t seed, char *err, size_t errlen)
{
    return begin(d, name, batch, c, h, w, classes, seed, 0, err, errlen);
}

struct model *model_begin_plan(const struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                               uint64_t seed, char *err, size_t errlen)
{
    return begin(d, name, batch, c, h, w, classes, seed, 1, err, errlen);
}

/* The buffers of layers [a, b) (model_hold). 0, or -1 with m->err. */
static int hold_buffers(struct model *m, int a, int b, const struct model_shared *sh)
{
    if (m->param_buf || m->grad_buf || a < 0 || b > m->nlayers || a > b) {
        snprintf(m->err, sizeof(m->err), "layers %d-%d of %d: a model holds its layers once", a, b - 1, m->nlayers);
        return -1;
    }
    m->hold_a = a;
    m->hold_b = b;
    /* the tensors its layers read and write, and those a view of theirs shares */
    char *need = calloc((size_t)m->ntensors + 1, 1);
    if (!need) {
        snprintf(m->err, sizeof(m->err), "out of memory");
        return -1;
    }
    for (int i = a; i < b; i++) {
        const struct layer *l = &m->layers[i];
        need[l->in] = need[l->out] = 1;
        if (l->in2 >= 0)
            need[l->in2] = 1;
    }
    for (int t = m->ntensors - 1; t >= 0; t--) /* (a view comes after what it views) */
        if (need[t] && m->tensors[t].alias_of >= 0)
            need[m->tensors[t].alias_of] = 1;
    int64_t biggest = 0;
    int rc = 0;
    for (int t = 0; t < m->ntensors && rc == 0; t++) {
        struct tensor *x = &m->tensors[t];
        if (!need[t])
            continue;
        biggest = x->stride > biggest ? x->stride : biggest;
        if (sh && sh->acts && t != m->input && x->alias_of < 0) {
            x->val = sh->acts->tensors[t].val;
            x->grad = sh->acts->tensors[t].grad;
        }
        if (x->alias_of < 0 && !x->val && tensor_buffers(m, x) != 0) {
            oom_tensor(m, x->c, x->h, x->w);
            rc = -1;
        }
    }
    for (int t = 0; t < m->ntensors && rc == 0; t++) {
        struct tensor *x = &m->tensors[t];
        if (x->alias_of >= 0) {
            x->val = m->tensors[x->alias_of].val;
            x->grad = m->tensors[x->alias_of].grad;
        }
    }
    free(need);
    if (rc != 0)
        return -1;
    /* the held layers' parameters, a run of the flat layout (a model keeps
     * them in layer order), moved to its start */
    size_t lo = 0, hi = 0;
    int any = 0;
    for (int p = 0; p < m->nparams; p++)
        if (model_holds_layer(m, m->params[p].layer)) {
            lo = any ? lo : m->params[p].off;
            hi = m->params[p].off + m->params[p].len;
            any = 1;
        }
    for (int p = 0; p < m->nparams; p++)
        m->params[p].off = model_holds_layer(m, m->params[p].layer) ? m->params[p].off - lo : 0;
    m->nfloats = hi - lo;
    int batch = m->batch;
    size_t n = m->nfloats ? m->nfloats : 1;
    m->param_buf = sh && sh->params ? sh->params : model_alloc_floats(m, n);
    m->grad_buf = sh && sh->grads ? sh->grads : model_alloc_floats(m, n);
    m->probs = model_alloc_floats(m, (size_t)batch * m->classes);
    m->labels = (int32_t *)model_alloc_floats(m, (size_t)batch); /* int32 and float are both 4 bytes */
    m->acc = sh && sh->acc ? sh->acc : model_alloc_floats(m, (size_t)biggest * batch);
    if (!m->param_buf || !m->grad_buf || !m->probs || !m->labels || !m->acc) {
        if (m->dev.err[0])
            snprintf(m->err, sizeof(m->err), "%s", m->dev.err);
        else
            snprintf(m->err, sizeof(m->err), "out of memory for %zu parameters", m->nfloats);
        return -1;
    }
    if (m->dev.ops->finish_model && m->dev.ops->finish_model(m) != 0)
        return -1;
    m->err[0] = 0;
    if (!(sh && sh->params))
        model_init_params(m, m->seed);
    return m->err[0] ? -1 : 0; /* (the upload failed) */
}

int model_hold(struct model *m, int a, int b, const struct model_shared *shared, char *err, size_t errlen)
{
    if (!m->planned || hold_buffers(m, a, b, shared) != 0) {
        snprintf(err, errlen, "%s: %s", m->name, !m->planned ? "model_hold: not a planned model" : m->err);
        return -1;
    }
    return 0;
}

void model_unshare(struct model *m, const struct model_shared *shared)
{
    if (shared->params && m->param_buf == shared->params)
        m->param_buf = NULL;
    if (shared->grads && m->grad_buf == shared->grads)
        m->grad_buf = NULL;
    if (shared->acc && m->acc == shared->acc)
        m->acc = NULL;
    for (int t = 0; shared->acts && t < m->ntensors; t++) {
        struct tensor *x = &m->tensors[t];
        if (x->val && x->val == shared->acts->tensors[t].val)
            x->val = x->grad = NULL; /* (a view of a shared tensor is never freed itself) */
    }
}

struct model *model_finish(struct model *m, int out, char *err, size_t errlen)
{
    if (out < 0)
        goto fail;
    m->output = out;
    number_layers(m);
    if (m->tensors[out].per_sample != m->classes || m->tensors[out].blk != 1) {
        snprintf(m->err, sizeof(m->err), "model output is %lld values%s, expected %d classes",
                 (long long)m->tensors[out].per_sample, m->tensors[out].blk != 1 ? " in a blocked layout" : "",
                 m->classes);
        goto fail;
    }
    if (m->dev.ops->kernels_finish(&m->dev, m->kernels) != 0) {
        snprintf(m->err, sizeof(m->err), "%s", m->dev.err);
        goto fail;
    }
    m->nfloats_all = m->nfloats;
    if (!m->planned && hold_buffers(m, 0, m->nlayers, NULL) != 0)
        goto fail;
    model_set_trainable(m, "all", NULL, 0);
    /* per-layer timing is always on (struct layer_times says why it is
     * cheap); without memory for it the model still trains, untimed */
    struct layer_times *lt = calloc(1, sizeof(*lt));
    if (lt) {
        lt->fwd_ns = calloc((size_t)m->nlayers, sizeof(int64_t));
        lt->bwd_ns = calloc((size_t)m->nlayers, sizeof(int64_t));
        lt->pub = calloc(2 * (size_t)m->nlayers, sizeof(*lt->pub));
        if (lt->fwd_ns && lt->bwd_ns && lt->pub) {
            const char *env = getenv("DDPTOP_LAYER_TIMES");
            lt->print = env && *env && strcmp(env, "0") != 0;
            m->times = lt;
        } else {
            free(lt->fwd_ns);
            free(lt->bwd_ns);
            free(lt->pub);
            free(lt);
        }
    }
    return m;
fail:
    snprintf(err, errlen, "%s: %s", m->name, m->err[0] ? m->err : "cannot build");
    model_destroy(m);
    return NULL;
}

void model_destroy(struct model *m)
{
    if (!m)
        return;
    if (m->times) {
        if (m->times->print && m->times->fwd_calls > 0)
            model_print_times(m, stderr);
        free(m->times->fwd_ns);
        free(m->times->bwd_ns);
        free(m->times->pub);
        free(m->times);
    }
    m->dev.ops->sync(&m->dev, STREAM_COMPUTE); /* nothing may still be using what is freed below */
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].ops->destroy)
            m->layers[i].ops->destroy(&m->layers[i]);
    for (int i = 0; i < m->ntensors; i++)
        if (m->tensors[i].alias_of < 0) {
            model_free_floats(m, m->tensors[i].val);
            model_free_floats(m, m->tensors[i].grad);
            model_free_floats(m, (float *)m->tensors[i].v16);
            model_free_floats(m, (float *)m->tensors[i].g16);
        }
    free(m->layers);
    free(m->tensors);
    free(m->params);
    model_free_floats(m, m->param_buf);
    model_free_floats(m, m->grad_buf);
    model_free_floats(m, m->probs);
    model_free_floats(m, (float *)m->labels);
    model_free_floats(m, m->acc);
    if (m->kernels)
        m->dev.ops->kernels_destroy(m->kernels); /* after the layers and buffers: they used it */
    free(m);
}

/* The clock at a layer's edge: with times_wait, once the device has done
 * everything enqueued so far. */
static int layer_clock(struct model *m, int64_t *t)
{
    if (m->times_wait && m->dev.ops->async && m->dev.ops->sync(&m->dev, STREAM_COMPUTE) != 0) {
        snprintf(m->err, sizeof(m->err), "%s", m->dev.err);
        return -1;
    }
    *t = now_ns();
    return 0;
}

int model_forward(struct model *m, int train)
{
    return model_forward_range(m, 0, m->nlayers, train);
}

int model_forward_range(struct model *m, int a, int b, int train)
{
    struct layer_times *lt = m->times;
    for (int i = a; i < b; i++) {
        struct layer *l = &m->layers[i];
        int64_t t0 = 0, t1;
        if (lt && layer_clock(m, &t0) != 0)
            return -1;
        if (l->ops->forward(m, l, train) != 0)
            return -1;
        if (lt) {
            if (layer_clock(m, &t1) != 0)
                return -1;
            lt->fwd_ns[i] += t1 - t0;
        }
    }
    if (lt) {
        lt->fwd_calls++;
        times_publish(lt, m->nlayers, 0);
    }
    return 0;
}

int model_loss_begin(struct model *m, const int32_t *labels, int n)
{
    if (n > m->batch)
        n = m->batch;
    m->loss_n = n;
    if (m->dev.ops->loss_begin(m, labels, n) != 0) {
        snprintf(m->err, sizeof(m->err), "loss: %.240s", m->dev.err);
        return -1;
    }
    return 0;
}

int model_loss_end(struct model *m, float *loss, int *correct)
{
    if (m->dev.ops->loss_end(m, loss, correct) != 0) {
        snprintf(m->err, sizeof(m->err), "loss: %.240s", m->dev.err);
        return -1;
    }
    return 0;
}

float model_loss(struct model *m, const int32_t *labels, int n, int *correct)
{
    float loss = NAN;
    if (model_loss_begin(m, labels, n) != 0 || model_loss_end(m, &loss, correct) != 0)
        return NAN; /* non-finite: the caller stops as on divergence, with m->err set */
    return loss;
}

/* Whether layer l has trainable parameters (a layer freezes as a whole). */
static int layer_trains(const struct model *m, const struct layer *l)
{
    return l->nparam > 0 && m->params[l->param0].trainable;
}

/* Backward over layers [a, b), last first. */
static int backward_span(struct model *m, int a, int b, grad_ready_fn ready, void *ctx)
{
    struct layer_times *lt = m->times;
    /* layers before bwd_first are frozen and feed only frozen layers */
    for (int i = b - 1; i >= a && i >= m->bwd_first; i--) {
        struct layer *l = &m->layers[i];
        if (!m->tensors[l->out].grad_set)
            continue; /* nothing flows back through this layer */
        if (!layer_trains(m, l) && !m->tensors[l->in].need_grad && !(l->in2 >= 0 && m->tensors[l->in2].need_grad))
            continue; /* nothing it could produce is wanted */
        int64_t t0 = 0, t1;
        if (lt && layer_clock(m, &t0) != 0)
            return -1;
        if (l->ops->backward(m, l) != 0)
            return -1;
        if (lt) {
            if (layer_clock(m, &t1) != 0)
                return -1;
            lt->bwd_ns[i] += t1 - t0;
        }
        if (ready)
            for (int p = l->nparam - 1; p >= 0; p--)
                if (m->params[l->param0 + p].trainable)
                    ready(ctx, l->param0 + p);
    }
    if (lt) {
        lt->bwd_calls++;
        times_publish(lt, m->nlayers, 1);
    }
    return 0;
}

static int backward_layers(struct model *m, grad_ready_fn ready, void *ctx)
{
    return backward_span(m, 0, m->nlayers, ready, ctx);
}

int model_backward(struct model *m, float grad_scale, grad_ready_fn ready, void *ctx)
{
    for (int i = 0; i < m->ntensors; i++)
        m->tensors[i].grad_set = 0;
    if (m->dev.ops->loss_backward(m, grad_scale) != 0) {
        snprintf(m->err, sizeof(m->err), "loss backward: %.230s", m->dev.err);
        return -1;
    }
    m->tensors[m->output].grad_set = 1;
    return backward_layers(m, ready, ctx);
}

int model_backward_dout(struct model *m, const float *dout, grad_ready_fn ready, void *ctx)
{
    for (int i = 0; i < m->ntensors; i++)
        m->tensors[i].grad_set = 0;
    struct tensor *out = &m->tensors[m->output];
    if (model_memcpy(m, out->grad, dout, sizeof(float) * (size_t)m->batch * (size_t)m->classes) != 0)
        return -1;
    out->grad_set = 1;
    return backward_layers(m, ready, ctx);
}

int model_backward_range(struct model *m, int a, int b, int seed, float grad_scale)
{
    for (int i = 0; i < m->ntensors; i++)
        m->tensors[i].grad_set = 0;
    if (seed < 0) {
        if (m->dev.ops->loss_backward(m, grad_scale) != 0) {
            snprintf(m->err, sizeof(m->err), "loss backward: %.230s", m->dev.err);
            return -1;
        }
        seed = m->output;
    }
    m->tensors[seed].grad_set = 1;
    return backward_span(m, a, b, NULL, NULL);
}

/* Whether layer l reads tensor t. */
static int reads(const struct layer *l, int t)
{
    return l->in == t || l->in2 == t;
}

int model_cut_tensor(const struct model *m, int k)
{
    if (k <= 0 || k >= m->nlayers)
        return -1;
    int cut = -1;
    for (int t = 0; t < m->ntensors; t++) {
        /* made before the cut: the input, or the output of a layer before k */
        int before = t == m->input;
        for (int j = 0; j < k && !before; j++)
            before = m->layers[j].out == t;
        if (!before)
            continue;
        int after = 0;
        for (int j = k; j < m->nlayers && !after; j++)
            after = reads(&m->layers[j], t);
        if (!after)
            continue;
        if (cut >= 0)
            return -1; /* a second tensor crosses (a residual's skip) */
        cut = t;
    }
    return cut;
}

int model_plan_chain16(struct model *m, chain16_cap_fn cap)
{
    /* optimistic first (every tensor a CHAIN16_OUT layer makes and some
     * layer reads), then a reader that cannot read it as its output stands
     * takes its inputs out, until nothing changes */
    for (int t = 0; t < m->ntensors; t++) {
        struct tensor *x = &m->tensors[t];
        x->h16 = 0;
        if (t == m->input || t == m->output || x->alias_of >= 0 || x->blk != 1)
            continue;
        int made = 0, read = 0;
        for (int j = 0; j < m->nlayers; j++) {
            const struct layer *l = &m->layers[j];
            if (l->out == t)
                made = (cap(m, l) & CHAIN16_OUT) != 0;
            read = read || reads(l, t);
        }
        int ok = made && read;
        for (int a = 0; a < m->ntensors && ok; a++)
            ok = m->tensors[a].alias_of != t;
        x->h16 = ok;
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int j = 0; j < m->nlayers; j++) {
            const struct layer *l = &m->layers[j];
            int c = cap(m, l);
            if ((c & CHAIN16_IN) || ((c & CHAIN16_PASS) && m->tensors[l->out].h16))
                continue;
            const int ins[2] = {l->in, l->in2};
            for (int k = 0; k < 2; k++)
                if (ins[k] >= 0 && m->tensors[ins[k]].h16) {
                    m->tensors[ins[k]].h16 = 0;
                    changed = 1;
                }
        }
    }
    int n = 0;
    for (int t = 0; t < m->ntensors; t++)
        n += m->tensors[t].h16;
    return n;
}

int model_hold16(struct model *m)
{
    for (int t = 0; t < m->ntensors; t++) {
        struct tensor *x = &m->tensors[t];
        if (!x->h16 || x->v16 || !x->val) /* (done, or not held) */
            continue;
        /* (a chain's tensors are plain: stride is per_sample) */
        size_t floats = ((size_t)x->per_sample * (size_t)m->batch + 1) / 2; /* two 16-bit values a float */
        x->v16 = (uint16_t *)model_alloc_floats(m, floats);
        if (x->v16 && x->grad)
            x->g16 = (uint16_t *)model_alloc_floats(m, floats);
        if (!x->v16 || (x->grad && !x->g16))
            return -1;
        model_free_floats(m, x->val);
        model_free_floats(m, x->grad);
        x->val = x->grad = NULL;
    }
    return 0;
}

int64_t model_flops(const struct model *m)
{
    int64_t f = 0;
    for (int i = 0; i < m->nlayers; i++)
        f += m->layers[i].flops;
    return f;
}

size_t model_trainable_floats(const struct model *m)
{
    size_t n = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].trainable)
            n += m->params[i].len;
    return n;
}

int model_next_trainable(const struct model *m, int *i, int end, size_t *lo, size_t *hi)
{
    while (*i < end && !m->params[*i].trainable)
        (*i)++;
    if (*i >= end)
        return 0;
    *lo = *hi = m->params[*i].off;
    for (; *i < end && m->params[*i].trainable; (*i)++)
        *hi = m->params[*i].off + m->params[*i].len;
    return 1;
}

int model_set_trainable(struct model *m, const char *spec, char *err, size_t errlen)
{
    int nparam_layers = 0;
    for (int i = 0; i < m->nlayers; i++)
        nparam_layers += m->layers[i].nparam > 0;
    long keep;
    char *end;
    if (!strcmp(spec, "all")) {
        keep = nparam_layers;
    } else if (!strcmp(spec, "classifier")) {
        keep = 1;
    } else if (!strncmp(spec, "last:", 5) && (keep = strtol(spec + 5, &end, 10)) >= 1 && !*end && spec[5]) {
        /* more than there are: everything trains */
    } else {
        if (err)
            snprintf(err, errlen, "--trainable: expected all, classifier or last:K with K >= 1 (got '%s')", spec);
        return -1;
    }
    /* parameterised layers in order; the last `keep` of them train */
    int seen = 0;
    m->bwd_first = m->nlayers;
    for (int i = 0; i < m->nlayers; i++) {
        struct layer *l = &m->layers[i];
        if (l->nparam == 0)
            continue;
        int train = nparam_layers - seen <= keep;
        seen++;
        for (int p = 0; p < l->nparam; p++)
            m->params[l->param0 + p].trainable = train;
        if (train && i < m->bwd_first)
            m->bwd_first = i;
    }
    /* a tensor needs a gradient when a trainable layer lies upstream of it */
    for (int t = 0; t < m->ntensors; t++)
        m->tensors[t].need_grad = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const struct layer *l = &m->layers[i];
        struct tensor *o = &m->tensors[l->out];
        int need = layer_trains(m, l) || m->tensors[l->in].need_grad || (l->in2 >= 0 && m->tensors[l->in2].need_grad);
        o->need_grad = need && tensor_has_grad(o);
    }
    return 0;
}

size_t model_activation_bytes(const struct model *m)
{
    size_t b = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const struct tensor *t = &m->tensors[i];
        if (t->alias_of < 0)
            b += (size_t)t->stride * (t->h16 ? sizeof(uint16_t) : sizeof(float)) * (tensor_has_grad(t) ? 2 : 1);
    }
    return b;
}

void model_print_times(const struct model *m, FILE *f)
{
    const struct layer_times *lt = m->times;
    if (!lt || lt->fwd_calls == 0)
        return;
    double tot = 0.0;
    for (int i = 0; i < m->nlayers; i++)
        tot += (double)(lt->fwd_ns[i] + lt->bwd_ns[i]);
    double fc = (double)lt->fwd_calls, bc = lt->bwd_calls > 0 ? (double)lt->bwd_calls : 1.0;
    fprintf(f, "\nper-layer times: %s, batch %d, %lld forwards, %lld backwards (mean ms per call)\n", m->name, m->batch,
            (long long)lt->fwd_calls, (long long)lt->bwd_calls);
    fprintf(f, "%-4s %-24s %-10s %9s %9s %6s %8s %8s  %s\n", "#", "layer", "kind", "fwd ms", "bwd ms", "share",
            "fwd GF/s", "bwd GF/s", "kernel (fwd|bwd-data|bwd-weights)");
    for (int i = 0; i < m->nlayers; i++) {
        const struct layer *l = &m->layers[i];
        double fms = (double)lt->fwd_ns[i] / fc / 1e6, bms = (double)lt->bwd_ns[i] / bc / 1e6;
        double fl = (double)l->flops * m->batch;
        /* backward does about twice the forward's work: input and weight gradients */
        char num[16] = "-"; /* a conversion (model_layer_num) */
        if (l->num >= 0)
            snprintf(num, sizeof(num), "%d", l->num);
        fprintf(f, "%-4s %-24s %-10s %9.3f %9.3f %5.1f%% %8.1f %8.1f  %s\n", num, l->name, l->ops->kind, fms, bms,
                tot > 0 ? 100.0 * (double)(lt->fwd_ns[i] + lt->bwd_ns[i]) / tot : 0.0, fms > 0 ? fl / fms / 1e6 : 0.0,
                bms > 0 ? 2.0 * fl / bms / 1e6 : 0.0, l->kernel);
    }
    fprintf(f, "total %.3f ms per step (forward + backward)\n", tot / fc / 1e6);
}
