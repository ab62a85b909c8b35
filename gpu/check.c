/* check.c - the libraries' words for a status (check.h). */
#include "check.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#ifdef DDPTOP_HAVE_NCCL
#include <nccl.h>
#endif

const char *gpu_status_string(enum gpu_lib lib, int status)
{
    switch (lib) {
    case GPU_CUDA:
        return cudaGetErrorString((cudaError_t)status);
    case GPU_CUDNN:
        return cudnnGetErrorString((cudnnStatus_t)status);
    case GPU_CUBLAS:
        return cublasGetStatusString((cublasStatus_t)status);
    case GPU_NCCL:
#ifdef DDPTOP_HAVE_NCCL
        return ncclGetErrorString((ncclResult_t)status);
#endif
        break;
    }
    return "unknown error";
}
