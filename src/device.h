/* device.h - the compute device a rank runs on, behind one const table of
 * function pointers per backend (cpu, cuda).
 *
 * The training loop touches memory and ordering only through these calls:
 * allocation, host<->device copies on a stream, and events between streams.
 * On the CPU they are plain memory operations and no-ops, but the loop is
 * written as if they were asynchronous, so the CUDA backend plugs in without
 * changing it.
 */
#ifndef DDPTOP_DEVICE_H
#define DDPTOP_DEVICE_H

#include <stddef.h>

enum dev_stream { STREAM_COMPUTE = 0, STREAM_COPY, STREAM_COMM, STREAM_COUNT };
/* The events a rank uses: its batch staged on the copy stream, the staging
 * buffer free again, gradients complete before a synchronisation, the comm
 * stream's copies done before compute reads them, and one
 * per DDP bucket (bucket b uses EV_BUCKET0 + b % DEV_BUCKET_EVENTS: a later
 * bucket re-recording an event only makes a wait wait longer, never less). */
enum dev_event { EV_STAGED = 0, EV_STAGE_FREE, EV_GRADS, EV_COMM_DONE, EV_BUCKET0, DEV_MAX_EVENTS = 64 };
#define DEV_BUCKET_EVENTS (DEV_MAX_EVENTS - EV_BUCKET0)

struct device;

struct device_ops {
    const char *name;
    /* How many devices of this kind are usable now (0 when none). */
    int (*count)(void);
    int (*open)(struct device *d, int index, char *err, size_t errlen);
    void (*close)(struct device *d);
    void *(*alloc)(struct device *d, size_t bytes);
    void (*free)(struct device *d, void *p);
    /* Host memory suited to fast copies (pinned on CUDA). */
    void *(*alloc_host)(struct device *d, size_t bytes);
    void (*free_host)(struct device *d, void *p);
    int (*copy_h2d)(struct device *d, void *dst, const void *src, size_t bytes, int stream);
    int (*copy_d2h)(struct device *d, void *dst, const void *src, size_t bytes, int stream);
    int (*copy_d2d)(struct device *d, void *dst, const void *src, size_t bytes, int stream);
    /* Makes the device current for the calling thread (a comm lane, or the
     * collector before it frees a rank's buffers). */
    int (*make_current)(struct device *d);
    /* Event `ev` marks the current end of `stream`; wait_event makes `stream`
     * wait for it; sync blocks the host until `stream` is idle. */
    int (*record_event)(struct device *d, int ev, int stream);
    int (*wait_event)(struct device *d, int ev, int stream);
    int (*sync)(struct device *d, int stream);
    /* 1: calls only enqueue work (CUDA); 0: they are done on return (CPU). */
    int async;
};

struct device {
    const struct device_ops *ops;
    int rank; /* the rank using it, for error messages */
    int index;
    char name[64]; /* "cpu" or "cuda:0" */
    void *impl;
};

extern const struct device_ops device_cpu;
/* The CPU through the asynchronous path of the rank loop (tests). */
extern const struct device_ops device_cpu_staged;
/* The last error of a device call on this thread, naming the call, the rank
 * and the device: "rank 1 (cuda:0): cudaMalloc: out of memory". */
const char *device_last_error(void);
void device_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NULL when ddptop was built without CUDA. */
extern const struct device_ops *const device_cuda;
#ifdef DDPTOP_HAVE_CUDA
/* The cudaStream_t behind a device stream (device_cuda.c). */
void *device_cuda_stream(struct device *d, int stream);
#endif

/* Picks the backend for a --device choice; *note receives a one-line remark
 * to show once (e.g. "no GPU found; running on CPU"), or "". Returns NULL
 * with err set when the choice cannot be honoured. */
const struct device_ops *device_select(int choice, char *note, size_t notelen, char *err, size_t errlen);

#endif
