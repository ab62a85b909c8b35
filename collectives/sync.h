/* sync.h - the gradient-synchronisation strategies as table entries.
 *
 * A strategy is one const struct sync_ops in a file of its own
 * (sync_single.c, sync_dp.c, sync_gather_scatter.c, sync_allreduce.c,
 * sync_ddp.c, sync_horovod.c), listed in sync.c's registry in enum
 * strategy_kind order (the value --strategy stores). Code above asks the
 * entry: its flags, the options it reads, its engine and its cost term
 * for --predict; it does not switch on the kind. A new strategy is one
 * more file and one more line in the registry.
 *
 * The engines are built from strategy.h's and horovod.h's pieces, over
 * the flat gradient buffer (struct grad_layout); they never see a layer.
 */
#ifndef DDPTOP_SYNC_H
#define DDPTOP_SYNC_H

#include <stddef.h>

#include "cost_model.h"
#include "strategy.h"

/* What a strategy is, for the code that runs, checks and reports it. */
enum sync_flag {
    /* it trains on one rank whatever --ranks says (single): a run's world is 1 */
    SYNC_ONE_RANK = 1 << 0,
    /* every collective goes through rank 0 (gather, scatter, reduce,
     * broadcast): --predict needs those collectives' costs, not allreduce's */
    SYNC_ROOTED = 1 << 1,
    /* it communicates while backward runs, told of each final gradient
     * (grad_ready), and orders its own work after backward's on a device */
    SYNC_OVERLAPS = 1 << 2,
    /* gradients may travel as 16-bit values (--grad-compress) */
    SYNC_COMPRESSES = 1 << 3,
    /* rank 0 holds the whole batch, computes the loss and alone steps,
     * then replicates its parameters (DataParallel): the step is the
     * strategy's own, not forward-backward-sync-update on every rank */
    SYNC_ROOT_STEPS = 1 << 4,
    /* backward leaves a "bucket ready" marker span per bucket on the main
     * lane (the Layers pane draws the buckets from them) */
    SYNC_BUCKET_MARKS = 1 << 5,
};

/* A strategy's own options, as the run gives them. */
struct sync_params {
    size_t bucket_bytes; /* ddp: --bucket-mb (the first bucket is capped at 1 MB too) */
    int overlap;         /* ddp: buckets overlap backward (not --no-overlap) */
    size_t fusion_bytes; /* horovod: --fusion-mb */
    double cycle_ms;     /* horovod: --cycle-ms */
};

/* Stream ordering where the gradients live on a device that only enqueues
 * work (members may be NULL: nothing to do). lane_init runs once on a
 * strategy's own thread before its first collective (the device made
 * current there); ready(ctx, b) on the main thread when bucket b's last
 * gradient has been enqueued (horovod: b = 0 at every gradient); before(ctx,
 * b) on whichever thread reduces b, just before, so that its stream waits
 * for that point of the compute stream; copy and settle on the strategy's
 * thread's stream (horovod's fusion buffer). Each returns 0, or nonzero
 * with the failure in the device, or (lane_init, before, copy, settle) in
 * the communicator's err. */
struct sync_device {
    int (*lane_init)(void *ctx);
    int (*ready)(void *ctx, int bucket);
    int (*before)(void *ctx, int bucket);
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*settle)(void *ctx);
};

/* Everything an engine is built from. */
struct sync_args {
    struct comm *comm;
    const struct grad_layout *g;
    struct sync_params p;
    const struct grad_wire *w16;   /* --grad-compress's format (0: fp32) and where it casts */
    const struct sync_device *dev; /* NULL: the gradients are host memory */
    /* the gradients' memory (gather-scatter's scratch, horovod's fusion
     * buffer on a device) */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    gs_average_fn average;                   /* gather-scatter's average where the gradients are; NULL: on the host */
    void *ctx;                               /* for alloc, release, average and dev's hooks */
    struct spsc_ring *lane_ring, *main_ring; /* a strategy thread's spans; the main thread's */
    const _Atomic uint32_t *step;
};

/* --predict (src/predict.h says the model): a collective's cost, alpha +
 * beta * bytes in us for messages below more[0].from_bytes (all of them
 * when nmore is 0), and each further regime's from its from_bytes (a
 * --bench-comm fit's, cost_model.h). */
struct predict_link {
    double alpha_us, beta_us_per_byte;
    int nmore;
    struct cost_regime more[COST_MAX_REGIMES - 1];
};

/* What one 1-rank run gives the model. */
struct predict_input {
    double fwd_ms, bwd_ms, rest_ms; /* per step */
    int n;                          /* gradient tensors, parameter order */
    const struct grad_tensor *t;    /* [n] */
    const double *ready_ms;         /* [n] into backward, when the gradient is final */
    /* the rooted collectives for gather-scatter and dp (NULL: no cost
     * known, not predicted); their bytes are one rank's buffer */
    const struct predict_link *gather, *broadcast, *scatter, *reduce;
    double input_bytes, output_bytes; /* dp: a rank's batch of inputs, and of logits */
    /* bytes a gradient value takes on the wire in allreduce, ddp and
     * horovod: 2 where they travel in 16 bits (--grad-compress, or a bf16
     * run's default); 0 means 4. Buckets and fusion buffers are still
     * filled by their fp32 size, as the engines fill them. */
    double grad_bytes;
};

/* A message of `bytes` over l, in ms. */
double sync_link_ms(const struct predict_link *l, double bytes);
/* An allreduce of gradients that take fp32_bytes in memory, on the wire
 * in in->grad_bytes a value, in ms. */
double sync_grad_ms(const struct predict_input *in, const struct predict_link *l, double fp32_bytes);
/* The trainable bytes of in's tensors (fp32). */
double sync_trainable_bytes(const struct predict_input *in);

struct sync_engine; /* a strategy's own state (each file defines its own) */

struct sync_ops {
    const char *name; /* --strategy's word */
    char letter;      /* its points on the Scaling pane */
    unsigned flags;   /* enum sync_flag */
    /* the options only this strategy reads (NULL-terminated): given where
     * no run uses it, config refuses them */
    const char *reads[3];
    /* the engine, NULL where the strategy needs none (single; dp, whose
     * step is its own): 0 or NULL with err set */
    struct sync_engine *(*create)(const struct sync_args *a, char *err, size_t errlen);
    void (*begin)(struct sync_engine *e);        /* start of backward; NULL: nothing */
    void (*grad_ready)(void *engine, int param); /* (model.h's grad_ready_fn); NULL: not told */
    /* after backward: every rank's gradients averaged into its own. 0, or
     * the communicator's failure; the main thread's waits go to main_ring */
    int (*finish)(struct sync_engine *e, struct spsc_ring *main_ring);
    void (*destroy)(struct sync_engine *e);
    /* --predict: the communication of one step in ms into *comm_ms, and
     * the part that follows backward into *after_ms; 0, or -1 where a
     * cost it needs is not known (or out of memory). NULL: not modelled */
    int (*cost)(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                double *comm_ms, double *after_ms);
};

extern const struct sync_ops sync_ops_single, sync_ops_dp, sync_ops_gather_scatter, sync_ops_allreduce, sync_ops_ddp,
    sync_ops_horovod;

/* The strategies, in enum strategy_kind order. */
#define SYNC_KINDS STRAT_COUNT
/* The entry of a kind (--strategy's value), or NULL out of range. */
const struct sync_ops *sync_ops_of(int kind);
/* The entry a run of `world` ranks trains with: single's where it has one
 * rank (nothing to synchronise, whatever the strategy), else the kind's. */
const struct sync_ops *sync_ops_at(int kind, int world);
/* Whether kind (in range) has every flag of `flags`. */
int sync_has(int kind, unsigned flags);

#endif
