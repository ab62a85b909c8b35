/* run_config.c - what one run's configuration implies (config.h): its
 * world, replicas and stages, its global batch, its peak learning rate,
 * its classes and its strategy's parameters. Read by the run and by
 * everything that reports on it.
 */
#include "config.h"

#include <stddef.h>

#include "mode.h"
#include "sync.h"
#include "zoo.h"

int run_world(const struct run_config *rc)
{
    return sync_has(rc->strategy, SYNC_ONE_RANK) ? 1 : rc->ranks;
}

struct sync_params run_sync_params(const struct run_config *rc)
{
    return (struct sync_params){.bucket_bytes = (size_t)(rc->bucket_mb * 1024 * 1024),
                                .overlap = rc->overlap,
                                .fusion_bytes = (size_t)(rc->fusion_mb * 1024 * 1024),
                                .cycle_ms = rc->cycle_ms};
}

int run_classes(const struct run_config *rc, int h, int w, int data_classes)
{
    if (rc->classes > 0)
        return rc->classes;
    return h >= ZOO_IMAGENET_SIDE && w >= ZOO_IMAGENET_SIDE ? ZOO_IMAGENET_CLASSES : data_classes;
}

int run_replicas(const struct run_config *rc)
{
    return train_mode_replicas(rc, run_world(rc));
}

int run_sends_only(const struct run_config *rc)
{
    return train_mode_has(rc, MODE_STAGED) && rc->dp <= 1;
}

int run_stages(const struct run_config *rc)
{
    return train_mode_has(rc, MODE_STAGED) ? run_world(rc) / run_replicas(rc) : 1;
}

double run_lr_peak(const struct run_config *rc)
{
    return rc->scale_lr && rc->base_batch > 0 ? (double)rc->lr * run_global_batch(rc) / rc->base_batch : rc->lr;
}

int run_global_batch(const struct run_config *rc)
{
    /* model and pipeline parallelism: every stage of a replica sees its batch */
    return (train_mode_has(rc, MODE_STAGED) ? run_replicas(rc) : rc->ranks) * rc->batch_size;
}
