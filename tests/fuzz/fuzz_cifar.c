/* fuzz_cifar.c - libFuzzer target: a CIFAR-10 batch file's bytes through
 * cifar_parse, and a batch gathered from what it loads. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dataset d;
    char err[512];
    if (cifar_parse(data, size, "fuzz", &d, err, sizeof(err)) != 0)
        return 0;
    /* the first and the last image, normalised as a training step would */
    static float x[2 * 3 * 32 * 32];
    int32_t y[2];
    uint32_t idx[2] = {0, (uint32_t)d.n - 1};
    data_gather(&d, idx, 2, x, y);
    if (y[0] < 0 || y[0] >= d.classes || y[1] < 0 || y[1] >= d.classes)
        abort();
    data_free(&d);
    return 0;
}
