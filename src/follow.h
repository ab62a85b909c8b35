/* follow.h - --follow DIR: a running PyTorch job, followed through the
 * folder its profiler writes into.
 *
 * torch.profiler with a schedule and tensorboard_trace_handler writes one
 * file per rank per cycle (WORKER.MS.pt.trace.json[.gz]) into a folder. A
 * follower watches that folder (inotify; a listing every FOLLOW_POLL_MS
 * where inotify is missing or fails, or DDPTOP_FOLLOW_POLL=1 asks), and
 * reads each file once it is whole (trace_read_cycle with
 * TRACE_READ_WHOLE): a file still being written, plain or gzip, is tried
 * again when it changes or is closed, and is never an error. Each file
 * read is one cycle of one rank, broken down on its own
 * (trace_analyze_window) and kept as figures (struct follow_cycle); its
 * document is freed at once, so a long job holds figures, not events.
 *
 * A file's rank is its trace's (distributedInfo) or its name's (rank<N>),
 * else its tensorboard worker's, else the lowest rank no file held yet, in
 * the order the files land (the same rules as --replay, with landing
 * order for the order of names).
 *
 * The straggler of a cycle: among the ranks that have that cycle (its
 * index among the rank's cycles), the one whose own time per step (the
 * step's wall time less its time in collectives: compute, data and the
 * idle outside any collective) is at least FOLLOW_STRAGGLER times the
 * median of the other ranks' own times. In a synchronous job every rank's
 * step lasts as long as the slowest one's; the fast ranks spend the
 * difference waiting inside the collectives, so step times alone cannot
 * tell the slow rank.
 *
 * Threads: follow_poll does the watching and reading. The UI runs it on a
 * thread of its own (follow_start), so that a large file never stalls the
 * screen; the headless loop calls it itself. Every field under "published"
 * is written by follow_poll with `lock` held, and read by others with it
 * held (follow_lock).
 */
#ifndef DDPTOP_FOLLOW_H
#define DDPTOP_FOLLOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"
#include "report.h"
#include "trace_analyze.h"

struct config;
struct run_config;
struct run_result;

#define FOLLOW_POLL_MS 200                          /* without inotify: the folder is listed this often */
#define FOLLOW_RESCAN_NS (2LL * 1000 * 1000 * 1000) /* with it: a listing all the same (an event lost) */
#define FOLLOW_QUIET_NS (150LL * 1000 * 1000)       /* a file unchanged this long is tried, closed or not */
#define FOLLOW_STRAGGLER 1.2                        /* own time against the others' median: a straggler */
#define FOLLOW_MAX_MSGS 16

/* One landed file: one cycle of one rank. */
struct follow_cycle {
    int rank;
    int cycle;                 /* the rank's cycles before this one (0: its first) */
    uint32_t step_lo, step_hi; /* its ProfilerStep numbers; lo > hi: none */
    int nsteps;
    int64_t *step_ns;       /* [nsteps]: each step's length, in step order */
    double ms_mean;         /* mean step length; 0 without steps */
    double own_ms;          /* per step: wall less the time in collectives (see above) */
    double others_ms;       /* the median of the other ranks' own_ms in its cycle index; 0: none yet */
    struct trace_figures f; /* its split, every step of it */
    /* its split without the step the rule leaves out (--window: its first,
     * or its last; nothing when it has one step): what the rank's figures
     * take from the cycle that holds the rank's first (last) step, as
     * ms/step leaves that step out */
    struct trace_figures f_rest;
    /* its kernels (trace/kernels.h) as f and f_rest count them, merged
     * over the rank's cycles into its table by follow_result; valid with
     * a GPU view */
    struct kernel_tally kernels, kernels_rest;
    int kernels_valid;
    /* its memory copies (trace/memcpy.h) likewise, with kernels_valid */
    struct memcpy_table memcpy, memcpy_rest;
    /* its launch queues (trace/queue.h) likewise, with kernels_valid */
    struct queue_tally queue, queue_rest;
    /* ... and its launches (trace/launch.h) */
    struct launch_tally launch, launch_rest;
    /* ... and its idle time per stream (trace/idle.h) */
    struct idle_table idle, idle_rest;
    /* ... and its memory timeline (trace/memtl.h): every step's, none left out */
    struct memtl_table memtl;
    /* ... and the critical path of each of its steps (trace/critpath.h),
     * of which follow_result takes the median step's over the rank's
     * cycles */
    struct critpath *paths;
    size_t npaths;
    /* ... and its collectives' starts (trace/straggler.h), merged over
     * every rank's cycles into the run's late collectives */
    struct straggler_gather late, late_rest;
    /* ... and its collectives (trace/whatif.h), merged over every rank's
     * cycles into the job's, for --predict */
    struct whatif_gather colls, colls_rest;
    int rank_from;          /* enum trace_rank_from: where its rank came from */
    struct split_pct split; /* f_rest's or f's (breakdown_split) */
    int straggler;          /* the straggler of its cycle index, among the ranks that have it */
    int64_t landed_ns;
    char file[256]; /* its name in the folder */
};

/* What the follower holds of one rank: its latest cycle's events, as
 * timeline spans (struct span: lane, category, step, times; at most
 * METRICS_HISTORY of them, the newest whole steps). */
struct follow_rank {
    int rank;
    int ncycles;
    int latest; /* index in cycles of its latest */
    char device[64];
    struct span *spans;
    size_t nspans;
    unsigned lanes; /* bit per enum lane its spans use */
};

struct follow_file; /* the poller's own */

struct follow {
    char dir[4096];
    const struct trace_rule *rule; /* --window (follow_open: trace_rules[0]); set before polling */
    int64_t idle_delay_ns;         /* --idle-delay-ns (follow_open: TRACE_IDLE_DELAY_NS); set before polling */
    /* --predict's options (follow_open: NULL, none): follow_result fills
     * the job's prediction from them; set before polling */
    const struct run_config *predict;
    /* ---- published (lock held) ---- */
    pthread_mutex_t lock;
    uint64_t version; /* moves when a cycle lands */
    struct follow_cycle *cycles;
    size_t ncycles, cap_cycles;
    struct follow_rank *ranks; /* sorted by rank */
    int nranks;
    int world;                      /* the most ranks a trace names (world_size), or the highest rank seen + 1 */
    int flavor;                     /* enum trace_flavor of the first cycle */
    int pending;                    /* files seen that are not whole yet */
    int refused;                    /* files that are not traces ddptop follows */
    int gone;                       /* the folder went away: nothing more will land */
    int inotify;                    /* 1: inotify; 0: listing every FOLLOW_POLL_MS */
    int64_t t0_ns;                  /* when following began */
    int64_t last_change_ns;         /* a cycle landed, or a file not whole yet grew (or t0) */
    int64_t last_landed_ns;         /* the last cycle landed; 0: none yet */
    char msg[FOLLOW_MAX_MSGS][320]; /* what the user should hear, oldest first */
    int nmsg;
    /* of the files refused, those that are JSON without a trace (an
     * execution trace): how many, and the first few by name */
    int nnot_trace;
    char not_trace[REPLAY_LEFT_OUT_NAMED][256];
    /* ---- the poller's own ---- */
    struct follow_file *files; /* sorted by name */
    size_t nfiles, cap_files;
    int ifd, wd;
    int64_t next_scan_ns;
    char (*workers)[128]; /* tensorboard workers without a rank, and theirs */
    int *worker_rank;
    int nworkers;
    int told_unnamed;
    /* ---- follow_start's thread ---- */
    pthread_t thread;
    int thread_on;
    atomic_int stop;
};

/* Starts following dir: refuses (-1, err naming it) a folder that is
 * missing, not a folder or not readable; lists what it holds already
 * (read by the first follow_poll). */
int follow_open(struct follow *f, const char *dir, char *err, size_t errlen);
/* One round: waits up to wait_ms for the folder to change, then reads the
 * files that are whole. Returns the cycles that landed. */
int follow_poll(struct follow *f, int wait_ms);
/* follow_poll on a thread of its own until follow_stop. 0, or -1 with err. */
int follow_start(struct follow *f, char *err, size_t errlen);
void follow_stop(struct follow *f);
void follow_close(struct follow *f);
void follow_lock(struct follow *f);
void follow_unlock(struct follow *f);
/* Takes the oldest message into buf; 0 when there is none. */
int follow_message(struct follow *f, char *buf, size_t n);
/* The whole job so far as one run's result (every rank's figures summed
 * over its cycles, the step f->rule leaves out left out of them and of
 * ms/step, its step times over them all), as --replay of the same files
 * gives it. Call with the lock not held. Returns 0, or -1 with err. */
int follow_result(struct follow *f, struct run_result *res, char *err, size_t errlen);
/* The same, for a caller that holds follow_lock already. */
int follow_result_locked(struct follow *f, struct run_result *res, char *err, size_t errlen);

/* The next file from *i on (start at 0) that never became whole (a
 * cycle still being written, or cut short): its name, or NULL at the
 * end. Call with the lock held, or once the follower is stopped. */
const char *follow_pending(const struct follow *f, size_t *i);

/* follow_main.c. Shows the follower interactively (the UI's ui_follow) until the user
 * quits; returns the exit status. */
typedef int (*follow_show_fn)(const struct config *cfg, struct follow *f);
/* --follow: follows cfg->follow with `show` when that is not NULL (the UI
 * on a terminal), else headless: a line per cycle that lands on stderr
 * (not with --quiet), until --idle-exit's seconds pass without a change,
 * or Ctrl-C. Then writes the report of every cycle (report_save, --format)
 * to stdout or --output. Returns the exit status. */
int follow_main(const struct config *cfg, follow_show_fn show);

#endif
