/* trace_writer.h - a streaming writer of Chrome trace-event JSON.
 *
 * The file is written as
 *     {<header fields>,"traceEvents":[
 *     {event}
 *     ,{event}
 *     ...
 *     ]<footer fields>}
 * one event per line. Events are built into a memory batch and the batch is
 * handed to the kernel (write(2), or zlib with a sync flush for .gz) only
 * whole: after every event once the batch holds TRACE_WRITER_BATCH bytes, on
 * trace_writer_flush, and at close. So the file on disk is always the header
 * followed by whole event lines; a process killed between two batches leaves
 * a prefix that trace_read (and any reader that accepts a missing "]}")
 * loads up to its last complete event. A batch cut by SIGKILL in the middle
 * of its write(2) leaves at most one partial last line, which readers drop.
 *
 * Errors (a full disk, an I/O error) are not fatal: the writer records the
 * first one with its context, stops writing, and every later call is a cheap
 * no-op. The caller asks trace_writer_error() when it wants to report it.
 *
 * Times are given in nanoseconds and written as microseconds with three
 * decimals, so nothing is lost. Not thread-safe: one writer, one thread.
 */
#ifndef DDPTOP_TRACE_WRITER_H
#define DDPTOP_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_WRITER_BATCH (256u * 1024u) /* bytes per write */

struct trace_writer;

/* Opens path for writing (gzip when it ends in ".gz") and writes `header`,
 * the text between the opening '{' and "traceEvents" (e.g.
 * "\"displayTimeUnit\":\"ms\",", may be ""). Returns 0, or -1 with err set. */
int trace_writer_open(struct trace_writer **out, const char *path, const char *header, char *err, size_t errlen);
/* Writes `footer` (fields after the events, starting with ',' or "") and
 * "]...}", flushes and closes. Returns 0, or -1 with err naming the file
 * and what went wrong (the first error of the writer's life). Frees w. */
int trace_writer_close(struct trace_writer *w, const char *footer, char *err, size_t errlen);
/* Hands the current batch to the kernel now. Returns 0 or -1 (failed). */
int trace_writer_flush(struct trace_writer *w);
/* NULL while healthy, else the first error, naming the file. */
const char *trace_writer_error(const struct trace_writer *w);
uint64_t trace_writer_events(const struct trace_writer *w);
uint64_t trace_writer_bytes(const struct trace_writer *w); /* handed to the kernel, uncompressed */
const char *trace_writer_path(const struct trace_writer *w);

/* ---- building one event: begin, optional fields, optional args, end ---- */
/* ph is the phase letter ('X', 'M', 'C', 'i', 's', 'f'); name and cat may be
 * NULL (cat is then left out). pid and tid are numbers. */
void trace_writer_begin(struct trace_writer *w, char ph, const char *name, const char *cat, int64_t pid, int64_t tid,
                        int64_t ts_ns);
/* The same without "ts" (metadata events). */
void trace_writer_begin_meta(struct trace_writer *w, const char *name, int64_t pid, int64_t tid);
void trace_writer_dur(struct trace_writer *w, int64_t dur_ns);
/* A raw top-level field: "key":"val" or "key":v. */
void trace_writer_field_str(struct trace_writer *w, const char *key, const char *val);
void trace_writer_field_i64(struct trace_writer *w, const char *key, int64_t v);
/* "args":{...}: call args_begin, then any arg_*, then args_end. */
void trace_writer_args_begin(struct trace_writer *w);
void trace_writer_arg_str(struct trace_writer *w, const char *key, const char *val);
void trace_writer_arg_i64(struct trace_writer *w, const char *key, int64_t v);
void trace_writer_arg_u64(struct trace_writer *w, const char *key, uint64_t v);
void trace_writer_arg_f64(struct trace_writer *w, const char *key, double v);  /* %.9g; NaN/inf as null */
void trace_writer_arg_us(struct trace_writer *w, const char *key, int64_t ns); /* ns as us.ddd */
void trace_writer_args_end(struct trace_writer *w);
/* Ends the event; flushes the batch when it is full. */
void trace_writer_end(struct trace_writer *w);

/* Appends a JSON string literal (quoted, escaped) of s to buf (at most cap
 * bytes including the NUL); returns the length it needs. For the header. */
size_t trace_writer_quote(char *buf, size_t cap, const char *s);

#endif
