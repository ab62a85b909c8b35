/* horovod.h - Horovod's gradient synchronisation: negotiation each cycle,
 * tensor fusion, one background thread per rank (horovod.c says how). */
#ifndef DDPTOP_HOROVOD_H
#define DDPTOP_HOROVOD_H

#include "strategy.h"

struct hvd_engine;
/* Where the gradients live in device memory (a GPU, whose calls only
 * enqueue work): the fusion buffer and the negotiation's flags go there,
 * and the engine orders its work through these. Each int hook returns 0,
 * or nonzero with the failure said in the communicator's err. */
struct hvd_device {
    int (*lane_init)(void *ctx); /* the background thread, first: the device made current */
    int (*ready)(void *ctx);     /* backward's thread, as a gradient is reported: its work so far marked */
    int (*before)(void *ctx);    /* the background thread, before it reads gradients: its stream waits for the mark */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    /* copies in any direction, on the background thread's stream */
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*settle)(void *ctx); /* the host waits for that stream */
    void *ctx;
};
/* fusion_bytes caps a fusion buffer (Horovod's 64 MB); cycle_ms spaces the
 * negotiations (Horovod's 5 ms). w16 (NULL, or a format of 0: fp32):
 * gradients travel as 16-bit values of w16's format, staged and converted
 * where w16 says, on the thread's stream. dev: NULL where the gradients
 * are host memory.
 * The thread's spans go to ring as LANE_COMM. NULL when out of memory. */
struct hvd_engine *hvd_create(struct comm *c, const struct grad_layout *g, size_t fusion_bytes, double cycle_ms,
                              const struct grad_wire *w16, const struct hvd_device *dev, struct spsc_ring *ring,
                              const _Atomic uint32_t *step);
/* Start of backward. */
void hvd_begin(struct hvd_engine *e);
/* Backward reports parameter p's gradient final. */
void hvd_grad_ready(struct hvd_engine *e, int p);
/* Waits until every trainable gradient is averaged; the wait goes to
 * main_ring as a wait span. 0, or the thread's failure, or COMM_ABORTED. */
int hvd_finish(struct hvd_engine *e, struct spsc_ring *main_ring);
void hvd_destroy(struct hvd_engine *e);

#endif
