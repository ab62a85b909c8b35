/* procs.h - ranks as processes: `mpirun -np P ddptop ...`, or P processes
 * started without MPI that meet in a shared folder (--rendezvous file:DIR,
 * each told its RANK of WORLD_SIZE in its environment, as torchrun does).
 *
 * Every process is one rank of the run, or (under mpirun) holds
 * --ranks-per-process T rank threads (ranks p*T .. p*T+T-1 in process p;
 * comm_hier.c joins them). Between the processes a channel (procs_net.h:
 * MPI's, or the folder's TCP star) relays every rank's records to process 0:
 *  - a worker process (rank > 0) runs its rank threads headless; its main
 *    thread forwards their spans, steps and epochs to process 0 as they
 *    appear, and each rank's end (its error, if any);
 *  - process 0 runs the UI or the report as for threads. A thread of its
 *    own receives the workers' records into their ranks' rings, so the
 *    collector, the metrics, the trace and the report see every rank.
 *  - a stop or pause on process 0 reaches every worker.
 * The collectives go over MPI (--comm mpi, under mpirun only) or gloo,
 * whose rendezvous is MPI's under mpirun and gloo's file store in the
 * folder without it.
 * Timestamps from another node are moved onto process 0's clock by an
 * offset measured at the start of each run (ping-pong, best of 8); on the
 * same node CLOCK_MONOTONIC is shared and the offset is 0.
 *
 * Without either, nothing here is active and ddptop runs its ranks as
 * threads of one process.
 */
#ifndef DDPTOP_PROCS_H
#define DDPTOP_PROCS_H

#include <stddef.h>
#include <stdint.h>

struct run;
struct comm;

struct procs {
    int active;     /* started by an MPI launcher, and MPI is up */
    int rank, size; /* this process among `size` */
    int local_rank; /* among the processes on this node */
    int local_size;
    int nodes;
    int per;  /* rank threads in each process (--ranks-per-process): rank r is process r / per's */
    int wire; /* met through --rendezvous (no MPI) */
    char host[64];
};

/* Starts MPI when an MPI launcher started this process (its environment
 * says so); else does nothing. 0, or -1 with err set. */
int procs_init(int *argc, char ***argv, char *err, size_t errlen);
/* --rendezvous (config_parse's reading of it): meets the job's other
 * processes in its folder or at its address, as process $RANK of
 * $WORLD_SIZE, within timeout_s. 0, or -1 with err set (one line: what
 * was wrong, or who did not come). */
struct rendezvous;
int procs_join(const struct rendezvous *r, double timeout_s, char *err, size_t errlen);
/* Whether this process speaks for the job: process 0 under mpirun, or of
 * the processes r's rendezvous will meet (its RANK), or a process alone.
 * Every process parses the same command line; the workers keep quiet
 * about what process 0 says for all. */
int procs_speaks(const struct rendezvous *r);
const struct procs *procs_self(void);
/* --ranks-per-process: every process holds per rank threads (1 before). */
void procs_set_per_process(int per);
/* 1 when this build has the MPI backend. */
int procs_built(void);
/* The backend the processes train over unless --comm says: their
 * carrier's (mpi under mpirun, gloo met through --rendezvous); only
 * while procs_self()->active. */
int procs_default_comm(void);
/* Leaves the process with status: MPI_Finalize when every MPI call
 * completed, else MPI_Abort (a rank gave up a wait while MPI held its
 * buffers), which also ends the other processes. Returns status when MPI
 * is not active. */
int procs_exit(int status);

/* Which run comes next is process 0's to say (its sweep, or its UI's `s`):
 * procs_announce sends a run's configuration to every worker once the run
 * has passed its checks on process 0, and procs_exit ends the workers'
 * wait. A worker's procs_next_run waits (napping, not spinning) for the
 * next: 1 with *rc set, 0 when process 0 has ended the job, -1 when
 * process 0 went away without a word. */
struct run_config;
void procs_announce(const struct run_config *rc);
int procs_next_run(struct run_config *rc);
/* A worker: process 0 went away during a run it had not stopped (its
 * connection closed: --rendezvous; mpirun ends the job itself). */
int procs_lost_zero(void);
/* A run under mpirun that was stopped or failed may have left MPI holding
 * a rank's buffers: no run follows it (run_start refuses), and the job
 * ends. run_join marks it; without mpirun it is never marked. */
void procs_mark_spent(void);
int procs_spent(void);

/* The launcher (mpirun, this process's parent) writes to this process's
 * controlling terminal: process 0 may run the UI there (ui.c's
 * open_terminal). 0 elsewhere, and without one. */
int procs_launcher_on_tty(void);

/* This process's rank's communicator over every process (--comm mpi). */
struct comm *procs_comm_create(char *err, size_t errlen);
/* Its communicator over the processes of its group (--dp: the copies of
 * its stage), ranked by key. Collective: every process calls it, in the
 * same order. */
struct comm *procs_group_comm_create(int group, int key, char *err, size_t errlen);
/* Process 0 receives every process's n doubles, in rank order, into
 * all[size * n] (all is unused elsewhere). Collective. */
void procs_gather(const double *mine, int n, double *all);
/* Process 0's bytes to every process. Collective. */
void procs_bcast(void *buf, int bytes);
/* A gloo communicator over every process (group < 0), or over the
 * processes of a group ranked by key, ranks and rendezvous from MPI
 * (comm_gloo_mpi.h): p's host, algorithm, timeout and abort. Collective. */
struct comm_gloo_params;
struct comm *procs_gloo_create(int group, int key, const struct comm_gloo_params *p, char *err, size_t errlen);
/* Process p's index among the processes on its node (in world-rank order,
 * as MPI's shared-memory split numbers them), and the most processes one
 * node holds: which GPU of its node a rank drives. */
int procs_local_rank_of(int p);
int procs_most_on_a_node(void);
/* A device's name as process 0 shows it for a rank of process p: with
 * "@host" when p runs on another node ("cuda:3@node2"). */
void procs_device_name(int p, const char *dev, char *out, size_t n);

/* The relay of one run (every process calls each, in the same order). */
struct relay;
/* After the rings exist and before any rank thread starts: measures the
 * clock offsets (into each rank's clock_add_ns and clock_err_ns, with its
 * host), and on process 0 starts the receiving thread. */
struct relay *relay_open(struct run *r, char *err, size_t errlen);
/* The collector's tick (run_poll). A worker forwards its rank's new
 * records; process 0 sends a stop or pause to the workers once. Returns
 * what process 0 asked a worker to do (one a call; RELAY_PAUSE sets *at,
 * the step to pause before), for the worker's run to do it. */
enum relay_ctrl_kind { RELAY_NONE = 0, RELAY_STOP, RELAY_PAUSE, RELAY_RESUME };
int relay_poll(struct relay *rl, uint32_t *at);
/* A worker: its rank thread has been joined; forwards the rest and the
 * rank's end. */
void relay_rank_done(struct relay *rl, int rank);
/* Joins the receiving thread (process 0) and frees. */
void relay_close(struct relay *rl);
#endif
