/* fmt_num.h - numbers with their unit as people read them: "12.3 MB",
 * "25M", "1.23k", "3m05s", "59.3 MB/s". The one formatter of bytes, counts,
 * durations and rates: the panes (ui/fmt.h) and the report (src/) both
 * print through it, so a size reads the same in both. Plain C, no curses,
 * so the formats are unit-tested (tests/test_ui_core.c). */
#ifndef DDPTOP_FMT_NUM_H
#define DDPTOP_FMT_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Bytes in decimal units with one decimal past B: "512 B", "12.3 MB"
 * (negative or NaN: "0 B"). */
void fmt_bytes(char *buf, size_t n, double bytes);
/* A byte count as the command line takes it: the largest binary suffix
 * that divides it exactly ("25M", "4K", "1G"), else the plain number
 * ("1000"). --help, its errors and --bench-comm's sizes. */
void fmt_bytes_exact(char *buf, size_t n, uint64_t bytes);
/* A count with an SI suffix and three significant digits: "12.5",
 * "1.23k", "340M". */
void fmt_si(char *buf, size_t n, double v);
/* Seconds as "12.3s", "3m05s" or "2h07m" (negative or NaN: "0.0s"). */
void fmt_duration(char *buf, size_t n, double s);
/* A rate in bytes per second with three significant digits and the unit
 * that keeps the number below 1000: "59.3 MB/s", "4.45 GB/s", "0 B/s". At
 * most 9 characters below 1000 TB/s. */
void fmt_rate(char *buf, size_t n, double bytes_per_s);

#endif
