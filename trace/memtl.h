/* memtl.h - the memory timeline of a foreign (PyTorch profiler) trace's
 * rank, per device, from its [memory] events.
 *
 * PyTorch's profiler with profile_memory=True writes an instant event
 * named "[memory]" for each allocation and free of a device's caching
 * allocator: args.Bytes (negative when freed), "Total Allocated" and
 * "Total Reserved" after it, and the device ("Device Type", "Device Id").
 * HTA reads none of them; the figures here are ddptop's own.
 *
 * Which events count: those of a device other than the CPU (Device Type
 * 0, whose figures are the host's allocator, not a device's), in each of
 * the rank's windows (a profiler cycle, one file) from its first
 * ProfilerStep's start to its last one's end, ends included, every step
 * counted (memory is a state: leaving --window's step out would lose
 * where the next began). A window without ProfilerSteps counts all its
 * events. The rest are outside (memtl_table.outside). Events are taken in
 * time order, ties in file order (trace_read sorts each window's): a
 * profiler may write one out of order, and each total follows the event
 * before it in time.
 *
 * Per device (bytes throughout; times in ns):
 *  - events: the events counted;
 *  - start_bytes: allocated before the first of them (its Total Allocated
 *    less its Bytes), end_bytes: after the last (its Total Allocated);
 *  - peak_bytes: the most allocated at any moment, just before an event
 *    or just after it (a free's before is the higher), peak_at_ns that
 *    event's time when it was first reached, on the trace's clock, and
 *    peak_step the ProfilerStep it fell in (-1: between steps or none);
 *    reserved_peak_bytes: the most Total Reserved;
 *  - alloc_bytes, freed_bytes: the Bytes of allocations, and of frees
 *    (as a positive sum);
 *  - steps: per ProfilerStep that holds an event of the device, its peak
 *    read as peak_bytes over its events (the allocated at the step's start
 *    is its first event's before), by step number; MEMTL_STEPS at most, the rest counted in
 *    steps_dropped.
 * origin_ns is the rank's first step's start (the first window's; its
 * first counted event where it has no steps): peak_at_ns - origin_ns says
 * when the peak came, on a trace whose windows share a clock (Kineto's).
 *
 * Windows add up in order (memtl_table_add), so a followed job's table,
 * each cycle's added as it lands, is the one a replay of its files gives.
 */
#ifndef DDPTOP_MEMTL_H
#define DDPTOP_MEMTL_H

#include <stdint.h>

#include "trace_read.h"

#define MEMTL_DEVICES 8 /* devices per rank kept; the rest counted */
#define MEMTL_STEPS 64  /* per-step peaks kept per device */

struct memtl_step {
    uint32_t step;      /* ProfilerStep#N's N */
    int64_t peak_bytes; /* the most allocated during it */
};

struct memtl_device {
    int dev_type, dev_id; /* as the events name it (c10's DeviceType, index) */
    uint64_t events;
    int64_t start_bytes, end_bytes;
    int64_t peak_bytes, peak_at_ns;
    int64_t peak_step; /* -1: the peak fell outside every step */
    int64_t reserved_peak_bytes;
    uint64_t alloc_bytes, freed_bytes;
    int nsteps;
    int steps_dropped;
    struct memtl_step steps[MEMTL_STEPS]; /* by step number */
};

struct memtl_table {
    int n;
    struct memtl_device dev[MEMTL_DEVICES]; /* by device type, then index */
    int dropped;                            /* devices past MEMTL_DEVICES */
    uint64_t outside;                       /* device events outside the windows' steps */
    uint64_t host;                          /* the CPU's events, left out */
    int origin_valid;
    int64_t origin_ns;
};

/* r's table: each of its windows' in order, added. */
void memtl_table_rank(struct memtl_table *out, const struct trace_rank *r);
/* Adds src, a later window's (or cycle's) table, to dst. */
void memtl_table_add(struct memtl_table *dst, const struct memtl_table *src);
/* A device's name in the reports: "cuda:0", "cpu", "type7:0". */
void memtl_device_name(char *out, int len, int dev_type, int dev_id);

#endif
