// reduce_kernels.cu - the element-wise kernels of the shared-GPU ring:
// dst += src and x *= f over float buffers in device memory, and over
// 16-bit ones (--grad-compress: fp16 or bf16, computed in float and
// rounded to nearest even, as half.h does it on the host).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

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

__device__ __forceinline__ float widen(__half h)
{
    return __half2float(h);
}

__device__ __forceinline__ float widen(__nv_bfloat16 h)
{
    return __bfloat162float(h);
}

__device__ __forceinline__ void narrow(__half *d, float f)
{
    *d = __float2half_rn(f);
}

__device__ __forceinline__ void narrow(__nv_bfloat16 *d, float f)
{
    *d = __float2bfloat16_rn(f);
}

template <typename T> __global__ void add16_kernel(T *__restrict__ dst, const T *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        narrow(&dst[i], widen(dst[i]) + widen(src[i]));
}

template <typename T> __global__ void scale16_kernel(T *x, size_t n, float f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        narrow(&x[i], widen(x[i]) * f);
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
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1; // (the caller reads and clears it)
}

extern "C" int cuda_ring_scale(float *x, size_t n, float f, void *stream)
{
    scale_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, f);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1; // (the caller reads and clears it)
}

// bf16: 1 for bfloat16, 0 for fp16
extern "C" int cuda_ring_add16(uint16_t *dst, const uint16_t *src, size_t n, int bf16, void *stream)
{
    if (bf16)
        add16_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>((__nv_bfloat16 *)dst,
                                                                       (const __nv_bfloat16 *)src, n);
    else
        add16_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>((__half *)dst, (const __half *)src, n);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1; // (the caller reads and clears it)
}

extern "C" int cuda_ring_scale16(uint16_t *x, size_t n, float f, int bf16, void *stream)
{
    if (bf16)
        scale16_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>((__nv_bfloat16 *)x, n, f);
    else
        scale16_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>((__half *)x, n, f);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1; // (the caller reads and clears it)
}
