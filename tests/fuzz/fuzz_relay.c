/* fuzz_relay.c - libFuzzer target: what process 0 takes from a worker
 * (relay_decode, src/relay_msg.h) and the wire's own fixed parts
 * (wire_decode_frame, _hello, _answer, src/wire.h), from bytes a peer
 * could send.
 *
 * An input is a sequence of messages, each one byte that picks the
 * decoder (and the relay's tag), two of length (little-endian), then the
 * bytes, so that a run reaches the decoder's state across messages (steps
 * in order, a rank's end once, nothing of it after). The job: 3
 * processes of 2 ranks, the sender process 1 (ranks 2 and 3), its clock
 * 5 s behind, the run from 100 s to 10000 s on process 0's clock.
 *
 * Oracles of its own, over what a decoder passed: a rank's end names one
 * of the sender's ranks, once, with NUL-terminated text; every record is
 * inside the message; every span and step, offset, lies within the run in
 * order, of a known lane, category and collective; steps increase; and
 * what process 0 then computes of them (durations, the offset added) is
 * computed here, where UBSan sees any overflow. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procs.h"
#include "relay_msg.h"
#include "run.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_NS 1000000000LL

static const struct relay_limits lim = {
    .world = 6, .per = 2, .proc = 1, .add_ns = 5 * S_NS, .lo_ns = 100 * S_NS, .hi_ns = 10000 * S_NS};

#define CHECK(c)                                                                                                       \
    do {                                                                                                               \
        if (!(c))                                                                                                      \
            abort();                                                                                                   \
    } while (0)

static volatile int64_t sink;

static void passed(const struct relay_in *in, const unsigned char *msg, size_t len, int64_t *last_step,
                   const unsigned char *done_before)
{
    if (in->tag == RELAY_TAG_DONE) {
        const struct relay_done *d = &in->done;
        CHECK(d->rank >= 2 && d->rank <= 3 && !done_before[d->rank]);
        CHECK(memchr(d->err, 0, sizeof(d->err)) && memchr(d->dev, 0, sizeof(d->dev)));
        CHECK(d->stage_first >= 0 && d->stage_first <= d->stage_end);
        CHECK(d->fail_ns == 0 || (d->rc == -1 && d->fail_ns >= 0));
        return;
    }
    if (in->tag != RELAY_TAG_SPANS && in->tag != RELAY_TAG_STEPS && in->tag != RELAY_TAG_EPOCHS)
        return;
    CHECK(in->hdr.rank >= 2 && in->hdr.rank <= 3 && !done_before[in->hdr.rank]);
    CHECK(in->hdr.ring >= 0 && in->hdr.ring < RANK_RINGS);
    size_t rec = in->tag == RELAY_TAG_SPANS   ? sizeof(struct span)
                 : in->tag == RELAY_TAG_STEPS ? sizeof(struct step_rec)
                                              : sizeof(struct epoch_rec);
    CHECK(in->recs == msg + sizeof(struct relay_hdr) && sizeof(struct relay_hdr) + in->n * rec == len);
    for (size_t i = 0; i < in->n; i++) {
        if (in->tag == RELAY_TAG_SPANS) {
            struct span s;
            memcpy(&s, in->recs + i * rec, sizeof(s));
            int64_t t0 = s.t0_ns + lim.add_ns, t1 = s.t1_ns + lim.add_ns;
            CHECK(t0 >= lim.lo_ns && t1 <= lim.hi_ns && t1 - t0 >= 0);
            CHECK(s.lane < LANE_COUNT && s.cat < CAT_COUNT && s.coll < COLL_COUNT);
            sink += t1 - t0 + (int64_t)(s.bytes + s.bytes_rx);
        } else if (in->tag == RELAY_TAG_STEPS) {
            struct step_rec s;
            memcpy(&s, in->recs + i * rec, sizeof(s));
            int64_t t0 = s.t0_ns + lim.add_ns, t1 = s.t1_ns + lim.add_ns;
            CHECK(t0 >= lim.lo_ns && t1 <= lim.hi_ns && t1 - t0 >= 0);
            CHECK((int64_t)s.step > last_step[in->hdr.rank]);
            CHECK(s.correct >= 0 && s.correct <= s.n);
            last_step[in->hdr.rank] = s.step;
            sink += t1 - t0;
        } else {
            struct epoch_rec e;
            memcpy(&e, in->recs + i * rec, sizeof(e));
            CHECK(e.correct >= 0 && e.correct <= e.total);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t next_step[6] = {0}, last_step[6] = {-1, -1, -1, -1, -1, -1};
    unsigned char done[6] = {0}, done_before[6];
    struct relay_seen seen = {next_step, done};
    char err[256];
    size_t at = 0;
    while (at + 3 <= size) {
        int pick = data[at];
        size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
        at += 3;
        if (len > size - at)
            len = size - at;
        /* (a copy of its own, as a message is: ASan sees a read past it) */
        unsigned char *msg = malloc(len ? len : 1);
        if (!msg)
            return 0;
        memcpy(msg, data + at, len);
        at += len;
        if (pick < 0xf0) {
            struct relay_in in;
            memcpy(done_before, done, sizeof(done));
            int tag = pick % 12;
            if (relay_decode(tag, msg, len, &lim, &seen, &in, err, sizeof(err)) == 0)
                passed(&in, msg, len, last_step, done_before);
            else
                CHECK(memchr(err, 0, sizeof(err)) && err[0]);
        } else if (pick < 0xf4) {
            int64_t t;
            if (relay_decode_time(msg, len, &t, err, sizeof(err)) == 0)
                CHECK(t >= 0 && t <= RELAY_TIME_MAX_NS);
            struct relay_ctrl c;
            if (relay_decode_ctrl(msg, len, &c, err, sizeof(err)) == 0)
                CHECK(c.what >= RELAY_NONE && c.what <= RELAY_RESUME);
        } else {
            int chan, tag, rank, n, ok;
            uint32_t flen;
            uint64_t nonce;
            if (wire_decode_frame(msg, len, &chan, &tag, &flen) == 0)
                CHECK(len == WIRE_FRAME_BYTES && chan >= 0 && tag >= 0 && flen <= WIRE_MAX_LEN);
            if (wire_decode_hello(msg, len, &rank, &n, &nonce) == 0)
                CHECK(len == WIRE_HELLO_BYTES);
            if (wire_decode_answer(msg, len, &ok, &n) == 0)
                CHECK(len == WIRE_ANSWER_BYTES && ok >= WIRE_ANSWER_MISFIT && ok <= WIRE_ANSWER_TAKEN && n >= 1);
        }
        free(msg);
    }
    return 0;
}
