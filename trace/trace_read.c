/* trace_read.c - Chrome trace-event JSON to per-rank spans, steps and ops
 * (see trace_read.h). A small scanner finds the extent of each top-level
 * value and of each element of the events array; cJSON parses each piece.
 * The scanner checks the structure it walks (brackets that match, a value
 * where one is due), so it always moves forward or stops with the byte
 * where the text went wrong. */
#include "trace_read.h"

#include <cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "infile.h"
#include "kernels.h"

/* Brackets nested deeper than this are refused (cJSON stops at 1000). */
#define SCAN_DEPTH 1024

const char *trace_flavor_name(int flavor)
{
    static const char *names[] = {"ddptop", "kineto", "autograd"};
    return flavor >= 0 && flavor <= TRACE_AUTOGRAD ? names[flavor] : "?";
}

const char *trace_rank_from_name(int from)
{
    static const char *names[] = {"given", "trace", "name", "worker", "order"};
    return from >= 0 && from <= TRACE_RANK_ORDER ? names[from] : "?";
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
        free(d->ranks[i].mems);
        free(d->ranks[i].track_key);
        free(d->ranks[i].windows);
        for (size_t k = 0; k < d->ranks[i].nnames; k++)
            free(d->ranks[i].names[k]);
        free(d->ranks[i].names);
        free(d->ranks[i].name_slots);
    }
    free(d->ranks);
    free(d->workers);
    free(d->worker_rank);
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
    int queues;      /* a call that queues work on a stream (queues_work) */
    int64_t end;     /* the call's end */
    uint8_t call;    /* enum trace_launch_call */
    int8_t end_adj;  /* HTA's end in whole us less end's floor (trace_op.end_adj_us) */
    uint64_t thread; /* the call's (pid, tid) key, as a CPU op's track is keyed */
};

/* Which runtime calls HTA's launch statistics match to their device op
 * (CudaKernelAnalysis: the kernel launches, MTIA's job submission, and the
 * asynchronous copies and sets). */
static int launch_call_of(const char *name)
{
    if (!strcmp(name, "cudaLaunchKernel") || !strcmp(name, "cudaLaunchKernelExC") ||
        !strcmp(name, "runFunction - job_prep_and_submit_for_execution"))
        return TRACE_LAUNCH_KERNEL;
    if (!strcmp(name, "cudaMemcpyAsync") || !strcmp(name, "cudaMemsetAsync"))
        return TRACE_LAUNCH_MEMORY;
    return TRACE_LAUNCH_NONE;
}

struct file_ctx {
    struct trace_doc *d;
    const char *name;
    int file; /* this file's number, from 0, in the order read */
    int flavor;
    int file_rank;       /* foreign traces: the one rank this file holds */
    size_t ops_start;    /* the rank's ops before this file */
    size_t mems_start;   /* ... and its [memory] events */
    int64_t gpu_mark_ns; /* the latest ProfilerStep start on the device's timeline; INT64_MIN: none */
    int sub_us;          /* a time stamp with a fraction of a microsecond was seen */
    struct corr_ts *corrs;
    size_t ncorr, capcorr;
    int oom;
    int too_many;         /* a rank past TRACE_MAX_RANKS */
    const char *bad_byte; /* where the text is malformed, or NULL */
};

/* The rank's record, made on first sight; NULL (with fc->oom or
 * fc->too_many set) when it cannot be. A ddptop rank that an earlier file
 * held is counted once in d->repeated_ranks (a foreign rank's files are
 * its windows: add_window counts those that repeat). */
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
        if (fc->flavor == TRACE_DDPTOP && r->file != fc->file && !r->repeated) {
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

/* (activations keep the key of the traces that carried nothing else) */
const char *const trace_stage_mem_keys[TRACE_STAGE_MEM_KINDS] = {"param_bytes", "grad_bytes", "optimizer_bytes",
                                                                 "live_bytes"};

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
        for (int k = 0; k < TRACE_STAGE_MEM_KINDS; k++) {
            double b = jnum(e, trace_stage_mem_keys[k], 0);
            d->stage_mem[r][k] = b >= 0 && b < 1e18 ? b : 0;
        }
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
    /* whole microseconds and the fraction apart: the one product is off by
     * up to 128 ns at the epoch's time stamps (1.7e15 us) */
    double whole = floor(us);
    return (int64_t)whole * 1000 + llround((us - whole) * 1000.0);
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

/* The names c10d gives its ops (c10d::allreduce_) and its backends their
 * collectives (gloo:all_reduce, nccl:all_to_all, mpi:broadcast...): these
 * are communication whatever the category they come in. Kineto records a
 * backend's collective on the CPU as a user_annotation. */
static const char *const comm_prefixes[] = {"c10d::", "gloo:", "nccl:", "mpi:", "ucc:"};

static int comm_op_name(const char *name)
{
    for (size_t i = 0; i < sizeof(comm_prefixes) / sizeof(comm_prefixes[0]); i++)
        if (!strncmp(name, comm_prefixes[i], strlen(comm_prefixes[i])))
            return 1;
    return !strcmp(name, "record_param_comms");
}

int trace_coll_kind_of(const char *name)
{
    char low[128];
    size_t n = 0;
    for (const char *c = name; *c && n + 1 < sizeof(low); c++)
        if (*c != '_')
            low[n++] = (char)tolower((unsigned char)*c);
    low[n] = 0;
    if (strstr(low, "reducescatter"))
        return COLL_REDUCE_SCATTER;
    if (strstr(low, "allreduce"))
        return COLL_ALLREDUCE;
    if (strstr(low, "allgather"))
        return COLL_ALLGATHER;
    if (strstr(low, "broadcast"))
        return COLL_BROADCAST;
    return COLL_NONE;
}

/* Bytes a value of a dtype takes, as Kineto names it ("Float", "float",
 * "c10::Half", "BFloat16", "double", "long int"...); 4 when not known. */
static double dtype_bytes(const char *t)
{
    if (!t)
        return 4;
    if (ci_contains(t, "half") || ci_contains(t, "bfloat16") || ci_contains(t, "short"))
        return 2;
    if (ci_contains(t, "double") || ci_contains(t, "long") || ci_contains(t, "int64") || ci_contains(t, "complex"))
        return 8;
    if (ci_contains(t, "char") || ci_contains(t, "bool") || ci_contains(t, "byte") || ci_contains(t, "int8"))
        return 1;
    return 4;
}

/* The values in a shape, or in a list of shapes summed ([[37610]] or
 * [37610]); 0 when it holds none. */
static double dims_values(const cJSON *d)
{
    if (!cJSON_IsArray(d) || !cJSON_GetArraySize(d))
        return 0;
    if (cJSON_IsArray(cJSON_GetArrayItem(d, 0))) {
        double sum = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, d) sum += dims_values(e);
        return sum;
    }
    double v = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, d)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0)
            return 0;
        v *= e->valuedouble;
    }
    return v;
}

/* A c10d call's message bytes from its args (0: they do not say). */
static uint64_t coll_call_bytes(const char *name, const cJSON *args)
{
    if (!args)
        return 0;
    if (!strcmp(name, "record_param_comms")) {
        double n = jnum(args, "In msg nelems", 0);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "dtype");
        return n > 0 ? (uint64_t)(n * dtype_bytes(cJSON_IsString(t) ? t->valuestring : NULL)) : 0;
    }
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    const cJSON *t0 = cJSON_IsArray(types) ? cJSON_GetArrayItem(types, 0) : NULL;
    double n = cJSON_IsArray(dims) ? dims_values(cJSON_GetArrayItem(dims, 0)) : 0;
    return n > 0 ? (uint64_t)(n * dtype_bytes(cJSON_IsString(t0) ? t0->valuestring : NULL)) : 0;
}

/* A host op's part in a collective: a backend's record is its work,
 * c10d's op (or record_param_comms) the call. */
static int host_coll_role(const char *name)
{
    if (!strncmp(name, "c10d::", 6) || !strcmp(name, "record_param_comms"))
        return TRACE_COLL_CALL;
    for (size_t i = 1; i < sizeof(comm_prefixes) / sizeof(comm_prefixes[0]); i++)
        if (!strncmp(name, comm_prefixes[i], strlen(comm_prefixes[i])))
            return TRACE_COLL_WORK;
    return TRACE_COLL_NONE;
}

/* A device op's category by its name: collectives (NCCL's kernels, HCCL's
 * on MTIA) are comm, DMA transfers (MTIA's dma_*) data, the rest compute. */
static int device_cat(const char *name)
{
    if (ci_contains(name, "nccl") || !strncasecmp(name, "hccl", 4))
        return CAT_COMM;
    if (!strncmp(name, "dma", 3))
        return CAT_DATA;
    return CAT_FORWARD;
}

/* A device event's stream as HTA reads it: a number, or a string of one
 * ("108"); -1 when there is none (a runtime call's "0x0" is none). */
static int64_t stream_num(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return clampd(v->valuedouble, INT64_MIN / 2, INT64_MAX / 2);
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *end;
        errno = 0;
        long long x = strtoll(v->valuestring, &end, 10);
        if (!*end && !errno)
            return x;
    }
    return -1;
}

/* A device op's category as HTA's temporal breakdown reads it, by its name
 * alone (kernel_type_of: kernels.h): communication is comm, computation
 * compute, and memory or no type's (syncs, launches, MTIA's job records)
 * data: HTA's non-compute time is comm + data. */
static int hta_device_cat(const char *name)
{
    int type = kernel_type_of(name);
    return type == KERNEL_COMM ? CAT_COMM : type == KERNEL_COMPUTE ? CAT_FORWARD : CAT_DATA;
}

static int foreign_host_cat(const char *name)
{
    if (!strncmp(name, "ProfilerStep#", 13))
        return TRACE_CAT_NEUTRAL;
    if (comm_op_name(name) || ci_contains(name, "nccl") || ci_contains(name, "gloo") || strstr(name, "c10d") ||
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

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The index of name in r's names, added when new (the kernel breakdown
 * groups device ops by it); TRACE_NO_NAME when out of memory. */
static uint32_t name_of(struct file_ctx *fc, struct trace_rank *r, const char *name)
{
    if (2 * (r->nnames + 1) > r->nslots) { /* (at most half full) */
        size_t ns = r->nslots ? 2 * r->nslots : 64;
        uint32_t *slots = calloc(ns, sizeof(*slots));
        if (!slots) {
            fc->oom = 1;
            return TRACE_NO_NAME;
        }
        for (size_t i = 0; i < r->nnames; i++) {
            size_t k = name_hash(r->names[i]) & (ns - 1);
            while (slots[k])
                k = (k + 1) & (ns - 1);
            slots[k] = (uint32_t)i + 1;
        }
        free(r->name_slots);
        r->name_slots = slots;
        r->nslots = ns;
    }
    size_t k = name_hash(name) & (r->nslots - 1);
    for (; r->name_slots[k]; k = (k + 1) & (r->nslots - 1))
        if (!strcmp(r->names[r->name_slots[k] - 1], name))
            return r->name_slots[k] - 1;
    char *copy = strdup(name);
    GROW(r->names, r->nnames, r->cap_names, fc->oom);
    if (fc->oom || !copy || r->nnames >= TRACE_NO_NAME) {
        fc->oom = 1;
        free(copy);
        return TRACE_NO_NAME;
    }
    r->names[r->nnames] = copy;
    r->name_slots[k] = (uint32_t)r->nnames + 1;
    return (uint32_t)r->nnames++;
}

/* Whether a runtime call of this name queues work on a device stream: the
 * launches and asynchronous copies HTA's queue length counts
 * (get_runtime_launch_events_mask), CUDA's, ROCm's and MTIA's. */
static int queues_work(const char *name)
{
    static const char *const names[] = {
        "cudaLaunchKernel", "cudaLaunchKernelExC",      "cuLaunchKernel",
        "cuLaunchKernelEx", "cudaMemcpyAsync",          "cudaMemsetAsync",
        "hipLaunchKernel",  "hipExtModuleLaunchKernel", "hipMemsetAsync",
        "hipMemcpyAsync",   "hipMemcpyWithStream",      "runFunction - job_prep_and_submit_for_execution"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

/* HTA's end, to whole microseconds: the floor of ts + dur in double
 * arithmetic, which may round the sum up past a whole microsecond; less
 * the floor of t1_ns, the end read: -1, 0 or 1. */
static int8_t end_adj_us(double ts, double dur, int64_t t1_ns)
{
    double end_us = floor(ts + dur);
    int64_t adj =
        end_us > -9e15 && end_us < 9e15 ? (int64_t)end_us - (t1_ns - ((t1_ns % 1000) + 1000) % 1000) / 1000 : 0;
    return (int8_t)(adj < -1 ? -1 : adj > 1 ? 1 : adj);
}

/* A [memory] event: kept as its args give it, on the file's rank. */
static void memory_event(struct file_ctx *fc, double ts, const cJSON *args)
{
    struct trace_rank *r = rank_get(fc, fc->file_rank);
    if (!r)
        return;
    GROW(r->mems, r->nmems, r->cap_mems, fc->oom);
    if (fc->oom)
        return;
    /* (bytes held to an exabyte: a total less its Bytes cannot overflow) */
    const int64_t most = INT64_C(1) << 60;
    uint32_t seq = (uint32_t)(r->nmems - fc->mems_start);
    r->mems[r->nmems++] = (struct trace_mem){us_to_ns(ts),
                                             jint(args, "Bytes", 0, -most, most),
                                             jint(args, "Total Allocated", 0, 0, most),
                                             jint(args, "Total Reserved", 0, 0, most),
                                             (int16_t)jint(args, "Device Type", 0, 0, INT16_MAX),
                                             (int16_t)jint(args, "Device Id", -1, -1, INT16_MAX),
                                             seq};
}

/* [memory] events by time, ties in file order: a profiler may write one
 * out of order, and a total is the one after the event before in time. */
static int mem_cmp(const void *a, const void *b)
{
    const struct trace_mem *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void foreign_event(struct file_ctx *fc, const cJSON *ev)
{
    struct trace_doc *d = fc->d;
    const char *ph = jstr(ev, "ph");
    const char *name = jstr(ev, "name");
    const char *cat = jstr(ev, "cat");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    double ts = jnum(ev, "ts", 0);
    if (ts != floor(ts))
        fc->sub_us = 1; /* (HTA rounds such a trace's times to whole microseconds) */
    if (ph && name && ph[0] == 'i' && !strcmp(name, "[memory]")) {
        memory_event(fc, ts, args);
        return;
    }
    if (!ph || !name || ph[0] != 'X') {
        d->ignored++;
        return;
    }
    struct trace_rank *r = rank_get(fc, fc->file_rank);
    if (!r)
        return;
    int64_t t0 = us_to_ns(ts);
    int64_t t1 = t0 + us_to_ns(jnum(ev, "dur", 0));
    const cJSON *pidv = cJSON_GetObjectItemCaseSensitive(ev, "pid");
    const char *pids = cJSON_IsString(pidv) ? pidv->valuestring : "";
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(args, "stream");
    if (cat && (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") || !strcmp(cat, "Runtime") ||
                !strcmp(cat, "mtia_runtime"))) {
        int64_t corr = jint(args, "correlation", -1, -1, INT64_MAX);
        if (corr >= 0) {
            GROW(fc->corrs, fc->ncorr, fc->capcorr, fc->oom);
            if (!fc->oom)
                fc->corrs[fc->ncorr++] =
                    (struct corr_ts){corr,
                                     t0,
                                     queues_work(name),
                                     t1,
                                     (uint8_t)launch_call_of(name),
                                     end_adj_us(ts, jnum(ev, "dur", 0), t1),
                                     id_key(cJSON_GetObjectItemCaseSensitive(ev, "tid")) * 31 + id_key(pidv)};
        }
        return;
    }
    int gpu = 0, sync = 0, copy = 0, c;
    const char *kind = "cuda"; /* the device's name in the rank's label */
    if (cat && (!strcmp(cat, "kernel") || !strcmp(cat, "Kernel") || !strcmp(cat, "cuda_profiler_range"))) {
        gpu = 1; /* (the range profiler's kernels: no stream, no launch) */
        c = device_cat(name);
    } else if (cat && (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset") || !strcmp(cat, "Memcpy") ||
                       !strcmp(cat, "Memset"))) {
        gpu = copy = 1;
        c = CAT_DATA;
    } else if (cat && !strcmp(cat, "mtia_ccp_events")) {
        if (stream_num(stream) == -1) {
            d->ignored++; /* on no device stream: HTA leaves it out too */
            return;
        }
        gpu = 1;
        c = device_cat(name);
        kind = "mtia";
    } else if (cat && !strcmp(cat, "cuda_sync")) {
        if (stream_num(stream) == -1) {
            d->ignored++; /* a host-wide sync (Event Sync, Context Sync): no stream's time */
            return;
        }
        gpu = sync = 1;
        c = CAT_DATA;
    } else if (cat && !strcmp(cat, "gpu_user_annotation")) {
        if (!strncmp(name, "ProfilerStep#", 13) && t0 > fc->gpu_mark_ns)
            fc->gpu_mark_ns = t0; /* (HTA's last step starts at the latest of these too) */
        d->ignored++;
        return;
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
        if (cat && !strcmp(cat, "user_annotation") && !comm_op_name(name))
            return; /* a user's range: covers ops, is none itself */
        c = foreign_host_cat(name);
    } else {
        d->ignored++; /* python functions, flows, GPU annotations, ... */
        return;
    }
    if (gpu && !sync) {
        /* the device: its own argument, else the process row Kineto puts it on */
        int64_t dev = jint(args, "device", -1, -1, 1 << 20);
        if (dev < 0 && cJSON_IsNumber(pidv))
            dev = jint(ev, "pid", -1, -1, 1 << 20);
        if (dev >= 0 && !strcmp(r->device, "cpu"))
            snprintf(r->device, sizeof(r->device), "%s:%d", kind, (int)dev);
    }
    const cJSON *tidv = cJSON_GetObjectItemCaseSensitive(ev, "tid");
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
    op->queued = 0;
    op->stream = gpu && stream ? (int32_t)clampd((double)stream_num(stream), -1, INT32_MAX) : -1;
    op->launch_end_ns = -1;
    op->launch_call = TRACE_LAUNCH_NONE;
    op->launch_end_adj_us = 0;
    op->corr = gpu ? jint(args, "correlation", -1, -1, INT64_MAX) : -1;
    op->track = track;
    op->cat = (uint8_t)c;
    op->gpu = (uint8_t)gpu;
    op->sync = (uint8_t)sync;
    op->hta_cat = (uint8_t)(gpu ? hta_device_cat(name) : c);
    op->launch_track = -1;
    op->name = name_of(fc, r, name); /* (a CPU op's for the critical path's items) */
    op->bytes = copy ? (uint64_t)jint(args, "bytes", 0, 0, INT64_MAX) : 0;
    op->copy_gbps = copy ? jnum(args, "memory bandwidth (GB/s)", 0) : 0;
    op->end_adj_us = end_adj_us(ts, jnum(ev, "dur", 0), t1);
    op->coll = (uint8_t)(gpu ? (c == CAT_COMM && !sync ? TRACE_COLL_WORK : TRACE_COLL_NONE) : host_coll_role(name));
    const cJSON *coll_name = cJSON_GetObjectItemCaseSensitive(args, "Collective name"); /* (record_param_comms) */
    op->coll_kind = (uint8_t)(!op->coll                   ? COLL_NONE
                              : cJSON_IsString(coll_name) ? trace_coll_kind_of(coll_name->valuestring)
                                                          : trace_coll_kind_of(name));
    op->coll_bytes = op->coll == TRACE_COLL_CALL ? coll_call_bytes(name, args) : 0;
    if (op->coll == TRACE_COLL_WORK && !r->coll_backend[0]) {
        if (gpu)
            snprintf(r->coll_backend, sizeof(r->coll_backend), "%s", ci_contains(name, "nccl") ? "nccl" : "hccl");
        else
            snprintf(r->coll_backend, sizeof(r->coll_backend), "%.*s", (int)strcspn(name, ":"), name);
    }
    r->ngpu += (size_t)(gpu && !sync);
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
        struct corr_ts key = {op->corr, 0, 0, 0, 0, 0, 0};
        const struct corr_ts *hit = bsearch(&key, fc->corrs, fc->ncorr, sizeof(key), corr_cmp);
        if (hit) {
            op->launch_ns = hit->ts;
            op->queued = (uint8_t)hit->queues;
            op->launch_end_ns = hit->end;
            op->launch_call = hit->call;
            op->launch_end_adj_us = hit->end_adj;
            for (size_t k = 0; k < r->ntracks; k++) /* (only a thread that has CPU ops) */
                if (r->track_key[k] == hit->thread)
                    op->launch_track = (int32_t)k;
        }
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

/* ---- which rank a foreign file is, and its window ------------------------ */

/* rank<N> (rank_N, rank-N) in s[0, len), not inside a word; -1: none. */
static int rank_in(const char *s, size_t len)
{
    for (size_t i = 0; i + 4 < len; i++) {
        if (strncasecmp(s + i, "rank", 4) != 0 || (i > 0 && isalpha((unsigned char)s[i - 1])))
            continue;
        size_t j = i + 4;
        if (s[j] == '_' || s[j] == '-')
            j++;
        long v = 0;
        size_t k = j;
        for (; k < len && isdigit((unsigned char)s[k]) && v <= 1 << 20; k++)
            v = v * 10 + (s[k] - '0');
        if (k > j && v <= 1 << 20)
            return (int)v;
    }
    return -1;
}

int trace_rank_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int r = rank_in(base, strlen(base));
    if (r >= 0 || base == path)
        return r;
    const char *dir = base - 1; /* the '/' before the name; the folder's name ends there */
    const char *d0 = dir;
    while (d0 > path && d0[-1] != '/')
        d0--;
    return rank_in(d0, (size_t)(dir - d0));
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

int trace_name_is_trace(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return base[0] != '.' && (ends_with(base, ".json") || ends_with(base, ".json.gz"));
}

int trace_worker_of_name(const char *path, char *w, size_t wlen)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    static const char *const tails[] = {".pt.trace.json", ".pt.trace.json.gz"};
    size_t stem = 0;
    for (size_t i = 0; i < 2 && !stem; i++)
        if (ends_with(base, tails[i]) && n > strlen(tails[i]))
            stem = n - strlen(tails[i]);
    if (!stem)
        return 0;
    size_t k = stem;
    while (k > 0 && isdigit((unsigned char)base[k - 1]))
        k--;
    if (k < stem && k > 1 && base[k - 1] == '.')
        stem = k - 1; /* the time stamp goes */
    snprintf(w, wlen, "%.*s", (int)stem, base);
    return 1;
}

/* The lowest rank no file holds yet. */
static int free_rank(const struct trace_doc *d)
{
    int r = 0;
    for (int i = 0; i < d->nranks && d->ranks[i].rank <= r; i++)
        if (d->ranks[i].rank == r)
            r++;
    return r;
}

/* The rank of a foreign file that names none in its content: its name's,
 * its tensorboard worker's, or the next free one. Returns the rank and
 * sets *from; -1 when out of memory. */
static int rank_by_name(struct trace_doc *d, const char *name, int *from)
{
    int r = trace_rank_of_name(name);
    if (r >= 0) {
        *from = TRACE_RANK_NAME;
        return r;
    }
    char w[128];
    *from = TRACE_RANK_ORDER;
    if (!trace_worker_of_name(name, w, sizeof(w)))
        return free_rank(d);
    *from = TRACE_RANK_WORKER;
    for (int i = 0; i < d->nworkers; i++)
        if (!strcmp(d->workers[i], w))
            return d->worker_rank[i];
    char(*nw)[128] = realloc(d->workers, sizeof(*nw) * (size_t)(d->nworkers + 1));
    if (nw)
        d->workers = nw;
    int *nr = nw ? realloc(d->worker_rank, sizeof(*nr) * (size_t)(d->nworkers + 1)) : NULL;
    if (!nr)
        return -1;
    d->worker_rank = nr;
    snprintf(d->workers[d->nworkers], sizeof(d->workers[0]), "%s", w);
    d->worker_rank[d->nworkers] = free_rank(d);
    return d->worker_rank[d->nworkers++];
}

static int window_cmp(const struct trace_window *a, const struct trace_window *b)
{
    if (a->step_lo != b->step_lo)
        return a->step_lo < b->step_lo ? -1 : 1;
    if (a->t0_ns != b->t0_ns)
        return a->t0_ns < b->t0_ns ? -1 : 1;
    return a->file - b->file;
}

/* The window of r that this file added (its ops and steps from ops_from
 * and steps_from on), put in order among the others; a window with the
 * steps of another (the same file twice, two runs in one folder), or with
 * the same extent and ops when they have no steps, marks r repeated.
 * Returns its index, -1 when the file added nothing, -2 out of memory. */
static int add_window(struct trace_doc *d, struct trace_rank *r, const struct file_ctx *fc, int from, size_t ops_from,
                      size_t steps_from)
{
    if (r->nops == ops_from && r->nsteps == steps_from && r->nmems == fc->mems_start)
        return -1;
    if (r->nmems > fc->mems_start)
        qsort(r->mems + fc->mems_start, r->nmems - fc->mems_start, sizeof(*r->mems), mem_cmp);
    struct trace_window w = {.ops_from = ops_from,
                             .ops_to = r->nops,
                             .mems_from = fc->mems_start,
                             .mems_to = r->nmems,
                             .steps_from = steps_from,
                             .steps_to = r->nsteps,
                             .t0_ns = INT64_MAX,
                             .t1_ns = INT64_MIN,
                             .step_lo = UINT32_MAX,
                             .step_hi = 0,
                             .gpu_mark_ns = fc->gpu_mark_ns,
                             .file = fc->file,
                             .rank_from = (uint8_t)from,
                             .sub_us = (uint8_t)fc->sub_us};
    for (size_t i = ops_from; i < r->nops; i++) {
        w.t0_ns = r->ops[i].t0_ns < w.t0_ns ? r->ops[i].t0_ns : w.t0_ns;
        w.t1_ns = r->ops[i].t1_ns > w.t1_ns ? r->ops[i].t1_ns : w.t1_ns;
    }
    for (size_t i = steps_from; i < r->nsteps; i++) {
        const struct trace_step_info *st = &r->steps[i];
        w.t0_ns = st->t0_ns < w.t0_ns ? st->t0_ns : w.t0_ns;
        w.t1_ns = st->t1_ns > w.t1_ns ? st->t1_ns : w.t1_ns;
        w.step_lo = st->step < w.step_lo ? st->step : w.step_lo;
        w.step_hi = st->step > w.step_hi ? st->step : w.step_hi;
    }
    int again = 0;
    for (size_t i = 0; i < r->nwindows; i++) {
        const struct trace_window *o = &r->windows[i];
        if (w.step_lo <= w.step_hi && o->step_lo <= o->step_hi)
            again |= w.step_lo <= o->step_hi && o->step_lo <= w.step_hi;
        else if (w.step_lo > w.step_hi && o->step_lo > o->step_hi)
            again |= w.t0_ns == o->t0_ns && w.t1_ns == o->t1_ns && w.ops_to - w.ops_from == o->ops_to - o->ops_from;
    }
    if (again && !r->repeated) {
        r->repeated = 1;
        if (d->repeated_ranks++ == 0)
            d->repeat_rank = r->rank;
    }
    int oom = 0;
    GROW(r->windows, r->nwindows, r->cap_windows, oom);
    if (oom)
        return -2;
    size_t at = r->nwindows;
    while (at > 0 && window_cmp(&w, &r->windows[at - 1]) < 0)
        at--;
    memmove(&r->windows[at + 1], &r->windows[at], sizeof(w) * (r->nwindows - at));
    r->windows[at] = w;
    r->nwindows++;
    return (int)at;
}

/* The members of a trace's top-level object, from just inside its brace:
 * where traceEvents' array starts (*events), and the members read here
 * parsed (distributedInfo, ddptop, ddptopTraceEnd; the caller frees them).
 * Returns where the scan stopped: the closing brace, a bad byte
 * (fc->bad_byte) or the end of a cut file (*cut). */
static const char *scan_members(const char *p, const char *e, struct file_ctx *fc, const char **events, int *cut,
                                cJSON **dist, cJSON **dd, cJSON **end)
{
    for (;;) {
        p = skip_ws(p, e);
        if (p >= e) {
            *cut = 1;
            break;
        }
        if (*p == '}')
            break;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '"') {
            fc->bad_byte = p;
            break;
        }
        const char *ks = p + 1, *ke = scan_string(p, e);
        if (!ke) {
            *cut = 1;
            break;
        }
        size_t klen = (size_t)(ke - 1 - ks);
        p = skip_ws(ke, e);
        if (p < e && *p != ':') {
            fc->bad_byte = p;
            break;
        }
        if (p >= e) {
            *cut = 1;
            break;
        }
        p = skip_ws(p + 1, e);
        const char *vend = scan_value(p, e, &fc->bad_byte);
        if (fc->bad_byte)
            break;
        if (klen == 11 && !memcmp(ks, "traceEvents", 11) && p < e && *p == '[') {
            *events = p;
            if (!vend) {
                *cut = 1;
                break;
            }
        } else if (!vend) {
            *cut = 1;
            break;
        } else if (klen == 15 && !memcmp(ks, "distributedInfo", 15)) {
            cJSON_Delete(*dist);
            *dist = cJSON_ParseWithLength(p, (size_t)(vend - p));
        } else if (klen == 6 && !memcmp(ks, "ddptop", 6)) {
            cJSON_Delete(*dd);
            *dd = cJSON_ParseWithLength(p, (size_t)(vend - p));
        } else if (klen == 14 && !memcmp(ks, "ddptopTraceEnd", 14)) {
            cJSON_Delete(*end);
            *end = cJSON_ParseWithLength(p, (size_t)(vend - p));
        }
        p = vend;
    }
    return p;
}

/* What a trace's distributedInfo (PyTorch's), ddptop and ddptopTraceEnd
 * members say of the document: its backend, world, rank (where none was
 * given), algorithm, run and end (*have_end: the writer finished it). */
static void take_members(struct trace_doc *d, struct file_ctx *fc, const cJSON *dist, const cJSON *dd, const cJSON *end,
                         int rank_given, int *have_end)
{
    if (dist) {
        const char *b = jstr(dist, "backend");
        if (b && !d->backend[0])
            snprintf(d->backend, sizeof(d->backend), "%s", b);
        int64_t rk = jint(dist, "rank", -1, -1, 1 << 20), ws = jint(dist, "world_size", 0, 0, 1 << 20);
        if (rk >= 0 && !dd && rank_given < 0)
            fc->file_rank = (int)rk;
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
        *have_end = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(end, "complete"));
        const char *st = jstr(end, "state");
        if (st)
            snprintf(d->state, sizeof(d->state), "%s", st);
        read_stages(d, cJSON_GetObjectItemCaseSensitive(end, "stages"));
        d->spans_dropped += (uint64_t)jint(end, "spans_dropped", 0, 0, INT64_MAX);
    }
}

/* One file's plain JSON text into d (trace_read_cycle's contract, less
 * TRACE_READ_WHOLE). */
static int read_json(struct trace_doc *d, const char *buf, size_t n, const char *name, int rank_given,
                     struct trace_cycle *out, char *err, size_t errlen)
{
    const char *p = buf, *e = buf + n;
    p = skip_ws(p, e);
    if (p >= e || (*p != '{' && *p != '[')) {
        snprintf(err, errlen, "%s: not a Chrome trace (expected a JSON object or array)", name);
        return -1;
    }
    struct file_ctx fc = {.d = d, .name = name, .file = d->nfiles, .file_rank = -1, .gpu_mark_ns = INT64_MIN};
    const char *events = NULL;
    int cut = 0, have_end = 0, rank_from = TRACE_RANK_TRACE;
    if (*p == '[') {
        events = p;
        fc.flavor = TRACE_AUTOGRAD;
    } else {
        /* the top-level members: remember the events, parse the rest */
        cJSON *dist = NULL, *dd = NULL, *end = NULL;
        p = scan_members(p + 1, e, &fc, &events, &cut, &dist, &dd, &end);
        if (fc.bad_byte || (!cut && trailing_text(buf, p, e, name, err, errlen) != 0)) {
            if (fc.bad_byte)
                bad_json(err, errlen, name, buf, fc.bad_byte);
            cJSON_Delete(dist);
            cJSON_Delete(dd);
            cJSON_Delete(end);
            return -1;
        }
        if (!events && !cut) {
            /* whole, and no trace in it: told apart before it touches d */
            snprintf(err, errlen,
                     "%s: not a trace: a JSON object without traceEvents (such as a PyTorch execution trace)", name);
            cJSON_Delete(dist);
            cJSON_Delete(dd);
            cJSON_Delete(end);
            return TRACE_READ_NOT_TRACE;
        }
        fc.flavor = dd ? TRACE_DDPTOP : TRACE_KINETO;
        take_members(d, &fc, dist, dd, end, rank_given, &have_end);
        cJSON_Delete(dist);
        cJSON_Delete(dd);
        cJSON_Delete(end);
    }
    if (fc.flavor != TRACE_DDPTOP && rank_given >= 0) {
        fc.file_rank = rank_given;
        rank_from = TRACE_RANK_GIVEN;
    } else if (fc.flavor != TRACE_DDPTOP && fc.file_rank < 0) {
        fc.file_rank = rank_by_name(d, name, &rank_from);
        if (fc.file_rank < 0) {
            snprintf(err, errlen, "%s: out of memory", name);
            return -1;
        }
        if (rank_from != TRACE_RANK_NAME && d->unnamed_files++ == 0)
            snprintf(d->unnamed_first, sizeof(d->unnamed_first), "%s", name);
    }
    if (d->nfiles == 0)
        d->flavor = fc.flavor;
    else if ((d->flavor == TRACE_DDPTOP) != (fc.flavor == TRACE_DDPTOP))
        d->mixed = 1;
    if (!events) {
        /* cut before the events began: an empty trace */
    } else {
        struct trace_rank *r = fc.flavor != TRACE_DDPTOP ? rank_get(&fc, fc.file_rank) : NULL;
        size_t steps_start = r ? r->nsteps : 0;
        if (r) {
            fc.ops_start = r->nops;
            fc.mems_start = r->nmems;
        }
        const char *close = NULL;
        if (!fc.oom && !fc.too_many)
            close = read_events(&fc, events, e, &cut);
        /* a bare array is the whole document: nothing may follow it */
        if (close && events == skip_ws(buf, e) && trailing_text(buf, close, e, name, err, errlen) != 0) {
            free(fc.corrs);
            return -1;
        }
        if (!fc.oom && !fc.too_many && !fc.bad_byte && fc.flavor != TRACE_DDPTOP) {
            resolve_launches(&fc);
            r = rank_get(&fc, fc.file_rank);
            int w = r ? add_window(d, r, &fc, rank_from, fc.ops_start, steps_start) : -2;
            fc.oom |= w == -2;
            if (out)
                *out = (struct trace_cycle){fc.file_rank, w < 0 ? -1 : w, rank_from};
        }
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

/* Whether the text holds a whole JSON value (text after it aside); a
 * malformed one counts as whole, for the reader to refuse. */
static int json_whole(const char *buf, size_t n)
{
    const char *bad, *p = skip_ws(buf, buf + n);
    return scan_value(p, buf + n, &bad) != NULL || bad != NULL;
}

int trace_read_cycle(struct trace_doc *d, const char *buf, size_t n, const char *name, int rank, unsigned flags,
                     struct trace_cycle *out, char *err, size_t errlen)
{
    char *plain = NULL, why[256];
    size_t nplain = 0;
    if (out)
        *out = (struct trace_cycle){-1, -1, TRACE_RANK_TRACE};
    enum infile_gz gz = infile_gunzip(buf, n, &plain, &nplain, why, sizeof(why));
    if (gz == INFILE_GZ_BIG) {
        snprintf(err, errlen, "%s: %s", name, why); /* (never a writer still at it) */
        return -1;
    }
    if ((flags & TRACE_READ_WHOLE) &&
        (gz == INFILE_GZ_CUT || !json_whole(gz == INFILE_PLAIN ? buf : plain, gz == INFILE_PLAIN ? n : nplain))) {
        free(plain);
        return 1; /* (a writer still at it) */
    }
    if ((gz == INFILE_GZ_BAD || gz == INFILE_GZ_CUT) && nplain == 0) {
        snprintf(err, errlen, "%s: corrupt gzip stream (zlib: %s)", name, why);
        free(plain);
        return -1;
    }
    /* a compressed stream cut short, or damaged part way: use what decoded,
     * as a plain file cut short is used */
    int rc = gz == INFILE_PLAIN ? read_json(d, buf, n, name, rank, out, err, errlen)
                                : read_json(d, plain, nplain, name, rank, out, err, errlen);
    free(plain);
    if (rc == 0 && (gz == INFILE_GZ_CUT || gz == INFILE_GZ_BAD)) {
        d->truncated = 1;
        d->complete = 0;
    }
    return rc;
}

int trace_read_buffer(struct trace_doc *d, const char *buf, size_t n, const char *name, char *err, size_t errlen)
{
    return trace_read_cycle(d, buf, n, name, -1, 0, NULL, err, errlen);
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

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void trace_paths_free(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

int trace_list_dir(const char *dir, char ***paths, int *n, char *err, size_t errlen)
{
    *paths = NULL;
    *n = 0;
    DIR *dp = opendir(dir);
    if (!dp) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **v = NULL;
    int nv = 0, cap = 0, rc = 0;
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    for (struct dirent *de; (de = readdir(dp)) != NULL;) {
        if (!trace_name_is_trace(de->d_name))
            continue;
        size_t len = dl + 1 + strlen(de->d_name) + 1;
        char *path = malloc(len);
        struct stat st;
        if (path)
            snprintf(path, len, "%s%s%s", dir, slash ? "" : "/", de->d_name);
        if (path && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) {
            free(path); /* a folder named x.json, a FIFO...: not a trace */
            continue;
        }
        if (path && nv == cap) {
            int nc = cap ? cap * 2 : 16;
            char **nvv = realloc(v, sizeof(*v) * (size_t)nc);
            if (nvv) {
                v = nvv;
                cap = nc;
            }
        }
        if (!path || nv == cap) {
            free(path);
            snprintf(err, errlen, "%s: out of memory listing the folder", dir);
            rc = -1;
            break;
        }
        v[nv++] = path;
    }
    closedir(dp);
    if (rc != 0) {
        trace_paths_free(v, nv);
        return -1;
    }
    if (nv > 1)
        qsort(v, (size_t)nv, sizeof(*v), name_cmp);
    *paths = v;
    *n = nv;
    return 0;
}
