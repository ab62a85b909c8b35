/* plot.h - series onto a dot canvas: the y range (linear or log10), the
 * mapping of bins to dots, and axis labels. Shared by the loss and traffic
 * panes. */
#ifndef DDPTOP_PLOT_H
#define DDPTOP_PLOT_H

#include "draw.h"
#include "series.h"

struct plot_axes {
    double lo, hi; /* y range, in log10 when log */
    int log;
    uint64_t xn; /* samples the x axis spans */
};

/* Sets ax's y range over n series (and `extra`, e.g. a threshold, when it
 * is > 0). Returns 0 when no series has a value to show. */
int plot_range(struct plot_axes *ax, const struct series *const *ss, int n, double extra, int log);
/* The dot row of value v (clamped into the canvas). */
int plot_y(const struct canvas *c, const struct plot_axes *ax, double v);
/* The dot column of sample index i. */
int plot_x(const struct canvas *c, const struct plot_axes *ax, double i);
/* Draws s as connected lines; NaN bins are gaps. */
void plot_series(struct canvas *c, const struct plot_axes *ax, const struct series *s, int el);
/* Formats an axis value: 4 significant digits, SI suffix when large. */
void plot_label(char *buf, size_t n, double v);

#endif
