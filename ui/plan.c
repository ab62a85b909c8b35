/* plan.c - the next run's strategy, ranks and batch (see plan.h). */
#include "plan.h"

#include <stdio.h>

#include "sync.h"

void plan_reset(struct plan *p, const struct run_config *cur)
{
    p->strategy = (cur->strategy + 1) % SYNC_KINDS;
    p->ranks = cur->ranks;
    p->batch = cur->batch_size;
    p->edited = 0;
}

/* A first change of ranks or batch is a scaling step: the strategy stays. */
static void vary_one(struct plan *p, const struct run_config *cur)
{
    if (!p->edited)
        p->strategy = cur->strategy;
    p->edited = 1;
}

int plan_ranks(struct plan *p, const struct run_config *cur, int dir, char *err, size_t errlen)
{
    int n = p->ranks + (dir < 0 ? -1 : 1);
    if (n < 1 || n > CFG_MAX_RANKS) {
        snprintf(err, errlen, "ranks: %d is the %s (1 to %d)", p->ranks, dir < 0 ? "fewest" : "most", CFG_MAX_RANKS);
        return -1;
    }
    vary_one(p, cur);
    p->ranks = n;
    return 0;
}

int plan_batch(struct plan *p, const struct run_config *cur, int dir, char *err, size_t errlen)
{
    long n = dir < 0 ? p->batch / 2 : (long)p->batch * 2;
    if (n < 1 || n > CFG_MAX_BATCH) {
        snprintf(err, errlen, "batch: %d per rank is the %s (1 to %d)", p->batch, dir < 0 ? "smallest" : "largest",
                 CFG_MAX_BATCH);
        return -1;
    }
    vary_one(p, cur);
    p->batch = (int)n;
    return 0;
}

void plan_next_strategy(struct plan *p)
{
    p->strategy = (p->strategy + 1) % SYNC_KINDS;
    p->edited = 1;
}

void plan_config(const struct plan *p, const struct config *cfg, const struct run_config *cur, struct run_config *rc)
{
    struct config c = *cfg;
    snprintf(c.models[0], sizeof(c.models[0]), "%s", cur->model);
    c.nmodels = 1;
    c.ranks[0] = p->ranks;
    c.nranks = 1;
    c.batches[0] = p->batch;
    c.nbatches = 1;
    c.strategies[0] = p->strategy;
    c.nstrategies = 1;
    /* the threads per rank of the runs it is compared with: worked out
     * again for its own rank count, a 1-rank run after 2-rank runs would
     * get the cores both ranks shared, and its speedup would compare
     * thread counts, not ranks */
    if (cur->threads_per_rank > 0)
        c.base.threads_per_rank = cur->threads_per_rank;
    config_expand(&c, 0, rc);
}

void plan_describe(const struct plan *p, char *buf, size_t n)
{
    if (sync_has(p->strategy, SYNC_ONE_RANK))
        snprintf(buf, n, "%s, 1 rank x %ld", strategy_name(p->strategy), (long)p->ranks * p->batch);
    else
        snprintf(buf, n, "%s, %d rank%s x %d", strategy_name(p->strategy), p->ranks, p->ranks == 1 ? "" : "s",
                 p->batch);
}
