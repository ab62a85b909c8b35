/* tracing.h - connecting runs to the Chrome trace writer (trace/), and
 * replaying traces. */
#ifndef DDPTOP_TRACING_H
#define DDPTOP_TRACING_H

#include <stddef.h>

struct config;
struct run;
struct tracer;

/* Starts streaming run r's spans and counters to the file(s) --trace names
 * (run_index > 0 in a sweep gets its own file). Returns NULL with err[0] == 0
 * when no trace was asked for, NULL with err set on failure. Call right
 * after run_start, from the collector thread. */
struct tracer *tracer_open(const struct config *cfg, struct run *r, int run_index, char *err, size_t errlen);
/* Finishes the file(s) as valid JSON. Returns -1 with err naming any file
 * that is incomplete (e.g. the disk filled). */
int tracer_close(struct tracer *t, char *err, size_t errlen);
/* Writes what the metrics still hold of run r (the recent span history) to
 * path now: the UI's `e` key. */
int run_export_trace(struct run *r, const char *path, char *err, size_t errlen);
/* --replay: loads a trace and shows it (UI) or reports it (--batch). Returns
 * the exit status. */
int replay_main(const struct config *cfg);

#endif
