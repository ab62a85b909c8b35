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
    int first[PIPE_MAX_STAGES + 1]; /* stage s runs layers [first[s], first[s + 1]) (indices, not numbers) */
    int cut[PIPE_MAX_STAGES + 1];   /* the tensor entering stage s (s > 0; model_cut_tensor) */
    int micro;                      /* micro-batches per step (1: model parallelism) */
    int schedule;                   /* enum pipe_schedule */
};

/* --partition "A:B,C:D,...": stage s runs layers A..B inclusive, in the
 * user's layer numbers (model_layer_num: the same on every CPU); the
 * ranges must cover every layer in order, one per stage, and each
 * boundary must be a cut (model_cut_tensor). Returns 0, or -1 with err. */
int pipe_plan_parse(struct pipe_plan *p, const struct model *m, const char *spec, int stages, char *err, size_t errlen);
/* The partition whose slowest stage is fastest, over per-layer costs
 * cost[nlayers] (measured forward + backward time), boundaries at cuts
 * before numbered layers only (a conversion stays with its layer). Returns 0, or -1 with err (fewer cuts than stages
 * need). */
int pipe_plan_balance(struct pipe_plan *p, const struct model *m, const double *cost, int stages, char *err,
                      size_t errlen);

/* The order in which stage s of S runs its M micro-batches: ops[2M],
 * k + 1 for micro-batch k's forward and -(k + 1) for its backward. */
void pipe_schedule_ops(int schedule, int S, int s, int M, int *ops);
/* Micro-batches whose activations stage s holds at once under the
 * schedule: M for GPipe, min(M, S - s) for 1F1B. */
int pipe_in_flight(int schedule, int S, int s, int M);
/* What a stage holds to train its layers, in bytes (DDLBench's memory
 * axis), one figure a kind:
 *  - its layers' parameters;
 *  - the gradients of those that train (a frozen one has none), twice
 *    with micro-batches (each micro-batch's are computed into a second
 *    buffer and added to the first);
 *  - SGD's momentum, one value a trainable parameter (none at momentum 0,
 *    as PyTorch's SGD keeps none);
 *  - the activations of every micro-batch in flight (pipe_in_flight): its
 *    input (the model's, or the tensor the stage before sends) and each of
 *    its layers' outputs (not a view of another's buffer), values, with a
 *    gradient beside each one that a gradient flows through (need_grad).
 * Counted from the layers' shapes as the run holds them (a blocked
 * layout's padded channels included). A rank holds only its stage's
 * layers (model_hold), and its micro-batches share their activations
 * as they are in flight, so its measured peak follows these figures. */
enum stage_mem_kind { SMEM_PARAMS = 0, SMEM_GRADS, SMEM_OPTIM, SMEM_ACTS, SMEM_KINDS };
/* The kind's key in the report's JSON ("param_bytes"...). */
const char *pipe_stage_mem_key(int kind);
/* The figures of layers [a, b) of m (m's batch: one micro-batch) with
 * in_flight of `micro` micro-batches live and SGD momentum `momentum`,
 * into bytes[SMEM_KINDS]. */
void pipe_stage_memory(const struct model *m, int a, int b, int in_flight, double momentum, double *bytes, int micro);

const char *parallel_name(int kind);
/* The kind whose parallel_name is `name`, or -1. */
int parallel_kind_of(const char *name);
const char *schedule_name(int kind);

#endif
