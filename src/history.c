/* history.c - the per-step and per-epoch CSV (history.h). */
#include "history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "outfile.h"

struct history {
    FILE *f;
    char path[1024];
    long every;
    int run, repeat;
    char err[1100];
};

static void write_failed(struct history *h)
{
    if (!h->err[0])
        snprintf(h->err, sizeof(h->err), "--history %s: write failed: %s", h->path, strerror(errno));
}

struct history *history_open(const char *path, long every, char *err, size_t errlen)
{
    struct history *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "--history %s: out of memory", path);
        return NULL;
    }
    snprintf(h->path, sizeof(h->path), "%s", path);
    h->every = every > 0 ? every : 1;
    /* a new file renamed over the name at once (never written through a
     * link); it grows as the runs go, so a killed run's steps are there */
    struct outfile o;
    char why[1200] = "";
    if (outfile_open(&o, path, why, sizeof(why)) != 0 || outfile_publish(&o, why, sizeof(why)) != 0 ||
        !(h->f = fdopen(o.fd, "w"))) {
        if (o.fd >= 0 && !why[0])
            snprintf(why, sizeof(why), "%s: %s", path, strerror(errno));
        outfile_discard(&o);
        snprintf(err, errlen, "--history: cannot write %s", why);
        free(h);
        return NULL;
    }
    if (fprintf(h->f, "run,kind,step,epoch,rank,loss,lr,step_ms,correct,samples,test_acc,test_loss,repeat\n") < 0)
        write_failed(h);
    return h;
}

static void on_step(void *ctx, int rank, const struct step_rec *rec)
{
    struct history *h = ctx;
    if (h->err[0] || rec->step % (uint32_t)h->every != 0)
        return;
    if (fprintf(h->f, "%d,step,%u,%u,%d,%.9g,%.9g,%.4f,%d,%d,,,%d\n", h->run, rec->step, rec->epoch + 1, rank,
                (double)rec->loss, (double)rec->lr, (double)(rec->t1_ns - rec->t0_ns) / 1e6, rec->correct, rec->n,
                h->repeat) < 0)
        write_failed(h);
}

static void on_epoch(void *ctx, int rank, const struct epoch_rec *rec)
{
    struct history *h = ctx;
    if (h->err[0] || rec->total <= 0)
        return;
    if (fprintf(h->f, "%d,epoch,,%d,%d,,,,%d,%d,%.4f,%.6g,%d\n", h->run, rec->epoch + 1, rank, rec->correct, rec->total,
                100.0 * rec->correct / rec->total, rec->loss_sum / rec->total, h->repeat) < 0)
        write_failed(h);
}

int history_attach(struct history *h, struct metrics *m, int run, int repeat)
{
    h->run = run;
    h->repeat = repeat;
    return metrics_listen(m, &(struct metrics_listener){.step = on_step, .epoch = on_epoch, .ctx = h});
}

void history_detach(struct history *h, struct metrics *m)
{
    metrics_unlisten(m, h);
    if (!h->err[0] && fflush(h->f) != 0)
        write_failed(h);
}

void history_flush(struct history *h)
{
    if (h && !h->err[0] && fflush(h->f) != 0)
        write_failed(h);
}

const char *history_error(const struct history *h)
{
    return h && h->err[0] ? h->err : NULL;
}

int history_close(struct history *h, char *err, size_t errlen)
{
    if (!h)
        return 0;
    int bad = h->err[0] != 0;
    if (fclose(h->f) != 0 && !bad) {
        write_failed(h);
        bad = 1;
    }
    if (bad)
        snprintf(err, errlen, "%s", h->err);
    free(h);
    return bad ? -1 : 0;
}
