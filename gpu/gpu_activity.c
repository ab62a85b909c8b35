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
    const _Atomic uint32_t *step;
};

static struct reg g_regs[MAX_STREAMS];
static _Atomic int g_nregs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* CUPTI delivers buffers on its own thread and on whichever thread flushes:
 * one at a time, so that each rank's ring keeps a single producer */
static pthread_mutex_t g_deliver = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_offset_ns; /* probe clock - CUPTI clock */
static _Atomic int64_t g_overhead_ns;
static _Atomic uint64_t g_dropped;
static int g_started;

/* correlation id -> external id (rank << 8 | cat), filled from
 * EXTERNAL_CORRELATION records; a small direct-mapped table */
#define CORR_SLOTS 65536
static uint32_t g_corr_key[CORR_SLOTS];
static uint32_t g_corr_val[CORR_SLOTS];

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

static void emit(const struct reg *r, uint64_t start, uint64_t end, int cat, uint64_t bytes)
{
    if (start == 0 || end < start)
        return; /* an incomplete record (a forced flush): no interval to count */
    uint32_t step = r->step ? atomic_load_explicit(r->step, memory_order_relaxed) : 0;
    if (!probe_span(r->ring, LANE_GPU, cat, step, -1, (int64_t)start + g_offset_ns, (int64_t)end + g_offset_ns,
                    &(struct span_coll){.bytes = bytes}))
        atomic_fetch_add(&g_dropped, 1);
}

static int compute_cat(uint32_t corr)
{
    uint32_t k = corr % CORR_SLOTS;
    if (g_corr_key[k] == corr && g_corr_val[k])
        return (int)(g_corr_val[k] & 0xff);
    return CAT_FORWARD;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    int64_t t0 = probe_now_ns();
    pthread_mutex_lock(&g_deliver);
    CUpti_Activity *rec = NULL;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            CUpti_ActivityExternalCorrelation *e = (CUpti_ActivityExternalCorrelation *)rec;
            uint32_t k = e->correlationId % CORR_SLOTS;
            g_corr_key[k] = e->correlationId;
            g_corr_val[k] = (uint32_t)e->externalId;
            break;
        }
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
            const struct reg *r = find(k->deviceId, k->streamId);
            if (r)
                emit(r, k->start, k->end, r->role == GPU_STREAM_COMM ? CAT_COMM : compute_cat(k->correlationId), 0);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            if (r)
                emit(r, m->start, m->end, r->role == GPU_STREAM_COMM ? CAT_COMM : CAT_DATA, m->bytes);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            if (r)
                emit(r, m->start, m->end, r->role == GPU_STREAM_COMM ? CAT_COMM : compute_cat(m->correlationId), 0);
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

int gpu_activity_start(char *err, size_t errlen)
{
    pthread_mutex_lock(&g_mu);
    if (g_started) {
        pthread_mutex_unlock(&g_mu);
        return 0;
    }
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        r = cuptiActivityEnable(kinds[i]);
    uint64_t ts = 0;
    if (r == CUPTI_SUCCESS)
        r = cuptiGetTimestamp(&ts);
    if (r != CUPTI_SUCCESS) {
        snprintf(err, errlen, "CUPTI: %s; no device timelines", cupti_err(r));
        pthread_mutex_unlock(&g_mu);
        return -1;
    }
    g_offset_ns = probe_now_ns() - (int64_t)ts;
    g_started = 1;
    pthread_mutex_unlock(&g_mu);
    return 0;
}

int gpu_activity_register(void *cuda_stream, int device, int rank, int role, struct spsc_ring *ring,
                          const _Atomic uint32_t *step)
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
    g_regs[n] = (struct reg){(uint32_t)device, id, rank, role, ring, step};
    atomic_store(&g_nregs, n + 1);
    pthread_mutex_unlock(&g_mu);
    return 0;
}

void gpu_activity_phase_push(int rank, int cat)
{
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                           ((uint64_t)(uint32_t)rank << 8) | (uint64_t)(cat & 0xff));
}

void gpu_activity_phase_pop(void)
{
    uint64_t id;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

void gpu_activity_flush(void)
{
    /* 0: every buffer whose records have all completed, full or not */
    if (g_started)
        cuptiActivityFlushAll(0);
}

void gpu_activity_stop(void)
{
    if (!g_started)
        return;
    cuptiActivityFlushAll(1);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    g_started = 0;
    atomic_store(&g_nregs, 0);
}

int64_t gpu_activity_overhead_ns(void)
{
    return atomic_load(&g_overhead_ns);
}

uint64_t gpu_activity_dropped(void)
{
    return atomic_load(&g_dropped);
}
