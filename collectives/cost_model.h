/* cost_model.h - the α + β·bytes model of each collective, fitted by
 * `ddptop --bench-comm` and used by training reports to show predicted
 * against measured communication time.
 *
 * Fits are kept in a small JSON file (by default
 * $XDG_CACHE_HOME/ddptop/comm-model.json, else ~/.cache/...), one entry per
 * (backend, algorithm, ranks, collective); a new benchmark replaces the
 * entries it measured.
 */
#ifndef DDPTOP_COST_MODEL_H
#define DDPTOP_COST_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct cost_fit {
    char backend[16];
    char algo[16];
    int ranks;
    int coll;        /* enum coll_kind */
    double alpha_us; /* fixed cost per call */
    double beta_us_per_byte;
    double r2; /* goodness of fit */
    int valid;
};

/* Fit of t_us = alpha + beta * bytes over n points, minimising the relative
 * error (weights 1/t^2). */
int cost_fit_points(const double *bytes, const double *t_us, int n, double *alpha, double *beta, double *r2);
/* Predicted microseconds for one call of `bytes`. */
double cost_predict_us(const struct cost_fit *f, double bytes);

/* The default file, or $DDPTOP_COMM_MODEL when set. */
const char *cost_model_path(char *buf, size_t n);
/* Adds or replaces fits in the file. */
int cost_model_save(const char *path, const struct cost_fit *fits, int n, char *err, size_t errlen);
/* Finds the fit for (backend, algo, ranks, coll); returns 0 and fills *out, or -1. */
int cost_model_lookup(const char *path, const char *backend, const char *algo, int ranks, int coll,
                      struct cost_fit *out);

#endif
