/* files.h - every file a command line reads and writes, and the one check
 * that no output is an input or another output (by file identity:
 * trace/outfile.h), before anything is written.
 *
 * A front end gathers the list (files_of_config, then what only it knows,
 * such as the theme file or a plot's folder, with files_add) and asks
 * files_check. Each run's trace files are checked again as they are
 * opened (tracing.c), for the runs a sweep's list could not name (the
 * UI's next runs).
 */
#ifndef DDPTOP_FILES_H
#define DDPTOP_FILES_H

#include <stddef.h>

#include "outfile.h"

struct config;

struct files {
    struct outfile_role *v; /* paths owned by the list */
    size_t n, cap;
    int oom;
};

void files_init(struct files *f);
/* Adds path (copied), read (output 0) or written (1); what names it for
 * the user ("--output"). An empty path is left out. */
void files_add(struct files *f, const char *path, const char *what, int output);
/* The files cfg's mode reads and writes: --output, --history,
 * --save-params, the data set's files, the cost model, --replay's files,
 * and --trace's for the runs run_from to run_to - 1 (each run's own name,
 * .runN, and with --trace-split one per rank of up to `world` ranks; world
 * 0: the most the command line names). */
void files_of_config(struct files *f, const struct config *cfg, int run_from, int run_to, int world);
/* 0, or -1 with err ("--output: t.json is the --replay file too") naming
 * the first output that is one file with an input or another output. */
int files_check(const struct files *f, char *err, size_t errlen);
void files_free(struct files *f);

#endif
