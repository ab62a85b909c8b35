/* fmt_num.c - numbers with their unit (see fmt_num.h). */
#include "fmt_num.h"

#include <math.h>
#include <stdio.h>

void fmt_bytes(char *buf, size_t n, double b)
{
    static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int i = 0;
    if (!(b >= 0))
        b = 0;
    while (b >= 1000.0 && i < 5) {
        b /= 1000.0;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

void fmt_bytes_exact(char *buf, size_t n, uint64_t v)
{
    static const char suffix[] = "GMK";
    for (int i = 0; i < 3; i++) {
        uint64_t unit = 1ULL << (10 * (3 - i));
        if (v >= unit && v % unit == 0) {
            snprintf(buf, n, "%llu%c", (unsigned long long)(v / unit), suffix[i]);
            return;
        }
    }
    snprintf(buf, n, "%llu", (unsigned long long)v);
}

void fmt_si(char *buf, size_t n, double v)
{
    static const char *const u[] = {"", "k", "M", "G", "T"};
    int i = 0;
    double a = fabs(v);
    while (a >= 1000.0 && i < 4) {
        a /= 1000.0;
        v /= 1000.0;
        i++;
    }
    /* three significant figures (6.61k, not 6.6k), as the reports print */
    snprintf(buf, n, a >= 100 ? "%.0f%s" : a >= 10 ? "%.1f%s" : "%.2f%s", v, u[i]);
}

void fmt_duration(char *buf, size_t n, double s)
{
    if (!(s >= 0))
        s = 0;
    long t = (long)(s + 0.5);
    if (t < 60)
        snprintf(buf, n, "%.1fs", s);
    else if (t < 3600)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
}

void fmt_rate(char *buf, size_t n, double v)
{
    static const char *const u[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
    int i = 0;
    if (!(v > 0)) {
        snprintf(buf, n, "0 B/s");
        return;
    }
    /* rounding to three digits may carry into the next unit (999.7 -> 1000) */
    while (i < 4 && v >= 999.5) {
        v /= 1000.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%.0f %s", v, u[i]);
    else
        snprintf(buf, n, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, u[i]);
}
