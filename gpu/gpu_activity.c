/* gpu_activity.c - CUPTI activity collection (see gpu_activity.h). */
#include "gpu_activity.h"

#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (4u << 20)
#define MAX_STREAMS 256

struct reg {
    uint32_t device, stream_id;
    int rank, role;
    struct spsc_ring *ring;
};

/* The external id a host phase pushes: its step and category. Records
 * carry the step they were launched in, never the step current when CUPTI
 * delivers them (a buffer can arrive hundreds of steps later). */
#define EXT_ID(step, cat) (((uint64_t)(step) << 8) | (uint64_t)((cat)&0xff))
#define EXT_STEP(id) ((uint32_t)((id) >> 8))
#define EXT_CAT(id) ((int)((id)&0xff))
#define RANK_SLOTS 1024

static struct reg g_regs[MAX_STREAMS];
static _Atomic int g_nregs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* CUPTI delivers buffers on its own thread and on whichever thread flushes:
 * one at a time, so that each rank's ring keeps a single producer */
static pthread_mutex_t g_deliver = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_offset_ns; /* probe clock - CUPTI clock */
static _Atomic int64_t g_overhead_ns;
static _Atomic uint64_t g_dropped;
static _Atomic uint64_t g_ncorr, g_nmatched, g_nunmatched; /* phase records, and compute records with and without */
static int g_users; /* runs holding collection (a second run starts before the first is freed) */
static int g_callbacks;
/* per rank: the step of its latest attributed record, for the records no
 * host phase covers (its comm lane's launches, the staging copies) */
static uint32_t g_rank_step[RANK_SLOTS];

/* correlation id -> external id (EXT_ID), filled from
 * EXTERNAL_CORRELATION records; a small direct-mapped table */
#define CORR_SLOTS 65536
static uint32_t g_corr_key[CORR_SLOTS];
static uint64_t g_corr_val[CORR_SLOTS];

static const char *cupti_err(CUptiResult r)
{
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static const struct reg *find(uint32_t device, uint32_t stream_id)
{
    int n = atomic_load(&g_nregs);
    for (int i = 0; i < n; i++)
        if (g_regs[i].device == device && g_regs[i].stream_id == stream_id)
            return &g_regs[i];
    return NULL;
}

/* One record as a span of r's rank: its category from the stream's role
 * (comm), else from the host phase that launched it (compute), else
 * `fallback`; its step from that phase, else the rank's latest. */
static void emit(const struct reg *r, uint32_t corr, uint64_t start, uint64_t end, int fallback, uint64_t bytes,
                 const char *name)
{
    if (start == 0 || end < start)
        return; /* an incomplete record (a forced flush): no interval to count */
    uint32_t k = corr % CORR_SLOTS, *last = &g_rank_step[(unsigned)r->rank % RANK_SLOTS];
    int cat = fallback;
    if (g_corr_key[k] == corr && g_corr_val[k]) {
        if (r->role == GPU_STREAM_COMPUTE)
            cat = EXT_CAT(g_corr_val[k]);
        if (EXT_STEP(g_corr_val[k]) > *last)
            *last = EXT_STEP(g_corr_val[k]);
        if (r->role == GPU_STREAM_COMPUTE)
            atomic_fetch_add_explicit(&g_nmatched, 1, memory_order_relaxed);
    } else if (r->role == GPU_STREAM_COMPUTE) {
        atomic_fetch_add_explicit(&g_nunmatched, 1, memory_order_relaxed);
    }
    if (r->role == GPU_STREAM_COMM)
        cat = CAT_COMM;
    struct span s = {.t0_ns = (int64_t)start + g_offset_ns,
                     .t1_ns = (int64_t)end + g_offset_ns,
                     .bytes = bytes,
                     .step = *last,
                     .tag = -1,
                     .lane = LANE_GPU,
                     .cat = (uint8_t)cat,
                     .name = probe_name_id(name)};
    if (!spsc_push(r->ring, &s))
        atomic_fetch_add(&g_dropped, 1);
}

static const char *memcpy_name(uint8_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return "Memcpy PtoP";
    default:
        return "Memcpy";
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    int64_t t0 = probe_now_ns();
    pthread_mutex_lock(&g_deliver);
    /* the phases first: a kernel's record can come before its launch's */
    CUpti_Activity *rec = NULL;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            CUpti_ActivityExternalCorrelation *e = (CUpti_ActivityExternalCorrelation *)rec;
            uint32_t k = e->correlationId % CORR_SLOTS;
            g_corr_key[k] = e->correlationId;
            g_corr_val[k] = e->externalId;
            atomic_fetch_add_explicit(&g_ncorr, 1, memory_order_relaxed);
        }
    rec = NULL;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
            const struct reg *r = find(k->deviceId, k->streamId);
            if (r)
                emit(r, k->correlationId, k->start, k->end, CAT_FORWARD, 0, k->name);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            /* a copy is data unless a phase launched it (or the comm stream) */
            if (r)
                emit(r, m->correlationId, m->start, m->end, CAT_DATA, m->bytes, memcpy_name(m->copyKind));
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            if (r)
                emit(r, m->correlationId, m->start, m->end, CAT_FORWARD, 0, "Memset");
            break;
        }
        default:
            break;
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&g_dropped, dropped);
    pthread_mutex_unlock(&g_deliver);
    free(buffer);
    atomic_fetch_add(&g_overhead_ns, probe_now_ns() - t0);
}

/* CUPTI writes an external-correlation record beside each API record, so
 * the runtime's and the driver's API records must be on for the phases to
 * reach the kernels (cuDNN and cuBLAS launch through the driver); their
 * own records are dropped on arrival. */
static const CUpti_ActivityKind g_all_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
#define NKINDS (sizeof(g_all_kinds) / sizeof(g_all_kinds[0]))
/* the kinds enabled: all of them, unless DDPTOP_CUPTI_KINDS names a subset
 * (kernel, serial-kernel, memcpy, memset, corr, runtime, driver; for
 * measuring what each costs: without corr and the API kinds, compute
 * records all count as forward) */
static CUpti_ActivityKind g_kinds[NKINDS];
static size_t g_nkinds;

static void pick_kinds(void)
{
    const char *env = getenv("DDPTOP_CUPTI_KINDS");
    g_nkinds = 0;
    if (!env || !*env) {
        memcpy(g_kinds, g_all_kinds, sizeof(g_all_kinds));
        g_nkinds = NKINDS;
        return;
    }
    static const struct {
        const char *name;
        CUpti_ActivityKind kind;
    } names[] = {{"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
                 {"serial-kernel", CUPTI_ACTIVITY_KIND_KERNEL},
                 {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
                 {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
                 {"corr", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION},
                 {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
                 {"driver", CUPTI_ACTIVITY_KIND_DRIVER}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && g_nkinds < NKINDS; i++) {
        const char *p = strstr(env, names[i].name);
        size_t n = strlen(names[i].name);
        /* whole words only: "kernel" is not found in "serial-kernel" */
        while (p && ((p > env && p[-1] != ',') || (p[n] && p[n] != ',')))
            p = strstr(p + 1, names[i].name);
        if (p)
            g_kinds[g_nkinds++] = names[i].kind;
    }
}

int gpu_activity_start(char *err, size_t errlen)
{
    pthread_mutex_lock(&g_mu);
    if (g_users > 0) {
        g_users++;
        pthread_mutex_unlock(&g_mu);
        return 0;
    }
    CUptiResult r = CUPTI_SUCCESS;
    pick_kinds();
    if (!g_callbacks && (r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) == CUPTI_SUCCESS)
        g_callbacks = 1;
    for (size_t i = 0; r == CUPTI_SUCCESS && i < g_nkinds; i++)
        r = cuptiActivityEnable(g_kinds[i]);
    uint64_t ts = 0;
    if (r == CUPTI_SUCCESS)
        r = cuptiGetTimestamp(&ts);
    if (r != CUPTI_SUCCESS) {
        snprintf(err, errlen, "CUPTI: %s; no device timelines", cupti_err(r));
        pthread_mutex_unlock(&g_mu);
        return -1;
    }
    g_offset_ns = probe_now_ns() - (int64_t)ts;
    memset(g_rank_step, 0, sizeof(g_rank_step));
    g_users = 1;
    pthread_mutex_unlock(&g_mu);
    return 0;
}

int gpu_activity_register(void *cuda_stream, int device, int rank, int role, struct spsc_ring *ring)
{
    uint32_t id = 0;
    if (cuptiGetStreamIdEx(NULL, (CUstream)cuda_stream, 0, &id) != CUPTI_SUCCESS)
        return -1;
    pthread_mutex_lock(&g_mu);
    int n = atomic_load(&g_nregs);
    if (n >= MAX_STREAMS) {
        pthread_mutex_unlock(&g_mu);
        return -1;
    }
    g_regs[n] = (struct reg){(uint32_t)device, id, rank, role, ring};
    atomic_store(&g_nregs, n + 1);
    pthread_mutex_unlock(&g_mu);
    return 0;
}

void gpu_activity_phase_push(int cat, uint32_t step)
{
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, EXT_ID(step, cat));
}

void gpu_activity_phase_pop(void)
{
    uint64_t id;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

void gpu_activity_flush(void)
{
    /* 0: every buffer whose records have all completed, full or not */
    pthread_mutex_lock(&g_mu);
    int on = g_users > 0;
    pthread_mutex_unlock(&g_mu);
    if (on)
        cuptiActivityFlushAll(0);
}

void gpu_activity_release(struct spsc_ring *ring)
{
    /* no delivery is under way while the entries go: none can reach the
     * ring once this returns */
    pthread_mutex_lock(&g_deliver);
    pthread_mutex_lock(&g_mu);
    int n = atomic_load(&g_nregs), k = 0;
    for (int i = 0; i < n; i++)
        if (g_regs[i].ring != ring)
            g_regs[k++] = g_regs[i];
    atomic_store(&g_nregs, k);
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_deliver);
}

void gpu_activity_stop(void)
{
    pthread_mutex_lock(&g_mu);
    int last = g_users == 1;
    if (g_users > 0)
        g_users--;
    pthread_mutex_unlock(&g_mu);
    if (!last)
        return;
    cuptiActivityFlushAll(1);
    for (size_t i = 0; i < g_nkinds; i++)
        cuptiActivityDisable(g_kinds[i]);
    atomic_store(&g_nregs, 0);
}

int64_t gpu_activity_overhead_ns(void)
{
    return atomic_load(&g_overhead_ns);
}

void gpu_activity_counts(uint64_t *phases, uint64_t *matched, uint64_t *unmatched)
{
    *phases = atomic_load(&g_ncorr);
    *matched = atomic_load(&g_nmatched);
    *unmatched = atomic_load(&g_nunmatched);
}

uint64_t gpu_activity_dropped(void)
{
    return atomic_load(&g_dropped);
}
