/* sync_cost.c - what the strategies' --predict terms share (sync.h): a
 * message's cost over a link, in the gradients' wire format. */
#include "sync.h"

double sync_link_ms(const struct predict_link *l, double bytes)
{
    return cost_regimes_us(l->alpha_us, l->beta_us_per_byte, l->nmore, l->more, bytes) / 1e3;
}

double sync_grad_ms(const struct predict_input *in, const struct predict_link *l, double fp32_bytes)
{
    double per = in->grad_bytes > 0 ? in->grad_bytes : sizeof(float);
    return sync_link_ms(l, fp32_bytes * per / sizeof(float));
}

double sync_trainable_bytes(const struct predict_input *in)
{
    double bytes = 0;
    for (int p = 0; p < in->n; p++)
        if (in->t[p].trainable)
            bytes += (double)in->t[p].len * sizeof(float);
    return bytes;
}
