// chain16_kernels.cu - the kernels of 16-bit activations between layers
// (chain16.h): batch norm, ReLU, residual add, max-pool and adaptive
// average pool over channels-last (NHWC) bf16 or fp16 tensors, the same
// layout cuDNN's tensor-core convolutions read and write, so that a
// convolution's output feeds the next layers without a cast.
//
// Every value is widened to float, computed in float and rounded once to
// nearest even; batch-norm statistics, the running ones and the parameter
// gradients stay fp32. Batch norm reduces a channel over its N*H*W rows in
// two steps: blocks of 32 channels x 8 row groups accumulate shifted sums
// (each channel's values minus its first, which keeps the variance's sum
// of squares from cancelling), one thread per channel then adds the blocks
// in double. Backward kernels that may meet an existing gradient take
// `acc` and gather rather than scatter, as kernels_cuda.cu's do: no
// atomics, every result deterministic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "chain16.h"

namespace
{

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

int launched()
{
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}

#define GRID_LOOP(i, n)                                                                                                \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__device__ __forceinline__ float wide(__nv_bfloat16 h)
{
    return __bfloat162float(h);
}
__device__ __forceinline__ float wide(__half h)
{
    return __half2float(h);
}
template <typename T> __device__ __forceinline__ T narrow(float f);
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float f)
{
    return __float2bfloat16_rn(f);
}
template <> __device__ __forceinline__ __half narrow<__half>(float f)
{
    return __float2half_rn(f);
}

// dst = v, or dst + v with acc, rounded once
template <typename T> __device__ __forceinline__ void put(T *dst, int acc, float v)
{
    *dst = narrow<T>(acc ? wide(*dst) + v : v);
}

// ---- batch norm ---------------------------------------------------------
// A block is 32 channels (x) by BN_ROWS row groups (y); gridDim.y blocks of
// rows. partial[by * C + c] gets the block's sums for channel c.
#define BN_ROWS 8

// A block's two sums of channel c over its row groups, to partial (every
// thread of the block calls it: it synchronises them)
__device__ void block_sums(float s, float q, int c, int C, float2 *partial)
{
    __shared__ float2 sh[BN_ROWS][32];
    sh[threadIdx.y][threadIdx.x] = make_float2(s, q);
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float2 t = sh[0][threadIdx.x];
        for (int j = 1; j < BN_ROWS; j++) {
            t.x += sh[j][threadIdx.x].x;
            t.y += sh[j][threadIdx.x].y;
        }
        partial[(int64_t)blockIdx.y * C + c] = t;
    }
}

// forward: sum (x - K) and sum (x - K)^2, K = x[row 0, c]
template <typename T> __global__ void bn_stats_k(const T *x, int64_t rows, int C, float2 *partial)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f, q = 0.0f;
    if (c < C) {
        float k = wide(x[c]);
        for (int64_t r = blockIdx.y * (int64_t)BN_ROWS + threadIdx.y; r < rows; r += (int64_t)gridDim.y * BN_ROWS) {
            float v = wide(x[r * C + c]) - k;
            s += v;
            q += v * v;
        }
    }
    block_sums(s, q, c, C, partial);
}

// channel c's two sums over the row groups' partial ones, in double
__device__ void groups_sum(const float2 *partial, int groups, int C, int c, double *s, double *q)
{
    *s = 0.0;
    *q = 0.0;
    for (int g = 0; g < groups; g++) {
        *s += partial[(int64_t)g * C + c].x;
        *q += partial[(int64_t)g * C + c].y;
    }
}

// one thread per channel: the batch's mean and 1/sqrt(var + eps), the
// running statistics moved by momentum (the unbiased variance, as cuDNN
// and PyTorch), and y = x * scale + shift's coefficients
template <typename T>
__global__ void bn_finish_k(const float2 *partial, int groups, int C, int64_t rows, const T *x, const float *gamma,
                            const float *beta, float *run_mean, float *run_var, float momentum, float eps,
                            float *mean, float *invstd, float *scale, float *shift)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    double s, q, n = (double)rows;
    groups_sum(partial, groups, C, c, &s, &q);
    double ms = s / n, var = q / n - ms * ms;
    if (var < 0.0)
        var = 0.0;
    double mu = (double)wide(x[c]) + ms;
    double is = 1.0 / sqrt(var + (double)eps);
    mean[c] = (float)mu;
    invstd[c] = (float)is;
    run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * mu);
    run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * (rows > 1 ? var * n / (n - 1.0) : var));
    scale[c] = (float)(gamma[c] * is);
    shift[c] = (float)(beta[c] - mu * gamma[c] * is);
}

// inference: the running statistics' coefficients
__global__ void bn_eval_coef_k(int C, const float *gamma, const float *beta, const float *run_mean,
                               const float *run_var, float eps, float *scale, float *shift)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    double is = 1.0 / sqrt((double)run_var[c] + (double)eps);
    scale[c] = (float)(gamma[c] * is);
    shift[c] = (float)(beta[c] - run_mean[c] * gamma[c] * is);
}

// The element-wise passes run on the statistics' layout too: a thread
// keeps its channel's coefficients in registers and walks rows, a warp
// 32 neighbouring channels of a row (no index divisions).
template <typename T>
__global__ void bn_apply_k(T *y, const T *x, int64_t rows, int C, const float *scale, const float *shift)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    if (c >= C)
        return;
    float a = scale[c], b = shift[c];
    for (int64_t r = blockIdx.y * (int64_t)BN_ROWS + threadIdx.y; r < rows; r += (int64_t)gridDim.y * BN_ROWS)
        y[r * C + c] = narrow<T>(wide(x[r * C + c]) * a + b);
}

// backward: sum dy and sum dy (x - mean)
template <typename T>
__global__ void bn_bwd_stats_k(const T *x, const T *dy, int64_t rows, int C, const float *mean, float2 *partial)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f, q = 0.0f;
    if (c < C) {
        float mu = mean[c];
        for (int64_t r = blockIdx.y * (int64_t)BN_ROWS + threadIdx.y; r < rows; r += (int64_t)gridDim.y * BN_ROWS) {
            float g = wide(dy[r * C + c]);
            s += g;
            q += g * (wide(x[r * C + c]) - mu);
        }
    }
    block_sums(s, q, c, C, partial);
}

// dbeta = sum dy, dgamma = sum dy xhat (written where wanted), and
// dx = a dy + b x + d: with a = gamma invstd,
// dx = a (dy - dbeta/n - xhat dgamma/n), xhat = (x - mean) invstd
__global__ void bn_bwd_finish_k(const float2 *partial, int groups, int C, int64_t rows, const float *gamma,
                                const float *mean, const float *invstd, float *dgamma, float *dbeta, float *ca,
                                float *cb, float *cd)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    double s, q, n = (double)rows;
    groups_sum(partial, groups, C, c, &s, &q);
    double is = invstd[c], dg = q * is, a = (double)gamma[c] * is;
    if (dgamma)
        dgamma[c] = (float)dg;
    if (dbeta)
        dbeta[c] = (float)s;
    double b = -a * dg * is / n;
    ca[c] = (float)a;
    cb[c] = (float)b;
    cd[c] = (float)(-a * s / n - b * mean[c]);
}

template <typename T>
__global__ void bn_bwd_apply_k(T *dx, int acc, const T *dy, const T *x, int64_t rows, int C, const float *ca,
                               const float *cb, const float *cd)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    if (c >= C)
        return;
    float a = ca[c], b = cb[c], d = cd[c];
    for (int64_t r = blockIdx.y * (int64_t)BN_ROWS + threadIdx.y; r < rows; r += (int64_t)gridDim.y * BN_ROWS) {
        int64_t i = r * C + c;
        put(&dx[i], acc, a * wide(dy[i]) + b * wide(x[i]) + d);
    }
}

// ---- element-wise ---------------------------------------------------------
template <typename T> __global__ void relu_k(T *y, const T *x, int64_t n)
{
    GRID_LOOP(i, n)
    {
        float v = wide(x[i]);
        y[i] = narrow<T>(v < 0.0f ? 0.0f : v); // (NaN stays NaN)
    }
}

// the gradient passes where the output is not <= 0 (a NaN output passes it
// on, as the CPU's and the fp32 kernel's do)
template <typename T> __global__ void relu_bwd_k(T *dx, int acc, const T *dy, const T *y, int64_t n)
{
    GRID_LOOP(i, n) put(&dx[i], acc, wide(y[i]) <= 0.0f ? 0.0f : wide(dy[i]));
}

template <typename T> __global__ void add_k(T *y, const T *a, const T *b, int64_t n)
{
    GRID_LOOP(i, n) y[i] = narrow<T>(wide(a[i]) + wide(b[i]));
}

template <typename T> __global__ void copy_acc_k(T *dst, int acc, const T *src, int64_t n)
{
    GRID_LOOP(i, n)
    {
        if (acc)
            put(&dst[i], 1, wide(src[i]));
        else
            dst[i] = src[i];
    }
}

// ---- pooling (NHWC) ---------------------------------------------------------
// where value i of an NHWC [N, H, W, C] tensor is
struct nhwc {
    int c, x, y;
    int64_t img;
};
__device__ __forceinline__ nhwc nhwc_at(int64_t i, int H, int W, int C)
{
    int64_t p = i / C;
    return {(int)(i % C), (int)(p % W), (int)(p / W % H), p / ((int64_t)W * H)};
}

// max-pool: one thread per output value; arg keeps the winner's place in
// its k x k window (ky * k + kx; the first maximum wins, as the CPU's)
template <typename T>
__global__ void maxpool_k(T *y, uint8_t *arg, const T *x, int N, int H, int W, int C, int OH, int OW, int k, int s,
                          int pad)
{
    int64_t n = (int64_t)N * OH * OW * C;
    GRID_LOOP(i, n)
    {
        nhwc o = nhwc_at(i, OH, OW, C);
        int c = o.c, ox = o.x, oy = o.y;
        int64_t img = o.img;
        float best = 0.0f;
        int at = -1;
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                int yy = oy * s - pad + ky, xx = ox * s - pad + kx;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                    continue;
                float v = wide(x[((img * H + yy) * W + xx) * C + c]);
                if (at < 0 || v > best) {
                    best = v;
                    at = ky * k + kx;
                }
            }
        y[i] = narrow<T>(best);
        arg[i] = (uint8_t)(at < 0 ? 255 : at);
    }
}

// one thread per input value: the gradients of the windows it won
template <typename T>
__global__ void maxpool_bwd_k(T *dx, int acc, const T *dy, const uint8_t *arg, int N, int H, int W, int C, int OH,
                              int OW, int k, int s, int pad)
{
    int64_t n = (int64_t)N * H * W * C;
    GRID_LOOP(i, n)
    {
        nhwc at = nhwc_at(i, H, W, C);
        int c = at.c, xx = at.x, yy = at.y;
        int64_t img = at.img;
        int oy0 = yy + pad - k + 1 > 0 ? (yy + pad - k + 1 + s - 1) / s : 0, oy1 = (yy + pad) / s;
        int ox0 = xx + pad - k + 1 > 0 ? (xx + pad - k + 1 + s - 1) / s : 0, ox1 = (xx + pad) / s;
        float g = 0.0f;
        for (int oy = oy0; oy <= oy1 && oy < OH; oy++)
            for (int ox = ox0; ox <= ox1 && ox < OW; ox++) {
                int64_t o = ((img * OH + oy) * OW + ox) * C + c;
                if (arg[o] == (yy + pad - oy * s) * k + (xx + pad - ox * s))
                    g += wide(dy[o]);
            }
        put(&dx[i], acc, g);
    }
}

__device__ void ada_window(int o, int in, int out, int *a, int *b)
{
    *a = (int)(((int64_t)o * in) / out);
    *b = (int)(((int64_t)(o + 1) * in + out - 1) / out);
}

// adaptive average pool from NHWC 16-bit to NCHW float (what the
// classifier reads): one thread per output, channels fastest, so that a
// warp reads 32 neighbouring channels
template <typename T>
__global__ void adapool_k(float *y, const T *x, int N, int H, int W, int C, int OH, int OW)
{
    int64_t n = (int64_t)N * OH * OW * C;
    GRID_LOOP(i, n)
    {
        nhwc o = nhwc_at(i, OH, OW, C);
        int c = o.c, ox = o.x, oy = o.y;
        int64_t img = o.img;
        int y0, y1, x0, x1;
        ada_window(oy, H, OH, &y0, &y1);
        ada_window(ox, W, OW, &x0, &x1);
        float sum = 0.0f;
        for (int yy = y0; yy < y1; yy++)
            for (int xx = x0; xx < x1; xx++)
                sum += wide(x[((img * H + yy) * W + xx) * C + c]);
        y[((img * C + c) * OH + oy) * OW + ox] = sum / (float)((y1 - y0) * (x1 - x0));
    }
}

template <typename T>
__global__ void adapool_bwd_k(T *dx, int acc, const float *dy, int N, int H, int W, int C, int OH, int OW)
{
    int64_t n = (int64_t)N * H * W * C;
    GRID_LOOP(i, n)
    {
        nhwc at = nhwc_at(i, H, W, C);
        int c = at.c, xx = at.x, yy = at.y;
        int64_t img = at.img;
        float g = 0.0f;
        for (int oy = 0; oy < OH; oy++) {
            int y0, y1;
            ada_window(oy, H, OH, &y0, &y1);
            if (yy < y0 || yy >= y1)
                continue;
            for (int ox = 0; ox < OW; ox++) {
                int x0, x1;
                ada_window(ox, W, OW, &x0, &x1);
                if (xx >= x0 && xx < x1)
                    g += dy[((img * C + c) * OH + oy) * OW + ox] / (float)((y1 - y0) * (x1 - x0));
            }
        }
        put(&dx[i], acc, g);
    }
}

// the row groups of a batch norm's reduction: enough blocks to fill the GPU
// (about 1024 blocks in all, each thread 64 rows or more)
unsigned bn_groups(int64_t rows, int C)
{
    int64_t by_rows = (rows + BN_ROWS * 64 - 1) / (BN_ROWS * 64);
    int64_t cap = 1024 / ((C + 31) / 32);
    cap = cap < 8 ? 8 : cap;
    return (unsigned)(by_rows < 1 ? 1 : by_rows < cap ? by_rows : cap);
}

dim3 bn_grid(int64_t rows, int C)
{
    return dim3((unsigned)((C + 31) / 32), bn_groups(rows, C));
}

// the element-wise passes: about 16 rows a thread
dim3 bn_apply_grid(int64_t rows, int C)
{
    int64_t g = (rows + BN_ROWS * 16 - 1) / (BN_ROWS * 16);
    return dim3((unsigned)((C + 31) / 32), (unsigned)(g < 1 ? 1 : g < 65535 ? g : 65535));
}

unsigned per_channel(int C)
{
    return (unsigned)((C + 127) / 128);
}

} // namespace

#define BOTH(bf16, ...)                                                                                               \
    do {                                                                                                               \
        if (bf16) {                                                                                                    \
            typedef __nv_bfloat16 T;                                                                                   \
            __VA_ARGS__;                                                                                                \
        } else {                                                                                                       \
            typedef __half T;                                                                                          \
            __VA_ARGS__;                                                                                                \
        }                                                                                                              \
        return launched();                                                                                             \
    } while (0)

extern "C" {

int c16_bn_groups(int64_t rows, int C)
{
    return (int)bn_groups(rows, C);
}

int c16_bn_forward(uint16_t *y, const uint16_t *x, int64_t rows, int C, const float *gamma, const float *beta,
                   float *run_mean, float *run_var, float momentum, float eps, int train, struct c16_bn_state *st,
                   int bf16, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows <= 0 || C <= 0)
        return 0;
    if (train) {
        dim3 g = bn_grid(rows, C);
        BOTH(bf16, {
            bn_stats_k<T><<<g, dim3(32, BN_ROWS), 0, s>>>((const T *)x, rows, C, (float2 *)st->partial);
            bn_finish_k<T><<<per_channel(C), 128, 0, s>>>((const float2 *)st->partial, (int)g.y, C, rows, (const T *)x,
                                                          gamma, beta, run_mean, run_var, momentum, eps, st->mean,
                                                          st->invstd, st->scale, st->shift);
            bn_apply_k<T><<<bn_apply_grid(rows, C), dim3(32, BN_ROWS), 0, s>>>((T *)y, (const T *)x, rows, C, st->scale,
                                                                            st->shift);
        });
    }
    BOTH(bf16, {
        bn_eval_coef_k<<<per_channel(C), 128, 0, s>>>(C, gamma, beta, run_mean, run_var, eps, st->scale, st->shift);
        bn_apply_k<T><<<bn_apply_grid(rows, C), dim3(32, BN_ROWS), 0, s>>>((T *)y, (const T *)x, rows, C, st->scale,
                                                                        st->shift);
    });
}

int c16_bn_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint16_t *x, int64_t rows, int C,
                    const float *gamma, float *dgamma, float *dbeta, struct c16_bn_state *st, int bf16, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows <= 0 || C <= 0)
        return 0;
    dim3 g = bn_grid(rows, C);
    BOTH(bf16, {
        bn_bwd_stats_k<T><<<g, dim3(32, BN_ROWS), 0, s>>>((const T *)x, (const T *)dy, rows, C, st->mean,
                                                          (float2 *)st->partial);
        bn_bwd_finish_k<<<per_channel(C), 128, 0, s>>>((const float2 *)st->partial, (int)g.y, C, rows, gamma,
                                                       st->mean, st->invstd, dgamma, dbeta, st->scale, st->shift,
                                                       st->coef);
        if (dx)
            bn_bwd_apply_k<T><<<bn_apply_grid(rows, C), dim3(32, BN_ROWS), 0, s>>>(
                (T *)dx, acc, (const T *)dy, (const T *)x, rows, C, st->scale, st->shift, st->coef);
    });
}

int c16_relu(uint16_t *y, const uint16_t *x, int64_t n, int bf16, void *stream)
{
    BOTH(bf16, relu_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)y, (const T *)x, n));
}

int c16_relu_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint16_t *y, int64_t n, int bf16, void *stream)
{
    BOTH(bf16, relu_bwd_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)dx, acc, (const T *)dy, (const T *)y,
                                                                            n));
}

int c16_add(uint16_t *y, const uint16_t *a, const uint16_t *b, int64_t n, int bf16, void *stream)
{
    BOTH(bf16, add_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)y, (const T *)a, (const T *)b, n));
}

int c16_copy_acc(uint16_t *dst, int acc, const uint16_t *src, int64_t n, int bf16, void *stream)
{
    BOTH(bf16, copy_acc_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)dst, acc, (const T *)src, n));
}

int c16_maxpool(uint16_t *y, uint8_t *arg, const uint16_t *x, int N, int H, int W, int C, int OH, int OW, int k,
                int s, int pad, int bf16, void *stream)
{
    if (k * k > 255)
        return -1; /* (arg is a byte) */
    int64_t n = (int64_t)N * OH * OW * C;
    BOTH(bf16, maxpool_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)y, arg, (const T *)x, N, H, W, C, OH,
                                                                          OW, k, s, pad));
}

int c16_maxpool_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint8_t *arg, int N, int H, int W, int C,
                         int OH, int OW, int k, int s, int pad, int bf16, void *stream)
{
    int64_t n = (int64_t)N * H * W * C;
    BOTH(bf16, maxpool_bwd_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)dx, acc, (const T *)dy, arg, N, H,
                                                                              W, C, OH, OW, k, s, pad));
}

int c16_adapool(float *y, const uint16_t *x, int N, int H, int W, int C, int OH, int OW, int bf16, void *stream)
{
    int64_t n = (int64_t)N * OH * OW * C;
    BOTH(bf16,
         adapool_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(y, (const T *)x, N, H, W, C, OH, OW));
}

int c16_adapool_backward(uint16_t *dx, int acc, const float *dy, int N, int H, int W, int C, int OH, int OW, int bf16,
                         void *stream)
{
    int64_t n = (int64_t)N * H * W * C;
    BOTH(bf16, adapool_bwd_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)dx, acc, dy, N, H, W, C, OH,
                                                                              OW));
}

} // extern "C"
