/* memcpy_bw.c - the memory-copy bandwidth of this machine, the physical
 * limit of shared-memory collectives: copies a buffer of each size
 * repeatedly and prints one line per size: bytes, GB/s (1 GB = 1e9 B,
 * counting the bytes copied). Build: cc -O2 bench/memcpy_bw.c -o memcpy_bw */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t lo = argc > 1 ? strtoull(argv[1], NULL, 10) : 4096;
    size_t hi = argc > 2 ? strtoull(argv[2], NULL, 10) : (size_t)256 << 20;
    size_t factor = argc > 3 ? strtoull(argv[3], NULL, 10) : 4;
    char *a = malloc(hi), *b = malloc(hi);
    if (!a || !b)
        return 1;
    memset(a, 1, hi);
    memset(b, 2, hi);
    for (size_t n = lo; n <= hi; n *= factor) {
        int iters = (int)(((size_t)1 << 30) / n);
        if (iters < 3)
            iters = 3;
        if (iters > 100000)
            iters = 100000;
        memcpy(b, a, n);
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            memcpy(b, a, n);
            __asm__ volatile("" ::"r"(b) : "memory");
        }
        double t = (now() - t0) / iters;
        printf("%zu %.3f\n", n, (double)n / t / 1e9);
    }
    free(a);
    free(b);
    return 0;
}
