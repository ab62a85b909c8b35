/* fmt.h - what the panes print in narrow columns: numbers with their
 * unit (fmt_num.h, shared with the report) and the note of a pane that
 * cuts items off. No curses, so the formats are unit-tested
 * (tests/test_ui_core.c). */
#ifndef DDPTOP_FMT_H
#define DDPTOP_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "fmt_num.h"

/* The note of a pane that cuts `what`s (ranks, lanes) off: how many are
 * above and below, and the keys that scroll them there: "+3 ranks below:
 * tab, then ↓ scrolls" (utf8 0: "Down"); a focused pane's arrows scroll
 * at once. Empty when nothing is cut. */
void fmt_hidden(char *buf, size_t n, int above, int below, const char *what, int focused, int utf8);

/* The Kernels pane's top-kernel columns in `width` cells: type, the
 * kernel's name (cut with "..." to the room the others leave, at least
 * FMT_KERNEL_NAME_MIN), count, mean us, total ms, share % of its type,
 * as the report prints them. fmt_kernel_head: the columns' titles. */
#define FMT_KERNEL_NAME_MIN 12
struct memcpy_kind;
struct queue_stream;
struct idle_stream;
struct launch_table;
struct straggler_rank;
struct memtl_device;
void fmt_kernel_head(char *buf, size_t n, int width);
void fmt_kernel_row(char *buf, size_t n, int width, const char *type, const char *name, uint64_t count, double mean_us,
                    int64_t sum_ns, double share_pct);
/* The Kernels pane's memory copy columns, as the report's text prints
 * them: kind, count, MB, time ms, GB/s (bytes over time), and HTA's mean
 * and most of the trace's per-copy bandwidths ("n/a" where no copy of the
 * kind has one). fmt_memcpy_head: the columns' titles. */
void fmt_memcpy_head(char *buf, size_t n);
void fmt_memcpy_row(char *buf, size_t n, const struct memcpy_kind *c);
/* ... its launch queue columns: stream, points, mean, median, most, and
 * the ms blocked on a full queue ("-" where none). */
void fmt_queue_head(char *buf, size_t n);
void fmt_queue_row(char *buf, size_t n, const struct queue_stream *s);
/* ... its idle time per stream (HTA's split): stream, ops, the gaps summed
 * (ms), and the shares of host wait, kernel wait and other ("n/a" where
 * the stream has no idle time). */
void fmt_idle_head(char *buf, size_t n);
void fmt_idle_row(char *buf, size_t n, const struct idle_stream *s);
/* ... its kernel launch statistics: line 0 the launches and those HTA
 * flags, line 1 the columns' titles, lines 2 to 4 the CPU and GPU
 * durations and the launch delay (us): mean, median ("n/a" where t has
 * none), most. FMT_LAUNCH_LINES: how many. */
#define FMT_LAUNCH_LINES 5
void fmt_launch_line(char *buf, size_t n, const struct launch_table *t, int line);
/* ... the run's late collectives (trace/straggler.h): the columns' titles,
 * and a rank's row: steps last, steps late, its lead's total and mean
 * (us; "n/a" for a rank never last). */
void fmt_straggler_head(char *buf, size_t n);
void fmt_straggler_row(char *buf, size_t n, const struct straggler_rank *q);
/* ... a rank's memory timeline (trace/memtl.h): the columns' titles; a
 * device's row (MB of 1e6 bytes; the peak's time in ms after the rank's
 * first step, origin_ns, "n/a" when !origin_valid; its step, "-" when
 * none); and its steps' peaks as a sparkline, a glyph a step scaled to the
 * highest (utf8: block elements, else ASCII), with the steps' range. */
void fmt_memtl_head(char *buf, size_t n);
void fmt_memtl_row(char *buf, size_t n, const struct memtl_device *d, int64_t origin_ns, int origin_valid);
void fmt_memtl_steps(char *buf, size_t n, const struct memtl_device *d, int utf8);

#endif
