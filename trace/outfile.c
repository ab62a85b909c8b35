/* outfile.c - output files written beside their name and renamed into
 * place, and the identity check between outputs and inputs (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The folder part of path into dir ("." when it has none, "/" for the
 * root), and where its last part starts. */
static const char *split(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, n, ".");
        return path;
    }
    size_t len = (size_t)(slash - path);
    snprintf(dir, n, "%.*s", (int)(len ? len : 1), path);
    return slash + 1;
}

/* A link made by this user or root to what is not a file (/dev/stdout,
 * /dev/fd/N): written through, as a terminal or a pipe named directly is. */
static int through_link(const char *path, const struct stat *l)
{
    struct stat s;
    return (l->st_uid == 0 || l->st_uid == geteuid()) && stat(path, &s) == 0 &&
           (S_ISCHR(s.st_mode) || S_ISFIFO(s.st_mode) || S_ISSOCK(s.st_mode));
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    if (!path[0]) {
        snprintf(err, errlen, "an empty file name");
        return -1;
    }
    if (strlen(path) + 32 >= sizeof(o->path)) {
        snprintf(err, errlen, "%.200s...: file name too long", path);
        return -1;
    }
    snprintf(o->path, sizeof(o->path), "%s", path);
    struct stat l;
    int have = lstat(path, &l) == 0;
    if (!have && errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat s;
    /* (a link to a folder: the name is the folder's to the user) */
    int to_dir = have && S_ISLNK(l.st_mode) && stat(path, &s) == 0 && S_ISDIR(s.st_mode);
    if (have && (S_ISDIR(l.st_mode) || S_ISBLK(l.st_mode) || to_dir)) {
        snprintf(err, errlen, "%s: %s, not a file", path, S_ISBLK(l.st_mode) ? "a block device" : "a folder");
        return -1;
    }
    if (have && !S_ISREG(l.st_mode) && (!S_ISLNK(l.st_mode) || through_link(path, &l))) {
        /* nothing to replace: written in place, never truncated */
        o->in_place = 1;
        o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (o->fd >= 0 && (fstat(o->fd, &s) != 0 || S_ISREG(s.st_mode) || S_ISDIR(s.st_mode))) {
            close(o->fd); /* swapped for a file since it was looked at */
            o->fd = -1;
            errno = EEXIST;
        }
        if (o->fd < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    char dir[OUTFILE_PATH];
    const char *base = split(path, dir, sizeof(dir));
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, "..")) {
        snprintf(err, errlen, "%s: a folder, not a file", path);
        return -1;
    }
    static _Atomic unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int attempt = 0; o->fd < 0 && attempt < 100; attempt++) {
        unsigned k = atomic_fetch_add(&counter, 1);
        uint32_t tag = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u ^ k * 40503u;
        int len =
            snprintf(o->tmp, sizeof(o->tmp), "%.*s/.%.200s.%08x.tmp", (int)(sizeof(o->tmp) - 220), dir, base, tag);
        if (len < 0 || (size_t)len >= sizeof(o->tmp) || strlen(dir) > sizeof(o->tmp) - 220) {
            snprintf(err, errlen, "%.200s...: file name too long", path);
            o->tmp[0] = 0;
            return -1;
        }
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (o->fd < 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot make a file in %s: %s", path, dir, strerror(errno));
            o->tmp[0] = 0;
            return -1;
        }
    }
    if (o->fd < 0) {
        snprintf(err, errlen, "%s: no free name for a temporary file in %s", path, dir);
        o->tmp[0] = 0;
        return -1;
    }
    /* a file replaced keeps its permissions (a private report stays so) */
    if (have && S_ISREG(l.st_mode))
        fchmod(o->fd, l.st_mode & 0777);
    return 0;
}

int outfile_publish(struct outfile *o, char *err, size_t errlen)
{
    if (o->in_place || o->published)
        return 0;
    if (rename(o->tmp, o->path) != 0) {
        snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
        return -1;
    }
    o->published = 1;
    return 0;
}

int outfile_close(struct outfile *o, char *err, size_t errlen)
{
    int rc = 0;
    if (o->fd >= 0) {
        /* a file written whole is on the disk before it takes the name */
        int whole = !o->in_place && !o->published;
        if ((whole && fsync(o->fd) != 0 && errno != EINVAL) || close(o->fd) != 0) {
            snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
            rc = -1;
        }
        o->fd = -1;
    }
    if (rc == 0 && outfile_publish(o, err, errlen) != 0)
        rc = -1;
    if (rc != 0 && !o->published && o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
    return rc;
}

void outfile_discard(struct outfile *o)
{
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (!o->in_place && !o->published && o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
}

int outfile_write(const char *path, const void *buf, size_t n, char *err, size_t errlen)
{
    struct outfile o;
    if (outfile_open(&o, path, err, errlen) != 0)
        return -1;
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(o.fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(err, errlen, "%s: %s", path, k < 0 ? strerror(errno) : "short write");
            outfile_discard(&o);
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return outfile_close(&o, err, errlen);
}

int outfile_writable(const char *path)
{
    struct stat l, s;
    if (lstat(path, &l) == 0) {
        if (S_ISDIR(l.st_mode) || (S_ISLNK(l.st_mode) && stat(path, &s) == 0 && S_ISDIR(s.st_mode)))
            return EISDIR;
        if (S_ISBLK(l.st_mode))
            return EINVAL;
        if (!S_ISREG(l.st_mode) && (!S_ISLNK(l.st_mode) || through_link(path, &l)))
            return access(path, W_OK) == 0 ? 0 : errno;
    } else if (errno != ENOENT) {
        return errno;
    }
    char dir[OUTFILE_PATH];
    const char *base = split(path, dir, sizeof(dir));
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
        return EISDIR;
    return access(dir, W_OK | X_OK) == 0 ? 0 : errno;
}

/* ---- identity ------------------------------------------------------------- */

struct ident {
    int file; /* the file it resolves to exists */
    dev_t dev;
    ino_t ino;
    int entry; /* its folder exists and its last part is a name */
    dev_t dir_dev;
    ino_t dir_ino;
    const char *base; /* the last part, without trailing slashes */
    size_t base_len;
};

static void ident_of(const char *path, struct ident *id)
{
    memset(id, 0, sizeof(*id));
    struct stat st;
    if (path[0] && stat(path, &st) == 0) {
        id->file = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
    }
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t b = len;
    while (b > 0 && path[b - 1] != '/')
        b--;
    id->base = path + b;
    id->base_len = len - b;
    if (id->base_len == 0 || (id->base_len == 1 && id->base[0] == '.') ||
        (id->base_len == 2 && id->base[0] == '.' && id->base[1] == '.'))
        return;
    char dir[OUTFILE_PATH];
    if (b == 0)
        snprintf(dir, sizeof(dir), ".");
    else if (b == 1)
        snprintf(dir, sizeof(dir), "/");
    else if (b - 1 < sizeof(dir))
        snprintf(dir, sizeof(dir), "%.*s", (int)(b - 1), path);
    else
        return;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        id->entry = 1;
        id->dir_dev = st.st_dev;
        id->dir_ino = st.st_ino;
    }
}

/* Whether output x would land in folder y (an entry with names) under a
 * name that y's reader takes. */
static int lands_in(const struct ident *x, const struct ident *y, int (*names)(const char *))
{
    char base[OUTFILE_PATH];
    if (!names || !x->entry || !y->file || x->dir_dev != y->dev || x->dir_ino != y->ino || x->base_len >= sizeof(base))
        return 0;
    memcpy(base, x->base, x->base_len);
    base[x->base_len] = 0;
    return names(base);
}

static int same(const struct ident *x, const struct ident *y)
{
    if (x->file && y->file && x->dev == y->dev && x->ino == y->ino)
        return 1;
    return x->entry && y->entry && x->dir_dev == y->dir_dev && x->dir_ino == y->dir_ino && x->base_len == y->base_len &&
           !memcmp(x->base, y->base, x->base_len);
}

int outfile_clash(const struct outfile_role *r, size_t n, size_t *a, size_t *b)
{
    struct ident *ids = malloc(sizeof(*ids) * (n ? n : 1));
    struct ident x, y;
    for (size_t i = 0; ids && i < n; i++)
        ident_of(r[i].path, &ids[i]);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        if (!r[i].output)
            continue;
        if (!ids)
            ident_of(r[i].path, &x); /* (out of memory: one path at a time) */
        for (size_t j = 0; j < n && !found; j++) {
            if (j == i)
                continue;
            if (!ids)
                ident_of(r[j].path, &y);
            const struct ident *p = ids ? &ids[i] : &x, *q = ids ? &ids[j] : &y;
            if (same(p, q) || lands_in(p, q, r[j].names)) {
                *a = i;
                *b = j;
                found = 1;
            }
        }
    }
    free(ids);
    return found;
}
