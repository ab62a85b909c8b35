/* probe.c - the SPSC ring behind span recording, the names of lanes,
 * categories and collectives used by every report, pane and trace, the
 * collectives' bus-bandwidth factors, the clock's shift for tests, and the
 * one nap of the loops that poll. */
#include "probe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int64_t probe_clock_shift_ns;

void probe_clock_init(void)
{
    /* (a test hook: never set outside tests/test_clocks.sh) */
    const char *shift = getenv("DDPTOP_TEST_CLOCK_SHIFT_NS");
    probe_clock_shift_ns = shift && shift[0] ? strtoll(shift, NULL, 10) : 0;
}

void probe_nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}

void probe_nap_ms(int ms)
{
    probe_nap_us(ms * 1000L);
}

/* Interned names: published by count (release) once written, never changed
 * after; a lookup by pointer first, as CUPTI hands out the same pointer for
 * a kernel every time. */
static const char *g_names[PROBE_NAMES];
static const char *g_name_ptrs[PROBE_NAMES];
static _Atomic unsigned g_nnames = 1;
static pthread_mutex_t g_names_mu = PTHREAD_MUTEX_INITIALIZER;

uint16_t probe_name_id(const char *name)
{
    if (!name)
        return 0;
    unsigned n = atomic_load_explicit(&g_nnames, memory_order_acquire);
    for (unsigned i = 1; i < n; i++)
        if (g_name_ptrs[i] == name)
            return (uint16_t)i;
    pthread_mutex_lock(&g_names_mu);
    n = atomic_load_explicit(&g_nnames, memory_order_relaxed);
    unsigned id = 0;
    for (unsigned i = 1; i < n && !id; i++)
        if (!strcmp(g_names[i], name))
            id = i;
    if (!id && n < PROBE_NAMES) {
        char *copy = strdup(name);
        if (copy) {
            id = n;
            g_names[id] = copy;
            g_name_ptrs[id] = name;
            atomic_store_explicit(&g_nnames, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_names_mu);
    return (uint16_t)id;
}

const char *probe_name(uint16_t id)
{
    return id > 0 && id < atomic_load_explicit(&g_nnames, memory_order_acquire) ? g_names[id] : NULL;
}

const char *lane_name(int lane)
{
    static const char *names[LANE_COUNT] = {"main", "comm", "data", "gpu"};
    return lane >= 0 && lane < LANE_COUNT ? names[lane] : "?";
}

const char *cat_name(int cat)
{
    static const char *names[CAT_COUNT] = {"data", "forward", "backward", "optimizer", "comm", "wait"};
    return cat >= 0 && cat < CAT_COUNT ? names[cat] : "?";
}

const char *coll_name(int kind)
{
    static const char *names[COLL_COUNT] = {"none",   "allreduce", "reduce_scatter", "allgather", "broadcast",
                                            "reduce", "gather",    "scatter",        "barrier"};
    return kind >= 0 && kind < COLL_COUNT ? names[kind] : "?";
}

double coll_busbw_factor(int kind, int n)
{
    if (n <= 1)
        return 0.0;
    switch (kind) {
    case COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER:
    case COLL_GATHER:
    case COLL_SCATTER:
        return (double)(n - 1) / n;
    case COLL_BROADCAST:
    case COLL_REDUCE:
        return 1.0;
    default:
        return 0.0;
    }
}

int spsc_init(struct spsc_ring *r, size_t elem_size, size_t capacity_pow2)
{
    if (capacity_pow2 == 0 || (capacity_pow2 & (capacity_pow2 - 1)) != 0)
        return -1;
    r->slots = calloc(capacity_pow2, elem_size);
    if (!r->slots)
        return -1;
    r->elem_size = elem_size;
    r->mask = capacity_pow2 - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->dropped, 0);
    return 0;
}

void spsc_free(struct spsc_ring *r)
{
    free(r->slots);
    r->slots = NULL;
}

int spsc_push(struct spsc_ring *r, const void *elem)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail > r->mask) {
        atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
        return 0;
    }
    memcpy(r->slots + (head & r->mask) * r->elem_size, elem, r->elem_size);
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return 1;
}

size_t spsc_pop(struct spsc_ring *r, void *out, size_t max)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t n = (size_t)(head - tail);
    if (n > max)
        n = max;
    for (size_t i = 0; i < n; i++)
        memcpy((unsigned char *)out + i * r->elem_size, r->slots + ((tail + i) & r->mask) * r->elem_size, r->elem_size);
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
    return n;
}

uint64_t spsc_dropped(struct spsc_ring *r)
{
    return atomic_load_explicit(&r->dropped, memory_order_relaxed);
}
