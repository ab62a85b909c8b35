/* files.c - the files a command line reads and writes, checked against
 * one another (files.h). */
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "cost_model.h"
#include "data.h"
#include "figures.h"
#include "report.h"
#include "trace_export.h"
#include "trace_read.h"

/* trace names looked at before the runs start; later ones as they open */
#define FILES_MAX_TRACE_NAMES 4096

void files_init(struct files *f)
{
    memset(f, 0, sizeof(*f));
}

void files_add(struct files *f, const char *path, const char *what, int output)
{
    if (!path || !path[0] || f->oom)
        return;
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 16;
        struct outfile_role *v = realloc(f->v, sizeof(*v) * nc);
        if (!v) {
            f->oom = 1;
            return;
        }
        f->v = v;
        f->cap = nc;
    }
    char *copy = strdup(path);
    if (!copy) {
        f->oom = 1;
        return;
    }
    f->v[f->n++] = (struct outfile_role){.path = copy, .what = what, .output = output};
}

/* --trace's files for runs [from, to) of up to world ranks. */
static void trace_names(struct files *f, const struct config *cfg, int from, int to, int world)
{
    int per_run = cfg->trace_split ? world : 1, names = 0;
    for (int run = from; run < to && names < FILES_MAX_TRACE_NAMES; run++)
        for (int k = 0; k < per_run; k++, names++) {
            char path[CFG_PATH + 64];
            if (trace_export_path(cfg->trace, run, cfg->trace_split ? k : -1, path, sizeof(path)) == 0)
                files_add(f, path, "--trace", 1);
        }
}

/* A folder of traces that `what` reads: every trace file in it now
 * (trace_list_dir: by identity, links too), and any name a trace could
 * land at later (trace_name_is_trace), which no output may take. */
static void trace_folder_inputs(struct files *f, const char *dir, const char *what)
{
    char **paths = NULL, err[256];
    int n = 0;
    if (trace_list_dir(dir, &paths, &n, err, sizeof(err)) == 0) {
        for (int i = 0; i < n; i++)
            files_add(f, paths[i], what, 0);
        trace_paths_free(paths, n);
    }
    files_add(f, dir, what, 0);
    if (!f->oom && f->n > 0 && !strcmp(f->v[f->n - 1].path, dir))
        f->v[f->n - 1].names = trace_name_is_trace;
}

/* What one --replay argument reads: a file, every trace of a folder, or a
 * comma list of them (as replay_load_list takes it: a path that exists is
 * one path, commas and all). */
static void replay_inputs(struct files *f, const char *arg)
{
    struct stat st;
    char path[1024];
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        trace_folder_inputs(f, arg, "--replay");
        return;
    }
    if (access(arg, F_OK) == 0) {
        files_add(f, arg, "--replay", 0);
        return;
    }
    for (const char *p = arg; *p;) {
        size_t len = strcspn(p, ",");
        if (len < sizeof(path)) {
            snprintf(path, sizeof(path), "%.*s", (int)len, p);
            if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                replay_inputs(f, path);
            else
                files_add(f, path, "--replay", 0);
        }
        p += len + (p[len] == ',');
    }
}

/* --output's file, one per --format */
static void report_names(struct files *f, const struct config *cfg)
{
    char path[CFG_PATH + 8];
    for (int i = 0; i < (cfg->nformats > 0 ? cfg->nformats : 1); i++)
        files_add(f, report_path(path, sizeof(path), cfg, cfg->nformats > 0 ? cfg->formats[i] : cfg->format),
                  "--output", 1);
}

/* --plot's files for runs [from, to): the figures of every run, and each
 * run's timeline. */
static void plot_names(struct files *f, const struct config *cfg, int from, int to)
{
    if (!cfg->plot[0])
        return;
    char name[64], path[CFG_PATH + 80];
    for (int k = 0; k < figures_fixed() + to && k < figures_fixed() + FILES_MAX_TRACE_NAMES; k++) {
        if (k >= figures_fixed() && k - figures_fixed() < from)
            continue;
        snprintf(path, sizeof(path), "%s/%s", cfg->plot, figures_file_name(k, name, sizeof(name)));
        files_add(f, path, "--plot", 1);
    }
}

void files_of_config(struct files *f, const struct config *cfg, int run_from, int run_to, int world)
{
    char path[1024];
    if (cfg->mode == MODE_REPLAY || cfg->mode == MODE_FOLLOW) {
        if (cfg->mode == MODE_FOLLOW) {
            trace_folder_inputs(f, cfg->follow, "--follow");
        } else {
            replay_inputs(f, cfg->replay);
            for (int i = 0; i < cfg->nreplay_more; i++)
                replay_inputs(f, cfg->replay_more[i]);
        }
        report_names(f, cfg);
        plot_names(f, cfg, 0, 1);
        return;
    }
    report_names(f, cfg);
    plot_names(f, cfg, run_from, run_to);
    /* bench-comm writes the cost model; training reads it */
    files_add(f, cost_model_path(path, sizeof(path)), "the cost model", cfg->mode == MODE_BENCH_COMM);
    if (cfg->mode != MODE_TRAIN)
        return;
    files_add(f, cfg->history, "--history", 1);
    files_add(f, cfg->base.save_params, "--save-params", 1);
    char(*data)[DATA_PATH] = malloc(16 * sizeof(*data));
    int nd = data ? data_files(cfg->base.dataset, cfg->base.data_dir, data, 16) : 0;
    f->oom |= !data;
    for (int i = 0; i < nd; i++)
        files_add(f, data[i], "the data set", 0);
    free(data);
    if (cfg->trace[0]) {
        if (world <= 0)
            for (int i = 0; i < cfg->nranks; i++)
                world = cfg->ranks[i] > world ? cfg->ranks[i] : world;
        trace_names(f, cfg, run_from, run_to, world);
    }
}

int files_check(const struct files *f, char *err, size_t errlen)
{
    if (f->oom) {
        snprintf(err, errlen, "out of memory listing the files to write");
        return -1;
    }
    size_t a, b;
    if (!outfile_clash(f->v, f->n, &a, &b))
        return 0;
    const struct outfile_role *o = &f->v[a], *x = &f->v[b];
    const char *the = x->what[0] == '-' ? "the " : "";
    const char *file = x->what[0] == '-' ? " file" : "";
    if (x->names && strcmp(o->path, x->path))
        snprintf(err, errlen, "%s: %s is in the %s folder %s, whose every *.json and *.json.gz is read as a trace too",
                 o->what, o->path, x->what, x->path);
    else if (!strcmp(o->path, x->path))
        snprintf(err, errlen, "%s: %s is %s%s%s too", o->what, o->path, the, x->what, file);
    else
        snprintf(err, errlen, "%s: %s is %s%s%s %s too (the same file)", o->what, o->path, the, x->what, file, x->path);
    return -1;
}

void files_free(struct files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free((char *)f->v[i].path);
    free(f->v);
    memset(f, 0, sizeof(*f));
}
