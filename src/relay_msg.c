/* relay_msg.c - the relay's one decoder (see relay_msg.h). */
#include "relay_msg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "procs.h"
#include "run.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A string field of n bytes: NUL-terminated inside, and no control
 * character (it reaches the user's terminal). */
static int text_ok(const char *s, size_t n)
{
    const char *end = memchr(s, 0, n);
    if (!end)
        return 0;
    for (const unsigned char *c = (const unsigned char *)s; c < (const unsigned char *)end; c++)
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    return 1;
}

static int time_ok(int64_t t)
{
    return t >= 0 && t <= RELAY_TIME_MAX_NS;
}

/* t0 and t1 of a record: on the clock's scale, in order, and with the
 * sender's offset inside the run's window. 0, or -1 with err. */
static int times_ok(const char *what, size_t i, int64_t t0, int64_t t1, const struct relay_limits *lim, char *err,
                    size_t errlen)
{
    if (!time_ok(t0) || !time_ok(t1))
        return fail(err, errlen, "%s %zu with a time off the clock (t0 %lld ns, t1 %lld ns)", what, i, (long long)t0,
                    (long long)t1);
    if (t1 < t0)
        return fail(err, errlen, "%s %zu that ends before it starts (t0 %lld ns, t1 %lld ns)", what, i, (long long)t0,
                    (long long)t1);
    /* (both within RELAY_TIME_MAX_NS, as the offset is: no overflow) */
    if (t0 + lim->add_ns < lim->lo_ns || t1 + lim->add_ns > lim->hi_ns)
        return fail(err, errlen, "%s %zu outside the run (%.3f s to %.3f s on process 0's clock)", what, i,
                    (double)(t0 + lim->add_ns) / 1e9, (double)(t1 + lim->add_ns) / 1e9);
    return 0;
}

static int bytes_ok(double b)
{
    return isfinite(b) && b >= 0 && b <= (double)RELAY_BYTES_MAX;
}

static int span_ok(const struct span *s, size_t i, const struct relay_limits *lim, char *err, size_t errlen)
{
    if (times_ok("span", i, s->t0_ns, s->t1_ns, lim, err, errlen) != 0)
        return -1;
    if (s->lane >= LANE_COUNT || s->cat >= CAT_COUNT || s->coll >= COLL_COUNT || s->outer > 1 || s->name >= PROBE_NAMES)
        return fail(err, errlen, "span %zu of no known kind (lane %u, category %u, collective %u, outer %u, name %u)",
                    i, s->lane, s->cat, s->coll, s->outer, s->name);
    if (s->bytes > RELAY_BYTES_MAX || s->bytes_rx > RELAY_BYTES_MAX || s->size > RELAY_BYTES_MAX)
        return fail(err, errlen, "span %zu of more than %llu bytes", i, (unsigned long long)RELAY_BYTES_MAX);
    return 0;
}

static int step_ok(const struct step_rec *s, size_t i, int64_t *next, const struct relay_limits *lim, char *err,
                   size_t errlen)
{
    if (times_ok("step record", i, s->t0_ns, s->t1_ns, lim, err, errlen) != 0)
        return -1;
    if ((int64_t)s->step < *next)
        return fail(err, errlen, "step record %zu out of order (step %u after step %lld)", i, s->step,
                    (long long)*next - 1);
    if (s->n < 0 || s->correct < 0 || s->correct > s->n || s->epoch > (1u << 24))
        return fail(err, errlen, "step record %zu with counts out of range (epoch %u, %d correct of %d)", i, s->epoch,
                    s->correct, s->n);
    if (s->desched_ns < -1 || s->desched_ns > RELAY_TIME_MAX_NS || s->untraced > 1 || s->skipped > 1 ||
        !isfinite(s->lr) || !isfinite(s->loss_scale) || s->loss_scale < 0)
        return fail(err, errlen, "step record %zu with a field out of range", i);
    *next = (int64_t)s->step + 1;
    return 0;
}

static int epoch_ok(const struct epoch_rec *e, size_t i, char *err, size_t errlen)
{
    if (e->epoch < 0 || e->total < 0 || e->correct < 0 || e->correct > e->total)
        return fail(err, errlen, "epoch record %zu with counts out of range (epoch %d, %d correct of %d)", i, e->epoch,
                    e->correct, e->total);
    return 0;
}

/* The rank a message speaks for: one of the sender's own. */
static int rank_ok(int32_t rank, const struct relay_limits *lim, char *err, size_t errlen)
{
    int64_t first = (int64_t)lim->proc * lim->per, end = first + lim->per;
    if (rank < first || rank >= end || rank >= lim->world)
        return fail(err, errlen, "a message for rank %d, not one of its own (%lld to %lld)", rank, (long long)first,
                    (long long)(end < lim->world ? end : lim->world) - 1);
    return 0;
}

static int done_ok(const struct relay_done *d, const struct relay_limits *lim, struct relay_seen *seen, char *err,
                   size_t errlen)
{
    if (rank_ok(d->rank, lim, err, errlen) != 0)
        return -1;
    if (seen->done[d->rank])
        return fail(err, errlen, "rank %d's end twice", d->rank);
    if (!text_ok(d->err, sizeof(d->err)) || !text_ok(d->dev, sizeof(d->dev)))
        return fail(err, errlen, "rank %d's end with a %s that is not a line of text", d->rank,
                    text_ok(d->dev, sizeof(d->dev)) ? "message" : "device name");
    if (d->rc != 0 && d->rc != -1)
        return fail(err, errlen, "rank %d's end with status %d", d->rank, d->rc);
    /* (its failure's time decides which rank process 0 names) */
    if (d->fail_ns != 0 && (d->rc == 0 || !time_ok(d->fail_ns) || d->fail_ns + lim->add_ns < lim->lo_ns ||
                            d->fail_ns + lim->add_ns > lim->hi_ns))
        return fail(err, errlen, "rank %d's end with a failure time off the clock (%lld ns%s)", d->rank,
                    (long long)d->fail_ns, d->rc == 0 ? ", and no failure" : "");
    if (d->stage_first < 0 || d->stage_end < d->stage_first || d->stage_end > RELAY_LAYERS_MAX)
        return fail(err, errlen, "rank %d's end with a stage of layers %d to %d", d->rank, d->stage_first,
                    d->stage_end);
    int mem = d->mem_now >= 0 && d->mem_peak >= 0 && (uint64_t)d->mem_now <= RELAY_BYTES_MAX &&
              (uint64_t)d->mem_peak <= RELAY_BYTES_MAX;
    for (int k = 0; k < SMEM_KINDS; k++)
        mem = mem && bytes_ok(d->stage_mem[k]);
    if (!mem)
        return fail(err, errlen, "rank %d's end with memory out of range", d->rank);
    return 0;
}

/* len bytes of n records of size rec after the header. */
static int records(const char *what, size_t len, size_t rec, size_t *n, char *err, size_t errlen)
{
    size_t body = len - sizeof(struct relay_hdr);
    if (body % rec != 0)
        return fail(err, errlen, "%s of %zu bytes, not a whole number of records (%zu bytes each)", what, body, rec);
    *n = body / rec;
    return 0;
}

int relay_decode(int tag, unsigned char *msg, size_t len, const struct relay_limits *lim, struct relay_seen *seen,
                 struct relay_in *in, char *err, size_t errlen)
{
    memset(in, 0, sizeof(*in));
    in->tag = tag;
    if (len > 0 && !msg)
        return fail(err, errlen, "a message with no bytes");
    switch (tag) {
    case RELAY_TAG_BEAT:
    case RELAY_TAG_PING:
        return 0; /* (nothing in them is read) */
    case RELAY_TAG_OFFSET:
        if (len != sizeof(in->offset))
            return fail(err, errlen, "a clock offset of %zu bytes (%zu expected)", len, sizeof(in->offset));
        memcpy(in->offset, msg, sizeof(in->offset));
        if (in->offset[0] < -RELAY_TIME_MAX_NS || in->offset[0] > RELAY_TIME_MAX_NS || !time_ok(in->offset[1]))
            return fail(err, errlen, "a clock offset out of range (%lld ns, within %lld ns)", (long long)in->offset[0],
                        (long long)in->offset[1]);
        return 0;
    case RELAY_TAG_DONE:
        if (len != sizeof(in->done))
            return fail(err, errlen, "a rank's end of %zu bytes (%zu expected)", len, sizeof(in->done));
        memcpy(&in->done, msg, sizeof(in->done));
        if (done_ok(&in->done, lim, seen, err, errlen) != 0)
            return -1;
        seen->done[in->done.rank] = 1;
        return 0;
    case RELAY_TAG_SPANS:
    case RELAY_TAG_STEPS:
    case RELAY_TAG_EPOCHS:
        break;
    default:
        return fail(err, errlen, "a message of unknown kind (tag %d, %zu bytes)", tag, len);
    }
    if (len < sizeof(in->hdr))
        return fail(err, errlen, "records of %zu bytes, shorter than their header", len);
    memcpy(&in->hdr, msg, sizeof(in->hdr));
    const struct relay_hdr *h = &in->hdr;
    if (rank_ok(h->rank, lim, err, errlen) != 0)
        return -1;
    if (seen->done[h->rank])
        return fail(err, errlen, "records for rank %d after its end", h->rank);
    if (h->ring < 0 || h->ring >= RANK_RINGS || h->dropped > RELAY_BYTES_MAX || h->mem_now < 0 || h->mem_peak < 0 ||
        (uint64_t)h->mem_now > RELAY_BYTES_MAX || (uint64_t)h->mem_peak > RELAY_BYTES_MAX)
        return fail(err, errlen, "records for rank %d with a header out of range (ring %d)", h->rank, h->ring);
    in->recs = msg + sizeof(in->hdr);
    if (tag == RELAY_TAG_SPANS) {
        if (records("spans", len, sizeof(struct span), &in->n, err, errlen) != 0)
            return -1;
        for (size_t i = 0; i < in->n; i++) {
            struct span s;
            memcpy(&s, in->recs + i * sizeof(s), sizeof(s));
            if (span_ok(&s, i, lim, err, errlen) != 0)
                return -1;
        }
    } else if (tag == RELAY_TAG_STEPS) {
        if (records("step records", len, sizeof(struct step_rec), &in->n, err, errlen) != 0)
            return -1;
        int64_t next = seen->next_step[h->rank];
        for (size_t i = 0; i < in->n; i++) {
            struct step_rec s;
            memcpy(&s, in->recs + i * sizeof(s), sizeof(s));
            if (step_ok(&s, i, &next, lim, err, errlen) != 0)
                return -1;
        }
        seen->next_step[h->rank] = next;
    } else {
        if (records("epoch records", len, sizeof(struct epoch_rec), &in->n, err, errlen) != 0)
            return -1;
        for (size_t i = 0; i < in->n; i++) {
            struct epoch_rec e;
            memcpy(&e, in->recs + i * sizeof(e), sizeof(e));
            if (epoch_ok(&e, i, err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

int relay_decode_time(const unsigned char *msg, size_t len, int64_t *t, char *err, size_t errlen)
{
    if (len != sizeof(*t) || !msg)
        return fail(err, errlen, "a clock reading of %zu bytes (%zu expected)", len, sizeof(*t));
    memcpy(t, msg, sizeof(*t));
    if (!time_ok(*t))
        return fail(err, errlen, "a clock reading off the clock (%lld ns)", (long long)*t);
    return 0;
}

int relay_decode_ctrl(const unsigned char *msg, size_t len, struct relay_ctrl *c, char *err, size_t errlen)
{
    if (len != sizeof(*c) || !msg)
        return fail(err, errlen, "a word on the run of %zu bytes (%zu expected)", len, sizeof(*c));
    memcpy(c, msg, sizeof(*c));
    if (c->what < RELAY_NONE || c->what > RELAY_RESUME)
        return fail(err, errlen, "a word on the run of no known kind (%d)", c->what);
    return 0;
}
