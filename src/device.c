/* device.c - choosing the device for --device, and loading the GPU module.
 *
 * The module (libddptop-cuda.so, gpu/) is looked for, in order: the file
 * named by DDPTOP_GPU_MODULE; beside the running program; one folder up
 * from it (the tests' programs sit in build/tests); and where `make
 * install` puts it. A module that is found but cannot be loaded (CUDA's
 * libraries missing or broken) is not an error: the GPU is simply absent,
 * and the reason is given once. */
#include "devices.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "procs.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const struct gpu_module *g_module;
static char g_why[384];

#ifdef DDPTOP_GPU_MODULE_FILE
/* Tries one path: 1 when loaded, 0 when there is no file, -1 when the file
 * is there but does not load (g_why says why). */
static int try_load(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_why, sizeof(g_why), "CUDA libraries unavailable (%s)", e ? e : path);
        return -1;
    }
    gpu_module_entry_fn entry = (gpu_module_entry_fn)dlsym(h, GPU_MODULE_ENTRY);
    const struct gpu_module *m = entry ? entry() : NULL;
    if (!m || m->abi != GPU_MODULE_ABI) {
        snprintf(g_why, sizeof(g_why), "%s is not this ddptop's GPU module", path);
        dlclose(h);
        return -1;
    }
    g_module = m; /* stays loaded until exit */
    return 1;
}

static void load(void)
{
    const char *env = getenv("DDPTOP_GPU_MODULE");
    if (env && *env) {
        if (try_load(env) == 0)
            snprintf(g_why, sizeof(g_why), "DDPTOP_GPU_MODULE: no file %s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        for (int up = 0; up < 2 && slash; up++) {
            *slash = 0;
            char path[PATH_MAX + 64];
            snprintf(path, sizeof(path), "%s/%s", exe, DDPTOP_GPU_MODULE_FILE);
            int rc = try_load(path);
            if (rc != 0)
                return;
            slash = strrchr(exe, '/');
        }
    }
    if (try_load(DDPTOP_GPU_MODULE_DIR "/" DDPTOP_GPU_MODULE_FILE) == 0)
        snprintf(g_why, sizeof(g_why), "the GPU module %s is not installed", DDPTOP_GPU_MODULE_FILE);
}
#else
static void load(void)
{
    snprintf(g_why, sizeof(g_why), "this ddptop was built without CUDA (no GPU support)");
}
#endif

const struct gpu_module *gpu_module(void)
{
    pthread_once(&g_once, load);
    return g_module;
}

const char *gpu_module_error(void)
{
    pthread_once(&g_once, load);
    return g_why;
}

int device_is_gpu(const struct device_ops *ops)
{
    const struct gpu_module *m = gpu_module();
    return m && ops == m->device;
}

const struct device_ops *device_select(int choice, char *note, size_t notelen, char *err, size_t errlen)
{
    note[0] = 0;
    const struct gpu_module *m = gpu_module();
    int gpus = m ? m->device->count() : 0;
    switch (choice) {
    case DEV_CPU:
        return &device_cpu;
    case DEV_CUDA:
        if (!m) {
            snprintf(err, errlen, "--device cuda: %s", gpu_module_error());
            return NULL;
        }
        if (gpus == 0) {
            snprintf(err, errlen, "--device cuda: no GPU is present");
            return NULL;
        }
        return m->device;
    default:
        if (gpus > 0)
            return m->device;
#ifdef DDPTOP_GPU_MODULE_FILE
        snprintf(note, notelen, "%s; running on CPU", m ? "no GPU found" : gpu_module_error());
#endif
        return &device_cpu;
    }
}

int device_rank_gpu(int rank, const int *gpus, int ngpus, int count)
{
    const struct procs *pr = procs_self();
    int li = pr->active ? procs_local_rank_of(rank / pr->per) * pr->per + rank % pr->per : rank;
    return ngpus > 0 ? gpus[li % ngpus] : li % count;
}

int device_nccl_id(unsigned char id[GPU_NCCL_ID_BYTES], char *err, size_t errlen)
{
    const struct gpu_module *m = gpu_module();
    const struct procs *pr = procs_self();
    int ok = 1;
    if (!pr->active || pr->rank == 0) {
        if (!m || !m->nccl_unique_id) {
            snprintf(err, errlen, "--comm nccl: this ddptop was built without NCCL");
            ok = 0;
        } else {
            ok = m->nccl_unique_id(id, err, errlen) == 0;
        }
    }
    if (!pr->active)
        return ok ? 0 : -1;
    unsigned char msg[1 + GPU_NCCL_ID_BYTES];
    msg[0] = (unsigned char)ok;
    memcpy(msg + 1, id, GPU_NCCL_ID_BYTES);
    procs_bcast(msg, (int)sizeof(msg));
    if (!msg[0]) {
        if (pr->rank != 0)
            snprintf(err, errlen, "process 0 could not make NCCL's unique id");
        return -1;
    }
    memcpy(id, msg + 1, GPU_NCCL_ID_BYTES);
    return 0;
}
