/* optim.h - SGD with momentum, weight decay, linear warm-up and the linear
 * scaling rule, over the model's flat buffers, with PyTorch's semantics:
 *   g = grad_scale * grad + wd * p;  buf = momentum * buf + g;  p -= lr_t * buf
 * (the first step's buf is g; grad_scale is 1, or 1/S under a loss scale
 * S, a power of 2: exact). */
#ifndef DDPTOP_OPTIM_H
#define DDPTOP_OPTIM_H

#include <stddef.h>

struct model;

struct sgd {
    float lr; /* base rate, already scaled by the linear scaling rule */
    float momentum;
    float weight_decay;
    int warmup_steps; /* lr ramps linearly from lr/warmup to lr over these steps */
    long decay_steps; /* > 0: cosine decay from lr to 0 over these steps (after warm-up) */
    float *buf;       /* momentum buffer, [nfloats], in the model's memory */
    size_t n;
    struct model *owner; /* sgd_init_model's model (buf lives on its device), or NULL */
    float grad_scale;    /* the gradients are multiplied by this first (1: as they are) */
};

int sgd_init(struct sgd *o, size_t nfloats, float lr, float momentum, float weight_decay, int warmup_steps);
/* The same for model m, with the momentum buffer on m's device. */
int sgd_init_model(struct sgd *o, struct model *m, float lr, float momentum, float weight_decay, int warmup_steps);
/* Cosine decay of the rate to 0 at step decay_steps (0: constant rate). */
void sgd_set_decay(struct sgd *o, long decay_steps);
void sgd_free(struct sgd *o);
/* The rate in force at (0-based) step t. */
float sgd_lr_at(const struct sgd *o, long t);
/* One update of the trainable parameters of m at step t (on a GPU: one
 * kernel over the trainable range, enqueued). Returns 0, or -1 with m->err
 * set. */
int sgd_step(struct sgd *o, struct model *m, long t);
/* The same over parameters [p0, p1) only (a pipeline stage's). */
int sgd_step_params(struct sgd *o, struct model *m, long t, int p0, int p1);
/* The same update on a raw slice: used where only a slice is owned. */
void sgd_update(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd);
/* ... with the gradients multiplied by gscale first. */
void sgd_update_scaled(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd,
                       float gscale);

#endif
