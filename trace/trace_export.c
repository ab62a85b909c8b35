/* trace_export.c - spans and step records to Chrome trace events: process
 * and thread names, filters, collective matching by sequence number,
 * DDP bucket flows and per-step counters (see trace_export.h). */
#include "trace_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_writer.h"

#define STEP_ACC 64     /* steps per rank whose counters can be open at once */
#define READY_SLOTS 256 /* bucket-ready markers remembered per rank */
#define FLOW_CAT "ddp_bucket"

struct coll_pend {
    uint32_t seq;
    int used;
    int count; /* ranks whose span arrived */
};

struct step_acc {
    uint32_t step;
    int used;
    uint64_t tx, rx;
    double bus_bytes; /* S x busbw factor, summed */
    int64_t coll_ns;  /* own time in collectives */
};

struct ready_mark {
    int16_t tag;
    uint32_t step;
    int64_t ts_ns;
};

struct trace_export {
    struct trace_export_opts o;
    int nfiles;
    struct trace_writer **w; /* [nfiles]; NULL for a rank left out (split) */
    int64_t last_flush_ns;
    /* collectives by seq % TRACE_EXPORT_SLOTS; per slot `world` entries */
    struct coll_pend *pend;
    int64_t *pend_dur;        /* [slots * world], -1: not arrived */
    struct span *pend_span;   /* [slots * world] */
    uint64_t unmatched;       /* collectives written without transfer/sync */
    struct step_acc *acc;     /* [world * STEP_ACC] */
    struct ready_mark *ready; /* [world * READY_SLOTS] */
    char *end_members;        /* more of ddptopTraceEnd (trace_export_set_end), or NULL */
    int *dev_index;           /* [world]: K of a rank's "cuda:K", 0 else (the names are the caller's,
                                 read only while opening) */
    uint8_t *declared;        /* [world]: bit t set once the rank's thread t is named */
    char err[2048];
};

static int traced_rank(const struct trace_export *x, int rank)
{
    return rank >= 0 && rank < x->o.world && (x->o.ranks_mask == 0 || (rank < 64 && (x->o.ranks_mask >> rank) & 1));
}

static int traced_step(const struct trace_export *x, uint32_t step)
{
    return (long)step >= x->o.step_from && (x->o.step_to < 0 || (long)step <= x->o.step_to);
}

static struct trace_writer *writer_of(const struct trace_export *x, int rank)
{
    return x->w[x->o.split ? rank : 0];
}

int trace_export_path(const char *path, int run_index, int rank, char *out, size_t n)
{
    static const char *exts[] = {".json.gz", ".json", ".gz"};
    size_t len = strlen(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t stem = len;
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        size_t e = strlen(exts[i]);
        if (len > e && strcmp(path + len - e, exts[i]) == 0 && path + len - e > base) {
            stem = len - e;
            break;
        }
    }
    if (stem == len) {
        const char *dot = strrchr(base, '.');
        if (dot && dot > base)
            stem = (size_t)(dot - path);
    }
    char mid[48] = "";
    size_t m = 0;
    if (run_index > 0)
        m += (size_t)snprintf(mid + m, sizeof(mid) - m, ".run%d", run_index);
    if (rank >= 0)
        m += (size_t)snprintf(mid + m, sizeof(mid) - m, ".rank%d", rank);
    /* a rank's file is JSON whatever the name given: "t" becomes
     * t.rank0.json, not a file without an extension */
    const char *ext = rank >= 0 && stem == len ? ".json" : path + stem;
    int k = snprintf(out, n, "%.*s%s%s", (int)stem, path, mid, ext);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

static const char *device_of(const struct trace_export *x, int rank)
{
    return x->o.device && x->o.device[rank] ? x->o.device[rank] : "cpu";
}

/* Thread ids: one per lane, and the gpu lane split by stream role, so the
 * device's streams (which overlap one another) each nest on their own. */
enum { TID_GPU_COPY = LANE_COUNT, TID_GPU_COMM, TID_COUNT };

static int tid_of(const struct span *s)
{
    if (s->lane != LANE_GPU)
        return s->lane;
    return s->cat == CAT_COMM ? TID_GPU_COMM : s->cat == CAT_DATA ? TID_GPU_COPY : LANE_GPU;
}

static void write_names(struct trace_export *x, struct trace_writer *w, int rank)
{
    char name[96];
    snprintf(name, sizeof(name), "rank %d (%s)", rank, device_of(x, rank));
    trace_writer_begin_meta(w, "process_name", rank, 0);
    trace_writer_args_begin(w);
    trace_writer_arg_str(w, "name", name);
    trace_writer_args_end(w);
    trace_writer_end(w);
    trace_writer_begin_meta(w, "process_sort_index", rank, 0);
    trace_writer_args_begin(w);
    trace_writer_arg_i64(w, "sort_index", rank);
    trace_writer_args_end(w);
    trace_writer_end(w);
}

/* The writer of rank's events on thread tid, which is named before its
 * first event: a thread with no events is not declared (a CPU run has no
 * gpu streams, a run without DDP's comm lane no comm thread), so that no
 * viewer shows an empty lane as if it had been idle. */
static struct trace_writer *lane_writer(struct trace_export *x, int rank, int tid)
{
    static const char *lanes[TID_COUNT] = {"main", "comm", "data", "gpu stream", "gpu copy stream", "gpu comm stream"};
    struct trace_writer *w = writer_of(x, rank);
    if (tid < 0 || tid >= TID_COUNT || (x->declared[rank] >> tid) & 1u)
        return w;
    x->declared[rank] |= (uint8_t)(1u << tid);
    trace_writer_begin_meta(w, "thread_name", rank, tid);
    trace_writer_args_begin(w);
    trace_writer_arg_str(w, "name", lanes[tid]);
    trace_writer_args_end(w);
    trace_writer_end(w);
    trace_writer_begin_meta(w, "thread_sort_index", rank, tid);
    trace_writer_args_begin(w);
    trace_writer_arg_i64(w, "sort_index", tid);
    trace_writer_args_end(w);
    trace_writer_end(w);
    return w;
}

/* The header fields of one file: everything before "traceEvents". */
static char *make_header(const struct trace_export *x, int file)
{
    size_t cap = 4096 + (x->o.meta_json ? strlen(x->o.meta_json) : 0) + (size_t)x->o.world * 8;
    char *h = malloc(cap);
    if (!h)
        return NULL;
    int first_rank = -1;
    for (int r = 0; r < x->o.world; r++)
        if (traced_rank(x, r) && (!x->o.split || r == file)) {
            first_rank = r;
            break;
        }
    char backend[80], algo[80];
    trace_writer_quote(backend, sizeof(backend), x->o.backend ? x->o.backend : "shm");
    trace_writer_quote(algo, sizeof(algo), x->o.algo ? x->o.algo : "");
    size_t n = (size_t)snprintf(h, cap,
                                "\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":%lld,"
                                "\"distributedInfo\":{\"backend\":%s,\"rank\":%d,\"world_size\":%d},"
                                "\"deviceProperties\":[],\"ddptop\":{\"format\":1,\"clock\":\"monotonic\","
                                "\"base_ns\":%lld,\"algorithm\":%s,\"ranks\":[",
                                (long long)x->o.base_realtime_ns, backend, first_rank < 0 ? 0 : first_rank, x->o.world,
                                (long long)x->o.base_ns, algo);
    int any = 0;
    for (int r = 0; r < x->o.world; r++)
        if (traced_rank(x, r) && (!x->o.split || r == file))
            n += (size_t)snprintf(h + n, cap - n, any++ ? ",%d" : "%d", r);
    n += (size_t)snprintf(h + n, cap - n, "],\"steps\":[%ld,%ld],\"run\":%s},", x->o.step_from, x->o.step_to,
                          x->o.meta_json ? x->o.meta_json : "{}");
    return h;
}

int trace_export_open(struct trace_export **out, const struct trace_export_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    if (o->world < 1 || o->world > 1024) {
        snprintf(err, errlen, "trace %s: bad world size %d", o->path, o->world);
        return -1;
    }
    struct trace_export *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, errlen, "trace %s: out of memory", o->path);
        return -1;
    }
    x->o = *o;
    int W = o->world;
    x->nfiles = o->split ? W : 1;
    x->w = calloc((size_t)x->nfiles, sizeof(*x->w));
    x->pend = calloc(TRACE_EXPORT_SLOTS, sizeof(*x->pend));
    x->pend_dur = malloc(sizeof(int64_t) * TRACE_EXPORT_SLOTS * (size_t)W);
    x->pend_span = malloc(sizeof(struct span) * TRACE_EXPORT_SLOTS * (size_t)W);
    x->acc = calloc((size_t)W * STEP_ACC, sizeof(*x->acc));
    x->ready = calloc((size_t)W * READY_SLOTS, sizeof(*x->ready));
    x->dev_index = calloc((size_t)W, sizeof(*x->dev_index));
    x->declared = calloc((size_t)W, sizeof(*x->declared));
    if (!x->w || !x->pend || !x->pend_dur || !x->pend_span || !x->acc || !x->ready || !x->dev_index || !x->declared) {
        snprintf(err, errlen, "trace %s: out of memory", o->path);
        goto fail;
    }
    for (size_t i = 0; i < (size_t)W * READY_SLOTS; i++)
        x->ready[i].tag = -1;
    for (int r = 0; r < W; r++) {
        const char *colon = strchr(device_of(x, r), ':');
        x->dev_index[r] = colon ? (int)strtol(colon + 1, NULL, 10) : 0;
    }
    for (int f = 0; f < x->nfiles; f++) {
        if (o->split && !traced_rank(x, f))
            continue;
        char path[1100];
        if (trace_export_path(o->path, 0, o->split ? f : -1, path, sizeof(path)) != 0) {
            snprintf(err, errlen, "trace %s: file name too long", o->path);
            goto fail;
        }
        char *h = make_header(x, f);
        if (!h) {
            snprintf(err, errlen, "trace %s: out of memory", o->path);
            goto fail;
        }
        int rc = trace_writer_open(&x->w[f], path, h, err, errlen);
        free(h);
        if (rc != 0)
            goto fail;
        for (int r = 0; r < W; r++)
            if (traced_rank(x, r) && (!o->split || r == f))
                write_names(x, x->w[f], r);
    }
    x->last_flush_ns = probe_now_ns();
    /* what the caller lent for the header and names only */
    x->o.device = NULL;
    x->o.meta_json = NULL;
    *out = x;
    return 0;
fail:
    if (x->w)
        for (int f = 0; f < x->nfiles; f++)
            if (x->w[f]) {
                char e2[64];
                trace_writer_close(x->w[f], "", e2, sizeof(e2));
            }
    free(x->w);
    free(x->pend);
    free(x->pend_dur);
    free(x->pend_span);
    free(x->acc);
    free(x->ready);
    free(x->dev_index);
    free(x->declared);
    free(x);
    return -1;
}

static struct step_acc *acc_of(struct trace_export *x, int rank, uint32_t step)
{
    struct step_acc *a = &x->acc[(size_t)rank * STEP_ACC + step % STEP_ACC];
    if (!a->used || a->step != step) {
        memset(a, 0, sizeof(*a));
        a->used = 1;
        a->step = step;
    }
    return a;
}

static void write_span(struct trace_export *x, int rank, const struct span *s)
{
    struct trace_writer *w = lane_writer(x, rank, tid_of(s));
    const char *cat = cat_name(s->cat);
    trace_writer_begin(w, 'X', cat, cat, rank, tid_of(s), s->t0_ns - x->o.base_ns);
    trace_writer_dur(w, s->t1_ns - s->t0_ns);
    trace_writer_args_begin(w);
    trace_writer_arg_u64(w, "step", s->step);
    if (s->cat == CAT_WAIT && s->coll) {
        trace_writer_arg_u64(w, "seq", s->seq);
        trace_writer_arg_str(w, "collective", coll_name(s->coll));
    }
    if (s->tag >= 0)
        trace_writer_arg_i64(w, "bucket", s->tag);
    trace_writer_args_end(w);
    trace_writer_end(w);
}

/* The trace category of a device record, as Kineto names them (what
 * Perfetto's and HTA's GPU views look for). */
const char *trace_export_gpu_cat(const char *name)
{
    if (name && !strncmp(name, "Memcpy", 6))
        return "gpu_memcpy";
    if (name && !strncmp(name, "Memset", 6))
        return "gpu_memset";
    return "kernel";
}

/* A device record: Kineto's form (cat kernel, gpu_memcpy or gpu_memset,
 * the kernel's name, device and stream), with the host phase it belongs to
 * in args.phase, which replay reads back as the span's category. */
static void write_gpu(struct trace_export *x, int rank, const struct span *s)
{
    struct trace_writer *w = lane_writer(x, rank, tid_of(s));
    const char *name = probe_name(s->name);
    if (!name)
        name = cat_name(s->cat);
    int tid = tid_of(s);
    trace_writer_begin(w, 'X', name, trace_export_gpu_cat(name), rank, tid, s->t0_ns - x->o.base_ns);
    trace_writer_dur(w, s->t1_ns - s->t0_ns);
    trace_writer_args_begin(w);
    trace_writer_arg_u64(w, "step", s->step);
    trace_writer_arg_str(w, "phase", cat_name(s->cat));
    trace_writer_arg_i64(w, "device", x->dev_index[rank]);
    trace_writer_arg_i64(w, "stream", tid);
    if (s->bytes)
        trace_writer_arg_u64(w, "bytes", s->bytes);
    trace_writer_args_end(w);
    trace_writer_end(w);
}

static void write_ready(struct trace_export *x, int rank, const struct span *s)
{
    struct trace_writer *w = lane_writer(x, rank, s->lane);
    trace_writer_begin(w, 'i', "bucket ready", cat_name(s->cat), rank, s->lane, s->t0_ns - x->o.base_ns);
    trace_writer_field_str(w, "s", "t");
    trace_writer_args_begin(w);
    trace_writer_arg_u64(w, "step", s->step);
    trace_writer_arg_i64(w, "bucket", s->tag);
    trace_writer_args_end(w);
    trace_writer_end(w);
    struct ready_mark *m = &x->ready[(size_t)rank * READY_SLOTS + (uint16_t)s->tag % READY_SLOTS];
    m->tag = s->tag;
    m->step = s->step;
    m->ts_ns = s->t0_ns;
}

/* An outer collective span; nseen < world: transfer/sync unknown. */
static void write_coll(struct trace_export *x, int rank, const struct span *s, int64_t xfer_ns, int nseen)
{
    struct trace_writer *w = lane_writer(x, rank, tid_of(s));
    const char *name = s->coll != COLL_NONE ? coll_name(s->coll) : s->bytes ? "send" : s->bytes_rx ? "recv" : "p2p";
    int64_t dur = s->t1_ns - s->t0_ns;
    trace_writer_begin(w, 'X', s->tag == SPAN_TAG_NEGOTIATE ? "negotiate" : name, cat_name(CAT_COMM), rank, tid_of(s),
                       s->t0_ns - x->o.base_ns);
    trace_writer_dur(w, dur);
    trace_writer_args_begin(w);
    trace_writer_arg_u64(w, "step", s->step);
    trace_writer_arg_str(w, "collective", name);
    trace_writer_arg_u64(w, "seq", s->seq);
    trace_writer_arg_u64(w, "bytes", s->bytes);
    trace_writer_arg_u64(w, "bytes_rx", s->bytes_rx);
    trace_writer_arg_u64(w, "size", s->size);
    trace_writer_arg_i64(w, "ranks", x->o.world);
    trace_writer_arg_str(w, "algorithm", x->o.algo ? x->o.algo : "");
    trace_writer_arg_str(w, "backend", x->o.backend ? x->o.backend : "");
    if (s->tag >= 0)
        trace_writer_arg_i64(w, "bucket", s->tag);
    if (s->tag == SPAN_TAG_NEGOTIATE)
        trace_writer_arg_i64(w, "negotiate", 1);
    if (nseen >= x->o.world) {
        trace_writer_arg_us(w, "transfer_us", xfer_ns);
        trace_writer_arg_us(w, "sync_us", dur - xfer_ns);
    } else {
        trace_writer_arg_i64(w, "ranks_seen", nseen);
    }
    trace_writer_args_end(w);
    trace_writer_end(w);

    if (s->tag >= 0 && s->lane == LANE_COMM) {
        /* DDP bucket: flow from "bucket ready" (main lane) to the allreduce */
        int64_t from = s->t0_ns;
        const struct ready_mark *m = &x->ready[(size_t)rank * READY_SLOTS + (uint16_t)s->tag % READY_SLOTS];
        if (m->tag == s->tag && m->step == s->step && m->ts_ns <= s->t0_ns)
            from = m->ts_ns;
        int64_t id = ((int64_t)rank << 32) | s->seq;
        char fname[32];
        snprintf(fname, sizeof(fname), "bucket %d", s->tag);
        lane_writer(x, rank, LANE_MAIN);
        trace_writer_begin(w, 's', fname, FLOW_CAT, rank, LANE_MAIN, from - x->o.base_ns);
        trace_writer_field_i64(w, "id", id);
        trace_writer_end(w);
        trace_writer_begin(w, 'f', fname, FLOW_CAT, rank, s->lane, s->t0_ns - x->o.base_ns);
        trace_writer_field_i64(w, "id", id);
        trace_writer_field_str(w, "bp", "e");
        trace_writer_end(w);
    }
}

static void pend_flush(struct trace_export *x, size_t slot)
{
    struct coll_pend *p = &x->pend[slot];
    if (!p->used)
        return;
    int W = x->o.world;
    int64_t *dur = &x->pend_dur[slot * (size_t)W];
    struct span *sp = &x->pend_span[slot * (size_t)W];
    int64_t mn = INT64_MAX;
    for (int r = 0; r < W; r++)
        if (dur[r] >= 0 && dur[r] < mn)
            mn = dur[r];
    if (p->count < W)
        x->unmatched++;
    for (int r = 0; r < W; r++)
        if (dur[r] >= 0 && traced_rank(x, r) && traced_step(x, sp[r].step))
            write_coll(x, r, &sp[r], mn, p->count);
    p->used = 0;
}

static void coll_arrive(struct trace_export *x, int rank, const struct span *s)
{
    int W = x->o.world;
    /* point-to-point (COLL_NONE: send and recv, between two ranks) has no
     * sequence number to match on: written as it comes */
    if (W == 1 || s->coll == COLL_NONE) {
        if (traced_rank(x, rank) && traced_step(x, s->step))
            write_coll(x, rank, s, s->t1_ns - s->t0_ns, 1);
        return;
    }
    size_t slot = s->seq % TRACE_EXPORT_SLOTS;
    struct coll_pend *p = &x->pend[slot];
    if (p->used && p->seq != s->seq)
        pend_flush(x, slot); /* a seq that will not complete: write it as it is */
    int64_t *dur = &x->pend_dur[slot * (size_t)W];
    if (!p->used) {
        p->used = 1;
        p->seq = s->seq;
        p->count = 0;
        for (int r = 0; r < W; r++)
            dur[r] = -1;
    }
    if (dur[rank] >= 0)
        return; /* the same rank twice: keep the first */
    dur[rank] = s->t1_ns - s->t0_ns;
    x->pend_span[slot * (size_t)W + (size_t)rank] = *s;
    if (++p->count == W)
        pend_flush(x, slot);
}

void trace_export_span(struct trace_export *x, int rank, const struct span *s)
{
    if (rank < 0 || rank >= x->o.world)
        return;
    int keep = traced_rank(x, rank) && traced_step(x, s->step);
    if (s->cat == CAT_COMM && s->outer) {
        if (keep) {
            struct step_acc *a = acc_of(x, rank, s->step);
            a->tx += s->bytes;
            a->rx += s->bytes_rx;
            if (s->coll != COLL_NONE) { /* busbw is the collectives' (not send/recv's) */
                a->coll_ns += s->t1_ns - s->t0_ns;
                if (x->o.busbw_factor)
                    a->bus_bytes += (double)s->size * x->o.busbw_factor(s->coll, x->o.world);
            }
        }
        coll_arrive(x, rank, s);
        return;
    }
    if (!keep)
        return;
    if (s->t1_ns == s->t0_ns && s->tag >= 0 && s->lane == LANE_MAIN)
        write_ready(x, rank, s);
    else if (s->lane == LANE_GPU)
        write_gpu(x, rank, s);
    else
        write_span(x, rank, s);
}

static void counter1(struct trace_writer *w, int rank, int64_t ts, const char *name, const char *key, double v)
{
    trace_writer_begin(w, 'C', name, "counter", rank, LANE_MAIN, ts);
    trace_writer_args_begin(w);
    trace_writer_arg_f64(w, key, v);
    trace_writer_args_end(w);
    trace_writer_end(w);
}

void trace_export_step(struct trace_export *x, int rank, const struct trace_step_info *st)
{
    if (rank < 0 || rank >= x->o.world)
        return;
    if (traced_rank(x, rank) && traced_step(x, st->step)) {
        struct trace_writer *w = lane_writer(x, rank, LANE_MAIN);
        char name[40];
        snprintf(name, sizeof(name), "ProfilerStep#%u", st->step);
        int64_t wall = st->t1_ns - st->t0_ns;
        int64_t ts = st->t1_ns - x->o.base_ns;
        trace_writer_begin(w, 'X', name, "step", rank, LANE_MAIN, st->t0_ns - x->o.base_ns);
        trace_writer_dur(w, wall);
        trace_writer_args_begin(w);
        trace_writer_arg_u64(w, "step", st->step);
        trace_writer_arg_u64(w, "epoch", st->epoch);
        trace_writer_arg_f64(w, "loss", st->loss);
        trace_writer_arg_f64(w, "lr", st->lr);
        trace_writer_arg_i64(w, "samples", st->n);
        trace_writer_arg_i64(w, "correct", st->correct);
        if (st->untraced)
            trace_writer_arg_i64(w, "untraced", 1);
        if (st->skipped)
            trace_writer_arg_i64(w, "skipped", 1);
        if (st->loss_scale > 0)
            trace_writer_arg_f64(w, "loss_scale", st->loss_scale);
        if (st->desched_known)
            trace_writer_arg_i64(w, "desched_ns", st->desched_ns);
        trace_writer_args_end(w);
        trace_writer_end(w);

        double secs = wall > 0 ? (double)wall / 1e9 : 0;
        counter1(w, rank, ts, "loss", "loss", st->loss);
        if (secs > 0)
            counter1(w, rank, ts, "samples/s", "samples/s", st->n / secs);
        struct step_acc *a = acc_of(x, rank, st->step);
        if (secs > 0 && (a->tx || a->rx)) {
            trace_writer_begin(w, 'C', "bytes/s", "counter", rank, LANE_MAIN, ts);
            trace_writer_args_begin(w);
            trace_writer_arg_f64(w, "tx", (double)a->tx / secs);
            trace_writer_arg_f64(w, "rx", (double)a->rx / secs);
            trace_writer_args_end(w);
            trace_writer_end(w);
        }
        if (a->coll_ns > 0 && a->bus_bytes > 0)
            counter1(w, rank, ts, "busbw", "GB/s", a->bus_bytes / (double)a->coll_ns);
        a->used = 0;
    }
    trace_export_tick(x);
}

void trace_export_tick(struct trace_export *x)
{
    if (probe_now_ns() - x->last_flush_ns >= TRACE_EXPORT_FLUSH_NS)
        trace_export_flush(x);
}

void trace_export_flush(struct trace_export *x)
{
    x->last_flush_ns = probe_now_ns();
    for (int f = 0; f < x->nfiles; f++)
        if (x->w[f])
            trace_writer_flush(x->w[f]);
}

const char *trace_export_error(const struct trace_export *x)
{
    for (int f = 0; f < x->nfiles; f++)
        if (x->w[f] && trace_writer_error(x->w[f]))
            return trace_writer_error(x->w[f]);
    return NULL;
}

uint64_t trace_export_events(const struct trace_export *x)
{
    uint64_t n = 0;
    for (int f = 0; f < x->nfiles; f++)
        if (x->w[f])
            n += trace_writer_events(x->w[f]);
    return n;
}

int trace_export_close(struct trace_export *x, const char *state, uint64_t spans_dropped, char *err, size_t errlen)
{
    if (!x)
        return 0;
    /* collectives still waiting for a peer, oldest sequence first */
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < TRACE_EXPORT_SLOTS; i++)
            if (x->pend[i].used && (best == SIZE_MAX || x->pend[i].seq < x->pend[best].seq))
                best = i;
        if (best == SIZE_MAX)
            break;
        pend_flush(x, best);
    }
    char st[64];
    trace_writer_quote(st, sizeof(st), state ? state : "done");
    int rc = 0;
    size_t used = 0;
    if (errlen)
        err[0] = 0;
    for (int f = 0; f < x->nfiles; f++) {
        if (!x->w[f])
            continue;
        size_t cap = 256 + (x->end_members ? strlen(x->end_members) : 0);
        char *footer = malloc(cap);
        if (footer)
            snprintf(footer, cap,
                     ",\"ddptopTraceEnd\":{\"complete\":true,\"state\":%s,\"events\":%llu,\"spans_dropped\":%llu,"
                     "\"collectives_unmatched\":%llu%s%s}",
                     st, (unsigned long long)trace_writer_events(x->w[f]), (unsigned long long)spans_dropped,
                     (unsigned long long)x->unmatched, x->end_members ? "," : "", x->end_members ? x->end_members : "");
        char e[1500];
        int wrc =
            trace_writer_close(x->w[f], footer ? footer : ",\"ddptopTraceEnd\":{\"complete\":true}", e, sizeof(e));
        free(footer);
        if (wrc != 0) {
            if (used < errlen)
                used += (size_t)snprintf(err + used, errlen - used, "%s%s", rc ? "; " : "", e);
            rc = -1;
        }
    }
    free(x->w);
    free(x->pend);
    free(x->pend_dur);
    free(x->pend_span);
    free(x->acc);
    free(x->ready);
    free(x->dev_index);
    free(x->declared);
    free(x->end_members);
    free(x);
    return rc;
}

int trace_export_set_end(struct trace_export *x, const char *members)
{
    char *m = members ? strdup(members) : NULL;
    if (members && !m)
        return -1;
    free(x->end_members);
    x->end_members = m;
    return 0;
}
