/* mode.c - the training modes' entries (mode.h) and what they answer. */
#include "mode.h"

#include "config.h"
#include "loop.h"
#include "pipeline.h"

static const struct train_mode mode_data = {0, loop_data_init, loop_data_step, loop_data_free};
static const struct train_mode mode_model = {MODE_STAGED, loop_stages_init, loop_stages_step, loop_stages_free};
static const struct train_mode mode_pipeline = {MODE_STAGED | MODE_MICRO, loop_stages_init, loop_stages_step,
                                                loop_stages_free};

/* in enum parallel_kind order */
static const struct train_mode *const modes[] = {[PAR_DATA] = &mode_data, [PAR_MODEL] = &mode_model,
                                                 [PAR_PIPELINE] = &mode_pipeline};

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
