/* devices.h - which device a run uses (--device), and the GPU module that
 * holds the CUDA device, loaded at run time (gpu/gpu.h). */
#ifndef DDPTOP_DEVICES_H
#define DDPTOP_DEVICES_H

#include <stddef.h>

#include "device.h"
#include "gpu.h"

/* The GPU module, loaded on first use (thread-safe); NULL when this build
 * has none or it cannot be loaded: gpu_module_error() says why in words. */
const struct gpu_module *gpu_module(void);
const char *gpu_module_error(void);

/* Picks the device for a --device choice (enum dev_choice in config.h);
 * *note receives a one-line remark to show once (e.g. "no GPU found;
 * running on CPU"), or "". Returns NULL with err set when the choice cannot
 * be honoured. */
const struct device_ops *device_select(int choice, char *note, size_t notelen, char *err, size_t errlen);

/* Whether ops is the GPU module's CUDA device. */
int device_is_gpu(const struct device_ops *ops);

/* Rank `rank`'s GPU: its index among the ranks of its node (under
 * mpirun: its process's among the node's, times --ranks-per-process, plus
 * its thread) over the ngpus of gpus (--gpus), or over `count` GPUs. */
int device_rank_gpu(int rank, const int *gpus, int ngpus, int count);

/* NCCL's unique id for one communicator of every rank: made here, or,
 * under mpirun, by process 0 and sent to every process (collective: each
 * process calls it at the same point). 0, or -1 with err set (on every
 * process when process 0 could not make it). */
int device_nccl_id(unsigned char id[GPU_NCCL_ID_BYTES], char *err, size_t errlen);

#endif
