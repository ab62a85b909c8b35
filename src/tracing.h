/* tracing.h - connecting runs to the Chrome trace writer (trace/), and
 * replaying traces (ddptop's own and PyTorch profiler's) into the same
 * result a live run reports (report.h), printed by the same report. */
#ifndef DDPTOP_TRACING_H
#define DDPTOP_TRACING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "report.h"
#include "trace_read.h"

struct config;
struct run;
struct tracer;

/* Starts streaming run r's spans and counters to the file(s) --trace names
 * (run_index > 0 in a sweep gets its own file). Returns NULL with err[0] == 0
 * when no trace was asked for, NULL with err set on failure. Call right
 * after run_start, from the collector thread. */
struct tracer *tracer_open(const struct config *cfg, struct run *r, int run_index, char *err, size_t errlen);
/* Finishes the file(s) as valid JSON. Returns -1 with err naming any file
 * that is incomplete (e.g. the disk filled); told: tracer_error's message
 * was already shown, so err only names the file(s). */
int tracer_close(struct tracer *t, int told, char *err, size_t errlen);
/* Hands what was traced so far to the disk, in whole events: the front
 * end calls it on every tick, so a process that dies leaves a trace that
 * replays up to its last tick. */
void tracer_flush(struct tracer *t);
/* The first write error (naming the file), or NULL: tracing stops at it,
 * training goes on. The front end shows it (session.h). */
const char *tracer_error(const struct tracer *t);
/* Writes what the metrics still hold of run r (the recent span history,
 * METRICS_HISTORY spans per rank; no step records, so no counters) to
 * path now: the UI's `e` key. */
int run_export_trace(struct run *r, const char *path, char *err, size_t errlen);

/* ---- replay ---------------------------------------------------------------- */

/* A loaded trace and what it says, as the result a live run reports. */
struct replay {
    struct trace_doc doc;
    /* ddptop traces: the same store a live run fills (rank i of the store is
     * res.ranks[i]), spans in the history rings for a timeline. */
    int has_metrics;
    struct metrics metrics;
    struct run_result res; /* what the trace lacks is marked invalid; res.replay.left_out: a folder's
                              JSON files that are not traces */
};

/* Loads the traces args[0, nargs) name and computes every rank's figures.
 * An argument is a file, a folder (every trace in it: trace_list_dir), or
 * a comma-separated list of them (e.g. the per-rank files of
 * --trace-split); one that exists as it is is one path, commas and all.
 * A folder's JSON files that are not traces are left out (and named in
 * res.replay); a file named by itself must be one. PyTorch's files are
 * ranks and cycles as trace_read.h says, broken down over the steps rule
 * covers (--window; NULL: trace_rules[0]). idle_delay_ns: the kernel
 * wait threshold of both idle splits, the union of streams' and each
 * stream's (trace_gap_cat; --idle-delay-ns, TRACE_IDLE_DELAY_NS by
 * default). Returns 0, or -1 with err set. */
struct trace_rule;
int replay_load_list(struct replay *rp, const char *const *args, int nargs, const struct trace_rule *rule,
                     int64_t idle_delay_ns, char *err, size_t errlen);
/* The same for one argument, under the default rule and threshold. */
int replay_load(struct replay *rp, const char *paths, char *err, size_t errlen);
void replay_free(struct replay *rp);
/* A PyTorch trace's rank as a row of the report: its figures (the sum
 * over its cycles, trace_analyze.h) and its step times (ns) in step order.
 * The caller sets rank and device. */
struct trace_figures;
void replay_foreign_row(struct rank_result *rr, const struct trace_figures *f, const int64_t *step_ns, size_t nsteps);
/* The run's figures from its PyTorch ranks' rows (res->ranks[0,
 * nranks)): its step time is the slowest rank's, its split theirs
 * summed. */
void replay_foreign_run(struct run_result *res);
/* Shows a loaded replay interactively (the UI's ui_replay); returns the
 * exit status. */
typedef int (*replay_show_fn)(const struct config *cfg, struct replay *rp);
/* --replay: loads the traces (--replay's value and the arguments after
 * the options), says how foreign files became ranks and cycles, shows
 * them with `show` when that is not NULL (the UI, when stdout is a
 * terminal and --batch was not given), then writes the report
 * (report_write, --format) to stdout or --output. Returns the exit
 * status. */
int replay_main(const struct config *cfg, replay_show_fn show);

#endif
