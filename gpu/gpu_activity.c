/* gpu_activity.c - CUPTI activity collection (see gpu_activity.h).
 *
 * Attribution. A rank marks each host phase on its compute stream with a
 * tiny memset (device_cuda.h: GPU_MARK_*): its value names the phase, its
 * length the step. A stream runs its work in order, so every record of the
 * rank that starts after mark M and before the next belongs to M's step
 * (and, on the compute stream, to M's phase). CUPTI delivers records late
 * and out of order across buffers (hundreds of milliseconds apart), so a
 * record waits until a mark later than its start has arrived: then the
 * latest mark before it is final. This needs no API records (whose cost
 * doubles CUPTI's on small kernels) and no correlation ids.
 *
 * A mark carries its step modulo GPU_MARK_STEPS: it is taken as the step
 * nearest the rank's latest mark, or, for a mark after a sampled run's
 * window opened, nearest the step the window opened at (windows may be
 * more than GPU_MARK_STEPS steps apart).
 *
 * DDPTOP_CUPTI_DETACH=1 (a measuring knob, bench/cupti_cost.sh): between a
 * sampled run's windows CUPTI leaves the process (cuptiFinalize) instead
 * of only turning its kinds off, and comes back for the next window (its
 * callbacks registered again, the streams' ids asked again): whether an
 * attached CUPTI is what costs in the steps it does not trace. It leaves
 * at the exit of a CUDA runtime call, as cuptiFinalize asks when other
 * threads may be inside CUDA: a callback subscribed for that alone.
 */
#include "gpu_activity.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda.h"

#define BUF_BYTES (4u << 20)
#define MAX_STREAMS 256
#define MAX_RANKS 1024
#define MARKS 256           /* marks kept per rank: several steps' worth */
#define WAIT_MAX (1u << 20) /* records a rank may hold for a mark: past it they go as they are */

struct mark {
    int64_t t; /* start, CUPTI clock */
    uint32_t step;
    uint8_t cat;
};

/* A record waiting for a mark after it. */
struct waiting {
    struct span s;   /* on the probe clock; cat is the record's own guess */
    int64_t start;   /* its start on CUPTI's clock, which the marks are on */
    uint8_t compute; /* from the compute stream: takes the mark's phase */
};

/* What a rank's records need while they are being attributed (touched by
 * the delivering thread alone, under g_deliver). */
struct rank_state {
    struct spsc_ring *ring;
    /* the rank's last two windows (sampled runs): where each opened, CUPTI
     * clock (0: none), and at which step; [0] the newer */
    int64_t win_t[2];
    uint32_t win_step[2];
    struct mark marks[MARKS]; /* ring by arrival; marks[(n - 1) % MARKS] the newest in time */
    uint64_t nmarks;
    int64_t newest_mark; /* start of the latest mark in time */
    struct waiting *wait;
    size_t nwait, cap_wait;
};

struct reg {
    uint32_t device, stream_id;
    int role;
    struct rank_state *rs;
    void *stream; /* the CUDA stream, whose id is asked again after a detach */
};

static struct reg g_regs[MAX_STREAMS];
static _Atomic int g_nregs;
static struct rank_state *g_ranks[MAX_RANKS]; /* by ring: a later run's rank 0 is another */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* CUPTI delivers buffers on its own thread and on whichever thread flushes:
 * one at a time, so that each rank's ring keeps a single producer */
static pthread_mutex_t g_deliver = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int64_t g_offset_ns; /* probe clock - CUPTI clock (measured again when CUPTI comes back) */
static _Atomic int64_t g_overhead_ns;
static _Atomic uint64_t g_dropped;
static _Atomic uint64_t g_nmarks, g_nmatched, g_nunmatched;
static int g_users;    /* runs holding collection (a second run starts before the first is freed) */
static int g_full;     /* of them, runs that trace every step */
static int g_windows;  /* ranks of sampled runs inside a traced window */
static int g_enabled;  /* the activity kinds are on */
static int g_marks_on; /* memset records are collected: phase marks can arrive */
static int g_callbacks;
/* DDPTOP_CUPTI_DETACH: attaching and detaching one at a time (never under
 * g_mu: a detach flushes, and delivery takes g_deliver) */
static pthread_mutex_t g_attach = PTHREAD_MUTEX_INITIALIZER;
static int g_detach;   /* between windows, CUPTI leaves the process */
static int g_detached; /* it has (under g_mu) */
/* a detach under way: asked of the next runtime call's exit, done once
 * cuptiFinalize has returned there (its result in g_finalized) */
static _Atomic int g_detach_asked, g_detach_done, g_finalized;

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

static void push(struct rank_state *rs, const struct span *s)
{
    if (!spsc_push(rs->ring, s))
        atomic_fetch_add(&g_dropped, 1);
}

/* The latest mark that starts at or before t (CUPTI clock), or NULL. */
static const struct mark *mark_before(const struct rank_state *rs, int64_t t)
{
    uint64_t n = rs->nmarks < MARKS ? rs->nmarks : MARKS;
    const struct mark *best = NULL;
    for (uint64_t i = 0; i < n; i++) {
        const struct mark *m = &rs->marks[(rs->nmarks - 1 - i) % MARKS];
        if (m->t <= t && (!best || m->t > best->t))
            best = m;
    }
    return best;
}

/* w's step and phase from the marks, and out to the ring. */
static void settle(struct rank_state *rs, struct waiting *w)
{
    const struct mark *m = mark_before(rs, w->start);
    if (m) {
        w->s.step = m->step;
        if (w->compute) {
            w->s.cat = m->cat;
            atomic_fetch_add_explicit(&g_nmatched, 1, memory_order_relaxed);
        }
    } else if (w->compute) {
        atomic_fetch_add_explicit(&g_nunmatched, 1, memory_order_relaxed); /* set-up work before any step */
    }
    push(rs, &w->s);
}

/* Every waiting record that starts before the newest mark is final now
 * (all of them when `all`: nothing more will come). */
static void settle_waiting(struct rank_state *rs, int all)
{
    size_t keep = 0;
    for (size_t i = 0; i < rs->nwait; i++) {
        struct waiting *w = &rs->wait[i];
        if (all || w->start < rs->newest_mark)
            settle(rs, w);
        else
            rs->wait[keep++] = *w;
    }
    rs->nwait = keep;
}

/* A mark: its step is the one nearest the rank's latest with that
 * remainder (the device runs at most a few steps behind the host). */
static void add_mark(struct rank_state *rs, int64_t t, uint64_t bytes, uint32_t value)
{
    uint32_t v = (uint32_t)(bytes - 1) % GPU_MARK_STEPS;
    uint32_t last = rs->nmarks ? rs->marks[(rs->nmarks - 1) % MARKS].step : 0;
    for (int k = 0; k < 2; k++)
        if (rs->win_t[k] && t >= rs->win_t[k]) {
            last = rs->win_step[k]; /* (a window's marks lie a few steps after its first) */
            break;
        }
    int64_t step = (int64_t)last - (int64_t)(last % GPU_MARK_STEPS) + v;
    if (step < (int64_t)last - GPU_MARK_STEPS / 2)
        step += GPU_MARK_STEPS;
    else if (step > (int64_t)last + GPU_MARK_STEPS / 2 && step >= GPU_MARK_STEPS)
        step -= GPU_MARK_STEPS;
    rs->marks[rs->nmarks++ % MARKS] = (struct mark){t, (uint32_t)step, (uint8_t)(value & 0x7)};
    if (t > rs->newest_mark)
        rs->newest_mark = t;
    atomic_fetch_add_explicit(&g_nmarks, 1, memory_order_relaxed);
    settle_waiting(rs, 0);
}

/* One record of r's rank: waits for a mark after it, unless one is here. */
static void record(const struct reg *r, uint64_t start, uint64_t end, int cat, uint64_t bytes, const char *name)
{
    if (start == 0 || end < start)
        return; /* an incomplete record (a forced flush): no interval to count */
    struct rank_state *rs = r->rs;
    int64_t off = atomic_load(&g_offset_ns);
    struct waiting w = {.s = {.t0_ns = (int64_t)start + off,
                              .t1_ns = (int64_t)end + off,
                              .bytes = bytes,
                              .tag = -1,
                              .lane = LANE_GPU,
                              .cat = (uint8_t)(r->role == GPU_STREAM_COMM ? CAT_COMM : cat),
                              .name = probe_name_id(name)},
                        .start = (int64_t)start,
                        .compute = r->role == GPU_STREAM_COMPUTE};
    if ((int64_t)start < rs->newest_mark || !g_marks_on) {
        settle(rs, &w); /* (no marks will come: DDPTOP_CUPTI_KINDS without memset) */
        return;
    }
    if (rs->nwait >= WAIT_MAX)
        settle_waiting(rs, 1); /* marks stopped coming: memory stays bounded */
    if (rs->nwait == rs->cap_wait) {
        size_t nc = rs->cap_wait ? rs->cap_wait * 2 : 1024;
        struct waiting *p = realloc(rs->wait, nc * sizeof(*p));
        if (!p) {
            settle(rs, &w);
            return;
        }
        rs->wait = p;
        rs->cap_wait = nc;
    }
    rs->wait[rs->nwait++] = w;
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
    CUpti_Activity *rec = NULL;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
            const struct reg *r = find(k->deviceId, k->streamId);
            if (r)
                record(r, k->start, k->end, CAT_FORWARD, 0, k->name);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            /* a copy is data, unless a phase's work (or the comm stream's) */
            CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            if (r)
                record(r, m->start, m->end, r->role == GPU_STREAM_COMPUTE ? CAT_FORWARD : CAT_DATA, m->bytes,
                       memcpy_name(m->copyKind));
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
            const struct reg *r = find(m->deviceId, m->streamId);
            if (!r)
                break;
            if (r->role == GPU_STREAM_COMPUTE && GPU_MARK_IS(m->value) && m->bytes <= GPU_MARK_STEPS && m->start > 0)
                add_mark(r->rs, (int64_t)m->start, m->bytes, m->value);
            else
                record(r, m->start, m->end, CAT_FORWARD, m->bytes, "Memset");
            break;
        }
        default:
            break; /* API records, when asked for (DDPTOP_CUPTI_KINDS): only their cost was wanted */
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&g_dropped, dropped);
    pthread_mutex_unlock(&g_deliver);
    free(buffer);
    atomic_fetch_add(&g_overhead_ns, probe_now_ns() - t0);
}

static const CUpti_ActivityKind g_all_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                 CUPTI_ACTIVITY_KIND_MEMSET};
#define NKINDS 8
/* the kinds enabled: these three, unless DDPTOP_CUPTI_KINDS names others
 * (kernel, serial-kernel, memcpy, memset, runtime, driver, corr), for
 * measuring what each costs (bench/cupti_cost.sh) */
static CUpti_ActivityKind g_kinds[NKINDS];
static size_t g_nkinds;

static void pick_kinds(void)
{
    const char *env = getenv("DDPTOP_CUPTI_KINDS");
    g_nkinds = 0;
    if (!env || !*env) {
        memcpy(g_kinds, g_all_kinds, sizeof(g_all_kinds));
        g_nkinds = sizeof(g_all_kinds) / sizeof(g_all_kinds[0]);
        return;
    }
    static const struct {
        const char *name;
        CUpti_ActivityKind kind;
    } names[] = {{"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
                 {"serial-kernel", CUPTI_ACTIVITY_KIND_KERNEL},
                 {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
                 {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
                 {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
                 {"driver", CUPTI_ACTIVITY_KIND_DRIVER},
                 {"corr", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}};
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

/* The kinds on while a run traces every step or a rank is inside a
 * window, off otherwise (under g_mu). */
static CUptiResult apply_enabled(void)
{
    int want = g_full > 0 || g_windows > 0;
    CUptiResult r = CUPTI_SUCCESS;
    if (want == g_enabled)
        return r;
    if (want && g_detached) {
        /* back after a detach: the callbacks, the streams' ids (CUPTI
         * numbers them anew) and the clocks' offset again */
        if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
            return r;
        g_callbacks = 1;
        int n = atomic_load(&g_nregs);
        for (int i = 0; i < n; i++) {
            uint32_t id = 0;
            if (cuptiGetStreamIdEx(NULL, (CUstream)g_regs[i].stream, 0, &id) == CUPTI_SUCCESS)
                g_regs[i].stream_id = id;
        }
        uint64_t ts = 0;
        if (cuptiGetTimestamp(&ts) == CUPTI_SUCCESS)
            g_offset_ns = probe_now_ns() - (int64_t)ts;
        g_detached = 0;
    }
    for (size_t i = 0; i < g_nkinds; i++) {
        CUptiResult k = want ? cuptiActivityEnable(g_kinds[i]) : cuptiActivityDisable(g_kinds[i]);
        if (k != CUPTI_SUCCESS && r == CUPTI_SUCCESS)
            r = k;
    }
    g_enabled = want;
    return r;
}

int gpu_activity_start(int sampled, char *err, size_t errlen)
{
    pthread_mutex_lock(&g_attach); /* (no CUPTI call while it leaves) */
    pthread_mutex_lock(&g_mu);
    if (g_users > 0) {
        g_users++;
        g_full += !sampled;
        apply_enabled();
        pthread_mutex_unlock(&g_mu);
        pthread_mutex_unlock(&g_attach);
        return 0;
    }
    CUptiResult r = CUPTI_SUCCESS;
    pick_kinds();
    const char *det = getenv("DDPTOP_CUPTI_DETACH");
    g_detach = sampled && det && det[0] == '1';
    g_detached = 0; /* (the callbacks are registered below, attaching it) */
    g_marks_on = 0;
    for (size_t i = 0; i < g_nkinds; i++)
        g_marks_on |= g_kinds[i] == CUPTI_ACTIVITY_KIND_MEMSET;
    if (!g_callbacks && (r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) == CUPTI_SUCCESS)
        g_callbacks = 1;
    /* a sampled run checks here that its kinds can be enabled at all */
    for (size_t i = 0; r == CUPTI_SUCCESS && i < g_nkinds; i++)
        r = cuptiActivityEnable(g_kinds[i]);
    g_enabled = 1;
    g_full = !sampled;
    g_windows = 0;
    uint64_t ts = 0;
    if (r == CUPTI_SUCCESS)
        r = apply_enabled();
    if (r == CUPTI_SUCCESS)
        r = cuptiGetTimestamp(&ts);
    if (r != CUPTI_SUCCESS) {
        snprintf(err, errlen, "CUPTI: %s; no device timelines", cupti_err(r));
        g_full = 0;
        apply_enabled();
        pthread_mutex_unlock(&g_mu);
        pthread_mutex_unlock(&g_attach);
        return -1;
    }
    g_offset_ns = probe_now_ns() - (int64_t)ts;
    g_users = 1;
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_attach);
    return 0;
}

/* At the exit of a runtime call, on whichever thread made it, once a
 * detach is asked: CUPTI leaves the process there. */
static void CUPTIAPI detach_at_exit(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void *data)
{
    (void)userdata;
    (void)cbid;
    const CUpti_CallbackData *cb = data;
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cb->callbackSite != CUPTI_API_EXIT ||
        !atomic_exchange(&g_detach_asked, 0))
        return;
    atomic_store(&g_finalized, cuptiFinalize() == CUPTI_SUCCESS);
    atomic_store(&g_detach_done, 1);
}

/* CUPTI leaves the process (g_attach held, g_mu not): 0, or -1 where this
 * CUPTI cannot (another subscriber holds its callbacks: nsys, ncu). */
static int detach_cupti(void)
{
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, detach_at_exit, NULL) != CUPTI_SUCCESS)
        return -1;
    atomic_store(&g_detach_done, 0);
    atomic_store(&g_finalized, 0);
    atomic_store(&g_detach_asked, 1);
    if (cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
        atomic_store(&g_detach_asked, 0);
        cuptiUnsubscribe(sub);
        return -1;
    }
    /* a call of our own, so that an exit comes now (another thread's may
     * come first: then wait for it to finish) */
    int dev = 0;
    (void)cudaGetDevice(&dev);
    int64_t t0 = probe_now_ns();
    while (!atomic_load(&g_detach_done)) {
        /* no exit came in a second (no callback for that call here): taken
         * back, unless a callback has taken it meanwhile */
        if (probe_now_ns() - t0 > 1000000000LL && atomic_exchange(&g_detach_asked, 0)) {
            cuptiUnsubscribe(sub);
            return -1;
        }
        sched_yield();
    }
    if (atomic_load(&g_finalized))
        return 0; /* (the subscriber went with the rest of CUPTI) */
    cuptiUnsubscribe(sub);
    return -1;
}

void gpu_activity_window(struct spsc_ring *ring, int on, uint32_t step)
{
    pthread_mutex_lock(&g_attach);
    pthread_mutex_lock(&g_mu);
    int was = g_enabled;
    if (g_users > 0) {
        g_windows += on ? 1 : g_windows > 0 ? -1 : 0;
        apply_enabled(); /* (a failed switch: the window gets no records, and the run goes on) */
    }
    int detach = g_detach && g_users > 0 && !g_enabled && !g_detached, turned_on = !was && g_enabled;
    /* (attached again above, when it had left; 1 ms early: the clocks'
     * offset is not exact, and no mark of an earlier window is that near) */
    int64_t now = probe_now_ns() - g_offset_ns - 1000000;
    pthread_mutex_unlock(&g_mu);
    if (on) {
        /* the window's marks are read against its first step; when this
         * window turns the kinds on, every rank's records come from now,
         * before the others open theirs at about the same step */
        pthread_mutex_lock(&g_deliver);
        for (int r = 0; r < MAX_RANKS; r++)
            if (g_ranks[r] && (g_ranks[r]->ring == ring || turned_on)) {
                struct rank_state *rs = g_ranks[r];
                rs->win_t[1] = rs->win_t[0];
                rs->win_step[1] = rs->win_step[0];
                rs->win_t[0] = now;
                rs->win_step[0] = step;
            }
        pthread_mutex_unlock(&g_deliver);
    }
    if (detach) {
        /* the last window closed: its records out, then CUPTI leaves */
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        int left = detach_cupti() == 0;
        pthread_mutex_lock(&g_mu);
        if (left) {
            g_detached = 1;
            g_callbacks = 0;
        } else {
            g_detach = 0; /* (not on this CUPTI: the kinds stay merely off) */
        }
        pthread_mutex_unlock(&g_mu);
    }
    pthread_mutex_unlock(&g_attach);
}

int gpu_activity_register(void *cuda_stream, int device, int rank, int role, struct spsc_ring *ring)
{
    (void)rank; /* the ring is the rank */
    uint32_t id = 0;
    pthread_mutex_lock(&g_attach); /* (no CUPTI call while it leaves) */
    CUptiResult q = cuptiGetStreamIdEx(NULL, (CUstream)cuda_stream, 0, &id);
    pthread_mutex_unlock(&g_attach);
    if (q != CUPTI_SUCCESS)
        return -1;
    pthread_mutex_lock(&g_deliver); /* g_ranks is walked by final flushes */
    pthread_mutex_lock(&g_mu);
    int n = atomic_load(&g_nregs);
    if (n >= MAX_STREAMS) {
        pthread_mutex_unlock(&g_mu);
        pthread_mutex_unlock(&g_deliver);
        return -1;
    }
    /* the ring's state (one per rank of a run), made before its streams can be found */
    struct rank_state *rs = NULL;
    int free_slot = -1;
    for (int i = 0; i < MAX_RANKS && !rs; i++) {
        if (g_ranks[i] && g_ranks[i]->ring == ring)
            rs = g_ranks[i];
        else if (!g_ranks[i] && free_slot < 0)
            free_slot = i;
    }
    if (!rs && free_slot >= 0 && (rs = calloc(1, sizeof(*rs)))) {
        rs->ring = ring;
        g_ranks[free_slot] = rs;
    }
    if (rs) {
        g_regs[n] = (struct reg){(uint32_t)device, id, role, rs, cuda_stream};
        atomic_store(&g_nregs, n + 1);
    }
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_deliver);
    return rs ? 0 : -1;
}

void gpu_activity_flush(int final)
{
    /* never while CUPTI leaves or comes back (a flush then could run into
     * cuptiFinalize, or attach it again behind g_detached): a poll skips,
     * the last flush waits */
    if (final)
        pthread_mutex_lock(&g_attach);
    else if (pthread_mutex_trylock(&g_attach) != 0)
        return;
    pthread_mutex_lock(&g_mu);
    int users = g_users > 0, on = users && !g_detached; /* (any CUPTI call attaches it again) */
    pthread_mutex_unlock(&g_mu);
    /* 0: every buffer whose records have all completed, full or not */
    if (on)
        cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    if (final && users) {
        /* the device is idle: a record still waiting has no mark after it
         * (the last phase's work) and never will; nor will one delivered
         * when CUPTI left */
        pthread_mutex_lock(&g_deliver);
        for (int r = 0; r < MAX_RANKS; r++)
            if (g_ranks[r])
                settle_waiting(g_ranks[r], 1);
        pthread_mutex_unlock(&g_deliver);
    }
    pthread_mutex_unlock(&g_attach);
}

void gpu_activity_release(struct spsc_ring *ring)
{
    /* no delivery is under way while the entries go: none can reach the
     * ring once this returns */
    pthread_mutex_lock(&g_deliver);
    pthread_mutex_lock(&g_mu);
    int n = atomic_load(&g_nregs), k = 0;
    for (int i = 0; i < n; i++)
        if (g_regs[i].rs->ring != ring)
            g_regs[k++] = g_regs[i];
    atomic_store(&g_nregs, k);
    for (int r = 0; r < MAX_RANKS; r++)
        if (g_ranks[r] && g_ranks[r]->ring == ring) {
            free(g_ranks[r]->wait);
            free(g_ranks[r]);
            g_ranks[r] = NULL;
        }
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_deliver);
}

void gpu_activity_stop(int sampled)
{
    pthread_mutex_lock(&g_attach); /* (no CUPTI call while it leaves) */
    pthread_mutex_lock(&g_mu);
    int last = g_users == 1;
    if (g_users > 0) {
        g_users--;
        g_full -= !sampled && g_full > 0;
    }
    if (last)
        g_full = g_windows = 0;
    apply_enabled();
    int detached = g_detached; /* (flushed when it left; a flush would attach it again) */
    pthread_mutex_unlock(&g_mu);
    if (last) {
        if (!detached)
            cuptiActivityFlushAll(1);
        atomic_store(&g_nregs, 0);
    }
    pthread_mutex_unlock(&g_attach);
}

int64_t gpu_activity_overhead_ns(void)
{
    return atomic_load(&g_overhead_ns);
}

void gpu_activity_counts(uint64_t *marks, uint64_t *matched, uint64_t *unmatched)
{
    *marks = atomic_load(&g_nmarks);
    *matched = atomic_load(&g_nmatched);
    *unmatched = atomic_load(&g_nunmatched);
}

uint64_t gpu_activity_dropped(void)
{
    return atomic_load(&g_dropped);
}
