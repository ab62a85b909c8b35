/* optim.c - SGD (see optim.h). */
#include "optim.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "model.h"

int sgd_init(struct sgd *o, size_t nfloats, float lr, float momentum, float weight_decay, int warmup_steps)
{
    memset(o, 0, sizeof(*o));
    o->lr = lr;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->warmup_steps = warmup_steps;
    o->n = nfloats;
    o->buf = calloc(nfloats ? nfloats : 1, sizeof(float));
    return o->buf ? 0 : -1;
}

void sgd_free(struct sgd *o)
{
    free(o->buf);
    o->buf = NULL;
}

void sgd_set_decay(struct sgd *o, long decay_steps)
{
    o->decay_steps = decay_steps;
}

float sgd_lr_at(const struct sgd *o, long t)
{
    if (o->warmup_steps > 0 && t < o->warmup_steps)
        return o->lr * (float)(t + 1) / (float)o->warmup_steps;
    if (o->decay_steps > 0) {
        double span = (double)(o->decay_steps - o->warmup_steps);
        double x = span > 0 ? (double)(t - o->warmup_steps) / span : 1.0;
        if (x > 1.0)
            x = 1.0;
        return (float)(o->lr * 0.5 * (1.0 + cos(M_PI * x)));
    }
    return o->lr;
}

void sgd_update(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float d = g[i] + wd * p[i];
        float b = momentum != 0.0f ? momentum * buf[i] + d : d;
        buf[i] = b;
        p[i] -= lr * b;
    }
}

void sgd_step(struct sgd *o, struct model *m, long t)
{
    float lr = sgd_lr_at(o, t);
    for (int i = 0; i < m->nparams; i++) {
        const struct param *p = &m->params[i];
        if (p->trainable)
            sgd_update(m->param_buf + p->off, m->grad_buf + p->off, o->buf + p->off, p->len, lr, o->momentum,
                       o->weight_decay);
    }
}
