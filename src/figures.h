/* figures.h - the report's figures as SVG files (--plot DIR), drawn from the
 * results the report writer prints (after results_compare), never from
 * figures of their own:
 *   speedup.svg      speedup against ranks, a line per model and way of
 *                    training, with the ideal (speedup = ranks);
 *   loss.svg         the running training loss (train_loss's) against
 *                    epochs, or steps where a run's epoch length is not
 *                    known (a replay), a line per run;
 *   breakdown.svg    compute, comm, data and idle as % of wall, a
 *                    stacked bar per run;
 *   timeline-runN.svg  model and pipeline parallelism: each stage's spans
 *                    over run N's last step.
 * Plain SVG text, no toolkit. Every plotted point carries its value
 * (data-x, data-y, data-pct, ...) and its frame its axes' ranges, so a
 * reader can check the drawing against the JSON report (docs/plots.md).
 */
#ifndef DDPTOP_FIGURES_H
#define DDPTOP_FIGURES_H

#include <stddef.h>

#include "report.h"

/* 0 when dir can take the figures: a folder this process may write in, or
 * a name not taken whose parent folder is one (figures_write makes it); else
 * the errno that says why not (ENOTDIR: a file of that name). */
int figures_can_write(const char *dir);

/* Writes the figures of res[0..n) into dir (made if missing). A figure
 * with nothing to draw is left out. done gets the names of the files
 * written ("speedup.svg, loss.svg, ..."). Returns 0, or -1 with err
 * naming the file and the reason. */
int figures_write(const char *dir, const struct run_result *res, int n, char *done, size_t donelen, char *err,
                  size_t errlen);

/* The files figures_write may write: figures_fixed() drawn over every run
 * (k below it), then run k - figures_fixed()'s timeline. Returns buf. */
int figures_fixed(void);
const char *figures_file_name(int k, char *buf, size_t n);

/* figures_write for the command line: a line on stderr saying what was
 * written (unless quiet), or why not. 0, or 1 when the figures are not
 * all there (the report is printed all the same: nothing is lost). */
int figures_save(const char *dir, const struct run_result *res, int n, int quiet);

#endif
