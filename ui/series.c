/* series.c - binned histories for the plots (see series.h). */
#include "series.h"

#include <math.h>
#include <string.h>

void series_reset(struct series *s)
{
    memset(s, 0, sizeof(*s));
    s->per_bin = 1;
}

/* Halves the number of bins by merging neighbours: the x resolution drops
 * as the run grows, the memory does not. */
static void compact(struct series *s)
{
    int out = 0;
    for (int i = 0; i < s->nbins; i += 2, out++) {
        s->sum[out] = s->sum[i];
        s->valid[out] = s->valid[i];
        s->pushed[out] = s->pushed[i];
        if (i + 1 < s->nbins) {
            s->sum[out] += s->sum[i + 1];
            s->valid[out] += s->valid[i + 1];
            s->pushed[out] += s->pushed[i + 1];
        }
    }
    for (int i = out; i < s->nbins; i++) {
        s->sum[i] = 0;
        s->valid[i] = s->pushed[i] = 0;
    }
    s->nbins = out;
    s->per_bin *= 2;
}

void series_push(struct series *s, double v)
{
    if (s->per_bin == 0)
        series_reset(s);
    if (s->nbins == 0 || s->pushed[s->nbins - 1] >= s->per_bin) {
        if (s->nbins == SERIES_BINS)
            compact(s);
        /* after compacting, the last bin may have room again */
        if (s->nbins == 0 || s->pushed[s->nbins - 1] >= s->per_bin)
            s->nbins++;
    }
    int b = s->nbins - 1;
    s->pushed[b]++;
    if (!isnan(v) && !isinf(v)) {
        s->sum[b] += v;
        s->valid[b]++;
    }
    s->n++;
}

double series_bin(const struct series *s, int i)
{
    if (i < 0 || i >= s->nbins || s->valid[i] == 0)
        return NAN;
    return s->sum[i] / s->valid[i];
}

double series_last(const struct series *s)
{
    return s->nbins ? series_bin(s, s->nbins - 1) : NAN;
}

int series_range(const struct series *s, int positive_only, double *lo, double *hi)
{
    int any = 0;
    for (int i = 0; i < s->nbins; i++) {
        double v = series_bin(s, i);
        if (isnan(v) || (positive_only && v <= 0))
            continue;
        if (!any || v < *lo)
            *lo = v;
        if (!any || v > *hi)
            *hi = v;
        any = 1;
    }
    return any;
}
