/* session.h - one sequence of runs, driven alike by both front ends: the
 * headless loop (app/main.c) and the UI (ui/ui.c).
 *
 * A front end (or a worker process under mpirun, whose records go to
 * process 0) starts a run, then ticks the session at its own pace until
 * the run is over, and may start the next (a sweep's next combination, or
 * the UI's `s`). The session owns everything between a configuration and a
 * result: the run's rank threads (started with the front end's signals
 * blocked in them, so Ctrl-C, SIGTERM and SIGWINCH reach the front end
 * alone), its trace file, and when the ranks are done the join, the closed
 * trace and the kept result. Nothing here prints: what the user should hear
 * (a failed trace) waits in session_message, and a failed run says why in
 * run->err.
 */
#ifndef DDPTOP_SESSION_H
#define DDPTOP_SESSION_H

#include <stddef.h>

#include "config.h"
#include "data.h"
#include "device.h"
#include "report.h"
#include "run.h"

struct tracer;
struct history;

#define SESSION_MAX_MSGS 4

struct session {
    const struct config *cfg;
    const struct dataset *train, *test;
    const struct device_ops *dev;
    struct run *run;   /* the current run: run->ranks is NULL until the first starts */
    struct run *spare; /* where the next run starts, so that a refusal leaves the current one */
    struct run slots[2];
    struct tracer *tracer;
    struct run_config rc;    /* the current run's configuration */
    int joined;              /* the current run is joined, its trace closed, its result kept */
    int trace_told;          /* the trace's write error was told */
    int trace_failed;        /* some run's trace or the history is incomplete: the exit status says so */
    struct history *history; /* --history, opened with the first run */
    int history_told;
    int repeat; /* runs of one configuration in a row (--repeat, headless; 1): the history's run numbers */
    int worker; /* a worker process under mpirun: process 0 keeps the trace, the history and the results */
    struct run_result *results;
    int nresults, cap_results;
    int any_failed;
    struct {
        char text[400];
        int error;
    } msg[SESSION_MAX_MSGS]; /* what the user should hear, in order */
    int nmsg, msg_taken;
};

void session_init(struct session *s, const struct config *cfg, const struct dataset *train, const struct dataset *test,
                  const struct device_ops *dev);
/* Starts rc as the next run. The current run must be joined (or there is
 * none yet). When rc cannot start, the current run stays current and -1
 * is returned with err set. */
int session_start(struct session *s, const struct run_config *rc, char *err, size_t errlen);
/* Drains the rank rings into the metrics (stop: first asks every rank to
 * stop). Once the ranks have all returned it joins them, closes the trace
 * and keeps the result. Returns 1 while the current run runs, 0 once it is
 * joined. Never blocks on a rank. */
int session_tick(struct session *s, int stop);
/* Stops the current run, if it runs, and ticks it to its end: 0. When a
 * second signal forces the exit meanwhile (stop.h), it abandons the run
 * instead (session_abandon) and returns -1. */
int session_finish(struct session *s);
/* For a forced exit: asks the ranks to stop and closes the trace as valid
 * JSON with what it holds, without waiting for the ranks; the process must
 * then exit (the rank threads still run). */
void session_abandon(struct session *s);
/* The current run's kept result once it is joined, else NULL. */
const struct run_result *session_result(const struct session *s);
/* The next thing the user should hear (e.g. the trace's disk filled), or
 * NULL when there is none; *error: 1 for a failure. */
const char *session_message(struct session *s, int *error);
/* Stops and joins what runs, frees every run and result. */
void session_free(struct session *s);

#endif
