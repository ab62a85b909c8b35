/* zoo.c - model definitions. Each adaptation to 1x28x28 and 3x32x32 inputs
 * is written here, once, and echoed by --help through zoo_models[]: its
 * summary says what changed from the ImageNet model (stem, strides,
 * classifier), and params/flops give the size at both input shapes with 10
 * classes (tests/test_zoo_counts.c checks them against the built models,
 * and against the same definitions written in PyTorch in
 * bench/torch_models.py). Inputs of 224x224 and more get the ImageNet form
 * itself, torchvision's definition (checked against torchvision's counts
 * with 1000 classes).
 *
 * Parameter names and order follow bench/torch_models.py's modules, so that
 * PyTorch's named_parameters() order is ddptop's flat buffer order.
 */
#include "zoo.h"

#include <stdio.h>
#include <string.h>

#include "device.h"
#include "model.h"

/* Layer names are built with nm() and join(); each builder owns a few name
 * buffers of MODEL_MAX_NAME. */
#define nm(buf, ...) (snprintf(buf, sizeof(buf), __VA_ARGS__), buf)

/* buf = a b c, cut to fit (the zoo's names are far shorter). */
static char *join(char *buf, const char *a, const char *b, const char *c)
{
    size_t n = 0;
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        for (const char *q = parts[i]; *q && n + 1 < MODEL_MAX_NAME; q++)
            buf[n++] = *q;
    buf[n] = 0;
    return buf;
}

/* ReLU then max-pool, built as max-pool then ReLU: the two commute
 * (max(relu(x)) = relu(max(x)), and the gradient reaches the same input
 * element, or none when the max is <= 0), and the ReLU then touches a
 * quarter of the values. The numbers are PyTorch's relu-then-pool. */
static int relu_maxpool(struct model *m, const char *relu, const char *pool, int x, int k, int stride)
{
    x = layer_maxpool(m, pool, x, k, stride, 0);
    return layer_relu(m, relu, x);
}

/* Inputs of 224x224 or more get the ImageNet form of a model (torchvision's
 * definition, its parameter count with 1000 classes); smaller ones the
 * small-image form. The MLP and LeNet have one form. */
static int imagenet_side(int h, int w)
{
    return h >= ZOO_IMAGENET_SIDE && w >= ZOO_IMAGENET_SIDE;
}

static int imagenet(const struct model *m, int x)
{
    return x >= 0 && imagenet_side(m->tensors[x].h, m->tensors[x].w);
}

int zoo_imagenet_form(const char *name, int h, int w)
{
    return imagenet_side(h, w) && strcmp(name, "mlp") != 0 && strcmp(name, "lenet") != 0;
}

/* MLP 784-512-512-10: flatten, two hidden ReLU layers. */
static int build_mlp(struct model *m, int x, int classes)
{
    x = layer_flatten(m, "flatten", x);
    x = layer_linear(m, "fc1", x, 512);
    x = layer_relu(m, "relu1", x);
    x = layer_linear(m, "fc2", x, 512);
    x = layer_relu(m, "relu2", x);
    return layer_linear(m, "fc3", x, classes);
}

/* LeNet-5 as in the PyTorch reference: conv5x5 (pad 2) C->6, ReLU, max-pool 2,
 * conv5x5 6->16, ReLU, max-pool 2, fc 400-120-84-classes (ReLU). On 3x32x32
 * input the flattened size is 16*6*6 = 576 instead of 400. */
static int build_lenet(struct model *m, int x, int classes)
{
    x = layer_conv2d(m, "conv1", x, 6, 5, 1, 2, 1, 1);
    x = relu_maxpool(m, "relu1", "pool1", x, 2, 2);
    x = layer_conv2d(m, "conv2", x, 16, 5, 1, 0, 1, 1);
    x = relu_maxpool(m, "relu2", "pool2", x, 2, 2);
    x = layer_flatten(m, "flatten", x);
    x = layer_linear(m, "fc1", x, 120);
    x = layer_relu(m, "relu3", x);
    x = layer_linear(m, "fc2", x, 84);
    x = layer_relu(m, "relu4", x);
    return layer_linear(m, "fc3", x, classes);
}

/* AlexNet for small images: the five convolutions of torchvision's AlexNet
 * (64-192-384-256-256) as 3x3 stride-1 convolutions, max-pool 2 after conv1,
 * conv2 and conv5 (32 -> 16 -> 8 -> 4; 28 -> 14 -> 7 -> 3), adaptive
 * average pool to 2x2 (overlapping windows on the 3x3 map), and the
 * classifier dropout-fc1024-ReLU-dropout-fc1024-ReLU-fc (4096 wide in the
 * original). */
static int build_alexnet(struct model *m, int x, int classes)
{
    static const int ch[5] = {64, 192, 384, 256, 256};
    /* ImageNet: 11x11/4 pad 2 and 5x5 pad 2, then 3x3; 3/2 max-pools;
     * average pool to 6x6; a 4096-wide classifier */
    static const int big_k[5] = {11, 5, 3, 3, 3}, big_s[5] = {4, 1, 1, 1, 1}, big_p[5] = {2, 2, 1, 1, 1};
    int big = imagenet(m, x), side = big ? 6 : 2, width = big ? 4096 : 1024;
    char a[MODEL_MAX_NAME];
    for (int i = 0; i < 5; i++) {
        char b[MODEL_MAX_NAME];
        x = layer_conv2d(m, nm(a, "conv%d", i + 1), x, ch[i], big ? big_k[i] : 3, big ? big_s[i] : 1,
                         big ? big_p[i] : 1, 1, 1);
        if (i == 0 || i == 1 || i == 4)
            x = relu_maxpool(m, nm(a, "relu%d", i + 1), nm(b, "pool%d", i + 1), x, big ? 3 : 2, 2);
        else
            x = layer_relu(m, nm(a, "relu%d", i + 1), x);
    }
    x = layer_adaptive_avgpool(m, "avgpool", x, side, side);
    x = layer_flatten(m, "flatten", x);
    x = layer_dropout(m, "drop1", x, 0.5f);
    x = layer_linear(m, "fc1", x, width);
    x = layer_relu(m, "relu6", x);
    x = layer_dropout(m, "drop2", x, 0.5f);
    x = layer_linear(m, "fc2", x, width);
    x = layer_relu(m, "relu7", x);
    return layer_linear(m, "fc3", x, classes);
}

/* conv (no bias) + batch norm, optionally ReLU: the ResNet building block. */
static int conv_bn(struct model *m, const char *prefix, const char *conv, const char *bn, int x, int oc, int k,
                   int stride, int pad, int relu)
{
    char a[MODEL_MAX_NAME];
    x = layer_conv2d(m, join(a, prefix, conv, ""), x, oc, k, stride, pad, 1, 0);
    x = layer_batchnorm(m, join(a, prefix, bn, ""), x);
    return relu ? layer_relu(m, join(a, prefix, bn, ".relu"), x) : x;
}

/* VGG with batch norm, the CIFAR form: 3x3 convolutions (with bias) + BN +
 * ReLU, max-pool 2 after each stage, and one fc 512->classes (no 4096-wide
 * classifier, no dropout). 1x28x28 input is zero-padded to 32x32 so all five
 * pools remain. (Folding the padding into conv1, pad 3, gives the same
 * numbers, but oneDNN has no fast kernel for padding wider than the
 * kernel.) */
static int build_vgg(struct model *m, int x, int classes, const int *cfg, int n)
{
    char a[MODEL_MAX_NAME];
    char b[MODEL_MAX_NAME];
    int conv = 0, pool = 0, big = imagenet(m, x);
    if (m->tensors[x].h < 32)
        x = layer_pad(m, "pad", x, (32 - m->tensors[x].h) / 2);
    for (int i = 0; i < n; i++) {
        if (cfg[i] == 0)
            continue; /* built with the ReLU before it */
        conv++;
        x = layer_conv2d(m, nm(a, "conv%d", conv), x, cfg[i], 3, 1, 1, 1, 1);
        x = layer_batchnorm(m, nm(a, "bn%d", conv), x);
        if (i + 1 < n && cfg[i + 1] == 0)
            x = relu_maxpool(m, nm(a, "relu%d", conv), nm(b, "pool%d", ++pool), x, 2, 2);
        else
            x = layer_relu(m, nm(a, "relu%d", conv), x);
    }
    if (!big) {
        x = layer_flatten(m, "flatten", x);
        return layer_linear(m, "fc", x, classes);
    }
    /* ImageNet: average pool to 7x7, fc 25088-4096-4096-classes */
    x = layer_adaptive_avgpool(m, "avgpool", x, 7, 7);
    x = layer_flatten(m, "flatten", x);
    for (int i = 1; i <= 2; i++) {
        x = layer_linear(m, nm(a, "fc%d", i), x, 4096);
        x = layer_relu(m, nm(a, "fc%d.relu", i), x);
        x = layer_dropout(m, nm(a, "fc%d.drop", i), x, 0.5f);
    }
    return layer_linear(m, "fc3", x, classes);
}

static int build_vgg11(struct model *m, int x, int classes)
{
    static const int cfg[] = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
    return build_vgg(m, x, classes, cfg, (int)(sizeof(cfg) / sizeof(cfg[0])));
}

static int build_vgg16(struct model *m, int x, int classes)
{
    static const int cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
    return build_vgg(m, x, classes, cfg, (int)(sizeof(cfg) / sizeof(cfg[0])));
}

/* The shortcut of a residual block: identity, or a 1x1 projection + BN. */
static int shortcut(struct model *m, const char *p, int x, int oc, int stride)
{
    const struct tensor *t = &m->tensors[x];
    if (stride == 1 && t->c == oc)
        return x;
    return conv_bn(m, p, "shortcut.conv", "shortcut.bn", x, oc, 1, stride, 0, 0);
}

static int residual_out(struct model *m, const char *p, int y, int s)
{
    char a[MODEL_MAX_NAME];
    y = layer_add(m, join(a, p, "add", ""), y, s);
    return layer_relu(m, join(a, p, "relu", ""), y);
}

static int basic_block(struct model *m, const char *p, int x, int oc, int stride)
{
    int y = conv_bn(m, p, "conv1", "bn1", x, oc, 3, stride, 1, 1);
    y = conv_bn(m, p, "conv2", "bn2", y, oc, 3, 1, 1, 0);
    if (y < 0)
        return -1;
    return residual_out(m, p, y, shortcut(m, p, x, oc, stride));
}

static int bottleneck(struct model *m, const char *p, int x, int planes, int stride)
{
    int y = conv_bn(m, p, "conv1", "bn1", x, planes, 1, 1, 0, 1);
    y = conv_bn(m, p, "conv2", "bn2", y, planes, 3, stride, 1, 1);
    y = conv_bn(m, p, "conv3", "bn3", y, 4 * planes, 1, 1, 0, 0);
    if (y < 0)
        return -1;
    return residual_out(m, p, y, shortcut(m, p, x, 4 * planes, stride));
}

/* ResNet, the common CIFAR form: a 3x3 stride-1 stem conv (64, no bias) +
 * BN + ReLU and NO max-pool (ImageNet: 7x7 stride 2 + max-pool), stages of
 * 64-128-256-512 with strides 1,2,2,2 (32 -> 32,16,8,4; 28 -> 28,14,7,4),
 * projection shortcuts (1x1 conv + BN) where the shape changes, global
 * average pool, fc -> classes. */
static int build_resnet(struct model *m, int x, int classes, const int *blocks, int bottle)
{
    char p[MODEL_MAX_NAME];
    if (imagenet(m, x)) { /* the 7x7/2 stem and its 3/2 max-pool */
        x = conv_bn(m, "", "conv1", "bn1", x, 64, 7, 2, 3, 1);
        x = layer_maxpool(m, "maxpool", x, 3, 2, 1);
    } else {
        x = conv_bn(m, "", "conv1", "bn1", x, 64, 3, 1, 1, 1);
    }
    for (int s = 0; s < 4; s++)
        for (int b = 0; b < blocks[s]; b++) {
            int stride = s > 0 && b == 0 ? 2 : 1;
            nm(p, "layer%d.%d.", s + 1, b);
            x = bottle ? bottleneck(m, p, x, 64 << s, stride) : basic_block(m, p, x, 64 << s, stride);
        }
    x = layer_global_avgpool(m, "avgpool", x);
    x = layer_flatten(m, "flatten", x);
    return layer_linear(m, "fc", x, classes);
}

static int build_resnet18(struct model *m, int x, int classes)
{
    static const int blocks[4] = {2, 2, 2, 2};
    return build_resnet(m, x, classes, blocks, 0);
}

static int build_resnet50(struct model *m, int x, int classes)
{
    static const int blocks[4] = {3, 4, 6, 3};
    return build_resnet(m, x, classes, blocks, 1);
}

static int build_resnet101(struct model *m, int x, int classes)
{
    static const int blocks[4] = {3, 4, 23, 3};
    return build_resnet(m, x, classes, blocks, 1);
}

/* SqueezeNet 1.0's fire module: squeeze 1x1, then expand 1x1 and 3x3
 * side by side, concatenated (every conv with bias and ReLU). */
static int fire(struct model *m, int i, int x, int sq, int e1, int e3)
{
    char a[MODEL_MAX_NAME];
    x = layer_conv2d(m, nm(a, "fire%d.squeeze", i), x, sq, 1, 1, 0, 1, 1);
    x = layer_relu(m, nm(a, "fire%d.squeeze.relu", i), x);
    int y1 = layer_conv2d(m, nm(a, "fire%d.expand1x1", i), x, e1, 1, 1, 0, 1, 1);
    y1 = layer_relu(m, nm(a, "fire%d.expand1x1.relu", i), y1);
    int y3 = layer_conv2d(m, nm(a, "fire%d.expand3x3", i), x, e3, 3, 1, 1, 1, 1);
    y3 = layer_relu(m, nm(a, "fire%d.expand3x3.relu", i), y3);
    return layer_concat(m, nm(a, "fire%d.cat", i), y1, y3);
}

/* SqueezeNet 1.0 for small images: the stem is a 3x3 stride-1 conv to 96
 * (ImageNet: 7x7 stride 2); the three 3/2 max-pools keep ceil_mode
 * (32 -> 16 -> 8 -> 4; 28 -> 14 -> 7 -> 3); fires 2-9 as in the original;
 * classifier dropout 0.5, 1x1 conv 512->classes + ReLU, global average pool. */
static int build_squeezenet(struct model *m, int x, int classes)
{
    x = imagenet(m, x) ? layer_conv2d(m, "conv1", x, 96, 7, 2, 0, 1, 1)
                       : layer_conv2d(m, "conv1", x, 96, 3, 1, 1, 1, 1);
    x = layer_relu(m, "relu1", x);
    x = layer_maxpool_ceil(m, "pool1", x, 3, 2, 0);
    x = fire(m, 2, x, 16, 64, 64);
    x = fire(m, 3, x, 16, 64, 64);
    x = fire(m, 4, x, 32, 128, 128);
    x = layer_maxpool_ceil(m, "pool4", x, 3, 2, 0);
    x = fire(m, 5, x, 32, 128, 128);
    x = fire(m, 6, x, 48, 192, 192);
    x = fire(m, 7, x, 48, 192, 192);
    x = fire(m, 8, x, 64, 256, 256);
    x = layer_maxpool_ceil(m, "pool8", x, 3, 2, 0);
    x = fire(m, 9, x, 64, 256, 256);
    x = layer_dropout(m, "drop", x, 0.5f);
    x = layer_conv2d(m, "conv10", x, classes, 1, 1, 0, 1, 1);
    x = layer_relu(m, "relu10", x);
    x = layer_global_avgpool(m, "avgpool", x);
    return layer_flatten(m, "flatten", x);
}

/* BN + ReLU + conv (no bias): DenseNet's pre-activation unit. */
static int bn_relu_conv(struct model *m, const char *p, const char *bn, const char *conv, int x, int oc, int k, int pad)
{
    char a[MODEL_MAX_NAME];
    x = layer_batchnorm(m, join(a, p, bn, ""), x);
    x = layer_relu(m, join(a, p, bn, ".relu"), x);
    return layer_conv2d(m, join(a, p, conv, ""), x, oc, k, 1, pad, 1, 0);
}

/* DenseNet-121 for small images: growth 32, blocks of 6-12-24-16 layers
 * (BN-ReLU-conv1x1 to 128, BN-ReLU-conv3x3 to 32, concatenated), transitions
 * BN-ReLU-conv1x1 halving the channels + average pool 2; the stem is one 3x3
 * stride-1 conv to 64 + BN + ReLU with no max-pool (ImageNet: 7x7 stride 2 +
 * max-pool), so blocks run at 32,16,8,4 (28: 28,14,7,3); then BN + ReLU,
 * global average pool, fc 1024 -> classes. */
static int build_densenet121(struct model *m, int x, int classes)
{
    static const int layers[4] = {6, 12, 24, 16};
    char p[MODEL_MAX_NAME], a[MODEL_MAX_NAME];
    int big = imagenet(m, x);
    x = big ? layer_conv2d(m, "conv0", x, 64, 7, 2, 3, 1, 0) : layer_conv2d(m, "conv0", x, 64, 3, 1, 1, 1, 0);
    x = layer_batchnorm(m, "norm0", x);
    x = layer_relu(m, "norm0.relu", x);
    if (big)
        x = layer_maxpool(m, "pool0", x, 3, 2, 1);
    for (int b = 0; b < 4; b++) {
        for (int l = 0; l < layers[b]; l++) {
            nm(p, "block%d.layer%d.", b + 1, l + 1);
            int y = bn_relu_conv(m, p, "norm1", "conv1", x, 128, 1, 0);
            y = bn_relu_conv(m, p, "norm2", "conv2", y, 32, 3, 1);
            x = layer_concat(m, join(a, p, "cat", ""), x, y);
        }
        if (b < 3 && x >= 0) {
            nm(p, "trans%d.", b + 1);
            x = bn_relu_conv(m, p, "norm", "conv", x, m->tensors[x].c / 2, 1, 0);
            x = layer_avgpool(m, join(a, p, "pool", ""), x, 2, 2, 0);
        }
    }
    x = layer_batchnorm(m, "norm5", x);
    x = layer_relu(m, "norm5.relu", x);
    x = layer_global_avgpool(m, "avgpool", x);
    x = layer_flatten(m, "flatten", x);
    return layer_linear(m, "classifier", x, classes);
}

/* conv (no bias) + BN + ReLU6 for MobileNetV2; groups > 1 for depthwise. */
static int conv_bn_relu6(struct model *m, const char *p, int x, int oc, int k, int stride, int groups, int act)
{
    char a[MODEL_MAX_NAME];
    x = layer_conv2d(m, join(a, p, ".conv", ""), x, oc, k, stride, k / 2, groups, 0);
    x = layer_batchnorm(m, join(a, p, ".bn", ""), x);
    return act ? layer_relu6(m, join(a, p, ".relu6", ""), x) : x;
}

/* MobileNetV2 (torchvision's blocks: expand 1x1, depthwise 3x3, project
 * 1x1, ReLU6, residual when stride 1 and shapes agree), the CIFAR form: the
 * stem conv and the first 24-channel stage have stride 1 instead of 2, so
 * the stages run at 32,32,32,16,8,8,4,4 (28: 28,28,28,14,7,7,4,4); head
 * conv 1x1 320->1280, global average pool, dropout 0.2, fc -> classes. */
static int build_mobilenetv2(struct model *m, int x, int classes)
{
    static const int cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    char p[MODEL_MAX_NAME], a[MODEL_MAX_NAME];
    int big = imagenet(m, x); /* ImageNet: the stem and the 24-channel stage at stride 2 */
    x = conv_bn_relu6(m, "stem", x, 32, 3, big ? 2 : 1, 1, 1);
    int block = 0;
    for (int s = 0; s < 7; s++)
        for (int i = 0; i < cfg[s][2] && x >= 0; i++) {
            int t = cfg[s][0], oc = cfg[s][1], stride = i > 0 ? 1 : big && s == 1 ? 2 : cfg[s][3];
            int inc = m->tensors[x].c, hidden = inc * t, y = x;
            block++;
            if (t != 1)
                y = conv_bn_relu6(m, nm(p, "block%d.expand", block), y, hidden, 1, 1, 1, 1);
            y = conv_bn_relu6(m, nm(p, "block%d.dw", block), y, hidden, 3, stride, hidden, 1);
            y = conv_bn_relu6(m, nm(p, "block%d.project", block), y, oc, 1, 1, 1, 0);
            x = stride == 1 && inc == oc ? layer_add(m, nm(a, "block%d.add", block), y, x) : y;
        }
    x = conv_bn_relu6(m, "head", x, 1280, 1, 1, 1, 1);
    x = layer_global_avgpool(m, "avgpool", x);
    x = layer_flatten(m, "flatten", x);
    x = layer_dropout(m, "drop", x, 0.2f);
    return layer_linear(m, "classifier", x, classes);
}

/* Sizes at 1x28x28 and 3x32x32 with 10 classes, and at 3x224x224 with
 * 1000; tests/test_zoo_counts.c checks them against model_create, and
 * against PyTorch (torchvision at 224). */
const struct zoo_entry zoo_models[] = {
    {"mlp",
     "MLP 784-512-512-10 with ReLU (input flattened; 3x32x32 gives 3072-512-512-10).",
     build_mlp,
     {669706, 1841162, 77846504},
     {1338368, 3681280, 155689984}},
    {"lenet",
     "LeNet-5: conv 5x5 pad 2 to 6, max-pool 2, conv 5x5 to 16, max-pool 2, fc 120-84-10, ReLU (3x32x32: fc "
     "576-120).",
     build_lenet,
     {61706, 83126, 5696876},
     {841124, 1783644, 113141004}},
    {"alexnet",
     "AlexNet, small-image form: five 3x3 stride-1 convs 64-192-384-256-256 (11x11/4 and 5x5 in the original), "
     "max-pool 2 after conv1, conv2 and conv5, adaptive avg-pool 2x2, classifier dropout-fc1024-dropout-fc1024-fc "
     "(4096 wide in the original).",
     build_alexnet,
     {4359882, 4361034, 61100840},
     {258164032, 338268160, 1429399040}},
    {"vgg11",
     "VGG-11 with BN, CIFAR form: 3x3 convs + BN + ReLU, 5 max-pools, one fc 512->10 (no 4096-wide classifier); "
     "28x28 input is zero-padded to 32x32.",
     build_vgg11,
     {9229962, 9231114, 132868840},
     {303665664, 306024960, 15242030080}},
    {"vgg16",
     "VGG-16 with BN, CIFAR form as vgg11: 13 convs, one fc 512->10.",
     build_vgg16,
     {14727114, 14728266, 138365992},
     {624904704, 627264000, 30982743040}},
    {"resnet18",
     "ResNet-18, CIFAR form: 3x3 stride-1 stem conv 64 + BN + ReLU and no max-pool (7x7/2 + pool in the "
     "original), BasicBlocks [2,2,2,2] x 64-128-256-512 with strides 1,2,2,2, 1x1 projection shortcuts, global "
     "avg-pool, fc 512->10.",
     build_resnet18,
     {11172810, 11173962, 11689512},
     {913196032, 1112885248, 3638006272}},
    {"resnet50",
     "ResNet-50, CIFAR form: stem as resnet18, Bottlenecks [3,4,6,3] (stride on the 3x3 conv), global avg-pool, "
     "fc 2048->10.",
     build_resnet50,
     {23519690, 23520842, 25557032},
     {2102696192, 2607300608, 8217631232}},
    {"resnet101",
     "ResNet-101, CIFAR form: stem as resnet18, Bottlenecks [3,4,23,3], global avg-pool, fc 2048->10.",
     build_resnet101,
     {42511818, 42512970, 44549160},
     {3963498240, 5037735936, 15660839424}},
    {"squeezenet1_0",
     "SqueezeNet 1.0, small-image form: 3x3 stride-1 stem conv 96 (7x7/2 in the original), ceil-mode 3/2 "
     "max-pools, fires 2-9, dropout 0.5, 1x1 conv 512->10 + ReLU, global avg-pool.",
     build_squeezenet,
     {727306, 729034, 1248424},
     {77042996, 105903424, 1647428720}},
    {"densenet121",
     "DenseNet-121, small-image form: 3x3 stride-1 stem conv 64 + BN + ReLU and no max-pool (7x7/2 + pool in "
     "the original), growth 32, blocks 6-12-24-16, transitions halve the channels + avg-pool 2, fc 1024->10.",
     build_densenet121,
     {6955274, 6956426, 7978856},
     {1355970944, 1791705088, 5717884672}},
    {"mobilenetv2",
     "MobileNetV2, CIFAR form: the stem conv and the first 24-channel stage at stride 1 (2 in the original), "
     "ReLU6 inverted residuals, head conv 320->1280, global avg-pool, dropout 0.2, fc 1280->10.",
     build_mobilenetv2,
     {2236106, 2236682, 3504872},
     {149707264, 180827392, 621290944}},
};
const int zoo_count = (int)(sizeof(zoo_models) / sizeof(zoo_models[0]));

const struct zoo_entry *zoo_find(const char *name)
{
    for (int i = 0; i < zoo_count; i++)
        if (strcmp(zoo_models[i].name, name) == 0)
            return &zoo_models[i];
    return 0;
}

static struct model *make_model(struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                                uint64_t seed, int plan, char *err, size_t errlen)
{
    const struct zoo_entry *z = zoo_find(name);
    if (!z) {
        snprintf(err, errlen, "unknown model '%s'", name);
        return NULL;
    }
    struct device cpu = {.ops = &device_cpu};
    if (!d) {
        cpu.ops->open(&cpu, 0);
        d = &cpu;
    }
    struct model *m = (plan ? model_begin_plan : model_begin)(d, name, batch, c, h, w, classes, seed, err, errlen);
    if (!m)
        return NULL;
    /* the logits leave in plain layout, whatever the last layer wrote */
    int out = layer_to_layout(m, "logits", z->build(m, m->input, classes), 1);
    return model_finish(m, out, err, errlen);
}

struct model *zoo_create(struct device *d, const char *name, int batch, int c, int h, int w, int classes, uint64_t seed,
                         char *err, size_t errlen)
{
    return make_model(d, name, batch, c, h, w, classes, seed, 0, err, errlen);
}

struct model *zoo_plan(struct device *d, const char *name, int batch, int c, int h, int w, int classes, uint64_t seed,
                       char *err, size_t errlen)
{
    return make_model(d, name, batch, c, h, w, classes, seed, 1, err, errlen);
}
