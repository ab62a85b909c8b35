/* fuzz_cost_model.c - libFuzzer target: a comm-model file's text through
 * cost_model_find, for every collective and a few rank counts. */
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
                if (!(cost_predict_us(&f, 1e6) >= 0))
                    abort(); /* a prediction is never negative, nor NaN */
            }
        }
    return 0;
}
