/* plan.h - the run the UI starts next (`s`): the current run's
 * configuration with the strategy, rank count and per-rank batch picked
 * with the Runs pane's keys (n, r/R, b/B).
 *
 * Untouched, the plan is "the next strategy", as `s` has always started.
 * The first change of ranks or batch brings back the current run's
 * strategy, so that one thing varies at a time (a scaling series); n
 * picks the strategy. No curses and no run here: the screen manager turns
 * a plan into a run_config (ui.c) and asks run_check before it starts
 * anything. Unit-tested in tests/test_ui_core.c.
 */
#ifndef DDPTOP_PLAN_H
#define DDPTOP_PLAN_H

#include <stddef.h>

#include "config.h"

struct plan {
    int strategy; /* enum strategy_kind */
    int ranks;
    int batch;  /* per rank */
    int edited; /* picked since the current run started: s starts exactly this */
};

/* The plan after a run started with cur: cur's ranks and batch, the next strategy. */
void plan_reset(struct plan *p, const struct run_config *cur);
/* r (dir < 0) and R: one rank fewer or more, within 1..CFG_MAX_RANKS.
 * Returns 0, or -1 with err set at a bound (the plan stays). */
int plan_ranks(struct plan *p, const struct run_config *cur, int dir, char *err, size_t errlen);
/* b (dir < 0) and B: half or twice the per-rank batch, within 1..CFG_MAX_BATCH. */
int plan_batch(struct plan *p, const struct run_config *cur, int dir, char *err, size_t errlen);
/* n: the strategy after the plan's. */
void plan_next_strategy(struct plan *p);
/* The run p describes, as rc: the command line's configuration cfg with
 * the plan's strategy, ranks and batch and the current run cur's model
 * and threads per rank (a comparison changes one thing at a time). */
void plan_config(const struct plan *p, const struct config *cfg, const struct run_config *cur, struct run_config *rc);
/* "ddp, 4 ranks x 32" ("single, 1 rank x 128": single runs the global batch on one). */
void plan_describe(const struct plan *p, char *buf, size_t n);

#endif
