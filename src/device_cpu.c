/* device_cpu.c - the CPU device: memory is host memory, copies are memcpy,
 * streams are in order and events are no-ops. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "device.h"

static int cpu_count(void)
{
    return 1;
}

static int cpu_open(struct device *d, int index, char *err, size_t errlen)
{
    d->index = index;
    snprintf(d->name, sizeof(d->name), "cpu");
    return 0;
}

static void cpu_close(struct device *d)
{
}

static void *cpu_alloc(struct device *d, size_t bytes)
{
    size_t n = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, n ? n : 64);
}

static void cpu_free(struct device *d, void *p)
{
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

/* The CPU's calls, shared by both tables below. */
#define CPU_OPS                                                                                                        \
    .name = "cpu", .count = cpu_count, .open = cpu_open, .close = cpu_close, .alloc = cpu_alloc, .free = cpu_free,     \
    .alloc_host = cpu_alloc, .free_host = cpu_free, .copy_h2d = cpu_copy, .copy_d2h = cpu_copy, .copy_d2d = cpu_copy,  \
    .make_current = cpu_current, .record_event = cpu_event, .wait_event = cpu_event, .sync = cpu_sync

const struct device_ops device_cpu = {CPU_OPS};

/* The same calls, taking the asynchronous device's path through the rank
 * loop (staging, prefetch, events, the split loss): tests run it against
 * device_cpu, where both must train bit for bit alike. */
const struct device_ops device_cpu_staged = {CPU_OPS, .async = 1};
