/* strategy.h - gradient-synchronisation strategies over flat buffers.
 *
 * A strategy sees the model only as its flat parameter and gradient buffers
 * and the list of parameter tensors (offset, length) in parameter order; it
 * never knows about layers. DESIGN.md gives the exact semantics of each.
 */
#ifndef DDPTOP_STRATEGY_H
#define DDPTOP_STRATEGY_H

#include <stddef.h>

#include "comm.h"

enum strategy_kind { STRAT_SINGLE = 0, STRAT_DP, STRAT_GATHER_SCATTER, STRAT_ALLREDUCE, STRAT_DDP, STRAT_COUNT };

const char *strategy_name(int kind);
/* Returns the kind for a name, or -1. */
int strategy_parse(const char *name);

/* One parameter tensor as the strategy sees it. */
struct grad_tensor {
    size_t off, len; /* floats into the flat buffers */
    int trainable;
};

struct grad_layout {
    int n;                       /* tensors, in parameter order */
    const struct grad_tensor *t;
    float *params;               /* flat, [nfloats] */
    float *grads;                /* flat, [nfloats] */
    size_t nfloats;
};

#endif
