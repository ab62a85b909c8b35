/* ui.h - the curses front end. */
#ifndef DDPTOP_UI_H
#define DDPTOP_UI_H

struct config;
struct dataset;
struct device_ops;
struct follow;
struct replay;

/* Runs the sweep's first combination under the interactive UI until the
 * user quits (`s` moves on to the next strategy), then prints the report of
 * every run to stdout in --format. Returns the exit status: 0 after q, 1 when
 * a run failed, 128 + signal after SIGINT/SIGTERM, 2 when the UI or the first
 * run could not start. The terminal is restored on every path out, crashes
 * included.
 *
 * Environment: DDPTOP_UI_EXIT_ON_DONE=1 leaves when the run finishes (for
 * bench/ui_overhead.sh); DDPTOP_UI_TEST_CRASH=abort|segv crashes after the
 * first frames (for tests/e2e_ui.sh, which checks the terminal survives). */
int ui_main(const struct config *cfg, const struct dataset *train, const struct dataset *test,
            const struct device_ops *dev);

/* --replay without --batch on a terminal: shows the replayed run with the
 * live run's panes (state REPLAY; nothing runs, so p, s, e and space are not
 * available) until the user quits. Returns 0 after q, 128 + signal after
 * SIGINT/SIGTERM, 2 when the UI could not start; the caller then writes the
 * replay report. The terminal is restored on every path out. */
int ui_replay(const struct config *cfg, struct replay *rp);

/* --follow without --batch on a terminal: the panes follow the folder's
 * cycles as they land (the follower runs on its own thread: follow.h)
 * until the user quits, or --idle-exit's seconds pass without a change.
 * Returns 0, 128 + signal after SIGINT/SIGTERM, 2 when the UI could not
 * start; the caller then writes the report. The terminal is restored on
 * every path out. */
int ui_follow(const struct config *cfg, struct follow *f);

#endif
