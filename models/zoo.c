/* zoo.c - model definitions. Each adaptation to 1x28x28 and 3x32x32 inputs
 * is written here, once, and echoed by --help through zoo_models[].summary. */
#include "zoo.h"

#include <string.h>

#include "model.h"

/* MLP 784-512-512-10: flatten, two hidden ReLU layers. */
static int build_mlp(struct model *m, int x, int classes)
{
    x = layer_flatten(m, "flatten", x);
    x = x < 0 ? x : layer_linear(m, "fc1", x, 512);
    x = x < 0 ? x : layer_relu(m, "relu1", x);
    x = x < 0 ? x : layer_linear(m, "fc2", x, 512);
    x = x < 0 ? x : layer_relu(m, "relu2", x);
    x = x < 0 ? x : layer_linear(m, "fc3", x, classes);
    return x;
}

/* LeNet-5 as in the PyTorch reference: conv5x5 (pad 2) C->6, ReLU, max-pool 2,
 * conv5x5 6->16, ReLU, max-pool 2, fc 400-120-84-classes (ReLU). On 3x32x32
 * input the flattened size is 16*6*6 = 576 instead of 400. */
static int build_lenet(struct model *m, int x, int classes)
{
    x = layer_conv2d(m, "conv1", x, 6, 5, 1, 2, 1, 1);
    x = x < 0 ? x : layer_relu(m, "relu1", x);
    x = x < 0 ? x : layer_maxpool(m, "pool1", x, 2, 2, 0);
    x = x < 0 ? x : layer_conv2d(m, "conv2", x, 16, 5, 1, 0, 1, 1);
    x = x < 0 ? x : layer_relu(m, "relu2", x);
    x = x < 0 ? x : layer_maxpool(m, "pool2", x, 2, 2, 0);
    x = x < 0 ? x : layer_flatten(m, "flatten", x);
    x = x < 0 ? x : layer_linear(m, "fc1", x, 120);
    x = x < 0 ? x : layer_relu(m, "relu3", x);
    x = x < 0 ? x : layer_linear(m, "fc2", x, 84);
    x = x < 0 ? x : layer_relu(m, "relu4", x);
    x = x < 0 ? x : layer_linear(m, "fc3", x, classes);
    return x;
}

const struct zoo_entry zoo_models[] = {
    {"mlp", "MLP 784-512-512-10 with ReLU (input flattened; 3x32x32 gives 3072-512-512-10)", build_mlp},
    {"lenet", "LeNet-5: conv5x5/p2 6, pool, conv5x5 16, pool, fc 120-84-10 (ReLU, max-pool)", build_lenet},
};
const int zoo_count = (int)(sizeof(zoo_models) / sizeof(zoo_models[0]));

const struct zoo_entry *zoo_find(const char *name)
{
    for (int i = 0; i < zoo_count; i++)
        if (strcmp(zoo_models[i].name, name) == 0)
            return &zoo_models[i];
    return 0;
}
