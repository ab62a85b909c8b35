/* sync.c - the registry of strategies (sync.h) and their names. */
#include "sync.h"

#include <string.h>

/* In enum strategy_kind order: a kind is an index here. */
static const struct sync_ops *const registry[] = {
    [STRAT_SINGLE] = &sync_ops_single,
    [STRAT_DP] = &sync_ops_dp,
    [STRAT_GATHER_SCATTER] = &sync_ops_gather_scatter,
    [STRAT_ALLREDUCE] = &sync_ops_allreduce,
    [STRAT_DDP] = &sync_ops_ddp,
    [STRAT_HOROVOD] = &sync_ops_horovod,
};
_Static_assert(sizeof(registry) / sizeof(registry[0]) == STRAT_COUNT, "one entry a strategy");

const struct sync_ops *sync_ops_of(int kind)
{
    return kind >= 0 && kind < STRAT_COUNT ? registry[kind] : NULL;
}

const struct sync_ops *sync_ops_at(int kind, int world)
{
    return world > 1 ? sync_ops_of(kind) : &sync_ops_single;
}

int sync_has(int kind, unsigned flags)
{
    const struct sync_ops *s = sync_ops_of(kind);
    return s && (s->flags & flags) == flags;
}

const char *strategy_name(int kind)
{
    const struct sync_ops *s = sync_ops_of(kind);
    return s ? s->name : "?";
}

int strategy_parse(const char *name)
{
    for (int i = 0; i < STRAT_COUNT; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return i;
    return -1;
}
