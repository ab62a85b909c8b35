/* history.h - --history FILE.csv: one row per step (every k-th) and rank,
 * and one per epoch and rank, for plotting loss, step time, learning rate
 * and accuracy against steps (the README shows how). Written by the
 * collector as it drains the rings; a sweep's runs share the file, told
 * apart by the run column.
 *
 * Columns: run,kind,step,epoch,rank,loss,lr,step_ms,correct,samples,
 * test_acc,test_loss. kind is step or epoch; a step row leaves the test
 * columns empty, an epoch row (its rank's share of the test split) the
 * training ones; epochs count from 1, as the UI shows them. */
#ifndef DDPTOP_HISTORY_H
#define DDPTOP_HISTORY_H

#include <stddef.h>

struct history;
struct metrics;

/* Creates path (replacing it) with the header. every: keep steps whose
 * index is a multiple of it. NULL with err set. */
struct history *history_open(const char *path, long every, char *err, size_t errlen);
/* Rows of run number `run` come from m from now on, until history_detach. */
int history_attach(struct history *h, struct metrics *m, int run, int repeat);
void history_detach(struct history *h, struct metrics *m);
/* Hands the rows so far to the file (a process that dies leaves them). */
void history_flush(struct history *h);
/* The first write error, naming the file, or NULL. */
const char *history_error(const struct history *h);
/* Flushes and closes: -1 with err set when the file is incomplete. */
int history_close(struct history *h, char *err, size_t errlen);

#endif
