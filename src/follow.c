/* follow.c - --follow DIR: watching the folder, reading each cycle once it
 * is whole, keeping its figures, and the headless front end (see
 * follow.h). */
#include "follow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "infile.h"
#include "metrics.h"
#include "report.h"
#include "trace_spans.h"
#include "tracing.h"

enum file_state { FILE_PENDING = 0, FILE_READ, FILE_REFUSED };

struct follow_file {
    char name[256];
    int state;          /* enum file_state */
    int64_t size;       /* at the last look */
    int64_t mtime_ns;   /* ... */
    int64_t changed_ns; /* when size or mtime last moved (probe clock) */
    int tried;          /* tried since then, and not whole */
    int closed;         /* its writer closed it (or it was moved in) since the last try */
};

/* ---- messages ----------------------------------------------------------- */

static void say(struct follow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct follow *f, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&f->lock);
    if (f->nmsg == FOLLOW_MAX_MSGS) { /* the oldest goes */
        memmove(f->msg[0], f->msg[1], sizeof(f->msg[0]) * (FOLLOW_MAX_MSGS - 1));
        f->nmsg--;
    }
    va_start(ap, fmt);
    vsnprintf(f->msg[f->nmsg++], sizeof(f->msg[0]), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&f->lock);
}

int follow_message(struct follow *f, char *buf, size_t n)
{
    pthread_mutex_lock(&f->lock);
    int any = f->nmsg > 0;
    if (any) {
        snprintf(buf, n, "%s", f->msg[0]);
        memmove(f->msg[0], f->msg[1], sizeof(f->msg[0]) * (size_t)(f->nmsg - 1));
        f->nmsg--;
    }
    pthread_mutex_unlock(&f->lock);
    return any;
}

void follow_lock(struct follow *f)
{
    pthread_mutex_lock(&f->lock);
}

void follow_unlock(struct follow *f)
{
    pthread_mutex_unlock(&f->lock);
}

/* ---- the file table ------------------------------------------------------ */

static int file_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct follow_file *)elem)->name);
}

static struct follow_file *file_find(struct follow *f, const char *name)
{
    return f->nfiles ? bsearch(name, f->files, f->nfiles, sizeof(*f->files), file_cmp) : NULL;
}

/* The entry of name, made (pending, changed now) when new; NULL when out
 * of memory or the name is too long to keep. */
static struct follow_file *file_get(struct follow *f, const char *name, int64_t now)
{
    struct follow_file *e = file_find(f, name);
    if (e)
        return e;
    if (strlen(name) >= sizeof(e->name))
        return NULL;
    if (f->nfiles == f->cap_files) {
        size_t nc = f->cap_files ? 2 * f->cap_files : 64;
        struct follow_file *nf = realloc(f->files, nc * sizeof(*nf));
        if (!nf)
            return NULL;
        f->files = nf;
        f->cap_files = nc;
    }
    size_t at = 0;
    while (at < f->nfiles && strcmp(f->files[at].name, name) < 0)
        at++;
    memmove(&f->files[at + 1], &f->files[at], (f->nfiles - at) * sizeof(*f->files));
    e = &f->files[at];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->size = e->mtime_ns = -1;
    e->changed_ns = now;
    f->nfiles++;
    return e;
}

static void file_drop(struct follow *f, const char *name)
{
    struct follow_file *e = file_find(f, name);
    if (!e || e->state != FILE_PENDING)
        return; /* (a cycle read stays, its file gone or not) */
    size_t at = (size_t)(e - f->files);
    memmove(&f->files[at], &f->files[at + 1], (f->nfiles - at - 1) * sizeof(*f->files));
    f->nfiles--;
}

/* Looks at name in the folder: a trace file that is new or changed is
 * marked so; anything else is left out. */
static void file_look(struct follow *f, const char *name, int64_t now)
{
    if (!trace_name_is_trace(name))
        return;
    char path[sizeof(f->dir) + 260];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", f->dir, name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    struct follow_file *e = file_get(f, name, now);
    if (!e || e->state != FILE_PENDING)
        return;
    int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    if (e->size == (int64_t)st.st_size && e->mtime_ns == mt)
        return;
    if (e->size >= 0) { /* a file not whole yet grew: the job is at it */
        pthread_mutex_lock(&f->lock);
        f->last_change_ns = now;
        pthread_mutex_unlock(&f->lock);
    }
    e->size = (int64_t)st.st_size;
    e->mtime_ns = mt;
    e->changed_ns = now;
    e->tried = 0;
}

/* Lists the folder. -1 when it cannot be read (gone). */
static int scan(struct follow *f, int64_t now)
{
    DIR *dp = opendir(f->dir);
    if (!dp)
        return -1;
    for (struct dirent *de; (de = readdir(dp)) != NULL;)
        file_look(f, de->d_name, now);
    closedir(dp);
    return 0;
}

/* ---- ranks, cycles and the straggler -------------------------------------- */

static struct follow_rank *rank_find(struct follow *f, int rank)
{
    for (int i = 0; i < f->nranks; i++)
        if (f->ranks[i].rank == rank)
            return &f->ranks[i];
    return NULL;
}

/* The lowest rank no cycle holds yet. */
static int free_rank(const struct follow *f)
{
    int r = 0;
    for (int i = 0; i < f->nranks && f->ranks[i].rank <= r; i++)
        if (f->ranks[i].rank == r)
            r++;
    return r;
}

/* The rank of a file whose trace and name say none: its tensorboard
 * worker's, else the lowest free one (the worker then keeps it). */
static int rank_unnamed(struct follow *f, const char *name, int *from)
{
    char w[128];
    *from = TRACE_RANK_ORDER;
    if (!trace_worker_of_name(name, w, sizeof(w)))
        return free_rank(f);
    *from = TRACE_RANK_WORKER;
    for (int i = 0; i < f->nworkers; i++)
        if (!strcmp(f->workers[i], w))
            return f->worker_rank[i];
    char(*nw)[128] = realloc(f->workers, sizeof(*nw) * (size_t)(f->nworkers + 1));
    if (nw)
        f->workers = nw;
    int *nr = nw ? realloc(f->worker_rank, sizeof(*nr) * (size_t)(f->nworkers + 1)) : NULL;
    if (!nr)
        return free_rank(f);
    f->worker_rank = nr;
    snprintf(f->workers[f->nworkers], sizeof(f->workers[0]), "%s", w);
    f->worker_rank[f->nworkers] = free_rank(f);
    return f->worker_rank[f->nworkers++];
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Marks the straggler among the ranks' cycles of index k (lock held).
 * Returns the cycle newly marked, or -1. */
static long mark_stragglers(struct follow *f, int k)
{
    double own[TRACE_MAX_RANKS], others[TRACE_MAX_RANKS];
    size_t at[TRACE_MAX_RANKS];
    int n = 0;
    for (size_t i = 0; i < f->ncycles && n < TRACE_MAX_RANKS; i++)
        if (f->cycles[i].cycle == k) {
            at[n] = i;
            own[n++] = f->cycles[i].own_ms;
        }
    long fresh = -1;
    for (int i = 0; i < n; i++) {
        int m = 0;
        for (int j = 0; j < n; j++)
            if (j != i)
                others[m++] = own[j];
        double med = 0;
        if (m > 0) {
            qsort(others, (size_t)m, sizeof(*others), dbl_cmp);
            med = m % 2 ? others[m / 2] : (others[m / 2 - 1] + others[m / 2]) / 2;
        }
        struct follow_cycle *c = &f->cycles[at[i]];
        c->others_ms = med;
        int was = c->straggler;
        c->straggler = m > 0 && med > 0 && own[i] >= FOLLOW_STRAGGLER * med;
        if (c->straggler && !was)
            fresh = (long)at[i];
    }
    return fresh;
}

/* ---- reading a file ------------------------------------------------------- */

static int step_num_cmp(const void *a, const void *b)
{
    const struct trace_step_info *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* Whether a plain file can be whole: its last byte that is not white
 * space closes an object or an array. A gzip file says nothing here. */
static int may_be_whole(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 1; /* (the read says why) */
    struct stat st;
    unsigned char head[2] = {0}, tail[64];
    int whole = 1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < 2)
        whole = 0;
    else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, head, 2, 0) == 2 &&
             !(head[0] == 0x1f && head[1] == 0x8b)) {
        off_t at = st.st_size > (off_t)sizeof(tail) ? st.st_size - (off_t)sizeof(tail) : 0;
        ssize_t got = pread(fd, tail, sizeof(tail), at);
        while (got > 0 &&
               (tail[got - 1] == ' ' || tail[got - 1] == '\n' || tail[got - 1] == '\r' || tail[got - 1] == '\t'))
            got--;
        whole = got > 0 && (tail[got - 1] == '}' || tail[got - 1] == ']');
    }
    close(fd);
    return whole;
}

static void cycle_free(struct follow_cycle *c)
{
    free(c->step_ns);
    free(c->paths);
    kernel_tally_free(&c->kernels);
    kernel_tally_free(&c->kernels_rest);
    queue_tally_free(&c->queue);
    queue_tally_free(&c->queue_rest);
    launch_tally_free(&c->launch);
    launch_tally_free(&c->launch_rest);
    straggler_gather_free(&c->late);
    straggler_gather_free(&c->late_rest);
    whatif_gather_free(&c->colls);
    whatif_gather_free(&c->colls_rest);
}

/* The rank's critical path: its cycles' path of the median step among
 * them all, as a replay of the same files finds it. Returns 0, or -1
 * when out of memory. */
static int follow_critpath(struct rank_result *rr, const struct follow_cycle *const *mine, size_t n)
{
    size_t np = 0, steps = 0;
    for (size_t k = 0; k < n; k++)
        np += mine[k]->npaths;
    if (!np)
        return 0;
    const struct critpath **v = malloc(sizeof(*v) * np);
    if (!v)
        return -1;
    np = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < mine[k]->npaths; j++) {
            v[np++] = &mine[k]->paths[j];
            steps += mine[k]->paths[j].step >= 0;
        }
    const struct critpath *m = critpath_median(v, np);
    if (m) {
        rr->critpath = *m;
        rr->critpath.nsteps = (int)steps;
        rr->critpath_valid = 1;
    }
    free(v);
    return m ? 0 : -1;
}

/* A cycle that was read: its figures, its rank's latest spans, published. */
/* land's way out when a table of the cycle ran out of memory (doing: what
 * it was doing): the file is left out, and said so. */
static void land_oom(struct follow *f, struct follow_file *e, struct follow_cycle *c, struct trace_step_info *st,
                     struct span *spans, const char *doing)
{
    cycle_free(c);
    free(st);
    free(spans);
    e->state = FILE_REFUSED;
    say(f, "%s: out of memory %s; left out", e->name, doing);
}

static void land(struct follow *f, struct follow_file *e, struct trace_doc *d, const struct trace_cycle *tc,
                 int64_t now)
{
    struct trace_rank *r = NULL;
    for (int i = 0; i < d->nranks; i++)
        if (d->ranks[i].rank == tc->rank)
            r = &d->ranks[i];
    const struct trace_window *w = r ? &r->windows[tc->window] : NULL;
    struct follow_cycle c = {0};
    struct span *spans = NULL;
    size_t nspans = 0;
    unsigned lanes = 0;
    size_t nsteps = w ? w->steps_to - w->steps_from : 0;
    c.step_ns = malloc(sizeof(*c.step_ns) * (nsteps ? nsteps : 1));
    struct trace_step_info *st = malloc(sizeof(*st) * (nsteps ? nsteps : 1));
    /* (d holds this file alone: the rank's figures are this cycle's less
     * its first step) */
    if (!w || !c.step_ns || !st || trace_analyze_window(&c.f, r, (size_t)tc->window, f->rule, f->idle_delay_ns) != 0 ||
        trace_analyze_rank(&c.f_rest, r, f->rule, f->idle_delay_ns) != 0 ||
        trace_window_spans(r, w, METRICS_HISTORY, &spans, &nspans, &lanes) != 0) {
        free(c.step_ns);
        free(st);
        e->state = FILE_REFUSED;
        say(f, "%s: out of memory reading its cycle; left out", e->name);
        return;
    }
    const struct trace_figures whole = {.whole = 1}; /* (f's: the window whole) */
    if (c.f.gpu_view && (kernel_tally_rank(&c.kernels, r, f->rule, &whole) != 0 ||
                         kernel_tally_rank(&c.kernels_rest, r, f->rule, &c.f_rest) != 0 ||
                         launch_tally_rank(&c.launch, r, f->rule, &whole) != 0 ||
                         launch_tally_rank(&c.launch_rest, r, f->rule, &c.f_rest) != 0 ||
                         straggler_gather_rank(&c.late, r, f->rule, &whole) != 0 ||
                         straggler_gather_rank(&c.late_rest, r, f->rule, &c.f_rest) != 0)) {
        land_oom(f, e, &c, st, spans, "tallying its kernels");
        return;
    }
    if (whatif_gather_rank(&c.colls, r, &whole) != 0 || whatif_gather_rank(&c.colls_rest, r, &c.f_rest) != 0) {
        land_oom(f, e, &c, st, spans, "gathering its collectives");
        return;
    }
    c.kernels_valid = c.f.gpu_view;
    memtl_table_rank(&c.memtl, r);
    if (critpath_each_step(&c.paths, &c.npaths, r) != 0) {
        land_oom(f, e, &c, st, spans, "finding its critical paths");
        return;
    }
    if (c.f.gpu_view) {
        memcpy_table_rank(&c.memcpy, r, f->rule, &whole);
        memcpy_table_rank(&c.memcpy_rest, r, f->rule, &c.f_rest);
    }
    if (c.f.gpu_view && (queue_tally_rank(&c.queue, r, f->rule, &whole) != 0 ||
                         queue_tally_rank(&c.queue_rest, r, f->rule, &c.f_rest) != 0 ||
                         idle_table_rank(&c.idle, r, f->rule, &whole, f->idle_delay_ns) != 0 ||
                         idle_table_rank(&c.idle_rest, r, f->rule, &c.f_rest, f->idle_delay_ns) != 0)) {
        land_oom(f, e, &c, st, spans, "following its launch queues");
        return;
    }
    if (nsteps == 1) { /* its one step left out: nothing is left */
        kernel_tally_free(&c.kernels_rest);
        memset(&c.memcpy_rest, 0, sizeof(c.memcpy_rest));
        queue_tally_free(&c.queue_rest);
        launch_tally_free(&c.launch_rest);
        memset(&c.idle_rest, 0, sizeof(c.idle_rest));
        straggler_gather_free(&c.late_rest);
        whatif_gather_free(&c.colls_rest);
        if (c.f.gpu_view && straggler_gather_steps(&c.late_rest, r) != 0) {
            land_oom(f, e, &c, st, spans, "gathering its collectives");
            return;
        }
        int gpu = c.f_rest.gpu_view;
        memset(&c.f_rest, 0, sizeof(c.f_rest));
        c.f_rest.gpu_view = gpu;
    }
    /* the rank: the trace's or the name's, else ours (the reader's own
     * choice saw this file alone) */
    int rank = tc->rank;
    c.rank_from = tc->rank_from;
    if (tc->rank_from != TRACE_RANK_TRACE && tc->rank_from != TRACE_RANK_NAME) {
        rank = rank_unnamed(f, e->name, &c.rank_from);
        if (!f->told_unnamed++)
            say(f,
                "%s names no rank (no distributedInfo in the trace, no rank<N> in the name): ranks follow the order "
                "the files land in; name them with tensorboard_trace_handler's worker_name=f\"rank{rank}\"",
                e->name);
    }
    if (nsteps)
        memcpy(st, r->steps + w->steps_from, sizeof(*st) * nsteps);
    qsort(st, nsteps, sizeof(*st), step_num_cmp);
    double sum = 0;
    for (size_t s = 0; s < nsteps; s++) {
        c.step_ns[s] = st[s].t1_ns - st[s].t0_ns;
        sum += (double)c.step_ns[s];
    }
    free(st);
    whatif_gather_rerank(&c.colls, r->rank, rank);
    whatif_gather_rerank(&c.colls_rest, r->rank, rank);
    c.rank = rank;
    c.nsteps = (int)nsteps;
    c.step_lo = w->step_lo;
    c.step_hi = w->step_hi;
    c.ms_mean = nsteps ? sum / (double)nsteps / 1e6 : 0;
    const struct breakdown *b = &c.f.b;
    c.own_ms = (double)(b->wall_ns - b->coll_ns) / (double)(nsteps ? nsteps : 1) / 1e6;
    breakdown_split(b, &c.split);
    c.landed_ns = now;
    snprintf(c.file, sizeof(c.file), "%s", e->name);

    pthread_mutex_lock(&f->lock);
    struct follow_rank *fr = rank_find(f, rank);
    int oom = 0;
    if (f->ncycles == f->cap_cycles) {
        size_t nc = f->cap_cycles ? 2 * f->cap_cycles : 64;
        struct follow_cycle *ncy = realloc(f->cycles, nc * sizeof(*ncy));
        oom |= !ncy;
        if (ncy) {
            f->cycles = ncy;
            f->cap_cycles = nc;
        }
    }
    if (!fr && !oom) {
        struct follow_rank *nr = realloc(f->ranks, sizeof(*nr) * (size_t)(f->nranks + 1));
        oom |= !nr;
        if (nr) {
            f->ranks = nr;
            int at = f->nranks;
            while (at > 0 && f->ranks[at - 1].rank > rank)
                at--;
            memmove(&f->ranks[at + 1], &f->ranks[at], sizeof(*nr) * (size_t)(f->nranks - at));
            fr = &f->ranks[at];
            memset(fr, 0, sizeof(*fr));
            fr->rank = rank;
            f->nranks++;
        }
    }
    if (oom) {
        pthread_mutex_unlock(&f->lock);
        cycle_free(&c);
        free(spans);
        e->state = FILE_REFUSED;
        say(f, "%s: out of memory keeping its cycle; left out", e->name);
        return;
    }
    c.cycle = fr->ncycles++;
    fr->latest = (int)f->ncycles;
    snprintf(fr->device, sizeof(fr->device), "%s", r->device);
    free(fr->spans);
    fr->spans = spans;
    fr->nspans = nspans;
    fr->lanes = lanes;
    f->cycles[f->ncycles++] = c;
    if (f->ncycles == 1)
        f->flavor = d->flavor;
    int world = d->world > rank + 1 ? d->world : rank + 1;
    f->world = world > f->world ? world : f->world;
    long fresh = mark_stragglers(f, c.cycle);
    f->last_change_ns = f->last_landed_ns = now;
    f->version++;
    pthread_mutex_unlock(&f->lock);
    e->state = FILE_READ;
    if (fresh >= 0) {
        /* (read without the lock: this thread alone writes them) */
        const struct follow_cycle *s = &f->cycles[fresh];
        say(f, "cycle %d: rank %d is the straggler: %.2f ms of its own work per step, the others %.2f (median)",
            s->cycle + 1, s->rank, s->own_ms, s->others_ms);
    }
}

/* Tries a pending file: read when whole, else left for its next change. */
static void try_file(struct follow *f, struct follow_file *e, int64_t now)
{
    char path[sizeof(f->dir) + 260], err[600];
    snprintf(path, sizeof(path), "%s/%s", f->dir, e->name);
    e->tried = 1;
    e->closed = 0;
    if (!may_be_whole(path))
        return;
    char *buf;
    size_t n;
    if (infile_read(path, 0, 0, &buf, &n, err, sizeof(err)) != 0) {
        if (access(path, F_OK) != 0) {
            file_drop(f, e->name); /* gone before it was read */
            return;
        }
        e->state = FILE_REFUSED;
        say(f, "%s; left out", err);
        return;
    }
    struct trace_doc d;
    struct trace_cycle tc;
    trace_doc_init(&d);
    int rc = trace_read_cycle(&d, buf, n, path, -1, TRACE_READ_WHOLE, &tc, err, sizeof(err));
    free(buf);
    if (rc == 1) {
        trace_doc_free(&d);
        return; /* a writer still at it */
    }
    if (rc != 0 || d.flavor == TRACE_DDPTOP || tc.rank < 0 || tc.window < 0) {
        e->state = FILE_REFUSED;
        if (rc != 0)
            say(f, "%s; left out", err);
        else if (d.flavor == TRACE_DDPTOP)
            say(f, "%s: a trace of ddptop's own, not of a PyTorch profiler; left out (--replay shows it)", e->name);
        else
            say(f, "%s: no operator nor step in it; left out", e->name);
        pthread_mutex_lock(&f->lock);
        f->refused++;
        if (rc == TRACE_READ_NOT_TRACE && f->nnot_trace < REPLAY_LEFT_OUT_NAMED)
            snprintf(f->not_trace[f->nnot_trace], sizeof(f->not_trace[0]), "%.255s", path);
        f->nnot_trace += rc == TRACE_READ_NOT_TRACE;
        pthread_mutex_unlock(&f->lock);
        trace_doc_free(&d);
        return;
    }
    land(f, e, &d, &tc, now);
    trace_doc_free(&d);
}

/* ---- watching ------------------------------------------------------------- */

int follow_open(struct follow *f, const char *dir, char *err, size_t errlen)
{
    memset(f, 0, sizeof(*f));
    f->ifd = f->wd = -1;
    f->rule = &trace_rules[0];
    f->idle_delay_ns = TRACE_IDLE_DELAY_NS;
    struct stat st;
    if (!dir[0]) {
        snprintf(err, errlen, "an empty folder name");
        return -1;
    }
    if (strlen(dir) >= sizeof(f->dir) - 1) {
        snprintf(err, errlen, "%.64s...: the folder's name is too long", dir);
        return -1;
    }
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen,
                 "%s: not a folder (--follow watches the folder the profiler writes into; --replay "
                 "reads a file)",
                 dir);
        return -1;
    }
    DIR *dp = opendir(dir);
    if (!dp) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    closedir(dp);
    snprintf(f->dir, sizeof(f->dir), "%s", dir);
    size_t dl = strlen(f->dir);
    while (dl > 1 && f->dir[dl - 1] == '/')
        f->dir[--dl] = 0;
    pthread_mutex_init(&f->lock, NULL);
    f->t0_ns = f->last_change_ns = probe_now_ns();
    const char *poll_env = getenv("DDPTOP_FOLLOW_POLL");
    if (!(poll_env && poll_env[0] && strcmp(poll_env, "0") != 0)) {
        f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (f->ifd >= 0)
            f->wd = inotify_add_watch(f->ifd, f->dir,
                                      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                          IN_DELETE_SELF | IN_MOVE_SELF);
        if (f->ifd >= 0 && f->wd < 0) {
            close(f->ifd);
            f->ifd = -1;
        }
    }
    f->inotify = f->ifd >= 0;
    /* what is there already: whole at once, read in the order of names */
    scan(f, f->t0_ns);
    for (size_t i = 0; i < f->nfiles; i++)
        f->files[i].changed_ns = f->t0_ns - FOLLOW_QUIET_NS;
    f->next_scan_ns = f->t0_ns + (f->inotify ? FOLLOW_RESCAN_NS : FOLLOW_POLL_MS * 1000000LL);
    return 0;
}

/* Takes inotify's events: files closed, moved in, changed or removed. */
static void read_events(struct follow *f, int64_t now)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t got = read(f->ifd, buf, sizeof(buf));
        if (got <= 0)
            return;
        for (char *p = buf; p < buf + got;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof(*ev) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW)
                f->next_scan_ns = now; /* events were lost: a listing tells */
            if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                pthread_mutex_lock(&f->lock);
                f->gone = 1;
                pthread_mutex_unlock(&f->lock);
            }
            if (!ev->len || !trace_name_is_trace(ev->name))
                continue;
            if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
                file_drop(f, ev->name);
                continue;
            }
            file_look(f, ev->name, now);
            struct follow_file *e = file_find(f, ev->name);
            if (e && (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)))
                e->closed = 1;
        }
    }
}

int follow_poll(struct follow *f, int wait_ms)
{
    uint64_t v0;
    pthread_mutex_lock(&f->lock);
    v0 = f->version;
    int gone = f->gone;
    pthread_mutex_unlock(&f->lock);
    if (gone) {
        struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return 0;
    }
    if (f->inotify) {
        struct pollfd pfd = {.fd = f->ifd, .events = POLLIN};
        if (poll(&pfd, 1, wait_ms) > 0)
            read_events(f, probe_now_ns());
    } else if (wait_ms > 0) {
        int64_t left = f->next_scan_ns - probe_now_ns(), ms = left > 0 ? (left + 999999) / 1000000 : 0;
        ms = ms < wait_ms ? ms : wait_ms;
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    int64_t now = probe_now_ns();
    if (now >= f->next_scan_ns) {
        if (scan(f, now) != 0) {
            pthread_mutex_lock(&f->lock);
            f->gone = 1;
            pthread_mutex_unlock(&f->lock);
        }
        f->next_scan_ns = now + (f->inotify ? FOLLOW_RESCAN_NS : FOLLOW_POLL_MS * 1000000LL);
    }
    int pending = 0;
    size_t i = 0;
    while (i < f->nfiles && !atomic_load(&f->stop)) {
        struct follow_file *e = &f->files[i];
        if (e->state == FILE_PENDING && (e->closed || (!e->tried && now - e->changed_ns >= FOLLOW_QUIET_NS))) {
            char name[sizeof(e->name)];
            snprintf(name, sizeof(name), "%s", e->name);
            try_file(f, e, probe_now_ns());
            e = file_find(f, name);
            if (!e)
                continue; /* gone before it was read: dropped from the table, i is the next */
        }
        pending += e->state == FILE_PENDING;
        i++;
    }
    pthread_mutex_lock(&f->lock);
    f->pending = pending;
    int landed = (int)(f->version - v0);
    pthread_mutex_unlock(&f->lock);
    if (f->gone && !gone)
        say(f, "%s: the folder went away; nothing more will land", f->dir);
    return landed;
}

static void *follow_thread(void *arg)
{
    struct follow *f = arg;
    while (!atomic_load(&f->stop))
        follow_poll(f, 100);
    return NULL;
}

int follow_start(struct follow *f, char *err, size_t errlen)
{
    /* the signals go to the front end's thread alone */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&f->thread, NULL, follow_thread, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the follower's thread: %s", strerror(rc));
        return -1;
    }
    f->thread_on = 1;
    return 0;
}

void follow_stop(struct follow *f)
{
    if (!f->thread_on)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    f->thread_on = 0;
}

void follow_close(struct follow *f)
{
    follow_stop(f);
    if (f->ifd >= 0)
        close(f->ifd);
    for (size_t i = 0; i < f->ncycles; i++)
        cycle_free(&f->cycles[i]);
    for (int i = 0; i < f->nranks; i++)
        free(f->ranks[i].spans);
    free(f->cycles);
    free(f->ranks);
    free(f->files);
    free(f->workers);
    free(f->worker_rank);
    pthread_mutex_destroy(&f->lock);
    memset(f, 0, sizeof(*f));
    f->ifd = -1;
}

/* ---- the whole job as one result ------------------------------------------ */

static int cycle_step_cmp(const void *a, const void *b)
{
    const struct follow_cycle *x = *(const struct follow_cycle *const *)a, *y = *(const struct follow_cycle *const *)b;
    if (x->step_lo != y->step_lo)
        return x->step_lo < y->step_lo ? -1 : 1;
    return x->cycle < y->cycle ? -1 : x->cycle > y->cycle;
}

int follow_result(struct follow *f, struct run_result *res, char *err, size_t errlen)
{
    follow_lock(f);
    int rc = follow_result_locked(f, res, err, errlen);
    follow_unlock(f);
    return rc;
}

int follow_result_locked(struct follow *f, struct run_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof(*res));
    int rc = -1;
    const struct follow_cycle **mine = malloc(sizeof(*mine) * (f->ncycles ? f->ncycles : 1));
    int64_t *steps = NULL;
    struct straggler_gather late = {0}; /* every rank's cycles' */
    struct whatif_gather colls = {0};   /* ... and their collectives */
    res->ranks = calloc((size_t)(f->nranks ? f->nranks : 1), sizeof(*res->ranks));
    if (!mine || !res->ranks)
        goto out;
    res->nranks = f->nranks;
    for (int i = 0; i < f->nranks; i++) {
        struct trace_figures sum = {0};
        size_t n = 0, nsteps = 0;
        for (size_t k = 0; k < f->ncycles; k++)
            if (f->cycles[k].rank == f->ranks[i].rank) {
                mine[n++] = &f->cycles[k];
                nsteps += (size_t)f->cycles[k].nsteps;
            }
        qsort(mine, n, sizeof(*mine), cycle_step_cmp);
        free(steps);
        steps = malloc(sizeof(*steps) * (nsteps ? nsteps : 1));
        if (!steps)
            goto out;
        /* the step the rule leaves out (the rank's first, or its last) is
         * left out of its split, as ms/step leaves it out: the figures of
         * the cycle that holds it without it */
        size_t rank_steps = nsteps, edge = f->rule->drop_last && n ? n - 1 : 0;
        struct kernel_tally kernels = {0};
        struct memcpy_table copies = {0};
        struct queue_tally queue = {0};
        struct launch_tally launches = {0};
        struct idle_table idle = {.delay_ns = f->idle_delay_ns};
        struct memtl_table *memtl = &res->ranks[i].memtl; /* (the cycles' in step order, as a replay's windows) */
        int kernels_valid = 0, oom = 0;
        nsteps = 0;
        for (size_t k = 0; k < n; k++) {
            int rest = k == edge && rank_steps >= 2;
            const struct trace_figures *c = rest ? &mine[k]->f_rest : &mine[k]->f;
            if (mine[k]->kernels_valid) {
                kernels_valid = 1;
                oom |= kernel_tally_add(&kernels, rest ? &mine[k]->kernels_rest : &mine[k]->kernels) != 0;
                memcpy_table_add(&copies, rest ? &mine[k]->memcpy_rest : &mine[k]->memcpy);
                oom |= queue_tally_add(&queue, rest ? &mine[k]->queue_rest : &mine[k]->queue) != 0;
                oom |= launch_tally_add(&launches, rest ? &mine[k]->launch_rest : &mine[k]->launch) != 0;
                idle_table_add(&idle, rest ? &mine[k]->idle_rest : &mine[k]->idle);
                oom |= straggler_gather_add(&late, rest ? &mine[k]->late_rest : &mine[k]->late) != 0;
            }
            oom |= whatif_gather_add(&colls, rest ? &mine[k]->colls_rest : &mine[k]->colls) != 0;
            memtl_table_add(memtl, &mine[k]->memtl);
            breakdown_add(&sum.b, &c->b);
            sum.gpu_view = c->gpu_view;
            sum.idle_split_valid = c->idle_split_valid;
            sum.host_wait_ns += c->host_wait_ns;
            sum.kernel_wait_ns += c->kernel_wait_ns;
            sum.other_idle_ns += c->other_idle_ns;
            memcpy(steps + nsteps, mine[k]->step_ns, sizeof(*steps) * (size_t)mine[k]->nsteps);
            nsteps += (size_t)mine[k]->nsteps;
        }
        const struct trace_figures *cut = n ? &mine[edge]->f_rest : NULL;
        sum.whole = rank_steps >= 2 && cut && cut->whole;
        sum.left = rank_steps < 2 || !cut || cut->whole ? TRACE_LEFT_NONE
                   : f->rule->drop_last                 ? TRACE_LEFT_LAST
                                                        : TRACE_LEFT_FIRST;
        struct rank_result *rr = &res->ranks[i];
        if (!oom && kernels_valid && sum.gpu_view) {
            oom = kernel_table_of(&rr->kernels, &kernels) != 0;
            rr->kernels_valid = !oom;
            rr->memcpy = copies;
            rr->memcpy_valid = 1;
            queue_table_of(&rr->queue, &queue);
            rr->queue_valid = 1;
            if (!oom)
                oom = launch_table_of(&rr->launch, &launches, LAUNCH_RUNTIME_CUTOFF_US * 1000LL,
                                      LAUNCH_DELAY_CUTOFF_US * 1000LL) != 0;
            rr->launch_valid = !oom;
            rr->idle = idle;
            rr->idle_valid = 1;
        }
        rr->memtl_valid = rr->memtl.n > 0;
        oom |= follow_critpath(rr, mine, n) != 0;
        kernel_tally_free(&kernels);
        queue_tally_free(&queue);
        launch_tally_free(&launches);
        if (oom)
            goto out;
        replay_foreign_row(rr, &sum, steps, nsteps);
        rr->rank = f->ranks[i].rank;
        rr->window = f->rule;
        for (size_t k = 0; k < n; k++)
            if (mine[k]->cycle == 0) { /* (its rank's source: its first cycle's) */
                rr->rank_from = mine[k]->rank_from;
                rr->rank_from_valid = 1;
            }
        snprintf(rr->device, sizeof(rr->device), "%s", f->ranks[i].device);
    }
    res->window = f->rule;
    if (straggler_table_of(&res->stragglers, &late) != 0 || whatif_table_of(&res->colls, &colls) != 0)
        goto out;
    replay_foreign_run(res);
    res->cfg.strategy = -1;
    res->state = -1; /* (a job that may go on) */
    res->world = f->world > f->nranks ? f->world : f->nranks;
    snprintf(res->device, sizeof(res->device), "%s", f->nranks ? f->ranks[0].device : "");
    res->replay.valid = 1;
    snprintf(res->replay.files, sizeof(res->replay.files), "%.1000s", f->dir);
    snprintf(res->replay.format, sizeof(res->replay.format), "%s", trace_flavor_name(f->flavor));
    res->replay.complete = 1; /* (only whole files are read) */
    res->replay.nleft_out = f->nnot_trace;
    memcpy(res->replay.left_out, f->not_trace, sizeof(res->replay.left_out));
    if (f->predict) /* (the report's and the UI's: one owner) */
        result_job_predict(res, f->predict);
    rc = 0;
out:
    free(mine);
    free(steps);
    straggler_gather_free(&late);
    whatif_gather_free(&colls);
    if (rc != 0) {
        result_free(res);
        snprintf(err, errlen, "out of memory");
    }
    return rc;
}

const char *follow_pending(const struct follow *f, size_t *i)
{
    for (; *i < f->nfiles; (*i)++)
        if (f->files[*i].state == FILE_PENDING)
            return f->files[(*i)++].name;
    return NULL;
}
