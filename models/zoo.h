/* zoo.h - the model zoo: every model ddptop can train, in one registry. */
#ifndef DDPTOP_ZOO_H
#define DDPTOP_ZOO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct model;
struct device;

/* The input shapes the zoo is sized for: index 0 is 1x28x28 (MNIST,
 * Fashion-MNIST, synthetic), 1 is 3x32x32 (CIFAR-10), both with 10 classes;
 * 2 is 3x224x224 with 1000 classes (ImageNet), where every model takes its
 * ImageNet form (torchvision's), as at any side of ZOO_IMAGENET_SIDE or
 * more. */
enum { ZOO_28 = 0, ZOO_32 = 1, ZOO_224 = 2, ZOO_SHAPES };
#define ZOO_IMAGENET_SIDE 224
#define ZOO_IMAGENET_CLASSES 1000

struct zoo_entry {
    const char *name;
    const char *summary; /* for --help: the definition and its adaptation to small images */
    /* Adds the model's layers after input tensor `in`; returns the logits tensor. */
    int (*build)(struct model *m, int in, int classes);
    long long params[ZOO_SHAPES]; /* parameters at each shape, with its classes */
    long long flops[ZOO_SHAPES];  /* forward FLOPs per image, likewise */
};

extern const struct zoo_entry zoo_models[];
extern const int zoo_count;
const struct zoo_entry *zoo_find(const char *name);
/* Builds zoo model `name` for inputs c x h x w, `classes` outputs and a
 * fixed batch size on device d (open; NULL: the CPU), its parameters
 * initialised from seed. Returns NULL with err set. */
struct model *zoo_create(struct device *d, const char *name, int batch, int c, int h, int w, int classes, uint64_t seed,
                         char *err, size_t errlen);
/* The same model's plan (model_begin_plan): its layers, shapes and
 * parameters' places, no buffers; model_hold gives it those of the layers
 * it is to run. */
struct model *zoo_plan(struct device *d, const char *name, int batch, int c, int h, int w, int classes, uint64_t seed,
                       char *err, size_t errlen);
/* 1 when model `name` takes its ImageNet form on h x w inputs. */
int zoo_imagenet_form(const char *name, int h, int w);

#endif
