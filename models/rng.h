/* rng.h - a small seeded generator (splitmix64) used for weight init,
 * dropout masks, shuffles and synthetic data. Deterministic across runs and
 * platforms: identical seeds give identical numbers. */
#ifndef DDPTOP_RNG_H
#define DDPTOP_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s;
};

static inline void rng_seed(struct rng *r, uint64_t seed)
{
    r->s = seed ^ 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_uniform(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n). */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

#endif
