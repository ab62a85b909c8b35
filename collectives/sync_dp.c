/* sync_dp.c - dp, DataParallel (sync.h). Each step rank 0 scatters the
 * batch, gathers the outputs and computes the loss, scatters the output
 * gradients, reduces the gradients, steps alone and broadcasts its
 * parameters. The step needs the model's forward and loss in between, so
 * the rank loop runs it (src/step_data.c) from this file's collectives'
 * building blocks; the entry holds its facts and its cost. */
#include "sync.h"

/* Every step, none of it overlapped: scatter(X) + gather(Y) + scatter(Y)
 * + reduce(S) + broadcast(S), X and Y a rank's inputs and logits, S the
 * trainable bytes. */
static int dp_cost(const struct predict_input *in, const struct predict_link *l, const struct sync_params *p,
                   double *comm_ms, double *after_ms)
{
    (void)l;
    (void)p;
    if (!in->gather || !in->broadcast || !in->scatter || !in->reduce)
        return -1;
    double bytes = sync_trainable_bytes(in);
    *comm_ms = *after_ms = sync_link_ms(in->scatter, in->input_bytes) + sync_link_ms(in->gather, in->output_bytes) +
                           sync_link_ms(in->scatter, in->output_bytes) + sync_link_ms(in->reduce, bytes) +
                           sync_link_ms(in->broadcast, bytes);
    return 0;
}

const struct sync_ops sync_ops_dp = {
    .name = "dp",
    .letter = 'p',
    .flags = SYNC_ROOTED | SYNC_ROOT_STEPS,
    .cost = dp_cost,
};
