/* gpu_activity.h - device timelines from CUPTI's activity API: kernels,
 * memcpy and memset of every registered stream become spans on the owning
 * rank's `gpu` lane, with timestamps moved onto the host probe clock, so
 * they feed the same metrics, panes and traces as host spans.
 *
 * Categories come from what we know, never from kernel names: a record on a
 * rank's comm stream is comm (NCCL or our ring kernels), a memcpy is data,
 * anything else on the compute stream is compute (attributed to the host
 * phase that was open when its step ran: forward, backward or optimizer,
 * via CUPTI's external correlation ids).
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
 * frees the last). Returns -1 with err set when CUPTI is unavailable;
 * training goes on without device timelines. */
int gpu_activity_start(char *err, size_t errlen);
/* Records on `cuda_stream` of GPU `device` become spans of `rank` pushed to
 * `ring` (whose single producer is CUPTI's buffer thread). */
int gpu_activity_register(void *cuda_stream, int device, int rank, int role, struct spsc_ring *ring);
/* No record reaches `ring` after this returns (its owner frees it next). */
void gpu_activity_release(struct spsc_ring *ring);
/* Marks the host phase (enum cat) of `step` whose kernels the calling
 * thread is about to launch, for attribution; pop when it ends. */
void gpu_activity_phase_push(int cat, uint32_t step);
void gpu_activity_phase_pop(void);
/* Delivers every completed record now. */
void gpu_activity_flush(void);
void gpu_activity_stop(void);
/* Time CUPTI's buffer processing took so far, and records lost. */
int64_t gpu_activity_overhead_ns(void);
uint64_t gpu_activity_dropped(void);
/* So far: phase records (external correlations) seen, and compute-stream
 * records attributed to a phase or not (diagnostics and tests). */
void gpu_activity_counts(uint64_t *phases, uint64_t *matched, uint64_t *unmatched);

#endif
