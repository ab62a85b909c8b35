/* test_fill.h - buffers and seeded test data shared by the layer tests.
 * Include after <cmocka.h> (allocations are asserted). */
#ifndef DDPTOP_TEST_FILL_H
#define DDPTOP_TEST_FILL_H

#include <stdint.h>
#include <stdlib.h>

#include "rng.h"

static inline float *falloc(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    assert_non_null(p);
    return p;
}

static inline void fill_uniform(struct rng *r, float *v, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

/* |v| in [lo, hi], random sign: keeps ReLU inputs away from its kink. */
static inline void fill_away_from_zero(struct rng *r, float *v, size_t n, float lo, float hi)
{
    fill_uniform(r, v, n, lo, hi);
    for (size_t i = 0; i < n; i++)
        if (rng_next(r) & 1)
            v[i] = -v[i];
}

/* A random permutation of (k - n/2) * step: no ties (in a pooling window). */
static inline void fill_distinct(struct rng *r, float *v, size_t n, float step)
{
    for (size_t i = 0; i < n; i++)
        v[i] = ((float)i - (float)(n / 2)) * step;
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(r, (uint32_t)i);
        float t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

#endif
