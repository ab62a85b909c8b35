/* config_kinds.c - the kinds of value an option takes (config_opt.h):
 * how each is read, checked against its row's bounds or names, and put
 * into words. describe's words follow "expected" in an error and stand in
 * the option's --help line, so the two cannot disagree with the parser.
 */
#include "config_opt.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_num.h"

/* ---- reading values ------------------------------------------------------ */

static int parse_ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A byte count with an optional K, M or G (binary) suffix, then an optional B. */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ULL << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1ULL << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1ULL << 30;
    else if (*end)
        return -1;
    if (*end && end[1] && !((end[1] == 'B' || end[1] == 'b') && !end[2]))
        return -1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

/* Splits a comma list into 1 to CFG_MAX_LIST items of 1 to CFG_NAME-1 characters. */
int split_list(const char *s, char (*items)[CFG_NAME], int *n)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= CFG_NAME || *n >= CFG_MAX_LIST)
            return -1;
        memcpy(items[*n], p, len);
        items[*n][len] = 0;
        (*n)++;
        if (!c)
            return 0;
        p = c + 1;
    }
}

/* "A:B": copies A into head (which holds len bytes) and returns B, or NULL
 * when there is no colon or A does not fit. */
static const char *split_pair(const char *s, char *head, size_t len)
{
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= len)
        return NULL;
    memcpy(head, s, (size_t)(colon - s));
    head[colon - s] = 0;
    return colon + 1;
}

/* An integer goes to an int or a long field, a number to a float or a
 * double: the field's size tells which. */
_Static_assert(sizeof(long) > sizeof(int), "int and long fields are told apart by their size");

/* ---- the kinds ------------------------------------------------------------ */

static int flag_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    *(int *)dst = (int)o->lo;
    return 0;
}

static int int_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    long long v;
    if ((o->flags & F_DIGITS) && strspn(arg, "0123456789") != strlen(arg))
        return -1;
    if (parse_ll(arg, o->lo, o->hi, &v) != 0)
        return -1;
    if (o->size == sizeof(int))
        *(int *)dst = (int)v;
    else
        *(long *)dst = (long)v;
    return 0;
}

static void int_describe(const struct opt *o, char *buf, size_t len)
{
    if (o->hi < INT_MAX)
        snprintf(buf, len, "an integer from %lld to %lld", o->lo, o->hi);
    else if (o->lo == 0 || o->lo == 1)
        snprintf(buf, len, "a %s integer", o->lo ? "positive" : "non-negative");
    else
        snprintf(buf, len, "an integer from %lld", o->lo);
}

/* The whole uint64_t range (a seed). */
static int u64_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-')
        return -1;
    *(uint64_t *)dst = v;
    return 0;
}

static void u64_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "a non-negative integer");
}

static int real_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    double v;
    if (parse_double(arg, o->min, o->max, &v) != 0)
        return -1;
    if (o->size == sizeof(float))
        *(float *)dst = (float)v;
    else
        *(double *)dst = v;
    return 0;
}

static void real_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "a number from %.12g to %.12g", o->min, o->max);
}

static int bytes_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    uint64_t v;
    if (parse_bytes(arg, &v) != 0 || v < (uint64_t)o->lo || v > (uint64_t)o->hi)
        return -1;
    *(uint64_t *)dst = v;
    return 0;
}

static void bytes_describe(const struct opt *o, char *buf, size_t len)
{
    char lo[32], hi[32];
    fmt_bytes_exact(lo, sizeof(lo), (uint64_t)o->lo);
    fmt_bytes_exact(hi, sizeof(hi), (uint64_t)o->hi);
    snprintf(buf, len, "a size from %s to %s, with an optional K, M or G suffix", lo, hi);
}

/* Text of 1 to hi characters (hi 0: as many as the field holds). */
static size_t text_max(const struct opt *o)
{
    return o->hi ? (size_t)o->hi : o->size - 1;
}

static int text_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    if (!*arg || strlen(arg) > text_max(o) || ((o->flags & F_BARE) && strchr(arg, '/')))
        return -1;
    snprintf(dst, o->size, "%s", arg);
    return 0;
}

static void text_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "a %s of 1 to %zu characters%s", o->what, text_max(o),
             (o->flags & F_BARE) ? ", without '/'" : "");
}

/* The name of choice value v, or NULL where the names end. */
static const char *choice_name(const struct opt *o, long long v)
{
    if (v > o->hi)
        return NULL;
    return o->name_of ? o->name_of((int)v) : o->names[v];
}

static int same_name(const char *name, const char *s, int dash)
{
    for (; *name && *s; name++, s++)
        if (*name != *s && !(dash && *name == '_' && *s == '-'))
            return 0;
    return *name == *s;
}

/* The value of the choice named s, or -1. */
static long long choice_find(const struct opt *o, const char *s)
{
    const char *name;
    for (long long v = o->lo; (name = choice_name(o, v)); v++)
        if (same_name(name, s, o->flags & F_DASH))
            return v;
    return -1;
}

/* The names joined by sep. */
void choice_join(const struct opt *o, const char *sep, char *buf, size_t len)
{
    const char *name;
    size_t n = 0;
    buf[0] = 0;
    for (long long v = o->lo; (name = choice_name(o, v)) && n < len; v++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", v > o->lo ? sep : "", name);
}

static void choice_describe(const struct opt *o, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "one of ");
    if (n < len)
        choice_join(o, ", ", buf + n, len - n);
}

/* A choice stored as its value (an enum). */
static int choice_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    long long v = choice_find(o, arg);
    if (v < 0)
        return -1;
    *(int *)dst = (int)v;
    return 0;
}

/* A choice stored as its name. */
static int name_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    long long v = choice_find(o, arg);
    if (v < 0)
        return -1;
    snprintf(dst, o->size, "%s", choice_name(o, v));
    return 0;
}

/* A comma list of integers in [lo, hi], each setting its bit of a
 * uint64_t; bits set by an earlier use of the option stay. */
static int bits_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char items[CFG_MAX_LIST][CFG_NAME];
    int n;
    if (split_list(arg, items, &n) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        long long v;
        if (parse_ll(items[i], o->lo, o->hi, &v) != 0)
            return -1;
        *(uint64_t *)dst |= 1ULL << v;
    }
    return 0;
}

static void bits_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "integers from %lld to %lld, comma-separated", o->lo, o->hi);
}

/* --slow-rank R:F: rank in [lo, hi], factor in [min, max]. */
static int slow_rank_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char rank[32];
    const char *factor = split_pair(arg, rank, sizeof(rank));
    long long r;
    double f;
    if (!factor || parse_ll(rank, o->lo, o->hi, &r) != 0 || parse_double(factor, o->min, o->max, &f) != 0)
        return -1;
    cfg->base.slow_rank = (int)r;
    cfg->base.slow_factor = f;
    return 0;
}

static void slow_rank_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "R:F with a rank R from %lld to %lld and a factor F from %.12g to %.12g", o->lo, o->hi, o->min,
             o->max);
}

/* --input CxHxW: channels in [lo, hi], sides in [min, max]. */
static int input_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    int v[3], n = 0;
    char *end;
    const char *p = arg;
    for (; n < 3; n++) {
        if (*p < '0' || *p > '9')
            return -1;
        long x = strtol(p, &end, 10);
        long lo = n == 0 ? o->lo : (long)o->min, hi = n == 0 ? o->hi : (long)o->max;
        if (x < lo || x > hi || end - p > 5)
            return -1;
        v[n] = (int)x;
        p = end;
        if (n < 2 && *p++ != 'x')
            return -1;
    }
    if (*p)
        return -1;
    memcpy(cfg->base.input, v, sizeof(v));
    return 0;
}

static void input_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "CxHxW with C from %lld to %lld and H and W from %.0f to %.0f", o->lo, o->hi, o->min, o->max);
}

/* --trace-steps A:B: steps in [lo, hi]; an empty A is lo, an empty B is open. */
static int steps_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char head[32];
    const char *tail = split_pair(arg, head, sizeof(head));
    long long a = o->lo, z = -1;
    if (!tail || (head[0] && parse_ll(head, o->lo, o->hi, &a) != 0) ||
        (tail[0] && parse_ll(tail, o->lo, o->hi, &z) != 0) || (z >= 0 && z < a))
        return -1;
    cfg->trace_step_from = (long)a;
    cfg->trace_step_to = (long)z;
    return 0;
}

static void steps_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "A:B with %lld <= A <= B, either may be empty", o->lo);
}

/* --trainable: all, classifier or last:K with K in [lo, hi]. */
static int trainable_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    long long k;
    if (strcmp(arg, "all") && strcmp(arg, "classifier") &&
        (strncmp(arg, "last:", 5) || parse_ll(arg + 5, o->lo, o->hi, &k) != 0))
        return -1;
    snprintf(dst, o->size, "%s", arg);
    return 0;
}

static void trainable_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "all, classifier or last:K with K from %lld to %lld", o->lo, o->hi);
}

static const char *const fault_names[] = {[FAULT_NONE] = "none",
                                          [FAULT_NAN] = "nan",
                                          [FAULT_CRASH] = "crash",
                                          [FAULT_HANG] = "hang",
                                          [FAULT_SLOW] = "slow",
                                          [FAULT_OOM] = "oom",
                                          [FAULT_COMM_ERROR] = "comm-error",
                                          [FAULT_OVERFLOW] = "overflow",
                                          NULL};

const char *fault_name(int kind)
{
    return kind >= 0 && kind < FAULT_KINDS ? fault_names[kind] : "?";
}

/* --inject-fault rank=R,step=S,kind=K, in any order, each once: R in
 * [lo, hi], S in [0, max], K a fault name other than none. */
static int fault_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char items[CFG_MAX_LIST][CFG_NAME];
    int n;
    struct fault f = {.kind = FAULT_NONE, .rank = -1, .step = -1};
    if (split_list(arg, items, &n) != 0 || n != 3)
        return -1;
    for (int i = 0; i < n; i++) {
        char *v = strchr(items[i], '=');
        long long x;
        if (!v)
            return -1;
        *v++ = 0;
        const char *key = items[i];
        if (!strcmp(key, "rank") && f.rank < 0 && parse_ll(v, o->lo, o->hi, &x) == 0)
            f.rank = (int)x;
        else if (!strcmp(key, "step") && f.step < 0 && parse_ll(v, 0, LONG_MAX, &x) == 0)
            f.step = (long)x;
        else if (!strcmp(key, "kind") && f.kind == FAULT_NONE) {
            for (int k = FAULT_NAN; k < FAULT_KINDS; k++)
                if (!strcmp(v, fault_names[k]))
                    f.kind = k;
            if (f.kind == FAULT_NONE)
                return -1;
        } else
            return -1;
    }
    *(struct fault *)dst = f;
    return 0;
}

static void fault_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len,
             "rank=R,step=S,kind=K with a rank R from %lld to %lld, a step S from 0, and K one of nan, crash, hang, "
             "slow, oom, comm-error, overflow",
             o->lo, o->hi);
}

/* A rate such as 25GB/s, 100Gb/s or 1e9 (bytes/s): *v in bytes/s. */
static int parse_rate(const char *s, double *v)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s || !(x > 0) || x > 1e15)
        return -1;
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1},        {"B/s", 1},        {"KB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9},
                 {"TB/s", 1e12}, {"Kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcmp(end, units[i].unit)) {
            *v = x * units[i].scale;
            return 0;
        }
    return -1;
}

/* A time such as 5us, 1.5ms, 0.001s or 300ns: *v in seconds. */
static int parse_time(const char *s, double *v)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s || !(x >= 0) || x > 1e3)
        return -1;
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcmp(end, units[i].unit)) {
            *v = x * units[i].scale;
            return 0;
        }
    return -1;
}

/* --link BW,LAT */
static int link_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    char bw[64];
    const char *comma = strchr(arg, ',');
    if (!comma || (size_t)(comma - arg) >= sizeof(bw))
        return -1;
    memcpy(bw, arg, (size_t)(comma - arg));
    bw[comma - arg] = 0;
    double b, l;
    if (parse_rate(bw, &b) != 0 || parse_time(comma + 1, &l) != 0)
        return -1;
    *(struct link_opt *)dst = (struct link_opt){.bw = b, .lat = l};
    return 0;
}

static void link_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "BW,LAT: a bandwidth such as 25GB/s or 100Gb/s and a latency such as 5us");
}

/* --baseline auto|single|ranks1|RUN */
static int baseline_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    long long v;
    if (!strcmp(arg, "auto"))
        *(int *)dst = BASELINE_AUTO;
    else if (!strcmp(arg, "single"))
        *(int *)dst = BASELINE_SINGLE;
    else if (!strcmp(arg, "ranks1"))
        *(int *)dst = BASELINE_RANKS1;
    else if (strspn(arg, "0123456789") == strlen(arg) && parse_ll(arg, 0, o->hi, &v) == 0)
        *(int *)dst = (int)v;
    else
        return -1;
    return 0;
}

static void baseline_describe(const struct opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "auto, single, ranks1, or a run's number from 0 to %lld", o->hi);
}

/* --rendezvous file:DIR or tcp:HOST:PORT into r: 0, or -1 with why the
 * value is refused in why (the one reading of the option: procs.c and
 * procs_net_wire.c take r). */
static int rendezvous_read(const char *arg, struct rendezvous *r, char *why, size_t len)
{
    memset(r, 0, sizeof(*r));
    if (!*arg || strlen(arg) >= sizeof(r->spec)) {
        snprintf(why, len, "expected a rendezvous of 1 to %zu characters", sizeof(r->spec) - 1);
        return -1;
    }
    snprintf(r->spec, sizeof(r->spec), "%s", arg);
    if (strncmp(arg, "file:", 5) == 0 && arg[5]) {
        r->kind = RDV_FILE;
        snprintf(r->folder, sizeof(r->folder), "%s", arg + 5);
        return 0;
    }
    if (strncmp(arg, "tcp:", 4) != 0) {
        snprintf(why, len,
                 "expected file:DIR (a folder every process can reach) or tcp:HOST:PORT (process 0's address)");
        return -1;
    }
    const char *at = arg + 4, *colon = strrchr(at, ':');
    char *end = NULL;
    long v = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == at || (size_t)(colon - at) >= sizeof(r->host) || !colon[1] || *end || v < 1 || v > 65535) {
        snprintf(why, len, "expected tcp:HOST:PORT, process 0's host and a port from 1 to 65535");
        return -1;
    }
    memcpy(r->host, at, (size_t)(colon - at));
    r->host[colon - at] = 0;
    r->port = (int)v;
    if (strchr(r->host, ':') || r->host[0] == '[') {
        snprintf(why, len, "tcp: takes a host name or an IPv4 address, not IPv6");
        return -1;
    }
    r->kind = RDV_TCP;
    return 0;
}

static int rendezvous_parse(const struct opt *o, struct config *cfg, void *dst, const char *arg)
{
    (void)o;
    (void)cfg;
    char why[160];
    struct rendezvous *r = dst;
    if (rendezvous_read(arg, r, why, sizeof(why)) == 0)
        return 0;
    r->kind = RDV_REFUSED;
    return -1;
}

static const char *rendezvous_why(const struct opt *o, const char *arg, char *buf, size_t len)
{
    (void)o;
    struct rendezvous r;
    rendezvous_read(arg, &r, buf, len);
    return buf;
}

const struct opt_kind k_flag = {.takes_arg = 0, .parse = flag_parse, .describe = NULL};
const struct opt_kind k_int = {.takes_arg = 1, .parse = int_parse, .describe = int_describe};
const struct opt_kind k_u64 = {.takes_arg = 1, .parse = u64_parse, .describe = u64_describe};
const struct opt_kind k_real = {.takes_arg = 1, .parse = real_parse, .describe = real_describe};
const struct opt_kind k_bytes = {.takes_arg = 1, .parse = bytes_parse, .describe = bytes_describe};
const struct opt_kind k_text = {.takes_arg = 1, .parse = text_parse, .describe = text_describe};
const struct opt_kind k_choice = {.takes_arg = 1, .parse = choice_parse, .describe = choice_describe};
const struct opt_kind k_name = {.takes_arg = 1, .parse = name_parse, .describe = choice_describe};
const struct opt_kind k_bits = {.takes_arg = 1, .parse = bits_parse, .describe = bits_describe};
const struct opt_kind k_slow_rank = {.takes_arg = 1, .parse = slow_rank_parse, .describe = slow_rank_describe};
const struct opt_kind k_input = {.takes_arg = 1, .parse = input_parse, .describe = input_describe};
const struct opt_kind k_steps = {.takes_arg = 1, .parse = steps_parse, .describe = steps_describe};
const struct opt_kind k_trainable = {.takes_arg = 1, .parse = trainable_parse, .describe = trainable_describe};
const struct opt_kind k_fault = {.takes_arg = 1, .parse = fault_parse, .describe = fault_describe};
const struct opt_kind k_baseline = {.takes_arg = 1, .parse = baseline_parse, .describe = baseline_describe};
const struct opt_kind k_link = {.takes_arg = 1, .parse = link_parse, .describe = link_describe};
const struct opt_kind k_rendezvous = {.takes_arg = 1, .parse = rendezvous_parse, .why = rendezvous_why};
/* answered by config_parse itself */
const struct opt_kind k_help = {.takes_arg = 0, .parse = NULL, .describe = NULL};
const struct opt_kind k_version = {.takes_arg = 0, .parse = NULL, .describe = NULL};

/* Choices (k_choice, k_name) refuse a value as "unknown <what>". */
int is_choice(const struct opt *o)
{
    return o->kind->describe == choice_describe;
}
