/* wire.h - messages between a job's processes without MPI.
 *
 * Processes started without mpirun (each by hand, by a shell loop, by a
 * scheduler's own launcher) meet through a folder they share, as gloo's
 * file store does (--rendezvous file:DIR): process 0 listens on a TCP port
 * and puts its address in DIR; every other process reads it there,
 * connects, and says which rank it is. What procs.c sends between
 * processes (a run's configuration, every rank's records to process 0,
 * the clock's ping-pong) goes between process 0 and one worker at a time,
 * so the connections are a star around process 0.
 *
 * Or they meet at an address (--rendezvous tcp:HOST:PORT, as torchrun's
 * MASTER_ADDR and MASTER_PORT): process 0 listens on PORT, and every
 * other process connects to HOST:PORT. With no folder to hold a secret,
 * the job's key is the user's (DDPTOP_JOB_KEY, the same in every
 * process); there is always one.
 *
 * Process 0 takes connections as they come, all at once: each has a few
 * seconds to say its hello (24 bytes, read and no more) before it is
 * dropped, so that connections that say nothing, or say it a byte at a
 * time, cannot keep a worker out; one that does not give the job's key is
 * closed without a word (a stranger learns nothing of the job), and a
 * second process saying a rank already taken is turned away, the job
 * going on. Once joined, a process's messages queue on the other side up
 * to WIRE_QUEUE_MAX bytes not yet taken (one longer message alone); past
 * that its connection is not read until some are taken, so a peer that
 * sends without end is held back, not kept in memory.
 *
 * A message has a channel (as an MPI communicator: the runs' word, the
 * relay), a tag and a length. A thread of each process reads its
 * connections as bytes arrive and queues whole messages; wire_take takes
 * the first queued one that matches, as MPI's matched probe does, and the
 * messages from one process on one channel come in the order sent. A
 * peer that closes its end (it ended, or was killed) is seen at once. */
#ifndef DDPTOP_WIRE_H
#define DDPTOP_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum { WIRE_ANY = -1 };
/* the longest message: a relay's batch of records is far shorter; this
 * only stops a corrupt length from asking for the machine's memory */
#define WIRE_MAX_LEN (256u << 20)
/* the bytes of one process's messages queued and not yet taken, beyond
 * which its connection waits (see above) */
#define WIRE_QUEUE_MAX (64u << 20)

struct wire;

struct wire_msg {
    int src, chan, tag;
    size_t len;
    unsigned char *data; /* malloc'd; the taker frees it */
};

/* Joins the job of `size` processes meeting in dir, as process `rank`,
 * within timeout_s. job names the meeting within dir (several jobs may
 * share one folder). Process 0 listens at bind, an IPv4 address ("0.0.0.0":
 * every interface), or with NULL on loopback (127.0.0.1: a job of one
 * node), and puts that address in dir (every interface: its host name).
 * NULL with err set: dir is not a folder this user alone can write, bind
 * is no address, a process did not come in time (named), this process's
 * rank was another's already. */
struct wire *wire_open(const char *dir, const char *job, int rank, int size, double timeout_s, const char *bind,
                       char *err, size_t errlen);
/* The same, meeting at host:port (IPv4): process 0 listens on port at
 * bind, or with NULL on every interface (loopback when host is
 * "localhost" or a 127.x.y.z address). key: the job's, never 0. NULL with
 * err set, also: no key, port taken, or process 0 not there within
 * timeout_s (host's name not resolving, the port refusing or not
 * answering, or closing without an answer as it does a process of
 * another key: the last reason said). */
struct wire *wire_open_tcp(const char *host, int port, uint64_t key, int rank, int size, double timeout_s,
                           const char *bind, char *err, size_t errlen);
/* A job key from a user's text (DDPTOP_JOB_KEY): 0 for NULL or "". */
uint64_t wire_key_of(const char *text);
int wire_rank(const struct wire *w);
int wire_size(const struct wire *w);

/* Sends len bytes to process dst (process 0, or from process 0 any
 * worker). 0, or -1 when dst's connection is gone. */
int wire_send(struct wire *w, int dst, int chan, int tag, const void *buf, size_t len);

/* The first queued message from src (or WIRE_ANY) on chan with tag (or
 * WIRE_ANY), waiting up to timeout_ms (0: not at all, -1: for ever).
 * 1 with *m filled; 0 when none came in time; -1 when none can come: src's
 * connection is gone (for WIRE_ANY: every connection). */
int wire_take(struct wire *w, int src, int chan, int tag, int timeout_ms, struct wire_msg *m);

/* Frees every queued message on chan, or only those with tag. */
void wire_drop(struct wire *w, int chan);
void wire_drop_tag(struct wire *w, int chan, int tag);
/* chan's use is over: its queued messages go, and any that come later
 * are let go as they arrive (not kept, untaken, in a peer's queue). */
void wire_retire(struct wire *w, int chan);

/* 1 while process p's connection (a worker: process 0's) is open. */
int wire_alive(struct wire *w, int p);

/* Closes every connection (the peers see it at once) and frees w. */
void wire_close(struct wire *w);

/* The wire's own fixed parts as they come off a connection, checked
 * before any of them is used (a test and a fuzzer reach them from bytes;
 * what a peer says inside a message is its taker's to check: relay_msg.h).
 * Each returns 0 with the fields, or -1: not this protocol's, or a field
 * out of range. */
#define WIRE_FRAME_BYTES 16 /* what leads every message */
#define WIRE_HELLO_BYTES 24 /* a worker's word on joining */
#define WIRE_ANSWER_BYTES 16
/* A frame: its channel and tag (at least 0) and its length (at most
 * WIRE_MAX_LEN). */
int wire_decode_frame(const void *b, size_t n, int *chan, int *tag, uint32_t *len);
/* A worker's hello: its rank and job size as said (the caller compares
 * them with its job's), and the job's nonce. */
int wire_decode_hello(const void *b, size_t n, int *rank, int *size, uint64_t *nonce);
/* Process 0's answer to a hello with the job's key (to any other, none):
 * one of its words (accepted, refused as a misfit, refused as a second
 * process of a rank it has) and its job's size (at least 1). */
enum { WIRE_ANSWER_MISFIT = 0, WIRE_ANSWER_OK = 1, WIRE_ANSWER_TAKEN = 2 };
int wire_decode_answer(const void *b, size_t n, int *ok, int *size);

#endif
