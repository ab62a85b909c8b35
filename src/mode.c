/* mode.c - the training modes' entries (mode.h) and what they answer. */
#include "mode.h"

#include <stdio.h>

#include "config.h"
#include "half.h"
#include "pipeline.h"
#include "sync.h"

/* its strategy: "ddp", "ddp+bf16" where gradients travel in 16 bits (as
 * the report says it), "n/a" where it has none */
static void label_data(const struct run_config *c, char *buf, size_t n)
{
    if (!sync_ops_of(c->strategy))
        snprintf(buf, n, "n/a");
    else if (c->grad_compress == W16_FP16 || c->grad_compress == W16_BF16)
        snprintf(buf, n, "%s+%s", strategy_name(c->strategy), w16_name(c->grad_compress));
    else
        snprintf(buf, n, "%s", strategy_name(c->strategy));
}

/* --dp's ",dp2", or "" */
static const char *dp_suffix(const struct run_config *c, char *dp, size_t n)
{
    dp[0] = 0;
    if (c->dp > 1)
        snprintf(dp, n, ",dp%d", c->dp);
    return dp;
}

static void label_model(const struct run_config *c, char *buf, size_t n)
{
    char dp[16];
    snprintf(buf, n, "model%s", dp_suffix(c, dp, sizeof(dp)));
}

static void label_pipeline(const struct run_config *c, char *buf, size_t n)
{
    char dp[16];
    snprintf(buf, n, "pipe-%s/%d%s", schedule_name(c->schedule), c->micro_batches, dp_suffix(c, dp, sizeof(dp)));
}

static const struct train_mode mode_data = {0, MODE_LOOP_DATA, label_data};
static const struct train_mode mode_model = {MODE_STAGED, MODE_LOOP_STAGES, label_model};
static const struct train_mode mode_pipeline = {MODE_STAGED | MODE_MICRO, MODE_LOOP_STAGES, label_pipeline};

/* in enum parallel_kind order */
static const struct train_mode *const modes[] = {
    [PAR_DATA] = &mode_data, [PAR_MODEL] = &mode_model, [PAR_PIPELINE] = &mode_pipeline};

const struct train_mode *train_mode_of(int kind)
{
    return kind >= 0 && kind < (int)(sizeof(modes) / sizeof(modes[0])) ? modes[kind] : NULL;
}

const struct train_mode *train_mode_at(const struct run_config *c)
{
    const struct train_mode *t = train_mode_of(c->parallel);
    return t ? t : &mode_data;
}

int train_mode_has(const struct run_config *c, unsigned flags)
{
    return (train_mode_at(c)->flags & flags) == flags;
}

int train_mode_micro(const struct run_config *c)
{
    return train_mode_has(c, MODE_MICRO) ? c->micro_batches : 1;
}

int train_mode_schedule(const struct run_config *c)
{
    return train_mode_has(c, MODE_MICRO) ? c->schedule : SCHED_GPIPE;
}

int train_mode_replicas(const struct run_config *c, int world)
{
    return train_mode_has(c, MODE_STAGED) ? (c->dp > 1 ? c->dp : 1) : world;
}

const char *train_mode_label(const struct run_config *c, char *buf, size_t n)
{
    train_mode_at(c)->label(c, buf, n);
    return buf;
}
