/* pipeline.h - model and pipeline parallelism (--parallel model|pipeline):
 * the model's layers split into contiguous stages, one per rank, each
 * stage's activations sent forward to the next and their gradients back
 * through the communicator's send and recv. In pipeline mode a step's
 * batch goes through in --micro-batches pieces, in GPipe's order (every
 * forward, then every backward) or 1F1B's (after a warm-up of forwards,
 * one backward per forward), with the gradients summed over the pieces
 * and one optimizer step.
 *
 * Here: the partition (by hand, or balanced over measured per-layer
 * times), the schedule, and what a stage keeps live. The rank loop
 * (rank.c) runs them.
 */
#ifndef DDPTOP_PIPELINE_H
#define DDPTOP_PIPELINE_H

#include <stddef.h>

#include "model.h"

enum parallel_kind { PAR_DATA = 0, PAR_MODEL, PAR_PIPELINE };
enum pipe_schedule { SCHED_GPIPE = 0, SCHED_1F1B };

#define PIPE_MAX_STAGES 64

struct pipe_plan {
    int stages;
    int first[PIPE_MAX_STAGES + 1]; /* stage s runs layers [first[s], first[s + 1]) */
    int cut[PIPE_MAX_STAGES + 1];   /* the tensor entering stage s (s > 0; model_cut_tensor) */
    int micro;                      /* micro-batches per step (1: model parallelism) */
    int schedule;                   /* enum pipe_schedule */
};

/* --partition "A:B,C:D,...": stage s runs layers A..B inclusive; the
 * ranges must cover every layer in order, one per stage, and each
 * boundary must be a cut (model_cut_tensor). Returns 0, or -1 with err. */
int pipe_plan_parse(struct pipe_plan *p, const struct model *m, const char *spec, int stages, char *err, size_t errlen);
/* The partition whose slowest stage is fastest, over per-layer costs
 * cost[nlayers] (measured forward + backward time), boundaries at cuts
 * only. Returns 0, or -1 with err (fewer cuts than stages need). */
int pipe_plan_balance(struct pipe_plan *p, const struct model *m, const double *cost, int stages, char *err,
                      size_t errlen);

/* The order in which stage s of S runs its M micro-batches: ops[2M],
 * k + 1 for micro-batch k's forward and -(k + 1) for its backward. */
void pipe_schedule_ops(int schedule, int S, int s, int M, int *ops);
/* Micro-batches whose activations stage s holds at once under the
 * schedule: M for GPipe, min(M, S - s) for 1F1B. */
int pipe_in_flight(int schedule, int S, int s, int M);
/* Bytes of activations and their gradients that layers [a, b) of m hold
 * for one forward (m's batch: one micro-batch). */
size_t pipe_stage_activation_bytes(const struct model *m, int a, int b);

const char *parallel_name(int kind);
const char *schedule_name(int kind);
struct run_config;
/* How a run trains, as tables show it: its strategy for data parallelism
 * ("ddp+bf16" where gradients travel in 16 bits), "model", or
 * "pipe-1f1b/4" (schedule, micro-batches), with ",dp2" for --dp 2; in buf. */
const char *train_mode_label(const struct run_config *c, char *buf, size_t n);

#endif
