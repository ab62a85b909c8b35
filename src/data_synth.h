/* data_synth.h - the pixels of the generated "synthetic" set (src/data.c
 * owns the data set around them: its sizes, names and checks).
 *
 * Apart from data.c because it is the one place where ddptop writes and
 * reads every byte of a 47 MB set on one thread before any other starts:
 * under ThreadSanitizer its instrumented loops cost seconds per process, in
 * every test, and can find nothing (CMakeLists.txt builds this file without
 * TSan's instrumentation; the data set it fills is read-only afterwards,
 * and the threads that read it are checked where they read it).
 */
#ifndef DDPTOP_DATA_SYNTH_H
#define DDPTOP_DATA_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"

#define SYNTH_SIDE 28            /* the side the constants below are tuned at */
#define SYNTH_BYTES (256u << 20) /* the train split's pixels, at most */

/* Prototypes carry a zero border as wide as the largest shift, so shifted
 * reads need no bounds checks. */
struct synth_protos {
    int h, w, sy, sx; /* image side and the largest shift, per axis */
    int ph, pw;       /* h + 2 sy, w + 2 sx */
    int c;
    float gain[DATA_CLASSES][DATA_MAX_CHANNELS];
    float *p[DATA_CLASSES]; /* ph x pw each */
};

/* pr's prototypes and tints for seed and C x H x W; -1 when out of memory
 * (nothing is then held). */
int synth_prototypes(uint64_t seed, int c, int h, int w, struct synth_protos *pr);
void synth_protos_free(struct synth_protos *pr);

/* n samples of split (0 train, 1 test) into pixels (n x C x H x W) and
 * labels: sample i is keyed by (seed, split, i) alone. */
void synth_fill(uint64_t seed, int split, const struct synth_protos *pr, int n, uint8_t *pixels, uint8_t *labels);

/* The sum and the sum of squares of channel ch's pixels over n images of
 * C x plane (integers: the same on every machine). */
void synth_sums(const uint8_t *pixels, int n, int c, size_t plane, int ch, uint64_t *sum, uint64_t *sumsq);

#endif
