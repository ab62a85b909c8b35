/* trace_read.h - loading Chrome trace-event JSON for replay: ddptop's own
 * traces, PyTorch profiler (Kineto) traces, and the older autograd
 * profiler's bare JSON arrays; plain or gzip (detected by content).
 *
 * Both the object form ({"traceEvents": [...], ...}) and the bare array form
 * are accepted. The reader walks the events array one element at a time and
 * parses each with cJSON, so memory holds the file and the decoded records,
 * never a DOM of the whole trace. A file that was cut short (a killed
 * writer, a full disk) loads up to its last complete event, with
 * `truncated` set. Text that is not JSON where the scanner walks (a stray
 * bracket between events, brackets that do not match) is refused with the
 * byte where it goes wrong, and so is a trace of more ranks than a run can
 * have (TRACE_MAX_RANKS), as soon as the first rank too many appears.
 *
 * What comes out, per rank:
 *  - ddptop traces: the probe spans and step records exactly as recorded
 *    (nanoseconds; ts 0 is the run's start), so replay can run the same
 *    metrics code as a live run;
 *  - foreign traces: ops (CPU ops, GPU kernels, memcpy/memset), classified
 *    as compute, comm, data or neutral by the names and categories
 *    PyTorch's profilers use (nccl kernels; gloo / c10d:: ops; Memcpy;
 *    DataLoader), with each GPU op's launch time (Kineto correlation ids),
 *    and ProfilerStep#N windows.
 */
#ifndef DDPTOP_TRACE_READ_H
#define DDPTOP_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"
#include "trace_export.h"

enum trace_flavor { TRACE_DDPTOP = 0, TRACE_KINETO, TRACE_AUTOGRAD };
const char *trace_flavor_name(int flavor);

#define TRACE_CAT_NEUTRAL CAT_COUNT /* annotations: cover nothing */
#define TRACE_MAX_RANKS 64          /* as many as a run has */

/* One op of a foreign trace. */
struct trace_op {
    int64_t t0_ns, t1_ns;
    int64_t launch_ns; /* GPU ops: start of the runtime call that launched it; -1: unknown */
    int64_t corr;      /* Kineto correlation id, -1: none */
    int32_t track;     /* CPU thread or GPU stream, numbered from 0 per rank */
    uint8_t cat;       /* enum cat: compute as CAT_FORWARD/BACKWARD/OPTIMIZER, CAT_COMM, CAT_DATA */
    uint8_t gpu;       /* 1: runs on the device */
};

struct trace_rank {
    int rank;           /* as the trace names it */
    char device[64];    /* "cpu", "cuda:0" */
    struct span *spans; /* ddptop traces */
    size_t nspans, cap_spans;
    struct trace_step_info *steps; /* step records (ddptop) or ProfilerStep windows (foreign) */
    size_t nsteps, cap_steps;
    struct trace_op *ops; /* foreign traces */
    size_t nops, cap_ops;
    size_t ngpu; /* ops with gpu = 1 */
    /* ddptop: per-collective transfer/sync as the writer computed them over all ranks */
    int64_t xfer_ns, sync_ns;
    int64_t xfer_steady_ns, sync_steady_ns; /* of collectives after step 0 */
    uint64_t coll_matched, coll_unmatched;
    /* track keys of foreign traces: (pid, tid) -> track */
    uint64_t *track_key;
    size_t ntracks, cap_tracks;
    int file;         /* the first file (from 0, in reading order) that held this rank */
    uint8_t repeated; /* a later file held it too */
};

/* the kinds of a stage's memory a trace carries, and their keys there */
#define TRACE_STAGE_MEM_KINDS 4
extern const char *const trace_stage_mem_keys[TRACE_STAGE_MEM_KINDS];

struct trace_doc {
    int flavor; /* of the first file */
    int nfiles;
    int mixed;     /* ddptop and PyTorch traces were loaded together */
    int other_run; /* a later file is of another run than the first: its "run" or its start ("base_ns") differs */
    int have_base; /* base_ns: the first ddptop file's start, on the probe clock */
    double base_ns;
    int complete;  /* every file ended properly (ddptop: its end record was found) */
    int truncated; /* some file was cut short; loaded up to its last complete event */
    char backend[64];
    char algo[32];
    int world;      /* distributedInfo.world_size, else the ranks found */
    char *run_json; /* ddptop's run description object (model, strategy...), or NULL */
    char state[16]; /* ddptop: the run's end state, "" if unknown */
    /* ddptop, --parallel model|pipeline: the end's "stages", by rank: the
     * layers each ran, first to last, and the bytes it held of parameters,
     * gradients, optimizer state and activations, in that order (src/
     * pipeline.h's; 0 where a trace leaves one out) */
    int nstage_ranks; /* ranks 0 to nstage_ranks - 1 given; 0: none */
    int stage_first[64], stage_last[64];
    double stage_mem[64][TRACE_STAGE_MEM_KINDS];
    uint64_t spans_dropped;
    uint64_t events;  /* events read */
    uint64_t ignored; /* events not understood or not needed */
    /* ranks held by more than one file: their events are merged (the same
     * file given twice, or traces of two runs) */
    int repeated_ranks;
    int repeat_rank; /* the first of them */
    int nranks;
    struct trace_rank *ranks; /* sorted by rank */
};

void trace_doc_init(struct trace_doc *d);
void trace_doc_free(struct trace_doc *d);
/* Adds one file's ranks to d. Returns 0, or -1 with err naming the file.
 * Only a regular file is read (trace/infile.h). */
int trace_read_file(struct trace_doc *d, const char *path, char *err, size_t errlen);
/* The same from the file's bytes in memory, plain or gzip (name is used in
 * messages). */
int trace_read_buffer(struct trace_doc *d, const char *buf, size_t n, const char *name, char *err, size_t errlen);

#endif
