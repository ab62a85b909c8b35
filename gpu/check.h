/* check.h - the GPU module's one way to check a CUDA, cuDNN, cuBLAS or
 * NCCL status: GPU_CHECK evaluates the call and, when it fails, returns
 * from the caller what `fail(ctx, call, why, file, line)` returns, where
 * `fail` writes the message (naming the call and file:line) wherever that
 * context keeps its errors. All four libraries report success as 0. */
#ifndef DDPTOP_GPU_CHECK_H
#define DDPTOP_GPU_CHECK_H

enum gpu_lib { GPU_CUDA = 0, GPU_CUDNN, GPU_CUBLAS, GPU_NCCL };

/* The library's words for a status. */
const char *gpu_status_string(enum gpu_lib lib, int status);

#define GPU_CHECK(lib, fail, ctx, call)                                                                                \
    do {                                                                                                               \
        int s_ = (int)(call);                                                                                          \
        if (s_ != 0)                                                                                                   \
            return fail((ctx), #call, gpu_status_string((lib), s_), __FILE__, __LINE__);                               \
    } while (0)

/* The file's name without its folders, for messages. */
static inline const char *gpu_file(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            b = p + 1;
    return b;
}

#endif
