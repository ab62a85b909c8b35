/* trace_read.c - Chrome trace-event JSON to per-rank spans, steps and ops
 * (see trace_read.h). A small scanner finds the extent of each top-level
 * value and of each element of the events array; cJSON parses each piece.
 * The scanner checks the structure it walks (brackets that match, a value
 * where one is due), so it always moves forward or stops with the byte
 * where the text went wrong. */
#include "trace_read.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infile.h"

/* Brackets nested deeper than this are refused (cJSON stops at 1000). */
#define SCAN_DEPTH 1024

const char *trace_flavor_name(int flavor)
{
    static const char *names[] = {"ddptop", "kineto", "autograd"};
    return flavor >= 0 && flavor <= TRACE_AUTOGRAD ? names[flavor] : "?";
}

void trace_doc_init(struct trace_doc *d)
{
    memset(d, 0, sizeof(*d));
    d->complete = 1;
}

void trace_doc_free(struct trace_doc *d)
{
    for (int i = 0; i < d->nranks; i++) {
        free(d->ranks[i].spans);
        free(d->ranks[i].steps);
        free(d->ranks[i].ops);
        free(d->ranks[i].track_key);
    }
    free(d->ranks);
    free(d->run_json);
    memset(d, 0, sizeof(*d));
}

/* ---- scanning ------------------------------------------------------------ */

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* p at '"'; returns the byte after the closing quote, NULL if cut. */
static const char *scan_string(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* The end of the JSON value starting at p. NULL when the text ends first
 * (*bad NULL), or when no value starts at p, a closing bracket does not
 * match its opening one or brackets nest deeper than SCAN_DEPTH (*bad: the
 * byte at fault). Only the structure is checked; cJSON checks the rest. */
static const char *scan_value(const char *p, const char *e, const char **bad)
{
    *bad = NULL;
    if (p >= e)
        return NULL;
    if (*p == '"')
        return scan_string(p, e);
    if (*p == '{' || *p == '[') {
        unsigned char brace[SCAN_DEPTH]; /* per open level: 1 for '{', 0 for '[' */
        int depth = 0;
        for (; p < e; p++) {
            char c = *p;
            if (c == '"') {
                p = scan_string(p, e);
                if (!p)
                    return NULL;
                p--;
            } else if (c == '{' || c == '[') {
                if (depth == SCAN_DEPTH) {
                    *bad = p;
                    return NULL;
                }
                brace[depth++] = c == '{';
            } else if (c == '}' || c == ']') {
                if (brace[--depth] != (c == '}')) {
                    *bad = p;
                    return NULL;
                }
                if (depth == 0)
                    return p + 1;
            }
        }
        return NULL;
    }
    if (*p == ',' || *p == '}' || *p == ']' || *p == ':') {
        *bad = p;
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
        p++;
    return p < e ? p : NULL;
}

/* The error for scan_value's byte at fault: an opening bracket there is
 * one level too deep; anything else does not belong where it stands. */
static void bad_json(char *err, size_t errlen, const char *name, const char *buf, const char *bad)
{
    if (*bad == '{' || *bad == '[')
        snprintf(err, errlen, "%s: JSON nested deeper than %d levels at byte %zu", name, SCAN_DEPTH,
                 (size_t)(bad - buf));
    else
        snprintf(err, errlen, "%s: malformed JSON near byte %zu", name, (size_t)(bad - buf));
}

/* ---- per-file state ---------------------------------------------------- */

struct corr_ts {
    int64_t corr, ts;
};

struct file_ctx {
    struct trace_doc *d;
    const char *name;
    int file; /* this file's number, from 0, in the order read */
    int flavor;
    int file_rank;    /* foreign traces: the one rank this file holds */
    size_t ops_start; /* the rank's ops before this file */
    struct corr_ts *corrs;
    size_t ncorr, capcorr;
    int oom;
    int too_many;         /* a rank past TRACE_MAX_RANKS */
    const char *bad_byte; /* where the text is malformed, or NULL */
};

/* The rank's record, made on first sight; NULL (with fc->oom or
 * fc->too_many set) when it cannot be. A rank that an earlier file held is
 * counted once in d->repeated_ranks. */
static struct trace_rank *rank_get(struct file_ctx *fc, int rank)
{
    struct trace_doc *d = fc->d;
    int lo = 0, hi = d->nranks;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (d->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < d->nranks && d->ranks[lo].rank == rank) {
        struct trace_rank *r = &d->ranks[lo];
        if (r->file != fc->file && !r->repeated) {
            r->repeated = 1;
            if (d->repeated_ranks++ == 0)
                d->repeat_rank = rank;
        }
        return r;
    }
    /* refused before it costs anything: a run has at most this many */
    if (d->nranks >= TRACE_MAX_RANKS) {
        fc->too_many = 1;
        return NULL;
    }
    struct trace_rank *nr = realloc(d->ranks, sizeof(*nr) * (size_t)(d->nranks + 1));
    if (!nr) {
        fc->oom = 1;
        return NULL;
    }
    d->ranks = nr;
    if (lo < d->nranks)
        memmove(&nr[lo + 1], &nr[lo], sizeof(*nr) * (size_t)(d->nranks - lo));
    memset(&nr[lo], 0, sizeof(*nr));
    nr[lo].rank = rank;
    nr[lo].file = fc->file;
    snprintf(nr[lo].device, sizeof(nr[lo].device), "cpu");
    d->nranks++;
    return &nr[lo];
}

#define GROW(arr, n, cap, oom)                                                                                         \
    do {                                                                                                               \
        if ((n) >= (cap)) {                                                                                            \
            size_t nc_ = (cap) ? (cap)*2 : 256;                                                                        \
            void *p_ = realloc((arr), nc_ * sizeof(*(arr)));                                                           \
            if (!p_) {                                                                                                 \
                (oom) = 1;                                                                                             \
                break;                                                                                                 \
            }                                                                                                          \
            (arr) = p_;                                                                                                \
            (cap) = nc_;                                                                                               \
        }                                                                                                              \
    } while (0)

static double jnum(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A number from untrusted input, clamped to [lo, hi] (NaN: lo), so no
 * conversion is undefined. */
static int64_t clampd(double v, int64_t lo, int64_t hi)
{
    if (!(v >= (double)lo))
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

static int64_t jint(const cJSON *o, const char *k, int64_t dflt, int64_t lo, int64_t hi)
{
    return clampd(jnum(o, k, (double)dflt), lo, hi);
}

/* ddptopTraceEnd's "stages" (the first file's, when several have them). */
static void read_stages(struct trace_doc *d, const cJSON *a)
{
    if (!cJSON_IsArray(a) || d->nstage_ranks > 0)
        return;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        int r = (int)jint(e, "rank", -1, -1, 64);
        if (r < 0 || r >= 64 || r != n)
            return; /* (every rank in order, or none) */
        d->stage_first[r] = (int)jint(e, "first_layer", 0, 0, 1 << 20);
        d->stage_last[r] = (int)jint(e, "last_layer", -1, -1, 1 << 20);
        double live = jnum(e, "live_bytes", 0);
        d->stage_live[r] = live >= 0 && live < 1e18 ? live : 0;
        n++;
    }
    d->nstage_ranks = n;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t us_to_ns(double us)
{
    double ns = us * 1000.0;
    if (!(ns > -9e18 && ns < 9e18))
        return 0;
    return (int64_t)llround(ns);
}

/* A pid or tid: a number, or a string (hashed, high bit set). */
static uint64_t id_key(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return (uint64_t)clampd(v->valuedouble, INT64_MIN / 2, INT64_MAX / 2) & 0x7fffffffffffffffULL;
    if (cJSON_IsString(v)) {
        uint64_t h = 1469598103934665603ULL;
        for (const char *s = v->valuestring; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return h | 0x8000000000000000ULL;
    }
    return 0;
}

static int ci_contains(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return 1;
    return 0;
}

static int cat_index(const char *s)
{
    for (int c = 0; c < CAT_COUNT; c++)
        if (!strcmp(s, cat_name(c)))
            return c;
    return -1;
}

static int coll_index(const char *s)
{
    for (int c = 0; c < COLL_COUNT; c++)
        if (!strcmp(s, coll_name(c)))
            return c;
    return COLL_NONE;
}

/* ---- ddptop's own events ------------------------------------------------ */

static void ddptop_event(struct file_ctx *fc, const cJSON *ev)
{
    struct trace_doc *d = fc->d;
    const char *ph = jstr(ev, "ph");
    const char *name = jstr(ev, "name");
    const char *cat = jstr(ev, "cat");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    int pid = (int)jint(ev, "pid", -1, -1, 1 << 21);
    if (!ph || !name || pid < 0 || pid > 1 << 20) {
        d->ignored++;
        return;
    }
    if (ph[0] == 'M') {
        const char *pn = jstr(args, "name");
        if (!strcmp(name, "process_name") && pn) {
            struct trace_rank *r = rank_get(fc, pid);
            const char *lp = strchr(pn, '('), *rp = strrchr(pn, ')');
            if (r && lp && rp && rp > lp)
                snprintf(r->device, sizeof(r->device), "%.*s", (int)(rp - lp - 1), lp + 1);
        }
        return;
    }
    if (ph[0] != 'X' && ph[0] != 'i') {
        d->ignored++; /* counters and flows are derived data */
        return;
    }
    int64_t t0 = us_to_ns(jnum(ev, "ts", 0));
    int64_t t1 = t0 + (ph[0] == 'X' ? us_to_ns(jnum(ev, "dur", 0)) : 0);
    struct trace_rank *r = rank_get(fc, pid);
    if (!r)
        return;
    if (cat && !strcmp(cat, "step") && !strncmp(name, "ProfilerStep#", 13)) {
        GROW(r->steps, r->nsteps, r->cap_steps, fc->oom);
        if (fc->oom)
            return;
        struct trace_step_info *s = &r->steps[r->nsteps++];
        s->step = (uint32_t)jint(args, "step", (int64_t)strtoul(name + 13, NULL, 10), 0, UINT32_MAX);
        s->epoch = (uint32_t)jint(args, "epoch", 0, 0, UINT32_MAX);
        s->t0_ns = t0;
        s->t1_ns = t1;
        s->loss = (float)jnum(args, "loss", NAN);
        s->lr = (float)jnum(args, "lr", NAN);
        s->n = (int32_t)jint(args, "samples", 0, 0, INT32_MAX);
        s->correct = (int32_t)jint(args, "correct", 0, 0, INT32_MAX);
        s->untraced = (uint8_t)jint(args, "untraced", 0, 0, 1);
        s->skipped = (uint8_t)jint(args, "skipped", 0, 0, 1);
        s->loss_scale = (float)jnum(args, "loss_scale", 0.0);
        if (!(s->loss_scale >= 0 && s->loss_scale < 1e30f))
            s->loss_scale = 0;
        s->desched_ns = jint(args, "desched_ns", -1, -1, (int64_t)1 << 53);
        s->desched_known = s->desched_ns >= 0;
        return;
    }
    int c = cat ? cat_index(cat) : -1;
    int lane = (int)jint(ev, "tid", 0, -1, LANE_COUNT + 2);
    if (lane == LANE_COUNT || lane == LANE_COUNT + 1)
        lane = LANE_GPU; /* the gpu lane's copy and comm streams */
    int gpu_record = cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset"));
    if (gpu_record) {
        /* a device record: its host phase says what it counts as */
        const char *phase = jstr(args, "phase");
        c = phase ? cat_index(phase) : -1;
        lane = LANE_GPU;
    }
    if (c < 0 || lane < 0 || lane >= LANE_COUNT) {
        d->ignored++;
        return;
    }
    GROW(r->spans, r->nspans, r->cap_spans, fc->oom);
    if (fc->oom)
        return;
    struct span *s = &r->spans[r->nspans++];
    memset(s, 0, sizeof(*s));
    s->t0_ns = t0;
    s->t1_ns = t1;
    s->step = (uint32_t)jint(args, "step", 0, 0, UINT32_MAX);
    s->seq = (uint32_t)jint(args, "seq", 0, 0, UINT32_MAX);
    s->tag = (int16_t)jint(args, "bucket", -1, -1, INT16_MAX);
    s->lane = (uint8_t)lane;
    s->cat = (uint8_t)c;
    if (gpu_record) {
        s->tag = -1;
        s->bytes = (uint64_t)jint(args, "bytes", 0, 0, INT64_MAX);
        return;
    }
    const char *coll = jstr(args, "collective");
    if (coll)
        s->coll = (uint8_t)coll_index(coll);
    if (c == CAT_COMM && ph[0] == 'X') {
        s->outer = coll != NULL;
        if (s->outer && jint(args, "negotiate", 0, 0, 1))
            s->tag = SPAN_TAG_NEGOTIATE;
        s->bytes = (uint64_t)jint(args, "bytes", 0, 0, INT64_MAX);
        s->bytes_rx = (uint64_t)jint(args, "bytes_rx", 0, 0, INT64_MAX);
        s->size = (uint64_t)jint(args, "size", 0, 0, INT64_MAX);
        const cJSON *xf = cJSON_GetObjectItemCaseSensitive(args, "transfer_us");
        if (cJSON_IsNumber(xf)) {
            int64_t xfer = us_to_ns(xf->valuedouble), sync = us_to_ns(jnum(args, "sync_us", 0));
            r->xfer_ns += xfer;
            r->sync_ns += sync;
            if (s->step > 0) {
                r->xfer_steady_ns += xfer;
                r->sync_steady_ns += sync;
            }
            r->coll_matched++;
        } else if (s->outer) {
            r->coll_unmatched++;
        }
    }
}

/* ---- PyTorch profiler events (Kineto and the autograd profiler) ---------- */

static int foreign_host_cat(const char *name)
{
    if (!strncmp(name, "ProfilerStep#", 13))
        return TRACE_CAT_NEUTRAL;
    if (ci_contains(name, "nccl") || ci_contains(name, "gloo") || strstr(name, "c10d") ||
        strstr(name, "record_param_comms"))
        return CAT_COMM;
    if (strstr(name, "DataLoader"))
        return CAT_DATA;
    if (strstr(name, "Backward") || strstr(name, "autograd::engine"))
        return CAT_BACKWARD;
    if (strstr(name, "Optimizer."))
        return CAT_OPTIMIZER;
    return CAT_FORWARD;
}

static int32_t track_of(struct file_ctx *fc, struct trace_rank *r, uint64_t key)
{
    for (size_t i = 0; i < r->ntracks; i++)
        if (r->track_key[i] == key)
            return (int32_t)i;
    GROW(r->track_key, r->ntracks, r->cap_tracks, fc->oom);
    if (fc->oom)
        return 0;
    r->track_key[r->ntracks] = key;
    return (int32_t)r->ntracks++;
}

static void foreign_event(struct file_ctx *fc, const cJSON *ev)
{
    struct trace_doc *d = fc->d;
    const char *ph = jstr(ev, "ph");
    const char *name = jstr(ev, "name");
    const char *cat = jstr(ev, "cat");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    if (!ph || !name || ph[0] != 'X') {
        d->ignored++;
        return;
    }
    struct trace_rank *r = rank_get(fc, fc->file_rank);
    if (!r)
        return;
    int64_t t0 = us_to_ns(jnum(ev, "ts", 0));
    int64_t t1 = t0 + us_to_ns(jnum(ev, "dur", 0));
    const cJSON *pidv = cJSON_GetObjectItemCaseSensitive(ev, "pid");
    const char *pids = cJSON_IsString(pidv) ? pidv->valuestring : "";
    if (cat && (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") || !strcmp(cat, "Runtime"))) {
        int64_t corr = jint(args, "correlation", -1, -1, INT64_MAX);
        if (corr >= 0) {
            GROW(fc->corrs, fc->ncorr, fc->capcorr, fc->oom);
            if (!fc->oom)
                fc->corrs[fc->ncorr++] = (struct corr_ts){corr, t0};
        }
        return;
    }
    int gpu = 0, c;
    if (cat && (!strcmp(cat, "kernel") || !strcmp(cat, "Kernel"))) {
        gpu = 1;
        c = ci_contains(name, "nccl") ? CAT_COMM : CAT_FORWARD;
    } else if (cat && (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset") || !strcmp(cat, "Memcpy") ||
                       !strcmp(cat, "Memset"))) {
        gpu = 1;
        c = CAT_DATA;
    } else if (!cat && !strcmp(pids, "CUDA functions")) {
        gpu = 1; /* the autograd profiler's device rows */
        if (ci_contains(name, "nccl"))
            c = CAT_COMM;
        else if (ci_contains(name, "memcpy") || ci_contains(name, "memset"))
            c = CAT_DATA;
        else
            c = CAT_FORWARD;
    } else if (!cat || !strcmp(cat, "cpu_op") || !strcmp(cat, "Operator") || !strcmp(cat, "user_annotation")) {
        if (!strncmp(name, "ProfilerStep#", 13)) {
            GROW(r->steps, r->nsteps, r->cap_steps, fc->oom);
            if (fc->oom)
                return;
            struct trace_step_info *s = &r->steps[r->nsteps++];
            memset(s, 0, sizeof(*s));
            s->step = (uint32_t)strtoul(name + 13, NULL, 10);
            s->t0_ns = t0;
            s->t1_ns = t1;
            s->loss = NAN;
            s->lr = NAN;
            return;
        }
        if (cat && !strcmp(cat, "user_annotation"))
            return; /* a user's range: covers ops, is none itself */
        c = foreign_host_cat(name);
    } else {
        d->ignored++; /* python functions, flows, GPU annotations, ... */
        return;
    }
    if (gpu) {
        int64_t dev = jint(args, "device", -1, -1, 1 << 20);
        if (dev >= 0 && !strcmp(r->device, "cpu"))
            snprintf(r->device, sizeof(r->device), "cuda:%d", (int)dev);
    }
    const cJSON *tidv = cJSON_GetObjectItemCaseSensitive(ev, "tid");
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(args, "stream");
    uint64_t key = id_key(gpu && stream ? stream : tidv);
    key = (key * 31 + id_key(pidv)) ^ (gpu ? 0x5bd1e995ULL : 0);
    int32_t track = track_of(fc, r, key);
    GROW(r->ops, r->nops, r->cap_ops, fc->oom);
    if (fc->oom)
        return;
    struct trace_op *op = &r->ops[r->nops++];
    op->t0_ns = t0;
    op->t1_ns = t1;
    op->launch_ns = -1;
    op->corr = gpu ? jint(args, "correlation", -1, -1, INT64_MAX) : -1;
    op->track = track;
    op->cat = (uint8_t)c;
    op->gpu = (uint8_t)gpu;
    r->ngpu += (size_t)gpu;
}

static int corr_cmp(const void *a, const void *b)
{
    const struct corr_ts *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* Gives each GPU op of this file the start of the call that launched it. */
static void resolve_launches(struct file_ctx *fc)
{
    struct trace_rank *r = rank_get(fc, fc->file_rank);
    if (!r || !fc->ncorr)
        return;
    qsort(fc->corrs, fc->ncorr, sizeof(*fc->corrs), corr_cmp);
    for (size_t i = fc->ops_start; i < r->nops; i++) {
        struct trace_op *op = &r->ops[i];
        if (!op->gpu || op->corr < 0)
            continue;
        struct corr_ts key = {op->corr, 0};
        const struct corr_ts *hit = bsearch(&key, fc->corrs, fc->ncorr, sizeof(key), corr_cmp);
        if (hit)
            op->launch_ns = hit->ts;
    }
}

/* ---- the document ------------------------------------------------------- */

/* Reads the events of the array at p ('['). Stops early when the text is
 * cut (*cut), malformed (fc->bad_byte), or a rank cannot be added.
 * Returns the array's closing ']', or NULL when it stopped before it. */
static const char *read_events(struct file_ctx *fc, const char *p, const char *e, int *cut)
{
    p++;
    for (;;) {
        p = skip_ws(p, e);
        if (p >= e) {
            *cut = 1;
            return NULL;
        }
        if (*p == ']')
            return p;
        if (*p == ',') {
            p++;
            continue;
        }
        const char *end = scan_value(p, e, &fc->bad_byte);
        if (!end) {
            if (!fc->bad_byte)
                *cut = 1; /* a last event cut in the middle: dropped */
            return NULL;
        }
        cJSON *ev = cJSON_ParseWithLength(p, (size_t)(end - p));
        fc->d->events++;
        if (!cJSON_IsObject(ev))
            fc->d->ignored++;
        else if (fc->flavor == TRACE_DDPTOP)
            ddptop_event(fc, ev);
        else
            foreign_event(fc, ev);
        cJSON_Delete(ev);
        if (fc->oom || fc->too_many)
            return NULL;
        p = end;
    }
}

/* Text after the document's closing bracket (close: that bracket, or
 * NULL when the document is cut before it): one line and -1, as for
 * malformed JSON. A second document, or a stray character, would be read
 * as nothing without a word. */
static int trailing_text(const char *buf, const char *close, const char *e, const char *name, char *err, size_t errlen)
{
    const char *q = close ? skip_ws(close + 1, e) : e;
    if (q >= e)
        return 0;
    snprintf(err, errlen, "%s: text after the trace's closing '%c' at byte %zu", name, *close, (size_t)(q - buf));
    return -1;
}

/* One file's plain JSON text into d (trace_read_buffer's contract). */
static int read_json(struct trace_doc *d, const char *buf, size_t n, const char *name, char *err, size_t errlen)
{
    const char *p = buf, *e = buf + n;
    p = skip_ws(p, e);
    if (p >= e || (*p != '{' && *p != '[')) {
        snprintf(err, errlen, "%s: not a Chrome trace (expected a JSON object or array)", name);
        return -1;
    }
    struct file_ctx fc = {.d = d, .name = name, .file = d->nfiles, .file_rank = d->nfiles};
    const char *events = NULL;
    int cut = 0, have_end = 0, have_ddptop = 0;
    if (*p == '[') {
        events = p;
        fc.flavor = TRACE_AUTOGRAD;
    } else {
        /* the top-level members: remember the events, parse the rest */
        cJSON *dist = NULL, *dd = NULL, *end = NULL;
        p++;
        for (;;) {
            p = skip_ws(p, e);
            if (p >= e) {
                cut = 1;
                break;
            }
            if (*p == '}')
                break;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p != '"') {
                fc.bad_byte = p;
                break;
            }
            const char *ks = p + 1, *ke = scan_string(p, e);
            if (!ke) {
                cut = 1;
                break;
            }
            size_t klen = (size_t)(ke - 1 - ks);
            p = skip_ws(ke, e);
            if (p < e && *p != ':') {
                fc.bad_byte = p;
                break;
            }
            if (p >= e) {
                cut = 1;
                break;
            }
            p = skip_ws(p + 1, e);
            const char *vend = scan_value(p, e, &fc.bad_byte);
            if (fc.bad_byte)
                break;
            if (klen == 11 && !memcmp(ks, "traceEvents", 11) && p < e && *p == '[') {
                events = p;
                if (!vend) {
                    cut = 1;
                    break;
                }
            } else if (!vend) {
                cut = 1;
                break;
            } else if (klen == 15 && !memcmp(ks, "distributedInfo", 15)) {
                cJSON_Delete(dist);
                dist = cJSON_ParseWithLength(p, (size_t)(vend - p));
            } else if (klen == 6 && !memcmp(ks, "ddptop", 6)) {
                cJSON_Delete(dd);
                dd = cJSON_ParseWithLength(p, (size_t)(vend - p));
            } else if (klen == 14 && !memcmp(ks, "ddptopTraceEnd", 14)) {
                cJSON_Delete(end);
                end = cJSON_ParseWithLength(p, (size_t)(vend - p));
            }
            p = vend;
        }
        if (fc.bad_byte || (!cut && trailing_text(buf, p, e, name, err, errlen) != 0)) {
            if (fc.bad_byte)
                bad_json(err, errlen, name, buf, fc.bad_byte);
            cJSON_Delete(dist);
            cJSON_Delete(dd);
            cJSON_Delete(end);
            return -1;
        }
        have_ddptop = dd != NULL;
        fc.flavor = have_ddptop ? TRACE_DDPTOP : TRACE_KINETO;
        if (dist) {
            const char *b = jstr(dist, "backend");
            if (b && !d->backend[0])
                snprintf(d->backend, sizeof(d->backend), "%s", b);
            int64_t rk = jint(dist, "rank", -1, -1, 1 << 20), ws = jint(dist, "world_size", 0, 0, 1 << 20);
            if (rk >= 0 && !have_ddptop)
                fc.file_rank = (int)rk;
            if (ws > d->world)
                d->world = (int)ws;
        }
        if (dd) {
            const char *a = jstr(dd, "algorithm");
            if (a && !d->algo[0])
                snprintf(d->algo, sizeof(d->algo), "%s", a);
            /* the run's start: the same in a run's files, another in any other run's */
            const cJSON *base = cJSON_GetObjectItemCaseSensitive(dd, "base_ns");
            if (cJSON_IsNumber(base) && !d->have_base) {
                d->have_base = 1;
                d->base_ns = base->valuedouble;
            } else if (cJSON_IsNumber(base) && base->valuedouble != d->base_ns) {
                d->other_run = 1;
            }
            const cJSON *run = cJSON_GetObjectItemCaseSensitive(dd, "run");
            if (cJSON_IsObject(run) && !d->run_json) {
                d->run_json = cJSON_PrintUnformatted(run);
            } else if (cJSON_IsObject(run)) {
                char *s = cJSON_PrintUnformatted(run);
                if (s && strcmp(s, d->run_json) != 0)
                    d->other_run = 1;
                free(s);
            }
        }
        if (end) {
            have_end = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(end, "complete"));
            const char *st = jstr(end, "state");
            if (st)
                snprintf(d->state, sizeof(d->state), "%s", st);
            read_stages(d, cJSON_GetObjectItemCaseSensitive(end, "stages"));
            d->spans_dropped += (uint64_t)jint(end, "spans_dropped", 0, 0, INT64_MAX);
        }
        cJSON_Delete(dist);
        cJSON_Delete(dd);
        cJSON_Delete(end);
    }
    if (d->nfiles == 0)
        d->flavor = fc.flavor;
    else if ((d->flavor == TRACE_DDPTOP) != (fc.flavor == TRACE_DDPTOP))
        d->mixed = 1;
    if (!events) {
        if (!cut) {
            snprintf(err, errlen, "%s: no traceEvents array", name);
            return -1;
        }
        /* cut before the events began: an empty trace */
    } else {
        struct trace_rank *r = fc.flavor != TRACE_DDPTOP ? rank_get(&fc, fc.file_rank) : NULL;
        if (r)
            fc.ops_start = r->nops;
        const char *close = NULL;
        if (!fc.oom && !fc.too_many)
            close = read_events(&fc, events, e, &cut);
        /* a bare array is the whole document: nothing may follow it */
        if (close && events == skip_ws(buf, e) && trailing_text(buf, close, e, name, err, errlen) != 0) {
            free(fc.corrs);
            return -1;
        }
        if (!fc.oom && !fc.too_many && !fc.bad_byte && fc.flavor != TRACE_DDPTOP)
            resolve_launches(&fc);
    }
    free(fc.corrs);
    if (fc.oom) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    if (fc.too_many) {
        snprintf(err, errlen, "%s: more than %d ranks", name, TRACE_MAX_RANKS);
        return -1;
    }
    if (fc.bad_byte) {
        bad_json(err, errlen, name, buf, fc.bad_byte);
        return -1;
    }
    d->nfiles++;
    if (cut)
        d->truncated = 1;
    if (cut || (fc.flavor == TRACE_DDPTOP && !have_end))
        d->complete = 0;
    for (int i = 0; i < d->nranks; i++)
        if (d->ranks[i].rank + 1 > d->world)
            d->world = d->ranks[i].rank + 1;
    return 0;
}

int trace_read_buffer(struct trace_doc *d, const char *buf, size_t n, const char *name, char *err, size_t errlen)
{
    char *plain = NULL, why[128];
    size_t nplain = 0;
    enum infile_gz gz = infile_gunzip(buf, n, &plain, &nplain, why, sizeof(why));
    if ((gz == INFILE_GZ_BAD || gz == INFILE_GZ_CUT) && nplain == 0) {
        snprintf(err, errlen, "%s: corrupt gzip stream (zlib: %s)", name, why);
        free(plain);
        return -1;
    }
    /* a compressed stream cut short, or damaged part way: use what decoded,
     * as a plain file cut short is used */
    int rc =
        gz == INFILE_PLAIN ? read_json(d, buf, n, name, err, errlen) : read_json(d, plain, nplain, name, err, errlen);
    free(plain);
    if (rc == 0 && (gz == INFILE_GZ_CUT || gz == INFILE_GZ_BAD)) {
        d->truncated = 1;
        d->complete = 0;
    }
    return rc;
}

int trace_read_file(struct trace_doc *d, const char *path, char *err, size_t errlen)
{
    char *buf;
    size_t n;
    if (infile_read(path, 0, 0, &buf, &n, err, errlen) != 0)
        return -1;
    int rc = trace_read_buffer(d, buf, n, path, err, errlen);
    free(buf);
    return rc;
}
