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
 *    DataLoader), with each GPU op's launch call (Kineto correlation ids:
 *    its start, its end, and whether HTA's launch statistics count it),
 *    and ProfilerStep#N windows. Device work is also what other devices
 *    and modes record: MTIA's mtia_ccp_events placed on a device stream
 *    (dma_* transfers are data, hccl collectives comm), and the kernels of
 *    CUPTI's range profiler (cuda_profiler_range), which carry no stream
 *    nor launch. A stream's sync records (cuda_sync with a stream) are
 *    kept apart (trace_op.sync): HTA counts them as device time, ddptop's
 *    own reading does not (trace_analyze.h).
 *
 * PyTorch's profiler with a schedule writes one file per rank per cycle
 * (tensorboard_trace_handler: WORKER.MS.pt.trace.json[.gz]). A foreign
 * file is one window of one rank: its rank is Kineto's distributedInfo
 * rank, else the `rank<N>` in its name (or its folder's), else that of the
 * other files of its tensorboard worker, else the lowest rank no file holds
 * yet (the order of the files; rank_from says which). Several files of one
 * rank are its successive windows, each analysed on its own
 * (trace_analyze.h), never new ranks: the older autograd format times each
 * cycle from its own start, so two cycles' ops cannot share one timeline.
 *
 * Communication is told by name whatever the category: c10d's ops and its
 * backends' collectives (gloo:all_reduce, nccl:all_to_all...), which
 * Kineto records on the CPU as user_annotation. Every other annotation, a
 * user's record_function range among them, covers ops and is none itself.
 *
 * A JSON file that holds no trace (an object without traceEvents, such as
 * the execution trace PyTorch's ExecutionTraceObserver writes beside the
 * Kineto trace) is told apart from a malformed one (TRACE_READ_NOT_TRACE),
 * so that a folder's reader can leave it out with a note.
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
    int64_t launch_ns;        /* GPU ops: start of the runtime call that launched it; -1: unknown */
    int64_t corr;             /* Kineto correlation id, -1: none */
    int32_t track;            /* CPU thread or GPU stream, numbered from 0 per rank */
    uint8_t cat;              /* enum cat: compute as CAT_FORWARD/BACKWARD/OPTIMIZER, CAT_COMM, CAT_DATA */
    uint8_t gpu;              /* 1: runs on the device */
    uint8_t sync;             /* a stream's sync record (gpu 1, CAT_DATA): device time for HTA's reading only */
    uint8_t hta_cat;          /* device ops: the category HTA's breakdown gives its name (compute, comm, data) */
    int8_t end_adj_us;        /* HTA's end in whole us (ts + dur in double, floored) less t1's floor: -1, 0, 1 */
    uint32_t name;            /* its name, an index in the rank's names; TRACE_NO_NAME: none kept */
    uint64_t bytes;           /* memory copies and sets: args.bytes (0: none) */
    double copy_gbps;         /* ... Kineto's args."memory bandwidth (GB/s)", from its ns duration (0: none) */
    int32_t stream;           /* device ops: args.stream, the device's own number; -1: none */
    uint8_t queued;           /* GPU ops: launch_ns is a call that queued it on its stream (cudaLaunchKernel,
                                 cudaMemcpyAsync, ...: HTA's queue length), not a blocking one (cudaMemcpy) */
    int64_t launch_end_ns;    /* GPU ops: end of the runtime call that launched it; -1: unknown */
    uint8_t launch_call;      /* ... that call, as HTA's launch statistics name it (enum trace_launch_call) */
    int8_t launch_end_adj_us; /* ... its HTA end in whole us less launch_end_ns's floor (as end_adj_us) */
    int32_t launch_track;     /* ... the CPU thread (track) that made that call; -1: unknown, or a thread
                                 with no CPU op of its own */
    uint8_t coll;             /* enum trace_coll_role: a collective's work, or c10d's call of it */
    uint8_t coll_kind;        /* ... which collective (enum coll_kind) */
    uint64_t coll_bytes;      /* a call's message bytes, as Kineto's args give them (0: not given) */
};
/* A collective in a foreign trace, in two parts (whatif.h reads them):
 * its work (a backend's record: gloo:all_reduce, nccl:all_reduce on the
 * host; an NCCL or HCCL kernel on the device), whose duration is the
 * collective's, and c10d's call (c10d::allreduce_, record_param_comms),
 * whose args may give its size: record_param_comms's "In msg nelems" and
 * "dtype", or the "Input Dims" and "Input type" of a c10d op traced with
 * record_shapes. */
enum trace_coll_role { TRACE_COLL_NONE = 0, TRACE_COLL_WORK, TRACE_COLL_CALL };
/* The collective a name says (enum coll_kind, probe.h; COLL_NONE: one
 * that is none of allreduce, reduce-scatter, allgather, broadcast):
 * gloo:all_reduce, c10d::allreduce_, ncclDevKernel_AllReduce_Sum_f32... */
int trace_coll_kind_of(const char *name);
/* The runtime calls that launch device work, as HTA's launch statistics
 * (get_cuda_kernel_launch_stats) count them: cudaLaunchKernel,
 * cudaLaunchKernelExC and MTIA's runFunction job submission (KERNEL);
 * cudaMemcpyAsync and cudaMemsetAsync (MEMORY); any other (NONE). */
enum trace_launch_call { TRACE_LAUNCH_NONE = 0, TRACE_LAUNCH_KERNEL, TRACE_LAUNCH_MEMORY };
#define TRACE_NO_NAME UINT32_MAX

/* One of a foreign trace's [memory] events (PyTorch's profiler with
 * profile_memory: an instant event per allocation or free on a device's
 * caching allocator), as its args give it. */
struct trace_mem {
    int64_t ts_ns;
    int64_t bytes;          /* args.Bytes: allocated, negative when freed */
    int64_t total_alloc;    /* args."Total Allocated": the device's bytes allocated after it */
    int64_t total_reserved; /* args."Total Reserved": the bytes its allocator holds after it */
    int16_t dev_type;       /* args."Device Type": c10's DeviceType (0 CPU, 1 CUDA, ...) */
    int16_t dev_id;         /* args."Device Id"; -1 for the CPU */
    uint32_t seq;           /* its place in its file: a window's events are in time order, ties in this */
};

/* Where a foreign file's rank came from. */
enum trace_rank_from {
    TRACE_RANK_GIVEN = 0, /* the caller's (trace_read_cycle) */
    TRACE_RANK_TRACE,     /* distributedInfo (Kineto); ddptop's own traces */
    TRACE_RANK_NAME,      /* rank<N> in the file's name or its folder's */
    TRACE_RANK_WORKER,    /* the rank of an earlier file of its tensorboard worker, else the next free one */
    TRACE_RANK_ORDER      /* the lowest rank no file held yet */
};
/* Its name in the report: "given", "trace", "name", "worker", "order". */
const char *trace_rank_from_name(int from);

/* One window of a foreign trace's rank: what one file (a profiler cycle)
 * held of it, in the rank's arrays. */
struct trace_window {
    size_t ops_from, ops_to;     /* ops[ops_from, ops_to) */
    size_t steps_from, steps_to; /* steps[steps_from, steps_to): its ProfilerStep windows */
    int64_t t0_ns, t1_ns;        /* the first op's start, the last end */
    uint32_t step_lo, step_hi;   /* its ProfilerStep numbers; lo > hi: none */
    int64_t gpu_mark_ns;         /* the latest start of a ProfilerStep on the device's timeline
                                    (gpu_user_annotation); INT64_MIN: none */
    size_t mems_from, mems_to;   /* mems[mems_from, mems_to): its [memory] events */
    int file;                    /* which file, from 0 in reading order */
    uint8_t rank_from;           /* enum trace_rank_from */
    uint8_t sub_us;              /* some time stamp has a fraction of a microsecond (a ns-resolution trace) */
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
    struct trace_mem *mems; /* foreign traces' [memory] events, each window's in time order */
    size_t nmems, cap_mems;
    size_t ngpu; /* ops with gpu = 1, sync = 0 */
    /* the distinct names of its device ops (trace_op.name), each once, and
     * their open hash (slot: index + 1, 0 empty) */
    char **names;
    size_t nnames, cap_names;
    uint32_t *name_slots;
    size_t nslots;
    /* ddptop: per-collective transfer/sync as the writer computed them over all ranks */
    int64_t xfer_ns, sync_ns;
    int64_t xfer_steady_ns, sync_steady_ns; /* of collectives after step 0 */
    uint64_t coll_matched, coll_unmatched;
    /* track keys of foreign traces: (pid, tid) -> track */
    uint64_t *track_key;
    size_t ntracks, cap_tracks;
    /* foreign traces: the windows, ordered by step number (then start, then
     * file), each a range of ops and steps above */
    struct trace_window *windows;
    size_t nwindows, cap_windows;
    char coll_backend[8]; /* foreign: the backend of its first collective's work (gloo, nccl...), or "" */
    int file;             /* the first file (from 0, in reading order) that held this rank */
    uint8_t repeated;     /* a later file held it too (foreign: the same steps again) */
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
    /* ddptop traces: ranks held by more than one file, whose events are
     * merged (the same file given twice, or traces of two runs); foreign
     * traces: ranks with the same profiler steps in two windows */
    int repeated_ranks;
    int repeat_rank; /* the first of them */
    /* foreign files whose rank was not in the trace nor in the name */
    int unnamed_files;
    char unnamed_first[256]; /* the first of them */
    /* tensorboard workers (WORKER.MS.pt.trace.json) without a rank of
     * their own, and the rank each was given */
    char (*workers)[128];
    int *worker_rank;
    int nworkers;
    int nranks;
    struct trace_rank *ranks; /* sorted by rank */
};

void trace_doc_init(struct trace_doc *d);
void trace_doc_free(struct trace_doc *d);
#define TRACE_READ_NOT_TRACE 2 /* JSON without a trace in it: err says so, d is as it was */

/* Adds one file's ranks to d. Returns 0, TRACE_READ_NOT_TRACE, or -1 with
 * err naming the file. Only a regular file is read (trace/infile.h). */
int trace_read_file(struct trace_doc *d, const char *path, char *err, size_t errlen);
/* The same from the file's bytes in memory, plain or gzip (name: its path,
 * for messages and for the rank a name gives). */
int trace_read_buffer(struct trace_doc *d, const char *buf, size_t n, const char *name, char *err, size_t errlen);

/* ---- one cycle at a time (a follower of a folder the profiler writes) ---- */

/* What trace_read_cycle added. */
struct trace_cycle {
    int rank;      /* the rank it was read as (-1: a ddptop trace, of its own ranks) */
    int window;    /* its index in that rank's windows now; -1: it held no op nor step */
    int rank_from; /* enum trace_rank_from */
};

#define TRACE_READ_WHOLE 1u /* a file cut short is not read: 1 is returned and d is left as it was */

/* Reads one file's bytes (plain or gzip) into d as a window of rank `rank`
 * (>= 0; a foreign trace), or (rank < 0) of the rank the file says, its
 * name says, or the order gives (see above). Returns 0 (*out, when not
 * NULL, says what was added), 1 when TRACE_READ_WHOLE was asked and the
 * file is not whole yet (a writer still at it; nothing was added),
 * TRACE_READ_NOT_TRACE when it is whole JSON without a trace (nothing was
 * added), or -1 with err naming the file. A follower calls this for each
 * file that lands, then trace_analyze_window for the figures of the new
 * window. */
int trace_read_cycle(struct trace_doc *d, const char *buf, size_t n, const char *name, int rank, unsigned flags,
                     struct trace_cycle *out, char *err, size_t errlen);

/* The rank the file name at path gives: `rank<N>` (also rank_N, rank-N),
 * not inside a word, in its last component, else in its folder's; -1 when
 * neither has one. */
int trace_rank_of_name(const char *path);
/* The worker of a tensorboard_trace_handler file, WORKER.MS.pt.trace.json
 * (.gz), into w (its files are one rank's cycles); 0 when the name is not
 * one. */
int trace_worker_of_name(const char *path, char *w, size_t wlen);
/* Whether a file name is one replay reads from a folder: *.json and
 * *.json.gz (tensorboard's *.pt.trace.json[.gz] among them). */
int trace_name_is_trace(const char *name);
/* The trace files in folder dir (trace_name_is_trace; regular files only,
 * hidden ones left out), as "dir/name", sorted by name, into *paths
 * (malloc'd, each path malloc'd; free with trace_paths_free). Returns 0
 * (possibly none), or -1 with err naming dir. */
int trace_list_dir(const char *dir, char ***paths, int *n, char *err, size_t errlen);
void trace_paths_free(char **paths, int n);

#endif
