/* loop.h - one rank's training loop, shared by the files that make it up:
 *   rank.c         the loop itself, evaluation, the trace windows;
 *   loop.c         what every step uses: spans, failures, step records,
 *                  the loss scaler's rule;
 *   loop_data.c    the data-parallel step, with the strategies' hooks;
 *   loop_stages.c  the stages of model and pipeline parallelism;
 *   loop_faults.c  --inject-fault.
 * A training mode (mode.h) is an entry whose init, step and free are
 * loop_data's or loop_stages'. Nothing outside those files includes this.
 */
#ifndef DDPTOP_LOOP_H
#define DDPTOP_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "mode.h"
#include "model.h"
#include "optim.h"
#include "pipeline.h"
#include "run.h"
#include "sync.h"

struct loop {
    struct rank *rk;
    struct run *run;
    const struct run_config *cfg;
    const struct train_mode *mode;  /* --parallel's entry (mode.h), chosen once */
    const struct loop_hooks *hooks; /* its rank loop's (rank.c's table) */
    struct model *m;
    struct sgd opt;
    struct sampler smp;
    uint32_t *idx;  /* [local_batch] */
    float *xhost;   /* [local_batch, c, h, w], host staging */
    int32_t *yhost; /* [local_batch] */
    double slow;    /* compute time multiplier of this rank (>= 1) */
    int poison;     /* --inject-fault nan: this step's logits go NaN */
    int overflow;   /* --inject-fault overflow: this step's gradients go infinite */
    /* --loss-scale dynamic: the scale (a power of 2), good steps since it
     * last changed, and whether this step's update was skipped */
    float scale, used_scale; /* ... and the one this step's loss was scaled by */
    int good, skipped;
    /* the strategy's view of the flat buffers */
    struct grad_tensor *gt;
    struct grad_layout gl;
    struct grad_wire w16;        /* --grad-compress's format, and where it casts */
    const struct sync_ops *sync; /* the strategy this run of `world` ranks trains with (sync.h) */
    struct sync_engine *engine;  /* its state, or NULL */
    struct device lane_dev;      /* the rank's device for ddp's comm lane and horovod's thread */
    int schedstat_fd;            /* /proc/thread-self/schedstat, or -1 */
    int64_t run_delay;           /* its run delay at the last step's end, or -1 */
    /* an asynchronous device (GPU): the batch is staged in device memory by
     * the copy stream while the previous step computes */
    int async;
    void *own;          /* the mode's own state (loop_data.c's dp buffers, loop_stages.c's stages), or NULL */
    float *scaler_buf;  /* --loss-scale dynamic on dp and stages: the verdict's float, in the model's memory */
    int traced;         /* CUPTI records this step (every step, or --cupti-sample's window) */
    int in_window;      /* a sampled run: this rank holds the device tracing on */
    uint32_t win_start; /* ... since this step */
    uint32_t gap_step0; /* rank 0: the step after the last window, */
    int64_t gap_t0_ns, gap_step_ns; /* when it started, and the untraced steps' mean time */
    float *stage_x;                 /* device: [local_batch, c, h, w] */
    int32_t *stage_y;               /* device: [local_batch] */
    long staged;                    /* the step index (within the epoch) staged, or -1 */
    float *hash_buf;                /* --check-replicas on a GPU: a host copy of the parameters */
    int has_bn;                     /* the model keeps batch norm running statistics */
    float *bn_flat;                 /* every batch norm's statistics packed for one broadcast, in the model's memory */
    size_t bn_floats;               /* its length */
};

/* ---- loop.c -------------------------------------------------------------- */

/* A span of category cat on `lane` into ring, at the rank's current step. */
void loop_rec(struct rank *rk, struct spsc_ring *ring, int lane, int cat, int64_t t0, int64_t t1);
/* --inject-fault nan and overflow: the first float at `at` (m's memory)
 * becomes v. 0, or -1 with m->err set. */
int loop_put_value(struct model *m, float *at, float v);
/* The training forward (--inject-fault nan poisons its logits). */
int loop_forward(struct loop *L);
/* A straggler's compute since t0 stretched by its factor. */
void loop_straggle(const struct loop *L, int64_t t0);
/* The host phase whose device work follows, entered and left. 0, or -1
 * (the device's message in the device). */
int loop_phase_push(const struct loop *L, int cat);
int loop_phase_pop(const struct loop *L, int cat);
/* The rank's failure (its first message kept; every rank stops): -1. */
int loop_fail(struct rank *rk, const char *what);
/* A rank fails (rk->rc and rk->err are set), by loop_fail or otherwise:
 * its time, once (struct rank's fail_ns), and this process's first failed
 * rank (first_failed). */
void loop_rank_failed(struct rank *rk);
/* A device call failed, its message in the device: -1. */
int loop_dev_failed(struct rank *rk);
/* The kernel's run delay of this thread in ns, or -1. */
int64_t loop_run_delay_ns(struct loop *L);
/* A finished step's record for the collector: 0. */
int loop_push_step(struct loop *L, uint32_t step, int epoch, int64_t t0, float loss, int correct);
/* The loss is not finite: the rank's failure, with advice. */
int loop_diverged(struct rank *rk, uint32_t step, float loss);
/* A collective returned rc: the failure, `what` and the communicator's
 * message (COMM_ABORTED, another rank's failure, is passed on as is). */
int loop_comm_failed(struct rank *rk, int rc, const char *what);
/* The comm stream waits for the compute stream's work so far. */
int loop_comm_after_compute(struct loop *L);
/* Whether m's trainable gradients in parameters [p0, p1) are all finite. */
int loop_grads_all_finite(struct model *m, int p0, int p1, int *finite);
/* --loss-scale dynamic's rule on a verdict: whether to update. */
int loop_scaler_decide(struct loop *L, int finite);
/* The ranks' `bad` flags summed through buf (one float in the model's memory). */
int loop_agree_bad(struct loop *L, float *buf, float *bad);

/* ---- the modes' hooks (rank.c's table, by enum mode_loop) ---------------- */

/* A training mode's rank loop: the layers [*a, *b) of the model's plan
 * (model_begin_plan) whose state the rank holds (NULL: the whole model,
 * made at once); after the state every mode shares, the mode's own (0, or
 * -1 with the rank's failure said); step i of the epoch (0, or nonzero:
 * the rank stops); what hold and init made, also after they failed. */
struct loop_hooks {
    int (*hold)(struct loop *L, const struct model *plan, int *a, int *b);
    int (*init)(struct loop *L);
    int (*step)(struct loop *L, int i, int epoch);
    void (*free)(struct loop *L);
};

int loop_data_init(struct loop *L);
int loop_data_step(struct loop *L, int i, int epoch);
void loop_data_free(struct loop *L);
int loop_stages_hold(struct loop *L, const struct model *plan, int *a, int *b);
int loop_stages_init(struct loop *L);
int loop_stages_step(struct loop *L, int i, int epoch);
void loop_stages_free(struct loop *L);

/* ---- loop_faults.c ------------------------------------------------------- */

/* --inject-fault, at the top of step `step` on its rank: 0 to go on with
 * the step, -1 when the rank stops here. */
int loop_inject(struct loop *L, uint32_t step);

#endif
