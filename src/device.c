/* device.c - choosing the device for --device, and loading the GPU module.
 *
 * The module (libddptop-cuda.so, gpu/) is code that runs as whoever starts
 * ddptop, so it is loaded from two places only: the file named by
 * DDPTOP_GPU_MODULE, else beside the running program (a build tree), else
 * the install's folder (`make install`). Never a folder above the program,
 * nor a search path. Wherever it is, the file and every folder above it
 * must belong to root or to this user and be writable by no one else (a
 * folder above the module's own may be one that anyone can write into but
 * only owners rename in, as /tmp is): a module another user could have
 * put there is refused with one line, and not a byte of it runs. A module
 * that is found but cannot be loaded (CUDA's libraries missing or broken)
 * is not an error: the GPU is simply absent, and the reason is given once. */
#include "devices.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "procs.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const struct gpu_module *g_module;
static char g_why[PATH_MAX + 256];

#ifdef DDPTOP_GPU_MODULE_FILE
/* Whether the owner and mode of st let only root or this user change it
 * (`sticky_ok`: a folder anyone may write into, where only owners may
 * rename or remove, counts as not writable by others). */
static int owned_safely(const struct stat *st, int sticky_ok)
{
    if (st->st_uid != 0 && st->st_uid != geteuid())
        return 0;
    return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (sticky_ok && (st->st_mode & S_ISVTX));
}

/* 0 when the module at real (a resolved path) and every folder above it
 * are safe to load from (above); else -1 with g_why naming what is not. */
static int check_trust(const char *shown, const char *real)
{
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(g_why, sizeof(g_why), "%s is not a regular file", shown);
        return -1;
    }
    if (!owned_safely(&st, 0)) {
        snprintf(g_why, sizeof(g_why), "%s: refused: another user %s it (owner uid %u, mode %04o)", shown,
                 st.st_uid != 0 && st.st_uid != geteuid() ? "owns" : "can write", (unsigned)st.st_uid,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", real);
    for (int first = 1;; first = 0) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        slash[slash == dir] = 0; /* ("/lib": the root) */
        if (stat(dir, &st) != 0 || !owned_safely(&st, !first)) {
            snprintf(g_why, sizeof(g_why),
                     "%s: refused: another user can write its folder %s (owner uid %u, mode %04o)", shown, dir,
                     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
            return -1;
        }
        if (slash == dir)
            break;
    }
    return 0;
}

/* Tries one path: 1 when loaded, 0 when there is no file, -1 when the file
 * is there but is refused or does not load (g_why says why). */
static int try_load(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    /* every link resolved: the file checked is the file loaded */
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        snprintf(g_why, sizeof(g_why), "%s: %s", path, strerror(errno));
        return -1;
    }
    if (check_trust(path, real) != 0)
        return -1;
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
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
    char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
    if (slash) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - exe), exe, DDPTOP_GPU_MODULE_FILE);
        if (try_load(path) != 0)
            return;
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
