/* mode.h - the training modes (--parallel) as table entries.
 *
 * Data parallelism, model parallelism and pipeline parallelism are each one
 * const struct train_mode: flags that say what the report, the trace and
 * the UI show of a run of that mode, and the rank loop's hooks (init, step,
 * free; loop_data.c's or loop_stages.c's). The entry is chosen once from
 * cfg->parallel (train_mode_of, train_mode_at); code above asks it rather
 * than switching on the kind.
 */
#ifndef DDPTOP_MODE_H
#define DDPTOP_MODE_H

#include <stddef.h>

struct loop;
struct run_config;

enum mode_flag {
    /* the model's layers split into stages, one rank each within a replica
     * (rank = replica x stages + stage; --dp replicas): the report has a
     * stage table, the trace a stage per rank, and no one rank evaluates */
    MODE_STAGED = 1 << 0,
    /* a step's batch goes through in --micro-batches pieces, in --schedule's
     * order (GPipe or 1F1B) */
    MODE_MICRO = 1 << 1,
};

struct train_mode {
    unsigned flags; /* enum mode_flag */
    /* the rank loop: after the state every mode shares, the mode's own (0,
     * or -1 with the rank's failure said); step i of the epoch (0, or
     * nonzero: the rank stops); what init made, also after it failed */
    int (*init)(struct loop *L);
    int (*step)(struct loop *L, int i, int epoch);
    void (*free)(struct loop *L);
    /* how tables name a run of this mode (train_mode_label) */
    void (*label)(const struct run_config *c, char *buf, size_t n);
};

/* The entry of --parallel's value, or NULL out of range. */
const struct train_mode *train_mode_of(int kind);
/* The entry c trains with (c->parallel's; data parallelism's where out of range). */
const struct train_mode *train_mode_at(const struct run_config *c);
/* Whether c's mode has every flag of `flags`. */
int train_mode_has(const struct run_config *c, unsigned flags);
/* The pieces a step's batch goes through in: --micro-batches where the mode
 * has MODE_MICRO, else 1. */
int train_mode_micro(const struct run_config *c);
/* The schedule those pieces follow (enum pipe_schedule): --schedule where
 * the mode has MODE_MICRO, else GPipe's (one piece: forward, backward). */
int train_mode_schedule(const struct run_config *c);
/* The model's copies that train in step with each other (replicas): every
 * rank of `world` in data parallelism, --dp's (at least 1) where the
 * layers are split into stages. */
int train_mode_replicas(const struct run_config *c, int world);

/* How a run trains, as tables show it: its strategy for data parallelism
 * ("ddp+bf16" where gradients travel in 16 bits), "model", or
 * "pipe-1f1b/4" (schedule, micro-batches), with ",dp2" for --dp 2; in buf. */
const char *train_mode_label(const struct run_config *c, char *buf, size_t n);

#endif
