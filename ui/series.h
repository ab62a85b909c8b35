/* series.h - a fixed-size, binned history of one value (a loss curve, a
 * byte rate) for the plots.
 *
 * A plot can't afford to walk 100 000 steps every frame, and must not
 * allocate per frame. A series keeps SERIES_BINS bins; each holds the mean
 * of `per_bin` consecutive samples. When the bins are full, neighbours merge
 * pairwise and per_bin doubles, so pushing is O(1) amortised and drawing
 * touches at most SERIES_BINS numbers, however long the run. NaN samples
 * are gaps: they advance the x axis but add nothing to the mean.
 */
#ifndef DDPTOP_SERIES_H
#define DDPTOP_SERIES_H

#include <stdint.h>

#define SERIES_BINS 512

struct series {
    double sum[SERIES_BINS];
    uint32_t valid[SERIES_BINS];  /* non-NaN samples in the bin */
    uint32_t pushed[SERIES_BINS]; /* all samples in the bin */
    int nbins;                    /* bins in use, the last possibly partial */
    uint64_t per_bin;             /* samples a full bin holds */
    uint64_t n;                   /* samples pushed */
};

void series_reset(struct series *s);
void series_push(struct series *s, double v);
/* Mean of bin i, or NaN when it has no valid sample. */
double series_bin(const struct series *s, int i);
/* Min and max over the bins with a value; returns 0 when there is none.
 * positive_only skips values <= 0 (for log scales). */
int series_range(const struct series *s, int positive_only, double *lo, double *hi);
/* The last bin's mean (NaN when empty). */
double series_last(const struct series *s);

#endif
