/* fuzz_follow.c - libFuzzer target: the follower (src/follow.h) on a folder
 * that the input lands in. The input's first line is a file's name in the
 * folder (a rank's, a tensorboard worker's, anything: '/' becomes '_'),
 * the rest its bytes; the same bytes land a second time under the name
 * with "x" before it, as a later cycle. A round of follow_poll reads what
 * is whole, as a running follower does: the cycle's timeline spans, its
 * figures whole and less the step its --window leaves out (either rule,
 * by the input's length), the worker's rank, the straggler of each cycle
 * index; then the job's report (follow_result).
 *
 * Checked besides the sanitizers: every cycle's four parts add up to its
 * wall time (whole, and less its first step), a rank keeps at most
 * METRICS_HISTORY timeline spans, each a span forward in time, the ranks
 * are sorted, and the report holds each of them. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "follow.h"
#include "metrics.h"
#include "report.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("DDPTOP_FOLLOW_POLL", "1", 1); /* a listing: no inotify descriptor per input */
    snprintf(g_dir, sizeof(g_dir), "/tmp/ddptop_fuzz_follow_XXXXXX");
    if (!mkdtemp(g_dir))
        abort();
    return 0;
}

static int put(const char *name, const uint8_t *data, size_t n)
{
    char path[sizeof(g_dir) + 300];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t put_n = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && put_n == n ? 0 : -1;
}

static void check(const struct breakdown *b)
{
    if (b->compute_ns + b->comm_ns + b->data_ns + b->idle_ns != b->wall_ns)
        abort(); /* the four parts always add up to the wall time */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 200 ? size : 200);
    if (!nl)
        return 0;
    char name[2][256];
    size_t len = (size_t)(nl - data);
    for (size_t i = 0; i < len; i++)
        name[0][i] = data[i] == '/' || data[i] == 0 ? '_' : (char)data[i];
    name[0][len] = 0;
    if (!strcmp(name[0], ".") || !strcmp(name[0], "..") || !len)
        return 0;
    snprintf(name[1], sizeof(name[1]), "x%s", name[0]);
    const uint8_t *body = nl + 1;
    size_t n = size - (size_t)(body - data);
    if (put(name[0], body, n) != 0 || put(name[1], body, n) != 0)
        abort();

    struct follow f;
    char err[1200];
    if (follow_open(&f, g_dir, err, sizeof(err)) != 0)
        abort();
    f.rule = &trace_rules[n % TRACE_RULES]; /* (either --window, by the input's length) */
    follow_poll(&f, 0);
    for (size_t i = 0; i < f.ncycles; i++) {
        check(&f.cycles[i].f.b);
        check(&f.cycles[i].f_rest.b);
    }
    for (int i = 0; i < f.nranks; i++) {
        if (i > 0 && f.ranks[i].rank <= f.ranks[i - 1].rank)
            abort(); /* sorted by rank, each once */
        if (f.ranks[i].nspans > METRICS_HISTORY)
            abort();
        for (size_t k = 0; k < f.ranks[i].nspans; k++)
            if (f.ranks[i].spans[k].t1_ns <= f.ranks[i].spans[k].t0_ns)
                abort();
    }
    struct run_result res;
    if (follow_result(&f, &res, err, sizeof(err)) == 0) {
        if (res.nranks != f.nranks)
            abort();
        for (int i = 0; i < res.nranks; i++)
            check(&res.ranks[i].b);
        result_free(&res);
    }
    follow_close(&f);
    for (int k = 0; k < 2; k++) {
        char path[sizeof(g_dir) + 300];
        snprintf(path, sizeof(path), "%s/%s", g_dir, name[k]);
        unlink(path);
    }
    return 0;
}
