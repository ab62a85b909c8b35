/* probe.h - per-rank span recording: the clock, the span record, and the
 * lock-free single-producer/single-consumer ring each producer writes into.
 *
 * A rank's training thread and its comm-lane thread each own one ring; the
 * collector (UI or report thread) is the only consumer. Pushing never blocks
 * and never allocates: when the ring is full the span is dropped and counted,
 * and the count is reported, so a lost span is never silent.
 */
#ifndef DDPTOP_PROBE_H
#define DDPTOP_PROBE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Lanes: where a span ran. */
enum lane {
    LANE_MAIN = 0, /* the rank's training thread */
    LANE_COMM,     /* its asynchronous communication thread */
    LANE_DATA,     /* prefetch */
    LANE_GPU,      /* device-side records (CUPTI) */
    LANE_COUNT
};

/* Categories: what the time was spent on (the README's time accounting). */
enum cat {
    CAT_DATA = 0,
    CAT_FORWARD,
    CAT_BACKWARD,
    CAT_OPTIMIZER,
    CAT_COMM, /* moving or reducing bytes */
    CAT_WAIT, /* blocked on a peer, a barrier or the comm lane */
    CAT_COUNT
};

static inline int cat_is_compute(int c)
{
    return c == CAT_FORWARD || c == CAT_BACKWARD || c == CAT_OPTIMIZER;
}

const char *lane_name(int lane);
const char *cat_name(int cat);

/* Collective kinds, recorded in span.coll for comm spans. */
enum coll_kind {
    COLL_NONE = 0,
    COLL_ALLREDUCE,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_GATHER,
    COLL_SCATTER,
    COLL_BARRIER,
    COLL_COUNT
};
const char *coll_name(int kind);
/* Bus-bandwidth factor of a collective on n ranks (nccl-tests' definition):
 * busbw = S / t x factor. */
double coll_busbw_factor(int kind, int n);

/* The tag of a collective that only agrees on what to reduce (Horovod's
 * negotiation), accounted apart from the gradients' transfer. */
#define SPAN_TAG_NEGOTIATE (-2)

/* One timed interval on one lane of one rank. Spans on a lane nest properly
 * (a collective's comm span may contain its wait spans); the innermost span
 * decides the category of an instant. */
struct span {
    int64_t t0_ns;     /* start, probe_now_ns() clock */
    int64_t t1_ns;     /* end */
    uint64_t bytes;    /* bytes sent by this rank (comm spans), else 0 */
    uint64_t bytes_rx; /* bytes received by this rank */
    uint64_t size;     /* a collective's buffer size S in bytes (for algbw/busbw) */
    uint32_t step;     /* global step index of the rank when recorded */
    uint32_t seq;      /* collective sequence number (comm spans), else 0; SPAN_SEQ_GROUP below */
    int16_t tag;       /* bucket or tensor index for comm spans, SPAN_TAG_NEGOTIATE, else -1 */
    uint8_t lane;      /* enum lane */
    uint8_t cat;       /* enum cat */
    uint8_t coll;      /* enum coll_kind */
    uint8_t outer;     /* 1 for a whole-collective span (its waits nest inside) */
    uint16_t name;     /* LANE_GPU: the kernel's or copy's name (probe_name), 0: none */
};

/* A collective of a group of the ranks (--dp: the copies of one stage),
 * numbered apart from the world's: bit 31 set, the group in bits 24-29
 * and the call in bits 0-23, so that the collector matches it among the
 * group's ranks only. */
#define SPAN_SEQ_GROUP 0x80000000u
#define SPAN_SEQ_GROUP_OF(seq) ((int)(((seq) >> 24) & 63u))

/* Names of device records (kernels, copies), interned once each: ids from
 * 1, stable for the process's life; 0 when the table is full (the record
 * then goes unnamed). Safe from any thread. */
#define PROBE_NAMES 4096
uint16_t probe_name_id(const char *name);
/* The name of id, or NULL for 0 and unknown ids. */
const char *probe_name(uint16_t id);

/* Added to every reading of the clock below: 0, but for a test that makes
 * one process of a job on one machine stand for a process on another node,
 * whose clock reads that far ahead (DDPTOP_TEST_CLOCK_SHIFT_NS, a test hook
 * only: docs/environment.md). Set once by probe_clock_init, before any
 * thread reads the clock. */
extern int64_t probe_clock_shift_ns;
/* Reads DDPTOP_TEST_CLOCK_SHIFT_NS: the program's first call. */
void probe_clock_init(void);

/* Monotonic nanoseconds, the one clock every span uses. */
static inline int64_t probe_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + probe_clock_shift_ns;
}

/* Monotonic milliseconds for this process's own deadlines and timeouts:
 * the plain clock, without probe_clock_shift_ns (a deadline is never
 * compared with another process's clock). */
static inline int64_t probe_deadline_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps about ms milliseconds, or us microseconds (0 or more): the nap
 * of a loop that polls (the one sleep of the project's loops). */
void probe_nap_ms(int ms);
void probe_nap_us(long us);

/* Single-producer/single-consumer ring of fixed-size elements. Capacity is a
 * power of two. head is written only by the producer, tail only by the
 * consumer; each sits on its own cache line. */
struct spsc_ring {
    _Alignas(64) _Atomic uint64_t head;    /* next slot the producer writes */
    _Alignas(64) _Atomic uint64_t tail;    /* next slot the consumer reads */
    _Alignas(64) _Atomic uint64_t dropped; /* pushes refused because full */
    size_t elem_size;
    size_t mask;
    unsigned char *slots;
};

int spsc_init(struct spsc_ring *r, size_t elem_size, size_t capacity_pow2);
void spsc_free(struct spsc_ring *r);
/* Returns 1 when pushed, 0 when the ring was full (the drop is counted). */
int spsc_push(struct spsc_ring *r, const void *elem);
/* Copies up to max elements out; returns how many. */
size_t spsc_pop(struct spsc_ring *r, void *out, size_t max);
uint64_t spsc_dropped(struct spsc_ring *r);

/* What a collective's span carries besides the common fields (a device
 * copy sets bytes alone). */
struct span_coll {
    uint64_t bytes, bytes_rx, size; /* as in struct span */
    uint32_t seq;
    uint8_t kind; /* enum coll_kind */
    uint8_t outer;
};

/* Records one span on ring, the one way every producer does. coll adds a
 * collective's fields (a device copy's: its bytes alone), NULL for the
 * rest. Returns 1 when pushed, 0 when the ring was full (the drop is
 * counted). */
static inline int probe_span(struct spsc_ring *ring, int lane, int cat, uint32_t step, int tag, int64_t t0_ns,
                             int64_t t1_ns, const struct span_coll *coll)
{
    struct span s = {
        .t0_ns = t0_ns, .t1_ns = t1_ns, .step = step, .tag = (int16_t)tag, .lane = (uint8_t)lane, .cat = (uint8_t)cat};
    if (coll) {
        s.bytes = coll->bytes;
        s.bytes_rx = coll->bytes_rx;
        s.size = coll->size;
        s.seq = coll->seq;
        s.coll = coll->kind;
        s.outer = coll->outer;
    }
    return spsc_push(ring, &s);
}

#endif
