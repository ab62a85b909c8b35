// kernels_cuda.cu - the kernels the GPU path needs beside cuDNN and cuBLAS:
// bias, ReLU, dropout (the CPU's masks), residual add, copies
// with accumulation, padding, ceil-mode max-pool, adaptive average pool,
// softmax cross-entropy and the SGD update (PyTorch's semantics, as
// optim.c). Backward kernels that may meet an existing gradient take `acc`
// (add instead of write) and gather rather than scatter, so none needs
// atomics and every result is deterministic. Each launcher returns 0 or -1
// after checking the launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace
{

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

int launched()
{
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1; // the caller reports it
}

#define GRID_LOOP(i, n)                                                                                                \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void add_bias_k(float *out, const float *b, int rows, int cols, int inner)
{
    int64_t n = (int64_t)rows * cols * inner;
    GRID_LOOP(i, n) out[i] += b[(i / inner) % cols];
}

__global__ void relu_fwd_k(float *out, const float *in, int64_t n)
{
    GRID_LOOP(i, n) out[i] = in[i] < 0.0f ? 0.0f : in[i]; // (NaN stays NaN, as PyTorch's)
}

__global__ void relu_bwd_k(float *din, int acc, const float *dout, const float *out, int64_t n)
{
    GRID_LOOP(i, n)
    {
        float g = out[i] <= 0.0f ? 0.0f : dout[i];
        din[i] = acc ? din[i] + g : g;
    }
}

// one thread per row: K (classes) is small
__global__ void xent_fwd_k(float *probs, float *row_loss, int32_t *row_hit, const float *logits, const int32_t *labels,
                           int B, int K)
{
    GRID_LOOP(r, B)
    {
        const float *z = logits + r * K;
        float *p = probs + r * K;
        float mx = z[0];
        int arg = 0;
        for (int k = 1; k < K; k++)
            if (z[k] > mx) {
                mx = z[k];
                arg = k;
            }
        double sum = 0.0;
        for (int k = 0; k < K; k++) {
            p[k] = expf(z[k] - mx);
            sum += p[k];
        }
        for (int k = 0; k < K; k++)
            p[k] = (float)(p[k] / sum);
        row_loss[r] = (float)(-(z[labels[r]] - mx - log(sum)));
        row_hit[r] = arg == labels[r];
    }
}

__global__ void xent_bwd_k(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale)
{
    int64_t n = (int64_t)B * K;
    GRID_LOOP(i, n) dlogits[i] = (probs[i] - ((int)(i % K) == labels[i / K] ? 1.0f : 0.0f)) * scale;
}

__global__ void sgd_k(float *p, const float *g, float *buf, int64_t n, float lr, float momentum, float wd, float gs)
{
    GRID_LOOP(i, n)
    {
        float d = gs * g[i] + wd * p[i];
        float b = momentum != 0.0f ? momentum * buf[i] + d : d;
        buf[i] = b;
        p[i] -= lr * b;
    }
}

__global__ void fill_k(float *x, int64_t n, float v)
{
    GRID_LOOP(i, n) x[i] = v;
}

// --loss-scale: one flag raised by any thread that meets a NaN or an
// infinity (the count is only ever compared with 0)
__global__ void count_nonfinite_k(int32_t *count, const float *v, int64_t n)
{
    int bad = 0;
    GRID_LOOP(i, n) bad |= !isfinite(v[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        atomicAdd(count, 1);
}

// --precision bf16 and fp16: operands rounded to nearest even (NaN stays
// NaN; fp16 overflows to infinity, which the loss scaler catches), and
// 16-bit results widened back, exactly
__device__ __forceinline__ void round16(__nv_bfloat16 *d, float f)
{
    *d = __float2bfloat16_rn(f);
}
__device__ __forceinline__ void round16(__half *d, float f)
{
    *d = __float2half_rn(f);
}
__device__ __forceinline__ float widen16(__nv_bfloat16 h)
{
    return __bfloat162float(h);
}
__device__ __forceinline__ float widen16(__half h)
{
    return __half2float(h);
}

template <typename T> __global__ void to16_k(T *dst, const float *src, int64_t n)
{
    GRID_LOOP(i, n) round16(&dst[i], src[i]);
}

template <typename T> __global__ void from16_k(float *dst, int acc, const T *src, int64_t n)
{
    GRID_LOOP(i, n) dst[i] = acc ? dst[i] + widen16(src[i]) : widen16(src[i]);
}

// pairs of neighbouring elements, as one 32-bit access
__device__ __forceinline__ void round16x2(__nv_bfloat16 *d, float a, float b)
{
    *(__nv_bfloat162 *)d = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void round16x2(__half *d, float a, float b)
{
    *(__half2 *)d = __floats2half2_rn(a, b);
}
__device__ __forceinline__ float2 widen16x2(const __nv_bfloat16 *s)
{
    return __bfloat1622float2(*(const __nv_bfloat162 *)s);
}
__device__ __forceinline__ float2 widen16x2(const __half *s)
{
    return __half22float2(*(const __half2 *)s);
}

// the same with a layout change, for cuDNN's channels-last tensor-core
// kernels: NCHW fp32 to NHWC 16-bit (a filter KCRS to KRSC alike: N = K,
// HW = R S), and back. Each block moves a tile of 64 channels by 32
// positions of one image's [C, HW] plane through shared memory, so that
// a warp reads and writes 128 consecutive bytes on both sides: 32 floats
// of one channel, or 64 16-bit channels of one position as 32 pairs
// (where C is even, as channels-last's 8s are; else one at a time). An
// element-wise version, one side strided by HW, ran several times slower,
// and 32x32 tiles with 2-byte stores reached a third of an H200's memory
// bandwidth
#define TILE_C 64
#define TILE_HW 32
#define TILE_ROWS 8
template <typename T> __global__ void to16_nhwc_k(T *dst, const float *src, int64_t N, int C, int HW)
{
    __shared__ float tile[TILE_C][TILE_HW + 1]; // [c][hw] (+1: fewer bank conflicts on the column reads)
    int hw0 = blockIdx.x * TILE_HW, c0 = blockIdx.y * TILE_C, tx = threadIdx.x, c = c0 + 2 * tx;
    for (int64_t n = blockIdx.z; n < N; n += gridDim.z) {
        int64_t base = n * C * HW;
        for (int j = threadIdx.y; j < TILE_C; j += TILE_ROWS)
            if (c0 + j < C && hw0 + tx < HW)
                tile[j][tx] = src[base + (int64_t)(c0 + j) * HW + hw0 + tx];
        __syncthreads();
        for (int j = threadIdx.y; j < TILE_HW; j += TILE_ROWS) {
            if (hw0 + j >= HW || c >= C)
                continue;
            T *d = &dst[base + (int64_t)(hw0 + j) * C + c];
            if (!(C & 1) && c + 1 < C) {
                round16x2(d, tile[2 * tx][j], tile[2 * tx + 1][j]);
            } else {
                round16(d, tile[2 * tx][j]);
                if (c + 1 < C)
                    round16(d + 1, tile[2 * tx + 1][j]);
            }
        }
        __syncthreads(); // (the tile is refilled for the next image)
    }
}

template <typename T> __global__ void from16_nchw_k(float *dst, int acc, const T *src, int64_t N, int C, int HW)
{
    __shared__ float tile[TILE_C][TILE_HW + 1]; // [c][hw]
    int hw0 = blockIdx.x * TILE_HW, c0 = blockIdx.y * TILE_C, tx = threadIdx.x, c = c0 + 2 * tx;
    for (int64_t n = blockIdx.z; n < N; n += gridDim.z) {
        int64_t base = n * C * HW;
        for (int j = threadIdx.y; j < TILE_HW; j += TILE_ROWS) {
            if (hw0 + j >= HW || c >= C)
                continue;
            const T *s = &src[base + (int64_t)(hw0 + j) * C + c];
            if (!(C & 1) && c + 1 < C) {
                float2 v = widen16x2(s);
                tile[2 * tx][j] = v.x;
                tile[2 * tx + 1][j] = v.y;
            } else {
                tile[2 * tx][j] = widen16(s[0]);
                if (c + 1 < C)
                    tile[2 * tx + 1][j] = widen16(s[1]);
            }
        }
        __syncthreads();
        for (int j = threadIdx.y; j < TILE_C; j += TILE_ROWS)
            if (c0 + j < C && hw0 + tx < HW) {
                float *d = &dst[base + (int64_t)(c0 + j) * HW + hw0 + tx];
                *d = acc ? *d + tile[j][tx] : tile[j][tx];
            }
        __syncthreads();
    }
}

// a transpose's grid: tiles of [C, HW] in x and y, images in z
static dim3 tile_grid(int64_t N, int C, int64_t HW)
{
    return dim3((unsigned)((HW + TILE_HW - 1) / TILE_HW), (unsigned)((C + TILE_C - 1) / TILE_C),
                (unsigned)(N < 65535 ? N : 65535));
}

// the launches, by element type
template <typename T> int to16(uint16_t *dst, const float *src, int64_t n, void *stream)
{
    to16_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((T *)dst, src, n);
    return launched();
}

template <typename T> int from16(float *dst, int acc, const uint16_t *src, int64_t n, void *stream)
{
    from16_k<T><<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(dst, acc, (const T *)src, n);
    return launched();
}

template <typename T> int to16_nhwc(uint16_t *dst, const float *src, int64_t N, int C, int64_t HW, void *stream)
{
    if (HW > INT32_MAX) /* (2^31 positions an image: past --input's bounds) */
        return -1;
    if (N <= 0 || C <= 0 || HW <= 0)
        return 0;
    to16_nhwc_k<T>
        <<<tile_grid(N, C, HW), dim3(TILE_HW, TILE_ROWS), 0, (cudaStream_t)stream>>>((T *)dst, src, N, C, (int)HW);
    return launched();
}

template <typename T>
int from16_nchw(float *dst, int acc, const uint16_t *src, int64_t N, int C, int64_t HW, void *stream)
{
    if (HW > INT32_MAX) /* (2^31 positions an image: past --input's bounds) */
        return -1;
    if (N <= 0 || C <= 0 || HW <= 0)
        return 0;
    from16_nchw_k<T><<<tile_grid(N, C, HW), dim3(TILE_HW, TILE_ROWS), 0, (cudaStream_t)stream>>>(
        dst, acc, (const T *)src, N, C, (int)HW);
    return launched();
}

__global__ void copy_acc_k(float *dst, int acc, const float *src, int64_t n)
{
    GRID_LOOP(i, n) dst[i] = acc ? dst[i] + src[i] : src[i];
}

__global__ void add_k(float *out, const float *a, const float *b, int64_t n)
{
    GRID_LOOP(i, n) out[i] = a[i] + b[i];
}

// the same keep test as dropout_keep in kernels_ref.h, so masks match the CPU
__device__ int keep_d(uint64_t key, int64_t i, float p)
{
    uint64_t z = key + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * (1.0 / 16777216.0)) >= p;
}

__global__ void dropout_fwd_k(float *out, uint8_t *mask, const float *in, int64_t n, float p, float scale, uint64_t key)
{
    GRID_LOOP(i, n)
    {
        int keep = keep_d(key, i, p);
        mask[i] = (uint8_t)keep;
        out[i] = keep ? in[i] * scale : 0.0f;
    }
}

__global__ void dropout_bwd_k(float *din, int acc, const float *dout, const uint8_t *mask, float scale, int64_t n)
{
    GRID_LOOP(i, n)
    {
        float g = mask[i] ? dout[i] * scale : 0.0f;
        din[i] = acc ? din[i] + g : g;
    }
}

// rows x width floats from src (row pitch spitch) to dst (row pitch dpitch)
__global__ void rows_k(float *dst, int64_t dpitch, int acc, const float *src, int64_t spitch, int rows, int64_t width)
{
    int64_t n = (int64_t)rows * width;
    GRID_LOOP(i, n)
    {
        int64_t r = i / width, c = i % width;
        float v = src[r * spitch + c];
        float *d = dst + r * dpitch + c;
        *d = acc ? *d + v : v;
    }
}

__global__ void pad_fwd_k(float *out, const float *in, int planes, int H, int W, int p)
{
    int OH = H + 2 * p, OW = W + 2 * p;
    int64_t n = (int64_t)planes * OH * OW;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)OH * OW);
        int y = (int)(i / OW % OH) - p, x = (int)(i % OW) - p;
        out[i] = y >= 0 && y < H && x >= 0 && x < W ? in[(q * H + y) * W + x] : 0.0f;
    }
}

__global__ void pad_bwd_k(float *din, int acc, const float *dout, int planes, int H, int W, int p)
{
    int OH = H + 2 * p, OW = W + 2 * p;
    int64_t n = (int64_t)planes * H * W;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)H * W);
        int y = (int)(i / W % H), x = (int)(i % W);
        float g = dout[(q * OH + y + p) * OW + x + p];
        din[i] = acc ? din[i] + g : g;
    }
}

// max-pool with separate right/bottom padding (PyTorch's ceil_mode); the
// first maximum of a window wins, as in the CPU reference
__global__ void maxpool_fwd_k(float *out, int32_t *arg, const float *in, int planes, int H, int W, int OH, int OW,
                              int k, int s, int pad)
{
    int64_t n = (int64_t)planes * OH * OW;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)OH * OW);
        int oy = (int)(i / OW % OH), ox = (int)(i % OW);
        const float *src = in + q * H * W;
        float best = 0.0f;
        int at = -1;
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                int y = oy * s - pad + ky, x = ox * s - pad + kx;
                if (y < 0 || y >= H || x < 0 || x >= W)
                    continue;
                float v = src[y * W + x];
                if (at < 0 || v > best) {
                    best = v;
                    at = y * W + x;
                }
            }
        out[i] = best;
        arg[i] = at;
    }
}

// one thread per input value: sums the gradients of the windows whose
// maximum it was (no atomics, deterministic)
__global__ void maxpool_bwd_k(float *din, int acc, const float *dout, const int32_t *arg, int planes, int H, int W,
                              int OH, int OW, int k, int s, int pad)
{
    int64_t n = (int64_t)planes * H * W;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)H * W);
        int y = (int)(i / W % H), x = (int)(i % W), me = y * W + x;
        // windows oy with oy*s - pad <= y < oy*s - pad + k
        int oy0 = y + pad - k + 1 > 0 ? (y + pad - k + 1 + s - 1) / s : 0, oy1 = (y + pad) / s;
        int ox0 = x + pad - k + 1 > 0 ? (x + pad - k + 1 + s - 1) / s : 0, ox1 = (x + pad) / s;
        float g = 0.0f;
        for (int oy = oy0; oy <= oy1 && oy < OH; oy++)
            for (int ox = ox0; ox <= ox1 && ox < OW; ox++) {
                int64_t o = (q * OH + oy) * OW + ox;
                if (arg[o] == me)
                    g += dout[o];
            }
        din[i] = acc ? din[i] + g : g;
    }
}

__device__ void ada_window(int o, int in, int out, int *a, int *b)
{
    *a = (int)(((int64_t)o * in) / out);
    *b = (int)(((int64_t)(o + 1) * in + out - 1) / out);
}

__global__ void adapool_fwd_k(float *out, const float *in, int planes, int H, int W, int OH, int OW)
{
    int64_t n = (int64_t)planes * OH * OW;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)OH * OW);
        int oy = (int)(i / OW % OH), ox = (int)(i % OW), y0, y1, x0, x1;
        ada_window(oy, H, OH, &y0, &y1);
        ada_window(ox, W, OW, &x0, &x1);
        const float *src = in + q * H * W;
        float sum = 0.0f;
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++)
                sum += src[y * W + x];
        out[i] = sum / (float)((y1 - y0) * (x1 - x0));
    }
}

__global__ void adapool_bwd_k(float *din, int acc, const float *dout, int planes, int H, int W, int OH, int OW)
{
    int64_t n = (int64_t)planes * H * W;
    GRID_LOOP(i, n)
    {
        int64_t q = i / ((int64_t)H * W);
        int y = (int)(i / W % H), x = (int)(i % W);
        float g = 0.0f;
        for (int oy = 0; oy < OH; oy++) {
            int y0, y1;
            ada_window(oy, H, OH, &y0, &y1);
            if (y < y0 || y >= y1)
                continue;
            for (int ox = 0; ox < OW; ox++) {
                int x0, x1;
                ada_window(ox, W, OW, &x0, &x1);
                if (x >= x0 && x < x1)
                    g += dout[(q * OH + oy) * OW + ox] / (float)((y1 - y0) * (x1 - x0));
            }
        }
        din[i] = acc ? din[i] + g : g;
    }
}

// the rank-ordered average of gather-scatter, as the host loop does it:
// slice 0, plus each later slice in order, times 1/world
__global__ void average_slices_k(float *dst, const float *slices, int world, int64_t n, float inv)
{
    GRID_LOOP(i, n)
    {
        float s = slices[i];
        for (int r = 1; r < world; r++)
            s += slices[(int64_t)r * n + i];
        dst[i] = s * inv;
    }
}

} // namespace

extern "C" {

int cuk_add_bias(float *out, const float *b, int rows, int cols, int inner, void *stream)
{
    int64_t n = (int64_t)rows * cols * inner;
    add_bias_k<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(out, b, rows, cols, inner);
    return launched();
}

int cuk_relu_forward(float *out, const float *in, int64_t n, void *stream)
{
    relu_fwd_k<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(out, in, n);
    return launched();
}

int cuk_relu_backward(float *din, int acc, const float *dout, const float *out, int64_t n, void *stream)
{
    relu_bwd_k<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(din, acc, dout, out, n);
    return launched();
}

int cuk_xent_forward(float *probs, float *row_loss, int32_t *row_hit, const float *logits, const int32_t *labels, int B,
                     int K, void *stream)
{
    xent_fwd_k<<<grid_for(B), 256, 0, (cudaStream_t)stream>>>(probs, row_loss, row_hit, logits, labels, B, K);
    return launched();
}

int cuk_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale,
                      void *stream)
{
    xent_bwd_k<<<grid_for((int64_t)B * K), 256, 0, (cudaStream_t)stream>>>(dlogits, probs, labels, B, K, scale);
    return launched();
}

int cuk_sgd(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd, float gscale,
            void *stream)
{
    sgd_k<<<grid_for((int64_t)n), 256, 0, (cudaStream_t)stream>>>(p, g, buf, (int64_t)n, lr, momentum, wd, gscale);
    return launched();
}

int cuk_fill(float *x, size_t n, float v, void *stream)
{
    fill_k<<<grid_for((int64_t)n), 256, 0, (cudaStream_t)stream>>>(x, (int64_t)n, v);
    return launched();
}

/* One thread that holds its stream for ns nanoseconds of the GPU's global
 * timer: a straggler's extra compute time (--slow-rank). */
__global__ void delay_k(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

int cuk_delay(uint64_t ns, void *stream)
{
    delay_k<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)ns);
    return launched();
}

#define LAUNCH(n, kernel, ...)                                                                                         \
    do {                                                                                                               \
        kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(__VA_ARGS__);                                            \
        return launched();                                                                                             \
    } while (0)

int cuk_copy_acc(float *dst, int acc, const float *src, int64_t n, void *stream)
{
    LAUNCH(n, copy_acc_k, dst, acc, src, n);
}

int cuk_count_nonfinite(int32_t *count, const float *v, size_t n, void *stream)
{
    LAUNCH((int64_t)n, count_nonfinite_k, count, v, (int64_t)n);
}

int cuk_to_16(uint16_t *dst, const float *src, int64_t n, int bf16, void *stream)
{
    return bf16 ? to16<__nv_bfloat16>(dst, src, n, stream) : to16<__half>(dst, src, n, stream);
}

int cuk_from_16(float *dst, int acc, const uint16_t *src, int64_t n, int bf16, void *stream)
{
    return bf16 ? from16<__nv_bfloat16>(dst, acc, src, n, stream) : from16<__half>(dst, acc, src, n, stream);
}

int cuk_to_16_nhwc(uint16_t *dst, const float *src, int64_t N, int C, int64_t HW, int bf16, void *stream)
{
    return bf16 ? to16_nhwc<__nv_bfloat16>(dst, src, N, C, HW, stream) : to16_nhwc<__half>(dst, src, N, C, HW, stream);
}

int cuk_from_16_nchw(float *dst, int acc, const uint16_t *src, int64_t N, int C, int64_t HW, int bf16, void *stream)
{
    return bf16 ? from16_nchw<__nv_bfloat16>(dst, acc, src, N, C, HW, stream)
                : from16_nchw<__half>(dst, acc, src, N, C, HW, stream);
}

int cuk_add(float *out, const float *a, const float *b, int64_t n, void *stream)
{
    LAUNCH(n, add_k, out, a, b, n);
}

int cuk_dropout_forward(float *out, uint8_t *mask, const float *in, int64_t n, float p, uint64_t key, void *stream)
{
    LAUNCH(n, dropout_fwd_k, out, mask, in, n, p, 1.0f / (1.0f - p), key);
}

int cuk_dropout_backward(float *din, int acc, const float *dout, const uint8_t *mask, float p, int64_t n, void *stream)
{
    LAUNCH(n, dropout_bwd_k, din, acc, dout, mask, 1.0f / (1.0f - p), n);
}

int cuk_rows(float *dst, int64_t dpitch, int acc, const float *src, int64_t spitch, int rows, int64_t width,
             void *stream)
{
    LAUNCH((int64_t)rows * width, rows_k, dst, dpitch, acc, src, spitch, rows, width);
}

int cuk_pad_forward(float *out, const float *in, int planes, int H, int W, int p, void *stream)
{
    LAUNCH((int64_t)planes * (H + 2 * p) * (W + 2 * p), pad_fwd_k, out, in, planes, H, W, p);
}

int cuk_pad_backward(float *din, int acc, const float *dout, int planes, int H, int W, int p, void *stream)
{
    LAUNCH((int64_t)planes * H * W, pad_bwd_k, din, acc, dout, planes, H, W, p);
}

int cuk_maxpool_forward(float *out, int32_t *arg, const float *in, int planes, int H, int W, int OH, int OW, int k,
                        int s, int pad, void *stream)
{
    LAUNCH((int64_t)planes * OH * OW, maxpool_fwd_k, out, arg, in, planes, H, W, OH, OW, k, s, pad);
}

int cuk_maxpool_backward(float *din, int acc, const float *dout, const int32_t *arg, int planes, int H, int W, int OH,
                         int OW, int k, int s, int pad, void *stream)
{
    LAUNCH((int64_t)planes * H * W, maxpool_bwd_k, din, acc, dout, arg, planes, H, W, OH, OW, k, s, pad);
}

int cuk_adapool_forward(float *out, const float *in, int planes, int H, int W, int OH, int OW, void *stream)
{
    LAUNCH((int64_t)planes * OH * OW, adapool_fwd_k, out, in, planes, H, W, OH, OW);
}

int cuk_adapool_backward(float *din, int acc, const float *dout, int planes, int H, int W, int OH, int OW, void *stream)
{
    LAUNCH((int64_t)planes * H * W, adapool_bwd_k, din, acc, dout, planes, H, W, OH, OW);
}

int cuk_average_slices(float *dst, const float *slices, int world, int64_t n, void *stream)
{
    LAUNCH(n, average_slices_k, dst, slices, world, n, 1.0f / (float)world);
}

} // extern "C"
