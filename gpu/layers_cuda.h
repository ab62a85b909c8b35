/* layers_cuda.h - the CUDA device's layer builders (device.h's
 * layer_builders): the builders in layers*.c hand over to these once the
 * shape is checked. Same tensors, parameters and FLOPs as the CPU's, in
 * plain layouts. */
#ifndef DDPTOP_LAYERS_CUDA_H
#define DDPTOP_LAYERS_CUDA_H

struct model;
struct conv_dims;
struct pool_dims;

int cudal_linear(struct model *m, const char *name, int in, int out_f);
int cudal_conv2d(struct model *m, const char *name, int in, const struct conv_dims *d, int bias);
int cudal_relu(struct model *m, const char *name, int in);
int cudal_relu6(struct model *m, const char *name, int in);
int cudal_dropout(struct model *m, const char *name, int in, float p);
int cudal_add(struct model *m, const char *name, int a, int b);
int cudal_concat(struct model *m, const char *name, int a, int b);
int cudal_pad(struct model *m, const char *name, int in, int p);
int cudal_pool(struct model *m, const char *name, int in, const struct pool_dims *d, int max);
int cudal_adapool(struct model *m, const char *name, int in, int oh, int ow, int global);
int cudal_batchnorm(struct model *m, const char *name, int in);
/* Once the model is built, under --precision bf16 or fp16 with
 * DDPTOP_H16_CHAIN=1: the tensors held in 16 bits between layers
 * (chain16.h) and their buffers. 0, or -1 with m->err set. */
int cudal_chain16(struct model *m);

#endif
