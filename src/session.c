/* session.c - starting, ticking and finishing runs for both front ends
 * (session.h). */
#include "session.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "probe.h"
#include "procs.h"
#include "stop.h"
#include "trace_export.h"
#include "tracing.h"

static void tell(struct session *s, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Queues a message (the front end takes them one at a time). */
static void tell(struct session *s, int error, const char *fmt, ...)
{
    if (s->nmsg == SESSION_MAX_MSGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg[s->nmsg].text, sizeof(s->msg[0].text), fmt, ap);
    va_end(ap);
    s->msg[s->nmsg++].error = error;
}

void session_init(struct session *s, const struct config *cfg, const struct dataset *train, const struct dataset *test,
                  const struct device_ops *dev)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->train = train;
    s->test = test;
    s->dev = dev;
    s->run = &s->slots[0];
    s->spare = &s->slots[1];
    s->joined = 1; /* no run yet: nothing to join */
    s->repeat = 1;
    s->worker = procs_self()->active && procs_self()->rank > 0;
}

int session_start(struct session *s, const struct run_config *rc, char *err, size_t errlen)
{
    if (!s->joined) {
        snprintf(err, errlen, "a run is still going");
        return -1;
    }
    if (s->cfg->history[0] && !s->history && !s->worker &&
        !(s->history = history_open(s->cfg->history, s->cfg->history_every, err, errlen)))
        return -1;
    /* the rank threads inherit this mask: the signals stay the front end's */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGWINCH);
    /* (and the threads gloo starts for them: a write to a peer that closed
     * its socket fails with EPIPE rather than ending the process) */
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    err[0] = 0;
    int rcode = run_start(s->spare, rc, s->train, s->test, s->dev, err, errlen);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct tracer *tr = NULL;
    if (rcode == 0 && !s->worker) {
        tr = tracer_open(s->cfg, s->spare, s->nresults, err, errlen);
        if (!tr && err[0])
            rcode = -1;
    }
    if (rcode != 0) {
        run_request_stop(s->spare);
        run_join(s->spare);
        run_free(s->spare);
        return -1;
    }
    if (s->history)
        history_attach(s->history, &s->spare->metrics, s->nresults / s->repeat, s->nresults % s->repeat);
    if (s->run->ranks)
        run_free(s->run);
    struct run *t = s->run;
    s->run = s->spare;
    s->spare = t;
    s->tracer = tr;
    s->rc = *rc;
    s->joined = 0;
    s->trace_told = 0;
    return 0;
}

static int keep_result(struct session *s)
{
    if (s->nresults == s->cap_results) {
        int nc = s->cap_results ? s->cap_results * 2 : 8;
        struct run_result *p = realloc(s->results, sizeof(*p) * (size_t)nc);
        if (!p)
            return -1;
        s->results = p;
        s->cap_results = nc;
    }
    struct run_result *res = &s->results[s->nresults];
    if (result_from_run(res, s->run) != 0)
        return -1;
    res->trace_file[0] = 0;
    if (s->cfg->trace[0] && !s->worker &&
        trace_export_path(s->cfg->trace, s->nresults, s->cfg->trace_split ? 0 : -1, res->trace_file,
                          sizeof(res->trace_file)) != 0)
        res->trace_file[0] = 0;
    s->nresults++;
    return 0;
}

/* The trace's first write error, told once: tracing stops, training goes on. */
static void check_trace(struct session *s)
{
    const char *e = s->tracer && !s->trace_told ? tracer_error(s->tracer) : NULL;
    if (e) {
        s->trace_told = 1;
        s->trace_failed = 1;
        tell(s, 1, "%s; tracing stopped, training goes on", e);
    }
}

/* The ranks have all returned: join (immediate now), close the trace, keep
 * the result. */
static void wrap_up(struct session *s)
{
    run_join(s->run);
    s->joined = 1;
    check_trace(s);
    char err[320];
    if (s->tracer && tracer_close(s->tracer, s->trace_told, err, sizeof(err)) != 0) {
        s->trace_failed = 1;
        tell(s, 1, "%s", err);
    }
    s->tracer = NULL;
    if (s->history) {
        history_detach(s->history, &s->run->metrics);
        const char *he = history_error(s->history);
        if (he && !s->history_told) {
            s->history_told = 1;
            s->trace_failed = 1;
            tell(s, 1, "%s", he);
        }
    }
    if (!s->worker && keep_result(s) != 0)
        tell(s, 1, "out of memory keeping the run's result");
    if (s->run->state == RUN_FAILED)
        s->any_failed = 1; /* the front end says so: s->run->err */
}

int session_tick(struct session *s, int stop)
{
    if (s->joined)
        return 0;
    if (stop)
        run_request_stop(s->run);
    int running = run_poll(s->run);
    /* what this tick drained reaches the disk before the front end draws
     * it: a front end that dies leaves files that replay up to here */
    tracer_flush(s->tracer);
    history_flush(s->history);
    check_trace(s);
    if (!running)
        wrap_up(s);
    return running;
}

int session_finish(struct session *s)
{
    while (session_tick(s, 1)) {
        if (stop_forced) {
            session_abandon(s);
            return -1;
        }
        probe_nap_ms(1); /* the ranks leave at their next step boundary or wait */
    }
    return 0;
}

void session_abandon(struct session *s)
{
    run_request_stop(s->run);
    char err[320];
    if (s->tracer && tracer_close(s->tracer, s->trace_told, err, sizeof(err)) != 0)
        tell(s, 1, "%s", err);
    s->tracer = NULL;
}

const struct run_result *session_result(const struct session *s)
{
    return s->joined && s->run->ranks && s->nresults > 0 ? &s->results[s->nresults - 1] : NULL;
}

const char *session_message(struct session *s, int *error)
{
    if (s->msg_taken == s->nmsg) {
        s->msg_taken = s->nmsg = 0;
        return NULL;
    }
    if (error)
        *error = s->msg[s->msg_taken].error;
    return s->msg[s->msg_taken++].text;
}

void session_free(struct session *s)
{
    session_finish(s);
    for (int i = 0; i < 2; i++)
        if (s->slots[i].ranks)
            run_free(&s->slots[i]);
    for (int i = 0; i < s->nresults; i++)
        result_free(&s->results[i]);
    free(s->results);
    char err[1100];
    history_close(s->history, err, sizeof(err)); /* flushed after every run: a failure was told then */
    memset(s, 0, sizeof(*s));
}
