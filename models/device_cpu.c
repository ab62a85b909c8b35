/* device_cpu.c - the CPU device: memory is host memory, copies are memcpy,
 * streams are in order and events are no-ops; a model's kernels are
 * oneDNN's (kernels_cpu.c) with the reference loss, and its layers are the
 * builders of layers*.c. */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "kernels_cpu.h"
#include "kernels_ref.h"
#include "layers_internal.h"
#include "optim.h"

int device_fail(struct device *d, const char *fmt, ...)
{
    int n = snprintf(d->err, sizeof(d->err), "rank %d (%s): ", d->rank, d->name[0] ? d->name : d->ops->name);
    if (n < 0 || (size_t)n >= sizeof(d->err))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof(d->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int cpu_count(void)
{
    return 1;
}

static int cpu_open(struct device *d, int index)
{
    d->index = index;
    snprintf(d->name, sizeof(d->name), "cpu");
    return 0;
}

static void cpu_close(struct device *d)
{
}

static void mem_add(struct device_mem *m, int64_t bytes)
{
    int64_t now = atomic_fetch_add(&m->now, bytes) + bytes;
    int64_t peak = atomic_load(&m->peak);
    while (now > peak && !atomic_compare_exchange_weak(&m->peak, &peak, now))
        ;
}

void device_mem_hold(struct device *d, void *p, size_t bytes)
{
    struct device_mem *m = d->mem;
    if (!m || !p)
        return;
    while (atomic_flag_test_and_set(&m->lock))
        ;
    if (m->nblocks == m->cap_blocks) {
        size_t cap = m->cap_blocks ? 2 * m->cap_blocks : 256;
        struct mem_block *nb = realloc(m->blocks, cap * sizeof(*nb));
        if (nb) {
            m->blocks = nb;
            m->cap_blocks = cap;
        }
    }
    int listed = m->nblocks < m->cap_blocks;
    if (listed)
        m->blocks[m->nblocks++] = (struct mem_block){p, bytes};
    atomic_flag_clear(&m->lock);
    if (listed)
        mem_add(m, (int64_t)bytes);
}

size_t device_mem_drop(struct device *d, void *p)
{
    struct device_mem *m = d->mem;
    size_t bytes = 0;
    if (!m || !p)
        return 0;
    while (atomic_flag_test_and_set(&m->lock))
        ;
    for (size_t i = m->nblocks; i-- > 0;)
        if (m->blocks[i].p == p) {
            bytes = m->blocks[i].bytes;
            m->blocks[i] = m->blocks[--m->nblocks];
            break;
        }
    if (m->nblocks == 0) {
        free(m->blocks);
        m->blocks = NULL;
        m->cap_blocks = 0;
    }
    atomic_flag_clear(&m->lock);
    mem_add(m, -(int64_t)bytes);
    return bytes;
}

static void *cpu_mem(struct device *d, size_t bytes)
{
    struct device_mem *m = d->mem;
    int64_t held = m ? atomic_load(&m->now) : 0;
    if (m && m->cap > 0 && held + (int64_t)cpu_alloc_size(bytes) > m->cap) {
        device_fail(d,
                    "out of memory under DDPTOP_MEM_CAP_MB=%lld: %.1f MiB more would pass the cap, with %.1f MiB held",
                    (long long)(m->cap >> 20), (double)cpu_alloc_size(bytes) / 1048576.0, (double)held / 1048576.0);
        return NULL;
    }
    void *p = cpu_alloc(bytes); /* zeroed, aligned, huge pages when large */
    if (!p) {
        device_fail(d, "out of memory for %zu bytes", bytes);
        return NULL;
    }
    device_mem_hold(d, p, cpu_alloc_size(bytes)); /* the pages it zeroed */
    if (d->mem && d->mem->sizes)
        device_mem_log(d->mem, bytes);
    return p;
}

static void cpu_free(struct device *d, void *p)
{
    device_mem_drop(d, p);
    free(p);
}

static int cpu_copy(struct device *d, void *dst, const void *src, size_t bytes, int stream)
{
    if (dst != src)
        memcpy(dst, src, bytes);
    return 0;
}

static int cpu_event(struct device *d, int ev, int stream)
{
    return 0;
}

static int cpu_sync(struct device *d, int stream)
{
    return 0;
}

static int cpu_current(struct device *d)
{
    return 0;
}

static void *cpu_kernels_create(struct device *d)
{
    char err[200];
    struct cpu_ctx *x = cpu_ctx_create(err, sizeof(err));
    if (x && d->precision == PREC_BF16 && cpu_ctx_bf16(x, err, sizeof(err)) != 0) {
        cpu_ctx_destroy(x);
        x = NULL;
    }
    if (!x)
        device_fail(d, "%s", err);
    return x;
}

static int cpu_kernels_finish(struct device *d, void *k)
{
    char err[200];
    return cpu_ctx_finish(k, err, sizeof(err)) == 0 ? 0 : device_fail(d, "%s", err);
}

static void cpu_kernels_destroy(void *k)
{
    cpu_ctx_destroy(k);
}

static size_t cpu_workspace(const void *k)
{
    return 0;
}

static int cpu_loss_begin(struct model *m, const int32_t *labels, int n)
{
    if (labels)
        memcpy(m->labels, labels, sizeof(int32_t) * (size_t)n);
    m->loss_correct = 0;
    m->loss_value =
        softmax_xent_forward(m->probs, m->tensors[m->output].val, m->labels, n, m->classes, &m->loss_correct);
    return 0;
}

static int cpu_loss_end(struct model *m, float *loss, int *correct)
{
    *loss = m->loss_value;
    if (correct)
        *correct = m->loss_correct;
    return 0;
}

static int cpu_loss_backward(struct model *m, float scale)
{
    softmax_xent_backward(m->tensors[m->output].grad, m->probs, m->labels, m->batch, m->classes, scale);
    return 0;
}

static int cpu_sgd(struct model *m, float *buf, size_t lo, size_t hi, float lr, float momentum, float wd, float gscale)
{
    sgd_update_scaled(m->param_buf + lo, m->grad_buf + lo, buf + lo, hi - lo, lr, momentum, wd, gscale);
    return 0;
}

static int cpu_grads_finite(struct model *m, size_t lo, size_t hi, int *finite)
{
    int ok = 1;
    for (size_t i = lo; i < hi && ok; i++)
        ok = isfinite(m->grad_buf[i]);
    *finite = ok;
    return 0;
}

static int cpu_add(struct device *d, float *dst, const float *src, size_t n, int stream)
{
    cpu_copy_acc(dst, 1, src, (int64_t)n);
    return 0;
}

/* The CPU's calls, shared by both tables below. */
#define CPU_OPS                                                                                                        \
    .name = "cpu", .count = cpu_count, .open = cpu_open, .close = cpu_close, .make_current = cpu_current,              \
    .alloc = cpu_mem, .free = cpu_free, .alloc_host = cpu_mem, .free_host = cpu_free, .copy = cpu_copy,                \
    .record_event = cpu_event, .wait_event = cpu_event, .sync = cpu_sync, .kernels_create = cpu_kernels_create,        \
    .kernels_finish = cpu_kernels_finish, .kernels_destroy = cpu_kernels_destroy, .workspace_bytes = cpu_workspace,    \
    .loss_begin = cpu_loss_begin, .loss_end = cpu_loss_end, .loss_backward = cpu_loss_backward, .sgd_update = cpu_sgd, \
    .grads_finite = cpu_grads_finite, .add = cpu_add, .average_slices = NULL,                                          \
    .layers = {                                                                                                        \
        .linear = cpul_linear,                                                                                         \
        .conv2d = cpul_conv2d,                                                                                         \
        .relu = cpul_relu,                                                                                             \
        .relu6 = cpul_relu6,                                                                                           \
        .dropout = cpul_dropout,                                                                                       \
        .add = cpul_add,                                                                                               \
        .concat = cpul_concat,                                                                                         \
        .pad = cpul_pad,                                                                                               \
        .pool = cpul_pool,                                                                                             \
        .adapool = cpul_adapool,                                                                                       \
        .batchnorm = cpul_batchnorm,                                                                                   \
    }

const struct device_ops device_cpu = {CPU_OPS};

/* The same calls, taking the asynchronous device's path through the rank
 * loop (staging, prefetch, events, the split loss): tests run it against
 * device_cpu, where both must train bit for bit alike. */
const struct device_ops device_cpu_staged = {CPU_OPS, .async = 1};
