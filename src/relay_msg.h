/* relay_msg.h - the relay's messages between a job's processes (procs.c),
 * and the one decoder that checks every field a worker sends before
 * process 0 uses any of it.
 *
 * A worker's process is another program on another machine as far as
 * process 0 can tell: a bug, a version skew or a stranger that reached the
 * port sends what it likes. So process 0 reads nothing of a message
 * before relay_decode has passed it whole: its length for its tag, the
 * rank it speaks for (one of the sender's own), every string
 * NUL-terminated and printable, every count and category in range, every
 * time on the clock's scale with t1 >= t0 and within the run's window
 * once the sender's clock offset is added, and its steps in order. A
 * message that fails is the sender's fault: process 0 fails the job in one
 * line naming that process and what was wrong.
 *
 * The decoder holds no state but what it is given (struct relay_seen),
 * so that a unit test and a fuzzer reach it from a buffer. */
#ifndef DDPTOP_RELAY_MSG_H
#define DDPTOP_RELAY_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "pipeline.h"
#include "probe.h"

/* the relay's tags: a worker's to process 0 (records, a rank's end, its
 * heartbeat, its clock), and process 0's to a worker (CTRL, the answers) */
enum {
    RELAY_TAG_SPANS = 1,
    RELAY_TAG_STEPS,
    RELAY_TAG_EPOCHS,
    RELAY_TAG_DONE,
    RELAY_TAG_CTRL,
    RELAY_TAG_CLOCK,
    RELAY_TAG_BEAT,
    RELAY_TAG_PING,
    RELAY_TAG_PONG,
    RELAY_TAG_OFFSET
};

/* Times on CLOCK_MONOTONIC (probe_now_ns) are at least 0 and at most this
 * (73 years after a boot); a clock offset is at most this either way. So
 * a time plus an offset never overflows, nor does the difference of two. */
#define RELAY_TIME_MAX_NS (1LL << 61)
/* the most bytes one collective moves, or one rank holds: 1 PiB */
#define RELAY_BYTES_MAX (1ULL << 50)
/* the most layers a stage may name */
#define RELAY_LAYERS_MAX (1 << 20)

/* What leads every record message: whose, which ring (enum rank_ring),
 * the records lost to full rings on the worker so far, and the device
 * memory the rank holds (the Ranks pane's mem and peak, live). */
struct relay_hdr {
    int32_t rank, ring;
    uint64_t dropped;
    int64_t mem_now, mem_peak;
};

/* A rank's end, and what the report reads of a rank after the run. */
struct relay_done {
    int32_t rank, rc;
    int32_t stage_first, stage_end;
    double stage_mem[SMEM_KINDS];
    int64_t mem_now, mem_peak; /* its device memory (struct device_mem) */
    int64_t fail_ns;           /* rc -1: when it failed, on the sender's clock (0: not known); rc 0: 0 */
    char dev[64];
    char err[256];
};

struct relay_ctrl {
    int32_t what; /* enum relay_ctrl_kind */
    uint32_t at;  /* RELAY_PAUSE: the step the ranks stop before */
};

/* What a message may say, from whom. */
struct relay_limits {
    int world;            /* ranks in the run */
    int per;              /* ranks per process: process p speaks for ranks [p*per, (p+1)*per) */
    int proc;             /* the sender */
    int64_t add_ns;       /* the sender's clock offset (added to its times) */
    int64_t lo_ns, hi_ns; /* its records' times, offset added, lie within (process 0's clock) */
};

/* What process 0 has taken from each rank so far: [world] each. */
struct relay_seen {
    int64_t *next_step; /* the least step its next step record may hold */
    unsigned char *done;
};

/* A message, checked. Records (spans, steps, epochs) are `n` of them at
 * `recs`, inside the message (not copied, not yet offset). */
struct relay_in {
    int tag;
    struct relay_hdr hdr; /* SPANS, STEPS, EPOCHS */
    unsigned char *recs;
    size_t n;
    struct relay_done done; /* DONE */
    int64_t offset[2];      /* OFFSET: the sender's clock offset and its error bound */
};

/* Checks msg[0..len), a message with tag from process lim->proc to
 * process 0, and fills *in. 0, or -1 with err saying what was wrong, in
 * words that follow "process P sent ". `seen` is updated only when the
 * message passes. */
int relay_decode(int tag, unsigned char *msg, size_t len, const struct relay_limits *lim, struct relay_seen *seen,
                 struct relay_in *in, char *err, size_t errlen);
/* A clock reading from a peer (RELAY_TAG_CLOCK, RELAY_TAG_PONG: one
 * int64): 0 with *t, or -1 with err. */
int relay_decode_time(const unsigned char *msg, size_t len, int64_t *t, char *err, size_t errlen);
/* Process 0's word to a worker (RELAY_TAG_CTRL): 0 with *c, or -1. */
int relay_decode_ctrl(const unsigned char *msg, size_t len, struct relay_ctrl *c, char *err, size_t errlen);

#endif
