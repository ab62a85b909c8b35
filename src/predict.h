/* predict.h - what a run would take on more ranks, from one measured on
 * one rank (--predict): the analytic model the README gives.
 *
 * From the 1-rank run: forward F and backward B per step (the model's
 * per-layer times, mean per call), the rest R of the measured median step
 * (optimizer, data, overheads: ms/step p50 - F - B, at least 0), and when
 * in backward each gradient became final (its layer's backward done, the
 * layers running in reverse). On K ranks, each with the same per-rank
 * batch (weak scaling) and a core of its own, the compute stays; the
 * gradients are averaged with ring allreduces of
 *   t(S) = alpha + beta S        (a --bench-comm fit for K ranks, alpha
 *                                and beta those of S's regime), or
 *   t(S) = 2 (K-1) (lat + S / (K bw))   (--link BW,LAT)
 * and the step becomes (each strategy's term is its table entry's cost,
 * collectives/sync_*.c)
 *   allreduce:  F + B + sum over tensors t(S_p) + R
 *   ddp:        F + max(B, end of the last bucket) + R, the buckets
 *               (ddp_plan's, from --bucket-mb) queued on the comm lane in
 *               the order they become ready: start_i = max(ready_i,
 *               end_{i-1}), end_i = start_i + t(S_i); without overlap
 *               F + B + sum over buckets t(S_i) + R.
 *   horovod:    the fusion buffers of --fusion-mb on a
 *               background lane that wakes every --cycle-ms: at a wake it
 *               negotiates (an allreduce of one float per tensor) and
 *               reduces, in backward order, every tensor final by then;
 *               it wakes again a cycle later or when done, whichever is
 *               later; F + max(B, the lane's end) + R
 *   gather-scatter: F + B + gather(S) + broadcast(S) + R, S the trainable
 *               bytes (rank 0's averaging left out)
 *   dp:         rank 0 scatters the inputs, gathers the logits, scatters
 *               their gradients, reduces the gradients and broadcasts the
 *               parameters, each step, none of it overlapped: F + B +
 *               scatter(X) + gather(Y) + scatter(Y) + reduce(S) +
 *               broadcast(S) + R (X, Y: a rank's inputs and logits)
 * Speedup = K x step_1 / step_K (samples/s), efficiency = speedup / K. */
#ifndef DDPTOP_PREDICT_H
#define DDPTOP_PREDICT_H

#include <stddef.h>

#include "sync.h"

/* A --bench-comm fit as a link. */
struct predict_link predict_link_of(const struct cost_fit *f);

/* The ring allreduce of --link BW (bytes/s), LAT (s) on K ranks as alpha +
 * beta S: 2(K-1) lat and 2(K-1)/(K bw). */
struct predict_link predict_ring_link(double bw_bytes_per_s, double lat_s, int ranks);

/* The predicted step in ms of `strategy` (enum strategy_kind; its entry's
 * cost term, sync.h) with the model's gradients averaged over link and
 * the strategy's options p (--bucket-mb, --no-overlap, --fusion-mb,
 * --cycle-ms); *comm_ms gets the time in collectives and *exposed_ms the
 * part not hidden under backward. Returns a negative number when the
 * strategy is not modelled, or a cost it needs is not known (or out of
 * memory). The links and the input's types are sync.h's. */
double predict_step(const struct predict_input *in, int strategy, const struct predict_link *link,
                    const struct sync_params *p, double *comm_ms, double *exposed_ms);

/* Model and pipeline parallelism (strong scaling: the batch stays, the
 * layers split): the model's layers over `stages`, balanced as the run
 * balances them (pipe_plan_balance over layer_ms[l], a layer's forward and
 * backward per micro-batch), each boundary's activations sent forward and
 * their gradients back at p2p (alpha + beta bytes each way, per
 * micro-batch). With T_s a stage's compute per micro-batch plus its sends
 * and receives, the first micro-batch crosses every stage and back, and
 * the other M-1 follow at the slowest stage's pace:
 *   step = sum_s (F_s + B_s) + 2 sum_b t_b + (M - 1) max_s T_s + R_max
 * (model parallelism is M = 1: serial), R_max the rest of the measured
 * step (optimizer, data) in the share of the stage with the most
 * parameters. *comm_ms gets the boundary time on the critical path,
 * *bubble_pct the ideal idle share (S-1)/(M+S-1) for equal stages.
 * Returns the step in ms, or a negative number when the layers have too
 * few cuts for `stages` (or out of memory). */
struct model;
double predict_pipeline(const struct model *m, const double *layer_ms, int micro, double rest_ms, int stages,
                        const struct predict_link *p2p, double *comm_ms);

/* A replayed or followed PyTorch job at more ranks (--predict with
 * --replay or --follow; docs/predict.md, "A replayed job").
 *
 * From the job's trace, per step over the steps its figures cover: the
 * measured step (the run's median, ms/step's p50), its compute, its time
 * in collectives `comm` (each rank's collectives' durations summed, the
 * mean over ranks) and the exposed part of that the split counts as comm
 * (not under compute); hidden = comm - exposed is the compute that hid
 * communication, at least 0. Each collective's bytes S come from Kineto's
 * args where they give them, else (collective by collective) from the backend's cost at the measured world
 * size W inverted, S = t^-1(t_min) (alpha + beta S = t_min in S's regime;
 * t_min its least duration over the ranks, the rank that waited least;
 * 0 where t_min is below alpha). At K ranks each collective takes
 * t_K(S), from --bench-comm's fit of its kind for K ranks, or with
 * --link BW,LAT the ring's: allreduce 2(K-1) LAT + 2(K-1)/K S/BW, the
 * others (allgather, reduce-scatter, broadcast) half of it; and
 *   comm_K = the collectives' t_K(S) summed over the steps / the steps
 *   exposed_K = max(0, comm_K - hidden)
 *   step_K = step - exposed + exposed_K
 * The compute, and what hid communication, stay as measured (each rank
 * with its batch and a core of its own: weak scaling). */
struct predict_job_in {
    double step_ms, comm_ms, exposed_ms; /* measured, per step */
};
/* step_K of the model above for comm_K = comm_k_ms; *exposed_k_ms gets
 * exposed_K. */
double predict_job_step(const struct predict_job_in *in, double comm_k_ms, double *exposed_k_ms);
/* The bytes S with alpha + beta S = t_us in S's regime of l (the cost
 * rises with S): 0 when t_us is at most the cost of 0 bytes. */
double predict_invert_bytes(const struct predict_link *l, double t_us);
/* --link BW,LAT's cost of collective `coll` (enum coll_kind) on K ranks:
 * the ring allreduce of predict_ring_link, half of it for the others. */
struct predict_link predict_link_coll(double bw_bytes_per_s, double lat_s, int ranks, int coll);

#endif
