/* strategy.c - names of the strategies. */
#include "strategy.h"

#include <string.h>

static const char *const names[STRAT_COUNT] = {"single", "dp", "gather-scatter", "allreduce", "ddp"};

const char *strategy_name(int kind)
{
    return kind >= 0 && kind < STRAT_COUNT ? names[kind] : "?";
}

int strategy_parse(const char *name)
{
    for (int i = 0; i < STRAT_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}
