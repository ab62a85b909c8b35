// kernels_cuda.cu - the element-wise and per-row kernels the GPU path needs
// beside cuDNN and cuBLAS: bias, ReLU, softmax cross-entropy and the SGD
// update (PyTorch's semantics, as optim.c). Each returns 0 or -1 after
// checking the launch.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

int launched()
{
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

#define GRID_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void add_bias_k(float *out, const float *b, int rows, int cols, int inner)
{
    int64_t n = (int64_t)rows * cols * inner;
    GRID_LOOP(i, n) out[i] += b[(i / inner) % cols];
}

__global__ void relu_fwd_k(float *out, const float *in, int64_t n)
{
    GRID_LOOP(i, n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

__global__ void relu_bwd_k(float *din, int acc, const float *dout, const float *out, int64_t n)
{
    GRID_LOOP(i, n)
    {
        float g = out[i] > 0.0f ? dout[i] : 0.0f;
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

__global__ void sgd_k(float *p, const float *g, float *buf, int64_t n, float lr, float momentum, float wd)
{
    GRID_LOOP(i, n)
    {
        float d = g[i] + wd * p[i];
        float b = momentum != 0.0f ? momentum * buf[i] + d : d;
        buf[i] = b;
        p[i] -= lr * b;
    }
}

__global__ void fill_k(float *x, int64_t n, float v)
{
    GRID_LOOP(i, n) x[i] = v;
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

int cuk_xent_forward(float *probs, float *row_loss, int32_t *row_hit, const float *logits, const int32_t *labels,
                     int B, int K, void *stream)
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

int cuk_sgd(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd, void *stream)
{
    sgd_k<<<grid_for((int64_t)n), 256, 0, (cudaStream_t)stream>>>(p, g, buf, (int64_t)n, lr, momentum, wd);
    return launched();
}

int cuk_fill(float *x, size_t n, float v, void *stream)
{
    fill_k<<<grid_for((int64_t)n), 256, 0, (cudaStream_t)stream>>>(x, (int64_t)n, v);
    return launched();
}

} // extern "C"
