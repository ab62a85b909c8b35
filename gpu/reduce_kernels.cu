// reduce_kernels.cu - the element-wise kernels of the shared-GPU ring:
// dst += src and x *= f over float buffers in device memory.
#include <cuda_runtime.h>
#include <stddef.h>

namespace {

__global__ void add_kernel(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

__global__ void scale_kernel(float *x, size_t n, float f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= f;
}

unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

} // namespace

extern "C" int cuda_ring_add(float *dst, const float *src, size_t n, void *stream)
{
    add_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(dst, src, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int cuda_ring_scale(float *x, size_t n, float f, void *stream)
{
    scale_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, f);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
