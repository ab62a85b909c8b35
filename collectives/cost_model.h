/* cost_model.h - the α + β·bytes model of each collective, fitted by
 * `ddptop --bench-comm` and used by training reports to show predicted
 * against measured communication time.
 *
 * Fits are kept in a small JSON file, one entry per (backend, algorithm,
 * ranks, collective); a new benchmark replaces the entries it measured. The
 * file is $DDPTOP_COMM_MODEL when set, else
 * $XDG_CACHE_HOME/ddptop/comm-model.json, else
 * $HOME/.cache/ddptop/comm-model.json (absolute paths only), else nowhere:
 * never a shared folder such as /tmp. It is written to a new private file
 * that is renamed into place, and read back only when it is a regular file
 * that this user owns, in a folder that is no link and that only this user
 * (or root) can write.
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

/* The file (above) in buf; NULL, with buf empty, when there is no place
 * for it. */
const char *cost_model_path(char *buf, size_t n);
/* Adds or replaces fits in the file. Returns 0, or -1 with err: no path, a
 * folder that cannot be made, a file there that is not this user's regular
 * file or not JSON (left untouched), or a failed write. */
int cost_model_save(const char *path, const struct cost_fit *fits, int n, char *err, size_t errlen);
/* Whether the file at path, when there is one, can be used: 0 (there is
 * none, or it is read), or -1 with err saying why it is refused (a link,
 * another user's, a folder another user can write, not JSON), which a
 * lookup finds no fit in. */
int cost_model_check(const char *path, char *err, size_t errlen);
/* Finds the fit for (backend, algo, ranks, coll); returns 0 and fills *out,
 * or -1 (no path, no file, a file refused as above, no such fit). */
int cost_model_lookup(const char *path, const char *backend, const char *algo, int ranks, int coll,
                      struct cost_fit *out);
/* The same in the file's text in memory (n bytes), for tests and fuzzers. */
int cost_model_find(const char *text, size_t n, const char *backend, const char *algo, int ranks, int coll,
                    struct cost_fit *out);

#endif
