/* mode.h - the training modes (--parallel) as table entries.
 *
 * Data parallelism, model parallelism and pipeline parallelism are each one
 * const struct train_mode: flags that say what the configuration, the
 * report, the trace and the UI make of a run of that mode, how tables name
 * it, and which rank loop trains it (rank.c's table of hooks: init, step,
 * free, loop_data.c's or loop_stages.c's; an index here rather than the
 * hooks themselves, so that config.c, which the loops call, may ask this
 * table without a loop of files). The entry is chosen once from
 * cfg->parallel (train_mode_of, train_mode_at); code above asks it rather
 * than switching on the kind.
 */
#ifndef DDPTOP_MODE_H
#define DDPTOP_MODE_H

#include <stddef.h>

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

/* The rank loops (rank.c's table of their hooks). */
enum mode_loop {
    MODE_LOOP_DATA,   /* loop_data.c: every rank the whole model, a strategy syncs */
    MODE_LOOP_STAGES, /* loop_stages.c: a stage of the layers each */
    MODE_LOOPS
};

struct train_mode {
    unsigned flags; /* enum mode_flag */
    int loop;       /* enum mode_loop */
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
