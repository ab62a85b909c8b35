/* info.c - `ddptop --model X --info`: the layer table (output shape,
 * parameters, forward FLOPs per image), built from the model itself so it
 * can never disagree with what trains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "devices.h"
#include "model.h"
#include "modes.h"
#include "run.h"
#include "zoo.h"

static void input_shape(const struct config *cfg, int *c, int *h, int *w)
{
    const char *dataset = cfg->base.dataset;
    if (cfg->base.input[0]) {
        *c = cfg->base.input[0];
        *h = cfg->base.input[1];
        *w = cfg->base.input[2];
    } else if (!strcmp(dataset, "cifar10")) {
        *c = 3;
        *h = *w = 32;
    } else {
        *c = 1;
        *h = *w = 28;
    }
}

/* Builds `name` on d at `batch` and prints its layer table (gpu: the GPU's
 * index, or -1 on the CPU). Returns 0, or 2 with the reason printed. */
static int describe(struct device *d, const struct config *cfg, const char *name, int batch, int gpu)
{
    int c, h, w;
    char err[256];
    input_shape(cfg, &c, &h, &w);
    int classes = run_classes(&cfg->base, h, w, 10);
    struct device_mem mem = {0};
    d->mem = &mem; /* what the model holds on the device, counted */
    struct model *m = zoo_create(d, name, batch, c, h, w, classes, cfg->base.seed, err, sizeof(err));
    if (!m) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }
    if (model_set_trainable(m, cfg->base.trainable, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        model_destroy(m);
        return 2;
    }
    if (gpu >= 0)
        printf("%s on %dx%dx%d (%s), %d classes, on GPU %d at batch %d, %s, cuDNN algorithms by %s\n", m->name, c, h, w,
               cfg->base.dataset, classes, gpu, batch, precision_name(cfg->base.precision),
               cfg->base.cudnn_algo == CONV_ALGO_FIND ? "timing (find)" : "heuristics");
    else
        printf("%s on %dx%dx%d (%s), %d classes%s\n", m->name, c, h, w, cfg->base.dataset, classes,
               zoo_imagenet_form(name, h, w) ? ", the ImageNet form" : "");
    printf("%-4s %-28s %-10s %-14s %11s %13s  %s\n", "#", "layer", "kind", "output", "params", "FLOPs",
           "kernels (fwd|bwd-data|bwd-weights)");
    size_t total = 0;
    int convs = 0;
    for (int k = 0; k < m->nlayers; k++) {
        const struct layer *l = &m->layers[k];
        const struct tensor *t = &m->tensors[l->out];
        size_t np = 0;
        for (int p = 0; p < l->nparam; p++)
            np += m->params[l->param0 + p].len;
        total += np;
        char shape[32];
        snprintf(shape, sizeof(shape), "%dx%dx%d%s", t->c, t->h, t->w, t->blk > 1 ? "*" : "");
        char num[16] = "-"; /* a conversion: no number of its own */
        if (l->num >= 0)
            snprintf(num, sizeof(num), "%d", l->num);
        printf("%-4s %-28s %-10s %-14s %11zu %13lld  %s%s\n", num, l->name, l->ops->kind, shape, np,
               (long long)l->flops, l->kernel, l->nparam && !m->params[l->param0].trainable ? " (frozen)" : "");
        convs += l->num < 0;
    }
    printf("(* = channel-blocked layout, nChw16c or nChw8c)\n");
    if (convs)
        printf("(- = a layout conversion this CPU's kernels ask for: not numbered, it goes with the layer it feeds;\n"
               "   --partition and the reports number the other %d layers, the same on any CPU)\n",
               m->nnum);
    printf("total parameters: %zu (trainable %zu)\n", total, model_trainable_floats(m));
    printf("forward FLOPs per image: %lld (%.3f GFLOP)\n", (long long)model_flops(m), (double)model_flops(m) / 1e9);
    printf("activations and their gradients: %.1f MB per image\n", (double)model_activation_bytes(m) / 1048576.0);
    if (gpu >= 0)
        printf("cuDNN workspace, shared by the convolutions: %.1f MB\n",
               (double)d->ops->workspace_bytes(m->kernels) / 1048576.0);
    /* what the model holds here, and what a rank would at the run's
     * batch, its optimizer and buffers included (the estimate the run
     * checks against the memory free: made on the CPU, for either device) */
    printf("device memory: the model holds %.1f MB at batch %d", (double)atomic_load(&mem.now) / 1048576.0, batch);
    struct mem_need need;
    if (run_memory_need(&need, name, c, h, w, classes, cfg->base.seed) == 0) {
        printf("; a rank at batch %d needs ~%.1f MB", cfg->batches[0],
               run_memory_at(&need, cfg->batches[0]) / 1048576.0);
        run_memory_free(&need);
    }
    printf("\n\n");
    model_destroy(m);
    d->mem = NULL;
    return 0;
}

int info_main(const struct config *cfg)
{
    /* on a GPU the kernels (cuDNN's algorithms, its workspace) depend on the
     * batch: the table is built at the run's batch size there */
    char note[160], err[256];
    const struct device_ops *dev = device_select(cfg->base.device, note, sizeof(note), err, sizeof(err));
    if (!dev || run_check_precision(cfg->base.precision, dev, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: %s\n", err);
        return 2;
    }
    int on_gpu = device_is_gpu(dev), gpu = cfg->base.ngpus > 0 ? cfg->base.gpus[0] : 0;
    int batch = on_gpu ? cfg->batches[0] : 1; /* the first of a --batch-size list */
    if (on_gpu && gpu >= dev->count()) {
        fprintf(stderr, "ddptop: --gpus: there is no GPU %d (%d found)\n", gpu, dev->count());
        return 2;
    }
    struct device d = {.ops = dev, .precision = cfg->base.precision, .conv_algo = cfg->base.cudnn_algo};
    if (dev->open(&d, on_gpu ? gpu : 0) != 0) {
        fprintf(stderr, "ddptop: %s\n", d.err);
        dev->close(&d);
        return 2;
    }
    int status = 0;
    for (int i = 0; i < cfg->nmodels && status == 0; i++)
        status = describe(&d, cfg, cfg->models[i], batch, on_gpu ? gpu : -1);
    dev->close(&d);
    return status;
}
