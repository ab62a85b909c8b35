/* fuzz_idx.c - libFuzzer target: an IDX file's bytes (raw or gzip) through
 * idx_parse, as images (3 dimensions) and as labels (1), the checks that
 * idx_read makes on a file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int want[] = {1, 3};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char err[512];
        int dims[3];
        uint8_t *px = idx_parse(data, size, "fuzz", want[i], dims, err, sizeof(err));
        if (px && (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2] > size)
            abort(); /* more data than the input could hold */
        free(px);
    }
    return 0;
}
