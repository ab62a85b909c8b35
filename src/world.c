/* world.c - the world planner (world.h): the table of backends, the
 * checks that hold for every one of them (processes, GPUs), and the
 * making of each rank's communicators. gloo's entry is world_gloo.c's. */
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "devices.h"
#include "mode.h"
#include "procs.h"
#include "sync.h"

extern const struct world_entry world_gloo;

static const char *algo_word(int algo)
{
    return algo == ALGO_NAIVE ? "naive" : "ring";
}

/* ---- shm: threads of one process (and each process's threads under hier) */

static int shm_plan(struct world *w, char *err, size_t errlen)
{
    const struct run_config *rc = w->q.rc;
    if (w->procs) {
        snprintf(err, errlen, "--comm shm: under mpirun the ranks are processes, which --comm mpi or gloo joins");
        return -1;
    }
    if (rc->algo != ALGO_RING && rc->algo != ALGO_NAIVE) {
        snprintf(err, errlen, "--algo %s: gloo's (--comm gloo); ddptop's own are ring and naive",
                 config_algo_name(rc->algo));
        return -1;
    }
    w->algo = rc->algo;
    snprintf(w->backend, sizeof(w->backend), "shm/%s", algo_word(w->algo));
    snprintf(w->fit_backend, sizeof(w->fit_backend), "shm");
    snprintf(w->fit_algo, sizeof(w->fit_algo), "%s", algo_word(w->algo));
    return 0;
}

static struct comm *shm_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                               size_t errlen)
{
    return comm_shm_create(group < 0 ? w->shm : w->dp_shm[group], rank, w->algo);
}

static const struct world_entry world_shm = {
    .name = "shm", .comm = COMM_SHM, .plan = shm_plan, .create = shm_create, .own_ring = 1};

/* ---- mpi: processes under mpirun ------------------------------------------ */

static int mpi_plan(struct world *w, char *err, size_t errlen)
{
    if (!w->procs) {
        snprintf(err, errlen, "--comm mpi: %s",
                 procs_built() ? (w->q.bench ? "start ddptop under mpirun (mpirun -np N ddptop --bench-comm --comm mpi)"
                                             : "start ddptop under mpirun (mpirun -np N ddptop --comm mpi ...)")
                               : "this ddptop was built without MPI (install libopenmpi-dev and rebuild)");
        return -1;
    }
    const struct run_config *rc = w->q.rc;
    if (rc->algo != ALGO_RING && rc->algo != ALGO_NAIVE) {
        snprintf(err, errlen, "--algo %s: gloo's (--comm gloo); ddptop's own are ring and naive",
                 config_algo_name(rc->algo));
        return -1;
    }
    w->algo = w->local_algo = rc->algo;
    snprintf(w->backend, sizeof(w->backend), "mpi");
    if (w->hier)
        snprintf(w->backend, sizeof(w->backend), "mpi+shm/%s", algo_word(w->algo));
    snprintf(w->fit_backend, sizeof(w->fit_backend), "mpi");
    snprintf(w->fit_algo, sizeof(w->fit_algo), "mpi");
    return 0;
}

static struct comm *mpi_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                               size_t errlen)
{
    return group < 0 ? procs_comm_create(err, errlen) : procs_group_comm_create(group, rank, err, errlen);
}

static int gpu_plan(struct world *w, char *err, size_t errlen);

/* GPU ranks under mpirun (NCCL joins them, --comm mpi given or not);
 * without it --comm mpi is refused as on the CPU. */
static int mpi_plan_gpu(struct world *w, char *err, size_t errlen)
{
    return w->procs ? gpu_plan(w, err, errlen) : mpi_plan(w, err, errlen);
}

static const struct world_entry world_mpi = {.name = "mpi",
                                             .comm = COMM_MPI,
                                             .plan = mpi_plan,
                                             .plan_gpu = mpi_plan_gpu,
                                             .create = mpi_create,
                                             .gpu_note = "; ddptop's MPI backend moves host buffers only"};

/* ---- GPUs: NCCL, or ddptop's ring over device buffers ------------------- */

static const struct world_entry world_nccl, world_gpu_ring;

/* GPU ranks, whichever entry --comm names (its plan_gpu, or NULL): the
 * GPU each rank drives, and which joins them, NCCL or ddptop's device
 * ring (w->e). */
static int gpu_plan(struct world *w, char *err, size_t errlen)
{
    const struct run_config *rc = w->q.rc;
    const struct procs *pr = procs_self();
    const struct world_entry *asked = w->asked;
    int nccl_asked = asked && asked->gpu_nccl;
    w->hier = 0; /* (NCCL joins a process's threads too) */
    int count = w->q.devops->count();
    int n = w->ngpu = rc->ngpus > 0 ? rc->ngpus : count;
    for (int i = 0; i < rc->ngpus; i++)
        if (rc->gpus[i] >= count) {
            snprintf(err, errlen, "--gpus: there is no GPU %d (%d found: 0..%d)", rc->gpus[i], count, count - 1);
            return -1;
        }
    w->gpu = gpu_module();
    if (!w->gpu->nccl_create && (nccl_asked || w->procs)) {
        snprintf(err, errlen, "--comm nccl: this ddptop was built without NCCL%s",
                 w->procs ? " (GPUs across processes need it)" : "");
        return -1;
    }
    if (w->procs && asked && !nccl_asked) {
        snprintf(err, errlen, "--comm %s: GPU ranks in different processes are joined by NCCL (--comm nccl)%s",
                 asked->name, asked->gpu_note ? asked->gpu_note : "");
        return -1;
    }
    /* (an entry of ddptop's own ring has its device ring on GPUs) */
    if (asked && !nccl_asked && !asked->own_ring) {
        snprintf(err, errlen,
                 "--comm %s: moves host buffers; GPU ranks are joined by NCCL, or ddptop's ring where they "
                 "share a GPU (or train on the CPU: --device cpu)",
                 asked->name);
        return -1;
    }
    /* distinct GPUs among the ranks of a node (under mpirun: refused
     * below where a node has more ranks than GPUs): NCCL refuses a GPU
     * twice in one communicator */
    int here = w->procs ? procs_most_on_a_node() * pr->per : w->ranks;
    int distinct = n < here ? n : here;
    w->shared = here > distinct;
    int want = nccl_asked || !asked;
    if (w->procs && here > n) {
        snprintf(err, errlen,
                 "%s under mpirun: %d rank%s on a node and %d GPU%s: NCCL needs a GPU for each rank (ranks that share "
                 "a GPU run as threads of one process, without mpirun)",
                 w->q.what, here, here == 1 ? "" : "s", n, n == 1 ? "" : "s");
        return -1;
    }
    if (w->q.bench && rc->comm_set && want && w->shared) {
        snprintf(err, errlen,
                 "--comm nccl: %d ranks on a node and %d GPU%s: NCCL needs a GPU for each (without --comm, ranks that "
                 "share a GPU take its ring)",
                 here, n, n == 1 ? "" : "s");
        return -1;
    }
    /* (one rank under mpirun --comm nccl: a communicator of one, NCCL's
     * path across processes with nothing to join; a benchmark's one rank
     * too) */
    int wanted = w->ranks > 1 || w->q.bench || (w->procs && nccl_asked);
    w->use_nccl = w->gpu->nccl_create && wanted && !w->shared && want;
    w->algo = rc->algo;
    if (w->use_nccl)
        snprintf(w->backend, sizeof(w->backend), "nccl");
    else
        snprintf(w->backend, sizeof(w->backend), "gpu-%s%s", algo_word(rc->algo),
                 w->shared && w->ranks > 1 ? ", shared GPU" : "");
    if (w->shared && w->ranks > 1)
        snprintf(w->note, sizeof(w->note),
                 "%d ranks share %d GPU%s: NCCL refuses a GPU twice, so ddptop's own device ring (DtoD copies, "
                 "reduce kernels) replaces it",
                 w->ranks, distinct, distinct == 1 ? "" : "s");
    /* (a run of one GPU rank predicts NCCL: --predict's fits) */
    int nccl_fit = w->use_nccl || w->ranks == 1;
    snprintf(w->fit_backend, sizeof(w->fit_backend), "%s", nccl_fit ? "nccl" : "gpu");
    snprintf(w->fit_algo, sizeof(w->fit_algo), "%s", nccl_fit ? "nccl" : algo_word(rc->algo));
    w->e = w->use_nccl ? &world_nccl : &world_gpu_ring;
    snprintf(w->name, sizeof(w->name), "%.15s", w->backend);
    snprintf(w->algo_name, sizeof(w->algo_name), "%s", algo_word(w->algo));
    return 0;
}

/* --comm nccl for ranks on the CPU. */
static int nccl_plan(struct world *w, char *err, size_t errlen)
{
    snprintf(err, errlen, "--comm nccl: NCCL joins GPUs, and %s on the CPU here (--device cuda)",
             w->q.bench ? "--bench-comm runs" : "this run is");
    return -1;
}

static int nccl_open(struct world *w, char *err, size_t errlen)
{
    if (device_nccl_id(w->nccl_id, err, errlen) != 0)
        return -1;
    /* --dp: each stage's copies join a communicator of their own on their
     * threads, an id each (under mpirun process 0 makes them and sends
     * them to every process, in the same order) */
    if (w->dp > 1 && !(w->dp_nccl_id = calloc((size_t)w->stages, sizeof(*w->dp_nccl_id)))) {
        snprintf(err, errlen, "out of memory for %d stages' NCCL ids", w->stages);
        return -1;
    }
    for (int s = 0; w->dp_nccl_id && s < w->stages; s++)
        if (device_nccl_id(w->dp_nccl_id[s], err, errlen) != 0)
            return -1;
    return 0;
}

static struct comm *nccl_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                                size_t errlen)
{
    /* its initialisation and waits give up when a peer fails */
    return w->gpu->nccl_create(group < 0 ? w->nccl_id : w->dp_nccl_id[group], size, rank, dev, w->abort, err, errlen);
}

static void nccl_close(struct world *w)
{
    free(w->dp_nccl_id);
    w->dp_nccl_id = NULL;
}

static const struct world_entry world_nccl = {.name = "nccl",
                                              .comm = COMM_NCCL,
                                              .plan = nccl_plan,
                                              .open = nccl_open,
                                              .create = nccl_create,
                                              .close = nccl_close,
                                              .on_thread = 1,
                                              .gpu_nccl = 1};

static struct comm *ring_create(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                                size_t errlen)
{
    return w->gpu->ring_create(group < 0 ? w->shm : w->dp_shm[group], rank, w->algo, dev);
}

/* (chosen by gpu_plan, never named by --comm) */
static const struct world_entry world_gpu_ring = {
    .name = "gpu", .comm = -1, .create = ring_create, .on_thread = 1, .own_ring = 1};

/* ---- the table ------------------------------------------------------------- */

/* The backends --comm names. */
static const struct world_entry *const comm_entries[] = {&world_shm, &world_nccl, &world_mpi, &world_gloo};

static const struct world_entry *comm_entry(int comm)
{
    for (size_t i = 0; i < sizeof(comm_entries) / sizeof(comm_entries[0]); i++)
        if (comm_entries[i]->comm == comm)
            return comm_entries[i];
    return NULL;
}

/* Ranks as processes: as many as the processes hold, and stages within a
 * process or one a process. */
static int procs_fit(struct world *w, char *err, size_t errlen)
{
    const struct procs *p = procs_self();
    const struct run_config *rc = w->q.rc;
    if (sync_has(rc->strategy, SYNC_ONE_RANK) && p->size > 1 && !w->q.bench) {
        snprintf(err, errlen, "--strategy %s: one rank, and mpirun started %d; run it without mpirun",
                 strategy_name(rc->strategy), p->size);
        return -1;
    }
    if (w->ranks != p->size * p->per) {
        snprintf(err, errlen, "--ranks %d: under mpirun the ranks are %d process%s x %d (--ranks-per-process)",
                 w->ranks, p->size, p->size == 1 ? "" : "es", p->per);
        return -1;
    }
    if (p->per > 1 && p->size > 1 && train_mode_has(rc, MODE_STAGED)) {
        snprintf(err, errlen,
                 "--parallel %s: stages in different processes need --ranks-per-process 1 (activations "
                 "travel between processes only from rank to rank)",
                 parallel_name(rc->parallel));
        return -1;
    }
    return 0;
}

int world_plan(struct world *w, const struct world_req *q, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->q = *q;
    const struct run_config *rc = q->rc;
    const struct procs *pr = procs_self();
    w->ranks = q->ranks;
    w->on_gpu = device_is_gpu(q->devops);
    /* --comm's entry plans (on GPUs, it or the GPU planner chooses the
     * entry that joins them) */
    const struct world_entry *e = comm_entry(rc->comm);
    if (!e) {
        snprintf(err, errlen, "--comm %s: not a backend of this ddptop", config_comm_name(rc->comm));
        return -1;
    }
    /* a --bench-comm over a backend of rank threads (ddptop's ring): its
     * table is process 0's threads alone, even under mpirun */
    int here = q->bench && e->own_ring && !w->on_gpu;
    w->procs = pr->active && !here;
    w->per = w->procs ? pr->per : w->ranks;
    w->lo = w->procs ? pr->rank * pr->per : 0;
    w->hi = w->procs ? w->lo + pr->per : w->ranks;
    w->hier = w->procs && pr->per > 1;
    /* --dp: rank i is stage i % S of replica i / S; each stage's copies
     * have a communicator of their own */
    w->dp = train_mode_has(rc, MODE_STAGED) ? run_replicas(rc) : 1;
    w->stages = w->ranks / w->dp;
    w->asked = rc->comm_set ? e : NULL;
    w->e = e;
    int (*plan)(struct world *, char *, size_t) = !w->on_gpu ? e->plan : e->plan_gpu ? e->plan_gpu : gpu_plan;
    if (plan(w, err, errlen) != 0) {
        w->e = NULL; /* (nothing to free) */
        return -1;
    }
    if (w->procs && !w->q.bench && procs_fit(w, err, errlen) != 0)
        return -1;
    if (w->on_gpu)
        return 0;
    snprintf(w->name, sizeof(w->name), "%s", w->e->name);
    if (!w->algo_name[0])
        snprintf(w->algo_name, sizeof(w->algo_name), "%s", algo_word(rc->algo));
    if (w->procs) {
        /* e.g. "mpi+shm/ring, 2 processes x 2 on 1 node", "gloo/ring, 16 processes on 2 nodes" */
        char within[64], procs[48];
        snprintf(within, sizeof(within), "%s", w->backend);
        if (pr->per > 1)
            snprintf(procs, sizeof(procs), "%d process%s x %d", pr->size, pr->size == 1 ? "" : "es", pr->per);
        else
            snprintf(procs, sizeof(procs), "%d process%s", pr->size, pr->size == 1 ? "" : "es");
        if (snprintf(w->backend, sizeof(w->backend), "%s, %s on %d node%s", within, procs, pr->nodes,
                     pr->nodes == 1 ? "" : "s") >= (int)sizeof(w->backend))
            w->backend[sizeof(w->backend) - 1] = 0; /* (cut short) */
    }
    return 0;
}

int world_open(struct world *w, const volatile _Atomic int *abort, char *err, size_t errlen)
{
    w->abort = abort;
    /* the shm ring's world: the ranks of this process (of a node's
     * process under hier), for ddptop's own rings, host or device */
    int own_ring = w->e->own_ring || w->hier;
    if (own_ring && !(w->shm = shm_world_create(w->hier ? w->per : w->ranks, abort))) {
        snprintf(err, errlen, "out of memory for %d ranks", w->ranks);
        return -1;
    }
    for (int s = 0; own_ring && w->dp > 1 && !w->procs && s < w->stages; s++)
        if (!(w->dp_shm[s] = shm_world_create(w->dp, abort))) {
            snprintf(err, errlen, "out of memory for %d replicas of %d stages", w->dp, w->stages);
            return -1;
        }
    return w->e->open ? w->e->open(w, err, errlen) : 0;
}

int world_device(const struct world *w, int i)
{
    const struct run_config *rc = w->q.rc;
    return w->on_gpu ? device_rank_gpu(i, rc->gpus, rc->ngpus, w->ngpu) : i;
}

int world_on_thread(const struct world *w)
{
    return w->e->on_thread;
}

/* A communicator made, or why not. */
static int made(struct comm *c, int i, const char *what, char *err, size_t errlen)
{
    if (c)
        return 0;
    if (!err[0])
        snprintf(err, errlen, "cannot create rank %d's %s", i, what);
    return -1;
}

int world_comms(struct world *w, int i, struct device *dev, struct comm **comm, struct comm **dp_comm, char *err,
                size_t errlen)
{
    *comm = *dp_comm = NULL;
    err[0] = 0;
    const struct procs *pr = procs_self();
    /* (a run of one GPU rank has nothing to join) */
    if (!(w->on_gpu && w->ranks == 1 && !w->q.bench)) {
        if (w->hier) {
            /* the shm ring inside the process, the backend between its rank
             * 0s (every process creates its one such communicator in turn) */
            int t = i % w->per;
            struct comm *inter = t == 0 ? w->e->create(w, -1, pr->size, pr->rank, dev, err, errlen) : NULL;
            if (t == 0 && made(inter, i, "communicator", err, errlen) != 0)
                return -1;
            *comm = comm_hier_create(comm_shm_create(w->shm, t, w->local_algo), inter, pr->rank, pr->size);
        } else {
            *comm = w->e->create(w, -1, w->ranks, i, dev, err, errlen);
        }
        if (made(*comm, i, "communicator", err, errlen) != 0)
            return -1;
        (*comm)->abort = w->abort; /* (the shm world's communicators have it already) */
    }
    if (w->dp > 1) {
        /* its stage's copies (threads, or processes under mpirun) number
         * their collectives apart from the world's (comm.h) */
        int s = i % w->stages;
        *dp_comm = w->e->create(w, s, w->dp, i / w->stages, dev, err, errlen);
        if (made(*dp_comm, i, "communicator of its stage's copies", err, errlen) != 0)
            return -1;
        comm_set_group(*dp_comm, s);
        (*dp_comm)->abort = w->abort;
    }
    return 0;
}

void world_rank_failed(struct world *w, struct comm **comm, struct comm **dp_comm)
{
    if (w->e && w->e->rank_failed) {
        w->e->rank_failed(comm);
        w->e->rank_failed(dp_comm);
    }
}

void world_close(struct world *w)
{
    if (w->e && w->e->close)
        w->e->close(w);
    shm_world_destroy(w->shm);
    w->shm = NULL;
    for (int s = 0; s < PIPE_MAX_STAGES; s++) {
        if (w->dp_shm[s])
            shm_world_destroy(w->dp_shm[s]);
        w->dp_shm[s] = NULL;
    }
}
