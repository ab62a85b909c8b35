/* main.c - ddptop's entry point: parse the command line, pick the mode,
 * load the data set, and hand the runs to a session (session.h) driven by
 * the UI or, headless, by the loop here, which then prints the report.
 *
 * Only this file exits. Signal handlers only set flags (stop.h); the run
 * loop turns the first into an orderly stop, so a Ctrl-C still prints what
 * was measured, and a second within 2 s into a prompt exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "cost_model.h"
#include "cpu_isa.h"
#include "data.h"
#include "device.h"
#include "devices.h"
#include "files.h"
#include "follow.h"
#include "model.h"
#include "modes.h"
#include "figures.h"
#include "probe.h"
#include "procs.h"
#include "report.h"
#include "run.h"
#include "session.h"
#include "stop.h"
#include "strategy.h"
#include "theme.h"
#include "tracing.h"
#include "ui.h"
#include "zoo.h"

/* The ranks whose threads share the cores this process sees: every rank
 * of a run of threads; under mpirun this process's ranks where it is
 * bound, else those of every process on the node. */
static int ranks_here(const struct procs *pr, const struct run_config *rc, int bound)
{
    if (!pr->active)
        return run_world(rc);
    return bound ? pr->per : pr->per * (pr->local_size > 0 ? pr->local_size : 1);
}

/* More compute threads than cores: the ranks would take turns on them,
 * and idle time would be the scheduler's, not the peers'. Said once, for
 * the sweep's largest combination. */
static void warn_oversubscribed(const struct config *cfg, const struct procs *pr)
{
    long cores = config_cores(), online = sysconf(_SC_NPROCESSORS_ONLN);
    int bound = cores < online;
    long worst = 0;
    struct run_config w = {0};
    for (int i = 0; i < config_count(cfg); i++) {
        struct run_config rc;
        config_expand(cfg, i, &rc);
        long t = (long)ranks_here(pr, &rc, bound) * rc.threads_per_rank;
        if (t > worst) {
            worst = t;
            w = rc;
        }
    }
    if (worst <= cores)
        return;
    int ranks = ranks_here(pr, &w, bound);
    char who[64] = "";
    const char *fix = "--threads-per-rank, --ranks";
    if (pr->active && bound) {
        snprintf(who, sizeof(who), "process %d holds ", pr->rank);
        fix = "mpirun bound the process to them: mpirun --bind-to none, or --map-by slot:PE=N";
    } else if (pr->active) {
        snprintf(who, sizeof(who), "the %d processes on this node hold ", pr->local_size);
        fix = "--threads-per-rank, fewer processes per node";
    }
    fprintf(
        stderr,
        "ddptop: %s%d rank%s x %d thread%s = %ld compute threads on %ld core%s: the ranks will wait for cores (%s)\n",
        who, ranks, ranks == 1 ? "" : "s", w.threads_per_rank, w.threads_per_rank == 1 ? "" : "s", worst, cores,
        cores == 1 ? "" : "s", fix);
}

/* A second Ctrl-C: the trace closed as valid JSON, and out without waiting
 * for the ranks (they may be stuck in a wait that has not timed out). */
static void forced_exit(struct session *s)
{
    session_abandon(s);
    const char *msg;
    while ((msg = session_message(s, NULL)) != NULL)
        fprintf(stderr, "ddptop: %s\n", msg);
    fprintf(stderr, "ddptop: interrupted twice: leaving without waiting for the ranks\n");
    fflush(NULL);
    _exit(128 + (int)stop_signal);
}

static void progress(const struct run *r, int idx, int nruns)
{
    const struct metrics *m = &r->metrics;
    size_t s = m->steps_done;
    double loss = s ? m->loss_running[metrics_slot(s - 1)] : 0;
    double ms = 0;
    if (m->r[0].nsteps)
        ms = (double)m->r[0].last.wall_ns / 1e6;
    fprintf(stderr, "\r\033[K[%d/%d] %s %s x%d  step %zu/%ld  loss %.4f  %.2f ms/step", idx + 1, nruns, r->cfg.model,
            strategy_name(r->cfg.strategy), r->world, s, r->total_steps, loss, ms);
    fflush(stderr);
}

/* Prints what the session has to say; over the progress line, if shown. */
static void tell(struct session *s, int show_progress)
{
    const char *msg;
    while ((msg = session_message(s, NULL)) != NULL)
        fprintf(stderr, "%sddptop: %s\n", show_progress ? "\r\033[K" : "", msg);
}

/* Under mpirun (or --rendezvous) the processes hold the ranks: --ranks
 * follows -np or WORLD_SIZE (times --ranks-per-process), the backend is
 * MPI (gloo) unless told otherwise (run_check refuses the others), and
 * process 0 alone shows the UI or the report. 0, or 2 after one line. */
static int procs_apply(struct config *cfg, const struct procs *pr)
{
    if (pr->wire && cfg->ranks_per_process > 1) {
        if (pr->rank == 0)
            fprintf(stderr, "ddptop: --ranks-per-process: only under mpirun (a --rendezvous process is one rank)\n");
        return 2;
    }
    if (cfg->mode != MODE_TRAIN && cfg->mode != MODE_BENCH_COMM && pr->size > 1) {
        if (pr->rank == 0)
            fprintf(stderr, "ddptop: under mpirun only training and --bench-comm run (not --info or --replay)\n");
        return 2;
    }
    int per = cfg->ranks_per_process, world = pr->size * per;
    if (per > 1 && cfg->mode == MODE_BENCH_COMM) {
        if (pr->rank == 0)
            fprintf(stderr,
                    "ddptop: --bench-comm under mpirun: one rank per process (leave out --ranks-per-process)\n");
        return 2;
    }
    if (world > CFG_MAX_RANKS) {
        if (pr->rank == 0)
            fprintf(stderr, "ddptop: mpirun -np %d%s: at most %d ranks\n", pr->size,
                    per > 1 ? " x --ranks-per-process" : "", CFG_MAX_RANKS);
        return 2;
    }
    if (cfg->ranks_set && (cfg->nranks != 1 || cfg->ranks[0] != world)) {
        if (pr->rank == 0)
            fprintf(stderr,
                    "ddptop: --ranks: under mpirun the processes hold the ranks; leave it out (-np %d gives %d)\n",
                    pr->size, world);
        return 2;
    }
    procs_set_per_process(per); /* (--ranks is world already: config_parse, or refused above) */
    if (!cfg->base.comm_set)
        cfg->base.comm = cfg->comms[0] = procs_default_comm();
    /* process 0 shows the UI where mpirun writes to its terminal (or, met
     * through --rendezvous, on its own); the workers are headless */
    if (pr->rank > 0 || (pr->wire ? !isatty(STDOUT_FILENO) : !procs_launcher_on_tty()))
        cfg->batch = 1;
    if (!cfg->base.threads_per_rank) {
        /* bound (mpirun's default for a few processes): the cores it was
         * given; else the node's, shared by its processes */
        long cores = config_cores(), online = sysconf(_SC_NPROCESSORS_ONLN);
        long t = (cores < online ? cores : online / (pr->local_size > 0 ? pr->local_size : 1)) / per;
        cfg->base.threads_per_rank = t > 0 ? (int)t : 1;
    }
    return 0;
}

/* A worker process under mpirun (procs.h): the runs process 0 announces
 * (its sweep, or its UI's), headless and quiet, through a session as
 * every front end's; its ranks' records go to process 0, which shows them
 * (and keeps the trace, the history and the results). A run that does not
 * end done (a stop, a failure anywhere) ends a batch sweep on every
 * process alike; the UI may go on to another. */
static int worker_main(const struct config *cfg, const struct dataset *train, const struct dataset *test,
                       const struct device_ops *dev)
{
    int status = 0;
    struct run_config rc;
    struct session s;
    session_init(&s, cfg, train, test, dev);
    int next = 0;
    while (status == 0 && (next = procs_next_run(&rc)) > 0) {
        char err[512];
        if (session_start(&s, &rc, err, sizeof(err)) != 0) {
            fprintf(stderr, "ddptop: process %d: %s\n", procs_self()->rank, err);
            status = 2;
            break;
        }
        while (session_tick(&s, stop_signal != 0))
            probe_nap_ms(20);
        int done = s.run->state == RUN_DONE;
        /* a stop that process 0's user asked for is not this process's failure */
        if (!done && (stop_signal || s.run->state == RUN_FAILED))
            status = stop_signal ? 128 + (int)stop_signal : 1;
        if (!done)
            break; /* a run stopped or failed ends the job (procs_spent) */
    }
    if (next < 0 || procs_lost_zero()) {
        fprintf(stderr, "ddptop: process %d: process 0 is gone (it ended without a word)\n", procs_self()->rank);
        status = status ? status : 1;
    }
    session_free(&s);
    return status;
}

static int ddptop_main(int argc, char **argv);
/* Every run of the sweep must pass run_check (the backend suits the
 * device and the launch, the batch the data, ...), and every model take
 * --input's shape: refused before anything runs. 0, or 2 after one line. */
static int check_runs(const struct config *cfg, const struct procs *pr, const struct dataset *train,
                      const struct device_ops *dev)
{
    char err[512];
    for (int i = 0; i < config_count(cfg); i++) {
        struct run_config rc;
        config_expand(cfg, i, &rc);
        if (run_check(&rc, train, dev, err, sizeof(err)) != 0) {
            if (pr->rank == 0) /* (every process finds the same) */
                fprintf(stderr, "ddptop: %s\n", err);
            return 2;
        }
    }
    /* every model must take --input's shape (the data sets' own shapes
     * fit every model): built once on the CPU at batch 1 to see */
    for (int i = 0; cfg->base.input[0] && i < cfg->nmodels; i++) {
        struct device cpu = {.ops = &device_cpu};
        char merr[256] = "";
        struct model *m = cpu.ops->open(&cpu, 0) == 0
                              ? zoo_create(&cpu, cfg->models[i], 1, train->c, train->h, train->w,
                                           run_classes(&cfg->base, train->h, train->w, train->classes), cfg->base.seed,
                                           merr, sizeof(merr))
                              : NULL;
        model_destroy(m);
        if (cpu.ops->close)
            cpu.ops->close(&cpu);
        if (!m) {
            fprintf(stderr, "ddptop: --input %dx%dx%d: %s\n", train->c, train->h, train->w, merr[0] ? merr : cpu.err);
            return 2;
        }
    }
    return 0;
}

/* No output may be an input or another output (files.h): the sweep's
 * files, and the theme a front end on a terminal reads. 0, or 2 with one
 * line said. */
static int check_files(const struct config *cfg, int ui)
{
    struct files f;
    files_init(&f);
    int runs = cfg->mode == MODE_TRAIN ? config_count(cfg) * cfg->repeat : 1;
    files_of_config(&f, cfg, 0, runs, 0);
    char path[4200], err[2200];
    const char *name = cfg->theme[0] ? cfg->theme : theme_no_color_env() ? "monochrome" : "default";
    if (ui)
        files_add(&f, theme_file(name, path, sizeof(path)), "--theme", 0);
    int rc = files_check(&f, err, sizeof(err));
    files_free(&f);
    if (rc == 0)
        return 0;
    fprintf(stderr, "ddptop: %s\n", err);
    return 2;
}

/* Files written at the end must be writable from the start (not made
 * yet: a refused run leaves none), and none may be another's. Under
 * mpirun every process must take the same way out: only training's
 * workers follow process 0's. 0, or 2 after one line. */
static int check_outputs(const struct config *cfg, const struct procs *pr, int ui)
{
    if (pr->rank != 0 || (pr->active && cfg->mode != MODE_TRAIN))
        return 0;
    const char *late[3][2] = {
        {"--save-params", cfg->base.save_params}, {"--output", cfg->output}, {"--trace", cfg->trace}};
    for (int i = 0; i < 3; i++) {
        int e = late[i][1][0] ? outfile_writable(late[i][1]) : 0;
        if (e) {
            fprintf(stderr, "ddptop: %s: cannot write %s: %s\n", late[i][0], late[i][1], strerror(e));
            return 2;
        }
    }
    if (cfg->plot[0]) {
        int e = figures_can_write(cfg->plot);
        if (e) {
            fprintf(stderr, "ddptop: --plot: cannot write into %s: %s\n", cfg->plot, strerror(e));
            return 2;
        }
    }
    return check_files(cfg, ui);
}

/* A cost model that is there but refused (a link, another user's, a
 * folder another user can write, not JSON) leaves every prediction n/a:
 * said once, in one line. */
static void note_cost_model(void)
{
    char path[1024], why[1200];
    if (cost_model_path(path, sizeof(path)) && cost_model_check(path, why, sizeof(why)) != 0)
        fprintf(stderr, "ddptop: the cost model is not used (%s): predictions are n/a\n", why);
}

int main(int argc, char **argv)
{
    char err[256];
    probe_clock_init();
    if (procs_init(&argc, &argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }
    return procs_exit(ddptop_main(argc, argv));
}

static int ddptop_main(int argc, char **argv)
{
    struct config cfg;
    const struct procs *pr = procs_self();
    if (pr->active)
        config_default_ranks(pr->size);
    /* every process parses the same line: process 0 alone speaks, which
     * the line itself says (--rendezvous), so what the parse has to say
     * waits until it is parsed */
    char *said[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    FILE *out = open_memstream(&said[0], &len[0]), *errf = out ? open_memstream(&said[1], &len[1]) : NULL;
    int prc = config_parse(&cfg, argc, argv, errf ? out : stdout, errf ? errf : stderr);
    if (errf) {
        fclose(out);
        fclose(errf);
        if (procs_speaks(&cfg.rendezvous)) {
            fwrite(said[0], 1, len[0], stdout);
            fwrite(said[1], 1, len[1], stderr);
        }
    } else if (out) {
        fclose(out);
    }
    free(said[0]);
    free(said[1]);
    if (prc == 1)
        return 0;
    if (prc != 0)
        return 2;
    if (cpu_isa_error()) {
        fprintf(stderr, "ddptop: %s\n", cpu_isa_error());
        return 2;
    }
    if (cfg.rendezvous.kind != RDV_NONE) {
        char err[512];
        if (procs_join(&cfg.rendezvous, cfg.base.comm_timeout_s, err, sizeof(err)) != 0) {
            fprintf(stderr, "ddptop: %s\n", err);
            return 2;
        }
        if (!cfg.ranks_set) { /* (parsed before the job met: config_parse's default) */
            cfg.ranks[0] = pr->size;
            cfg.nranks = 1;
        }
    }
    if (pr->active && procs_apply(&cfg, pr) != 0)
        return 2;
    if (!pr->active && cfg.ranks_per_process > 1) {
        fprintf(stderr, "ddptop: --ranks-per-process: only under mpirun (mpirun -np P ddptop --ranks-per-process T); "
                        "without it every rank is a thread of this process already\n");
        return 2;
    }

    /* from here on Ctrl-C stops at the next boundary (even while the data
     * set loads), and what was measured is reported */
    stop_install();
    int ui = !cfg.batch && isatty(STDOUT_FILENO) &&
             (cfg.mode == MODE_TRAIN || cfg.mode == MODE_REPLAY || cfg.mode == MODE_FOLLOW);
    if (check_outputs(&cfg, pr, ui) != 0)
        return 2;
    if (cfg.mode == MODE_TRAIN && pr->rank == 0)
        note_cost_model();
    if (cfg.mode == MODE_INFO)
        return info_main(&cfg);
    if (cfg.mode == MODE_BENCH_COMM)
        return bench_comm_main(&cfg);
    if (cfg.mode == MODE_REPLAY)
        return replay_main(&cfg, !cfg.batch && isatty(STDOUT_FILENO) ? ui_replay : NULL);
    if (cfg.mode == MODE_FOLLOW)
        return follow_main(&cfg, ui ? ui_follow : NULL);

    char err[512], note[256];
    const struct device_ops *dev = device_select(cfg.base.device, note, sizeof(note), err, sizeof(err));
    /* run_check says it for each run too (the UI's as well): here it comes
     * before the data set loads and before the note on the device */
    if (!dev || run_check_precision(cfg.base.precision, dev, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }

    struct dataset train, test;
    const int *in = cfg.base.input;
    if ((in[0] ? data_synthetic(cfg.base.seed, in[0], in[1], in[2], &train, &test, err, sizeof(err))
               : data_load(cfg.base.dataset, cfg.base.data_dir, cfg.base.seed, &train, &test, err, sizeof(err))) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }

    if (check_runs(&cfg, pr, &train, dev) != 0) {
        data_free(&train);
        data_free(&test);
        return 2;
    }
    /* after the input was validated, so that bad input stays one line */
    if (note[0] && pr->rank == 0)
        fprintf(stderr, "ddptop: %s\n", note);
    if (!pr->active || pr->local_rank == 0)
        warn_oversubscribed(&cfg, pr);
    if (pr->rank > 0) {
        int st = worker_main(&cfg, &train, &test, dev);
        data_free(&train);
        data_free(&test);
        return st;
    }
    if (!cfg.batch && isatty(STDOUT_FILENO)) {
        int st = ui_main(&cfg, &train, &test, dev);
        data_free(&train);
        data_free(&test);
        return st;
    }

    int nruns = config_count(&cfg), status = 0;
    int show = !cfg.quiet && isatty(STDERR_FILENO);
    struct session s;
    session_init(&s, &cfg, &train, &test, dev);
    s.repeat = cfg.repeat;
    /* --repeat: each configuration's runs come one after another */
    for (int k = 0; k < nruns * cfg.repeat && !stop_signal; k++) {
        int i = k / cfg.repeat;
        struct run_config rc;
        config_expand(&cfg, i, &rc);
        if (session_start(&s, &rc, err, sizeof(err)) != 0) {
            fprintf(stderr, "ddptop: %s\n", err);
            status = 2;
            break;
        }
        if (s.run->note[0] && !cfg.quiet)
            fprintf(stderr, "ddptop: %s\n", s.run->note);
        for (int n = 0; session_tick(&s, stop_signal != 0); n++) {
            if (stop_forced)
                forced_exit(&s);
            tell(&s, show);
            if (show && n % 10 == 0)
                progress(s.run, k, nruns * cfg.repeat);
            probe_nap_ms(20);
        }
        if (show) {
            progress(s.run, k, nruns * cfg.repeat);
            fprintf(stderr, "\n");
        }
        tell(&s, 0);
        if (s.run->state == RUN_FAILED)
            fprintf(stderr, "ddptop: %s\n", s.run->err);
        if (pr->active && s.run->state != RUN_DONE)
            break; /* as the workers do (worker_main) */
    }
    if ((s.any_failed || s.trace_failed) && status == 0)
        status = 1; /* a lost trace must show in the exit status, as a lost report does */
    if (stop_signal) {
        fprintf(stderr, s.nresults > 0 ? "ddptop: interrupted; reporting what was measured\n"
                                       : "ddptop: interrupted before the first run started: nothing was measured\n");
        status = 128 + (int)stop_signal;
    }
    s.nresults = results_collapse_repeats(s.results, s.nresults, cfg.repeat);
    results_compare(s.results, s.nresults, cfg.baseline);
    if (s.nresults > 0 && report_save_all(&cfg, s.results, s.nresults) != 0 && status == 0)
        status = 1;
    if (s.nresults > 0 && cfg.plot[0] && figures_save(cfg.plot, s.results, s.nresults, cfg.quiet) != 0 && status == 0)
        status = 1;
    session_free(&s);
    data_free(&train);
    data_free(&test);
    return status;
}
