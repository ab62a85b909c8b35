/* kernels_cuda.c - cuDNN convolution and pooling, cuBLAS GEMM, and the
 * bookkeeping around them (see kernels_cuda.h). Convolution algorithms are
 * chosen once per shape, by timing every one cuDNN offers (cudnnFind*Ex,
 * as PyTorch's cudnn.benchmark) or by cuDNN's heuristics, limited to a
 * workspace that is sized at creation and shared by the context's
 * convolutions; a cache of choices per shape lets a shape met again (in
 * another layer, or another model on the same device) skip the timing.
 * Nothing is allocated in the hot path.
 *
 * --precision bf16 (and fp16, alike in IEEE half precision, with the rank
 * loop's loss scaling) is mixed precision as autocast does it for these two
 * kinds of layer: a convolution's or a linear layer's input, weights and
 * output gradient are rounded to bfloat16 into the context's three
 * scratch buffers (one each for input, weight and output sized things),
 * the products run on tensor cores with fp32 sums, and the results are
 * widened back into the model's fp32 tensors: cuBLAS writes fp32 itself
 * (cublasGemmEx), cuDNN writes bf16 (its bf16 configuration has bf16
 * outputs), which one more pass widens. Biases, and every other layer,
 * stay fp32. The bf16 operands of a convolution without groups whose
 * channels come in 8s are laid out channels-last (NHWC, filters KRSC) by
 * the same passes, as PyTorch's channels_last: cuDNN's tensor-core
 * kernels want that layout (on an H200, ResNet-18 in bf16 ran at 0.68x
 * of fp32 all NCHW, 0.82x channels-last). What it still costs: every
 * convolution adds eight passes over its operands (three forward, five
 * backward), and the activations between layers stay fp32 (autocast keeps
 * them in bf16). On an H200, ResNet-50 on 3x224x224 at batch 64 spends
 * 30% of its bf16 step's device time in these passes and 26% in fp32
 * batch norm, against 17% in the convolutions (bench/gpu_profile.sh):
 * 1.5x fp32's speed where PyTorch's autocast gets 2.6x. With 16-bit
 * activations between layers (chain16.h, DDPTOP_H16_CHAIN=1) a
 * convolution reads and writes its neighbours' 16-bit channels-last
 * tensors as they are, and only its weights are cast.
 *
 * cuDNN 9 marks the descriptor API deprecated in favour of its graph API;
 * it is still supported, and this file alone silences that warning.
 */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "kernels_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain16.h"
#include "check.h"
#include "device.h"

#define WORKSPACE_LIMIT ((size_t)256 << 20)

/* A convolution's three directions: each has its own descriptor, since
 * the algorithm chosen for each decides its math type. */
enum { CONV_FWD = 0, CONV_DATA, CONV_FILTER, CONV_DIRS };

/* The algorithms chosen for one shape, in one math mode, by one way. */
struct algo_choice {
    struct conv_dims d;
    int precision; /* enum precision */
    int conv_algo; /* enum conv_algo_choice */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t math[CONV_DIRS]; /* what each chosen algorithm runs in */
    int fell_back;                   /* cudnnFind ran no algorithm of a kind: the heuristics chose */
};

struct cuda_algo_cache {
    struct algo_choice *c;
    int n, cap;
    uint64_t measured, hits;
};

struct cuda_ctx {
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    int rank, gpu;
    int precision;   /* enum precision */
    int conv_algo;   /* enum conv_algo_choice */
    uint16_t *bf[3]; /* H16: scratch for input, weight and output-sized operands */
    size_t bf_n[3];  /* their sizes, in elements */
    struct cuda_algo_cache *cache;
    int own_cache; /* the cache is this context's, not its device's */
    void *ws;      /* shared convolution workspace */
    size_t ws_bytes;
    float *ones; /* [ones_n] for bias gradients */
    int ones_n;
    float *row_loss; /* [rows_n] */
    int32_t *row_hit;
    float *h_loss; /* pinned copies */
    int32_t *h_hit;
    int rows_n;
    int32_t *flag, *h_flag; /* cuda_all_finite's count and its pinned copy (the rows' are the loss's) */
    char err[256];
};

struct cuda_conv {
    struct cuda_ctx *x;
    struct conv_dims d;
    int has_bias;
    cudnnTensorDescriptor_t xd, yd, bd; /* xd, yd: in the precision of the products */
    cudnnTensorDescriptor_t yo;         /* the fp32 output, for the bias */
    int nhwc;                           /* 16-bit, no groups, channels in 8s: xd, yd and wd are channels-last */
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd[CONV_DIRS];
    struct algo_choice a;
};

struct cuda_pool {
    struct cuda_ctx *x;
    cudnnTensorDescriptor_t xd, yd;
    cudnnPoolingDescriptor_t pd;
};

static const float ONE = 1.0f, ZERO = 0.0f;

/* bf16 or fp16: convolutions and GEMMs take 16-bit operands; which one */
#define H16(x) ((x)->precision == PREC_BF16 || (x)->precision == PREC_FP16)
#define BF16(x) ((x)->precision == PREC_BF16)

static int cu_fail(struct cuda_ctx *x, const char *call, const char *why, const char *file, int line)
{
    snprintf(x->err, sizeof(x->err), "rank %d (cuda:%d): %.100s: %.60s (%.30s:%d)", x->rank, x->gpu, call, why,
             gpu_file(file), line);
    return -1;
}

#define CU(x, call) GPU_CHECK(GPU_CUDA, cu_fail, x, call)
#define DNN(x, call) GPU_CHECK(GPU_CUDNN, cu_fail, x, call)
#define BLAS(x, call) GPU_CHECK(GPU_CUBLAS, cu_fail, x, call)
/* A launcher of ours returned non-zero: CUDA's last error says why. */
#define KERNEL(x, call)                                                                                                \
    do {                                                                                                               \
        if ((call) != 0)                                                                                               \
            return cu_fail((x), #call, cudaGetErrorString(cudaGetLastError()), __FILE__, __LINE__);                    \
    } while (0)

const char *cuda_kernels_error(const struct cuda_ctx *x)
{
    return x->err;
}

struct cuda_algo_cache *cuda_algo_cache_create(void)
{
    return calloc(1, sizeof(struct cuda_algo_cache));
}

void cuda_algo_cache_destroy(struct cuda_algo_cache *c)
{
    if (c)
        free(c->c);
    free(c);
}

void cuda_algo_cache_counts(const struct cuda_algo_cache *c, uint64_t *measured, uint64_t *hits)
{
    *measured = c ? c->measured : 0;
    *hits = c ? c->hits : 0;
}

static const struct algo_choice *cache_get(struct cuda_algo_cache *c, const struct conv_dims *d, int precision,
                                           int conv_algo)
{
    for (int i = 0; i < c->n; i++)
        if (!memcmp(&c->c[i].d, d, sizeof(*d)) && c->c[i].precision == precision && c->c[i].conv_algo == conv_algo)
            return &c->c[i];
    return NULL;
}

static int cache_put(struct cuda_algo_cache *c, const struct algo_choice *a)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        struct algo_choice *p = realloc(c->c, sizeof(*p) * (size_t)cap);
        if (!p)
            return -1;
        c->c = p;
        c->cap = cap;
    }
    c->c[c->n++] = *a;
    return 0;
}

static int ctx_init(struct cuda_ctx *x)
{
    CU(x, cudaSetDevice(x->gpu));
    DNN(x, cudnnCreate(&x->dnn));
    DNN(x, cudnnSetStream(x->dnn, x->stream));
    BLAS(x, cublasCreate(&x->blas));
    BLAS(x, cublasSetStream(x->blas, x->stream));
    CU(x, cudaMalloc((void **)&x->flag, sizeof(int32_t)));
    CU(x, cudaMallocHost((void **)&x->h_flag, sizeof(int32_t)));
    /* fp32: GEMMs with fp32 products, as the CPU's; tf32: on tensor cores
     * with inputs rounded to a 10-bit mantissa (PyTorch's allow_tf32) */
    BLAS(x, cublasSetMathMode(x->blas, x->precision == PREC_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    return 0;
}

struct cuda_ctx *cuda_ctx_create(void *stream, int rank, int gpu, const struct cuda_ctx_opts *o, char *err,
                                 size_t errlen)
{
    static const struct cuda_ctx_opts fp32 = {.precision = PREC_FP32, .conv_algo = CONV_ALGO_FIND};
    if (!o)
        o = &fp32;
    if (o->precision < 0 || o->precision >= PREC_COUNT) {
        snprintf(err, errlen, "rank %d (cuda:%d): precision %d: unknown", rank, gpu, o->precision);
        return NULL;
    }
    struct cuda_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, errlen, "rank %d: out of memory", rank);
        return NULL;
    }
    x->stream = (cudaStream_t)stream;
    x->rank = rank;
    x->gpu = gpu;
    x->precision = o->precision;
    x->conv_algo = o->conv_algo;
    x->cache = o->cache;
    if (!x->cache) {
        x->own_cache = 1;
        if (!(x->cache = cuda_algo_cache_create())) {
            snprintf(err, errlen, "rank %d: out of memory", rank);
            free(x);
            return NULL;
        }
    }
    if (ctx_init(x) != 0) {
        snprintf(err, errlen, "%s", x->err);
        cuda_ctx_destroy(x);
        return NULL;
    }
    return x;
}

void cuda_ctx_destroy(struct cuda_ctx *x)
{
    if (!x)
        return;
    if (x->dnn)
        cudnnDestroy(x->dnn);
    if (x->blas)
        cublasDestroy(x->blas);
    cudaFree(x->ws);
    for (int k = 0; k < 3; k++)
        cudaFree(x->bf[k]);
    cudaFree(x->ones);
    cudaFree(x->row_loss);
    cudaFree(x->row_hit);
    cudaFreeHost(x->h_loss);
    cudaFreeHost(x->h_hit);
    cudaFree(x->flag);
    cudaFreeHost(x->h_flag);
    if (x->own_cache)
        cuda_algo_cache_destroy(x->cache);
    free(x);
}

struct cuda_algo_cache *cuda_ctx_algo_cache(struct cuda_ctx *x)
{
    return x->cache;
}

int cuda_ctx_precision(const struct cuda_ctx *x)
{
    return x->precision;
}

size_t cuda_ctx_workspace_bytes(const struct cuda_ctx *x)
{
    return x->ws_bytes;
}

/* Grows the shared workspace at creation time (never during a step). */
static int ws_reserve(struct cuda_ctx *x, size_t bytes)
{
    if (bytes <= x->ws_bytes)
        return 0;
    CU(x, cudaStreamSynchronize(x->stream));
    cudaFree(x->ws);
    x->ws = NULL;
    x->ws_bytes = 0;
    CU(x, cudaMalloc(&x->ws, bytes));
    x->ws_bytes = bytes;
    return 0;
}

/* H16: the scratch for an input, a weight and an output of these
 * sizes (at layer creation; a no-op once they fit). */
static int h16_reserve(struct cuda_ctx *x, size_t n_in, size_t n_w, size_t n_out)
{
    size_t want[3] = {n_in, n_w, n_out};
    for (int k = 0; k < 3; k++) {
        if (want[k] <= x->bf_n[k])
            continue;
        CU(x, cudaStreamSynchronize(x->stream)); /* no queued kernel still reads the old one */
        cudaFree(x->bf[k]);
        x->bf[k] = NULL;
        x->bf_n[k] = 0;
        CU(x, cudaMalloc((void **)&x->bf[k], sizeof(uint16_t) * want[k]));
        x->bf_n[k] = want[k];
    }
    return 0;
}

#define TO_16(x, k, src, n) KERNEL(x, cuk_to_16((x)->bf[k], (src), (int64_t)(n), BF16(x), (x)->stream))

static int ones_reserve(struct cuda_ctx *x, int n)
{
    if (n <= x->ones_n)
        return 0;
    cudaFree(x->ones);
    x->ones = NULL;
    CU(x, cudaMalloc((void **)&x->ones, sizeof(float) * (size_t)n));
    KERNEL(x, cuk_fill(x->ones, (size_t)n, 1.0f, x->stream));
    x->ones_n = n;
    return 0;
}

static int rows_reserve(struct cuda_ctx *x, int n)
{
    if (n <= x->rows_n)
        return 0;
    cudaFree(x->row_loss);
    cudaFree(x->row_hit);
    cudaFreeHost(x->h_loss);
    cudaFreeHost(x->h_hit);
    x->row_loss = NULL;
    x->row_hit = NULL;
    x->h_loss = NULL;
    x->h_hit = NULL;
    CU(x, cudaMalloc((void **)&x->row_loss, sizeof(float) * (size_t)n));
    CU(x, cudaMalloc((void **)&x->row_hit, sizeof(int32_t) * (size_t)n));
    CU(x, cudaMallocHost((void **)&x->h_loss, sizeof(float) * (size_t)n));
    CU(x, cudaMallocHost((void **)&x->h_hit, sizeof(int32_t) * (size_t)n));
    x->rows_n = n;
    return 0;
}

/* ---- linear: row-major matrices through column-major cuBLAS ------------ */

/* C[m,n] (fp32) = alpha op(A) op(B) + beta C with A and B in bfloat16 and
 * fp32 sums, column-major as cublasSgemm's arguments. */
static int gemm_16(struct cuda_ctx *x, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                   const uint16_t *A, int lda, const uint16_t *B, int ldb, const float *beta, float *C, int ldc)
{
    cudaDataType_t t = BF16(x) ? CUDA_R_16BF : CUDA_R_16F;
    BLAS(x, cublasGemmEx(x->blas, ta, tb, m, n, k, &ONE, A, t, lda, B, t, ldb, beta, C, CUDA_R_32F, ldc,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

int cuda_linear_prepare(struct cuda_ctx *x, int B, int IN, int OUT)
{
    if (!H16(x))
        return 0;
    return h16_reserve(x, (size_t)B * IN, (size_t)OUT * IN, (size_t)B * OUT);
}

int cuda_linear_forward(struct cuda_ctx *x, float *out, const float *in, const float *w, const float *b, int B, int IN,
                        int OUT)
{
    /* out^T[OUT,B] = w[OUT,IN] * in^T[IN,B] in column-major terms */
    if (H16(x)) {
        if (cuda_linear_prepare(x, B, IN, OUT) != 0)
            return -1;
        TO_16(x, 0, in, (size_t)B * IN);
        TO_16(x, 1, w, (size_t)OUT * IN);
        if (gemm_16(x, CUBLAS_OP_T, CUBLAS_OP_N, OUT, B, IN, x->bf[1], IN, x->bf[0], IN, &ZERO, out, OUT) != 0)
            return -1;
    } else {
        BLAS(x, cublasSgemm(x->blas, CUBLAS_OP_T, CUBLAS_OP_N, OUT, B, IN, &ONE, w, IN, in, IN, &ZERO, out, OUT));
    }
    if (b)
        KERNEL(x, cuk_add_bias(out, b, B, OUT, 1, x->stream));
    return 0;
}

int cuda_linear_backward(struct cuda_ctx *x, float *din, int din_acc, float *dw, float *db, const float *dout,
                         const float *in, const float *w, int B, int IN, int OUT)
{
    const float *beta = din_acc ? &ONE : &ZERO;
    if (H16(x) && (din || dw)) {
        if (cuda_linear_prepare(x, B, IN, OUT) != 0)
            return -1;
        TO_16(x, 2, dout, (size_t)B * OUT);
        if (din) {
            TO_16(x, 1, w, (size_t)OUT * IN);
            if (gemm_16(x, CUBLAS_OP_N, CUBLAS_OP_N, IN, B, OUT, x->bf[1], IN, x->bf[2], OUT, beta, din, IN) != 0)
                return -1;
        }
        if (dw) {
            TO_16(x, 0, in, (size_t)B * IN);
            if (gemm_16(x, CUBLAS_OP_N, CUBLAS_OP_T, IN, OUT, B, x->bf[0], IN, x->bf[2], OUT, &ZERO, dw, IN) != 0)
                return -1;
        }
    } else {
        if (din)
            BLAS(x, cublasSgemm(x->blas, CUBLAS_OP_N, CUBLAS_OP_N, IN, B, OUT, &ONE, w, IN, dout, OUT, beta, din, IN));
        if (dw)
            BLAS(x, cublasSgemm(x->blas, CUBLAS_OP_N, CUBLAS_OP_T, IN, OUT, B, &ONE, in, IN, dout, OUT, &ZERO, dw, IN));
    }
    if (db) {
        if (ones_reserve(x, B) != 0)
            return -1;
        BLAS(x, cublasSgemv(x->blas, CUBLAS_OP_N, OUT, B, &ONE, dout, OUT, x->ones, 1, &ZERO, db, 1));
    }
    return 0;
}

/* ---- convolution --------------------------------------------------------- */

/* The sizes of a convolution's input, weight and output. */
static void conv_sizes(const struct conv_dims *d, size_t *nx, size_t *nw, size_t *ny)
{
    *nx = (size_t)d->B * d->C * d->H * d->W;
    *nw = (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW;
    *ny = (size_t)d->B * d->OC * d->OH * d->OW;
}

/* Operand k (0 input, 1 weight, 2 output) of a convolution as [N, C, HW]. */
static void conv_operand(const struct conv_dims *d, int k, int64_t *N, int *C, int64_t *HW)
{
    *N = k == 1 ? d->OC : d->B;
    *C = k == 0 ? d->C : k == 1 ? d->C / d->groups : d->OC;
    *HW = k == 0 ? (int64_t)d->H * d->W : k == 1 ? (int64_t)d->KH * d->KW : (int64_t)d->OH * d->OW;
}

/* H16: operand k rounded into scratch k, in the convolution's layout. */
static int conv_to_16(struct cuda_conv *c, int k, const float *src)
{
    struct cuda_ctx *x = c->x;
    int64_t N, HW;
    int C;
    conv_operand(&c->d, k, &N, &C, &HW);
    if (c->nhwc)
        KERNEL(x, cuk_to_16_nhwc(x->bf[k], src, N, C, HW, BF16(x), x->stream));
    else
        KERNEL(x, cuk_to_16(x->bf[k], src, N * C * HW, BF16(x), x->stream));
    return 0;
}

/* H16: scratch k widened into dst (acc: added), back to NCHW. */
static int conv_from_16(struct cuda_conv *c, float *dst, int acc, int k)
{
    struct cuda_ctx *x = c->x;
    int64_t N, HW;
    int C;
    conv_operand(&c->d, k, &N, &C, &HW);
    if (c->nhwc)
        KERNEL(x, cuk_from_16_nchw(dst, acc, x->bf[k], N, C, HW, BF16(x), x->stream));
    else
        KERNEL(x, cuk_from_16(dst, acc, x->bf[k], N * C * HW, BF16(x), x->stream));
    return 0;
}

/* The first usable entry of a perf list (cuDNN sorts it fastest first):
 * it ran, and its workspace fits in `limit`. */
#define FIRST_USABLE(perf, n, limit, k)                                                                                \
    do {                                                                                                               \
        for ((k) = 0; (k) < (n) && ((perf)[k].status != CUDNN_STATUS_SUCCESS || (perf)[k].memory > (limit)); (k)++) {  \
        }                                                                                                              \
    } while (0)

/* cuDNN's heuristics: its guess of the fastest algorithm of each kind
 * whose workspace fits the limit, nothing run. */
static int conv_heuristic(struct cuda_conv *c, struct algo_choice *a)
{
    struct cuda_ctx *x = c->x;
    int n = 0, k;
    cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN(x, cudnnGetConvolutionForwardAlgorithm_v7(x->dnn, c->xd, c->wd, c->cd[CONV_FWD], c->yd,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, fp));
    FIRST_USABLE(fp, n, WORKSPACE_LIMIT, k);
    if (k == n)
        return cu_fail(x, "cudnnGetConvolutionForwardAlgorithm_v7", "no usable algorithm", __FILE__, __LINE__);
    a->fwd = fp[k].algo;
    a->math[CONV_FWD] = fp[k].mathType;

    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN(x, cudnnGetConvolutionBackwardDataAlgorithm_v7(x->dnn, c->wd, c->yd, c->cd[CONV_DATA], c->xd,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, dp));
    FIRST_USABLE(dp, n, WORKSPACE_LIMIT, k);
    if (k == n)
        return cu_fail(x, "cudnnGetConvolutionBackwardDataAlgorithm_v7", "no usable algorithm", __FILE__, __LINE__);
    a->bwd_data = dp[k].algo;
    a->math[CONV_DATA] = dp[k].mathType;

    cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN(x, cudnnGetConvolutionBackwardFilterAlgorithm_v7(x->dnn, c->xd, c->yd, c->cd[CONV_FILTER], c->wd,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, wp));
    FIRST_USABLE(wp, n, WORKSPACE_LIMIT, k);
    if (k == n)
        return cu_fail(x, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", "no usable algorithm", __FILE__, __LINE__);
    a->bwd_filter = wp[k].algo;
    a->math[CONV_FILTER] = wp[k].mathType;
    return 0;
}

/* cudnnFind*Ex over scratch tensors of the layer's shapes: every algorithm
 * of each kind is run and timed, and the fastest that ran within the
 * workspace is kept. The workspace offered is the limit, or less when the
 * GPU has less free (an algorithm that needs more is then not a choice). */
static int conv_find_scratch(struct cuda_conv *c, struct algo_choice *a, float *xs, float *ws_, float *ys, void *ws,
                             size_t ws_bytes)
{
    struct cuda_ctx *x = c->x;
    int n = 0, k;
    cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN(x, cudnnFindConvolutionForwardAlgorithmEx(x->dnn, c->xd, xs, c->wd, ws_, c->cd[CONV_FWD], c->yd, ys,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, fp, ws, ws_bytes));
    FIRST_USABLE(fp, n, ws_bytes, k);
    if (k == n)
        return cu_fail(x, "cudnnFindConvolutionForwardAlgorithmEx", "no algorithm ran", __FILE__, __LINE__);
    a->fwd = fp[k].algo;
    a->math[CONV_FWD] = fp[k].mathType;

    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN(x, cudnnFindConvolutionBackwardDataAlgorithmEx(x->dnn, c->wd, ws_, c->yd, ys, c->cd[CONV_DATA], c->xd, xs,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, dp, ws, ws_bytes));
    FIRST_USABLE(dp, n, ws_bytes, k);
    if (k == n)
        return cu_fail(x, "cudnnFindConvolutionBackwardDataAlgorithmEx", "no algorithm ran", __FILE__, __LINE__);
    a->bwd_data = dp[k].algo;
    a->math[CONV_DATA] = dp[k].mathType;

    cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN(x,
        cudnnFindConvolutionBackwardFilterAlgorithmEx(x->dnn, c->xd, xs, c->yd, ys, c->cd[CONV_FILTER], c->wd, ws_,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, wp, ws, ws_bytes));
    FIRST_USABLE(wp, n, ws_bytes, k);
    if (k == n)
        return cu_fail(x, "cudnnFindConvolutionBackwardFilterAlgorithmEx", "no algorithm ran", __FILE__, __LINE__);
    a->bwd_filter = wp[k].algo;
    a->math[CONV_FILTER] = wp[k].mathType;
    return 0;
}

static int conv_find(struct cuda_conv *c, struct algo_choice *a)
{
    struct cuda_ctx *x = c->x;
    size_t nx, nw, ny;
    conv_sizes(&c->d, &nx, &nw, &ny);
    float *scratch = NULL; /* (16-bit tensors take half of it) */
    CU(x, cudaMalloc((void **)&scratch, sizeof(float) * (nx + nw + ny)));
    void *ws = NULL;
    size_t ws_bytes = WORKSPACE_LIMIT;
    for (; ws_bytes >= ((size_t)1 << 20); ws_bytes /= 2) {
        if (cudaMalloc(&ws, ws_bytes) == cudaSuccess)
            break;
        ws = NULL;
        (void)cudaGetLastError(); /* the failed allocation is no later launch's error */
    }
    if (!ws)
        ws_bytes = 0;
    /* zeros: timed kernels see no NaN or denormal that real data lacks */
    int rc = -1;
    cudaError_t e = cudaMemsetAsync(scratch, 0, sizeof(float) * (nx + nw + ny), x->stream);
    if (e != cudaSuccess)
        cu_fail(x, "cudaMemsetAsync(scratch)", cudaGetErrorString(e), __FILE__, __LINE__);
    else
        rc = conv_find_scratch(c, a, scratch, scratch + nx, scratch + nx + nw, ws, ws_bytes);
    /* the timed runs are done before their buffers go */
    cudaStreamSynchronize(x->stream);
    cudaFree(ws);
    cudaFree(scratch);
    return rc;
}

static int conv_build(struct cuda_conv *c)
{
    struct cuda_ctx *x = c->x;
    const struct conv_dims *d = &c->d;
    DNN(x, cudnnCreateTensorDescriptor(&c->xd));
    DNN(x, cudnnCreateTensorDescriptor(&c->yd));
    DNN(x, cudnnCreateTensorDescriptor(&c->yo));
    DNN(x, cudnnCreateTensorDescriptor(&c->bd));
    DNN(x, cudnnCreateFilterDescriptor(&c->wd));
    /* bf16 and fp16: cuDNN's pseudo-bf16 and pseudo-half configurations
     * (16-bit data, fp32 sums) */
    int h16 = H16(x);
    cudnnDataType_t data = !H16(x) ? CUDNN_DATA_FLOAT : BF16(x) ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    /* (tensor cores take channels in 8s: LeNet's 1 and 6 gain nothing) */
    c->nhwc = h16 && d->groups == 1 && d->C % 8 == 0 && d->OC % 8 == 0;
    cudnnTensorFormat_t fmt = c->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    DNN(x, cudnnSetTensor4dDescriptor(c->xd, fmt, data, d->B, d->C, d->H, d->W));
    DNN(x, cudnnSetTensor4dDescriptor(c->yd, fmt, data, d->B, d->OC, d->OH, d->OW));
    DNN(x, cudnnSetTensor4dDescriptor(c->yo, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->B, d->OC, d->OH, d->OW));
    DNN(x, cudnnSetTensor4dDescriptor(c->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, d->OC, 1, 1));
    DNN(x, cudnnSetFilter4dDescriptor(c->wd, data, fmt, d->OC, d->C / d->groups, d->KH, d->KW));
    size_t nx, nw, ny;
    conv_sizes(d, &nx, &nw, &ny);
    if (h16 && h16_reserve(x, nx, nw, ny) != 0)
        return -1;
    /* fp32: FMA kernels only, never TF32 (as the CPU); tf32: cuDNN's
     * default math, which lets tensor cores take fp32 data as TF32 (as
     * PyTorch's allow_tf32; ALLOW_CONVERSION would also let cuDNN convert
     * to fp16, with fp16's range); bf16 and fp16: tensor cores */
    cudnnMathType_t math = x->precision == PREC_TF32 ? CUDNN_DEFAULT_MATH : h16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    for (int k = 0; k < CONV_DIRS; k++) {
        DNN(x, cudnnCreateConvolutionDescriptor(&c->cd[k]));
        DNN(x, cudnnSetConvolution2dDescriptor(c->cd[k], d->pad, d->pad, d->stride, d->stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        DNN(x, cudnnSetConvolutionGroupCount(c->cd[k], d->groups));
        DNN(x, cudnnSetConvolutionMathType(c->cd[k], math));
    }

    const struct algo_choice *known = cache_get(x->cache, d, x->precision, x->conv_algo);
    if (known) {
        c->a = *known;
        x->cache->hits++;
    } else {
        c->a = (struct algo_choice){.d = *d, .precision = x->precision, .conv_algo = x->conv_algo};
        int rc = x->conv_algo == CONV_ALGO_FIND ? conv_find(c, &c->a) : conv_heuristic(c, &c->a);
        if (rc != 0 && x->conv_algo == CONV_ALGO_FIND && strstr(x->err, "no algorithm ran")) {
            /* (seen on an H200 while the previous run's ranks were
             * stopping): a layer still trains with the heuristics' choice */
            x->err[0] = 0;
            c->a.fell_back = 1;
            rc = conv_heuristic(c, &c->a);
        }
        if (rc != 0)
            return -1;
        if (cache_put(x->cache, &c->a) != 0)
            return cu_fail(x, "caching the convolution's algorithms", "out of memory", __FILE__, __LINE__);
        x->cache->measured++;
    }
    /* a chosen algorithm runs in the math type it was timed or picked in
     * (with TF32 allowed, cuDNN may report FMA for one and tensor ops for
     * another), as PyTorch sets it */
    for (int k = 0; k < CONV_DIRS; k++)
        DNN(x, cudnnSetConvolutionMathType(c->cd[k], c->a.math[k]));

    size_t need = 0, bytes = 0;
    DNN(x, cudnnGetConvolutionForwardWorkspaceSize(x->dnn, c->xd, c->wd, c->cd[CONV_FWD], c->yd, c->a.fwd, &bytes));
    need = bytes > need ? bytes : need;
    DNN(x, cudnnGetConvolutionBackwardDataWorkspaceSize(x->dnn, c->wd, c->yd, c->cd[CONV_DATA], c->xd, c->a.bwd_data,
                                                        &bytes));
    need = bytes > need ? bytes : need;
    DNN(x, cudnnGetConvolutionBackwardFilterWorkspaceSize(x->dnn, c->xd, c->yd, c->cd[CONV_FILTER], c->wd,
                                                          c->a.bwd_filter, &bytes));
    need = bytes > need ? bytes : need;
    return ws_reserve(x, need);
}

struct cuda_conv *cuda_conv_create(struct cuda_ctx *x, const struct conv_dims *d, int has_bias, char *err,
                                   size_t errlen)
{
    struct cuda_conv *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->x = x;
    c->d = *d;
    c->has_bias = has_bias;
    if (conv_build(c) != 0) {
        snprintf(err, errlen, "%s", x->err);
        cuda_conv_destroy(c);
        return NULL;
    }
    return c;
}

void cuda_conv_describe(const struct cuda_conv *c, char *buf, size_t n)
{
    static const char *const fwd[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
                                      "winograd",      "winograd_nonfused"};
    static const char *const data[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
    static const char *const filt[] = {"algo_0",    "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused",
                                       "fft_tiling"};
#define NAME(t, a) ((unsigned)(a) < sizeof(t) / sizeof(t[0]) ? t[a] : "?")
    snprintf(buf, n, "cudnn:%s|%s|%s%s (%s)", NAME(fwd, c->a.fwd), NAME(data, c->a.bwd_data),
             NAME(filt, c->a.bwd_filter),
             !H16(c->x)   ? ""
             : c->nhwc    ? (BF16(c->x) ? " bf16 nhwc" : " fp16 nhwc")
             : BF16(c->x) ? " bf16"
                          : " fp16",
             c->a.fell_back                     ? "heuristic: cudnnFind ran none"
             : c->a.conv_algo == CONV_ALGO_FIND ? "found"
                                                : "heuristic");
#undef NAME
}

void cuda_conv_destroy(struct cuda_conv *c)
{
    if (!c)
        return;
    if (c->xd)
        cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd)
        cudnnDestroyTensorDescriptor(c->yd);
    if (c->yo)
        cudnnDestroyTensorDescriptor(c->yo);
    if (c->bd)
        cudnnDestroyTensorDescriptor(c->bd);
    if (c->wd)
        cudnnDestroyFilterDescriptor(c->wd);
    for (int k = 0; k < CONV_DIRS; k++)
        if (c->cd[k])
            cudnnDestroyConvolutionDescriptor(c->cd[k]);
    free(c);
}

int cuda_conv_forward(struct cuda_conv *c, float *out, const float *in, const float *w, const float *b)
{
    return cuda_conv_forward16(c, out, NULL, in, NULL, w, b);
}

int cuda_conv_nhwc(const struct cuda_conv *c)
{
    return c->nhwc;
}

int cuda_conv_forward16(struct cuda_conv *c, float *out, uint16_t *y16, const float *in, const uint16_t *x16,
                        const float *w, const float *b)
{
    struct cuda_ctx *x = c->x;
    if (H16(x)) {
        if ((!x16 && conv_to_16(c, 0, in) != 0) || conv_to_16(c, 1, w) != 0)
            return -1;
        DNN(x, cudnnConvolutionForward(x->dnn, &ONE, c->xd, x16 ? x16 : x->bf[0], c->wd, x->bf[1], c->cd[CONV_FWD],
                                       c->a.fwd, x->ws, x->ws_bytes, &ZERO, c->yd, y16 ? y16 : x->bf[2]));
        if (y16)
            return 0; /* (no bias: a chain's convolutions have none) */
        if (conv_from_16(c, out, 0, 2) != 0)
            return -1;
    } else {
        DNN(x, cudnnConvolutionForward(x->dnn, &ONE, c->xd, in, c->wd, w, c->cd[CONV_FWD], c->a.fwd, x->ws, x->ws_bytes,
                                       &ZERO, c->yd, out));
    }
    if (c->has_bias && b)
        DNN(x, cudnnAddTensor(x->dnn, &ONE, c->bd, b, &ONE, c->yo, out));
    return 0;
}

/* H16: each gradient computed into the scratch and widened into the
 * model's (the weight gradient first: it needs the input and the output
 * gradient, the input gradient the weight and the output gradient). A
 * chain's 16-bit tensors (dy16, x16, dx16) stand in for the casts. */
static int conv_backward_16(struct cuda_conv *c, float *din, uint16_t *dx16, int din_acc, float *dw, const float *dout,
                            const uint16_t *dy16, const float *in, const uint16_t *x16, const float *w)
{
    struct cuda_ctx *x = c->x;
    if (!dy16 && conv_to_16(c, 2, dout) != 0)
        return -1;
    const void *dy = dy16 ? (const void *)dy16 : x->bf[2];
    if (dw) {
        if (!x16 && conv_to_16(c, 0, in) != 0)
            return -1;
        DNN(x, cudnnConvolutionBackwardFilter(x->dnn, &ONE, c->xd, x16 ? (const void *)x16 : x->bf[0], c->yd, dy,
                                              c->cd[CONV_FILTER], c->a.bwd_filter, x->ws, x->ws_bytes, &ZERO, c->wd,
                                              x->bf[1]));
        if (conv_from_16(c, dw, 0, 1) != 0)
            return -1;
    }
    if (din || dx16) {
        if (conv_to_16(c, 1, w) != 0)
            return -1;
        /* a gradient to add to goes through the scratch: one rounding of the sum */
        void *dst = dx16 && !din_acc ? (void *)dx16 : x->bf[0];
        DNN(x, cudnnConvolutionBackwardData(x->dnn, &ONE, c->wd, x->bf[1], c->yd, dy, c->cd[CONV_DATA], c->a.bwd_data,
                                            x->ws, x->ws_bytes, &ZERO, c->xd, dst));
        if (dx16 && din_acc) {
            int64_t N, HW;
            int C;
            conv_operand(&c->d, 0, &N, &C, &HW);
            KERNEL(x, c16_copy_acc(dx16, 1, x->bf[0], N * C * HW, BF16(x), x->stream));
        } else if (!dx16 && conv_from_16(c, din, din_acc, 0) != 0) {
            return -1;
        }
    }
    return 0;
}

int cuda_conv_backward(struct cuda_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                       const float *in, const float *w)
{
    return cuda_conv_backward16(c, din, NULL, din_acc, dw, db, dout, NULL, in, NULL, w);
}

int cuda_conv_backward16(struct cuda_conv *c, float *din, uint16_t *dx16, int din_acc, float *dw, float *db,
                         const float *dout, const uint16_t *dy16, const float *in, const uint16_t *x16, const float *w)
{
    struct cuda_ctx *x = c->x;
    if (db && c->has_bias && dout)
        DNN(x, cudnnConvolutionBackwardBias(x->dnn, &ONE, c->yo, dout, &ZERO, c->bd, db));
    if (H16(x))
        return conv_backward_16(c, din, dx16, din_acc, dw, dout, dy16, in, x16, w);
    if (dw)
        DNN(x, cudnnConvolutionBackwardFilter(x->dnn, &ONE, c->xd, in, c->yd, dout, c->cd[CONV_FILTER], c->a.bwd_filter,
                                              x->ws, x->ws_bytes, &ZERO, c->wd, dw));
    if (din)
        DNN(x, cudnnConvolutionBackwardData(x->dnn, &ONE, c->wd, w, c->yd, dout, c->cd[CONV_DATA], c->a.bwd_data, x->ws,
                                            x->ws_bytes, din_acc ? &ONE : &ZERO, c->xd, din));
    return 0;
}

/* ---- pooling -------------------------------------------------------------- */

static int pool_build(struct cuda_pool *p, const struct pool_dims *d, cudnnPoolingMode_t mode)
{
    struct cuda_ctx *x = p->x;
    DNN(x, cudnnCreateTensorDescriptor(&p->xd));
    DNN(x, cudnnCreateTensorDescriptor(&p->yd));
    DNN(x, cudnnCreatePoolingDescriptor(&p->pd));
    DNN(x, cudnnSetTensor4dDescriptor(p->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->B, d->C, d->H, d->W));
    DNN(x, cudnnSetTensor4dDescriptor(p->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->B, d->C, d->OH, d->OW));
    DNN(x, cudnnSetPooling2dDescriptor(p->pd, mode, CUDNN_NOT_PROPAGATE_NAN, d->k, d->k, d->pad, d->pad, d->stride,
                                       d->stride));
    return 0;
}

static struct cuda_pool *pool_create(struct cuda_ctx *x, const struct pool_dims *d, cudnnPoolingMode_t mode, char *err,
                                     size_t errlen)
{
    if (d->ceil_mode && d->pad_r != d->pad) {
        snprintf(err, errlen, "cuDNN pooling has no ceil_mode (use cuk_maxpool_*)");
        return NULL;
    }
    struct cuda_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->x = x;
    if (pool_build(p, d, mode) != 0) {
        snprintf(err, errlen, "%s", x->err);
        cuda_pool_destroy(p);
        return NULL;
    }
    return p;
}

struct cuda_pool *cuda_maxpool_create(struct cuda_ctx *x, const struct pool_dims *d, char *err, size_t errlen)
{
    return pool_create(x, d, CUDNN_POOLING_MAX_DETERMINISTIC, err, errlen);
}

struct cuda_pool *cuda_avgpool_create(struct cuda_ctx *x, const struct pool_dims *d, char *err, size_t errlen)
{
    return pool_create(x, d, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, err, errlen);
}

void cuda_pool_destroy(struct cuda_pool *p)
{
    if (!p)
        return;
    if (p->xd)
        cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd)
        cudnnDestroyTensorDescriptor(p->yd);
    if (p->pd)
        cudnnDestroyPoolingDescriptor(p->pd);
    free(p);
}

int cuda_pool_forward(struct cuda_pool *p, float *out, const float *in)
{
    DNN(p->x, cudnnPoolingForward(p->x->dnn, p->pd, &ONE, p->xd, in, &ZERO, p->yd, out));
    return 0;
}

int cuda_pool_backward(struct cuda_pool *p, float *din, int din_acc, const float *dout, const float *out,
                       const float *in)
{
    DNN(p->x, cudnnPoolingBackward(p->x->dnn, p->pd, &ONE, p->yd, out, p->yd, dout, p->xd, in, din_acc ? &ONE : &ZERO,
                                   p->xd, din));
    return 0;
}

/* ---- activations --------------------------------------------------------------- */

struct cuda_act {
    struct cuda_ctx *x;
    cudnnTensorDescriptor_t td;
    cudnnActivationDescriptor_t ad;
};

static int act_build(struct cuda_act *a, int B, int C, int H, int W, double clip)
{
    struct cuda_ctx *x = a->x;
    DNN(x, cudnnCreateTensorDescriptor(&a->td));
    DNN(x, cudnnCreateActivationDescriptor(&a->ad));
    DNN(x, cudnnSetTensor4dDescriptor(a->td, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, C, H, W));
    DNN(x, cudnnSetActivationDescriptor(a->ad, clip > 0 ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
                                        CUDNN_PROPAGATE_NAN, clip)); /* (NaN stays NaN, as PyTorch's) */
    return 0;
}

struct cuda_act *cuda_act_create(struct cuda_ctx *x, int B, int C, int H, int W, double clip, char *err, size_t errlen)
{
    struct cuda_act *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->x = x;
    if (act_build(a, B, C, H, W, clip) != 0) {
        snprintf(err, errlen, "%s", x->err);
        cuda_act_destroy(a);
        return NULL;
    }
    return a;
}

void cuda_act_destroy(struct cuda_act *a)
{
    if (!a)
        return;
    if (a->td)
        cudnnDestroyTensorDescriptor(a->td);
    if (a->ad)
        cudnnDestroyActivationDescriptor(a->ad);
    free(a);
}

int cuda_act_forward(struct cuda_act *a, float *out, const float *in)
{
    DNN(a->x, cudnnActivationForward(a->x->dnn, a->ad, &ONE, a->td, in, &ZERO, a->td, out));
    return 0;
}

int cuda_act_backward(struct cuda_act *a, float *din, int din_acc, const float *dout, const float *out, const float *in)
{
    DNN(a->x, cudnnActivationBackward(a->x->dnn, a->ad, &ONE, a->td, out, a->td, dout, a->td, in,
                                      din_acc ? &ONE : &ZERO, a->td, din));
    return 0;
}

/* ---- batch norm ------------------------------------------------------------ */

struct cuda_bn {
    struct cuda_ctx *x;
    int C;
    double eps;
    cudnnTensorDescriptor_t xd, pd; /* activations; per-channel parameters */
    float *save_mean, *save_invvar; /* [C]: this batch's, for backward */
    float *dscratch;                /* [2C]: dgamma, dbeta when frozen */
};

static int bn_build(struct cuda_bn *b, int B, int C, int H, int W)
{
    struct cuda_ctx *x = b->x;
    DNN(x, cudnnCreateTensorDescriptor(&b->xd));
    DNN(x, cudnnCreateTensorDescriptor(&b->pd));
    DNN(x, cudnnSetTensor4dDescriptor(b->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, C, H, W));
    DNN(x, cudnnDeriveBNTensorDescriptor(b->pd, b->xd, CUDNN_BATCHNORM_SPATIAL));
    if (!(b->save_mean = cuda_ctx_alloc(x, sizeof(float) * 4 * (size_t)C)))
        return -1;
    b->save_invvar = b->save_mean + C;
    b->dscratch = b->save_invvar + C;
    return 0;
}

struct cuda_bn *cuda_bn_create(struct cuda_ctx *x, int B, int C, int H, int W, double eps, char *err, size_t errlen)
{
    struct cuda_bn *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->x = x;
    b->C = C;
    b->eps = eps < CUDNN_BN_MIN_EPSILON ? CUDNN_BN_MIN_EPSILON : eps;
    if (bn_build(b, B, C, H, W) != 0) {
        snprintf(err, errlen, "%s", x->err);
        cuda_bn_destroy(b);
        return NULL;
    }
    return b;
}

void cuda_bn_destroy(struct cuda_bn *b)
{
    if (!b)
        return;
    if (b->xd)
        cudnnDestroyTensorDescriptor(b->xd);
    if (b->pd)
        cudnnDestroyTensorDescriptor(b->pd);
    cudaFree(b->save_mean);
    free(b);
}

int cuda_bn_forward(struct cuda_bn *b, float *out, const float *in, const float *gamma, const float *beta,
                    float *run_mean, float *run_var, double momentum, int train)
{
    struct cuda_ctx *x = b->x;
    if (train)
        DNN(x, cudnnBatchNormalizationForwardTraining(x->dnn, CUDNN_BATCHNORM_SPATIAL, &ONE, &ZERO, b->xd, in, b->xd,
                                                      out, b->pd, gamma, beta, momentum, run_mean, run_var, b->eps,
                                                      b->save_mean, b->save_invvar));
    else
        DNN(x, cudnnBatchNormalizationForwardInference(x->dnn, CUDNN_BATCHNORM_SPATIAL, &ONE, &ZERO, b->xd, in, b->xd,
                                                       out, b->pd, gamma, beta, run_mean, run_var, b->eps));
    return 0;
}

int cuda_bn_backward(struct cuda_bn *b, float *din, int din_acc, float *dgamma, float *dbeta, const float *dout,
                     const float *in, const float *gamma)
{
    struct cuda_ctx *x = b->x;
    /* cuDNN always writes all three gradients: frozen ones go to scratch */
    DNN(x,
        cudnnBatchNormalizationBackward(x->dnn, CUDNN_BATCHNORM_SPATIAL, &ONE, din_acc ? &ONE : &ZERO, &ONE, &ZERO,
                                        b->xd, in, b->xd, dout, b->xd, din, b->pd, gamma, dgamma ? dgamma : b->dscratch,
                                        dbeta ? dbeta : b->dscratch + b->C, b->eps, b->save_mean, b->save_invvar));
    return 0;
}

/* ---- memory ----------------------------------------------------------------- */

void *cuda_ctx_alloc(struct cuda_ctx *x, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(p, 0, bytes ? bytes : 1, x->stream);
    if (e != cudaSuccess) {
        cudaFree(p);
        cu_fail(x, "cudaMalloc", cudaGetErrorString(e), __FILE__, __LINE__);
        return NULL;
    }
    return p;
}

void cuda_ctx_free(void *p)
{
    if (p)
        cudaFree(p);
}

int cuda_ctx_copy(struct cuda_ctx *x, void *dst, const void *src, size_t bytes)
{
    CU(x, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, x->stream));
    return 0;
}

int cuda_ctx_sync(struct cuda_ctx *x)
{
    CU(x, cudaStreamSynchronize(x->stream));
    return 0;
}

void *cuda_ctx_stream(struct cuda_ctx *x)
{
    return x->stream;
}

int cuda_ctx_launch_failed(struct cuda_ctx *x, const char *what)
{
    return cu_fail(x, what, cudaGetErrorString(cudaGetLastError()), __FILE__, __LINE__);
}

/* ---- element-wise, loss, optimizer ---------------------------------------- */

int cuda_relu_forward(struct cuda_ctx *x, float *out, const float *in, int64_t n)
{
    KERNEL(x, cuk_relu_forward(out, in, n, x->stream));
    return 0;
}

int cuda_relu_backward(struct cuda_ctx *x, float *din, int din_acc, const float *dout, const float *out, int64_t n)
{
    KERNEL(x, cuk_relu_backward(din, din_acc, dout, out, n, x->stream));
    return 0;
}

int cuda_xent_enqueue(struct cuda_ctx *x, float *probs, const float *logits, const int32_t *labels, int B, int K)
{
    if (rows_reserve(x, B) != 0)
        return -1;
    KERNEL(x, cuk_xent_forward(probs, x->row_loss, x->row_hit, logits, labels, B, K, x->stream));
    CU(x, cudaMemcpyAsync(x->h_loss, x->row_loss, sizeof(float) * (size_t)B, cudaMemcpyDeviceToHost, x->stream));
    CU(x, cudaMemcpyAsync(x->h_hit, x->row_hit, sizeof(int32_t) * (size_t)B, cudaMemcpyDeviceToHost, x->stream));
    return 0;
}

int cuda_xent_result(struct cuda_ctx *x, int B, float *loss, int *correct)
{
    CU(x, cudaStreamSynchronize(x->stream));
    double sum = 0;
    int hits = 0;
    for (int i = 0; i < B && i < x->rows_n; i++) {
        sum += x->h_loss[i];
        hits += x->h_hit[i];
    }
    *loss = B > 0 ? (float)(sum / B) : 0.0f;
    if (correct)
        *correct = hits;
    return 0;
}

int cuda_xent_forward(struct cuda_ctx *x, float *probs, const float *logits, const int32_t *labels, int B, int K,
                      float *loss, int *correct)
{
    if (cuda_xent_enqueue(x, probs, logits, labels, B, K) != 0)
        return -1;
    return cuda_xent_result(x, B, loss, correct);
}

int cuda_xent_backward(struct cuda_ctx *x, float *dlogits, const float *probs, const int32_t *labels, int B, int K,
                       float scale)
{
    KERNEL(x, cuk_xent_backward(dlogits, probs, labels, B, K, scale, x->stream));
    return 0;
}

int cuda_sgd_update(struct cuda_ctx *x, float *p, const float *g, float *buf, size_t n, float lr, float momentum,
                    float wd, float gscale)
{
    KERNEL(x, cuk_sgd(p, g, buf, n, lr, momentum, wd, gscale, x->stream));
    return 0;
}

int cuda_all_finite(struct cuda_ctx *x, const float *v, size_t n, int *finite)
{
    /* (not the rows' buffers: the step's loss and hits wait there to be read) */
    CU(x, cudaMemsetAsync(x->flag, 0, sizeof(int32_t), x->stream));
    KERNEL(x, cuk_count_nonfinite(x->flag, v, n, x->stream));
    CU(x, cudaMemcpyAsync(x->h_flag, x->flag, sizeof(int32_t), cudaMemcpyDeviceToHost, x->stream));
    CU(x, cudaStreamSynchronize(x->stream));
    *finite = x->h_flag[0] == 0;
    return 0;
}
