/* world.h - one place plans the world: for a training run or a
 * --bench-comm, which process runs which ranks, which device each rank
 * drives, and which communicator joins them; and it builds every
 * communicator.
 *
 * Ranks are threads of this process, or processes (procs.h: under mpirun,
 * with --ranks-per-process threads in each). One backend joins them, an entry of the table in world.c:
 *   shm   ddptop's ring (or naive) among the threads of one process, and
 *         inside each process under mpirun with --ranks-per-process > 1,
 *         where the processes' leaders meet over mpi or gloo (comm_hier.c);
 *   mpi   processes under mpirun;
 *   gloo  gloo's TCP: a context of its own for each rank thread over
 *         loopback, or processes under mpirun (ranks and rendezvous
 *         from MPI) (world_gloo.c);
 *   nccl  GPU ranks, a GPU each;
 *   gpu   ddptop's ring over device buffers, for ranks that share a GPU.
 *
 * world_plan decides and refuses, in one line, what cannot run, by
 * asking the entry --comm names (its plan; on GPUs its plan_gpu, which
 * chooses nccl's entry or the device ring's); a run plans once
 * (run_start, through run_check's checks) and keeps the plan;
 * world_open makes what the ranks share (shm worlds, NCCL ids, gloo's
 * store); world_comms makes a rank's communicators, on the rank's own
 * thread where the backend's creation is collective among threads (NCCL,
 * gloo on threads), else on the thread that starts the ranks
 * (world_on_thread says which); world_close frees what world_open made. */
#ifndef DDPTOP_WORLD_H
#define DDPTOP_WORLD_H

#include <stdatomic.h>
#include <stddef.h>

#include "config.h"
#include "device.h"
#include "gpu.h"
#include "pipeline.h"

struct comm;
struct shm_world;
struct gloo_store;
struct world;

/* A backend: its name (--comm's), what it decides, makes and frees.
 * world_plan asks the entry --comm names (by .comm) to plan; on GPUs the
 * plan chooses the entry that joins them (nccl's, or the device ring's). */
struct world_entry {
    const char *name;
    int comm; /* enum comm_backend: --comm's entry (the device ring: none) */
    /* checks w's request for host ranks and fills w's names; 0, or -1
     * with err set */
    int (*plan)(struct world *w, char *err, size_t errlen);
    /* the same for GPU ranks, --comm naming this entry (NULL: world.c's
     * GPU planner, which sets w->e) */
    int (*plan_gpu)(struct world *w, char *err, size_t errlen);
    /* what the ranks share (NULL: nothing); 0, or -1 with err set */
    int (*open)(struct world *w, char *err, size_t errlen);
    /* a rank's communicator among `size` ranks, as `rank` of them:
     * group -1 is the world (or, joining processes, their leaders),
     * group s the copies of stage s (--dp); NULL with err set */
    struct comm *(*create)(struct world *w, int group, int size, int rank, struct device *dev, char *err,
                           size_t errlen);
    void (*close)(struct world *w);
    /* a rank whose thread failed: its communicators *c (NULL: none) may be
     * destroyed now, so that its peers' waits end (NULL: they stay) */
    void (*rank_failed)(struct comm **c);
    int on_thread; /* its creation is collective among threads: on the rank's own */
    int own_ring;  /* its communicators are ddptop's ring over world_open's shm world */
    /* given as --comm for GPU ranks: */
    int gpu_nccl;         /* it asks for NCCL */
    const char *gpu_note; /* across processes, added to the refusal (NULL: nothing) */
};

/* What is asked. */
struct world_req {
    const struct run_config *rc;
    int ranks; /* in all */
    const struct device_ops *devops;
    /* a --bench-comm: what cannot be honoured is refused rather than
     * replaced (NCCL with ranks that share a GPU), and one GPU rank has a
     * communicator of its own too */
    int bench;
    const char *what; /* "--device cuda" or "--bench-comm", in refusals */
};

struct world {
    struct world_req q;
    const struct world_entry *asked; /* the entry --comm names, where it was given (NULL: its default) */
    const struct world_entry *e;     /* the entry that joins the ranks */
    int ranks;
    int lo, hi;     /* this process runs ranks [lo, hi) */
    int procs;      /* the ranks are processes (procs.h) */
    int per;        /* ranks in each process */
    int hier;       /* threads of a process over shm, processes over e (comm_hier.c) */
    int on_gpu;     /* ranks drive GPUs */
    int ngpu;       /* GPU runs: the GPUs the ranks take in turn */
    int shared;     /* GPU runs: ranks share a GPU */
    int stages;     /* --dp: each stage's copies have a communicator of their own */
    int dp;         /* those copies (1: no such communicators) */
    int algo;       /* the backend's own algorithm (enum comm_algo, or enum gloo_algo) */
    int local_algo; /* hier: the shm ring's inside a process (enum comm_algo) */
    int use_nccl;   /* GPU ranks over NCCL */
    const struct gpu_module *gpu;
    char backend[64];     /* for headers and reports: "shm/ring", "gloo/ring, 2 processes on 1 node" */
    char name[16];        /* the backend as traces name it: "shm", "mpi", "gloo" (GPUs: backend) */
    char algo_name[24];   /* its algorithm, as traces name it */
    char fit_backend[16]; /* --bench-comm's fits (cost_model.h): the keys this world's */
    char fit_algo[24];
    char note[192]; /* one remark on the set-up (shared GPUs), or "" */
    /* made by world_open */
    const volatile _Atomic int *abort;
    struct shm_world *shm;
    struct shm_world *dp_shm[PIPE_MAX_STAGES];
    unsigned char nccl_id[GPU_NCCL_ID_BYTES];
    unsigned char (*dp_nccl_id)[GPU_NCCL_ID_BYTES];
    struct gloo_store *store;
    int serial; /* gloo: this process's count of worlds before it (its keys' prefix) */
};

/* Decides the world of q (q->rc's --comm, --algo, --gpus, --dp, and
 * procs_self()'s processes). 0, or -1 with err set: one line, and nothing
 * to free. */
int world_plan(struct world *w, const struct world_req *q, char *err, size_t errlen);
/* Makes what the ranks share; abort fails every wait once raised. 0, or -1
 * with err set (world_close frees what was made). Collective over the
 * processes (NCCL's ids go from process 0 to all). */
int world_open(struct world *w, const volatile _Atomic int *abort, char *err, size_t errlen);
/* The device index rank i drives (a GPU's, or its own id on the CPU). */
int world_device(const struct world *w, int i);
/* Whether rank i's communicators are made on its own thread (after its
 * device is open) rather than before the threads start. */
int world_on_thread(const struct world *w);
/* Rank i's communicator (*comm, NULL for one GPU rank of a run) and, with
 * --dp, that of its stage's copies (*dp_comm): abort set, the --dp one's
 * collectives numbered in its group's space. dev: its open device. 0, or -1
 * with err set. */
int world_comms(struct world *w, int i, struct device *dev, struct comm **comm, struct comm **dp_comm, char *err,
                size_t errlen);
/* A rank's thread has failed, or left its loop after the run's abort (its
 * helper threads are joined): where the backend says so, its
 * communicators are destroyed and set NULL, so that a peer blocked in a
 * wait the abort cannot interrupt (gloo's) fails at once, as when a
 * process dies, rather than at --comm-timeout. Called on the rank's own
 * thread. */
void world_rank_failed(struct world *w, struct comm **comm, struct comm **dp_comm);
void world_close(struct world *w);

#endif
