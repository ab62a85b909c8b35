/* cost_model.c - fitting, storing and looking up α-β collective models.
 *
 * The file is a cache in the user's own folder, and treated as one: written
 * whole to a new file (O_EXCL, O_NOFOLLOW, mode 0600) that is then renamed
 * over the old one, so a reader never sees half a file and nothing is ever
 * written through a link; read back only when it is a regular file that
 * this user owns (trace/infile.h). Anything else at its name (a link, a
 * FIFO, another user's file) is left alone: a lookup finds no fits there,
 * and a save refuses it with one line. */
#include "cost_model.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"
#include "probe.h"

/* far more than any number of fits takes */
#define COST_MODEL_MAX (16 << 20)

int cost_fit_points(const double *x, const double *y, int n, double *alpha, double *beta, double *r2)
{
    /* Weighted least squares with weights 1/y^2: minimises the relative error,
     * so the small messages (which set alpha) count as much as the large
     * ones (which set beta); plain least squares lets the largest sizes'
     * noise swamp alpha. */
    if (n < 2)
        return -1;
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        if (!(y[i] > 0))
            return -1;
        double w = 1.0 / (y[i] * y[i]);
        sw += w;
        sx += w * x[i];
        sy += w * y[i];
        sxx += w * x[i] * x[i];
        sxy += w * x[i] * y[i];
    }
    double d = sw * sxx - sx * sx;
    if (d == 0)
        return -1;
    *beta = (sw * sxy - sx * sy) / d;
    *alpha = (sy - *beta * sx) / sw;
    /* r2 of the relative residuals */
    double ss_res = 0, ss_tot = 0, ybar = sy / sw;
    for (int i = 0; i < n; i++) {
        double w = 1.0 / (y[i] * y[i]), p = *alpha + *beta * x[i];
        ss_res += w * (y[i] - p) * (y[i] - p);
        ss_tot += w * (y[i] - ybar) * (y[i] - ybar);
    }
    *r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    return 0;
}

/* Points a fit takes at most (--bench-comm's rows). */
#define FIT_MAX_POINTS 64
/* Sizes a regime needs at least, where there are enough for two: a line
 * through two points fits them whatever they are. */
#define FIT_MIN_RUN 3

/* The line cost_fit_points fits to points [i, j] and its largest relative
 * error there; 0, or -1 when none fits. */
static int run_fit(const double *x, const double *y, int i, int j, double *alpha, double *beta, double *err)
{
    double r2;
    if (cost_fit_points(x + i, y + i, j - i + 1, alpha, beta, &r2) != 0)
        return -1;
    *err = 0;
    for (int k = i; k <= j; k++) {
        double e = fabs(*alpha + *beta * x[k] - y[k]) / y[k];
        *err = e > *err ? e : *err;
    }
    return 0;
}

/* Where a regime that starts at size x (the size before it: prev) begins:
 * the power of two in (prev, x] (so a size class, cost_size_class, lies in
 * one regime), or x where there is none. */
static double regime_start(double prev, double x)
{
    int e;
    frexp(x, &e); /* x = m 2^e, m in [0.5, 1) */
    double p = ldexp(1.0, e - 1);
    return p > prev && p <= x ? p : x;
}

int cost_fit_regimes(const double *x, const double *y, int n, struct cost_fit *f)
{
    if (n < 2 || n > FIT_MAX_POINTS)
        return -1;
    for (int i = 0; i < n; i++)
        if (!(y[i] > 0) || !isfinite(x[i]) || (i > 0 && !(x[i] > x[i - 1])))
            return -1;
    /* best[k][j]: the least worst error of points [0, j] in k + 1 regimes,
     * the last starting at from[k][j] */
    static const double none = INFINITY;
    double best[COST_MAX_REGIMES][FIT_MAX_POINTS];
    int from[COST_MAX_REGIMES][FIT_MAX_POINTS];
    int min_run = n >= 2 * FIT_MIN_RUN ? FIT_MIN_RUN : n;
    for (int k = 0; k < COST_MAX_REGIMES; k++)
        for (int j = 0; j < n; j++) {
            best[k][j] = none;
            from[k][j] = -1;
            /* the last regime: points [i, j], after k regimes over [0, i) */
            for (int i = k == 0 ? 0 : k * min_run; i + min_run - 1 <= j; i++) {
                if (k == 0 && i > 0)
                    break;
                double a, b, e, before = k == 0 ? 0 : best[k - 1][i - 1];
                if (before == none || run_fit(x, y, i, j, &a, &b, &e) != 0)
                    continue;
                e = e > before ? e : before;
                if (e < best[k][j]) {
                    best[k][j] = e;
                    from[k][j] = i;
                }
            }
        }
    /* the fewest regimes within the tolerance, else the least error */
    int K = -1;
    for (int k = 0; k < COST_MAX_REGIMES && K < 0; k++)
        if (best[k][n - 1] <= COST_FIT_TOLERANCE)
            K = k;
    for (int k = 0, within = K >= 0; k < COST_MAX_REGIMES && !within; k++)
        if (best[k][n - 1] != none && (K < 0 || best[k][n - 1] < best[K][n - 1]))
            K = k;
    if (K < 0 || best[K][n - 1] == none)
        return -1;
    int start[COST_MAX_REGIMES];
    for (int k = K, j = n - 1; k >= 0; k--) {
        start[k] = from[k][j];
        j = start[k] - 1;
    }
    double sw = 0, sy = 0, ss_res = 0, ss_tot = 0;
    f->nmore = K;
    for (int k = 0; k <= K; k++) {
        int i = start[k], j = k < K ? start[k + 1] - 1 : n - 1;
        double a, b, e;
        run_fit(x, y, i, j, &a, &b, &e);
        if (k == 0) {
            f->alpha_us = a;
            f->beta_us_per_byte = b;
        } else {
            f->more[k - 1] = (struct cost_regime){regime_start(x[i - 1], x[i]), a, b};
        }
        for (int q = i; q <= j; q++) {
            double w = 1.0 / (y[q] * y[q]), p = a + b * x[q];
            sw += w;
            sy += w * y[q];
            ss_res += w * (y[q] - p) * (y[q] - p);
        }
    }
    for (int q = 0; q < n; q++)
        ss_tot += (y[q] - sy / sw) * (y[q] - sy / sw) / (y[q] * y[q]);
    f->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    f->max_err = best[K][n - 1];
    return 0;
}

double cost_regimes_us(double alpha_us, double beta_us_per_byte, int nmore, const struct cost_regime *more,
                       double bytes)
{
    for (int k = nmore - 1; k >= 0; k--)
        if (bytes >= more[k].from_bytes) {
            alpha_us = more[k].alpha_us;
            beta_us_per_byte = more[k].beta_us_per_byte;
            break;
        }
    double t = alpha_us + beta_us_per_byte * bytes;
    return t > 0 ? t : 0;
}

double cost_predict_us(const struct cost_fit *f, double bytes)
{
    return cost_regimes_us(f->alpha_us, f->beta_us_per_byte, f->nmore, f->more, bytes);
}

int cost_size_class(double bytes)
{
    if (!(bytes >= 2))
        return 0;
    int e;
    frexp(bytes, &e); /* bytes in [2^(e-1), 2^e) */
    return e - 1 < COST_SIZE_CLASSES ? e - 1 : COST_SIZE_CLASSES - 1;
}

double cost_predict_calls_us(const struct cost_fit *f, double calls, double bytes)
{
    if (!(calls > 0))
        return 0;
    /* the regime of the class's mean size is every call's: linear there */
    double one = cost_predict_us(f, bytes / calls);
    return one * calls;
}

/* A folder that anyone can write into (/tmp, /var/tmp, /dev/shm): the
 * cache is never made under it, where another user could have made its
 * folders first. */
static int shared_folder(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH);
}

/* The folder the cache goes under (XDG_CACHE_HOME, else HOME; absolute
 * only, as the XDG base directory rules say), and which of them it is;
 * NULL when neither is set. */
static const char *cache_base(const char **name)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    *name = xdg && xdg[0] == '/' ? "XDG_CACHE_HOME" : "HOME";
    return xdg && xdg[0] == '/' ? xdg : home && home[0] == '/' ? home : NULL;
}

void cost_model_no_place(char *why, size_t n)
{
    const char *name, *base = cache_base(&name);
    if (base && shared_folder(base))
        snprintf(why, n,
                 "%s is %s, a folder anyone can write into, and the cost model is never kept under one (set "
                 "XDG_CACHE_HOME or DDPTOP_COMM_MODEL to a folder of yours)",
                 name, base);
    else
        snprintf(why, n, "neither XDG_CACHE_HOME nor HOME is an absolute path (or set DDPTOP_COMM_MODEL)");
}

const char *cost_model_path(char *buf, size_t n)
{
    const char *env = getenv("DDPTOP_COMM_MODEL");
    const char *name, *base = cache_base(&name);
    int k = -1;
    if (env && *env)
        k = snprintf(buf, n, "%s", env);
    else if (base && shared_folder(base))
        k = -1;
    else if (base)
        k = snprintf(buf, n, "%s%s/ddptop/comm-model.json", base, strcmp(name, "HOME") ? "" : "/.cache");
    if (k < 0 || (size_t)k >= n) {
        if (n)
            buf[0] = 0;
        return NULL;
    }
    return buf;
}

/* 0 when the folder that holds path is one only this user (or root) can
 * change, and no link; else -1 with err saying why, as a link at the
 * file's own name is refused (a folder that another user can swap or
 * write into could hand over any file at the cache's name). */
static int folder_ok(const char *path, char *err, size_t errlen)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0; /* (made, private, when the first fit is stored) */
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s: a symbolic link, not followed", dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a folder", dir);
        return -1;
    }
    if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen, "%s: a folder that another user can write (owner uid %u, mode %04o)", dir,
                 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* The file's fits, or NULL: *missing says whether that is because there is
 * no file (else err says why it was not read). */
static cJSON *load(const char *path, int *missing, char *err, size_t errlen)
{
    struct stat st;
    *missing = 0;
    if (folder_ok(path, err, errlen) != 0)
        return NULL;
    *missing = lstat(path, &st) != 0 && errno == ENOENT;
    if (*missing)
        return NULL;
    char *text;
    size_t n;
    if (infile_read(path, INFILE_OWNED, COST_MODEL_MAX, &text, &n, err, errlen) != 0)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(text, n);
    free(text);
    if (!j)
        snprintf(err, errlen, "%s: not JSON", path);
    return j;
}

static int same(const cJSON *e, const char *backend, const char *algo, int ranks, int coll)
{
    const cJSON *b = cJSON_GetObjectItem(e, "backend"), *a = cJSON_GetObjectItem(e, "algo");
    const cJSON *r = cJSON_GetObjectItem(e, "ranks"), *c = cJSON_GetObjectItem(e, "collective");
    return cJSON_IsString(b) && cJSON_IsString(a) && cJSON_IsNumber(r) && cJSON_IsString(c) &&
           !strcmp(b->valuestring, backend) && !strcmp(a->valuestring, algo) && r->valueint == ranks &&
           !strcmp(c->valuestring, coll_name(coll));
}

/* Makes the folders above path that are missing, private as a cache's
 * should be. Returns 0, or -1 with err naming the folder that could not be
 * made. */
static int mkdirs(const char *path, char *err, size_t errlen)
{
    char tmp[1024];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    return 0;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Writes text to a new file beside path, then renames it to path. */
static int replace_file(const char *path, const char *text, char *err, size_t errlen)
{
    char tmp[1100];
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        if (snprintf(tmp, sizeof(tmp), "%s.%ld.%d.tmp", path, (long)getpid(), attempt) >= (int)sizeof(tmp)) {
            snprintf(err, errlen, "%s: path too long", path);
            return -1;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            return -1;
        }
    }
    if (fd < 0) {
        snprintf(err, errlen, "%s: no free name for a temporary file", path);
        return -1;
    }
    if (write_all(fd, text, strlen(text)) != 0 || write_all(fd, "\n", 1) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int cost_model_save(const char *path, const struct cost_fit *fits, int n, char *err, size_t errlen)
{
    if (!path || !*path) {
        snprintf(err, errlen, "no place for the cost model (XDG_CACHE_HOME and HOME are not set)");
        return -1;
    }
    int missing;
    cJSON *root = load(path, &missing, err, errlen);
    if (!root && !missing)
        return -1; /* not ours, not a file, not JSON: left as it is */
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        root = cJSON_CreateObject();
    }
    cJSON *arr = cJSON_GetObjectItem(root, "fits");
    if (!cJSON_IsArray(arr)) {
        cJSON_DeleteItemFromObject(root, "fits");
        arr = cJSON_AddArrayToObject(root, "fits");
    }
    for (int i = 0; i < n; i++) {
        const struct cost_fit *f = &fits[i];
        for (int k = cJSON_GetArraySize(arr) - 1; k >= 0; k--)
            if (same(cJSON_GetArrayItem(arr, k), f->backend, f->algo, f->ranks, f->coll))
                cJSON_DeleteItemFromArray(arr, k);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "backend", f->backend);
        cJSON_AddStringToObject(e, "algo", f->algo);
        cJSON_AddNumberToObject(e, "ranks", f->ranks);
        cJSON_AddStringToObject(e, "collective", coll_name(f->coll));
        cJSON_AddNumberToObject(e, "alpha_us", f->alpha_us);
        cJSON_AddNumberToObject(e, "beta_us_per_byte", f->beta_us_per_byte);
        cJSON_AddNumberToObject(e, "r2", f->r2);
        /* (added to the one-regime form: an older ddptop reads the first
         * regime and leaves the rest) */
        if (f->nmore > 0) {
            cJSON *more = cJSON_AddArrayToObject(e, "regimes");
            for (int k = 0; more && k < f->nmore && k < COST_MAX_REGIMES - 1; k++) {
                cJSON *g = cJSON_CreateObject();
                cJSON_AddNumberToObject(g, "from_bytes", f->more[k].from_bytes);
                cJSON_AddNumberToObject(g, "alpha_us", f->more[k].alpha_us);
                cJSON_AddNumberToObject(g, "beta_us_per_byte", f->more[k].beta_us_per_byte);
                cJSON_AddItemToArray(more, g);
            }
        }
        if (f->max_err >= 0)
            cJSON_AddNumberToObject(e, "max_err_pct", 100.0 * f->max_err);
        cJSON_AddItemToArray(arr, e);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* (the folder once more, now that it is there) */
    int rc = mkdirs(path, err, errlen) == 0 && folder_ok(path, err, errlen) == 0 ? replace_file(path, text, err, errlen)
                                                                                 : -1;
    free(text);
    return rc;
}

/* An entry's "regimes" into out (none: one regime). 0, or -1 when they are
 * there and not a list of at most COST_MAX_REGIMES - 1 regimes of finite
 * numbers starting at sizes that rise. */
static int read_regimes(const cJSON *e, struct cost_fit *out)
{
    const cJSON *more = cJSON_GetObjectItem(e, "regimes"), *g;
    out->nmore = 0;
    if (!more)
        return 0;
    if (!cJSON_IsArray(more) || cJSON_GetArraySize(more) > COST_MAX_REGIMES - 1)
        return -1;
    cJSON_ArrayForEach(g, more)
    {
        const cJSON *v[3] = {cJSON_GetObjectItem(g, "from_bytes"), cJSON_GetObjectItem(g, "alpha_us"),
                             cJSON_GetObjectItem(g, "beta_us_per_byte")};
        for (int k = 0; k < 3; k++)
            if (!cJSON_IsNumber(v[k]) || !isfinite(v[k]->valuedouble))
                return -1;
        struct cost_regime r = {v[0]->valuedouble, v[1]->valuedouble, v[2]->valuedouble};
        if (!(r.from_bytes > (out->nmore ? out->more[out->nmore - 1].from_bytes : 0)))
            return -1;
        out->more[out->nmore++] = r;
    }
    return 0;
}

/* The fit for (backend, algo, ranks, coll) in root's "fits": 0, or -1. */
static int find(const cJSON *root, const char *backend, const char *algo, int ranks, int coll, struct cost_fit *out)
{
    int rc = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "fits"))
    {
        if (!same(e, backend, algo, ranks, coll))
            continue;
        const cJSON *a = cJSON_GetObjectItem(e, "alpha_us"), *b = cJSON_GetObjectItem(e, "beta_us_per_byte");
        struct cost_fit more;
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || read_regimes(e, &more) != 0)
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->backend, sizeof(out->backend), "%s", backend);
        snprintf(out->algo, sizeof(out->algo), "%s", algo);
        out->ranks = ranks;
        out->coll = coll;
        out->alpha_us = a->valuedouble;
        out->beta_us_per_byte = b->valuedouble;
        const cJSON *r2 = cJSON_GetObjectItem(e, "r2"), *err = cJSON_GetObjectItem(e, "max_err_pct");
        out->r2 = cJSON_IsNumber(r2) ? r2->valuedouble : 0;
        out->max_err = cJSON_IsNumber(err) && err->valuedouble >= 0 ? err->valuedouble / 100.0 : -1;
        out->nmore = more.nmore;
        memcpy(out->more, more.more, sizeof(out->more));
        out->valid = 1;
        rc = 0;
    }
    return rc;
}

int cost_model_find(const char *text, size_t n, const char *backend, const char *algo, int ranks, int coll,
                    struct cost_fit *out)
{
    cJSON *root = cJSON_ParseWithLength(text, n);
    int rc = find(root, backend, algo, ranks, coll, out);
    cJSON_Delete(root);
    return rc;
}

int cost_model_check(const char *path, char *err, size_t errlen)
{
    if (!path || !*path)
        return 0;
    int missing;
    cJSON *root = load(path, &missing, err, errlen);
    int rc = root || missing ? 0 : -1;
    cJSON_Delete(root);
    return rc;
}

int cost_model_lookup(const char *path, const char *backend, const char *algo, int ranks, int coll,
                      struct cost_fit *out)
{
    if (!path || !*path)
        return -1;
    int missing;
    char err[1100];
    cJSON *root = load(path, &missing, err, sizeof(err));
    int rc = find(root, backend, algo, ranks, coll, out);
    cJSON_Delete(root);
    return rc;
}
