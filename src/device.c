/* device.c - choosing the device backend for --device. */
#include "device.h"

#include <stdarg.h>
#include <stdio.h>

#include "config.h"

static _Thread_local char last_error[256];

const char *device_last_error(void)
{
    return last_error;
}

void device_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

#ifndef DDPTOP_HAVE_CUDA
const struct device_ops *const device_cuda = NULL;
#endif

const struct device_ops *device_select(int choice, char *note, size_t notelen, char *err, size_t errlen)
{
    note[0] = 0;
    int gpus = device_cuda ? device_cuda->count() : 0;
    switch (choice) {
    case DEV_CPU:
        return &device_cpu;
    case DEV_CUDA:
        if (!device_cuda) {
            snprintf(err, errlen, "--device cuda: this ddptop was built without CUDA (no GPU support)");
            return NULL;
        }
        if (gpus == 0) {
            snprintf(err, errlen, "--device cuda: no GPU is present");
            return NULL;
        }
        return device_cuda;
    default:
        if (gpus > 0)
            return device_cuda;
        snprintf(note, notelen, "%s", device_cuda ? "no GPU found; running on CPU" : "");
        return &device_cpu;
    }
}
