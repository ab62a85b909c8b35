/* config_sweep.c - a sweep's runs (config.h): every combination of the
 * command line's lists, one struct run_config each, with the copies of a
 * 1-rank run left out (config_count, config_expand), and the compute
 * threads each rank gets by default (config_cores).
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "mode.h"
#include "sync.h"

long config_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* A rank's compute threads unless --threads-per-rank says: the cores over
 * the largest rank count of the sweep, the same for every run, so that a
 * sweep compares like with like (1 rank is not given twice the threads of
 * each of 2). */
static int default_threads(const struct config *cfg)
{
    int most = 1;
    for (int i = 0; i < cfg->nranks; i++)
        for (int s = 0; s < cfg->nstrategies; s++) {
            int w = sync_has(cfg->strategies[s], SYNC_ONE_RANK) ? 1 : cfg->ranks[i];
            most = w > most ? w : most;
        }
    int t = (int)(config_cores() / most);
    return t > 0 ? t : 1;
}

/* The ways of training a sweep tries, each run's k-th (into rc when it is
 * not NULL): data parallelism with every --strategy, model parallelism
 * once, a pipeline with every --micro-batches (the stages synchronise no
 * gradients: a strategy does not apply to them). Returns how many. */
static int sweep_modes(const struct config *cfg, int k, struct run_config *rc)
{
    int n = 0;
    for (int p = 0; p < cfg->nparallels; p++) {
        int par = cfg->parallels[p];
        unsigned f = train_mode_of(par)->flags;
        int nm = f & MODE_MICRO ? cfg->nmicros : 1, ns = f & MODE_STAGED ? 1 : cfg->nstrategies;
        for (int mi = 0; mi < nm; mi++)
            for (int si = 0; si < ns; si++, n++)
                if (n == k && rc) {
                    rc->parallel = par;
                    rc->micro_batches = cfg->micros[mi];
                    rc->strategy = cfg->strategies[si];
                }
    }
    return n;
}

/* Every combination of the sweep's lists, a 1-rank run's included once
 * per backend (config_expand leaves the copies out). */
static int combinations(const struct config *cfg)
{
    return cfg->ncomms * cfg->nmodels * sweep_modes(cfg, -1, NULL) * cfg->nranks * cfg->nbatches;
}

static void combination(const struct config *cfg, int i, struct run_config *rc)
{
    *rc = cfg->base;
    int b = i % cfg->nbatches;
    i /= cfg->nbatches;
    int r = i % cfg->nranks;
    i /= cfg->nranks;
    int modes = sweep_modes(cfg, -1, NULL);
    sweep_modes(cfg, i % modes, rc);
    i /= modes;
    snprintf(rc->model, sizeof(rc->model), "%s", cfg->models[i % cfg->nmodels]);
    i /= cfg->nmodels;
    rc->comm = cfg->comms[i % cfg->ncomms];
    rc->ranks = cfg->ranks[r];
    rc->batch_size = cfg->batches[b];
    if (!rc->threads_per_rank)
        rc->threads_per_rank = default_threads(cfg);
}

/* A 1-rank run communicates with no one, so the same run over the
 * sweep's first backend stands for it: every backend's rows compare with
 * that one (NCCL aside: it picks the device). */
static int repeats_one_rank(const struct config *cfg, int i, const struct run_config *rc)
{
    int per_comm = combinations(cfg) / cfg->ncomms;
    return i >= per_comm && run_world(rc) == 1 && rc->comm != COMM_NCCL && cfg->comms[0] != COMM_NCCL;
}

int config_count(const struct config *cfg)
{
    int n = 0;
    for (int i = 0; i < combinations(cfg); i++) {
        struct run_config rc;
        combination(cfg, i, &rc);
        n += !repeats_one_rank(cfg, i, &rc);
    }
    return n;
}

void config_expand(const struct config *cfg, int i, struct run_config *rc)
{
    for (int k = 0, n = 0; k < combinations(cfg); k++) {
        combination(cfg, k, rc);
        if (!repeats_one_rank(cfg, k, rc) && n++ == i)
            return;
    }
}
