/* stop.h - Ctrl-C, SIGTERM and SIGHUP (an SSH session that drops) as
 * flags, the same for every mode and front end. The first signal asks for
 * an orderly stop: every rank leaves at its next step boundary or wait and
 * what was measured is reported. A second one within 2 s forces the exit:
 * the front end restores the terminal, closes the trace as valid JSON and
 * leaves without waiting for the ranks. The handler only sets flags. */
#ifndef DDPTOP_STOP_H
#define DDPTOP_STOP_H

#include <signal.h>

/* The first stopping signal's number (exit status 128 + it), or 0. */
extern volatile sig_atomic_t stop_signal;
/* A second one came within 2 s of the first. */
extern volatile sig_atomic_t stop_forced;

/* Catches SIGINT, SIGTERM and SIGHUP, without SA_RESTART, so that a signal
 * also wakes a wait for a key. */
void stop_install(void);
void stop_uninstall(void);

#endif
