/* fuzz_cost_model.c - libFuzzer target: a comm-model file's text through
 * cost_model_find, for every collective and a few rank counts: what it
 * finds has regimes that rise, and predicts no time below 0 at any size. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "comm.h"
#include "cost_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int ranks[] = {1, 2, 8};
    for (int coll = 0; coll < COLL_COUNT; coll++)
        for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++) {
            struct cost_fit f;
            if (cost_model_find((const char *)data, size, "shm", "ring", ranks[r], coll, &f) == 0) {
                if (!f.valid || f.coll != coll || f.ranks != ranks[r])
                    abort();
                if (f.nmore < 0 || f.nmore > COST_MAX_REGIMES - 1)
                    abort();
                for (int k = 0; k < f.nmore; k++)
                    if (!(f.more[k].from_bytes > (k ? f.more[k - 1].from_bytes : 0)))
                        abort(); /* regimes start at sizes that rise */
                for (double b = 1; b < 1e12; b *= 7)
                    if (!(cost_predict_us(&f, b) >= 0) || !(cost_predict_calls_us(&f, 3, 3 * b) >= 0))
                        abort(); /* a prediction is never negative, nor NaN */
            }
        }
    return 0;
}
