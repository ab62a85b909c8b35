/* ui.c - the screen manager: starts the run, owns the terminal, and turns
 * time and keys into frames.
 *
 * One loop on the UI thread, which is also the session's collector
 * (session.h: the same runs, traces and results as --batch):
 *   wait for a key, at most until the next refresh (--refresh-ms)
 *   -> key: the global keys here, arrows to the focused pane; handlers
 *      return UI_* flags and only this file acts on them
 *   -> refresh due: run_poll() (never blocks on a rank), snapshot (unless
 *      the view is frozen), run lifecycle (finished, starting the next run
 *      that the plan describes), the runs' speedups
 *   -> draw: each pane into its own window, one wnoutrefresh per window,
 *      then one doupdate.
 * Rank threads never see curses. Signal handlers only set a flag (SIGINT,
 * SIGTERM), or restore the terminal and re-raise (SIGSEGV, SIGABRT, SIGBUS,
 * SIGFPE). Every way out restores the terminal before anything is printed.
 */
#include "ui.h"

#include <langinfo.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"
#include "data.h"
#include "layout.h"
#include "panes.h"
#include "plan.h"
#include "figures.h"
#include "follow.h"
#include "procs.h"
#include "mode.h"
#include "report.h"
#include "run.h"
#include "scaling.h"
#include "session.h"
#include "snap.h"
#include "stop.h"
#include "sync.h"
#include "theme.h"
#include "tracing.h"

/* The panes, by layout id. */
static const struct pane_ops *const registry[PANE_COUNT] = {
    [PANE_HEADER] = &pane_header,   [PANE_RANKS] = &pane_ranks,     [PANE_TIMELINE] = &pane_timeline,
    [PANE_LAYERS] = &pane_layers,   [PANE_KERNELS] = &pane_kernels, [PANE_LOSS] = &pane_loss,
    [PANE_TRAFFIC] = &pane_traffic, [PANE_RUNS] = &pane_runs,       [PANE_SCALING] = &pane_scaling,
    [PANE_FOOTER] = &pane_footer,
};
_Static_assert(sizeof(registry) / sizeof(registry[0]) == PANE_COUNT, "one pane class per layout pane");
/* --follow: its cycles in the loss and traffic slots (a trace has neither) */
static const struct pane_ops *const follow_registry[PANE_COUNT] = {
    [PANE_HEADER] = &pane_header,       [PANE_RANKS] = &pane_ranks,     [PANE_TIMELINE] = &pane_timeline,
    [PANE_LAYERS] = &pane_layers,       [PANE_KERNELS] = &pane_kernels, [PANE_LOSS] = &pane_cycles,
    [PANE_TRAFFIC] = &pane_cycle_table, [PANE_RUNS] = &pane_runs,       [PANE_SCALING] = &pane_scaling,
    [PANE_FOOTER] = &pane_footer,
};
_Static_assert(sizeof(follow_registry) / sizeof(follow_registry[0]) == PANE_COUNT, "one pane class per pane");

#define STATUS_INFO_NS (10LL * 1000 * 1000 * 1000) /* info messages fade after 10 s */

struct ui {
    const struct config *cfg;
    struct session s;                    /* the runs: the current one, and every result so far */
    struct snap snap;                    /* what the panes draw of the current run */
    const struct replay *replay;         /* --replay: a recorded run, nothing live (no session run) */
    struct follow *follow;               /* --follow: the cycles of a job elsewhere (no session run) */
    const struct pane_ops *const *panes; /* by layout id: registry, or follow_registry */
    int leave;                           /* --idle-exit's time passed: out, as after q */
    int tl_fitted;                       /* --follow: the timeline was set to a cycle's steps */
    int switching;                       /* `s`: waiting for the run to stop, then start the next */
    int pausing;                         /* `p`: waiting for the ranks to reach the step boundary */
    struct plan plan;                    /* what `s` starts next (r/R, b/B, n change it) */
    int sweep_next;                      /* the command line's sweep: its combination `s` starts next */
    char next_run[96];                   /* the plan, described */
    struct scaling scaling;              /* the runs' speedups, for the Runs and Scaling panes */
    int show_layers;                     /* L: the Layers pane in the timeline's place */
    int show_kernels;                    /* K: the Kernels pane there, over either */
    int show_scaling;                    /* g: the Scaling plot in the Runs table's place */
    unsigned asked;                      /* PANE_BIT()s switched in by a key: the layout keeps them longest */
    /* screen */
    struct layout lay;
    struct layout_req req;
    WINDOW *win[PANE_COUNT];
    WINDOW *helpwin;
    int help, frozen, focus;
    struct view_state vs;
    struct theme theme;
    char themes[THEME_MAX_LIST][THEME_NAME];
    int nthemes, theme_idx, colour;
    char status[400];
    int status_error;
    int64_t status_ns;
    int trace_n;
    int exit_on_done;
    const char *crash_test; /* DDPTOP_UI_TEST_CRASH=abort|segv[:STEPS] (a test hook) */
    size_t crash_steps;     /* ... crash at the first frame from the second on with STEPS steps done */
    SCREEN *scr;
    FILE *tty_out; /* under mpirun: the terminal, opened (open_terminal) */
    /* what the UI itself costs: frames drawn, this thread's CPU and wall time */
    long frames;
    int64_t cpu_ns, wall_ns;
};

/* ---- signals and terminal restore ----------------------------------------- */

static volatile sig_atomic_t g_term_live; /* curses owns the terminal */
/* the terminal's descriptors for its modes and for output: stdin and
 * stdout, or under mpirun /dev/tty for both (open_terminal) */
static int g_tty_modes = STDIN_FILENO, g_tty_out = STDOUT_FILENO;
static struct sigaction g_ttou_saved; /* under mpirun: SIGTTOU's handler before the UI */
static struct termios g_tty_saved;
static char g_restore_seq[256];
static size_t g_restore_len;
static const int crash_sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE};
#define NCRASH ((int)(sizeof(crash_sigs) / sizeof(crash_sigs[0])))
static struct sigaction g_crash_old[NCRASH];

/* Puts the terminal back the async-signal-safe way (tcsetattr and write of
 * sequences prepared at start), then tries endwin() as well, then re-raises
 * with the handler that was there before (the default, or a sanitizer's). */
static void ui_on_crash(int sig)
{
    for (int i = 0; i < NCRASH; i++)
        if (crash_sigs[i] == sig)
            sigaction(sig, &g_crash_old[i], NULL);
    if (g_term_live) {
        g_term_live = 0;
        tcsetattr(g_tty_modes, TCSANOW, &g_tty_saved);
        if (write(g_tty_out, g_restore_seq, g_restore_len) < 0) {
            /* nothing more can be done from here */
        }
        /* not async-signal-safe, hence last: if it faults, the handler
         * restored above ends the process and the terminal is already sane */
        endwin();
    }
    raise(sig);
}

static void install_signals(void)
{
    stop_install(); /* no SA_RESTART: a signal wakes the key wait */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = ui_on_crash;
    sa.sa_flags = SA_NODEFER;
    for (int i = 0; i < NCRASH; i++)
        sigaction(crash_sigs[i], &sa, &g_crash_old[i]);
}

static void uninstall_signals(void)
{
    for (int i = 0; i < NCRASH; i++)
        sigaction(crash_sigs[i], &g_crash_old[i], NULL);
    stop_uninstall();
}

static void add_cap(const char *cap)
{
    char *s = tigetstr(cap);
    if (!s || s == (char *)-1)
        return;
    size_t n = strlen(s);
    if (g_restore_len + n < sizeof(g_restore_seq)) {
        memcpy(g_restore_seq + g_restore_len, s, n);
        g_restore_len += n;
    }
}

/* The sequences that undo what curses did, for the crash handler. */
static void prepare_restore(void)
{
    g_restore_len = 0;
    add_cap("sgr0");
    add_cap("cnorm");
    add_cap("rmkx");
    add_cap("rmcup");
    if (g_restore_len + 2 < sizeof(g_restore_seq)) {
        memcpy(g_restore_seq + g_restore_len, "\r\n", 2);
        g_restore_len += 2;
    }
}

/* ---- status line ------------------------------------------------------------ */

static void say(struct ui *u, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct ui *u, int error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->status, sizeof(u->status), fmt, ap);
    va_end(ap);
    u->status_error = error;
    u->status_ns = probe_now_ns();
}

/* ---- runs ------------------------------------------------------------------- */

/* Starts rc as the session's next run with a fresh snapshot of it; on a
 * refusal the current run (and its final report) stays on screen. */
static void describe_next(struct ui *u);

static int start_run(struct ui *u, const struct run_config *rc, char *err, size_t errlen)
{
    if (session_start(&u->s, rc, err, errlen) != 0)
        return -1;
    struct snap fresh;
    if (snap_init(&fresh, u->s.run) != 0) {
        session_finish(&u->s);
        snprintf(err, errlen, "out of memory for the screen's snapshot");
        return -1;
    }
    snap_free(&u->snap);
    u->snap = fresh;
    u->switching = 0;
    u->pausing = 0;
    u->vs.tl_back = 0;
    u->vs.tl_lane0 = 0;
    u->vs.rank0 = 0;
    u->vs.run0 = RUNS_FOLLOW;
    u->vs.layer0 = 0;
    snap_update(&u->snap, u->s.run, NULL, probe_now_ns());
    plan_reset(&u->plan, rc);
    describe_next(u);
    return 0;
}

/* A sweep's combination k, described: "the sweep's 2/4: lenet, ddp, 2 ranks x 32". */
static void describe_sweep(const struct ui *u, int k, char *buf, size_t n)
{
    struct run_config rc;
    char mode[48];
    config_expand(u->cfg, k, &rc);
    snprintf(buf, n, "the sweep's %d/%d: %s, %s, %d rank%s x %d", k + 1, config_count(u->cfg), rc.model,
             train_mode_label(&rc, mode, sizeof(mode)), rc.ranks, rc.ranks == 1 ? "" : "s", rc.batch_size);
}

/* What `s` starts next: the plan once edited, else the sweep's next
 * combination while any is left, else the plan (the next strategy). */
static void describe_next(struct ui *u)
{
    if (!u->plan.edited && u->sweep_next < config_count(u->cfg))
        describe_sweep(u, u->sweep_next, u->next_run, sizeof(u->next_run));
    else
        plan_describe(&u->plan, u->next_run, sizeof(u->next_run));
}

/* The speedup of every run, the live one's from its recent throughput. */
static void refresh_scaling(struct ui *u)
{
    if (u->replay || u->follow)
        return;
    struct run_result live;
    int is_live = !u->s.joined;
    if (is_live) {
        memset(&live, 0, sizeof(live));
        live.cfg = u->s.rc;
        live.world = u->snap.world;
        live.global_batch = u->snap.global_batch;
        live.rate.samples_s = u->snap.rate_valid && u->snap.rate.samples_valid ? u->snap.rate.samples_s : 0;
        /* (what the note on an efficiency above 100% weighs) */
        live.steps = (long)u->snap.steps_done;
        live.threads_per_rank = u->s.rc.threads_per_rank;
        /* results_compare goes by median step times: the recent rate's */
        if (live.rate.samples_s > 0 && live.global_batch > 0) {
            live.rate.ms = 1e3 * live.global_batch / live.rate.samples_s;
            live.ms_valid = live.batch_valid = 1;
        }
    }
    scaling_update(&u->scaling, u->s.results, u->s.nresults, is_live ? &live : NULL, u->cfg->baseline);
}

/* The session has joined the run and kept its result: the final report on
 * screen, and a word in the status line. */
static void run_done(struct ui *u)
{
    const struct run_result *res = session_result(&u->s);
    snap_update(&u->snap, u->s.run, res, probe_now_ns());
    if (u->s.run->state == RUN_FAILED) {
        say(u, 1, "run failed: %s  (q: quit, s: next run)", u->s.run->err);
    } else if (res && !u->switching) {
        char sps[16];
        fmt_si(sps, sizeof(sps), res->rate.samples_s);
        /* the median step, as samples/s and the Runs table have it */
        say(u, 0, "run %s: %ld steps, p50 %.2f ms/step, %s samples/s; final report on screen (s: next run, q: quit)",
            run_state_name(u->s.run->state), res->steps, res->rate.ms, sps);
        u->status_ns = 0; /* stays until replaced */
    }
}

/* `s` with the plan untouched: the next strategy in order that run_start
 * accepts, wrapping; the refused ones are named in the status line. */
static void next_strategy(struct ui *u)
{
    char skipped[300] = "";
    size_t sk = 0;
    struct plan p = {.ranks = u->s.rc.ranks, .batch = u->s.rc.batch_size};
    int cur = u->s.rc.strategy;
    for (int k = 1; k <= SYNC_KINDS; k++) {
        struct run_config rc;
        p.strategy = (cur + k) % SYNC_KINDS;
        plan_config(&p, u->cfg, &u->s.rc, &rc);
        char err[320];
        if (start_run(u, &rc, err, sizeof(err)) == 0) {
            u->frozen = 0;
            if (sk)
                say(u, 0, "started %s (skipped %s)", strategy_name(rc.strategy), skipped);
            else
                say(u, 0, "started %s", strategy_name(rc.strategy));
            return;
        }
        if (sk < sizeof(skipped))
            sk += (size_t)snprintf(skipped + sk, sizeof(skipped) - sk, "%s%s: %s", sk ? "; " : "",
                                   strategy_name(rc.strategy), err);
    }
    u->switching = 0;
    say(u, 1, "no strategy could start: %s", skipped);
}

/* `s` after r/R, b/B or n: exactly the planned run, or a line saying why
 * not (the previous run's report stays on screen). */
static void start_plan(struct ui *u)
{
    struct run_config rc;
    struct plan p = u->plan;
    char desc[96], err[320];
    plan_describe(&p, desc, sizeof(desc));
    plan_config(&p, u->cfg, &u->s.rc, &rc);
    if (start_run(u, &rc, err, sizeof(err)) != 0) {
        u->switching = 0;
        say(u, 1, "the next run (%s) cannot start: %s", desc, err);
        return;
    }
    u->frozen = 0;
    say(u, 0, "started %s", desc);
}

/* r/R, b/B, n: a new plan, unless run_check refuses the run it describes
 * (then the plan stays as it was and the status line says why). */
static void change_plan(struct ui *u, int key)
{
    if (u->switching) {
        say(u, 0, "%c: the next run is already starting", key);
        return;
    }
    struct plan p = u->plan;
    char err[320] = "";
    int bound = 0;
    if (key == 'r' || key == 'R')
        bound = plan_ranks(&p, &u->s.rc, key == 'r' ? -1 : 1, err, sizeof(err));
    else if (key == 'b' || key == 'B')
        bound = plan_batch(&p, &u->s.rc, key == 'b' ? -1 : 1, err, sizeof(err));
    else
        plan_next_strategy(&p);
    if (bound != 0) {
        say(u, 1, "%c: %s", key, err);
        return;
    }
    char desc[96];
    plan_describe(&p, desc, sizeof(desc));
    struct run_config rc;
    plan_config(&p, u->cfg, &u->s.rc, &rc);
    if (run_check(&rc, u->s.train, u->s.dev, err, sizeof(err)) != 0) {
        say(u, 1, "%c: refused: %s", key, err);
        return;
    }
    u->plan = p;
    snprintf(u->next_run, sizeof(u->next_run), "%s", desc);
    say(u, 0, "next run: %s  (s starts it; r/R ranks, b/B batch, n strategy)", desc);
}

/* `s` with the plan untouched and the sweep not done: its next
 * combination, exactly as --batch would run it; one that cannot start is
 * named and passed over. */
static void start_sweep(struct ui *u)
{
    char desc[96], err[320];
    int k = u->sweep_next++;
    describe_sweep(u, k, desc, sizeof(desc));
    struct run_config rc;
    config_expand(u->cfg, k, &rc);
    if (start_run(u, &rc, err, sizeof(err)) != 0) {
        u->switching = 0;
        describe_next(u);
        say(u, 1, "%s cannot start: %s", desc, err);
        return;
    }
    u->frozen = 0;
    say(u, 0, "started %s", desc);
}

/* `s`: the planned run once the current one has stopped. */
static void start_next(struct ui *u)
{
    if (u->plan.edited)
        start_plan(u);
    else if (u->sweep_next < config_count(u->cfg))
        start_sweep(u);
    else
        next_strategy(u);
}

/* --follow's refresh: the cycles that landed, what the follower says,
 * and --idle-exit. */
static void follow_tick(struct ui *u)
{
    char msg[320];
    while (follow_message(u->follow, msg, sizeof(msg)))
        say(u, strstr(msg, "straggler") == NULL && strstr(msg, "left out") != NULL, "%s", msg);
    int64_t now = probe_now_ns();
    if (!u->frozen && snap_from_follow(&u->snap, u->follow, now) != 0)
        say(u, 1, "out of memory for the screen's snapshot");
    /* the timeline shows a whole cycle, until the user zooms */
    for (int i = 0; i < u->snap.world && !u->tl_fitted; i++) {
        const struct snap_rank *r = &u->snap.ranks[i];
        if (r->cycle >= 0 && r->step_lo <= r->step_hi) {
            long k = (long)r->step_hi - (long)r->step_lo + 1;
            u->vs.tl_steps = k < 1 ? 1 : k > 64 ? 64 : (int)k;
            u->tl_fitted = 1;
        }
    }
    follow_lock(u->follow);
    int64_t quiet = now - u->follow->last_change_ns;
    follow_unlock(u->follow);
    if (u->cfg->idle_exit_s > 0 && (double)quiet / 1e9 >= u->cfg->idle_exit_s)
        u->leave = 1;
}

/* One refresh: drain the rings, follow the run's lifecycle, snapshot. */
static void tick(struct ui *u)
{
    if (u->follow)
        follow_tick(u);
    if (!u->s.joined) {
        int running = session_tick(&u->s, stop_signal != 0);
        int error = 0;
        const char *msg = session_message(&u->s, &error);
        if (msg)
            say(u, error, "%s", msg);
        if (!running) {
            u->pausing = 0;
            run_done(u);
        } else if (!u->frozen)
            snap_update(&u->snap, u->s.run, NULL, probe_now_ns());
        if (u->pausing && running && snap_run_at_rest(u->s.run)) {
            u->pausing = 0;
            say(u, 0, "paused at step %ld (p resumes; arrows scroll the timeline's history)",
                (long)u->s.run->metrics.steps_done);
            u->status_ns = 0; /* stays until replaced */
        }
    }
    if (u->s.joined && u->switching)
        start_next(u);
    if (!u->frozen)
        refresh_scaling(u);
    if (u->status_ns && !u->status_error && probe_now_ns() - u->status_ns > STATUS_INFO_NS)
        u->status[0] = 0;
}

/* ---- screen --------------------------------------------------------------- */

static void destroy_windows(struct ui *u)
{
    for (int p = 0; p < PANE_COUNT; p++)
        if (u->win[p]) {
            delwin(u->win[p]);
            u->win[p] = NULL;
        }
    if (u->helpwin) {
        delwin(u->helpwin);
        u->helpwin = NULL;
    }
}

/* Under mpirun, process 0 is in a process group of its own, in the
 * background of its terminal, where mpirun's group is in the foreground:
 * its stdout is a pty of mpirun's, and mpirun reads the terminal and
 * forwards what is typed to process 0's stdin. The UI therefore writes to
 * the terminal itself (/dev/tty) and sets its modes there, with SIGTTOU
 * ignored (a background group may then), and reads its keys from stdin.
 * Raw mode makes Ctrl-C a key that mpirun forwards (the loop takes it as
 * the signal); SIGWINCH goes to mpirun, so the loop asks for the size.
 * Taking the foreground instead would stop mpirun (SIGTTIN) on its next
 * read. 0, or -1 after one line. */
static int open_terminal(struct ui *u)
{
    if (!procs_self()->active || procs_self()->wire)
        return 0; /* (process 0 of --rendezvous was started on this terminal) */
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0 || !(u->tty_out = fdopen(fd, "w"))) {
        fprintf(stderr, "ddptop: the UI under mpirun needs the terminal (/dev/tty): %m; use --batch\n");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sigaction ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGTTOU, &ign, &g_ttou_saved);
    g_tty_modes = fd;
    g_tty_out = fd;
    return 0;
}

/* The terminal open_terminal opened, closed, and SIGTTOU as it was. */
static void release_terminal(struct ui *u)
{
    if (!u->tty_out)
        return;
    fclose(u->tty_out);
    u->tty_out = NULL;
    g_tty_modes = STDIN_FILENO;
    g_tty_out = STDOUT_FILENO;
    sigaction(SIGTTOU, &g_ttou_saved, NULL);
}

/* Gives the terminal back: the windows, curses' screen, then the flag the
 * crash handler reads. Whatever happens next prints on a sane screen. */
static void close_screen(struct ui *u)
{
    destroy_windows(u);
    endwin();
    g_term_live = 0;
    delscreen(u->scr);
    u->scr = NULL;
    release_terminal(u);
}

static void fill_req(const struct ui *u, struct layout_req *q)
{
    memset(q, 0, sizeof(*q));
    getmaxyx(stdscr, q->rows, q->cols);
    q->want = PANE_ALL & ~(PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_KERNELS) | PANE_BIT(PANE_SCALING));
    if (u->show_layers)
        q->want |= PANE_BIT(PANE_LAYERS);
    if (u->show_kernels)
        q->want |= PANE_BIT(PANE_KERNELS);
    if (u->show_scaling)
        q->want |= PANE_BIT(PANE_SCALING);
    q->keep = u->asked;
    q->rank_rows = u->snap.world;
    q->lanes = snap_lanes(&u->snap);
    q->run_rows = u->s.nresults + (u->s.joined && !u->replay && !u->follow ? 0 : 1);
    /* the layers, and for ddp a header and a few buckets under them */
    q->layer_rows = u->snap.nlayers + (sync_has(u->snap.sync, SYNC_BUCKET_MARKS) && u->snap.world > 1 ? 4 : 0);
    q->kernel_rows = kernels_pane_lines(u->snap.result);
}

/* Rebuilds every window from a fresh layout (after a resize, or when the
 * content's wishes changed: lanes appeared, a run was added). */
static void relayout(struct ui *u)
{
    destroy_windows(u);
    fill_req(u, &u->req);
    layout_compute(&u->lay, &u->req);
    werase(stdscr);
    wnoutrefresh(stdscr);
    if (u->lay.too_small)
        return;
    for (int p = 0; p < PANE_COUNT; p++) {
        if (!(u->lay.shown & PANE_BIT(p)))
            continue;
        const struct rect *r = &u->lay.pane[p];
        u->win[p] = newwin(r->h, r->w, r->y, r->x);
    }
    const struct rect *h = &u->lay.help;
    u->helpwin = newwin(h->h, h->w, h->y, h->x);
    if (!(u->lay.shown & PANE_BIT(u->focus)) || !u->panes[u->focus]->focusable) {
        u->focus = PANE_RANKS;
    }
}

static void draw_too_small(const struct ui *u)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    char msg[128];
    snprintf(msg, sizeof(msg), "terminal too small: need at least %dx%d (now %dx%d)", u->lay.min_cols, u->lay.min_rows,
             cols, rows);
    /* word-wrap into the width we have */
    werase(stdscr);
    wattrset(stdscr, draw_attr(TH_ERROR));
    int y = rows > 3 ? rows / 2 - 1 : 0, len = (int)strlen(msg), at = 0;
    while (at < len && y < rows && cols > 0) {
        int n = len - at < cols ? len - at : cols;
        if (at + n < len)
            for (int k = n; k > 0; k--)
                if (msg[at + k] == ' ') {
                    n = k;
                    break;
                }
        mvwaddnstr(stdscr, y++, 0, msg + at, n);
        at += n;
        while (at < len && msg[at] == ' ')
            at++;
    }
    wattrset(stdscr, A_NORMAL);
    wnoutrefresh(stdscr);
    doupdate();
}

static void make_view(struct ui *u, struct pane_view *v)
{
    memset(v, 0, sizeof(*v));
    v->snap = &u->snap;
    v->results = u->s.results;
    v->nresults = u->s.nresults;
    v->scaling = &u->scaling;
    v->next_run = u->replay || u->follow ? "" : u->next_run;
    v->live = !u->s.joined || u->replay || u->follow; /* a replay's run is the snapshot's row */
    v->current = v->live ? u->s.nresults : u->s.nresults - 1;
    v->vs = &u->vs;
    v->can_browse = u->frozen || u->s.joined || atomic_load(&u->s.run->paused);
    v->frozen = u->frozen;
    v->colour = u->colour;
    v->theme = u->theme.name;
    v->status = u->status;
    v->status_error = u->status_error;
}

static void draw_screen(struct ui *u)
{
    struct layout_req q;
    fill_req(u, &q);
    if (memcmp(&q, &u->req, sizeof(q)) != 0)
        relayout(u);
    if (u->lay.too_small) {
        draw_too_small(u);
        return;
    }
    struct pane_view v;
    make_view(u, &v);
    for (int p = 0; p < PANE_COUNT; p++) {
        if (!u->win[p])
            continue;
        u->panes[p]->draw(u->win[p], &v, u->focus == p);
        wnoutrefresh(u->win[p]);
    }
    if (u->help && u->helpwin) {
        help_draw(u->helpwin, &v);
        wnoutrefresh(u->helpwin);
    }
    doupdate();
}

/* ---- keys ------------------------------------------------------------------ */

static void cycle_focus(struct ui *u, int dir)
{
    for (int k = 1; k <= PANE_COUNT; k++) {
        int p = ((u->focus + dir * k) % PANE_COUNT + PANE_COUNT) % PANE_COUNT;
        if (u->panes[p]->focusable && (u->lay.shown & PANE_BIT(p))) {
            u->focus = p;
            return;
        }
    }
}

static void export_trace(struct ui *u)
{
    char path[64], err[320];
    snprintf(path, sizeof(path), "ddptop-%d-%d.json", (int)getpid(), ++u->trace_n);
    err[0] = 0;
    if (run_export_trace(u->s.run, path, err, sizeof(err)) == 0)
        say(u, 0, "trace written to %s", path);
    else
        say(u, 1, "%s", err[0] ? err : "trace: failed"); /* err names the trace and its file */
}

static void next_theme(struct ui *u)
{
    if (!u->colour) {
        say(u, 0, "colour is off (NO_COLOR, or the terminal has fewer than 8 colours): monochrome only");
        return;
    }
    if (u->nthemes == 0)
        return;
    for (int k = 1; k <= u->nthemes; k++) {
        int i = (u->theme_idx + k) % u->nthemes;
        struct theme t;
        char err[320];
        if (theme_load(&t, u->themes[i], err, sizeof(err)) != 0) {
            say(u, 1, "theme: %s", err);
            continue;
        }
        u->theme = t;
        u->theme_idx = i;
        draw_apply_theme(&u->theme, u->colour);
        say(u, 0, "theme %s", u->theme.name);
        return;
    }
}

/* K, L and g: one pane of a slot takes the other's place (*on: the second
 * is shown). Focus follows, and the slot, once asked for, keeps its room
 * on a small terminal longer than the panes nobody asked for. Where the
 * slot is off screen (a small terminal gave its room away), the key
 * first brings it back with the pane it holds: one press shows the Runs
 * table at 80x24, not the Scaling plot. */
static void switch_slot(struct ui *u, int *on, int first, int second)
{
    unsigned both = PANE_BIT(first) | PANE_BIT(second);
    int was_asked = (u->asked & both) == both;
    u->asked |= both;
    if (!(u->lay.shown & both) && !was_asked)
        return;
    *on = !*on;
    if (u->focus == (*on ? first : second))
        u->focus = *on ? second : first;
    u->vs.layer0 = 0;
}

static int handle_key(struct ui *u, int ch)
{
    if (ch == KEY_RESIZE)
        return UI_RESIZE | UI_REDRAW;
    if (u->help) {
        if (!help_key(ch, &u->vs))
            u->help = 0; /* any other key closes it, q too: it does not quit */
        return UI_HANDLED | UI_REDRAW;
    }
    if ((u->replay || u->follow) && ch > 0 && ch < 128 && strchr(u->follow ? "pPeEsSrRbBn" : "pPeEsSrRbBn ", ch)) {
        /* pause, export and the next run act on a live run; freeze too,
         * but for a follower's cycles */
        const char *what = u->follow ? "while following a job's traces" : "in a replay";
        if (ch == ' ')
            say(u, 0, "space: not available %s", what);
        else
            say(u, 0, "%c: not available %s", ch, what);
        return UI_HANDLED | UI_REDRAW;
    }
    switch (ch) {
    case 'q':
    case 'Q':
        return UI_QUIT;
    case '?':
    case KEY_F(1):
        u->help = 1;
        u->vs.help0 = 0;
        return UI_HANDLED | UI_REDRAW;
    case 'p':
    case 'P':
        if (u->s.joined) {
            say(u, 0, "the run is %s: nothing to pause", run_state_name(u->s.run->state));
        } else {
            int paused = !atomic_load(&u->s.run->paused);
            run_set_paused(u->s.run, paused);
            u->pausing = paused;
            say(u, 0, paused ? "pausing: the ranks stop at the next step boundary (p resumes)" : "resumed");
        }
        return UI_HANDLED | UI_REDRAW;
    case ' ':
        u->frozen = !u->frozen;
        if (!u->frozen && u->follow)
            snap_from_follow(&u->snap, u->follow, probe_now_ns());
        else if (!u->frozen)
            snap_update(&u->snap, u->s.run, session_result(&u->s), probe_now_ns());
        if (!u->frozen)
            say(u, 0, "view live");
        else if (u->follow)
            say(u, 0, "view frozen; cycles go on landing (space thaws)");
        else if (u->s.joined)
            say(u, 0, "view frozen; the run is %s (space thaws, arrows scroll history)",
                run_state_name(u->s.run->state));
        else
            say(u, 0, "view frozen; training goes on (space thaws, arrows scroll history)");
        return UI_HANDLED | UI_REDRAW;
    case 'e':
    case 'E':
        export_trace(u);
        return UI_HANDLED | UI_REDRAW;
    case 's':
    case 'S':
        if (u->switching)
            return UI_HANDLED;
        if (u->plan.edited) {
            /* refused before the current run is stopped for it */
            struct run_config rc;
            char err[320];
            plan_config(&u->plan, u->cfg, &u->s.rc, &rc);
            if (run_check(&rc, u->s.train, u->s.dev, err, sizeof(err)) != 0) {
                say(u, 1, "s: the next run (%s) cannot start: %s", u->next_run, err);
                return UI_HANDLED | UI_REDRAW;
            }
        }
        u->switching = 1;
        if (!u->s.joined) {
            say(u, 0, "stopping %s at a step boundary...", strategy_name(u->s.rc.strategy));
            run_request_stop(u->s.run);
        }
        return UI_HANDLED | UI_REDRAW;
    case 't':
    case 'T':
        next_theme(u);
        return UI_HANDLED | UI_REDRAW;
    case '\t':
        cycle_focus(u, 1);
        return UI_HANDLED | UI_REDRAW;
    case KEY_BTAB:
        cycle_focus(u, -1);
        return UI_HANDLED | UI_REDRAW;
    case '+':
    case '=':
        return timeline_zoom(&u->vs, 1);
    case '-':
    case '_':
        return timeline_zoom(&u->vs, 0);
    case 'l':
        u->vs.loss_log = !u->vs.loss_log;
        return UI_HANDLED | UI_REDRAW;
    case 'r':
    case 'R':
    case 'b':
    case 'B':
    case 'n':
        change_plan(u, ch);
        return UI_HANDLED | UI_REDRAW;
    case 'L':
        if (u->show_kernels) {
            /* the Kernels pane holds the slot: L puts the Layers pane there */
            u->show_kernels = 0;
            u->show_layers = 1;
            u->asked |= PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_LAYERS);
            if (u->focus == PANE_KERNELS)
                u->focus = PANE_LAYERS;
        } else {
            switch_slot(u, &u->show_layers, PANE_TIMELINE, PANE_LAYERS);
        }
        return UI_HANDLED | UI_REDRAW;
    case 'K':
        switch_slot(u, &u->show_kernels, u->show_layers ? PANE_LAYERS : PANE_TIMELINE, PANE_KERNELS);
        return UI_HANDLED | UI_REDRAW;
    case 'g':
    case 'G':
        switch_slot(u, &u->show_scaling, PANE_RUNS, PANE_SCALING);
        return UI_HANDLED | UI_REDRAW;
    default:
        break;
    }
    const struct pane_ops *p = u->panes[u->focus];
    struct pane_view v;
    make_view(u, &v);
    int f = p->key ? p->key(ch, &v) : 0;
    /* m (the figure the cycles show) whatever has focus */
    if (!f && u->follow && (ch == 'm' || ch == 'M') && u->panes[PANE_LOSS]->key)
        f = u->panes[PANE_LOSS]->key(ch, &v);
    /* ←/→ (Home/End) that the focused pane leaves: the timeline's history,
     * while it is on screen */
    if (!f && (ch == KEY_LEFT || ch == KEY_RIGHT || ch == KEY_HOME || ch == KEY_END) &&
        (u->lay.shown & PANE_BIT(PANE_TIMELINE)))
        f = u->panes[PANE_TIMELINE]->key(ch, &v);
    if (v.hint)
        say(u, 0, "%s", v.hint);
    return f;
}

/* ---- setup and the loop ------------------------------------------------------ */

static int setup_theme(struct ui *u)
{
    char err[400];
    const char *name = u->cfg->theme[0] ? u->cfg->theme : theme_no_color_env() ? "monochrome" : "default";
    if (theme_load(&u->theme, name, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --theme: %s\n", err);
        return -1;
    }
    u->nthemes = theme_list(u->themes, THEME_MAX_LIST);
    for (int i = 0; i < u->nthemes; i++)
        if (!strcmp(u->themes[i], u->theme.name))
            u->theme_idx = i;
    return 0;
}

/* curses on: returns -1 (nothing to undo) when the terminal can't do it. */
static int setup_curses(struct ui *u, int utf8)
{
    if (open_terminal(u) != 0)
        return -1;
    if (tcgetattr(g_tty_modes, &g_tty_saved) != 0) {
        release_terminal(u);
        fprintf(stderr, "ddptop: the interactive UI needs a terminal on stdin; use --batch\n");
        return -1;
    }
    /* (curses sets the modes of its output's terminal) */
    SCREEN *scr = newterm(NULL, u->tty_out ? u->tty_out : stdout, stdin);
    if (!scr) {
        release_terminal(u);
        fprintf(stderr, "ddptop: cannot start the UI on terminal '%s'; use --batch\n",
                getenv("TERM") ? getenv("TERM") : "(unset)");
        return -1;
    }
    set_term(scr);
    /* a terminal that cannot place the cursor (TERM=dumb) would show a
     * blank screen with a garbled line: refuse it as one without a TERM */
    char *cup = tigetstr("cup");
    if (!cup || cup == (char *)-1) {
        endwin();
        delscreen(scr);
        release_terminal(u);
        fprintf(stderr, "ddptop: terminal '%s' cannot place the cursor, which the UI needs; use --batch\n",
                getenv("TERM") ? getenv("TERM") : "(unset)");
        return -1;
    }
    u->scr = scr;
    prepare_restore();
    g_term_live = 1;
    if (u->tty_out)
        raw(); /* Ctrl-C as a key, through mpirun (open_terminal) */
    else
        cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    draw_init(utf8);
    /* Colour only when it is wanted and there are at least 8 colours; an
     * explicit --theme overrides NO_COLOR, as no-color.org asks. */
    int want = u->cfg->theme[0] || !theme_no_color_env();
    u->colour = 0;
    if (want && has_colors() && start_color() == OK && COLORS >= 8) {
        draw_default_colours(use_default_colors() == OK);
        u->colour = 1;
    }
    if (!u->colour && strcmp(u->theme.name, "monochrome") != 0) {
        char err[320];
        if (theme_load(&u->theme, "monochrome", err, sizeof(err)) != 0)
            theme_builtin(&u->theme, 1);
    }
    if (draw_apply_theme(&u->theme, u->colour) != 0) {
        u->colour = 0;
        theme_builtin(&u->theme, 1);
        draw_apply_theme(&u->theme, 0);
    }
    return 0;
}

/* 0, or 1 when the report is not where --output asked (report_save). */
static int print_report(struct ui *u)
{
    if (u->s.nresults == 0)
        return 0;
    results_compare(u->s.results, u->s.nresults, u->cfg->baseline);
    int st = report_save_all(u->cfg, u->s.results, u->s.nresults);
    if (u->cfg->plot[0] && figures_save(u->cfg->plot, u->s.results, u->s.nresults, u->cfg->quiet) != 0)
        st = 1;
    return st;
}

static int64_t thread_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static void loop_body(struct ui *u);

/* The loop, timed: the UI thread's CPU over the loop is what the UI costs
 * (polling and drawing), whatever else the machine is doing. */
static void loop(struct ui *u)
{
    int64_t cpu0 = thread_cpu_ns(), t0 = probe_now_ns();
    loop_body(u);
    u->cpu_ns = thread_cpu_ns() - cpu0;
    u->wall_ns = probe_now_ns() - t0;
}

/* Under mpirun SIGWINCH goes to mpirun (open_terminal): the terminal's
 * size is asked for instead. */
static int poll_size(struct ui *u)
{
    struct winsize ws;
    if (!u->tty_out || ioctl(g_tty_out, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 ||
        (ws.ws_row == LINES && ws.ws_col == COLS))
        return 0;
    resizeterm(ws.ws_row, ws.ws_col);
    return UI_RESIZE | UI_REDRAW;
}

static void loop_body(struct ui *u)
{
    int refresh_ms = u->cfg->refresh_ms > 0 ? u->cfg->refresh_ms : 100;
    int64_t period = (int64_t)refresh_ms * 1000000, next = probe_now_ns();
    relayout(u);
    for (;;) {
        int64_t now = probe_now_ns();
        int wait_ms = now >= next ? 0 : (int)((next - now + 999999) / 1000000);
        wtimeout(stdscr, wait_ms);
        int ch = wgetch(stdscr);
        int flags = 0;
        /* take every key already typed before drawing once */
        while (ch != ERR) {
            if (ch == 3 && u->tty_out)
                raise(SIGINT); /* Ctrl-C in raw mode, under mpirun: as the signal */
            flags |= handle_key(u, ch);
            if (flags & UI_QUIT)
                return;
            wtimeout(stdscr, 0);
            ch = wgetch(stdscr);
        }
        if (stop_signal)
            return;
        flags |= poll_size(u);
        if (flags & UI_RESIZE)
            relayout(u);
        now = probe_now_ns();
        if (now >= next) {
            tick(u);
            next += period;
            if (next <= now)
                next = now + period; /* we fell behind: do not catch up in a burst */
            flags |= UI_REDRAW;
        }
        if (flags & UI_REDRAW) {
            draw_screen(u);
            if (++u->frames >= 2 && u->crash_test && u->s.run->metrics.steps_done >= u->crash_steps) {
                /* tests/e2e_ui.sh checks the terminal survives a crash,
                 * tests/test_safety.sh that the trace replays after it */
                if (!strncmp(u->crash_test, "segv", 4))
                    raise(SIGSEGV);
                abort();
            }
        }
        if ((u->exit_on_done && u->s.joined && !u->switching) || u->leave)
            return;
    }
}

int ui_main(const struct config *cfg, const struct dataset *train, const struct dataset *test,
            const struct device_ops *dev)
{
    setlocale(LC_ALL, "");
    int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    struct ui *u = calloc(1, sizeof(*u));
    if (!u) {
        fprintf(stderr, "ddptop: out of memory\n");
        return 2;
    }
    u->cfg = cfg;
    u->panes = registry;
    session_init(&u->s, cfg, train, test, dev);
    u->vs.tl_steps = 3;
    u->focus = PANE_RANKS;
    const char *eod = getenv("DDPTOP_UI_EXIT_ON_DONE");
    u->exit_on_done = eod && eod[0] && strcmp(eod, "0") != 0;
    u->crash_test = getenv("DDPTOP_UI_TEST_CRASH");
    if (u->crash_test && !u->crash_test[0])
        u->crash_test = NULL;
    const char *at = u->crash_test ? strchr(u->crash_test, ':') : NULL;
    u->crash_steps = at ? strtoul(at + 1, NULL, 10) : 0;
    int status = 2;
    if (setup_theme(u) != 0)
        goto out;

    struct run_config rc;
    config_expand(cfg, 0, &rc);
    u->sweep_next = 1;
    char err[320];
    install_signals();
    /* The UI must not take a core from a rank when it wakes to redraw: as
     * SCHED_BATCH it never preempts them (ranks are created with the normal
     * policy explicitly, run.c). Best effort: an error leaves it as it was. */
    struct sched_param sp = {.sched_priority = 0};
    sched_setscheduler(0, SCHED_BATCH, &sp);
    if (start_run(u, &rc, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        goto out;
    }
    if (setup_curses(u, utf8) != 0)
        goto out;
    if (config_count(cfg) > 1)
        say(u, 0, "a sweep of %d runs: this is the first; s starts the next (r/R ranks, b/B batch, n strategy)",
            config_count(cfg));

    loop(u);

    const char *msg;
    close_screen(u); /* the terminal first */
    if (session_finish(&u->s) != 0) {
        /* a second Ctrl-C while the ranks were leaving: the trace is closed */
        while ((msg = session_message(&u->s, NULL)) != NULL)
            fprintf(stderr, "ddptop: %s\n", msg);
        fprintf(stderr, "ddptop: interrupted twice: leaving without waiting for the ranks\n");
        fflush(NULL);
        _exit(128 + (int)stop_signal);
    }
    while ((msg = session_message(&u->s, NULL)) != NULL)
        fprintf(stderr, "ddptop: %s\n", msg);
    int lost = print_report(u);
    if (u->exit_on_done && u->wall_ns > 0)
        fprintf(
            stderr,
            "ddptop: ui: %ld frames, %.1f ms CPU in the UI thread over %.1f s (%.2f%% of one core, %.0f us/frame)\n",
            u->frames, (double)u->cpu_ns / 1e6, (double)u->wall_ns / 1e9,
            100.0 * (double)u->cpu_ns / (double)u->wall_ns,
            u->frames ? (double)u->cpu_ns / 1e3 / (double)u->frames : 0.0);
    if (u->s.run->state == RUN_FAILED)
        fprintf(stderr, "ddptop: %s\n", u->s.run->err);
    status = stop_signal ? 128 + (int)stop_signal : u->s.any_failed || u->s.trace_failed || lost ? 1 : 0;
    if (stop_signal)
        fprintf(stderr, "ddptop: interrupted; reported what was measured\n");

out:
    uninstall_signals();
    snap_free(&u->snap);
    session_free(&u->s);
    scaling_free(&u->scaling);
    free(u);
    return status;
}

/* A screen over what was recorded (a replay, a followed job): no run, so
 * tick() has nothing to poll. NULL (said) when out of memory. */
static struct ui *ui_recorded(const struct config *cfg, const struct pane_ops *const *panes, int tl_steps)
{
    struct ui *u = calloc(1, sizeof(*u));
    if (!u) {
        fprintf(stderr, "ddptop: out of memory\n");
        return NULL;
    }
    u->cfg = cfg;
    u->panes = panes;
    session_init(&u->s, cfg, NULL, NULL, NULL);
    u->vs.tl_steps = tl_steps;
    u->focus = PANE_RANKS;
    return u;
}

/* The screen over what was recorded, for ui_recorded's u: the theme, the
 * snapshot (fill: 0, or nonzero out of memory), the screen with greet's
 * message, then the loop until q. Frees u; returns the exit status. */
static int recorded_show(struct ui *u, int (*fill)(struct ui *u), void (*greet)(struct ui *u))
{
    setlocale(LC_ALL, "");
    int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    int status = 2;
    if (setup_theme(u) != 0)
        goto out;
    if (fill(u) != 0) {
        fprintf(stderr, "ddptop: out of memory for the screen's snapshot\n");
        goto out;
    }
    install_signals();
    if (setup_curses(u, utf8) != 0)
        goto out;
    greet(u);
    u->status_ns = 0; /* stays until replaced */

    loop(u);

    close_screen(u);
    status = stop_signal ? 128 + (int)stop_signal : 0;

out:
    uninstall_signals();
    snap_free(&u->snap);
    free(u);
    return status;
}

static int replay_fill(struct ui *u)
{
    return snap_from_replay(&u->snap, u->replay);
}

static void replay_greet(struct ui *u)
{
    const struct replay *rp = u->replay;
    if (!rp->doc.complete)
        say(u, 1, "replay of %s: the trace is incomplete; showing the events up to the cut  (q: quit)",
            rp->res.replay.files);
    else
        say(u, 0, "replay of %s  (q: quit, ?: help)", rp->res.replay.files);
}

int ui_replay(const struct config *cfg, struct replay *rp)
{
    struct ui *u = ui_recorded(cfg, registry, 3);
    if (!u)
        return 2;
    u->replay = rp;
    u->crash_test = getenv("DDPTOP_UI_TEST_CRASH");
    if (u->crash_test && !u->crash_test[0])
        u->crash_test = NULL;
    return recorded_show(u, replay_fill, replay_greet);
}

static int follow_fill(struct ui *u)
{
    return snap_from_follow(&u->snap, u->follow, probe_now_ns());
}

static void follow_greet(struct ui *u)
{
    say(u, 0, "following %s%s  (q: quit, m: the cycles' figure, ?: help)", u->follow->dir,
        u->follow->inotify ? "" : " (no inotify: listed every 200 ms)");
}

int ui_follow(const struct config *cfg, struct follow *f)
{
    struct ui *u = ui_recorded(cfg, follow_registry, 5);
    if (!u)
        return 2;
    u->follow = f;
    return recorded_show(u, follow_fill, follow_greet);
}
