/* infile.c - regular files only, read whole; gzip inflated in memory (see
 * infile.h). */
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* The most one read() or one inflate() call is given: read returns at most
 * about 2 GiB, and zlib counts in unsigned int. */
#define INFILE_CHUNK ((size_t)1 << 30)

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISLNK(m))
        return "a symbolic link";
    return "some other kind";
}

int infile_open(const char *path, unsigned flags, struct stat *st, char *err, size_t errlen)
{
    int owned = (flags & INFILE_OWNED) != 0;
    struct stat pre, got;
    /* looked at before opening: opening a device or a FIFO can block or
     * act on the device */
    if ((owned ? lstat(path, &pre) : stat(path, &pre)) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(pre.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path, kind_of(pre.st_mode));
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (owned ? O_NOFOLLOW : 0));
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* what was opened is what counts: the name may have been replaced since */
    if (fstat(fd, &got) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(got.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path, kind_of(got.st_mode));
        close(fd);
        return -1;
    }
    if (owned && got.st_uid != geteuid()) {
        snprintf(err, errlen, "%s: owned by another user (uid %u), not read", path, (unsigned)got.st_uid);
        close(fd);
        return -1;
    }
    /* reads from a regular file never block; clear the flag all the same */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (st)
        *st = got;
    return fd;
}

int infile_read(const char *path, unsigned flags, size_t max, char **buf, size_t *n, char *err, size_t errlen)
{
    *buf = NULL;
    *n = 0;
    struct stat st;
    int fd = infile_open(path, flags, &st, err, errlen);
    if (fd < 0)
        return -1;
    if (max && (uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size >= SIZE_MAX) {
        snprintf(err, errlen, "%s: too large to read", path);
        close(fd);
        return -1;
    }
    /* the size as it was opened; a file still being written may grow */
    size_t cap = (size_t)st.st_size, len = 0;
    char *b = malloc(cap + 1);
    if (!b)
        goto oom;
    for (;;) {
        if (len == cap) {
            /* at the size it had: one more byte tells whether it grew */
            char probe;
            ssize_t r = read(fd, &probe, 1);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                goto read_error;
            if (r == 0)
                break;
            size_t ncap = cap < 4096 ? 8192 : cap * 2;
            if (ncap < cap || (max && ncap > max + 1))
                ncap = max ? max + 1 : SIZE_MAX - 1;
            if (len >= ncap) {
                snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
                free(b);
                close(fd);
                return -1;
            }
            char *nb = realloc(b, ncap + 1);
            if (!nb)
                goto oom;
            b = nb;
            cap = ncap;
            b[len++] = probe;
            continue;
        }
        size_t want = cap - len < INFILE_CHUNK ? cap - len : INFILE_CHUNK;
        ssize_t r = read(fd, b + len, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto read_error;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (max && len > max) {
        snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
        free(b);
        return -1;
    }
    b[len] = 0;
    *buf = b;
    *n = len;
    return 0;
read_error:
    snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
    free(b);
    close(fd);
    return -1;
oom:
    snprintf(err, errlen, "%s: out of memory for %lld bytes", path, (long long)st.st_size);
    free(b);
    close(fd);
    return -1;
}

static int gz_magic(const char *p, size_t n)
{
    return n >= 2 && (unsigned char)p[0] == 0x1f && (unsigned char)p[1] == 0x8b;
}

/* A cap's variable's text: its whole number (at least 1), or def when it
 * is not set; -1 when it is set to anything else. */
static long long cap_var(const char *v, long long def)
{
    if (!v || !v[0])
        return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    return errno || *end || x < 1 || x > (1LL << 40) ? -1 : x;
}

/* The most n bytes of gzip may inflate to (above); 0 with why set when a
 * variable is not a number. */
static size_t gz_cap(size_t n, char *why, size_t whylen)
{
    const char *rv = getenv("DDPTOP_GZIP_MAX_RATIO"), *mv = getenv("DDPTOP_GZIP_MAX_MB");
    long long ratio = cap_var(rv, INFILE_GZ_RATIO), max_mb = cap_var(mv, INFILE_GZ_MAX_MB);
    if (ratio < 0 || max_mb < 0) {
        snprintf(why, whylen, "%s must be a whole number from 1 (got '%.40s')",
                 ratio < 0 ? "DDPTOP_GZIP_MAX_RATIO" : "DDPTOP_GZIP_MAX_MB", ratio < 0 ? rv : mv);
        return 0;
    }
    double by_ratio = (double)n * (double)ratio, floor = (double)INFILE_GZ_FREE_MB * 1048576.0;
    double cap = by_ratio > floor ? by_ratio : floor, most = (double)max_mb * 1048576.0;
    if (cap > most)
        cap = most;
    return cap < (double)(SIZE_MAX / 2) ? (size_t)cap : SIZE_MAX / 2;
}

enum infile_gz infile_gunzip(const char *in, size_t n, char **out, size_t *outn, char *why, size_t whylen)
{
    *out = NULL;
    *outn = 0;
    if (!gz_magic(in, n))
        return INFILE_PLAIN;
    snprintf(why, whylen, "%s", "");
    size_t limit = gz_cap(n, why, whylen);
    if (limit == 0)
        return INFILE_GZ_BIG;
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        snprintf(why, whylen, "out of memory");
        return INFILE_GZ_BAD;
    }
    /* a first guess at the size; traces and IDX files shrink 4x to 20x
     * (one byte past the limit is room to see it passed) */
    size_t cap = n < SIZE_MAX / 8 ? n * 4 + 4096 : n, used = 0, at = 0;
    if (cap > limit + 1)
        cap = limit + 1;
    char *b = malloc(cap + 1);
    enum infile_gz rc = INFILE_GZ_OK;
    if (!b) {
        snprintf(why, whylen, "out of memory");
        inflateEnd(&z);
        return INFILE_GZ_BAD;
    }
    for (;;) {
        if (used > limit) {
            rc = INFILE_GZ_BIG;
            break;
        }
        if (used == cap) {
            size_t ncap = cap < SIZE_MAX / 2 - 1 ? cap * 2 : SIZE_MAX - 1;
            if (ncap > limit + 1)
                ncap = limit + 1;
            char *nb = ncap > cap ? realloc(b, ncap + 1) : NULL;
            if (!nb) {
                snprintf(why, whylen, "out of memory");
                rc = INFILE_GZ_BAD;
                break;
            }
            b = nb;
            cap = ncap;
        }
        size_t in_left = n - at, out_left = cap - used;
        z.next_in = (Bytef *)(uintptr_t)(in + at);
        z.avail_in = (uInt)(in_left < INFILE_CHUNK ? in_left : INFILE_CHUNK);
        z.next_out = (Bytef *)(b + used);
        z.avail_out = (uInt)(out_left < INFILE_CHUNK ? out_left : INFILE_CHUNK);
        uInt gave_in = z.avail_in, gave_out = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        at += gave_in - z.avail_in;
        used += gave_out - z.avail_out;
        if (zr == Z_STREAM_END) {
            if (gz_magic(in + at, n - at) && inflateReset(&z) == Z_OK)
                continue; /* the next member */
            break;
        }
        if (zr == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR && at == n) {
            snprintf(why, whylen, "unexpected end of file");
            rc = INFILE_GZ_CUT;
            break;
        }
        /* Z_BUF_ERROR with input and room left would mean no progress at
         * all: an error like any other, so the loop always ends */
        snprintf(why, whylen, "%s", z.msg ? z.msg : zr == Z_MEM_ERROR ? "out of memory" : "corrupt data");
        rc = INFILE_GZ_BAD;
        break;
    }
    inflateEnd(&z);
    if (rc == INFILE_GZ_BIG || used > limit) {
        char small[32];
        if (n < 1048576)
            snprintf(small, sizeof(small), "%.1f KiB", (double)n / 1024.0);
        else
            snprintf(small, sizeof(small), "%.1f MiB", (double)n / 1048576.0);
        snprintf(why, whylen,
                 "gzip data that inflates past %.0f MiB (%.0f times its %s), refused as a gzip bomb; "
                 "DDPTOP_GZIP_MAX_MB and DDPTOP_GZIP_MAX_RATIO raise the limit",
                 (double)limit / 1048576.0, (double)limit / (double)n, small);
        free(b);
        return INFILE_GZ_BIG;
    }
    b[used] = 0;
    *out = b;
    *outn = used;
    return rc;
}
