/* sync_single.c - single: one rank trains on the whole batch, and there
 * is nothing to synchronise (sync.h). */
#include "sync.h"

const struct sync_ops sync_ops_single = {
    .name = "single",
    .letter = 's',
    .flags = SYNC_ONE_RANK,
};
