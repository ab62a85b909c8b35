/* gpu_activity.h - device timelines from CUPTI's activity API: kernels,
 * memcpy and memset of every registered stream become spans on the owning
 * rank's `gpu` lane, with timestamps moved onto the host probe clock, so
 * they feed the same metrics, panes and traces as host spans.
 *
 * Categories come from what we know, never from kernel names: a record on a
 * rank's comm stream is comm (NCCL or our ring kernels), a copy on the copy
 * stream is data, and the compute stream's work belongs to the host phase
 * (forward, backward, optimizer) whose mark precedes it on the stream
 * (device_ops.phase_mark; gpu_activity.c). Every record carries the step
 * of the mark before it.
 */
#ifndef DDPTOP_GPU_ACTIVITY_H
#define DDPTOP_GPU_ACTIVITY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"

enum gpu_stream_role { GPU_STREAM_COMPUTE = 0, GPU_STREAM_COPY, GPU_STREAM_COMM };

/* Starts collection, or joins it: every run that started it stops it, and
 * the last one turns it off (a UI session starts its next run before it
 * frees the last). sampled: records are collected only while some rank is
 * inside gpu_activity_window(1) (a run that traces some of its steps);
 * else all the time. Returns -1 with err set when CUPTI is unavailable;
 * training goes on without device timelines. */
int gpu_activity_start(int sampled, char *err, size_t errlen);
/* The rank of `ring` (a sampled run's) enters (1) a traced window of steps
 * at `step`, or leaves it (0): the activity kinds are on while any rank is
 * inside one (CUPTI's switches are process-wide), so a rank's own window
 * is traced whole. */
void gpu_activity_window(struct spsc_ring *ring, int on, uint32_t step);
/* Records on `cuda_stream` of GPU `device` become spans of `rank` pushed to
 * `ring` (whose single producer is CUPTI's buffer thread). */
int gpu_activity_register(void *cuda_stream, int device, int rank, int role, struct spsc_ring *ring);
/* No record reaches `ring` after this returns (its owner frees it next). */
void gpu_activity_release(struct spsc_ring *ring);
/* Delivers every completed record now; final (every rank is done and the
 * device idle): the records still waiting for a later phase mark too. */
void gpu_activity_flush(int final);
/* sampled: as the run's gpu_activity_start said. */
void gpu_activity_stop(int sampled);
/* Time CUPTI's buffer processing took so far, and records lost. */
int64_t gpu_activity_overhead_ns(void);
uint64_t gpu_activity_dropped(void);
/* So far: phase marks seen, and compute-stream records attributed to a
 * phase, or not (set-up work before the first mark); diagnostics, tests. */
void gpu_activity_counts(uint64_t *marks, uint64_t *matched, uint64_t *unmatched);

#endif
