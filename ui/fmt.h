/* fmt.h - numbers as the panes print them in narrow columns: "12.3 MB",
 * "1.23k", "3m05s", and rates with their unit ("59.3 MB/s"). No curses, so
 * the formats are unit-tested (tests/test_ui_core.c). */
#ifndef DDPTOP_FMT_H
#define DDPTOP_FMT_H

#include <stddef.h>

void fmt_bytes(char *buf, size_t n, double bytes);
void fmt_si(char *buf, size_t n, double v);
void fmt_duration(char *buf, size_t n, double s);
/* A rate in bytes per second with three significant digits and the unit
 * that keeps the number below 1000: "59.3 MB/s", "4.45 GB/s", "0 B/s". At
 * most 9 characters below 1000 TB/s. */
void fmt_rate(char *buf, size_t n, double bytes_per_s);

/* The note of a pane that cuts `what`s (ranks, lanes) off: how many are
 * above and below, and the keys that scroll them there: "+3 ranks below:
 * tab, then ↓ scrolls" (utf8 0: "Down"); a focused pane's arrows scroll
 * at once. Empty when nothing is cut. */
void fmt_hidden(char *buf, size_t n, int above, int below, const char *what, int focused, int utf8);

#endif
