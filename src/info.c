/* info.c - `ddptop --model X --info`: the layer table (output shape,
 * parameters, forward FLOPs per image), built from the model itself so it
 * can never disagree with what trains. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "model.h"
#include "modes.h"

static void input_shape(const char *dataset, int *c, int *h, int *w)
{
    if (!strcmp(dataset, "cifar10")) {
        *c = 3;
        *h = *w = 32;
    } else {
        *c = 1;
        *h = *w = 28;
    }
}

int info_main(const struct config *cfg)
{
    int c, h, w;
    input_shape(cfg->base.dataset, &c, &h, &w);
    for (int i = 0; i < cfg->nmodels; i++) {
        char err[256];
        struct model *m = model_create(cfg->models[i], 1, c, h, w, 10, cfg->base.seed, err, sizeof(err));
        if (!m) {
            fprintf(stderr, "ddptop: %s\n", err);
            return 2;
        }
        printf("%s on %dx%dx%d (%s), 10 classes\n", m->name, c, h, w, cfg->base.dataset);
        printf("%-4s %-22s %-10s %-16s %12s %14s\n", "#", "layer", "kind", "output", "params", "FLOPs");
        size_t total = 0;
        for (int k = 0; k < m->nlayers; k++) {
            const struct layer *l = &m->layers[k];
            const struct tensor *t = &m->tensors[l->out];
            size_t np = 0;
            for (int p = 0; p < l->nparam; p++)
                np += m->params[l->param0 + p].len;
            total += np;
            char shape[32];
            snprintf(shape, sizeof(shape), "%dx%dx%d", t->c, t->h, t->w);
            printf("%-4d %-22s %-10s %-16s %12zu %14lld\n", k, l->name, l->ops->kind, shape, np,
                   (long long)l->flops);
        }
        printf("total parameters: %zu (trainable %zu)\n", total, model_trainable_floats(m));
        printf("forward FLOPs per image: %lld (%.3f GFLOP)\n\n", (long long)model_flops(m),
               (double)model_flops(m) / 1e9);
        model_destroy(m);
    }
    return 0;
}
