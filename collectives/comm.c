/* comm.c - what every backend shares: binding to a probe ring, and call
 * begin/end with sequence numbers and spans. */
#include "comm.h"

void comm_bind(struct comm *c, struct spsc_ring *ring, int lane, const _Atomic uint32_t *step)
{
    c->probe = ring;
    c->lane = lane;
    c->step = step;
}

/* Waits shorter than this are not recorded as spans of their own. */
#define WAIT_SPAN_MIN_NS 2000

static uint32_t cur_step(const struct comm *c)
{
    return c->step ? atomic_load_explicit(c->step, memory_order_relaxed) : 0;
}

void comm_call_begin(struct comm *c, struct comm_call *call, int kind, uint64_t size_bytes)
{
    call->size = size_bytes;
    call->t0_ns = probe_now_ns();
    call->wait_ns = 0;
    call->tx = call->rx = 0;
    call->kind = kind;
    call->seq = c->seq++;
}

void comm_call_wait(struct comm *c, struct comm_call *call, int64_t t0_ns, int64_t t1_ns)
{
    int64_t d = t1_ns - t0_ns;
    if (d <= 0)
        return;
    call->wait_ns += d;
    if (d < WAIT_SPAN_MIN_NS || !c->probe)
        return;
    probe_span(c->probe, c->lane, CAT_WAIT, cur_step(c), c->tag, t0_ns, t1_ns,
               &(struct span_coll){.seq = call->seq, .kind = (uint8_t)call->kind});
}

void comm_call_end(struct comm *c, struct comm_call *call)
{
    int64_t t1 = probe_now_ns();
    c->stats.calls++;
    c->stats.bytes_tx += call->tx;
    c->stats.bytes_rx += call->rx;
    c->stats.total_ns += t1 - call->t0_ns;
    c->stats.wait_ns += call->wait_ns;
    if (c->probe) {
        struct span_coll sc = {.bytes = call->tx,
                               .bytes_rx = call->rx,
                               .size = call->size,
                               .seq = call->seq,
                               .kind = (uint8_t)call->kind,
                               .outer = 1};
        probe_span(c->probe, c->lane, CAT_COMM, cur_step(c), c->tag, call->t0_ns, t1, &sc);
    }
}
