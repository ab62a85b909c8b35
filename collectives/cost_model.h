/* cost_model.h - the α + β·bytes model of each collective, fitted by
 * `ddptop --bench-comm` and used by training reports to show predicted
 * against measured communication time.
 *
 * Fits are kept in a small JSON file, one entry per (backend, algorithm,
 * ranks, collective); a new benchmark replaces the entries it measured. The
 * file is $DDPTOP_COMM_MODEL when set, else
 * $XDG_CACHE_HOME/ddptop/comm-model.json, else
 * $HOME/.cache/ddptop/comm-model.json (absolute paths only), else nowhere:
 * never under a shared folder such as /tmp (XDG_CACHE_HOME or HOME that
 * anyone can write into: HOME=/tmp leaves the cost model nowhere). It is written to a new private file
 * that is renamed into place, and read back only when it is a regular file
 * that this user owns, in a folder that is no link and that only this user
 * (or root) can write.
 */
#ifndef DDPTOP_COST_MODEL_H
#define DDPTOP_COST_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* At most this many regimes a fit: runs of message sizes over which time
 * grows at one rate (latency-bound small messages, cache-resident middle
 * ones, memory-bound large ones), each fitted apart. */
#define COST_MAX_REGIMES 4
/* A fit is poor when it misses a measured size by more than this share
 * of its time. */
#define COST_FIT_TOLERANCE 0.15

/* t_us = alpha + beta * bytes for messages of from_bytes and up. */
struct cost_regime {
    double from_bytes, alpha_us, beta_us_per_byte;
};

struct cost_fit {
    char backend[16];
    char algo[24];
    int ranks;
    int coll;        /* enum coll_kind */
    double alpha_us; /* the first regime's (the smallest messages'): fixed cost per call */
    double beta_us_per_byte;
    double r2; /* goodness of fit (of the relative residuals) */
    int valid;
    /* the larger messages' regimes, from_bytes ascending (powers of two
     * where the sizes allow): a message of b bytes takes the last whose
     * from_bytes <= b, and the first regime's below them all */
    int nmore;
    struct cost_regime more[COST_MAX_REGIMES - 1];
    double max_err; /* the largest relative error at a measured size; < 0: not known (an older ddptop's fit) */
};

/* Fit of t_us = alpha + beta * bytes over n points, minimising the relative
 * error (weights 1/t^2). */
int cost_fit_points(const double *bytes, const double *t_us, int n, double *alpha, double *beta, double *r2);
/* The fit of n points (sizes ascending, times positive) in as few regimes
 * as predict every point within COST_FIT_TOLERANCE (each regime a run of 3
 * sizes or more, fitted as cost_fit_points does), or, where no split into
 * COST_MAX_REGIMES does, the split whose worst error is least: f's
 * alpha, beta, nmore, more, r2 and max_err. Returns 0, or -1 (fewer than 2
 * points, sizes not ascending, a time not positive). */
int cost_fit_regimes(const double *bytes, const double *t_us, int n, struct cost_fit *f);
/* t_us of one call of `bytes` by the regimes (alpha, beta below them all;
 * then more[0..nmore)), at least 0. */
double cost_regimes_us(double alpha_us, double beta_us_per_byte, int nmore, const struct cost_regime *more,
                       double bytes);
/* Predicted microseconds for one call of `bytes`. */
double cost_predict_us(const struct cost_fit *f, double bytes);

/* Messages counted by size class, class c holding [2^c, 2^(c+1)) bytes
 * (class 0 also what is smaller): regimes start at powers of two, so the
 * calls of one class share a regime, and `calls` calls that moved `bytes`
 * in all cost calls x alpha + beta x bytes of it, exactly. */
#define COST_SIZE_CLASSES 48
int cost_size_class(double bytes);
/* Predicted microseconds for `calls` calls of one size class moving
 * `bytes` in all. */
double cost_predict_calls_us(const struct cost_fit *f, double calls, double bytes);

/* The file (above) in buf; NULL, with buf empty, when there is no place
 * for it. */
const char *cost_model_path(char *buf, size_t n);
/* Why cost_model_path has no place, in words that follow "the cost model
 * is not stored: " (only when it returned NULL). */
void cost_model_no_place(char *why, size_t n);
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
