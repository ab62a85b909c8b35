/* drain.c - a rank's rings emptied in the collector's order (run.h's
 * run_drain): the collector's metrics and a worker's relay to process 0
 * (procs.c) both drain through it. A file of its own below both, so that
 * neither needs the other. */
#include "run.h"

void run_drain(struct rank *k, int gpu, const struct drain_sink *sink)
{
    struct step_rec steps[256];
    struct span spans[512];
    struct epoch_rec ep[8];
    struct spsc_ring *rings[RANK_RINGS] = {
        [RANK_RING_MAIN] = &k->spans_main, [RANK_RING_COMM] = &k->spans_comm, [RANK_RING_GPU] = &k->spans_gpu};
    size_t ns, n;
    /* step records first: the spans of every step we pop were pushed before it */
    do {
        ns = spsc_pop(&k->steps, steps, 256);
        for (int g = 0; g < RANK_RINGS; g++)
            while ((g != RANK_RING_GPU || gpu) && (n = spsc_pop(rings[g], spans, 512)) > 0)
                sink->spans(sink->ctx, k, g, spans, n);
        if (ns)
            sink->steps(sink->ctx, k, steps, ns);
    } while (ns == 256);
    while ((n = spsc_pop(&k->epochs, ep, 8)) > 0)
        sink->epochs(sink->ctx, k, ep, n);
}
