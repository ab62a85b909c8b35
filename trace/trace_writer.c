/* trace_writer.c - streaming Chrome trace-event JSON with whole-event
 * batches (see trace_writer.h for the on-disk guarantees).
 *
 * Formatting is done by hand (no printf on the hot path): a million events a
 * second must cost the collector thread well under a second.
 */
#include "trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "outfile.h"

struct trace_writer {
    char path[1024];
    struct outfile out; /* the file, renamed into place once its header is written */
    int fd;             /* plain output, or -1 */
    gzFile gz;          /* gzip output, or NULL */
    char *buf;
    size_t len, cap;
    size_t event_start; /* where the event being built began */
    uint64_t events;    /* events completed */
    uint64_t bytes;     /* bytes handed to the kernel (uncompressed) */
    int first;          /* no event written yet: no leading comma */
    int in_args;        /* args object open and has a member */
    int args_any;
    int failed;
    char err[1400];
};

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void fail(struct trace_writer *w, const char *what, int errnum)
{
    if (w->failed)
        return;
    w->failed = 1;
    snprintf(w->err, sizeof(w->err), "trace %s: %s: %s (after %llu events, %llu bytes); the file is incomplete",
             w->path, what, errnum ? strerror(errnum) : "error", (unsigned long long)w->events,
             (unsigned long long)w->bytes);
}

static int sink_write(struct trace_writer *w, const char *p, size_t n)
{
    if (w->failed)
        return -1;
    if (w->gz) {
        while (n > 0) {
            unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            errno = 0;
            int k = gzwrite(w->gz, p, chunk);
            if (k <= 0) {
                int e = errno;
                int zerr;
                const char *zmsg = gzerror(w->gz, &zerr);
                if (zerr == Z_ERRNO && e) {
                    fail(w, "write failed", e);
                } else {
                    fail(w, zmsg && *zmsg ? zmsg : "gzip write failed", 0);
                }
                return -1;
            }
            p += k;
            n -= (size_t)k;
            w->bytes += (uint64_t)k;
        }
        /* a sync flush puts every byte so far into the file in a form a
         * reader can decompress, even if we are killed before gzclose */
        errno = 0;
        if (gzflush(w->gz, Z_SYNC_FLUSH) != Z_OK) {
            int e = errno;
            fail(w, "write failed", e ? e : EIO);
            return -1;
        }
        return 0;
    }
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            fail(w, "write failed", errno);
            return -1;
        }
        p += k;
        n -= (size_t)k;
        w->bytes += (uint64_t)k;
    }
    return 0;
}

int trace_writer_flush(struct trace_writer *w)
{
    if (w->failed)
        return -1;
    /* only whole events go out: keep the one being built */
    size_t whole = w->event_start;
    if (whole == 0)
        return 0;
    int rc = sink_write(w, w->buf, whole);
    memmove(w->buf, w->buf + whole, w->len - whole);
    w->len -= whole;
    w->event_start = 0;
    return rc;
}

static int reserve(struct trace_writer *w, size_t more)
{
    if (w->len + more <= w->cap)
        return 0;
    size_t nc = w->cap * 2;
    while (nc < w->len + more)
        nc *= 2;
    char *b = realloc(w->buf, nc);
    if (!b) {
        fail(w, "out of memory", ENOMEM);
        return -1;
    }
    w->buf = b;
    w->cap = nc;
    return 0;
}

/* Appends raw bytes; a failed writer drops them. */
static void put(struct trace_writer *w, const char *s, size_t n)
{
    if (w->failed || reserve(w, n) != 0)
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

#define PUTS(w, lit) put((w), (lit), sizeof(lit) - 1)

static void put_cstr(struct trace_writer *w, const char *s)
{
    put(w, s, strlen(s));
}

/* Escaped string contents (no quotes). */
static void put_escaped(struct trace_writer *w, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(w, run, (size_t)(s - run));
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(w, esc, 2);
        } else {
            static const char hex[] = "0123456789abcdef";
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            put(w, esc, 6);
        }
        run = s + 1;
    }
    put(w, run, (size_t)(s - run));
}

static void put_quoted(struct trace_writer *w, const char *s)
{
    PUTS(w, "\"");
    put_escaped(w, s);
    PUTS(w, "\"");
}

static void put_u64(struct trace_writer *w, uint64_t v)
{
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(w, tmp + i, (size_t)(24 - i));
}

static void put_i64(struct trace_writer *w, int64_t v)
{
    if (v < 0) {
        PUTS(w, "-");
        put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
}

/* Nanoseconds as microseconds with exactly three decimals. */
static void put_us(struct trace_writer *w, int64_t ns)
{
    uint64_t a;
    if (ns < 0) {
        PUTS(w, "-");
        a = (uint64_t)0 - (uint64_t)ns;
    } else {
        a = (uint64_t)ns;
    }
    put_u64(w, a / 1000);
    char frac[4] = {'.', (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10), (char)('0' + a % 10)};
    put(w, frac, 4);
}

static void put_key(struct trace_writer *w, const char *key)
{
    PUTS(w, ",\"");
    put_escaped(w, key);
    PUTS(w, "\":");
}

size_t trace_writer_quote(char *buf, size_t cap, const char *s)
{
    size_t n = 0;
#define EMIT(ch)                                                                                                       \
    do {                                                                                                               \
        if (n + 1 < cap)                                                                                               \
            buf[n] = (ch);                                                                                             \
        n++;                                                                                                           \
    } while (0)
    EMIT('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            EMIT('\\');
            EMIT((char)c);
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            EMIT('\\');
            EMIT('u');
            EMIT('0');
            EMIT('0');
            EMIT(hex[c >> 4]);
            EMIT(hex[c & 15]);
        } else {
            EMIT((char)c);
        }
    }
    EMIT('"');
#undef EMIT
    if (cap)
        buf[n < cap ? n : cap - 1] = 0;
    return n;
}

int trace_writer_open(struct trace_writer **out, const char *path, const char *header, char *err, size_t errlen)
{
    *out = NULL;
    struct trace_writer *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "trace %s: out of memory", path);
        return -1;
    }
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->cap = TRACE_WRITER_BATCH + 64 * 1024;
    w->buf = malloc(w->cap);
    w->fd = -1;
    w->first = 1;
    if (!w->buf) {
        free(w);
        snprintf(err, errlen, "trace %s: out of memory", path);
        return -1;
    }
    /* a new file, renamed over the name below once it holds the header:
     * never written through a link, and a killed run's trace is found at
     * its name */
    if (outfile_open(&w->out, path, err, errlen) != 0) {
        char why[1100];
        snprintf(why, sizeof(why), "%s", err);
        snprintf(err, errlen, "trace %s: cannot create: %s", path, why);
        free(w->buf);
        free(w);
        return -1;
    }
    int fd = w->out.fd;
    if (ends_with(path, ".gz")) {
        /* fast compression: the writer must keep up with the collector */
        w->gz = gzdopen(fd, "wb1");
        if (!w->gz) {
            snprintf(err, errlen, "trace %s: cannot start gzip", path);
            outfile_discard(&w->out);
            free(w->buf);
            free(w);
            return -1;
        }
        w->out.fd = -1; /* gzclose closes it */
        gzbuffer(w->gz, 128 * 1024);
    } else {
        w->fd = fd;
    }
    PUTS(w, "{");
    put_cstr(w, header);
    PUTS(w, "\"traceEvents\":[");
    w->event_start = w->len;
    /* the header goes to disk at once: even an early kill leaves a start */
    trace_writer_flush(w);
    if (outfile_publish(&w->out, err, errlen) != 0) {
        char why[1100];
        snprintf(why, sizeof(why), "%s", err);
        snprintf(err, errlen, "trace %s: cannot create: %s", path, why);
        if (w->gz)
            gzclose(w->gz);
        outfile_discard(&w->out);
        free(w->buf);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int trace_writer_close(struct trace_writer *w, const char *footer, char *err, size_t errlen)
{
    if (!w)
        return 0;
    w->event_start = w->len;
    PUTS(w, "\n]");
    put_cstr(w, footer ? footer : "");
    PUTS(w, "}\n");
    w->event_start = w->len;
    trace_writer_flush(w);
    if (w->gz) {
        int zrc = gzclose(w->gz);
        if (zrc != Z_OK)
            fail(w, "closing failed", zrc == Z_ERRNO ? errno : 0);
    } else if (w->fd >= 0) {
        char why[1100];
        if (outfile_close(&w->out, why, sizeof(why)) != 0)
            fail(w, "closing failed", errno);
    }
    int rc = 0;
    if (w->failed) {
        snprintf(err, errlen, "%s", w->err);
        rc = -1;
    }
    free(w->buf);
    free(w);
    return rc;
}

const char *trace_writer_error(const struct trace_writer *w)
{
    return w->failed ? w->err : NULL;
}

uint64_t trace_writer_events(const struct trace_writer *w)
{
    return w->events;
}

uint64_t trace_writer_bytes(const struct trace_writer *w)
{
    return w->bytes;
}

const char *trace_writer_path(const struct trace_writer *w)
{
    return w->path;
}

void trace_writer_begin_meta(struct trace_writer *w, const char *name, int64_t pid, int64_t tid)
{
    if (w->failed)
        return;
    w->event_start = w->len;
    if (w->first)
        PUTS(w, "\n{\"ph\":\"M\",\"name\":");
    else
        PUTS(w, "\n,{\"ph\":\"M\",\"name\":");
    put_quoted(w, name);
    PUTS(w, ",\"pid\":");
    put_i64(w, pid);
    PUTS(w, ",\"tid\":");
    put_i64(w, tid);
    w->in_args = 0;
}

void trace_writer_begin(struct trace_writer *w, char ph, const char *name, const char *cat, int64_t pid, int64_t tid,
                        int64_t ts_ns)
{
    if (w->failed)
        return;
    w->event_start = w->len;
    char head[12];
    size_t n = 0;
    head[n++] = '\n';
    if (!w->first)
        head[n++] = ',';
    memcpy(head + n, "{\"ph\":\"", 7);
    n += 7;
    head[n++] = ph;
    head[n++] = '"';
    put(w, head, n);
    if (name) {
        PUTS(w, ",\"name\":");
        put_quoted(w, name);
    }
    if (cat) {
        PUTS(w, ",\"cat\":");
        put_quoted(w, cat);
    }
    PUTS(w, ",\"pid\":");
    put_i64(w, pid);
    PUTS(w, ",\"tid\":");
    put_i64(w, tid);
    PUTS(w, ",\"ts\":");
    put_us(w, ts_ns);
    w->in_args = 0;
}

void trace_writer_dur(struct trace_writer *w, int64_t dur_ns)
{
    PUTS(w, ",\"dur\":");
    put_us(w, dur_ns);
}

void trace_writer_field_str(struct trace_writer *w, const char *key, const char *val)
{
    put_key(w, key);
    put_quoted(w, val);
}

void trace_writer_field_i64(struct trace_writer *w, const char *key, int64_t v)
{
    put_key(w, key);
    put_i64(w, v);
}

void trace_writer_args_begin(struct trace_writer *w)
{
    PUTS(w, ",\"args\":{");
    w->in_args = 1;
    w->args_any = 0;
}

static void arg_key(struct trace_writer *w, const char *key)
{
    if (w->args_any)
        PUTS(w, ",\"");
    else
        PUTS(w, "\"");
    w->args_any = 1;
    put_escaped(w, key);
    PUTS(w, "\":");
}

void trace_writer_arg_str(struct trace_writer *w, const char *key, const char *val)
{
    arg_key(w, key);
    put_quoted(w, val);
}

void trace_writer_arg_i64(struct trace_writer *w, const char *key, int64_t v)
{
    arg_key(w, key);
    put_i64(w, v);
}

void trace_writer_arg_u64(struct trace_writer *w, const char *key, uint64_t v)
{
    arg_key(w, key);
    put_u64(w, v);
}

void trace_writer_arg_f64(struct trace_writer *w, const char *key, double v)
{
    arg_key(w, key);
    if (!isfinite(v)) {
        PUTS(w, "null");
        return;
    }
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%.9g", v);
    put(w, tmp, (size_t)n);
}

void trace_writer_arg_us(struct trace_writer *w, const char *key, int64_t ns)
{
    arg_key(w, key);
    put_us(w, ns);
}

void trace_writer_args_end(struct trace_writer *w)
{
    PUTS(w, "}");
    w->in_args = 0;
}

void trace_writer_end(struct trace_writer *w)
{
    if (w->failed)
        return;
    PUTS(w, "}");
    w->first = 0;
    w->events++;
    w->event_start = w->len;
    if (w->len >= TRACE_WRITER_BATCH)
        trace_writer_flush(w);
}
