/* horovod.h - Horovod's gradient synchronisation: negotiation each cycle,
 * tensor fusion, one background thread per rank (horovod.c says how). */
#ifndef DDPTOP_HOROVOD_H
#define DDPTOP_HOROVOD_H

#include "strategy.h"

struct hvd_engine;
/* fusion_bytes caps a fusion buffer (Horovod's 64 MB); cycle_ms spaces the
 * negotiations (Horovod's 5 ms). w16 (enum wire16, or 0): gradients travel
 * as 16-bit values of that format.
 * The thread's spans go to ring as LANE_COMM. NULL when out of memory. */
struct hvd_engine *hvd_create(struct comm *c, const struct grad_layout *g, size_t fusion_bytes, double cycle_ms,
                              int w16, struct spsc_ring *ring, const _Atomic uint32_t *step);
/* Start of backward. */
void hvd_begin(struct hvd_engine *e);
/* Backward reports parameter p's gradient final. */
void hvd_grad_ready(struct hvd_engine *e, int p);
/* Waits until every trainable gradient is averaged; the wait goes to
 * main_ring as a wait span. 0, or the thread's failure, or COMM_ABORTED. */
int hvd_finish(struct hvd_engine *e, struct spsc_ring *main_ring);
void hvd_destroy(struct hvd_engine *e);

#endif
