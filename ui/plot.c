/* plot.c - series onto dot canvases (see plot.h). */
#include "plot.h"

#include <math.h>
#include <stdio.h>

static double yval(double v, int log)
{
    return log ? log10(v) : v;
}

int plot_range(struct plot_axes *ax, const struct series *const *ss, int n, double extra, int log)
{
    double lo = 0, hi = 0;
    int any = 0;
    uint64_t xn = 0;
    for (int i = 0; i < n; i++) {
        double a, b;
        if (ss[i]->n > xn)
            xn = ss[i]->n;
        if (!series_range(ss[i], log, &a, &b))
            continue;
        if (!any || a < lo)
            lo = a;
        if (!any || b > hi)
            hi = b;
        any = 1;
    }
    if (!any)
        return 0;
    if (extra > 0) {
        if (extra < lo)
            lo = extra;
        if (extra > hi)
            hi = extra;
    }
    ax->log = log;
    ax->lo = yval(lo, log);
    ax->hi = yval(hi, log);
    if (ax->hi - ax->lo < 1e-12) {
        /* a flat line sits in the middle, not on the floor */
        double pad = fabs(ax->hi) * 0.05 + 1e-9;
        ax->lo -= pad;
        ax->hi += pad;
    }
    ax->xn = xn;
    return 1;
}

int plot_y(const struct canvas *c, const struct plot_axes *ax, double v)
{
    double y = yval(v, ax->log);
    double f = (y - ax->lo) / (ax->hi - ax->lo);
    if (!(f >= 0))
        f = 0;
    if (f > 1)
        f = 1;
    return (int)lround((1.0 - f) * (c->dh - 1));
}

int plot_x(const struct canvas *c, const struct plot_axes *ax, double i)
{
    if (ax->xn <= 1)
        return 0;
    double f = i / (double)(ax->xn - 1);
    if (f < 0)
        f = 0;
    if (f > 1)
        f = 1;
    return (int)lround(f * (c->dw - 1));
}

void plot_series(struct canvas *c, const struct plot_axes *ax, const struct series *s, int el)
{
    int have_prev = 0, px = 0, py = 0;
    for (int b = 0; b < s->nbins; b++) {
        double v = series_bin(s, b);
        if (isnan(v) || (ax->log && v <= 0)) {
            have_prev = 0;
            continue;
        }
        /* a bin sits at the middle of the samples it holds */
        double mid = (double)b * (double)s->per_bin + (double)(s->pushed[b] - 1) / 2.0;
        int x = plot_x(c, ax, mid), y = plot_y(c, ax, v);
        if (have_prev)
            canvas_line(c, px, py, x, y, el);
        else
            canvas_dot(c, x, y, el);
        px = x;
        py = y;
        have_prev = 1;
    }
}

void plot_label(char *buf, size_t n, double v)
{
    double a = fabs(v);
    if (a >= 1000)
        fmt_si(buf, n, v);
    else if (a >= 100)
        snprintf(buf, n, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, n, "%.1f", v);
    else if (a >= 0.01 || a == 0)
        snprintf(buf, n, "%.3f", v);
    else
        snprintf(buf, n, "%.1e", v);
}
