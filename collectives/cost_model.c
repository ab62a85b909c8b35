/* cost_model.c - fitting, storing and looking up α-β collective models. */
#include "cost_model.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe.h"

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

double cost_predict_us(const struct cost_fit *f, double bytes)
{
    double t = f->alpha_us + f->beta_us_per_byte * bytes;
    return t > 0 ? t : 0;
}

const char *cost_model_path(char *buf, size_t n)
{
    const char *env = getenv("DDPTOP_COMM_MODEL");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return buf;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, n, "%s/ddptop/comm-model.json", xdg);
    else
        snprintf(buf, n, "%s/.cache/ddptop/comm-model.json", home && *home ? home : "/tmp");
    return buf;
}

static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    do {
        if (cap - n < 4096) {
            char *p = realloc(buf, cap = cap ? cap * 2 : 8192);
            if (!p)
                break;
            buf = p;
        }
        k = fread(buf + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    fclose(f);
    cJSON *j = buf ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
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

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
}

int cost_model_save(const char *path, const struct cost_fit *fits, int n, char *err, size_t errlen)
{
    cJSON *root = load(path);
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
        cJSON_AddItemToArray(arr, e);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    mkdirs(path);
    FILE *out = fopen(path, "w");
    int rc = 0;
    if (!out || fputs(text, out) < 0 || fputc('\n', out) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (out && fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(text);
    return rc;
}

int cost_model_lookup(const char *path, const char *backend, const char *algo, int ranks, int coll,
                      struct cost_fit *out)
{
    cJSON *root = load(path);
    int rc = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "fits"))
    {
        if (!same(e, backend, algo, ranks, coll))
            continue;
        const cJSON *a = cJSON_GetObjectItem(e, "alpha_us"), *b = cJSON_GetObjectItem(e, "beta_us_per_byte");
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b))
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->backend, sizeof(out->backend), "%s", backend);
        snprintf(out->algo, sizeof(out->algo), "%s", algo);
        out->ranks = ranks;
        out->coll = coll;
        out->alpha_us = a->valuedouble;
        out->beta_us_per_byte = b->valuedouble;
        const cJSON *r2 = cJSON_GetObjectItem(e, "r2");
        out->r2 = cJSON_IsNumber(r2) ? r2->valuedouble : 0;
        out->valid = 1;
        rc = 0;
    }
    cJSON_Delete(root);
    return rc;
}
